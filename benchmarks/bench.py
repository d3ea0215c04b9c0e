"""Time sklearn_pltf side by side with its peers on the same data, as ratios.

Usage, from the repository root, with the ``bench`` extra installed
(``python -m pip install -e ".[bench]"``)::

    python benchmarks/bench.py nmf      # (a) dense Poisson NMF vs scikit-learn
    python benchmarks/bench.py sparse   # (b) sparse 1000^3 CP: VB vs pyttb cp_apr
    python benchmarks/bench.py oslo     # (c) Oslo city-bike 5-way counts
    python benchmarks/bench.py gibbs    # (e) block Gibbs sweeps, and cost vs nnz
    python benchmarks/bench.py chib-rank  # (f) Chib's evidence picks the rank (Model II)
    python benchmarks/bench.py sti-rank   # (g) STI vs Chib over ranks 1..10, Poisson NMF
    python benchmarks/bench.py sgld-cost  # (h) SGLD step cost vs batch size and non-zeros
    python benchmarks/bench.py ntf-heldout  # (i) GibbsNTF vs TensorLy held-out RMSE by rank
    python benchmarks/bench.py ntf-cost     # (j) GibbsNTF Gibbs sweep and HMC iteration cost
    python benchmarks/bench.py bam-rank     # (k) AllocationSMC: rank selection, SMC evidence vs VB
    python benchmarks/bench.py bam-variance  # (k') AllocationSMC: spread of the evidence over seeds
    python benchmarks/bench.py link-prediction  # (m) 10-fold link prediction on Nations and Kinships
    python benchmarks/bench.py binary-links  # (q) binary relations: Bernoulli-Poisson vs Poisson vs peers
    python benchmarks/bench.py vb-em        # (n) VB against MAP-EM and ML-EM at 40/60/80% missing
    python benchmarks/bench.py bam-cost     # (l) AllocationSMC: seconds against tensor size, T = 1000
    python benchmarks/bench.py evidence-sandwich  # (p) every estimator against the BDMC sandwich
    python benchmarks/bench.py sti-analytic  # (s) STI against the Gaussian additive model's exact evidence
    python benchmarks/bench.py dask         # (u) one VB fit on a 2-worker LocalCluster vs in memory
    python benchmarks/bench.py online       # (v) partial_fit in 1000-row batches vs batch VB
    python benchmarks/bench.py neighbour    # (w) parallel calls beside one busy process
    python benchmarks/bench.py converged    # (x) time to a converged evidence, ours vs the peers
    python benchmarks/bench.py threads      # (y) one VB sweep at 1, 2, 4, ... threads
    python benchmarks/bench.py all

Each workload prints one JSON line per measurement and a summary with the
ratios (ours / peer; below 1 means we are faster). Every timing is the median
of ``--repeats`` runs in the same session as the peer's; the NMF per-iteration
timings run each in a fresh process, ours and scikit-learn's alternately. Peak
memory is measured in a fresh process (:func:`peers.measure_peak_memory`).

pyttb's CP-APR spends its time in numba-parallel ``numpy_groupies`` code that
is about 3x slower on 2 cores than with one thread; this script sets
``NUMBA_NUM_THREADS=1`` for the pyttb measurements' processes unless
``--peer-numba-threads`` says otherwise, so the peer runs at its best here.
Our own kernels use every core numba gives them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings

import numpy as np
import sparse

import bench_allocation
import bench_converged
import bench_dask
import bench_online
import bench_evidence
import bench_link_prediction
import bench_neighbour
import bench_gaussian
import bench_sti_analytic
import bench_threads
import bench_coupled
import bench_whole_fit
import peers
import timing
import workloads
from sklearn_pltf import PLTF, BayesianNMF, PoissonCP


def _line(**fields):
    print(json.dumps(fields, default=float), flush=True)


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _ours_nmf_per_iteration(X, rank, n_iter):
    return timing.seconds_per_iteration(BayesianNMF(rank), X, n_iter)


def _sklearn_nmf_per_iteration(X, rank, n_iter):
    return _median_time(lambda: peers.sklearn_nmf_kl(X, rank, n_iter), 1) / n_iter


def _per_iteration_vs_sklearn(X, rank, n_iter, repeats):
    """Median seconds per iteration of ``BayesianNMF(rank)`` and of scikit-learn's
    KL multiplicative-update NMF.

    Each timing runs in a fresh process, ours and theirs alternately: in one
    process, scikit-learn's NMF ran up to 2x faster after our fit had run than
    before it (the allocator's state, it seems), which made any order unfair.
    """
    import multiprocessing

    ours, theirs = [], []
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        for _ in range(repeats):
            ours.append(pool.apply(_ours_nmf_per_iteration, (X, rank, n_iter)))
            theirs.append(pool.apply(_sklearn_nmf_per_iteration, (X, rank, n_iter)))
    return statistics.median(ours), statistics.median(theirs)


def _fit_quietly(estimator, X, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fixed iteration counts do not converge
        return estimator.fit(X, **fit_params)


# ------------------------------------------------------------------ (a) NMF
def bench_nmf(repeats, n_iter):
    """Dense Poisson NMF 2000 x 1000, rank 20: seconds per iteration."""
    X = workloads.dense_poisson_nmf(2000, 1000, 20, random_state=0)
    ours, theirs = _per_iteration_vs_sklearn(X, 20, n_iter, repeats)
    _line(workload="a", what="VB s/iter", ours=ours, sklearn_kl_mu=theirs, ratio=ours / theirs)
    return {"(a) dense NMF VB / sklearn KL-MU, s per iteration": ours / theirs}


# ---------------------------------------------- (d) sparse NMF (issue 3)
def bench_sparse_nmf(repeats, n_iter, hpfrec_runs=5):
    """20000 x 5000 counts, 0.5% non-zeros, rank 20: s/iter vs scikit-learn; held-out
    log-likelihood vs hpfrec's HPF (and the generating intensity's)."""
    import scipy.sparse as sp
    import sparse

    T, intensity = workloads.sparse_poisson_cp(
        (20000, 5000), 20, 500_000, random_state=0, return_model=True
    )
    X = sp.csr_matrix((T.data, tuple(T.coords)), shape=T.shape)
    _line(workload="d", nnz=X.nnz, density=X.nnz / np.prod(X.shape))
    ours_per_iteration, theirs = _per_iteration_vs_sklearn(X, 20, n_iter, repeats)
    _line(workload="d", what="s/iter", ours=ours_per_iteration, sklearn_kl_mu=theirs,
          ratio=ours_per_iteration / theirs)

    rows, cols, values = workloads.held_out_entries(X, 0.05, np.random.default_rng(0))
    held_out = np.vstack([rows, cols])
    missing = sparse.COO(held_out, np.zeros(rows.size, dtype=bool), shape=X.shape, fill_value=True)
    # Prior shape 0.3 as HPF's; rate 1.0, which the evidence prefers to 0.3.
    # VB stops in local optima whose held-out scores differ by up to 0.03 nats
    # per entry here, and the better bound goes with the better held-out score:
    # one fit, then the best bound of 8 restarts.
    ours = {}
    for n_init in (1, 8):
        start = time.perf_counter()
        est = _fit_quietly(
            BayesianNMF(20, prior_shape=0.3, prior_rate=1.0, n_init=n_init, random_state=0),
            X, mask=missing,
        )
        seconds = time.perf_counter() - start
        ours[n_init] = _loglik_per_entry(values, est.predict_entries(held_out.T))
        _line(workload="d", what="ours held-out log-lik / entry", n_init=n_init, loglik=ours[n_init],
              bound=est.lower_bound_, iterations=est.n_iter_, seconds=seconds)
    truth_ll = _loglik_per_entry(values, intensity(held_out))
    train = X.tolil()
    train[rows, cols] = 0  # hpfrec cannot mask: the held-out entries become zeros
    # hpfrec gives different fits from the same random_seed, even on one core, so
    # it runs several times and its median is the reference.
    hpf_ll, hpf_seconds = [], []
    for _ in range(hpfrec_runs):
        hpf = peers.hpfrec_hpf(sp.coo_matrix(train), 20)
        hpf_ll.append(_loglik_per_entry(values, hpf["model"].predict(rows, cols)))
        hpf_seconds.append(hpf["seconds"])
    _line(workload="d", what="hpfrec held-out log-lik / entry", truth=truth_ll,
          hpfrec_median=statistics.median(hpf_ll), hpfrec_runs=hpf_ll, hpfrec_seconds=hpf_seconds)
    return {
        "(d) sparse NMF VB / sklearn KL-MU, s per iteration": ours_per_iteration / theirs,
        "(d) held-out loglik per entry, ours (1 fit) - hpfrec median": ours[1] - statistics.median(hpf_ll),
        "(d) held-out loglik per entry, ours (8 restarts) - best hpfrec run": ours[8] - max(hpf_ll),
    }


# --------------------------------------------------------------- (b) sparse
def _ours_sparse(X, rank, n_iter):
    """Module-level (picklable) timing for the peak-memory subprocess."""
    return {"seconds_per_iteration": timing.seconds_per_iteration(PoissonCP(rank), X, n_iter)}


def bench_sparse(repeats, n_iter, peer_threads):
    """1000^3 tensor, ~10^6 non-zeros, rank 10: one VB iteration vs cp_apr."""
    X = workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0)
    _line(workload="b", nnz=X.nnz, total=float(X.data.sum()))
    ours, ours_mb = [], None
    for _ in range(repeats):
        result, ours_mb = peers.measure_peak_memory(_ours_sparse, X, 10, n_iter)
        ours.append(result["seconds_per_iteration"])
    # Memory beyond the data does not grow with the rank: check at rank 20.
    result, ours_mb_rank20 = peers.measure_peak_memory(_ours_sparse, X, 20, 2)
    _line(workload="b", what="ours at rank 20", peak_mb=ours_mb_rank20,
          seconds_per_iteration=result["seconds_per_iteration"])
    os.environ["NUMBA_NUM_THREADS"] = str(peer_threads)  # inherited by the spawned process
    try:
        theirs, theirs_mb = [], None
        for _ in range(repeats):
            result, theirs_mb = peers.measure_peak_memory(peers.pyttb_cp_apr, X, 10, 2, 10, "mu")
            theirs.append(result["seconds_per_inner_iteration"])
    finally:
        del os.environ["NUMBA_NUM_THREADS"]
    ours, theirs = statistics.median(ours), statistics.median(theirs)
    ratio = ours / (3 * theirs)
    _line(workload="b", what="s/iter", ours_vb_iteration=ours, cp_apr_inner_iteration=theirs,
          ratio_vs_three_inner=ratio, ours_peak_mb=ours_mb, cp_apr_peak_mb=theirs_mb,
          peer_numba_threads=peer_threads)
    return {
        "(b) VB iteration / 3 cp_apr inner iterations": ratio,
        "(b) peak MB, ours / cp_apr": ours_mb / theirs_mb,
        "(b) peak MB, ours at rank 20 / rank 10": ours_mb_rank20 / ours_mb,
    }


# ------------------------------------------ (r) binary data's cost (issue 23)
def bench_binary_cost(repeats, n_iter):
    """The sparse 1000^3 tensor of (b) made binary (~10^6 ones), rank 10: a VB
    iteration under the Bernoulli–Poisson likelihood against one under the
    Poisson likelihood on the same tensor, alternated in one run: the loop
    alone, and the whole ``fit`` at ``max_iter=n_iter, tol=0`` (validation,
    planning, the iterations and the final fold-in), after a first fit that
    compiles the kernels (timed on its own line)."""
    X = workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0)
    X = sparse.COO(X.coords, np.ones(X.nnz), shape=X.shape)
    _line(workload="r", ones=X.nnz)
    start = time.perf_counter()
    _fit_quietly(PoissonCP(10, likelihood="bernoulli", max_iter=1), X[:20, :20, :20])
    _line(workload="r", what="first fit (compilation)", seconds=time.perf_counter() - start)
    loop = {"poisson": [], "bernoulli": []}
    whole = {"poisson": [], "bernoulli": []}
    for _ in range(repeats):
        for likelihood in ("poisson", "bernoulli"):
            estimator = PoissonCP(10, likelihood=likelihood, max_iter=n_iter, tol=0.0, random_state=0)
            loop[likelihood].append(timing.seconds_per_iteration(estimator, X, n_iter))
            start = time.perf_counter()
            _fit_quietly(estimator, X)
            whole[likelihood].append((time.perf_counter() - start) / n_iter)
    loop = {k: statistics.median(v) for k, v in loop.items()}
    whole = {k: statistics.median(v) for k, v in whole.items()}
    _line(workload="r", loop_seconds_per_iteration=loop, whole_fit_seconds_per_iteration=whole)
    return {
        "(r) Bernoulli / Poisson VB iteration, loop": loop["bernoulli"] / loop["poisson"],
        "(r) Bernoulli / Poisson VB iteration, whole fit": whole["bernoulli"] / whole["poisson"],
    }


# ------------------------------------------------------- (e) Gibbs (issue 4)
def _gibbs_seconds_per_sweep(X, rank, n_sweeps, method="gibbs"):
    """Seconds per sweep of a rank-``rank`` Poisson CP on ``X`` (block Gibbs:
    allocation of every count, then each factor; SADA: a margin of the
    allocation before each factor), after one untimed sweep."""
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference import gibbs
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.engine.model import Model

    data = as_observed_tensor(X)
    spec = ",".join(c + "r" for c in "ijk") + "->ijk"
    model = Model.parse(spec).bind(data.shape, {"r": rank})
    contractor = make_contractor(model, data)
    priors = gamma_priors(model, 1.0, 1.0)
    rng = np.random.default_rng(0)
    state = gibbs.init(rng, model, contractor, priors)
    sweep = gibbs.SWEEPS[method]
    state, _ = gibbs.step(rng, state, contractor, priors, sweep)
    start = time.perf_counter()
    for _ in range(n_sweeps):
        state, _ = gibbs.step(rng, state, contractor, priors, sweep)
    return (time.perf_counter() - start) / n_sweeps


def bench_gibbs(n_sweeps):
    """Block Gibbs on the sparse 1000^3 tensor (~10^6 non-zeros, rank 10), and
    the cost at equal non-zeros on 100^3 and 1000^3 tensors."""
    X = workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0)
    per_sweep = _gibbs_seconds_per_sweep(X, 10, n_sweeps)
    _line(workload="e", nnz=X.nnz, tokens=float(X.data.sum()), seconds_per_sweep=per_sweep,
          sweeps_per_second=1.0 / per_sweep)
    sada_per_sweep = _gibbs_seconds_per_sweep(X, 10, n_sweeps, method="sada")
    _line(workload="e", method="sada", seconds_per_sweep=sada_per_sweep,
          sweeps_per_second=1.0 / sada_per_sweep)
    # Spread-out factors (Dirichlet(1) columns), so that 2e5 of the 10^6 cells
    # of 100^3 are filled by about as many counts as on 1000^3.
    seconds = {}
    for n in (100, 1000):
        Y = workloads.sparse_poisson_cp((n, n, n), 10, 200_000, concentration=1.0, random_state=0)
        seconds[n] = _gibbs_seconds_per_sweep(Y, 10, n_sweeps)
        _line(workload="e", shape=n, nnz=Y.nnz, tokens=float(Y.data.sum()), seconds_per_sweep=seconds[n])
    return {
        "(e) Gibbs sweeps per second, 1000^3, 10^6 non-zeros, rank 10": 1.0 / per_sweep,
        "(e) SADA sweeps per second, same tensor": 1.0 / sada_per_sweep,
        "(e) Gibbs s per sweep at 2e5 non-zeros, 1000^3 / 100^3": seconds[1000] / seconds[100],
    }


def bench_chib_rank(n_datasets):
    """The paper's Model II: 10 x 5 x 8 counts from a rank-3 Poisson CP model
    (Gamma(1, 1) factors); Chib's log evidence (element blocks, 2000 draws per
    run) over ranks 1..6, and how often it is highest at 3."""
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.evidence import chib_log_evidence
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.engine.model import Model

    wins = 0
    for dataset in range(n_datasets):
        rng = np.random.default_rng(100 + dataset)
        truth = [rng.gamma(1.0, 1.0, size=(n, 3)) for n in (10, 5, 8)]
        X = rng.poisson(np.einsum("ir,jr,kr->ijk", *truth)).astype(float)
        evidence = {}
        for rank in range(1, 7):
            model = Model.parse("ir,jr,kr->ijk").bind(X.shape, {"r": rank})
            contractor = make_contractor(model, as_observed_tensor(X))
            priors = gamma_priors(model, 1.0, 1.0)
            estimate = chib_log_evidence(np.random.default_rng(0), model, contractor, priors,
                                         n_draws=2000)
            evidence[rank] = estimate.log_evidence
        best = max(evidence, key=evidence.get)
        wins += best == 3
        _line(workload="chib-rank", dataset=dataset, chosen=best, evidence=evidence)
    return {"(f) Chib picks rank 3 of 1..6 on Model II, fraction of datasets": wins / n_datasets}


# ------------------------------------------------------ (g, h) SGLD (issue 5)
def _poisson_nmf_data(rate, true_rank, seed=0, shape=(100, 75)):
    """Counts from Poisson NMF with Exponential(rate) factors (Gamma shape 1)."""
    rng = np.random.default_rng(seed)
    W = rng.gamma(1.0, 1.0 / rate, size=(shape[0], true_rank))
    H = rng.gamma(1.0, 1.0 / rate, size=(true_rank, shape[1]))
    return rng.poisson(W @ H).astype(float)


def _chib_nmf(X, rank, rate, n_draws, blocks="rows", seed=None):
    """Chib's estimate for Poisson NMF (seed = rank unless given): row blocks
    (one clamped Gibbs run per factor row, 175 runs at every rank) or element
    blocks (175 x rank runs; the better estimator above the data's rank)."""
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.evidence import chib_log_evidence
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.engine.model import Model

    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": rank})
    contractor = make_contractor(model, as_observed_tensor(X))
    priors = gamma_priors(model, 1.0, rate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # label permutations beyond the limit at rank >= 7
        rng = np.random.default_rng(rank if seed is None else seed)
        return chib_log_evidence(rng, model, contractor, priors, n_draws=n_draws, n_warmup=500,
                                 blocks=blocks)


def bench_sti_rank(rates, true_rank, ranks, chib_draws, sti_chains=1, methods=("sti", "chib"),
                   sti_steps=1000, chib_blocks="rows", chib_seed_offset=0):
    """The paper's Poisson NMF, 100 x 75, Exponential(rate) priors, data
    drawn at ``true_rank``: STI (estimator defaults but ``sti_steps`` kept
    steps per temperature, ``sti_chains`` independent ladders) and Chib
    (``chib_blocks``, seed = rank + ``chib_seed_offset``) over ``ranks``,
    their curves, argmaxes and total times.
    Times are wall seconds and CPU seconds of this process (threads
    included), the CPU time being the fair one on a machine shared with
    other jobs."""
    summary = {}
    for rate in rates:
        X = _poisson_nmf_data(rate, true_rank)
        curves = {m: {} for m in methods}
        cpu = {m: 0.0 for m in methods}
        for rank in ranks:
            line = {}
            if "sti" in methods:
                start, start_cpu = time.perf_counter(), time.process_time()
                est = BayesianNMF(rank, method="sgld", prior_shape=1.0, prior_rate=rate,
                                  n_init=sti_chains, steps_per_temperature=sti_steps,
                                  random_state=rank).fit(X)
                seconds = time.process_time() - start_cpu
                curves["sti"][rank], cpu["sti"] = est.log_evidence_, cpu["sti"] + seconds
                line.update(sti=est.log_evidence_, sti_error=est.log_evidence_error_,
                            sti_seconds=time.perf_counter() - start, sti_cpu_seconds=seconds)
            if "chib" in methods:
                start, start_cpu = time.perf_counter(), time.process_time()
                estimate = _chib_nmf(X, rank, rate, chib_draws, chib_blocks, rank + chib_seed_offset)
                seconds = time.process_time() - start_cpu
                curves["chib"][rank], cpu["chib"] = estimate.log_evidence, cpu["chib"] + seconds
                line.update(chib=estimate.log_evidence, chib_error=estimate.standard_error,
                            chib_seconds=time.perf_counter() - start, chib_cpu_seconds=seconds)
            if "ais" in methods:  # at its defaults, through the estimator (VB fit included)
                start, start_cpu = time.perf_counter(), time.process_time()
                est = BayesianNMF(rank, evidence="ais", prior_shape=1.0, prior_rate=rate,
                                  random_state=rank).fit(X)
                seconds = time.process_time() - start_cpu
                curves["ais"][rank], cpu["ais"] = est.log_evidence_, cpu["ais"] + seconds
                line.update(ais=est.log_evidence_, ais_error=est.log_evidence_error_,
                            ais_seconds=time.perf_counter() - start, ais_cpu_seconds=seconds)
            _line(workload="g", rate=rate, rank=rank, **line)
        for method, curve in curves.items():
            summary[f"(g) rate {rate:g}: {method} argmax (truth {true_rank})"] = float(max(curve, key=curve.get))
            summary[f"(g) rate {rate:g}: {method} CPU seconds, ranks {ranks[0]}..{ranks[-1]}"] = cpu[method]
        if {"sti", "chib"} <= set(methods):
            summary[f"(g) rate {rate:g}: STI CPU time / Chib CPU time"] = cpu["sti"] / cpu["chib"]
    return summary


def _sgld_seconds_per_step(X, rank, batch_size, n_steps):
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference import sgld
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.engine.model import Model

    model = Model.parse("ir,jr,kr->ijk").bind(X.shape, {"r": rank})
    contractor = make_contractor(model, as_observed_tensor(X))
    target = sgld.PoissonTarget(model, contractor, gamma_priors(model, 1.0, 1.0),
                                batch_size=batch_size)
    rng = np.random.default_rng(0)
    state = sgld.init(rng, target, 1.0)
    state = state._replace(anchor=target.anchor(state.params))
    step_size = 0.01
    state, _ = sgld.step(rng, state, target, 1.0, step_size, target.draw_batch(rng))
    start = time.perf_counter()
    for _ in range(n_steps):
        state, _ = sgld.step(rng, state, target, 1.0, step_size, target.draw_batch(rng))
    return (time.perf_counter() - start) / n_steps


def bench_sgld_cost(n_steps):
    """Seconds per SGLD step on the sparse 1000^3 CP tensor (~10^6 non-zeros,
    rank 10) at several batch sizes, and at a fixed batch on 2e5 vs 10^6
    non-zeros."""
    big = workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0)
    small = workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 200_000, random_state=0)
    seconds = {}
    for batch in (1_000, 10_000, 100_000):
        seconds[batch] = _sgld_seconds_per_step(big, 10, batch, n_steps)
        _line(workload="h", nnz=big.nnz, batch_size=batch, seconds_per_step=seconds[batch])
    small_seconds = _sgld_seconds_per_step(small, 10, 10_000, n_steps)
    _line(workload="h", nnz=small.nnz, batch_size=10_000, seconds_per_step=small_seconds)
    return {
        "(h) SGLD s per step, batch 1e4 / batch 1e3 (10^6 nnz)": seconds[10_000] / seconds[1_000],
        "(h) SGLD s per step, batch 1e5 / batch 1e4 (10^6 nnz)": seconds[100_000] / seconds[10_000],
        "(h) SGLD s per step at batch 1e4, 10^6 / 2e5 non-zeros": seconds[10_000] / small_seconds,
    }


