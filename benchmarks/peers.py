"""Timed wrappers around the peer implementations, and shared measuring tools.

Each wrapper runs a peer for a fixed amount of work (convergence tests are
switched off) and returns a dict with at least ``seconds`` (wall time of the
fit, measured with :func:`time.perf_counter`), ``iterations`` and the fitted
factors.  Peak memory is measured the same way for peers and for our own code
with :func:`measure_peak_memory`.

The peers use NumPy's *global* random state for their own random
initialisation (pyttb) or sampling (pyttb's stochastic GCP solvers), so the
pyttb wrappers call ``np.random.seed(random_state)`` first.
"""

import multiprocessing
import time
import warnings

import numpy as np
import pyttb as ttb
from pyttb.gcp.handles import Objectives
from pyttb.gcp.optimizers import LBFGSB, Adam
from scipy.special import gammaln, xlogy
from sklearn.decomposition import NMF
from sklearn.exceptions import ConvergenceWarning
from tensorly.decomposition import non_negative_parafac

from suite._protocol import status_kib


def _run_with_peak(fn, args):
    """Run ``fn(*args)`` and return it with the RSS peak above the start.

    The kernel's high-water mark ``VmHWM`` is reset to the current resident
    set by writing ``5`` to ``/proc/self/clear_refs``, so the peak only
    covers the call, not the imports or the unpickling of ``args``.
    """
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    baseline = status_kib("VmRSS")
    result = fn(*args)
    return result, (status_kib("VmHWM") - baseline) / 1024


def measure_peak_memory(fn, *args):
    """Run ``fn(*args)`` in a fresh process and measure its peak memory.

    The call runs in a one-worker :mod:`multiprocessing` pool started with
    ``"spawn"``, i.e. a new interpreter that shares no pages with this one.
    Inside it, after the arguments have been received, the resident-set
    high-water mark is reset; once ``fn`` returns, the peak resident set
    minus the resident set just before the call is reported.  So the figure
    is the extra physical memory ``fn`` needed, excluding the interpreter,
    imported libraries and the inputs, and it is comparable between peers and
    our own estimators as long as both are given the same inputs.  Linux only
    (it reads ``/proc/self/status``).

    Parameters
    ----------
    fn : callable
        A module-level function (it must be picklable); its return value must
        be picklable too.
    *args
        Positional arguments for ``fn``, pickled to the worker.

    Returns
    -------
    result : object
        What ``fn(*args)`` returned.
    peak_mb : float
        Peak resident memory during the call above the level just before
        it, in MiB.
    """
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_run_with_peak, (fn, args))


def kruskal_at(coords, factors, weights=None):
    """Evaluate a CP (Kruskal) model at listed coordinates without densifying.

    Parameters
    ----------
    coords : sequence of ndarray of int, one per mode
        Indices of the entries, e.g. ``sparse.COO.coords`` or the tuple
        returned by :func:`numpy.nonzero`.
    factors : sequence of ndarray of shape (n_k, rank)
        Factor matrices.
    weights : ndarray of shape (rank,), optional
        Component weights; ones if omitted.

    Returns
    -------
    values : ndarray of shape (n_entries,)
        ``sum_r w_r prod_k factors[k][coords[k], r]``.
    """
    acc = factors[0][coords[0]].copy()
    if weights is not None:
        acc *= weights
    for idx, factor in zip(coords[1:], factors[1:], strict=True):
        acc *= factor[idx]
    return acc.sum(axis=1)


def poisson_loglik(x, xhat):
    """Poisson log-likelihood summed over the given entries.

    Parameters
    ----------
    x : array-like
        Observed counts: a dense array, or the values at listed entries.
    xhat : array-like of the same shape
        Poisson means at the same entries.

    Returns
    -------
    loglik : float
        ``sum(x log xhat - xhat - log Gamma(x + 1))`` with ``0 log 0 = 0``.
    """
    x = np.asarray(x, dtype=np.float64)
    xhat = np.asarray(xhat, dtype=np.float64)
    return float(np.sum(xlogy(x, xhat) - xhat - gammaln(x + 1)))


def cp_poisson_loglik(X, factors, weights=None):
    """Full-tensor Poisson log-likelihood of a CP model for sparse counts.

    Zeros contribute ``-xhat`` only, so the sum over all cells is the sum over
    the nonzeros of ``x log xhat - log Gamma(x + 1)`` minus the total mass
    ``sum_r w_r prod_k sum_i factors[k][i, r]``; nothing dense is formed.

    Parameters
    ----------
    X : sparse.COO
        Observed counts.
    factors : sequence of ndarray of shape (n_k, rank)
        Factor matrices.
    weights : ndarray of shape (rank,), optional
        Component weights; ones if omitted.

    Returns
    -------
    loglik : float
        Log-likelihood over every cell of ``X``.
    """
    mass = np.prod([factor.sum(axis=0) for factor in factors], axis=0)
    if weights is not None:
        mass = mass * weights
    xhat = kruskal_at(X.coords, factors, weights)
    return float(np.sum(xlogy(X.data, xhat) - gammaln(X.data + 1))
                 - mass.sum())


