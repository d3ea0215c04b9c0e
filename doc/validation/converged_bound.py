"""Time to a converged evidence: the whole ``fit`` at the defaults, ours and the peer's.

What a user waits for, on the same data in one run: our estimator at its
defaults (SQUAREM, ``tol=0.1`` nats) against scikit-learn's default
KL multiplicative-update ``NMF`` on a dense 2000 x 1000 and a sparse
20000 x 5000 count matrix, and pyttb's ``cp_apr`` at its defaults on a sparse
1000^3 count tensor; fits alternate, ours first, median of ``repeats``. Beside
each time, the quality each fit reached: the Poisson log-likelihood of the
data at the fitted means (higher is better; on the two matrices also as the KL
divergence scikit-learn minimises, lower is better). For ours, the returned
bound's distance to its limit: the same fit continued (``tol=1e-9``) until
the bound repeats or all but stops, and a plain coordinate-ascent run from the same start
until its estimated distance is below 10^-3 nats (its gain per iteration
then is too). The one-time numba compilation is on its own line.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import statistics
import time
import warnings

import numpy as np
import scipy.sparse as sp

import peers
import workloads


def _first_fit_seconds():
    """Seconds of a first and a second fit of a tiny NMF and CP in a fresh process."""
    from sklearn_pltf import BayesianNMF, PoissonCP

    rng = np.random.default_rng(0)
    X, T = rng.poisson(2.0, (20, 10)), rng.poisson(1.0, (8, 7, 6))
    times = []
    for _ in range(2):
        start = time.perf_counter()
        BayesianNMF(2, random_state=0).fit(X)
        PoissonCP(2, random_state=0).fit(T)
        times.append(time.perf_counter() - start)
    return times


def _in_fresh_process(fn, *args, numba_threads=None):
    """``fn(*args)`` in a new spawned process (with ``NUMBA_NUM_THREADS`` set
    there if given: pyttb's cp_apr runs fastest on one thread)."""
    saved = os.environ.get("NUMBA_NUM_THREADS")
    if numba_threads is not None:
        os.environ["NUMBA_NUM_THREADS"] = str(numba_threads)
    try:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            return pool.apply(fn, args)
    finally:
        if saved is None:
            os.environ.pop("NUMBA_NUM_THREADS", None)
        else:
            os.environ["NUMBA_NUM_THREADS"] = saved


def _nmf_loglik(X, W, H):
    """Poisson log-likelihood of X (dense or CSR) under W @ H, without
    densifying a sparse X: the non-zeros' terms minus the total mass."""
    if sp.issparse(X):
        coo = X.tocoo()
        xhat = np.einsum("nk,kn->n", W[coo.row], H[:, coo.col])
        mass = float(W.sum(axis=0) @ H.sum(axis=1))
        return peers.poisson_loglik(coo.data, xhat) + float(np.sum(xhat)) - mass
    return peers.poisson_loglik(X, W @ H)


def _saturated(X):
    """The log-likelihood of each entry at its own rate (KL = saturated - loglik)."""
    values = X.tocoo().data if sp.issparse(X) else X[X > 0]
    return peers.poisson_loglik(values, values)


def _ours_nmf(X, **params):
    from sklearn_pltf import BayesianNMF

    est = BayesianNMF(20, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BayesianNMF(2, max_iter=2, random_state=0).fit(X[:20])  # compiled kernels loaded
        start = time.perf_counter()
        est.fit(X)
        seconds = time.perf_counter() - start
    W, H = est.factors_
    return {"seconds": seconds, "iterations": est.n_iter_, "loglik": _nmf_loglik(X, W, H),
            "bound": est.lower_bound_, "converged": est.converged_}


def _theirs_nmf(X):
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    model = NMF(n_components=20, beta_loss="kullback-leibler", solver="mu", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        W = model.fit_transform(X)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "iterations": model.n_iter_,
            "loglik": _nmf_loglik(X, W, model.components_)}


def _ours_cp(X, **params):
    from sklearn_pltf import PoissonCP

    est = PoissonCP(10, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        PoissonCP(2, max_iter=2, random_state=0).fit(X[:20, :20, :20])
        start = time.perf_counter()
        est.fit(X)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "iterations": est.n_iter_,
            "loglik": peers.cp_poisson_loglik(X, est.factors_), "bound": est.lower_bound_,
            "converged": est.converged_}


def _theirs_cp(X, maxiters=None):
    """pyttb's cp_apr at its defaults (``maxiters``, its outer iterations,
    1000 by default, may be capped)."""
    import pyttb as ttb

    np.random.seed(0)
    tensor = ttb.sptensor(np.ascontiguousarray(X.coords.T), X.data[:, None], X.shape, copy=False)
    start, cpu_start = time.perf_counter(), time.process_time()
    cap = {} if maxiters is None else {"maxiters": maxiters}
    model, _, out = ttb.cp_apr(tensor, 10, printitn=0, **cap)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "iterations": len(out["nInnerIters"]),
            "loglik": peers.cp_poisson_loglik(X, model.factor_matrices, model.weights)}


def _limits(fit, X):
    """The bound of the default fit continued to an exact repeat, and of a
    plain run continued until its estimated distance is below 1e-3 nats."""
    # tol=1e-9, not 0: the loop stops where the bound repeats (or gains 1e-9
    # nats over 24 iterations), and the final fold-in, which stops each sample
    # at min(tol, 1e-6) relative, would run max_iter steps at 0.
    continued = _in_fresh_process(functools.partial(fit, tol=1e-9, max_iter=100_000), X)
    plain = _in_fresh_process(
        functools.partial(fit, tol=1e-3, acceleration=None, max_iter=100_000), X)
    return continued, plain


def bench_converged(repeats=3, only=None, cp_apr_maxiters=None, limits=True):
    """Print the time to a converged evidence for every workload, or for those
    whose label starts with one of ``only``."""
    dense = workloads.dense_poisson_nmf(2000, 1000, 20, random_state=0)
    T = workloads.sparse_poisson_cp((20000, 5000), 20, 500_000, random_state=0)
    sparse_matrix = sp.csr_matrix((T.data, tuple(T.coords)), shape=T.shape)
    cube = workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0)
    cases = {
        "dense NMF 2000 x 1000, rank 20, vs scikit-learn NMF(KL, mu)":
            (dense, _ours_nmf, _theirs_nmf),
        "sparse NMF 20000 x 5000 (0.5%), rank 20, vs scikit-learn NMF(KL, mu)":
            (sparse_matrix, _ours_nmf, _theirs_nmf),
        "sparse 1000^3 (10^6 non-zeros), rank 10, vs pyttb cp_apr":
            (cube, _ours_cp, functools.partial(_theirs_cp, maxiters=cp_apr_maxiters)),
    }
    if only:
        cases = {name: case for name, case in cases.items() if name.startswith(tuple(only))}
    first, second = _in_fresh_process(_first_fit_seconds)
    print(f"one-time compilation (first fit in a fresh process less the second): "
          f"{first - second:.2f} s", flush=True)
    for name, (X, ours_fit, theirs_fit) in cases.items():
        ours, theirs = [], []
        for _ in range(repeats):
            ours.append(_in_fresh_process(ours_fit, X))
            theirs.append(_in_fresh_process(theirs_fit, X))
        o = {k: statistics.median(r[k] for r in ours) for k in ("seconds", "iterations")}
        t = {k: statistics.median(r[k] for r in theirs) for k in ("seconds", "iterations")}
        continued, plain = _limits(ours_fit, X) if limits else (None, None)
        saturated = _saturated(X) if "NMF" in name else None
        print(name)
        for label, runs, row in (("ours", ours, o), ("peer", theirs, t)):
            quality = f"log-lik {runs[0]['loglik']:.1f}"
            if saturated is not None:
                quality += f", KL {saturated - runs[0]['loglik']:.1f}"
            cpu = ""
            if "cpu_seconds" in runs[0]:  # a one-thread peer's CPU time: robust to other load
                cpu = f" (CPU {statistics.median(r['cpu_seconds'] for r in runs):.2f} s)"
            print(f"  {label}: {row['seconds']:.2f} s{cpu}, {row['iterations']:g} iterations, "
                  f"{quality}")
        print(f"  ratio ours / peer: {o['seconds'] / t['seconds']:.2f}")
        bound = ours[0]["bound"]
        if continued is None:
            continue
        print(f"  our bound {bound:.3f} (converged {ours[0]['converged']}); continued to "
              f"1e-9 nats {continued['bound']:.3f} ({continued['seconds']:.1f} s, "
              f"{continued['iterations']} iterations): {continued['bound'] - bound:.3f} nats "
              f"higher; plain to 1e-3 nats {plain['bound']:.3f} ({plain['seconds']:.1f} s, "
              f"{plain['iterations']} sweeps): {plain['bound'] - bound:.3f} nats higher",
              flush=True)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help='the starts of the workload labels to run, e.g. "dense NMF" "sparse NMF"')
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cp-apr-maxiters", type=int, default=None,
                        help="cap cp_apr's outer iterations (its default, 1000, can take hours)")
    parser.add_argument("--no-limits", action="store_true",
                        help="skip the long runs that find our bound's limit")
    arguments = parser.parse_args()
    bench_converged(repeats=arguments.repeats, only=arguments.only,
                    cp_apr_maxiters=arguments.cp_apr_maxiters, limits=not arguments.no_limits)