# ----------------------------------------------------------------- (c) Oslo
def _loglik_per_entry(x, xhat):
    # the Frobenius fit can put exact zeros where a count is positive
    return peers.poisson_loglik(x, np.maximum(xhat, 1e-10)) / x.size


def _cp_full(weights, factors):
    return np.einsum("r,ar,br,cr,dr,er->abcde", weights, *factors)


def bench_oslo(rank, tols, cp_apr_outer, tensorly_iter, gcp_iter, peer_threads):
    """Time to converge and log-likelihoods per entry on the Oslo bike tensor."""
    import sparse

    X = np.asarray(workloads.oslo_city_bike(), dtype=np.float64)
    held_out = np.random.default_rng(0).random(X.shape) < 0.1
    train = np.where(held_out, np.nan, X)
    model = "ar,br,cr,dr,er->abcde"
    rows = {}

    def ours(data, tol):
        est = PLTF(model, rank, tol=tol, max_iter=5000, random_state=0)
        start = time.perf_counter()
        _fit_quietly(est, data)
        xhat = _cp_full(np.ones(rank), est.factors_)
        return time.perf_counter() - start, est, xhat

    for tol in tols:
        seconds, est, xhat = ours(X, tol)
        _, _, xhat_train = ours(train, tol)
        rows[f"sklearn_pltf VB, tol={tol:g}"] = row = {
            "seconds": seconds, "iterations": est.n_iter_, "converged": est.converged_,
            "loglik": _loglik_per_entry(X, xhat),
            "heldout": _loglik_per_entry(X[held_out], xhat_train[held_out]),
        }
        _line(workload="c", method=f"sklearn_pltf VB tol={tol:g}", **row)

    # TensorLy as its users run it: its defaults (SVD init, tol 1e-6), to its
    # own convergence criterion, with room for as many iterations as it needs.
    result = peers.tensorly_nn_parafac(X, rank, tensorly_iter, tol=1e-6, init="svd")
    masked = peers.tensorly_nn_parafac(X, rank, tensorly_iter, mask=~held_out, tol=1e-6, init="svd")
    rows["TensorLy non_negative_parafac"] = {
        "seconds": result["seconds"], "iterations": result["iterations"],
        "loglik": _loglik_per_entry(X, _cp_full(result["weights"], result["factors"])),
        "heldout": _loglik_per_entry(
            X[held_out], _cp_full(masked["weights"], masked["factors"])[held_out]),
    }
    _line(workload="c", method="TensorLy", **rows["TensorLy non_negative_parafac"])

    os.environ["NUMBA_NUM_THREADS"] = str(peer_threads)
    try:
        result, _ = peers.measure_peak_memory(
            peers.pyttb_cp_apr, sparse.COO.from_numpy(X), rank, cp_apr_outer, 10, "mu")
    finally:
        del os.environ["NUMBA_NUM_THREADS"]
    rows["pyttb cp_apr"] = {
        "seconds": result["seconds"], "iterations": result["iterations"],
        "loglik": _loglik_per_entry(X, _cp_full(result["weights"], result["factors"])),
    }
    _line(workload="c", method="pyttb cp_apr", **rows["pyttb cp_apr"])

    result = peers.pyttb_gcp_poisson(X, rank, gcp_iter, mask=~held_out)
    rows["pyttb gcp_opt (Poisson)"] = {
        "seconds": result["seconds"], "iterations": result["iterations"],
        "heldout": _loglik_per_entry(
            X[held_out], _cp_full(result["weights"], result["factors"])[held_out]),
    }
    _line(workload="c", method="pyttb gcp_opt", **rows["pyttb gcp_opt (Poisson)"])

    ours_row, tensorly = rows[f"sklearn_pltf VB, tol={tols[0]:g}"], rows["TensorLy non_negative_parafac"]
    _print_table(rows)
    return {
        "(c) time to converge, ours / TensorLy": ours_row["seconds"] / tensorly["seconds"],
        "(c) held-out loglik per entry, ours - TensorLy": ours_row["heldout"] - tensorly["heldout"],
        "(c) held-out loglik per entry, ours - gcp_opt":
            ours_row["heldout"] - rows["pyttb gcp_opt (Poisson)"]["heldout"],
    }


