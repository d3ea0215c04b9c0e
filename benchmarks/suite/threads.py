"""Thread scaling: one VB sweep at 1, 2, 4, ... threads, up to every core."""

from __future__ import annotations

import time

from . import _workloads as workloads
from ._protocol import Case, Contender

TITLE = "Threads"
ABOUT = ("One VB sweep (`inference.vb.step` on a prepared state: every factor updated once, "
         "and the bound) at 1, 2, 4, ... threads up to every core, numba's and BLAS's thread "
         "counts set together in the one process (`numba.set_num_threads`, threadpoolctl), on "
         "a sparse 1000 x 1000 x 1000 Poisson CP tensor at rank 10 (10^6 non-zeros) and a dense "
         "20000 x 10000 Poisson NMF matrix at rank 50 (2·10^8 entries). The ceiling is what the "
         "machine allows: `math.lgamma` of 2·10^6 values in a numba `prange` loop, no memory "
         "traffic to speak of and no sum (a virtual machine's cores may share physical ones). "
         "Each thread count's time over one thread's.")


def thread_counts():
    """1, 2, 4, ... and every core numba may use (``NUMBA_NUM_THREADS``)."""
    import numba

    cores = numba.config.NUMBA_NUM_THREADS
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return counts + [cores]


def _label(threads):
    return f"{threads} thread" + ("s" if threads > 1 else "")


def _at(threads, call):
    """A contender: ``call(data)`` with numba's and BLAS's threads at ``threads``."""
    def run(data):
        import numba
        from threadpoolctl import threadpool_limits

        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            with threadpool_limits(threads):
                start = time.perf_counter()
                call(data)
                seconds = time.perf_counter() - start
        finally:
            numba.set_num_threads(previous)
        return {"result": None, "seconds": seconds,
                "info": {"threading_layer": numba.threading_layer()}}
    return Contender(_label(threads), run, ours=True)


def _ceiling_data(n_values):
    import math

    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def lgammas(values, out):
        for i in numba.prange(values.size):
            out[i] = math.lgamma(values[i])

    values = np.random.default_rng(0).gamma(2.0, 10.0, n_values)
    return lgammas, values, np.empty_like(values)


def _ceiling(data):
    lgammas, values, out = data
    lgammas(values, out)


def _vb_problem(X, spec, sizes):
    """A prepared VB state (one sweep done) and what a sweep needs."""
    import numpy as np

    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.engine.model import Model
    from sklearn_pltf.inference import vb
    from sklearn_pltf.inference._common import gamma_priors

    data = as_observed_tensor(X)
    model = Model.parse(spec).bind(data.shape, sizes)
    contractor = make_contractor(model, data)
    priors = gamma_priors(model, 1.0, 1.0)
    state = vb.init(np.random.default_rng(0), model, contractor, priors)
    state, _ = vb.step(state, contractor, priors)
    return state, contractor, priors


def _sweep(problem):
    from sklearn_pltf.inference import vb

    vb.step(*problem)


def cases(quick):
    counts = thread_counts()
    repeats = 1 if quick else 3
    shape, nnz, cp_rank = ((100, 100, 100), 20_000, 5) if quick else \
        ((1000, 1000, 1000), 1_000_000, 10)
    dense, nmf_rank = ((600, 300), 5) if quick else ((20000, 10000), 50)
    n_values = 200_000 if quick else 2_000_000
    return [
        Case(f"ceiling: math.lgamma of {n_values:,} values", lambda: _ceiling_data(n_values),
             [_at(n, _ceiling) for n in counts], measure="per call", repeats=repeats,
             baseline=_label(1)),
        Case(f"sparse {' x '.join(map(str, shape))}, {nnz:,} non-zeros, rank {cp_rank}",
             lambda: _vb_problem(workloads.sparse_poisson_cp(shape, cp_rank, nnz, random_state=0),
                                 "ir,jr,kr->ijk", {"r": cp_rank}),
             [_at(n, _sweep) for n in counts], measure="per sweep", repeats=repeats,
             baseline=_label(1)),
        Case(f"dense {dense[0]} x {dense[1]}, rank {nmf_rank}",
             lambda: _vb_problem(workloads.dense_poisson_nmf(*dense, rank=nmf_rank),
                                 "ik,kj->ij", {"k": nmf_rank}),
             [_at(n, _sweep) for n in counts], measure="per sweep", repeats=repeats,
             baseline=_label(1)),
    ]
