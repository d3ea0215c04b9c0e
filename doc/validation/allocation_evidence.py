"""Benchmarks of AllocationSMC, run through ``bench.py``:

- rank selection (``bam-rank``): 20 count tensors of 20 x 25 x 30 with
  T = 1000 tokens drawn from the BAM (a = 10, R = 5); the rank of the
  highest SMC evidence and of the highest VB bound (best of 3 restarts) over
  R = 1..10;
- the SMC estimate's spread on those tensors (``bam-variance``): the
  standard deviation of the log evidence over 8 seeds, at the estimator's
  defaults (1000 particles, 250 Gibbs moves after each resampling) against
  10,000 particles without moves (the defaults before resample-move), with
  the seconds per fit of each in the same run;
- cost against the tensor's size (``bam-cost``): T = 1000 tokens, R = 10,
  500 particles, on 4 x 4 x 4 up to 64 x 64 x 64 tensors; seconds for the
  SMC evidence, for a whole fit, and for a VB fit.
"""

from __future__ import annotations

import json
import time

import numpy as np

from sklearn_pltf import AllocationSMC
from sklearn_pltf.inference.allocation import sample_bam


def _line(**fields):
    print(json.dumps(fields, default=float), flush=True)


def _bam_dataset(seed, true_rank=5):
    X, _ = sample_bam(np.random.default_rng(1000 + seed), (20, 25, 30), true_rank,
                      concentration=10.0, n_tokens=1000)
    return X


def bench_bam_rank(n_datasets=20, n_particles=1000, n_moves=250, ranks=range(1, 11),
                   true_rank=5):
    """How often the SMC evidence and the VB bound pick the true rank."""
    smc_hits = vb_hits = 0
    for seed in range(n_datasets):
        X = _bam_dataset(seed, true_rank)
        smc, vb = [], []
        start = time.perf_counter()
        for rank in ranks:
            est = AllocationSMC(rank, n_particles=n_particles, n_moves=n_moves, concentration=10.0,
                                random_state=seed).fit(X)
            smc.append(est.log_evidence_)
            vb.append(max(AllocationSMC(rank, method="vb", concentration=10.0,
                                        random_state=10 * seed + k).fit(X).log_evidence_
                          for k in range(3)))
        smc_best, vb_best = ranks[int(np.argmax(smc))], ranks[int(np.argmax(vb))]
        smc_hits += smc_best == true_rank
        vb_hits += vb_best == true_rank
        _line(bench="bam-rank", dataset=seed, smc_rank=smc_best, vb_rank=vb_best,
              smc_minus_best=[round(v - max(smc), 1) for v in smc],
              seconds=round(time.perf_counter() - start, 1))
    _line(bench="bam-rank", n_particles=n_particles, n_moves=n_moves, smc_hits=smc_hits,
          vb_hits=vb_hits, n_datasets=n_datasets)
    return {"SMC picks the true rank (fraction)": smc_hits / n_datasets,
            "VB picks the true rank (fraction)": vb_hits / n_datasets}


def bench_bam_variance(n_datasets=20, ranks=(5, 8), n_seeds=8,
                       settings=((10_000, 0), (1000, 250))):
    """The spread of the SMC log evidence over seeds, per dataset and
    rank, for each (particles, moves) setting, and its seconds per fit; the
    settings take turns within every seed."""
    spreads = {setting: [] for setting in settings}
    seconds = {setting: [] for setting in settings}
    for dataset in range(n_datasets):
        X = _bam_dataset(dataset)
        for rank in ranks:
            values = {setting: [] for setting in settings}
            for seed in range(n_seeds):
                for setting in settings:
                    n_particles, n_moves = setting
                    start = time.perf_counter()
                    est = AllocationSMC(rank, n_particles=n_particles, n_moves=n_moves,
                                        concentration=10.0, random_state=seed).fit(X)
                    seconds[setting].append(time.perf_counter() - start)
                    values[setting].append(est.log_evidence_)
            for setting in settings:
                spreads[setting].append(float(np.std(values[setting], ddof=1)))
            _line(bench="bam-variance", dataset=dataset, rank=rank,
                  **{f"sd_{p}_particles_{m}_moves": round(spreads[p, m][-1], 2)
                     for p, m in settings},
                  **{f"mean_{p}_particles_{m}_moves": round(float(np.mean(values[p, m])), 1)
                     for p, m in settings})
    summary = {}
    for p, m in settings:
        summary[f"SD of log evidence over {n_seeds} seeds, {p} particles, {m} moves: "
                "median over datasets and ranks"] = float(np.median(spreads[p, m]))
        summary[f"largest SD of log evidence, {p} particles, {m} moves"] = float(np.max(spreads[p, m]))
        summary[f"seconds per fit, {p} particles, {m} moves"] = float(np.mean(seconds[p, m]))
    _line(bench="bam-variance", **summary)
    return summary


