"""``python -m sklearn_pltf``: structure and rank by the evidence, and link
prediction, on Nations.

The shipped Nations tensor (14 countries x 14 countries x 55 relations,
binary; :func:`~sklearn_pltf.datasets.load_nations`), under the
Bernoulli–Poisson likelihood (a link where a latent Poisson count with mean X̂
is positive, P(link) = 1 − exp(−X̂)). A country has no relation to itself
(the diagonal x(i, i, k) is empty), so every model leaves the diagonal out:
it is missing in every fit and in no fold, and all evidences are of the same
entries.

1. fit CP (``PoissonCP``, ranks 1..10), Tucker (``TuckerVB``, cores 2³..4³)
   and RESCAL (``BayesianRESCAL``, one factor for the countries on both
   axes, 1..6 clusters) by variational Bayes, each with two prior shapes
   (0.3, a sparse prior, and 1, an Exponential), three restarts each run to
   a relative change of the bound below 1e-5, and print the log evidence
   (the VB bound) of each; the structure, rank and prior shape with the
   highest are chosen. Each prior's mean is set so that the prior mean of
   every entry of X̂ is the data's mean (rank x mean^3 = mean of X for CP);
2. with that model, 10-fold cross-validation over the off-diagonal entries
   (zeros included, :class:`~sklearn_pltf.model_selection.EntryKFold`): each fold is
   held out as missing, the rest fitted, the held-out entries ranked by their
   posterior probability of a link; print AUC-ROC and AUC-PR per fold and
   their mean.
"""

import sys
import time
import warnings

import numpy as np

from . import BayesianRESCAL, PoissonCP, TuckerVB
from .datasets import load_nations, off_diagonal_mask
from .metrics import link_prediction_auc
from .model_selection import EntryKFold

PRIOR_SHAPES = (0.3, 1.0)


def scaled_prior_model(X, structure, rank, prior_shape, seed):
    """A Bernoulli–Poisson CP, Tucker or RESCAL model whose prior mean of
    each X̂ entry is the data's mean."""
    if structure == "CP":
        mean = (X.mean() / rank) ** (1.0 / X.ndim)
        estimator = PoissonCP
    elif structure == "RESCAL":  # A(i, a) A(j, b) G(a, b, k): three factors, rank² terms
        mean = (X.mean() / rank**2) ** (1.0 / 3)
        estimator = BayesianRESCAL
    else:
        mean = (X.mean() / rank**X.ndim) ** (1.0 / (X.ndim + 1))
        estimator = TuckerVB
    return estimator(rank, likelihood="bernoulli", prior_shape=prior_shape,
                     prior_rate=prior_shape / mean, n_init=3, tol=1e-5, random_state=seed)


def main(candidates=None, n_splits=10, seed=0):
    candidates = candidates or ([("CP", r) for r in range(1, 11)]
                                + [("Tucker", r) for r in range(2, 5)]
                                + [("RESCAL", r) for r in range(1, 7)])
    start = time.perf_counter()
    nations = load_nations()
    X = nations.data
    observed = off_diagonal_mask(X.shape)
    share = X[observed].mean()
    print(f"Nations: {X.shape[0]} x {X.shape[1]} entities x {X.shape[2]} relations, "
          f"{int(X.sum())} links ({share:.1%} of the entries off the diagonal)")
    print("Step 1: structure, rank and prior shape by the log evidence (variational bound,\n"
          "        Bernoulli-Poisson likelihood, 3 restarts, prior scaled to the data's mean)")
    print(f"{'model':>10}  {'rank':>4}  {'shape':>5}  {'log evidence':>13}  {'seconds':>7}")
    evidence = {}
    for structure, rank in candidates:
        for shape in PRIOR_SHAPES:
            tic = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a slowly converging restart still gives a bound
                fitted = scaled_prior_model(X, structure, rank, shape, seed).fit(X, mask=observed)
            evidence[structure, rank, shape] = fitted.log_evidence_
            print(f"{structure:>10}  {rank:>4}  {shape:>5}  {fitted.log_evidence_:>13.1f}  "
                  f"{time.perf_counter() - tic:>7.2f}", flush=True)
    best = max(evidence, key=evidence.get)
    structure, rank, shape = best
    print(f"Chosen by the evidence: {structure}, rank {rank}, prior shape {shape}")

    print(f"Step 2: {n_splits}-fold link prediction over the off-diagonal entries with that model")
    print(f"{'fold':>6}  {'held out':>8}  {'AUC-ROC':>7}  {'AUC-PR':>7}  {'seconds':>7}")
    scores = []
    estimator = scaled_prior_model(X, structure, rank, shape, seed)
    folds = EntryKFold(n_splits, random_state=seed).split(X, mask=observed)
    for fold, (train, test) in enumerate(folds, 1):
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
          f"{share:.1%} of the entries, the AUC-PR of a random ranking")
    print(f"Done in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
