"""AllocationSMC: how often its evidence picks the rank, and its spread.

Run from the repository's root (hours: 20 data sets x 10 ranks, then 8
seeds of two settings at two ranks per data set)::

    python doc/validation/allocation_evidence.py            # both parts
    python doc/validation/allocation_evidence.py rank       # or one

- ``rank``: 20 count tensors of 20 x 25 x 30 with T = 1000 tokens drawn
  from the BAM (a = 10, R = 5); the rank of the highest SMC evidence and of
  the highest VB bound (best of 3 restarts) over R = 1..10;
- ``variance``: the SMC estimate's spread on those tensors, the standard
  deviation of the log evidence over 8 seeds, at the estimator's defaults
  (1000 particles, 250 Gibbs moves after each resampling) against 10,000
  particles without moves (the defaults before resample-move), with the
  seconds per fit of each in the same run.

The cost against the tensor's size is the benchmark suite's (``python
benchmarks/run.py samplers``). Writes
``doc/_static/validation/allocation_evidence.json``; the Validation page's
:ref:`validation-recorded-allocation` records its numbers.
"""

from _setup import line, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from sklearn_pltf import AllocationSMC  # noqa: E402
from sklearn_pltf.inference.allocation import sample_bam  # noqa: E402


def _bam_dataset(seed, true_rank=5):
    X, _ = sample_bam(np.random.default_rng(1000 + seed), (20, 25, 30), true_rank,
                      concentration=10.0, n_tokens=1000)
    return X


def rank_selection(n_datasets=20, n_particles=1000, n_moves=250, ranks=range(1, 11),
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
        line(study="rank", dataset=seed, smc_rank=smc_best, vb_rank=vb_best,
             smc_minus_best=[round(v - max(smc), 1) for v in smc],
             seconds=round(time.perf_counter() - start, 1))
    line(study="rank", n_particles=n_particles, n_moves=n_moves, smc_hits=smc_hits,
         vb_hits=vb_hits, n_datasets=n_datasets)
    return {"SMC picks the true rank (fraction)": smc_hits / n_datasets,
            "VB picks the true rank (fraction)": vb_hits / n_datasets}


def spread(n_datasets=20, ranks=(5, 8), n_seeds=8, settings=((10_000, 0), (1000, 250))):
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
            line(study="variance", dataset=dataset, rank=rank,
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
    line(study="variance", **summary)
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="part", help="rank, variance (default: both)")
    parser.add_argument("--datasets", type=int, default=20)
    parser.add_argument("--particles", type=int, default=1000)
    args = parser.parse_args()
    parts = args.parts or ["rank", "variance"]
    if set(parts) - {"rank", "variance"}:
        parser.error(f"unknown parts {sorted(set(parts) - {'rank', 'variance'})}")
    start = time.perf_counter()
    summary = {}
    if "rank" in parts:
        summary.update(rank_selection(args.datasets, args.particles))
    if "variance" in parts:
        summary.update(spread(args.datasets))
    write_json("allocation_evidence", summary=summary,
               start=start)
    print(summary)


if __name__ == "__main__":
    main()