def bench_bam_cost(sizes=(4, 16, 64), n_particles=500, rank=10, repeats=25):
    """Seconds at T = 1000 against the tensor's size: the SMC evidence
    alone (``run_smc``, no moves), the whole ``AllocationSMC`` fit on pydata
    sparse input at its defaults (the evidence with moves plus the factor
    summary) and with ``n_moves=0`` (the summary's share shows), and a VB
    fit. The sizes take turns within every repeat, so a change in the
    machine's load falls on all of them alike; the figure is the median over
    the repeats, with the resampling events of the default fit (each brings
    ``n_moves`` moves per particle)."""
    import sparse

    from sklearn_pltf.inference import allocation

    runs = {}
    for size in sizes:
        X, _ = sample_bam(np.random.default_rng(0), (size,) * 3, 5, concentration=10.0,
                          n_tokens=1000)
        coords = np.array(np.nonzero(X))
        data = allocation.allocation_data(coords, X[tuple(coords)], X.shape, rank, 10.0)
        X = sparse.COO.from_numpy(X)
        smc = AllocationSMC(rank, n_particles=n_particles, concentration=10.0, random_state=0)
        still = AllocationSMC(rank, n_particles=n_particles, n_moves=0, concentration=10.0,
                              random_state=0)
        vb = AllocationSMC(rank, method="vb", concentration=10.0, random_state=0)
        smc.fit(X)  # compile
        runs[size] = {
            "evidence": lambda seed, data=data: allocation.run_smc(
                np.random.default_rng(seed), data, n_particles=n_particles),
            "fit": lambda seed, smc=smc, X=X: smc.set_params(random_state=seed).fit(X),
            "fit_no_moves": lambda seed, still=still, X=X: still.set_params(
                random_state=seed).fit(X),
            "vb": lambda seed, vb=vb, X=X: vb.set_params(random_state=seed).fit(X),
        }
    kinds = ("evidence", "fit", "fit_no_moves", "vb")
    seconds = {(size, kind): [] for size in sizes for kind in kinds}
    resamplings = {size: [] for size in sizes}
    for seed in range(repeats):
        for kind in kinds:
            for size in sizes:
                start = time.perf_counter()
                result = runs[size][kind](seed)
                seconds[size, kind].append(time.perf_counter() - start)
                if kind == "fit":
                    resamplings[size].append(result.n_resampled_)
    median = {key: float(np.median(value)) for key, value in seconds.items()}
    for size in sizes:
        _line(bench="bam-cost", shape=[size] * 3, smc_evidence_seconds=median[size, "evidence"],
              smc_fit_seconds=median[size, "fit"],
              smc_fit_no_moves_seconds=median[size, "fit_no_moves"],
              resampling_events=float(np.median(resamplings[size])),
              vb_seconds=median[size, "vb"])
    small, large = sizes[0], sizes[-1]
    return {f"SMC evidence seconds, {large}^3 / {small}^3":
                median[large, "evidence"] / median[small, "evidence"],
            f"AllocationSMC fit seconds, {large}^3 / {small}^3":
                median[large, "fit"] / median[small, "fit"],
            f"AllocationSMC fit without moves seconds, {large}^3 / {small}^3":
                median[large, "fit_no_moves"] / median[small, "fit_no_moves"],
            f"VB fit seconds, {large}^3 / {small}^3": median[large, "vb"] / median[small, "vb"],
            f"SMC evidence seconds at {large}^3 (T=1000, R={rank}, {n_particles} particles)":
                median[large, "evidence"]}
