"""One PoissonCP VB fit on a Dask cluster against the same fit in one process.

The tensor is drawn chunk by chunk (:func:`sklearn_pltf.datasets.make_dask_poisson_cp`):
on the cluster each worker draws its own chunks, and the in-memory run
computes the same chunks in its own fresh process and fits their
concatenation. Reported: seconds per VB iteration (the inference loop, as
``bench.py``'s other per-iteration figures), the whole ``fit``, the time to
draw and load the data (on the cluster each fit draws and loads the chunks
of the lazy array again, as a user's would), the peak resident memory of the in-memory process and
of each worker (VmHWM: data, blocks and fit together), and the cost model of
the "Large data" guide with its measured constants, against the measurement.
"""

from __future__ import annotations

import json
import multiprocessing
import time
import warnings

import numpy as np

#: Bytes of one float64.
_FLOAT = 8


def _line(**fields):
    print(json.dumps(fields, default=float), flush=True)


def _peak_rss_mib():
    """This process's peak resident set (VmHWM), in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _tensor(shape, rank, n_counts, chunks):
    from sklearn_pltf.datasets import make_dask_poisson_cp

    return make_dask_poisson_cp(shape, rank, n_counts=n_counts, chunks=chunks, random_state=0)[0]


def _whole_fit(X, rank, n_iter):
    """One whole ``fit``, as a user times it (on the cluster: drawing and
    loading the chunks included); its seconds and bounds."""
    from sklearn_pltf import PoissonCP

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fixed number of iterations does not converge
        fitted = PoissonCP(rank, max_iter=n_iter, tol=0.0, random_state=0).fit(X)
    return time.perf_counter() - start, fitted.lower_bounds_


def _timed_fits(X, rank, n_iter):
    """One whole fit, then seconds per iteration (loop only, kernels loaded)."""
    import timing
    from sklearn_pltf import PoissonCP

    whole_fit, bounds = _whole_fit(X, rank, n_iter)
    per_iteration = timing.seconds_per_iteration(PoissonCP(rank), X, n_iter)
    return per_iteration, whole_fit, bounds


def _in_memory(shape, rank, n_counts, chunks, n_iter):
    """In a fresh process: compute every chunk here, fit the whole tensor."""
    start = time.perf_counter()
    X = _tensor(shape, rank, n_counts, chunks).compute(scheduler="synchronous")
    draw_seconds = time.perf_counter() - start
    per_iteration, whole_fit, bounds = _timed_fits(X, rank, n_iter)
    return {"nnz": int(X.nnz), "draw_seconds": draw_seconds, "per_iteration": per_iteration,
            "whole_fit": whole_fit, "bounds": bounds, "peak_mib": _peak_rss_mib()}


def _round_trip(client, data):
    """Seconds of one call on every block that does nothing: the latency
    every contraction pays once."""
    def nothing(block):
        return 0.0

    data.map_blocks(nothing)
    start = time.perf_counter()
    for _ in range(5):
        data.map_blocks(nothing)
    return (time.perf_counter() - start) / 5


def _block_iteration_seconds(contractor, factors):
    """On a worker: seconds of one VB iteration's contractions on one block
    (a Δ per factor and the bound's X̂), its second run (the first loads
    the kernels), and the block's non-zeros."""
    from sklearn_pltf.engine.distributed._contract import use_worker_threads

    use_worker_threads()
    for _ in range(2):
        start = time.perf_counter()
        for alpha in range(len(factors)):
            contractor.ratio_delta(alpha, factors)
        contractor.data_loglik(factors)
        seconds = time.perf_counter() - start
    return seconds, contractor.nonzeros.n_entries


def _per_block_costs(data, shape, rank):
    """Each block's (seconds of one iteration's contractions, non-zeros)."""
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine.model import Model, cp_model_string

    model = Model.parse(cp_model_string(len(shape))).bind(shape, rank)
    rng = np.random.default_rng(0)
    factors = [rng.gamma(1.0, 1.0, size=model.factor_shape(a)) for a in range(model.n_factors)]
    return make_contractor(model, data).gather_blocks(_block_iteration_seconds, [factors])


def _released(client, timeout=120.0):
    """Wait until the workers hold no data (the last fit's blocks are freed)."""
    deadline = time.perf_counter() + timeout
    while any(client.has_what().values()) and time.perf_counter() < deadline:
        time.sleep(0.5)


