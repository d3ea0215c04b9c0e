"""(t) The whole ``fit`` per iteration, against the peers, on the same data.

Each timing runs in a fresh process, ours and the peer's alternately. The
peer runs ``n_iter`` iterations (``tol=0``); ours runs ``n_iter`` plain
sweeps (``acceleration=None``, each updating every factor once, as the
peer's iteration does) with ``tol=1e-6`` nats, which the loop does not
reach in ``n_iter`` sweeps, so that the final fold-in stops as at the
defaults (at ``tol=0`` it would run ``max_iter`` steps too, as asked); if
the loop did stop early, the ratios are per iteration. Ours is split
into its parts by timing the calls ``fit`` makes: setup (validation, model,
contractor, evidence check), the restarts' loop, and the final fold-in,
which stops at the default ``tol``. The one-time numba
compilation is measured on its own: the first fit of a tiny problem in a
fresh process less the second (numba's on-disk cache, once written, makes
later first fits cheaper than the very first after an install).
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
import warnings

import numpy as np

import peers
import workloads


def _timed_parts(estimator, X):
    """Seconds of the whole fit and of its loop and fold-in (the rest is setup)."""
    from sklearn_pltf.estimators import _base

    spent = {"loop": 0.0, "fold_in": 0.0}
    restart, fold_in = _base.fit_by_optimizer, _base.BasePoissonPLTF._fold_in

    def timed_restart(*args, **kwargs):
        start = time.perf_counter()
        try:
            return restart(*args, **kwargs)
        finally:
            spent["loop"] += time.perf_counter() - start

    def timed_fold_in(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return fold_in(self, *args, **kwargs)
        finally:
            spent["fold_in"] += time.perf_counter() - start

    _base.fit_by_optimizer, _base.BasePoissonPLTF._fold_in = timed_restart, timed_fold_in
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a loop cut at max_iter warns
            start = time.perf_counter()
            estimator.fit(X)
            whole = time.perf_counter() - start
    finally:
        _base.fit_by_optimizer, _base.BasePoissonPLTF._fold_in = restart, fold_in
    return {"whole": whole, "loop": spent["loop"], "fold_in": spent["fold_in"],
            "setup": whole - spent["loop"] - spent["fold_in"], "n_iter": estimator.n_iter_}


def _ours(kind, X, rank, n_iter):
    from sklearn_pltf import BayesianNMF, PoissonCP

    warm = BayesianNMF if kind == "nmf" else PoissonCP
    _timed_parts(warm(rank, max_iter=1, random_state=0), X)  # compiled kernels loaded
    return _timed_parts(warm(rank, max_iter=n_iter, tol=1e-6, acceleration=None,
                             random_state=0), X)


def _peer(kind, X, rank, n_iter):
    if kind == "nmf":
        return peers.sklearn_nmf_kl(X, rank, n_iter)["seconds"]
    if kind == "dense-cp":
        return peers.tensorly_nn_parafac(X, rank, n_iter)["seconds"]
    # Three inner iterations of cp_apr per iteration of ours (one inner
    # iteration updates one factor; ours updates all three).
    return 3 * n_iter * peers.pyttb_cp_apr(X, rank, 2, 10)["seconds_per_inner_iteration"]


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
    there if given: pyttb's cp_apr runs fastest on one thread, see the README)."""
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


def bench_whole_fit(repeats, nmf_iter=200, sparse_nmf_iter=100, sparse_iter=10, peer_threads=1):
    """Whole-fit seconds per iteration, ours over the peer's, on (a), (d) and (b)."""
    import scipy.sparse as sp

    cases = {
        "(a) dense NMF 2000 x 1000, rank 20, vs scikit-learn KL-MU":
            ("nmf", workloads.dense_poisson_nmf(2000, 1000, 20, random_state=0), 20, nmf_iter),
    }
    T = workloads.sparse_poisson_cp((20000, 5000), 20, 500_000, random_state=0)
    cases["(d) sparse NMF 20000 x 5000, rank 20, vs scikit-learn KL-MU"] = (
        "nmf", sp.csr_matrix((T.data, tuple(T.coords)), shape=T.shape), 20, sparse_nmf_iter)
    cases["(b) sparse 1000^3, rank 10, vs 3 pyttb cp_apr inner iterations"] = (
        "cp", workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0), 10,
        sparse_iter)
    cases["dense CP 200^3, rank 20, vs TensorLy non_negative_parafac"] = (
        "dense-cp", workloads.dense_poisson_cp(200, 20, random_state=0), 20, 20)
    summary = {}
    first, second = _in_fresh_process(_first_fit_seconds)
    print(f'{{"workload": "t", "what": "one-time compilation", "seconds": {first - second:.2f}}}',
          flush=True)
    for name, (kind, X, rank, n_iter) in cases.items():
        ours, theirs = [], []
        for _ in range(repeats):
            ours.append(_in_fresh_process(_ours, kind, X, rank, n_iter))
            theirs.append(_in_fresh_process(_peer, kind, X, rank, n_iter,
                                            numba_threads=peer_threads if kind == "cp" else None))
        parts = {key: statistics.median(o[key] for o in ours) for key in ours[0]}
        peer = statistics.median(theirs)
        ours_iter = min(o["n_iter"] for o in ours)
        per_iteration = parts["loop"] / ours_iter
        scale = n_iter / ours_iter  # per iteration, if ours stopped early
        ratio = parts["whole"] / peer * scale
        print({"workload": "t", "case": name, "iterations": n_iter, "ours_iterations": ours_iter,
               "ours_whole_s": round(parts["whole"], 3), "peer_s": round(peer, 3),
               "ours_per_peer": round(ratio, 3), "setup_s": round(parts["setup"], 3),
               "fold_in_s": round(parts["fold_in"], 3),
               "loop_per_peer": round(parts["loop"] / peer * scale, 3),
               "setup_in_iterations": round(parts["setup"] / per_iteration, 2),
               "fold_in_in_iterations": round(parts["fold_in"] / per_iteration, 2)}, flush=True)
        summary[f"{name}: whole fit / peer"] = ratio
        summary[f"{name}: loop / peer"] = parts["loop"] / peer * scale
        summary[f"{name}: setup, in our iterations"] = parts["setup"] / per_iteration
        summary[f"{name}: final fold-in, in our iterations"] = parts["fold_in"] / per_iteration
    return summary
