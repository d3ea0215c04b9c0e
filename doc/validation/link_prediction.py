"""Link prediction on Nations: AUC-PR and AUC-ROC by fold.

Run from the repository's root::

    python doc/validation/link_prediction.py

Nations (14 countries x 14 countries x 55 relations, binary) in 5 folds over
the entries off the diagonal (``EntryKFold(5, random_state=0)``; the
diagonal, empty in the data and not modelled by RESCAL, is missing in every
fit and in no fold). Each model is fitted once per fold, with the fold's
entries missing, by :func:`sklearn_pltf.model_selection.cross_validate_entries`,
and ranks the fold's entries:

- the relation's rate: each relation's share of links among the training
  entries (a baseline that knows nothing of the countries);
- ``PoissonCP(10)`` with the Poisson likelihood (the 0/1 values read as
  counts) and with the Bernoulli–Poisson likelihood, prior shape 0.3 and
  the prior rate that makes the prior mean of every X̂ entry the data's mean;
- ``BayesianRESCAL(10, likelihood="bernoulli", ard=True)``, prior shape 0.3,
  random start: ARD switches off the clusters the data do not need.

Writes ``doc/_static/validation/link_prediction.png`` and
``link_prediction.json``.
"""

from _setup import OUT, save_figure  # first: one core and the Agg backend, before numpy

import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.base import BaseEstimator  # noqa: E402

from sklearn_pltf import BayesianRESCAL, PoissonCP  # noqa: E402
from sklearn_pltf.datasets import load_nations, off_diagonal_mask  # noqa: E402
from sklearn_pltf.model_selection import EntryKFold, cross_validate_entries  # noqa: E402

N_SPLITS = 5


class RelationRate(BaseEstimator):
    """Baseline: every entry of relation k scores the share of links among
    relation k's training entries."""

    def fit(self, X, mask=None):
        X = np.asarray(X, dtype=float)
        observed = np.ones(X.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        self.rate_ = (X * observed).sum(axis=(0, 1)) / observed.sum(axis=(0, 1))
        return self

    def predict_entries(self, entries):
        return self.rate_[np.asarray(entries)[:, 2]]


def effective_rank(estimator, X, entries):
    """A 'scorer' that records the clusters ARD kept on the fold."""
    return float(estimator.effective_rank_)


def models(X, mask):
    mean = X[mask].mean()
    cp_rate = 0.3 / (mean / 10) ** (1 / 3)  # prior mean of X̂ = 10 m³ = the data's mean
    return {
        "relation's rate": RelationRate(),
        "PoissonCP(10), Poisson": PoissonCP(10, prior_shape=0.3, prior_rate=cp_rate, random_state=0),
        "PoissonCP(10), Bernoulli": PoissonCP(10, likelihood="bernoulli", prior_shape=0.3,
                                               prior_rate=cp_rate, random_state=0),
        "BayesianRESCAL(10), ARD": BayesianRESCAL(10, likelihood="bernoulli", ard=True,
                                                  init="random", prior_shape=0.3, random_state=0),
    }


def plot(results, path):
    names = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, metric, label in zip(axes, ("pr_auc", "roc_auc"), ("AUC-PR", "AUC-ROC")):
        values = np.array([results[name][metric] for name in names])  # models x folds
        x = np.arange(len(names))
        ax.bar(x, values.mean(axis=1), color="0.85", width=0.6, label="mean over the folds")
        for fold in range(values.shape[1]):
            ax.plot(x, values[:, fold], "o-", ms=5, lw=0.8, alpha=0.8, label=f"fold {fold}")
        bottom = 0.4 if metric == "pr_auc" else 0.7
        for i, v in enumerate(values.mean(axis=1)):
            ax.text(i, bottom + 0.01, f"mean\n{v:.3f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x, [n.replace(", ", ",\n") for n in names], fontsize=8)
        ax.set_ylabel(f"{label} of the held-out entries")
        ax.set_ylim(bottom, 1.0)
        ax.set_title(f"Nations, {N_SPLITS} folds: {label}", fontsize=10)
    axes[0].legend(fontsize=7, loc="upper left", ncol=2)
    save_figure(fig, path)


def main():
    start = time.perf_counter()
    X = load_nations().data.astype(float)
    mask = off_diagonal_mask(X.shape)
    cv = EntryKFold(N_SPLITS, random_state=0)
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, estimator in models(X, mask).items():
            scoring = ("roc_auc", "pr_auc")
            if isinstance(estimator, BayesianRESCAL):
                scoring += (effective_rank,)
            scores = cross_validate_entries(estimator, X, cv=cv, mask=mask, scoring=scoring)
            results[name] = {
                "pr_auc": scores["test_pr_auc"].round(4).tolist(),
                "roc_auc": scores["test_roc_auc"].round(4).tolist(),
                "pr_auc_mean": round(float(scores["test_pr_auc"].mean()), 4),
                "pr_auc_sd": round(float(scores["test_pr_auc"].std(ddof=1)), 4),
                "roc_auc_mean": round(float(scores["test_roc_auc"].mean()), 4),
                "fit_seconds": round(float(scores["fit_time"].sum()), 1),
            }
            if "test_effective_rank" in scores:
                results[name]["effective_rank"] = scores["test_effective_rank"].astype(int).tolist()
            print(name, results[name])
    plot(results, OUT / "link_prediction.png")
    seconds = time.perf_counter() - start
    with open(OUT / "link_prediction.json", "w") as f:
        json.dump({"data": "Nations 14 x 14 x 55, off-diagonal entries",
                   "folds": f"EntryKFold({N_SPLITS}, random_state=0)", "models": results,
                   "wall_seconds": round(seconds, 1)}, f, indent=1)
    print(f"wall time {seconds:.1f} s")


if __name__ == "__main__":
    main()
