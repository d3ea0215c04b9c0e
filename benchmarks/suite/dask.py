"""One PoissonCP VB fit on a Dask cluster against the same fit in one process.

The tensor is drawn chunk by chunk
(:func:`sklearn_pltf.datasets.make_dask_poisson_cp`): on the cluster each
worker draws its own chunks (each fit draws and loads the lazy array again,
as a user's would), and the in-memory contender fits their concatenation,
computed once. The cluster contender's run also reports the workers' peak
memory and the constants of the "Large data" guide's cost model
(``doc/large_data.rst``), measured on this cluster, with the seconds per
iteration the model predicts from them.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ._protocol import Case, Contender
from ._timing import seconds_per_iteration

TITLE = "Dask: a cluster against one process"
ABOUT = ("`PoissonCP(10)` by VB on a 2000 x 2000 x 2000 tensor of about 10^8 counts drawn in "
         "1000³ chunks (`make_dask_poisson_cp`): the Dask array on a `LocalCluster` of 2 "
         "workers of one thread each against the computed pydata sparse tensor in this "
         "process, per VB iteration (the loop) and for a whole fit of 3 iterations (`tol=0`; "
         "on the cluster, drawing and loading the chunks included). The cluster's run gives "
         "its workers' peak memory above their level before the fit and the \"Large data\" "
         "guide's cost model: the latency of one round, the seconds per non-zero of one "
         "iteration on a worker's thread, and the seconds per iteration they predict. Each "
         "over the in-memory time.")

IN_MEMORY = "in memory (one process)"
ON_CLUSTER = "Dask, 2 workers x 1 thread"
N_WORKERS = 2


def _tensor(shape, n_counts, chunks, rank):
    from sklearn_pltf.datasets import make_dask_poisson_cp

    return make_dask_poisson_cp(shape, rank, n_counts=n_counts, chunks=chunks, random_state=0)[0]


def _setup(shape, n_counts, chunks, rank):
    """A cluster with a client, the lazy tensor and its computed copy."""
    import distributed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=N_WORKERS, threads_per_worker=1,
                                           processes=True, dashboard_address=None,
                                           memory_limit=0)
        client = distributed.Client(cluster)
    lazy = _tensor(shape, n_counts, chunks, rank)
    in_memory = lazy.compute(scheduler="synchronous")
    return {"cluster": cluster, "client": client, "lazy": lazy, "in_memory": in_memory,
            "shape": shape, "rank": rank, "chunks": chunks}


def _teardown(data):
    data["client"].close()
    data["cluster"].close()


# ------------------------------------------------------------ on the workers
def _reset_peak():
    with open("/proc/self/clear_refs", "w") as clear_refs:  # VmHWM := VmRSS
        clear_refs.write("5")
    return _kib("VmRSS")


def _kib(name):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def _peak_kib():
    return _kib("VmHWM")


def _block_iteration_seconds(contractor, factors):
    """Seconds of one VB iteration's contractions on one block (a Δ per
    factor and the bound's X̂), its second run, and the block's non-zeros."""
    from sklearn_pltf.engine.distributed._contract import use_worker_threads

    use_worker_threads()
    for _ in range(2):
        start = time.perf_counter()
        for alpha in range(len(factors)):
            contractor.ratio_delta(alpha, factors)
        contractor.data_loglik(factors)
        seconds = time.perf_counter() - start
    return seconds, contractor.nonzeros.n_entries


# ---------------------------------------------------------------- cost model
def cost_model(nnz, n_workers, *, seconds_per_nonzero, latency, n_modes):
    """Seconds per VB iteration the guide's model predicts: ``n_modes + 1``
    rounds (an update per factor, then the bound), each a call on every block,
    the blocks' work spread over the workers, each round paying the latency."""
    return seconds_per_nonzero * nnz / n_workers + (n_modes + 1) * latency