def sklearn_nmf_kl(X, n_components, n_iter, random_state=0):
    """Fit scikit-learn's KL multiplicative-update NMF for a fixed iteration count.

    Uses ``NMF(beta_loss="kullback-leibler", solver="mu", init="random",
    tol=0)``; with ``tol=0`` scikit-learn skips its every-10-iterations loss
    evaluation and runs exactly ``n_iter`` iterations (its convergence warning
    is silenced).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_cols)
        Counts.
    n_components : int
        Rank.
    n_iter : int
        Number of multiplicative-update iterations.
    random_state : int
        Seed of the random initialisation.

    Returns
    -------
    result : dict
        ``seconds`` (whole ``fit_transform``, initialisation included),
        ``iterations``, ``seconds_per_iteration``, ``W``, ``H`` and
        ``loglik`` (:func:`poisson_loglik` of ``X`` under ``W @ H``, not
        timed).
    """
    model = NMF(n_components=n_components, beta_loss="kullback-leibler",
                solver="mu", max_iter=n_iter, tol=0, init="random",
                random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        W = model.fit_transform(X)
        seconds = time.perf_counter() - start
    H = model.components_
    dense = isinstance(X, np.ndarray)  # W @ H of a large sparse X would not fit in memory
    return {"seconds": seconds, "iterations": model.n_iter_,
            "seconds_per_iteration": seconds / model.n_iter_,
            "W": W, "H": H, "loglik": poisson_loglik(X, W @ H) if dense else None}


def pyttb_cp_apr(X, rank, n_outer, n_inner=10, algorithm="mu",
                 random_state=0):
    """Run pyttb's CP-APR on a sparse count tensor for a fixed amount of work.

    Calls ``pyttb.cp_apr(tensor, rank, algorithm=algorithm, stoptol=0,
    maxiters=n_outer, maxinneriters=n_inner, init="random", printitn=0)``.
    With ``stoptol=0`` the KKT test never passes, so every outer iteration
    does all its inner iterations.

    Parameters
    ----------
    X : sparse.COO
        Counts.
    rank : int
        Number of CP components.
    n_outer : int
        Outer iterations (``maxiters``).
    n_inner : int
        Inner iterations per mode (``maxinneriters``).  For ``"mu"`` these are
        multiplicative updates of a whole factor matrix; for ``"pdnr"`` and
        ``"pqnr"`` each row subproblem gets up to that many Newton or
        quasi-Newton steps.
    algorithm : {"mu", "pdnr", "pqnr"}
        CP-APR variant.  In pyttb 1.8.6 ``"pqnr"`` aborts with
        ``AssertionError: ERROR: L-BFGS first iterate is bad`` on every input
        tried, including pyttb's own ``sptenrand`` data at default settings.
    random_state : int
        Seed for NumPy's global state, which pyttb's random init uses.

    Returns
    -------
    result : dict
        ``seconds`` (the ``cp_apr`` call), ``setup_seconds`` (building the
        ``sptensor``), ``solver_seconds`` (pyttb's own main-loop timer, which
        excludes the final log-likelihood), ``iterations`` (outer),
        ``inner_iterations`` (sum of pyttb's ``nInnerIters``: inner iterations
        summed over modes and, for pdnr/pqnr, over row subproblems),
        ``seconds_per_outer_iteration`` and ``seconds_per_inner_iteration``
        (both from ``solver_seconds``), ``weights``, ``factors``,
        ``loglik`` (:func:`cp_poisson_loglik`, not timed) and ``pyttb_obj``
        (pyttb's log-likelihood, which omits ``log Gamma(x + 1)``).
    """
    np.random.seed(random_state)
    start = time.perf_counter()
    tensor = ttb.sptensor(np.ascontiguousarray(X.coords.T), X.data[:, None],
                          X.shape, copy=False)
    built = time.perf_counter()
    model, _, out = ttb.cp_apr(tensor, rank, algorithm=algorithm, stoptol=0.0,
                               maxiters=n_outer, maxinneriters=n_inner,
                               init="random", printitn=0)
    seconds = time.perf_counter() - built
    outer = len(out["nInnerIters"])
    inner = int(np.sum(out["nInnerIters"]))
    return {"seconds": seconds, "setup_seconds": built - start,
            "solver_seconds": out["totalTime"], "iterations": outer,
            "inner_iterations": inner,
            "seconds_per_outer_iteration": out["totalTime"] / outer,
            "seconds_per_inner_iteration": out["totalTime"] / inner,
            "weights": model.weights, "factors": model.factor_matrices,
            "loglik": cp_poisson_loglik(X, model.factor_matrices,
                                        model.weights),
            "pyttb_obj": out["obj"]}


def tensorly_nn_parafac(X, rank, n_iter, mask=None, random_state=0, tol=0.0, init="random"):
    """Fit TensorLy's non-negative PARAFAC (Frobenius loss).

    Calls ``non_negative_parafac(X, rank, n_iter_max=n_iter, init=init,
    tol=tol, mask=mask)``. With ``tol=0`` (the default here) it runs exactly
    ``n_iter`` iterations and skips the error computation; with ``tol > 0``
    it stops by TensorLy's own criterion (absolute change of the relative
    reconstruction error below ``tol``; TensorLy's default is 1e-6), and the
    iterations actually run are reported. With a mask, TensorLy imputes the
    unobserved cells from the current model before every mode update (EM
    style).

    Parameters
    ----------
    X : ndarray
        Dense data tensor.
    rank : int
        Number of CP components.
    n_iter : int
        Number of outer iterations (one multiplicative update per mode).
    mask : ndarray of bool or {0, 1}, optional
        Same shape as ``X``; 1 marks observed cells.
    random_state : int
        Seed of the random initialisation.
    tol : float
        TensorLy's stopping tolerance; 0 runs exactly ``n_iter`` iterations.
    init : {"random", "svd"}
        TensorLy's initialisation (its own default is ``"svd"``).

    Returns
    -------
    result : dict
        ``seconds``, ``iterations``, ``seconds_per_iteration``, ``weights``
        and ``factors``.
    """
    if mask is not None:
        mask = np.asarray(mask, dtype=X.dtype)
    start = time.perf_counter()
    (weights, factors), errors = non_negative_parafac(
        X, rank, n_iter_max=n_iter, init=init, tol=tol, mask=mask,
        random_state=random_state, return_errors=True)
    seconds = time.perf_counter() - start
    iterations = len(errors) if tol else n_iter
    return {"seconds": seconds, "iterations": iterations,
            "seconds_per_iteration": seconds / iterations,
            "weights": weights, "factors": factors}


def pyttb_gcp_poisson(X, rank, n_iter, mask=None, random_state=0):
    """Fit pyttb's generalized CP with the Poisson loss (identity link).

    Calls ``pyttb.gcp_opt(data, rank, Objectives.POISSON, optimizer,
    init="random", mask=mask, printitn=0)``.  A dense ``X`` is fitted with
    ``LBFGSB(maxiter=n_iter)`` on all cells (or the masked ones); a
    ``sparse.COO`` must use a stochastic solver, here ``Adam(max_iters=n_iter,
    printitn=0)`` with pyttb's default stratified sampler and 1000 steps per
    epoch (no mask allowed).

    Parameters
    ----------
    X : ndarray or sparse.COO
        Counts.
    rank : int
        Number of CP components.
    n_iter : int
        L-BFGS-B iterations (dense) or Adam epochs (sparse).
    mask : ndarray of bool or {0, 1}, optional
        Dense only; 1 marks observed cells.
    random_state : int
        Seed for NumPy's global state (pyttb's init and samplers use it).

    Returns
    -------
    result : dict
        ``seconds``, ``iterations`` (L-BFGS-B ``nit`` or Adam epochs run),
        ``weights``, ``factors`` and ``loglik`` (not timed: the Poisson
        log-likelihood over the observed cells for dense ``X``, from
        :func:`poisson_loglik`, or over all cells for sparse ``X``, from
        :func:`cp_poisson_loglik`).
    """
    np.random.seed(random_state)
    if isinstance(X, np.ndarray):
        data = ttb.tensor(X)
        optimizer = LBFGSB(maxiter=n_iter)
        if mask is not None:
            mask = np.asarray(mask, dtype=np.float64)
    else:
        data = ttb.sptensor(np.ascontiguousarray(X.coords.T), X.data[:, None],
                            X.shape, copy=False)
        optimizer = Adam(max_iters=n_iter, printitn=0)
    start = time.perf_counter()
    model, _, info = ttb.gcp_opt(data, rank, Objectives.POISSON, optimizer,
                                 init="random", mask=mask, printitn=0)
    seconds = time.perf_counter() - start
    if isinstance(X, np.ndarray):
        iterations = info["nit"]
        observed = slice(None) if mask is None else mask.astype(bool)
        loglik = poisson_loglik(X[observed], model.full().data[observed])
    else:
        iterations = info["n_epoch"] + 1
        loglik = cp_poisson_loglik(X, model.factor_matrices, model.weights)
    return {"seconds": seconds, "iterations": iterations,
            "weights": model.weights, "factors": model.factor_matrices,
            "loglik": loglik}


def hpfrec_hpf(X, k, random_state=0):
    """Fit hpfrec's hierarchical Poisson factorization (VB) to a count matrix.

    Calls ``hpfrec.HPF(k=k, random_seed=random_state, verbose=False,
    stop_crit="train-llk").fit(X)`` on a ``scipy.sparse.coo_matrix``; HPF sees
    every entry not listed as an observed zero.

    Returns
    -------
    result : dict
        ``seconds`` and the fitted ``model`` (``model.predict(rows, cols)``
        gives expected counts).
    """
    from hpfrec import HPF

    model = HPF(k=k, random_seed=random_state, verbose=False, stop_crit="train-llk",
                maxiter=1000, produce_dicts=False, keep_data=False)
    start = time.perf_counter()
    model.fit(X)
    return {"seconds": time.perf_counter() - start, "model": model}
