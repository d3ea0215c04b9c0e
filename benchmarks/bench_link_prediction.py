"""Link prediction on the shipped relational tensors (issue 8), run through ``bench.py``:

- (m) 10-fold cross-validation over all entries (zeros included, random
  folds, seed 0) of Nations and Kinships; mean and SD over the folds of
  AUC-ROC and AUC-PR for PoissonCP and TuckerVB (VB and EM) at several
  sizes, for GibbsNTF (Gaussian noise, non-negative factors; posterior mean
  over 200 draws after 200 warm-up sweeps), and for TensorLy's masked least-squares CP (``parafac`` with a
  mask), a Gaussian-loss peer on the same folds.

Our priors are Exponential with the scale that makes the prior mean of every
X̂ entry the data's mean (as in ``python -m sklearn_pltf``).
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np

from sklearn_pltf import GibbsNTF, PoissonCP, TuckerVB
from sklearn_pltf.datasets import load_kinships, load_nations
from sklearn_pltf.model_selection import EntryKFold, cross_validate_entries

CONFIGS = {
    "nations": [("cp", "vb", 3), ("cp", "vb", 10), ("cp", "em", 20), ("cp", "em", 30),
                ("tucker", "vb", (5, 5, 5)), ("tucker", "em", (10, 10, 10)),
                ("gibbs-ntf", "gibbs", 20), ("tensorly-cp", "als", 20)],
    "kinships": [("cp", "vb", 25), ("cp", "em", 25), ("cp", "em", 50),
                 ("tucker", "vb", (10, 10, 5)), ("tucker", "em", (10, 10, 5)),
                 ("tucker", "em", (20, 20, 10)), ("gibbs-ntf", "gibbs", 50),
                 ("tensorly-cp", "als", 100)],
}


def _line(**fields):
    print(json.dumps(fields, default=float), flush=True)


def _ours(kind, method, size, X):
    if kind == "gibbs-ntf":
        return GibbsNTF(size, evidence=None, n_warmup=200, n_draws=200, random_state=0)
    if kind == "cp":
        scale = (X.mean() / size) ** (1 / 3)
        return PoissonCP(size, method=method, prior_rate=1 / scale, max_iter=1000, random_state=0)
    scale = (X.mean() / np.prod(size)) ** (1 / 4)
    return TuckerVB(size, method=method, prior_rate=1 / scale, max_iter=1000, random_state=0)


class _TensorlyCP:
    """TensorLy's masked CP-ALS behind ``fit(X, mask)`` / ``predict_entries``."""

    def __init__(self, rank):
        self.rank = rank

    def fit(self, X, mask):
        import tensorly as tl
        from tensorly.decomposition import parafac

        cp = parafac(np.asarray(X, dtype=float), self.rank, mask=np.asarray(mask, dtype=float),
                     n_iter_max=500, init="random", random_state=0)
        self.xhat_ = tl.cp_to_tensor(cp)
        return self

    def predict_entries(self, entries):
        return self.xhat_[tuple(np.asarray(entries).T)]


def bench_link_prediction(datasets=("nations", "kinships"), n_splits=10, kinds=None):
    """(m): mean AUC-ROC and AUC-PR over 10 entry folds per model and data set."""
    from sklearn_pltf.metrics import link_prediction_auc

    summary = {}
    for name in datasets:
        X = {"nations": load_nations, "kinships": load_kinships}[name]().data
        cv = EntryKFold(n_splits, random_state=0)
        for kind, method, size in CONFIGS[name]:
            if kinds is not None and kind not in kinds:
                continue
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if kind == "tensorly-cp":
                    scores = [link_prediction_auc(_TensorlyCP(size).fit(X, train), X, test)
                              for train, test in cv.split(X)]
                    roc, pr = np.array(scores).T
                else:
                    result = cross_validate_entries(_ours(kind, method, size, X), X, cv=cv)
                    roc, pr = result["test_roc_auc"], result["test_pr_auc"]
            label = f"{name} {kind} {method} {size}"
            _line(workload="link-prediction", model=label, roc_auc=roc.mean(),
                  roc_auc_sd=roc.std(ddof=1), pr_auc=pr.mean(), pr_auc_sd=pr.std(ddof=1),
                  seconds=time.perf_counter() - start)
            summary[f"(m) {label}: AUC-ROC"] = float(roc.mean())
            summary[f"(m) {label}: AUC-PR"] = float(pr.mean())
    return summary
