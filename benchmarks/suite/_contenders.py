"""Ours and the peers, each as a :class:`~suite._protocol.Contender` run
at its defaults (whole fit) or for a fixed number of sweeps (per sweep)."""

from __future__ import annotations

import time
import warnings

import numpy as np

from ._protocol import Contender
from ._timing import seconds_per_iteration


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings are recorded as info
        return fit()


def ours_whole_fit(estimator_class, rank, **params):
    """``estimator_class(rank, random_state=0, **params).fit(X)``: the
    defaults, to the stopping rule (or stopped after ``max_iter``
    iterations, for the time to a peer's quality)."""
    def run(X, max_iter=None):
        stop = {} if max_iter is None else {"max_iter": max_iter}
        est = _quiet(lambda: estimator_class(rank, random_state=0, **params, **stop).fit(X))
        return {"result": est, "info": {
            "n_iter": int(est.n_iter_), "converged": bool(est.converged_),
            "log_evidence": float(getattr(est, "log_evidence_", est.lower_bound_))}}
    return Contender(f"sklearn_pltf {estimator_class.__name__}", run, ours=True,
                     stopped_after=run)


def ours_per_sweep(estimator_class, rank, n_sweeps, **params):
    """Seconds per plain VB sweep (every factor updated once, and the
    bound), after a first untimed sweep
    (:func:`~suite._timing.seconds_per_iteration`)."""

    def run(X):
        est = estimator_class(rank, random_state=0, acceleration=None, **params)
        return {"result": None, "seconds": seconds_per_iteration(est, X, n_sweeps),
                "info": {"n_sweeps": n_sweeps}}
    return Contender(f"sklearn_pltf {estimator_class.__name__}", run, ours=True)


def _per_iteration(fit, n_iter):
    """Seconds per iteration of ``fit(n)`` (which runs exactly ``n``
    iterations), its setup and start left out as ours are: the difference
    between ``n_iter`` iterations and one, over ``n_iter - 1``. Returns
    ``(seconds, the n_iter run's output)``."""
    start = time.perf_counter()
    fit(1)
    one = time.perf_counter() - start
    start = time.perf_counter()
    output = fit(n_iter)
    return (time.perf_counter() - start - one) / (n_iter - 1), output


def _peer(name, fit, iterations, n_iter):
    """A peer's contender: ``fit(X, **params)`` at its defaults, or with
    ``n_iter`` given, per iteration (:func:`_per_iteration`) of runs with
    ``{iterations: n, tol: 0, init: "random"}``."""
    def run(X):
        if n_iter is None:
            return fit(X)
        seconds, output = _per_iteration(
            lambda n: fit(X, **{iterations: n}, tol=0.0, init="random"), n_iter)
        return {**output, "seconds": seconds}
    return Contender(name, run)


def sklearn_kl_nmf(rank, max_iter=None, name="scikit-learn NMF (KL, mu)"):
    """scikit-learn's ``NMF(beta_loss="kullback-leibler", solver="mu")``: at
    its defaults (``max_iter=None``), or per iteration from runs of exactly
    ``max_iter`` and 1 iterations (``tol=0``, random start)."""
    from sklearn.decomposition import NMF

    def fit(X, **params):
        model = NMF(rank, beta_loss="kullback-leibler", solver="mu", random_state=0, **params)
        W = _quiet(lambda: model.fit_transform(X))
        return {"result": (W, model.components_), "info": {"n_iter": int(model.n_iter_)}}

    return _peer(name, fit, "max_iter", max_iter)


def tensorly_nn_parafac(rank, n_iter_max=None):
    """TensorLy's ``non_negative_parafac`` (Frobenius loss, multiplicative
    updates): at its defaults, or per iteration from runs of exactly
    ``n_iter_max`` and 1 iterations (``tol=0``, random start)."""
    from tensorly.decomposition import non_negative_parafac

    def fit(X, **params):
        (weights, factors), errors = _quiet(lambda: non_negative_parafac(
            X, rank, random_state=0, return_errors=True, **params))
        return {"result": (weights, factors),
                "info": {"n_iter": params.get("n_iter_max", len(errors))}}

    return _peer("TensorLy non_negative_parafac", fit, "n_iter_max", n_iter_max)


def pyttb_cp_apr(rank, n_outer):
    """pyttb's ``cp_apr`` (multiplicative updates, its default 10 inner
    iterations per mode) for ``n_outer`` outer iterations: per outer
    iteration, from pyttb's own solver timer."""
    import pyttb as ttb

    def run(X):
        np.random.seed(0)  # pyttb's random start draws from NumPy's global state
        tensor = ttb.sptensor(np.ascontiguousarray(X.coords.T), X.data[:, None], X.shape,
                              copy=False)
        model, _, out = ttb.cp_apr(tensor, rank, stoptol=0.0, maxiters=n_outer,
                                   init="random", printitn=0)
        return {"result": (model.weights, model.factor_matrices),
                "seconds": out["totalTime"] / n_outer, "info": {"n_outer": n_outer}}
    return Contender("pyttb cp_apr (MU)", run)
