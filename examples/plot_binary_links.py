"""
Binary relations: the Bernoulli–Poisson likelihood, RESCAL and calibrated links
===============================================================================

A relational tensor holds 1 where a relation holds and 0 where it does not.
A Poisson model treats those values as counts; the Bernoulli–Poisson
likelihood (``likelihood="bernoulli"``) says instead that a link is seen
where a latent Poisson count with mean X̂ is positive, so

.. math:: P(x = 1) = 1 - e^{-\\hat X}.

The factors, priors and algorithms are those of the count model, and the
cost still follows the ones. Here, on the shipped Nations tensor (14 x 14
countries x 55 relations), a tenth of the entries is hidden; for each
likelihood the evidence (the VB bound) of the training entries chooses the
CP rank, and the hidden entries are ranked by the prediction:
the posterior mean of X̂ for the Poisson model, the posterior probability
of a link for the Bernoulli–Poisson one. Then the structure changes: RESCAL
(:class:`~sklearn_pltf.BayesianRESCAL`) gives each country one factor row on
both country axes and lets a core say how clusters of countries relate under
each relation, and the evidence compares it with CP. The link probabilities
can also be checked for calibration: of the hidden entries given
probability about p, about a fraction p should be links.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from sklearn_pltf import BayesianRESCAL, PoissonCP
from sklearn_pltf.datasets import load_nations, off_diagonal_mask
from sklearn_pltf.metrics import link_prediction_auc

ranks = range(2, 11, 2)
rescal_ranks = range(2, 7)
n_init = 2  # restarts per fit; the best bound is kept
# sphinx_gallery_start_ignore
# The test suite sets SKLEARN_PLTF_QUICK_EXAMPLES to run each example at small settings.
import os  # noqa: E402

if os.environ.get("SKLEARN_PLTF_QUICK_EXAMPLES"):
    ranks, rescal_ranks, n_init = (2, 4), (2, 3), 1
# sphinx_gallery_end_ignore

# %%
# A country has no relation to itself (the diagonal x(i, i, k) is empty), and
# RESCAL does not model it, so it is left out of every fit and of the hidden
# entries: all evidences below are of the same entries.
X = load_nations().data.astype(float)
off_diagonal = off_diagonal_mask(X.shape)
held_out = (np.random.default_rng(0).random(X.shape) < 0.1) & off_diagonal
train = off_diagonal & ~held_out
entries = np.argwhere(held_out)


def model(likelihood, rank):
    """CP with a sparse Gamma(0.3) prior whose mean makes the prior mean of
    every X̂ entry the data's mean."""
    mean = (X.mean() / rank) ** (1 / 3)
    return PoissonCP(rank, likelihood=likelihood, prior_shape=0.3, prior_rate=0.3 / mean,
                     n_init=n_init, random_state=0)


# %%
# The rank by the evidence of the training entries, for each likelihood.
fitted = {}
for likelihood in ("poisson", "bernoulli"):
    evidence = {}
    for rank in ranks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = model(likelihood, rank).fit(X, mask=train)
        evidence[rank] = est.log_evidence_
        fitted[likelihood, rank] = est
    best = max(evidence, key=evidence.get)
    fitted[likelihood] = fitted[likelihood, best]
    print(f"{likelihood:>9}: log evidence by rank "
          + ", ".join(f"{r}: {v:.0f}" for r, v in evidence.items()) + f"; chosen rank {best}")

# %%
# Both models give a probability to the same 0/1 values (a Poisson model to
# every count, 0 and 1 among them), so their evidences compare directly, as
# a Bayes factor: the data favour the Bernoulli–Poisson likelihood by this
# many nats.
gap = fitted["bernoulli"].log_evidence_ - fitted["poisson"].log_evidence_
print(f"log evidence, Bernoulli–Poisson minus Poisson (chosen ranks): {gap:.0f}")

# %%
# Held-out ranking. Both likelihoods see the same 0/1 data; only the
# Bernoulli–Poisson model knows that a value above 1 cannot occur.
for likelihood in ("poisson", "bernoulli"):
    auc = link_prediction_auc(fitted[likelihood], X, entries)
    print(f"{likelihood:>9}: AUC-ROC {auc.roc_auc:.3f}, AUC-PR {auc.pr_auc:.3f}")

# %%
# RESCAL: X̂(i, j, k) = Σ_ab A(i, a) A(j, b) G(a, b, k), one factor A for the
# countries on both axes. Its evidence is of the same training entries, so it
# compares directly with CP's: a difference of many nats is decisive.
rescal_evidence = {}
for rank in rescal_ranks:
    mean = (X[train].mean() / rank**2) ** (1 / 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BayesianRESCAL(rank, likelihood="bernoulli", prior_shape=0.3, prior_rate=0.3 / mean,
                             n_init=n_init, random_state=0).fit(X, mask=train)
    rescal_evidence[rank] = est.log_evidence_
    fitted["rescal", rank] = est
best = max(rescal_evidence, key=rescal_evidence.get)
fitted["rescal"] = fitted["rescal", best]
print("   RESCAL: log evidence by rank "
      + ", ".join(f"{r}: {v:.0f}" for r, v in rescal_evidence.items()) + f"; chosen rank {best}")
gap = fitted["rescal"].log_evidence_ - fitted["bernoulli"].log_evidence_
print(f"log evidence, RESCAL minus CP (both Bernoulli–Poisson, chosen ranks): {gap:.0f}")
auc = link_prediction_auc(fitted["rescal"], X, entries)
print(f"   RESCAL: AUC-ROC {auc.roc_auc:.3f}, AUC-PR {auc.pr_auc:.3f}")

# %%
# Calibration of the link probabilities: the hidden entries binned by their
# predicted probability, against the share of links in each bin.
links = X[tuple(entries.T)]
edges = np.linspace(0, 1, 11)
fig, ax = plt.subplots(figsize=(4.5, 4))
ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="calibrated")
for key, label in (("bernoulli", "Bernoulli–Poisson CP"), ("rescal", "Bernoulli–Poisson RESCAL")):
    probability = fitted[key].predict_entries(entries)
    bins = np.clip(np.digitize(probability, edges) - 1, 0, 9)
    filled = [b for b in range(10) if np.any(bins == b)]
    ax.plot([probability[bins == b].mean() for b in filled],
            [links[bins == b].mean() for b in filled], marker="o", label=label)
ax.set_xlabel("predicted P(link)")
ax.set_ylabel("share of hidden entries that are links")
ax.set_title("Nations, 10% of the entries hidden")
ax.legend()
fig.tight_layout()
plt.show()
