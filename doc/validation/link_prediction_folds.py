"""Link prediction on the shipped relational tensors, run through ``bench.py``:

- 10-fold cross-validation over all entries (``bench.py link-prediction``;
  zeros included, random folds, seed 0) of Nations and Kinships; mean and SD
  over the folds of AUC-ROC and AUC-PR for PoissonCP and TuckerVB (VB and
  EM) at several sizes, for GibbsNTF (Gaussian noise, non-negative factors;
  posterior mean over 200 draws after 200 warm-up sweeps), and for
  TensorLy's masked least-squares CP (``parafac`` with a mask), a
  Gaussian-loss peer on the same folds.
- binary relations (``bench.py binary-links``): Poisson and
  Bernoulli–Poisson CP, and Bernoulli–Poisson Tucker and RESCAL, with rank
  and prior shape chosen by the evidence on each training fold, RESCAL by EM
  at one size, Bernoulli–Poisson CP by Gibbs and Gaussian CP (GibbsNTF,
  non-negative and signed) at one size, against TensorLy's masked CP and
  pyttb's Bernoulli GCP on the same folds.
- the gallery's VB-against-EM experiment (``bench.py vb-em``) over several
  random splits at 40/60/80% missing, with EM under VB's prior (the
  posterior mode) and under a flat prior (maximum likelihood, the PLTF-VB
  paper's baseline), and VB's bound and AUC by prior shape at 80% missing.

Our priors are Exponential with the scale that makes the prior mean of every
X̂ entry the data's mean (as in ``python -m sklearn_pltf``).
"""

from __future__ import annotations

import json
import logging
import time
import warnings

import numpy as np

from sklearn_pltf import AllocationSMC, BayesianRESCAL, GibbsNTF, PoissonCP, TuckerVB
from sklearn_pltf.datasets import load_kinships, load_nations, off_diagonal_mask
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
    """Mean AUC-ROC and AUC-PR over 10 entry folds per model and data set."""
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
            summary[f"link prediction {label}: AUC-ROC"] = float(roc.mean())
            summary[f"link prediction {label}: AUC-PR"] = float(pr.mean())
    return summary


# VB against EM: the gallery example's experiment (plot_link_prediction_vb_em.py) over
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
    """AUC of VB, MAP-EM and ML-EM at 40/60/80% missing, and of VB by prior shape at 80%."""
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
                    summary[f"{name} {kind} {share:.0%}: AUC-ROC vb - {baseline} (mean)"] = float(gain.mean())
                    summary[f"{name} {kind} {share:.0%}: splits vb > {baseline}"] = float((gain > 0).sum())
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


# Binary relations under the Bernoulli–Poisson likelihood. On
# each training fold the evidence (the VB bound) chooses the rank and the prior
# shape of each family; the chosen fit predicts the held-out fold. The peers
# fit at a fixed rank on the same folds: TensorLy's masked least-squares CP
# and pyttb's GCP with the Bernoulli-odds loss (non-negative factors,
# P(x = 1) = m / (1 + m)), the non-negative binary peer.
BINARY_GRIDS = {
    "nations": {"cp": (3, 5, 10, 20), "tucker": (3, 5, 8), "rescal": (1, 2, 3, 4, 5, 6)},
    "kinships": {"cp": (10, 25, 50), "tucker": (5, 10), "rescal": (10, 20, 30)},
}
# RESCAL's VB restarts per fit (as the demo's on Nations; one on Kinships, for time).
BINARY_RESCAL_N_INIT = {"nations": 3, "kinships": 1}
# RESCAL by EM (the posterior mode, no evidence) at one size, prior shape 1.
BINARY_RESCAL_EM_SIZES = {"nations": 8, "kinships": 30}
# The samplers at one size (no evidence), 200 warm-up sweeps and 200 draws:
# Bernoulli–Poisson CP by block Gibbs, and Gaussian CP (GibbsNTF), non-negative
# and signed, on the 0/1 values.
BINARY_SAMPLER_SIZES = {"nations": {"cp-gibbs": 10, "rescal-gibbs": 8, "gibbs-ntf": 20,
                                     "gibbs-ntf-signed": 20},
                        "kinships": {"cp-gibbs": 50, "rescal-gibbs": 30, "gibbs-ntf": 50,
                                     "gibbs-ntf-signed": 100}}
