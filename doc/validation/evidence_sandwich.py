"""The evidence estimators against the exact evidence, on tiny data.

Run from the repository's root::

    python doc/validation/evidence_sandwich.py

Poisson NMF (``"ik,kj->ij"``, Gamma(1, 1) priors) on matrices small enough
for the exact log evidence to be computed by enumeration:

- four 4 x 3 count matrices drawn at rank 2 (``make_poisson_nmf(4, 3, 2,
  random_state=seed)``, the first four seeds whose allocations at rank 3
  number at most 5 million), exact by
  :func:`sklearn_pltf.evidence.exact_log_evidence`;
- one 6 x 3 binary matrix (a draw at rank 2, prior rate 1.5, made 0/1; the
  first seed with 5 to 7 ones) under the Bernoulli–Poisson likelihood, exact
  by :func:`sklearn_pltf.evidence.bernoulli_exact_log_evidence`.

At ranks 1, 2 and 3 each is estimated by ``BayesianNMF`` at its defaults:
the VB bound (``method="vb"``, best of 5 restarts), Chib's estimate
(``method="gibbs", evidence="chib"``) and AIS (``method="gibbs",
evidence="ais"``), the last two with their Monte Carlo standard errors.

Writes ``doc/_static/validation/evidence_sandwich.png`` and
``evidence_sandwich.json``.
"""

from _setup import OUT, save_figure  # first: one core and the Agg backend, before numpy

import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

from sklearn_pltf import BayesianNMF  # noqa: E402
from sklearn_pltf.datasets import make_poisson_nmf  # noqa: E402
from sklearn_pltf.evidence import bernoulli_exact_log_evidence, exact_log_evidence  # noqa: E402

RANKS = (1, 2, 3)
MAX_ALLOCATIONS = 5_000_000


def count_datasets(n=4):
    """The first ``n`` seeds' 4 x 3 rank-2 draws whose exact evidence at rank 3 enumerates."""
    found, seed = [], 0
    while len(found) < n:
        X, _ = make_poisson_nmf(4, 3, 2, random_state=seed)
        allocations = math.prod(math.comb(int(x) + max(RANKS) - 1, max(RANKS) - 1) for x in X.ravel())
        if allocations <= MAX_ALLOCATIONS:
            found.append((seed, X.astype(float)))
        seed += 1
    return found


def binary_dataset():
    """The first seed's 6 x 3 rank-2 draw, made binary, with 5 to 7 ones."""
    seed = 0
    while True:
        X, _ = make_poisson_nmf(6, 3, 2, prior_rate=1.5, random_state=seed)
        X = (X > 0).astype(float)
        if 5 <= X.sum() <= 7:
            return seed, X
        seed += 1


def estimate(X, rank, likelihood):
    """Every estimator at its defaults, with seconds."""
    row = {}
    start = time.perf_counter()
    row["vb"] = BayesianNMF(rank, likelihood=likelihood, n_init=5, random_state=0).fit(X).log_evidence_
    row["vb_seconds"] = time.perf_counter() - start
    for name in ("chib", "ais"):
        start = time.perf_counter()
        est = BayesianNMF(rank, likelihood=likelihood, method="gibbs", evidence=name,
                          random_state=0).fit(X)
        row[name], row[f"{name}_se"] = est.log_evidence_, est.log_evidence_error_
        row[f"{name}_seconds"] = time.perf_counter() - start
    return row


