"""Does the VB evidence pick the rank that drew the data? And ARD?

Run from the repository's root::

    python doc/validation/evidence_rank.py

Two studies on simulated counts (Gamma(1, 1) factors):

1. The curve. Poisson NMF 100 x 75 drawn at rank 3 and Poisson CP
   30 x 25 x 20 drawn at rank 4, ten data sets each. Every rank 1..8 is
   fitted by VB at the default prior (best bound of 3 restarts); the figure
   shows each data set's bound less its bound at the true rank, and their
   mean and standard deviation over the ten data sets. One ARD fit at 8
   components per data set gives its effective rank.
2. Recovery. 14 data sets per family, true ranks 2..8 (two each): the rank
   the bound chooses over 1..2K (one restart each, as a user's grid search
   at the defaults) against the effective rank of one ARD fit at 2K.

Writes ``doc/_static/validation/evidence_rank.png`` (the curves),
``evidence_rank_recovery.png`` (recovery) and ``evidence_rank.json``.
"""

from _setup import OUT, save_figure  # first: one core and the Agg backend, before numpy

import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_pltf import BayesianNMF, PoissonCP  # noqa: E402
from sklearn_pltf.datasets import make_poisson_cp, make_poisson_nmf  # noqa: E402

RANKS = list(range(1, 9))
N_DATASETS = 10
FAMILIES = {
    # name: (estimator, data maker, true rank of the curve study, label)
    "nmf": (BayesianNMF, lambda rank, seed: make_poisson_nmf(100, 75, rank, random_state=seed)[0],
            3, "Poisson NMF 100 x 75"),
    "cp": (PoissonCP, lambda rank, seed: make_poisson_cp((30, 25, 20), rank, random_state=seed)[0],
           4, "Poisson CP 30 x 25 x 20"),
}


def curve_study(family):
    """Bounds over RANKS (best of 3 restarts) and one ARD fit at 8, per data set."""
    estimator, make, true_rank, _ = FAMILIES[family]
    bounds, ard_ranks = [], []
    for seed in range(N_DATASETS):
        X = make(true_rank, seed)
        bounds.append([estimator(k, n_init=3, random_state=0).fit(X).log_evidence_ for k in RANKS])
        ard_ranks.append(int(estimator(max(RANKS), ard=True, random_state=0).fit(X).effective_rank_))
    bounds = np.array(bounds)
    relative = bounds - bounds[:, [RANKS.index(true_rank)]]
    chosen = [RANKS[i] for i in np.argmax(bounds, axis=1)]
    return {
        "true_rank": true_rank,
        "bound": bounds.round(2).tolist(),
        "bound_minus_true_rank_mean": relative.mean(axis=0).round(2).tolist(),
        "bound_minus_true_rank_sd": relative.std(axis=0, ddof=1).round(2).tolist(),
        "chosen_by_bound": chosen,
        "ard_effective_rank_at_8": ard_ranks,
    }


def recovery_study(family):
    """True ranks 2..8 (two data sets each): the bound's choice over 1..2K
    (one restart) against one ARD fit at 2K."""
    estimator, make, _, _ = FAMILIES[family]
    rows = []
    for i in range(14):
        rank = 2 + i % 7
        X = make(rank, 100 + i)
        grid = [estimator(k, random_state=0).fit(X).log_evidence_ for k in range(1, 2 * rank + 1)]
        ard = estimator(2 * rank, ard=True, random_state=0).fit(X)
        rows.append({"seed": 100 + i, "true_rank": rank, "grid": int(np.argmax(grid)) + 1,
                     "ard": int(ard.effective_rank_)})
    return {
        "datasets": rows,
        "grid_right": sum(r["grid"] == r["true_rank"] for r in rows),
        "ard_right": sum(r["ard"] == r["true_rank"] for r in rows),
        "n": len(rows),
    }


def plot_curves(results, path):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, family in zip(axes, FAMILIES):
        r, label = results[family], FAMILIES[family][3]
        relative = np.array(r["bound"]) - np.array(r["bound"])[:, [RANKS.index(r["true_rank"])]]
        for row in relative:
            ax.plot(RANKS, row, color="0.8", lw=0.8, zorder=1)
        ax.errorbar(RANKS, r["bound_minus_true_rank_mean"], yerr=r["bound_minus_true_rank_sd"],
                    fmt="o-", color="C0", capsize=3, zorder=3,
                    label=f"mean ± SD over {N_DATASETS} data sets")
        ax.axvline(r["true_rank"], color="C3", ls="--", lw=1, label=f"true rank {r['true_rank']}")
        ard = np.bincount(r["ard_effective_rank_at_8"], minlength=max(RANKS) + 1)
        ard_text = ", ".join(f"{k} on {n}" for k, n in enumerate(ard) if n)
        ax.text(0.98, 0.04, f"one ARD fit at 8 components:\neffective rank {ard_text} "
                f"of {N_DATASETS} data sets", transform=ax.transAxes, ha="right", va="bottom",
                fontsize=8)
        ax.set_yscale("symlog", linthresh=100)
        ax.set_ylim(top=100)
        ax.set_xlabel("rank")
        ax.set_ylabel("VB bound − bound at the true rank (nats)")
        ax.set_title(label, fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
    save_figure(fig, path)


def plot_recovery(results, path):
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
    for ax, family in zip(axes, FAMILIES):
        r = results[family]
        true = np.array([d["true_rank"] for d in r["datasets"]])
        grid = np.array([d["grid"] for d in r["datasets"]])
        ard = np.array([d["ard"] for d in r["datasets"]])
        jitter = np.tile([-0.08, 0.08], len(true) // 2 + 1)[:len(true)]
        ax.plot([1.5, 8.5], [1.5, 8.5], color="0.7", lw=1, zorder=1)
        ax.scatter(true - 0.15 + jitter, grid, marker="o", color="C0", zorder=2,
                   label=f"bound over 1..2K: {r['grid_right']}/{r['n']} right")
        ax.scatter(true + 0.15 + jitter, ard, marker="x", color="C1", zorder=2,
                   label=f"one ARD fit at 2K: {r['ard_right']}/{r['n']} right")
        ax.set_xlabel("true rank")
        ax.set_title(FAMILIES[family][3], fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
    axes[0].set_ylabel("chosen rank")
    save_figure(fig, path)


def main():
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of the over-sized fits
        curves = {family: curve_study(family) for family in FAMILIES}
        recovery = {family: recovery_study(family) for family in FAMILIES}
    plot_curves(curves, OUT / "evidence_rank.png")
    plot_recovery(recovery, OUT / "evidence_rank_recovery.png")
    seconds = time.perf_counter() - start
    with open(OUT / "evidence_rank.json", "w") as f:
        json.dump({"ranks": RANKS, "curves": curves, "recovery": recovery,
                   "wall_seconds": round(seconds, 1)}, f, indent=1)
    for family in FAMILIES:
        c, r = curves[family], recovery[family]
        print(f"{family}: chosen by the bound {c['chosen_by_bound']}, ARD {c['ard_effective_rank_at_8']}; "
              f"recovery grid {r['grid_right']}/{r['n']}, ARD {r['ard_right']}/{r['n']}")
    print(f"wall time {seconds:.1f} s")


if __name__ == "__main__":
    main()
