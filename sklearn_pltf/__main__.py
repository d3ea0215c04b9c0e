"""``python -m sklearn_pltf``: rank by evidence and link prediction on Nations.

The shipped Nations tensor (14 countries x 14 countries x 55 relations,
binary; :func:`~sklearn_pltf.datasets.load_nations`):

1. fit ``PoissonCP`` by variational Bayes for ranks 1..12 and print the log
   evidence (the VB bound) of each; the rank with the highest is chosen.
   The factors' Exponential prior has its mean set so that the prior mean of
   every entry of X̂ is the data's mean (rank x scale^3 = mean of X): with
   the default scale 1 a rank-R model expects R links per entry, where the
   data have 0.185, and the evidence then punishes every extra component for
   the mismatch (it picks rank 2; with the scaled prior, whose evidence is
   higher at every rank, rank 3);
2. at that rank, 10-fold cross-validation over all entries (zeros included,
   :class:`~sklearn_pltf.model_selection.EntryKFold`): each fold is held out
   as missing, the rest fitted, the held-out entries ranked by the posterior
   mean; print AUC-ROC and AUC-PR per fold and their mean.
"""

import sys
import time
import warnings

import numpy as np

from . import PoissonCP
from .datasets import load_nations
from .metrics import link_prediction_auc
from .model_selection import EntryKFold


def scaled_prior_cp(X, rank, seed):
    """PoissonCP whose prior mean of each X̂ entry is the data's mean."""
    scale = (X.mean() / rank) ** (1.0 / X.ndim)
    return PoissonCP(rank, prior_shape=1.0, prior_rate=1.0 / scale, n_init=3, random_state=seed)


def main(ranks=range(1, 13), n_splits=10, seed=0):
    start = time.perf_counter()
    nations = load_nations()
    X = nations.data
    print(f"Nations: {X.shape[0]} x {X.shape[1]} entities x {X.shape[2]} relations, "
          f"{int(X.sum())} links ({X.mean():.1%} of the entries)")
    print("Step 1: the rank by the log evidence of PoissonCP (variational bound, 3 restarts,\n"
          "        Exponential prior scaled to the data's mean)")
    print(f"{'rank':>6}  {'log evidence':>13}  {'seconds':>7}")
    evidence = {}
    for rank in ranks:
        tic = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a slowly converging restart still gives a bound
            evidence[rank] = scaled_prior_cp(X, rank, seed).fit(X).log_evidence_
        print(f"{rank:>6}  {evidence[rank]:>13.1f}  {time.perf_counter() - tic:>7.2f}", flush=True)
    best = max(evidence, key=evidence.get)
    print(f"Rank chosen by the evidence: {best}")

    print(f"Step 2: {n_splits}-fold link prediction over all entries at rank {best}")
    print(f"{'fold':>6}  {'held out':>8}  {'AUC-ROC':>7}  {'AUC-PR':>7}  {'seconds':>7}")
    scores = []
    estimator = scaled_prior_cp(X, best, seed)
    for fold, (train, test) in enumerate(EntryKFold(n_splits, random_state=seed).split(X), 1):
        tic = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(X, mask=train)
        scores.append(link_prediction_auc(estimator, X, test))
        print(f"{fold:>6}  {len(test):>8}  {scores[-1].roc_auc:>7.3f}  {scores[-1].pr_auc:>7.3f}  "
              f"{time.perf_counter() - tic:>7.2f}", flush=True)
    roc, pr = np.array(scores).T
    print(f"Mean over the folds: AUC-ROC {roc.mean():.3f} (SD {roc.std(ddof=1):.3f}), "
          f"AUC-PR {pr.mean():.3f} (SD {pr.std(ddof=1):.3f}); links are "
          f"{X.mean():.1%} of the entries, the AUC-PR of a random ranking")
    print(f"Done in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