BINARY_PRIOR_SHAPES = (0.1, 0.3, 1.0)
# The Bayesian Allocation Model (counts; Nations only: the SMC's tokens in the
# missing cells cost missing cells x R x 4 each, and Kinships' folds hold
# 28,000 missing cells): components x concentrations, chosen on each training
# fold by the VB bound, or by the SMC evidence (defaults: 1000 particles, 250
# moves) over a smaller grid.
BINARY_BAM_GRIDS = {"bam-vb": ((5, 10, 20), (1.0, 10.0, 100.0, 1000.0)), "bam-smc": ((5, 10), (100.0,))}
# GCP's rank; TensorLy's is the one of its best AUC in ``bench.py link-prediction``:
# 20 and 100.
BINARY_PEER_RANKS = {"nations": 20, "kinships": 50}


def _binary_family(kind, likelihood, size, prior_shape, X, method="vb", n_init=1):
    """A CP, Tucker or RESCAL fit whose prior mean of every X̂ entry is the data's mean."""
    estimator, n_latent, n_factors = {"cp": (PoissonCP, size, 3), "tucker": (TuckerVB, size**3, 4),
                                      "rescal": (BayesianRESCAL, size**2, 3)}[kind]
    return estimator(size, likelihood=likelihood, method=method, prior_shape=prior_shape,
                     prior_rate=prior_shape / _prior_mean(X, n_latent, n_factors),
                     max_iter=1000, tol=1e-5, n_init=n_init, random_state=0)


def _bam_chosen_by_evidence(kind, X, train):
    """AllocationSMC of highest evidence over its grid on the training mask."""
    sizes, concentrations = BINARY_BAM_GRIDS[kind]
    fits = [AllocationSMC(size, concentration=a, method=kind[4:], random_state=0).fit(X, mask=train)
            for size in sizes for a in concentrations]
    return max(fits, key=lambda est: est.log_evidence_)


def _chosen_by_evidence(kind, likelihood, sizes, X, train, n_init=1):
    """The fit of highest evidence over ``sizes`` x the prior shapes on the training mask."""
    best = None
    for size in sizes:
        for shape in BINARY_PRIOR_SHAPES:
            est = _binary_family(kind, likelihood, size, shape, X, n_init=n_init).fit(X, mask=train)
            if best is None or est.log_evidence_ > best.log_evidence_:
                best = est
    return best


class _GCPBernoulli:
    """pyttb's ``gcp_opt`` with the Bernoulli-odds loss behind ``fit(X, mask)``
    / ``predict_entries`` (L-BFGS-B, at most 1000 iterations, random start)."""

    def __init__(self, rank):
        self.rank = rank

    def fit(self, X, mask):
        import pyttb as ttb
        from pyttb.gcp.fg_setup import Objectives
        from pyttb.gcp.optimizers import LBFGSB

        np.random.seed(0)
        logging.getLogger().setLevel(logging.ERROR)  # pyttb logs a copy warning per call
        model, _, _ = ttb.gcp_opt(ttb.tensor(np.asarray(X, dtype=float)), self.rank,
                                  Objectives.BERNOULLI_ODDS, LBFGSB(maxiter=1000),
                                  init="random", mask=np.asarray(mask, dtype=float), printitn=0)
        odds = model.full().data
        self.probability_ = odds / (1.0 + odds)
        return self

    def predict_entries(self, entries):
        return self.probability_[tuple(np.asarray(entries).T)]