def _cost_constants(data):
    """The latency of a call on every block that does nothing, and one
    iteration's seconds per non-zero on a worker's thread (every block's
    contractions, summed, over their non-zeros)."""
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine.distributed import as_distributed_tensor
    from sklearn_pltf.engine.model import Model, cp_model_string

    distributed_data = as_distributed_tensor(data["lazy"])
    nnz = sum(distributed_data.map_blocks(lambda block: block.values.size))
    distributed_data.map_blocks(lambda block: 0.0)
    start = time.perf_counter()
    for _ in range(5):
        distributed_data.map_blocks(lambda block: 0.0)
    latency = (time.perf_counter() - start) / 5
    shape = data["shape"]
    model = Model.parse(cp_model_string(len(shape))).bind(shape, data["rank"])
    rng = np.random.default_rng(0)
    factors = [rng.gamma(1.0, 1.0, size=model.factor_shape(a)) for a in range(model.n_factors)]
    costs = make_contractor(model, distributed_data).gather_blocks(_block_iteration_seconds,
                                                                     [factors])
    block_seconds, block_nnz = np.array(costs).T
    seconds_per_nonzero = float(block_seconds.sum() / block_nnz.sum())
    predicted = cost_model(nnz, N_WORKERS, seconds_per_nonzero=seconds_per_nonzero,
                           latency=latency, n_modes=len(shape))
    return {"nnz": int(nnz), "latency_s": latency,
            "us_per_nonzero": seconds_per_nonzero * 1e6, "predicted_s_per_iter": predicted}


# ---------------------------------------------------------------- contenders
def _per_iteration(name, key, n_iter, costs=False):
    def run(data):
        from sklearn_pltf import PoissonCP

        seconds = seconds_per_iteration(PoissonCP(data["rank"]), data[key], n_iter)
        info = {"n_iter": n_iter}
        if costs:
            if "costs" not in data:  # measured once, at the warm-up
                data["costs"] = _cost_constants(data)
            info.update(data["costs"])
        return {"result": None, "seconds": seconds, "info": info}
    return Contender(name, run, ours=True)


def _whole_fit(name, key, n_iter):
    def run(data):
        from sklearn_pltf import PoissonCP

        client = data["client"] if key == "lazy" else None
        if client is not None:
            before = client.run(_reset_peak)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a fixed number of iterations does not converge
            start = time.perf_counter()
            fitted = PoissonCP(data["rank"], max_iter=n_iter, tol=0.0, random_state=0).fit(
                data[key])
            seconds = time.perf_counter() - start
        info = {"n_iter": n_iter, "log_evidence": float(fitted.lower_bound_)}
        if client is not None:
            peaks = client.run(_peak_kib)
            info["worker_peak_mib"] = round(max(peaks[w] - before[w] for w in peaks) / 1024)
        return {"result": None, "seconds": seconds, "info": info}
    return Contender(name, run, ours=True)


def cases(quick):
    shape, n_counts, chunks = ((200, 200, 200), 1e5, 100) if quick else \
        ((2000, 2000, 2000), 1e8, 1000)
    rank, n_iter = 10, 3
    repeats = 1 if quick else 3
    name = f"{' x '.join(map(str, shape))}, {n_counts:.0e} counts in {chunks}³ chunks, rank {rank}"

    def setup():
        return _setup(shape, n_counts, chunks, rank)

    return [
        Case(name, setup, [_per_iteration(IN_MEMORY, "in_memory", n_iter),
                           _per_iteration(ON_CLUSTER, "lazy", n_iter, costs=True)],
             measure="per sweep", repeats=repeats, baseline=IN_MEMORY, teardown=_teardown),
        Case(name, setup, [_whole_fit(IN_MEMORY, "in_memory", n_iter),
                           _whole_fit(ON_CLUSTER, "lazy", n_iter)],
             repeats=repeats, baseline=IN_MEMORY, teardown=_teardown),
    ]
