"""Time sklearn_pltf side by side with its peers on the same data, as ratios.

Usage, from the repository root, with the ``bench`` extra installed
(``python -m pip install -e ".[bench]"``)::

    python benchmarks/bench.py gibbs        # block Gibbs and SADA sweeps per second, and cost vs non-zeros
    python benchmarks/bench.py chib-rank    # how often Chib's evidence picks the true rank of Model II
    python benchmarks/bench.py sti-rank     # STI vs Chib over ranks 1..10, Poisson NMF
    python benchmarks/bench.py sgld-cost    # SGLD step cost vs batch size and non-zeros
    python benchmarks/bench.py ntf-heldout  # GibbsNTF vs TensorLy held-out RMSE by rank
    python benchmarks/bench.py ntf-cost     # GibbsNTF Gibbs sweep and HMC iteration cost
    python benchmarks/bench.py bam-rank     # AllocationSMC: rank selection, SMC evidence vs VB
    python benchmarks/bench.py bam-variance  # AllocationSMC: spread of the evidence over seeds
    python benchmarks/bench.py bam-cost     # AllocationSMC: seconds against tensor size, T = 1000
    python benchmarks/bench.py link-prediction  # 10-fold link prediction on Nations and Kinships
    python benchmarks/bench.py binary-links  # binary relations: Bernoulli-Poisson vs Poisson vs peers
    python benchmarks/bench.py binary-cost  # Bernoulli-Poisson vs Poisson VB iteration on binary data
    python benchmarks/bench.py vb-em        # VB against MAP-EM and ML-EM at 40/60/80% missing
    python benchmarks/bench.py evidence-sandwich  # every estimator against the BDMC sandwich
    python benchmarks/bench.py sti-analytic  # STI against the Gaussian additive model's exact evidence
    python benchmarks/bench.py dask         # one VB fit on a 2-worker LocalCluster vs in memory
    python benchmarks/bench.py online       # partial_fit in 1000-row batches vs batch VB
    python benchmarks/bench.py neighbour    # parallel calls beside one busy process
    python benchmarks/bench.py converged    # time to a converged evidence, ours vs the peers
    python benchmarks/bench.py threads      # one VB sweep at 1, 2, 4, ... threads
    python benchmarks/bench.py coupled      # a coupled fit's sweep against its parts' sweeps
    python benchmarks/bench.py all

Each workload prints one JSON line per measurement and a summary with the
ratios (ours / peer; below 1 means we are faster). Every timing is the median
of ``--repeats`` runs in the same session as the peer's.
"""

from __future__ import annotations

import argparse
import json
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
import timing
import workloads
from sklearn_pltf import BayesianNMF, PoissonCP


def _line(**fields):
    print(json.dumps(fields, default=float), flush=True)


def _fit_quietly(estimator, X, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fixed iteration counts do not converge
        return estimator.fit(X, **fit_params)


# ----------------------------------------------------- binary data's cost
def bench_binary_cost(repeats, n_iter):
    """The sparse 1000^3 rank-10 Poisson CP tensor (~10^6 non-zeros) made
    binary (~10^6 ones), rank 10: a VB iteration under the Bernoulli–Poisson
    likelihood against one under the Poisson likelihood on the same tensor,
    alternated in one run: the loop alone, and the whole ``fit`` at
    ``max_iter=n_iter, tol=0`` (validation, planning, the iterations and the
    final fold-in), after a first fit that compiles the kernels (timed on its
    own line)."""
    X = workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0)
    X = sparse.COO(X.coords, np.ones(X.nnz), shape=X.shape)
    _line(workload="binary-cost", ones=X.nnz)
    start = time.perf_counter()
    _fit_quietly(PoissonCP(10, likelihood="bernoulli", max_iter=1), X[:20, :20, :20])
    _line(workload="binary-cost", what="first fit (compilation)", seconds=time.perf_counter() - start)
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
    _line(workload="binary-cost", loop_seconds_per_iteration=loop, whole_fit_seconds_per_iteration=whole)
    return {
        "Bernoulli / Poisson VB iteration, loop": loop["bernoulli"] / loop["poisson"],
        "Bernoulli / Poisson VB iteration, whole fit": whole["bernoulli"] / whole["poisson"],
    }