def _on_cluster(shape, rank, n_counts, chunks, n_iter, n_workers):
    import distributed
    import timing

    from sklearn_pltf import PoissonCP
    from sklearn_pltf.engine.distributed import as_distributed_tensor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                           processes=True, dashboard_address=None,
                                           memory_limit=0)
        client = distributed.Client(cluster)
    try:
        # X stays lazy, as a user's would: each fit draws the chunks on the
        # workers and keeps its blocks, not the chunks. The whole fit runs
        # first, on fresh workers, and their peak memory is read after it:
        # what one user's fit needs. The other measurements follow, each
        # after the last one's blocks are released.
        X = _tensor(shape, rank, n_counts, chunks)
        whole_fit, bounds = _whole_fit(X, rank, n_iter)
        peaks = list(client.run(_peak_rss_mib).values())
        _released(client)
        start = time.perf_counter()
        data = as_distributed_tensor(X)
        nnz = sum(data.map_blocks(lambda block: block.values.size))
        draw_seconds = time.perf_counter() - start
        holders = client.who_has([block.future for block in data.blocks]).values()
        blocks_per_worker = sorted(np.unique([w for ws in holders for w in ws],
                                             return_counts=True)[1].tolist())
        latency = _round_trip(client, data)
        block_costs = _per_block_costs(data, shape, rank)
        del data
        _released(client)
        per_iteration = timing.seconds_per_iteration(PoissonCP(rank), X, n_iter)
        return {"nnz": int(nnz), "draw_seconds": draw_seconds, "per_iteration": per_iteration,
                "whole_fit": whole_fit, "bounds": bounds, "worker_peak_mib": peaks,
                "latency": latency, "block_costs": block_costs,
                "blocks_per_worker": blocks_per_worker}
    finally:
        client.close()
        cluster.close()


def cost_model(nnz, n_workers, *, seconds_per_nonzero, latency, factor_rows, rank, n_modes,
               bytes_per_nonzero, n_blocks):
    """Predicted seconds per VB iteration, data per worker and bytes moved.

    One iteration makes ``n_modes + 1`` rounds (an update per factor, then
    the bound), each a call on every block: the blocks' work spreads over the
    workers (``seconds_per_nonzero``: one iteration's contractions on a
    block, per non-zero, measured on a worker's one thread), and each round
    pays the latency once. Every block receives the factor rows it touches
    and sends back factor-sized parts. A worker holds
    ``bytes_per_nonzero`` for each of its non-zeros (measured: a worker's
    peak over its share).
    """
    compute = seconds_per_nonzero * nnz / n_workers
    moved = 2 * (n_modes + 1) * n_blocks * n_modes * factor_rows * rank * _FLOAT
    return {"seconds_per_iteration": compute + (n_modes + 1) * latency,
            "data_per_worker_gib": bytes_per_nonzero * nnz / n_workers / 2**30,
            "bytes_moved_per_iteration": moved}


def bench_dask(shape=(2000, 2000, 2000), n_counts=1e8, rank=10, chunks=1000, n_iter=3,
               n_workers=2):
    """The whole comparison; returns the summary ratios."""
    _line(workload="dask", shape=shape, n_counts=n_counts, rank=rank, chunks=chunks,
          n_workers=n_workers)
    cluster = _on_cluster(shape, rank, n_counts, chunks, n_iter, n_workers)
    _line(workload="dask", run="cluster",
          **{k: v for k, v in cluster.items() if k not in ("bounds", "block_costs")})
    _line(workload="dask", what="per block: seconds of one iteration's contractions, non-zeros",
          blocks=cluster["block_costs"])
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        memory = pool.apply(_in_memory, (shape, rank, n_counts, chunks, n_iter))
    _line(workload="dask", run="in memory", **{k: v for k, v in memory.items() if k != "bounds"})
    agreement = float(np.max(np.abs(cluster["bounds"] - memory["bounds"])
                             / np.abs(memory["bounds"])))
    # Constants of the cost model, measured on the cluster: the blocks'
    # contraction seconds over their non-zeros, and a worker's peak memory
    # over its share of the non-zeros.
    block_seconds, block_nnz = np.array(cluster["block_costs"]).T
    seconds_per_nonzero = block_seconds.sum() / block_nnz.sum()
    bytes_per_nonzero = max(cluster["worker_peak_mib"]) * 2**20 * n_workers / cluster["nnz"]
    n_chunks = len(block_nnz)
    model = dict(seconds_per_nonzero=seconds_per_nonzero, latency=cluster["latency"],
                 factor_rows=chunks, rank=rank, n_modes=len(shape),
                 bytes_per_nonzero=bytes_per_nonzero, n_blocks=n_chunks)
    predicted = cost_model(cluster["nnz"], n_workers, **model)
    _line(workload="dask", what="cost model here", predicted=predicted,
          measured_seconds_per_iteration=cluster["per_iteration"], bound_agreement=agreement)
    # 1e10 non-zeros in blocks as full as these (so as many more of them)
    blocks_at_scale = int(np.ceil(1e10 / (cluster["nnz"] / n_chunks)))
    for workers in (10, 100, 1000):
        _line(workload="dask", what="cost model, 1e10 non-zeros", n_workers=workers,
              n_blocks=max(blocks_at_scale, workers),
              **cost_model(1e10, workers, **{**model, "n_blocks": max(blocks_at_scale, workers)}))
    return {
        "Dask s/iter / in-memory s/iter": cluster["per_iteration"] / memory["per_iteration"],
        "peak worker memory / in-memory process": max(cluster["worker_peak_mib"]) / memory["peak_mib"],
        "cost model s/iter / measured": predicted["seconds_per_iteration"] / cluster["per_iteration"],
        "largest relative bound difference": agreement,
    }
