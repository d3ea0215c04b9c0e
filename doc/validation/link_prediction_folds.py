"""Link prediction on Nations, Kinships and UMLS in 10 folds, for many models
and two peers.

Run from the repository's root (with TensorLy and pyttb, the ``bench``
extra; hours)::

    python doc/validation/link_prediction_folds.py                  # both parts
    python doc/validation/link_prediction_folds.py binary-links     # or one
    python doc/validation/link_prediction_folds.py binary-links --families rescal:bernoulli
    python doc/validation/link_prediction_folds.py binary-links --families gibbs-ntf-probit \
        --datasets nations kinships umls
    python doc/validation/link_prediction_folds.py binary-links --families gibbs-rescal-probit \
        --datasets nations kinships umls
    python doc/validation/link_prediction_folds.py binary-links --families vb-rescal-probit \
        --datasets nations kinships umls

- 10-fold cross-validation over all entries (``link-prediction``;
  zeros included, random folds, seed 0) of Nations and Kinships; mean and SD
  over the folds of AUC-ROC and AUC-PR for PoissonCP and TuckerVB (VB and
  EM) at several sizes, for GibbsNTF (Gaussian noise, non-negative factors;
  posterior mean over 200 draws after 200 warm-up sweeps), and for
  TensorLy's masked least-squares CP (``parafac`` with a mask), a
  Gaussian-loss peer on the same folds.
- binary relations (``binary-links``): Poisson and
  Bernoulli–Poisson CP, and Bernoulli–Poisson Tucker and RESCAL, with rank
  and prior shape chosen by the evidence on each training fold, RESCAL by EM
  at one size, Bernoulli–Poisson CP by Gibbs and Gaussian CP (GibbsNTF,
  non-negative and signed) at one size, against TensorLy's masked CP and
  pyttb's Bernoulli GCP on the same folds; and probit CP (``gibbs-ntf-probit``:
  ``GibbsNTF(n, likelihood="probit", nonnegative=False, ard=True)``, its
  chains' lengths at the defaults, no evidence) at the issue's generous
  size that ARD prunes: 20 on Nations, 40 on Kinships and UMLS; and probit
  RESCAL (``gibbs-rescal-probit``: ``ProbitRESCAL(n, random_state=0)`` at
  its defaults, 1000 warm-up sweeps and the mean of Φ(x̂) over 1000 draws,
  no evidence) at the same sizes; and its mean-field VB
  (``vb-rescal-probit``: ``ProbitRESCAL(n, method="vb", random_state=0)``)
  at the modest size its step affords (``VB_PROBIT_SIZE``).

Our priors are Exponential with the scale that makes the prior mean of every
X̂ entry the data's mean (as in ``python -m sklearn_pltf``). VB against EM
when most entries are missing is ``vb_em_missing.py``'s, and 5 folds of
Nations off the diagonal ``link_prediction.py``'s.

Writes ``doc/_static/validation/link_prediction_folds.json`` (with
``--families``, ``link_prediction_folds_<families>_<datasets>.json``); the
Validation page's :ref:`validation-recorded-links` records its numbers.
"""

from _setup import chosen_parts, line, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from sklearn_pltf import (  # noqa: E402
    AllocationSMC,
    BayesianRESCAL,
    GibbsNTF,
    PoissonCP,
    ProbitRESCAL,
    TuckerVB,
)
from sklearn_pltf.datasets import (  # noqa: E402
    load_kinships, load_nations, load_umls, off_diagonal_mask)
from sklearn_pltf.model_selection import EntryKFold, cross_validate_entries  # noqa: E402

CONFIGS = {
    "nations": [("cp", "vb", 3), ("cp", "vb", 10), ("cp", "em", 20), ("cp", "em", 30),
                ("tucker", "vb", (5, 5, 5)), ("tucker", "em", (10, 10, 10)),
                ("gibbs-ntf", "gibbs", 20), ("tensorly-cp", "als", 20)],
    "kinships": [("cp", "vb", 25), ("cp", "em", 25), ("cp", "em", 50),
                 ("tucker", "vb", (10, 10, 5)), ("tucker", "em", (10, 10, 5)),
                 ("tucker", "em", (20, 20, 10)), ("gibbs-ntf", "gibbs", 50),
                 ("tensorly-cp", "als", 100)],
}


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


def link_prediction(datasets=("nations", "kinships"), n_splits=10, kinds=None):
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
            line(workload="link-prediction", model=label, roc_auc=roc.mean(),
                 roc_auc_sd=roc.std(ddof=1), pr_auc=pr.mean(), pr_auc_sd=pr.std(ddof=1),
                 seconds=time.perf_counter() - start)
            summary[f"link prediction {label}: AUC-ROC"] = float(roc.mean())
            summary[f"link prediction {label}: AUC-PR"] = float(pr.mean())
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
# GCP's rank; TensorLy's is the one of its best AUC in ``link-prediction``:
# 20 and 100.
BINARY_PEER_RANKS = {"nations": 20, "kinships": 50}
# Probit CP: one generous size per data set, ARD prunes.
PROBIT_SIZES = {"nations": 20, "kinships": 40, "umls": 40}
# Probit RESCAL by VB: its step costs O(r⁶) for the cores' shared covariance
# (2 s on Kinships at 40 columns), so one modest size everywhere.
VB_PROBIT_SIZE = 6
LOADERS = {"nations": load_nations, "kinships": load_kinships, "umls": load_umls}


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


