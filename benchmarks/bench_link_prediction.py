"""Link prediction on the shipped relational tensors (issue 8), run through ``bench.py``:

- (m) 10-fold cross-validation over all entries (zeros included, random
  folds, seed 0) of Nations and Kinships; mean and SD over the folds of
  AUC-ROC and AUC-PR for PoissonCP and TuckerVB (VB and EM) at several
  sizes, for GibbsNTF (Gaussian noise, non-negative factors; posterior mean
  over 200 draws after 200 warm-up sweeps), and for TensorLy's masked least-squares CP (``parafac`` with a
  mask), a Gaussian-loss peer on the same folds.
- (n) the gallery's VB-against-EM experiment over several random splits at
  40/60/80% missing, with EM under VB's prior (the posterior mode) and under a
  flat prior (maximum likelihood, the PLTF-VB paper's baseline), and VB's
  bound and AUC by prior shape at 80% missing.

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
        return PoissonCP(size, method=method, prior_rate=1 / _prior_mean(X, size, 3),
                         max_iter=1000, random_state=0)
    return TuckerVB(size, method=method, prior_rate=1 / _prior_mean(X, np.prod(size), 4),
                    max_iter=1000, random_state=0)


def _prior_mean(X, n_latent, n_factors):
    """Factor prior mean m for which the prior mean of an X̂ entry,
    n_latent x m^n_factors, equals the data's mean."""
    return (X.mean() / n_latent) ** (1 / n_factors)


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


# (n): the gallery example's experiment (plot_link_prediction_vb_em.py) over
# several random splits, with the PLTF-VB paper's own baseline added. The paper
# (Ermiş & Cemgil, 2014) compares VB with maximum likelihood, i.e. EM under a
# flat prior (the KL multiplicative update); the example compares VB with EM
# under VB's own prior (the posterior mode), a stricter baseline.
VB_EM_SHARES = (0.4, 0.6, 0.8)
VB_EM_METHODS = ("vb", "em", "ml")  # "ml": EM with prior shape 1 and a vanishing rate
VB_PRIOR_SHAPES = (0.3, 1.0, 3.0, 10.0, 30.0)
FLAT_PRIOR_RATE = 1e-9


def _vb_em_model(kind, method, X, prior_shape=1.0):
    """The example's CP (rank 10) or Tucker (5 x 5 x 5 core), 200 iterations.

    The prior's mean is scaled so that the prior mean of every X̂ entry is the
    data's mean, whatever its shape; ``method="ml"`` is EM under a flat prior.
    """
    estimator, size, n_latent, n_factors = ((PoissonCP, 10, 10, 3) if kind == "cp"
                                            else (TuckerVB, 5, 5**3, 4))
    rate = FLAT_PRIOR_RATE if method == "ml" else prior_shape / _prior_mean(X, n_latent, n_factors)
    return estimator(size, method="em" if method == "ml" else method, prior_shape=prior_shape,
                     prior_rate=rate, max_iter=200, random_state=0)


def _held_out_split(X, share, seed):
    """The example's split: every entry hidden with probability ``share``."""
    held_out = np.random.default_rng(seed).random(X.shape) < share
    return ~held_out, np.argwhere(held_out)


def bench_vb_em(datasets=("nations", "kinships"), n_splits=5):
    """(n): AUC of VB, MAP-EM and ML-EM at 40/60/80% missing, and of VB by prior shape at 80%."""
    from sklearn_pltf.metrics import link_prediction_auc

    summary = {}
    for name in datasets:
        X = {"nations": load_nations, "kinships": load_kinships}[name]().data
        splits = {share: [_held_out_split(X, share, seed) for seed in range(n_splits)]
                  for share in VB_EM_SHARES}
        for kind in ("cp", "tucker"):
            for share in VB_EM_SHARES:
                roc = {}
                for method in VB_EM_METHODS:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # 200 iterations may stop EM early
                        aucs = np.array([link_prediction_auc(_vb_em_model(kind, method, X).fit(X, mask=train),
                                                             X, test) for train, test in splits[share]])
                    roc[method] = aucs[:, 0]
                    _line(workload="vb-em", data=name, model=kind, missing=share, method=method,
                          roc_auc=aucs[:, 0].mean(), roc_auc_sd=aucs[:, 0].std(ddof=1),
                          pr_auc=aucs[:, 1].mean(), pr_auc_sd=aucs[:, 1].std(ddof=1))
                for baseline in ("em", "ml"):
                    gain = roc["vb"] - roc[baseline]
                    summary[f"(n) {name} {kind} {share:.0%}: AUC-ROC vb - {baseline} (mean)"] = float(gain.mean())
                    summary[f"(n) {name} {kind} {share:.0%}: splits vb > {baseline}"] = float((gain > 0).sum())
            train, test = splits[max(VB_EM_SHARES)][0]
            for shape in VB_PRIOR_SHAPES:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = _vb_em_model(kind, "vb", X, prior_shape=shape).fit(X, mask=train)
                auc = link_prediction_auc(est, X, test)
                _line(workload="vb-prior-shape", data=name, model=kind, missing=max(VB_EM_SHARES),
                      prior_shape=shape, log_evidence=est.log_evidence_, roc_auc=auc.roc_auc,
                      pr_auc=auc.pr_auc)
    return summary