def _print_table(rows):
    print("\n| method | seconds | iterations | log-lik / entry | held-out log-lik / entry |")
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        cells = [f"{row[k]:.4f}" if k in row else "—" for k in ("loglik", "heldout")]
        print(f"| {name} | {row['seconds']:.1f} | {row['iterations']} | {cells[0]} | {cells[1]} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["nmf", "sparse", "oslo", "sparse-nmf", "gibbs", "chib-rank",
                                             "sti-rank", "sgld-cost", "ntf-heldout", "ntf-cost", "bam-rank",
                                             "bam-variance", "link-prediction", "binary-links", "binary-cost", "vb-em", "bam-cost", "evidence-sandwich",
                                             "sti-analytic", "whole-fit", "dask", "online", "neighbour",
                                             "converged", "threads", "coupled", "all"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--nmf-iter", type=int, default=200)
    parser.add_argument("--sparse-iter", type=int, default=5)
    parser.add_argument("--oslo-rank", type=int, default=10)
    parser.add_argument("--oslo-tol", type=float, nargs="+", default=[3e-5, 1e-4, 1e-6],
                        help="our tolerances; the first one goes into the summary ratios")
    parser.add_argument("--cp-apr-outer", type=int, default=200)
    parser.add_argument("--tensorly-iter", type=int, default=5000,
                        help="TensorLy's n_iter_max; it stops earlier by its own tol")
    parser.add_argument("--gcp-iter", type=int, default=1000)
    parser.add_argument("--peer-numba-threads", type=int, default=1)
    parser.add_argument("--hpfrec-runs", type=int, default=5)
    parser.add_argument("--gibbs-sweeps", type=int, default=10)
    parser.add_argument("--chib-datasets", type=int, default=5)
    parser.add_argument("--sti-rates", type=float, nargs="+", default=[5.0, 1.0])
    parser.add_argument("--sti-true-rank", type=int, default=3)
    parser.add_argument("--sti-max-rank", type=int, default=10)
    parser.add_argument("--sti-ranks", type=int, nargs="+", default=None,
                        help="(g) these ranks instead of 1..--sti-max-rank")
    parser.add_argument("--sti-chib-draws", type=int, default=2000)
    parser.add_argument("--sti-chains", type=int, default=1,
                        help="independent STI ladders per rank (n_init)")
    parser.add_argument("--sti-methods", nargs="+", choices=["sti", "chib", "ais"],
                        default=["sti", "chib"],
                        help="(g) the estimators to run")
    parser.add_argument("--sti-chib-blocks", choices=["rows", "elements"], default="rows",
                        help="(g) Chib's blocks")
    parser.add_argument("--sti-chib-seed-offset", type=int, default=0,
                        help="(g) Chib's seed is the rank plus this (10 for the second runs)")
    parser.add_argument("--sti-steps", type=int, default=1000,
                        help="(g) STI's kept steps per temperature (steps_per_temperature)")
    parser.add_argument("--sti-analytic-true-ranks", type=int, nargs="+", default=[3, 5, 7],
                        help="(s) the true ranks of the Gaussian additive datasets")
    parser.add_argument("--binary-families", nargs="+", default=None,
                        help="(q) the families as kind:likelihood, e.g. rescal:bernoulli "
                             "(default: every family)")
    parser.add_argument("--binary-with-diagonal", action="store_true",
                        help="(q) fold every entry, the diagonal x(i, i, k) included")
    parser.add_argument("--sgld-steps", type=int, default=50)
    parser.add_argument("--ntf-splits", type=int, default=10)
    parser.add_argument("--vb-em-splits", type=int, default=5,
                        help="(n) random splits per share of missing entries")
    parser.add_argument("--bam-datasets", type=int, default=20)
    parser.add_argument("--bam-particles", type=int, default=1000)
    parser.add_argument("--sandwich-cases", nargs="+", choices=list(bench_evidence.CASES),
                        default=list(bench_evidence.CASES))
    parser.add_argument("--sandwich-datasets", type=int, default=3)
    parser.add_argument("--sandwich-first-dataset", type=int, default=0,
                        help="(p) the first dataset's index (seed 1000 + index)")
    parser.add_argument("--sandwich-methods", nargs="+", choices=list(bench_evidence.METHODS),
                        default=["vb", "ais", "sti", "chib"])
    parser.add_argument("--sandwich-temperatures", type=int, default=4000,
                        help="(p) rungs of the reference's forward and reverse AIS")
    parser.add_argument("--dask-shape", type=int, nargs="+", default=[2000, 2000, 2000])
    parser.add_argument("--dask-counts", type=float, default=1e8,
                        help="(u) expected total count (about the non-zeros)")
    parser.add_argument("--dask-chunks", type=int, default=1000)
    parser.add_argument("--dask-iter", type=int, default=3)
    parser.add_argument("--online-passes", type=int, default=5)
    args = parser.parse_args()
    summary = {}
    if args.workload in ("nmf", "all"):
        summary.update(bench_nmf(args.repeats, args.nmf_iter))
    if args.workload in ("sparse", "all"):
        summary.update(bench_sparse(args.repeats, args.sparse_iter, args.peer_numba_threads))
    if args.workload in ("sparse-nmf", "all"):
        summary.update(bench_sparse_nmf(args.repeats, 100, args.hpfrec_runs))
    if args.workload in ("gibbs", "all"):
        summary.update(bench_gibbs(args.gibbs_sweeps))
    if args.workload in ("chib-rank", "all"):
        summary.update(bench_chib_rank(args.chib_datasets))
    if args.workload in ("sti-rank", "all"):
        sti_ranks = args.sti_ranks or list(range(1, args.sti_max_rank + 1))
        summary.update(bench_sti_rank(args.sti_rates, args.sti_true_rank, sti_ranks,
                                      args.sti_chib_draws, args.sti_chains, args.sti_methods,
                                      args.sti_steps, args.sti_chib_blocks,
                                      args.sti_chib_seed_offset))
    if args.workload in ("sgld-cost", "all"):
        summary.update(bench_sgld_cost(args.sgld_steps))
    if args.workload in ("ntf-heldout", "all"):
        summary.update(bench_gaussian.bench_ntf_heldout(args.ntf_splits))
    if args.workload in ("ntf-cost", "all"):
        summary.update(bench_gaussian.bench_ntf_cost())
    if args.workload in ("link-prediction", "all"):
        summary.update(bench_link_prediction.bench_link_prediction())
    if args.workload in ("binary-links", "all"):
        families = (None if args.binary_families is None
                    else [tuple(f.split(":")) if ":" in f else (f, None) for f in args.binary_families])
        summary.update(bench_link_prediction.bench_binary_links(
            families=families, with_diagonal=args.binary_with_diagonal))
    if args.workload in ("binary-cost", "all"):
        summary.update(bench_binary_cost(args.repeats, args.sparse_iter))
    if args.workload in ("vb-em", "all"):
        summary.update(bench_link_prediction.bench_vb_em(n_splits=args.vb_em_splits))
    if args.workload in ("bam-rank", "all"):
        summary.update(bench_allocation.bench_bam_rank(args.bam_datasets, args.bam_particles))
    if args.workload in ("bam-variance", "all"):
        summary.update(bench_allocation.bench_bam_variance(args.bam_datasets))
    if args.workload in ("bam-cost", "all"):
        summary.update(bench_allocation.bench_bam_cost())
    if args.workload in ("evidence-sandwich", "all"):
        summary.update(bench_evidence.bench_evidence_sandwich(
            args.sandwich_cases, args.sandwich_datasets, args.sandwich_methods,
            args.sandwich_temperatures, first_dataset=args.sandwich_first_dataset))
    if args.workload in ("sti-analytic", "all"):
        summary.update(bench_sti_analytic.bench_sti_analytic(args.sti_analytic_true_ranks))
    if args.workload in ("whole-fit", "all"):
        summary.update(bench_whole_fit.bench_whole_fit(args.repeats,
                                                       peer_threads=args.peer_numba_threads))
    if args.workload in ("neighbour", "all"):
        bench_neighbour.bench_neighbour()
    if args.workload in ("converged", "all"):
        bench_converged.bench_converged(args.repeats)
    if args.workload in ("threads", "all"):
        bench_threads.bench_threads(args.repeats)
    if args.workload in ("coupled", "all"):
        bench_coupled.bench_coupled(args.repeats)
    if args.workload in ("dask", "all"):
        summary.update(bench_dask.bench_dask(tuple(args.dask_shape), args.dask_counts,
                                             chunks=args.dask_chunks, n_iter=args.dask_iter))
    if args.workload in ("online", "all"):
        summary.update(bench_online.bench_online(n_passes=args.online_passes))
    if args.workload in ("oslo", "all"):
        summary.update(bench_oslo(args.oslo_rank, args.oslo_tol, args.cp_apr_outer,
                                  args.tensorly_iter, args.gcp_iter, args.peer_numba_threads))
    print("\nsummary (ours / peer unless stated)")
    for key, value in summary.items():
        print(f"  {key:60s} {value:8.3f}")


if __name__ == "__main__":
    main()