def bench_binary_links(datasets=("nations", "kinships"), n_splits=10, families=None,
                       with_diagonal=False):
    """10-fold AUC-PR / AUC-ROC of the evidence-chosen Poisson and
    Bernoulli–Poisson CP, Tucker and RESCAL fits, of the Bayesian Allocation
    Model (Nations), and of the two peers.

    The diagonal x(i, i, k) (empty in both data sets) is missing in every fit
    and in no fold, so every model's evidence is of the same entries;
    ``with_diagonal=True`` folds every entry, as :func:`bench_link_prediction` does."""
    from sklearn_pltf.metrics import link_prediction_auc

    families = families or [("cp", "poisson"), ("cp", "bernoulli"), ("tucker", "bernoulli"),
                             ("rescal", "bernoulli"), ("rescal-em", "bernoulli"),
                             ("bam-vb", None), ("bam-smc", None),
                             ("tensorly-cp", None), ("gcp-bernoulli", None)]
    summary = {}
    for name in datasets:
        X = {"nations": load_nations, "kinships": load_kinships}[name]().data.astype(float)
        observed = None if with_diagonal else off_diagonal_mask(X.shape)
        folds = list(EntryKFold(n_splits, random_state=0).split(X, mask=observed))
        for kind, likelihood in families:
            if kind.startswith("bam") and name != "nations":
                continue
            start = time.perf_counter()
            scores, chosen = [], []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for train, test in folds:
                    if kind == "tensorly-cp":
                        est = _TensorlyCP(20 if name == "nations" else 100).fit(X, train)
                    elif kind == "gcp-bernoulli":
                        est = _GCPBernoulli(BINARY_PEER_RANKS[name]).fit(X, train)
                    elif kind in ("gibbs-ntf", "gibbs-ntf-signed"):
                        est = GibbsNTF(BINARY_SAMPLER_SIZES[name][kind], evidence=None,
                                       nonnegative=kind == "gibbs-ntf", n_warmup=200,
                                       n_draws=200, random_state=0).fit(X, mask=train)
                    elif kind == "cp-gibbs":
                        size = BINARY_SAMPLER_SIZES[name][kind]
                        est = PoissonCP(size, likelihood=likelihood, method="gibbs", evidence=None,
                                        prior_shape=1.0, prior_rate=1 / _prior_mean(X, size, 3),
                                        n_warmup=200, n_draws=200, random_state=0).fit(X, mask=train)
                    elif kind == "rescal-gibbs":
                        est = _binary_family("rescal", likelihood, BINARY_SAMPLER_SIZES[name][kind],
                                             1.0, X, method="gibbs")
                        est.set_params(evidence=None, n_warmup=200, n_draws=200)
                        est.fit(X, mask=train)
                    elif kind.startswith("bam"):
                        est = _bam_chosen_by_evidence(kind, X, train)
                        chosen.append((est.n_components, est.concentration))
                    elif kind == "rescal-em":
                        est = _binary_family("rescal", likelihood, BINARY_RESCAL_EM_SIZES[name], 1.0,
                                             X, method="em").fit(X, mask=train)
                    else:
                        n_init = BINARY_RESCAL_N_INIT[name] if kind == "rescal" else 1
                        est = _chosen_by_evidence(kind, likelihood, BINARY_GRIDS[name][kind], X,
                                                  train, n_init=n_init)
                        chosen.append((est.n_components, est.prior_shape))
                    scores.append(link_prediction_auc(est, X, test))
            roc, pr = np.array(scores).T
            label = f"{name} {kind} {likelihood or ''}".strip() + (" (all entries)" if with_diagonal else "")
            _line(workload="binary-links", model=label, roc_auc=roc.mean(), roc_auc_sd=roc.std(ddof=1),
                  pr_auc=pr.mean(), pr_auc_sd=pr.std(ddof=1), chosen=chosen,
                  seconds=time.perf_counter() - start)
            summary[f"binary links {label}: AUC-PR"] = float(pr.mean())
            summary[f"binary links {label}: AUC-ROC"] = float(roc.mean())
    return summary