def plot(cases, path):
    x = np.arange(len(cases))
    exact = np.array([c["exact"] for c in cases])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    styles = {"vb": ("VB bound", "C0", "v"), "chib": ("Chib", "C1", "o"), "ais": ("AIS", "C2", "s")}
    for ax, zoom in zip(axes, (False, True)):
        ax.axhline(0, color="k", lw=1, label="exact log evidence")
        for offset, (name, (label, color, marker)) in zip((-0.2, 0.0, 0.2), styles.items()):
            if zoom and name == "vb":
                continue
            diff = np.array([c[name] for c in cases]) - exact
            error = None if name == "vb" else 2 * np.array([c[f"{name}_se"] for c in cases])
            ax.errorbar(x + offset, diff, yerr=error, fmt=marker, color=color, capsize=2, ms=5,
                        label=label + ("" if name == "vb" else " ± 2 se"))
        to_axes = blended_transform_factory(ax.transData, ax.transAxes)
        names = [c["dataset"] for c in cases]
        for name in dict.fromkeys(names):
            where = [i for i, n in enumerate(names) if n == name]
            ax.text(np.mean(where), 0.97, name, transform=to_axes, ha="center", va="top", fontsize=8)
            if where[0] > 0:
                ax.axvline(where[0] - 0.5, color="0.85", lw=1)
        ax.set_xticks(x, [str(c["rank"]) for c in cases], fontsize=8)
        ax.set_xlabel("rank K, by data set")
        ax.set_ylabel("estimate − exact log evidence (nats)")
        ax.legend(fontsize=7.5, loc="lower center", ncol=4 if not zoom else 3)
    axes[0].set_title("All three estimators (the bound lies below)", fontsize=10)
    axes[1].set_title("Chib and AIS, zoomed", fontsize=10)
    low = min(c["vb"] - c["exact"] for c in cases)
    axes[0].set_ylim(low - 0.2 * abs(low) - 0.5, 1.0)
    axes[1].set_ylim(-0.7, 0.8)
    save_figure(fig, path)


def main():
    start = time.perf_counter()
    data = [(f"counts {chr(65 + i)}", seed, X, "poisson") for i, (seed, X) in enumerate(count_datasets())]
    seed, X = binary_dataset()
    data.append(("binary E", seed, X, "bernoulli"))
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. AIS's note when few runs carry the weight
        for name, seed, X, likelihood in data:
            for rank in RANKS:
                t0 = time.perf_counter()
                exact = (exact_log_evidence(X, rank) if likelihood == "poisson"
                         else bernoulli_exact_log_evidence(X, rank))
                row = {"dataset": name, "seed": seed, "likelihood": likelihood, "rank": rank,
                       "exact": exact, "exact_seconds": time.perf_counter() - t0}
                row.update(estimate(X, rank, likelihood))
                cases.append(row)
                print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()},
                      flush=True)
    plot(cases, OUT / "evidence_sandwich.png")
    summary = {}
    for name in ("vb", "chib", "ais"):
        diff = np.array([c[name] - c["exact"] for c in cases])
        summary[name] = {"min_difference": round(float(diff.min()), 3),
                         "max_difference": round(float(diff.max()), 3),
                         "max_abs_difference": round(float(np.abs(diff).max()), 3)}
        if name != "vb":
            z = diff / np.array([c[f"{name}_se"] for c in cases])
            summary[name]["within_2_se"] = int(np.sum(np.abs(z) <= 2))
            summary[name]["max_abs_z"] = round(float(np.abs(z).max()), 2)
        summary[name]["seconds_per_fit_max"] = round(max(c[f"{name}_seconds"] for c in cases), 1)
    choices = {}
    for name, *_ in data:
        rows = [c for c in cases if c["dataset"] == name]
        choices[name] = {key: RANKS[int(np.argmax([r[key] for r in rows]))]
                         for key in ("exact", "vb", "chib", "ais")}
    seconds = time.perf_counter() - start
    with open(OUT / "evidence_sandwich.json", "w") as f:
        json.dump({"cases": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in c.items()}
                             for c in cases],
                   "data": {name: X.astype(int).tolist() for name, _, X, _ in data},
                   "summary": summary, "rank_chosen": choices, "n_cases": len(cases),
                   "wall_seconds": round(seconds, 1)}, f, indent=1)
    print(json.dumps(summary, indent=1))
    print(json.dumps(choices))
    print(f"wall time {seconds:.1f} s")


if __name__ == "__main__":
    main()