def binary_links(datasets=("nations", "kinships"), n_splits=10, families=None,
                       with_diagonal=False, max_folds=None):
    """10-fold AUC-PR / AUC-ROC of the evidence-chosen Poisson and
    Bernoulli–Poisson CP, Tucker and RESCAL fits, of the Bayesian Allocation
    Model (Nations), and of the two peers.

    The diagonal x(i, i, k) (empty in both data sets) is missing in every fit
    and in no fold, so every model's evidence is of the same entries;
    ``with_diagonal=True`` folds every entry, as :func:`link_prediction` does;
    ``max_folds`` scores the first that many of the ``n_splits`` folds only."""
    from sklearn_pltf.metrics import link_prediction_auc

    families = families or [("cp", "poisson"), ("cp", "bernoulli"), ("tucker", "bernoulli"),
                             ("rescal", "bernoulli"), ("rescal-em", "bernoulli"),
                             ("bam-vb", None), ("bam-smc", None),
                             ("tensorly-cp", None), ("gcp-bernoulli", None)]
    summary = {}
    for name in datasets:
        X = LOADERS[name]().data.astype(float)
        observed = None if with_diagonal else off_diagonal_mask(X.shape)
        folds = list(EntryKFold(n_splits, random_state=0).split(X, mask=observed))[:max_folds]
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
                    elif kind == "gibbs-ntf-probit":
                        est = GibbsNTF(PROBIT_SIZES[name], likelihood="probit", nonnegative=False,
                                       ard=True, evidence=None, random_state=0)
                        fold_start = time.perf_counter()
                        est.fit(X, mask=train)
                        chosen.append({"seconds": time.perf_counter() - fold_start,
                                       "effective_rank": est.effective_rank_,
                                       "n_warmup": est.n_warmup_})
                    elif kind == "gibbs-rescal-probit":
                        fold_start = time.perf_counter()
                        est = ProbitRESCAL(PROBIT_SIZES[name], random_state=0).fit(X, mask=train)
                        chosen.append({"seconds": time.perf_counter() - fold_start,
                                       "effective_rank": est.effective_rank_,
                                       "rhat": float(est.rhat_)})
                    elif kind == "vb-rescal-probit":
                        fold_start = time.perf_counter()
                        est = ProbitRESCAL(VB_PROBIT_SIZE, method="vb",
                                           random_state=0).fit(X, mask=train)
                        chosen.append({"seconds": time.perf_counter() - fold_start,
                                       "n_iter": est.n_iter_, "converged": est.converged_,
                                       "bound": est.lower_bound_})
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
            line(workload="binary-links", model=label, roc_auc=roc.mean(), roc_auc_sd=roc.std(ddof=1),
                 pr_auc=pr.mean(), pr_auc_sd=pr.std(ddof=1), chosen=chosen,
                 seconds=time.perf_counter() - start)
            summary[f"binary links {label}: AUC-PR"] = float(pr.mean())
            summary[f"binary links {label}: AUC-ROC"] = float(roc.mean())
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="part",
                        help="link-prediction, binary-links (default: both)")
    parser.add_argument("--families", nargs="+", default=None,
                        help="binary-links: the families as kind:likelihood, e.g. "
                             "rescal:bernoulli (default: every family)")
    parser.add_argument("--datasets", nargs="+", default=["nations", "kinships"],
                        choices=sorted(LOADERS), help="binary-links: the data sets")
    parser.add_argument("--max-folds", type=int, default=None,
                        help="binary-links: score the first this many of the 10 folds only")
    parser.add_argument("--with-diagonal", action="store_true",
                        help="binary-links: fold every entry, the diagonal x(i, i, k) included")
    args = parser.parse_args()
    known = ("link-prediction", "binary-links")
    parts = chosen_parts(parser, args.parts, known)
    start = time.perf_counter()
    summary = {}
    if "link-prediction" in parts:
        summary.update(link_prediction())
    if "binary-links" in parts:
        families = (None if args.families is None
                    else [tuple(f.split(":")) if ":" in f else (f, None) for f in args.families])
        summary.update(binary_links(datasets=args.datasets, families=families,
                                    with_diagonal=args.with_diagonal, max_folds=args.max_folds))
    # A run of some families writes its own file, beside the whole study's.
    suffix = "" if args.families is None else "_" + "_".join(
        [f.replace(":", "-") for f in args.families] + args.datasets)
    write_json("link_prediction_folds" + suffix, parts=parts, datasets=args.datasets,
               max_folds=args.max_folds, summary=summary, start=start)


if __name__ == "__main__":
    main()