# ------------------------------------------------------------------ Gibbs
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
    _line(workload="gibbs", nnz=X.nnz, tokens=float(X.data.sum()), seconds_per_sweep=per_sweep,
          sweeps_per_second=1.0 / per_sweep)
    sada_per_sweep = _gibbs_seconds_per_sweep(X, 10, n_sweeps, method="sada")
    _line(workload="gibbs", method="sada", seconds_per_sweep=sada_per_sweep,
          sweeps_per_second=1.0 / sada_per_sweep)
    # Spread-out factors (Dirichlet(1) columns), so that 2e5 of the 10^6 cells
    # of 100^3 are filled by about as many counts as on 1000^3.
    seconds = {}
    for n in (100, 1000):
        Y = workloads.sparse_poisson_cp((n, n, n), 10, 200_000, concentration=1.0, random_state=0)
        seconds[n] = _gibbs_seconds_per_sweep(Y, 10, n_sweeps)
        _line(workload="gibbs", shape=n, nnz=Y.nnz, tokens=float(Y.data.sum()), seconds_per_sweep=seconds[n])
    return {
        "Gibbs sweeps per second, 1000^3, 10^6 non-zeros, rank 10": 1.0 / per_sweep,
        "SADA sweeps per second, same tensor": 1.0 / sada_per_sweep,
        "Gibbs s per sweep at 2e5 non-zeros, 1000^3 / 100^3": seconds[1000] / seconds[100],
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
    return {"Chib picks rank 3 of 1..6 on Model II, fraction of datasets": wins / n_datasets}


# ------------------------------------------------------ STI, Chib and SGLD
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
            _line(workload="sti-rank", rate=rate, rank=rank, **line)
        for method, curve in curves.items():
            summary[f"rate {rate:g}: {method} argmax (truth {true_rank})"] = float(max(curve, key=curve.get))
            summary[f"rate {rate:g}: {method} CPU seconds, ranks {ranks[0]}..{ranks[-1]}"] = cpu[method]
        if {"sti", "chib"} <= set(methods):
            summary[f"rate {rate:g}: STI CPU time / Chib CPU time"] = cpu["sti"] / cpu["chib"]
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
        _line(workload="sgld-cost", nnz=big.nnz, batch_size=batch, seconds_per_step=seconds[batch])
    small_seconds = _sgld_seconds_per_step(small, 10, 10_000, n_steps)
    _line(workload="sgld-cost", nnz=small.nnz, batch_size=10_000, seconds_per_step=small_seconds)
    return {
        "SGLD s per step, batch 1e4 / batch 1e3 (10^6 nnz)": seconds[10_000] / seconds[1_000],
        "SGLD s per step, batch 1e5 / batch 1e4 (10^6 nnz)": seconds[100_000] / seconds[10_000],
        "SGLD s per step at batch 1e4, 10^6 / 2e5 non-zeros": seconds[10_000] / small_seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["gibbs", "chib-rank", "sti-rank", "sgld-cost", "ntf-heldout",
                                             "ntf-cost", "bam-rank", "bam-variance", "link-prediction",
                                             "binary-links", "binary-cost", "vb-em", "bam-cost",
                                             "evidence-sandwich", "sti-analytic", "dask", "online",
                                             "neighbour", "converged", "threads", "coupled", "all"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sparse-iter", type=int, default=5)
    parser.add_argument("--gibbs-sweeps", type=int, default=10)
    parser.add_argument("--chib-datasets", type=int, default=5)
    parser.add_argument("--sti-rates", type=float, nargs="+", default=[5.0, 1.0])
    parser.add_argument("--sti-true-rank", type=int, default=3)
    parser.add_argument("--sti-max-rank", type=int, default=10)
    parser.add_argument("--sti-ranks", type=int, nargs="+", default=None,
                        help="these ranks instead of 1..--sti-max-rank")
    parser.add_argument("--sti-chib-draws", type=int, default=2000)
    parser.add_argument("--sti-chains", type=int, default=1,
                        help="independent STI ladders per rank (n_init)")
    parser.add_argument("--sti-methods", nargs="+", choices=["sti", "chib", "ais"],
                        default=["sti", "chib"],
                        help="the estimators to run for sti-rank")
    parser.add_argument("--sti-chib-blocks", choices=["rows", "elements"], default="rows",
                        help="Chib's blocks in sti-rank")
    parser.add_argument("--sti-chib-seed-offset", type=int, default=0,
                        help="sti-rank: Chib's seed is the rank plus this (10 for the second runs)")
    parser.add_argument("--sti-steps", type=int, default=1000,
                        help="sti-rank: STI's kept steps per temperature (steps_per_temperature)")
    parser.add_argument("--sti-analytic-true-ranks", type=int, nargs="+", default=[3, 5, 7],
                        help="sti-analytic: the true ranks of the Gaussian additive datasets")
    parser.add_argument("--binary-families", nargs="+", default=None,
                        help="binary-links: the families as kind:likelihood, e.g. rescal:bernoulli "
                             "(default: every family)")
    parser.add_argument("--binary-with-diagonal", action="store_true",
                        help="binary-links: fold every entry, the diagonal x(i, i, k) included")
    parser.add_argument("--sgld-steps", type=int, default=50)
    parser.add_argument("--ntf-splits", type=int, default=10)
    parser.add_argument("--vb-em-splits", type=int, default=5,
                        help="vb-em: random splits per share of missing entries")
    parser.add_argument("--bam-datasets", type=int, default=20)
    parser.add_argument("--bam-particles", type=int, default=1000)
    parser.add_argument("--sandwich-cases", nargs="+", choices=list(bench_evidence.CASES),
                        default=list(bench_evidence.CASES))
    parser.add_argument("--sandwich-datasets", type=int, default=3)
    parser.add_argument("--sandwich-first-dataset", type=int, default=0,
                        help="evidence-sandwich: the first dataset's index (seed 1000 + index)")
    parser.add_argument("--sandwich-methods", nargs="+", choices=list(bench_evidence.METHODS),
                        default=["vb", "ais", "sti", "chib"])
    parser.add_argument("--sandwich-temperatures", type=int, default=4000,
                        help="evidence-sandwich: rungs of the reference's forward and reverse AIS")
    parser.add_argument("--dask-shape", type=int, nargs="+", default=[2000, 2000, 2000])
    parser.add_argument("--dask-counts", type=float, default=1e8,
                        help="dask: expected total count (about the non-zeros)")
    parser.add_argument("--dask-chunks", type=int, default=1000)
    parser.add_argument("--dask-iter", type=int, default=3)
    parser.add_argument("--online-passes", type=int, default=5)
    args = parser.parse_args()
    summary = {}
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
    print("\nsummary (ours / peer unless stated)")
    for key, value in summary.items():
        print(f"  {key:60s} {value:8.3f}")


if __name__ == "__main__":
    main()
