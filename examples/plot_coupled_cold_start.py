"""
Coupled factorization: links with attributes, and cold start
============================================================

Users click items (a binary user x item matrix) and every user also fills in
a profile (counts over profile features). The two matrices share the users:
``CoupledPLTF`` fits them as one model, the user factor ``"ur"`` shared by
``"ur,ir->ui"`` and ``"ur,rf->uf"``, with one evidence for both.

First the evidence decides whether the profile says anything about the
clicks: a grid over the rank and over coupled against independent model
strings (``FullDataSplit``: fit and score on all the data). Then cold start:
new users with a profile and no clicks at all. Their clicks are predicted
from the profile alone by the coupled model, and from the items' popularity
alone by the clicks-only model.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import average_precision_score
from sklearn.model_selection import GridSearchCV

from sklearn_pltf import CoupledPLTF
from sklearn_pltf.model_selection import FullDataSplit

n_users, n_items, n_features, rank = 200, 120, 40, 4
ranks, n_new = [1, 2, 3, 4, 5, 6], 40
# sphinx_gallery_start_ignore
# The test suite sets SKLEARN_PLTF_QUICK_EXAMPLES to run each example at small settings.
import os  # noqa: E402

if os.environ.get("SKLEARN_PLTF_QUICK_EXAMPLES"):
    n_users, n_items, n_features, ranks, n_new = 60, 40, 15, [2, 4], 10
# sphinx_gallery_end_ignore
rng = np.random.default_rng(0)
users = rng.gamma(0.5, 1.0, (n_users, rank))
items = rng.gamma(0.5, 1.0, (n_items, rank))
profile_features = rng.gamma(0.5, 2.0, (rank, n_features))
clicks = (rng.poisson(users @ items.T) > 0).astype(float)
profiles = rng.poisson(users @ profile_features).astype(float)

coupled = ("ur,ir->ui", "ur,rf->uf")
independent = ("ur,ir->ui", "vs,sf->vf")  # the profiles with users of their own
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    search = GridSearchCV(
        CoupledPLTF(coupled, likelihood=("bernoulli", "poisson"), n_init=2, random_state=0),
        {"n_components": ranks, "models": [coupled, independent]},
        cv=FullDataSplit(),
    ).fit([clicks, profiles])
print("chosen by the evidence:", search.best_params_)

# %%
# The evidence of each candidate: coupling wins at every rank.
results = search.cv_results_
fig, ax = plt.subplots(figsize=(5, 3.5))
for models, label in ((coupled, "coupled"), (independent, "independent")):
    rows = [i for i, m in enumerate(results["param_models"]) if m == models]
    ax.plot([results["param_n_components"][i] for i in rows],
            [results["mean_test_score"][i] for i in rows], "o-", label=label)
ax.set_xlabel("rank")
ax.set_ylabel("log evidence (VB bound)")
ax.legend()
fig.tight_layout()

# %%
# Cold start: the last ``n_new`` users have no observed click. Their clicks
# are predicted from their profiles by the coupled model; the clicks-only
# model can only rank the items by popularity.
observed = np.ones(clicks.shape, dtype=bool)
observed[-n_new:] = False
new = np.argwhere(~observed)
chosen_rank = search.best_params_["n_components"]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    both = CoupledPLTF(coupled, chosen_rank, likelihood=("bernoulli", "poisson"), n_init=2,
                       random_state=0).fit([clicks, profiles], mask=[observed, None])
    alone = CoupledPLTF(coupled[:1], chosen_rank, likelihood="bernoulli", n_init=2,
                        random_state=0).fit([clicks], mask=[observed])
truth = clicks[tuple(new.T)]
for name, est in (("clicks and profiles", both), ("clicks alone", alone)):
    print(f"new users, AUC-PR from {name}: "
          f"{average_precision_score(truth, est.predict_entries(new)):.3f}")
print(f"(a random ranking: {truth.mean():.3f})")
