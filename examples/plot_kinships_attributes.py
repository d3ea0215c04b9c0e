"""
Kinships with attributes: relations of people nobody has seen relate
=====================================================================

Kinships holds 26 kin terms among 104 people of the Alyawarra (a 104 x 104
x 26 binary tensor) and, for each person, their section, clan and other
codes (64 one-hot attribute values). The RESCAL structure fits the
relations well: one factor row per person, on both person axes, and a core
saying how clusters relate under each kin term. A person none of whose
relations has been recorded is another matter: RESCAL alone has only the
prior for their row.

``CoupledPLTF`` with ``tied_factors={1: 0}`` shares that one person factor
between the relations (``"ia,jb,abk->ijk"``) and the attributes
(``"ia,af->if"``): each person's row is fitted from their relations and
their attributes together, so a person with attributes and no relations
still gets a place among the clusters. Below, every relation to and from a
few people is held out, and their links are ranked by both models.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import average_precision_score

from sklearn_pltf import BayesianRESCAL, CoupledPLTF
from sklearn_pltf.datasets import load_kinships_attributes, off_diagonal_mask

rank, n_people = 20, 3
# sphinx_gallery_start_ignore
# The test suite sets SKLEARN_PLTF_QUICK_EXAMPLES to run each example at small settings.
import os  # noqa: E402

if os.environ.get("SKLEARN_PLTF_QUICK_EXAMPLES"):
    rank, n_people = 4, 1
# sphinx_gallery_end_ignore
kinships = load_kinships_attributes()
X, Y = kinships.data.astype(float), kinships.attributes.astype(float)
observed = off_diagonal_mask(X.shape)  # nobody is their own kin: the diagonal is not modelled
mean = X[observed].mean()
shape = 0.1
rate = shape / (mean / rank**2) ** (1 / 3)  # the prior mean of X-hat at the data's mean

people = np.random.default_rng(0).choice(X.shape[0], n_people, replace=False)
scores = {"RESCAL alone": [], "RESCAL with attributes": []}
for person in people:
    held = observed & ((np.arange(104) == person)[:, None, None]
                       | (np.arange(104) == person)[None, :, None])
    train = np.where(held, np.nan, X)
    test, truth = np.argwhere(held), X[held]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short fits in the quick run
        alone = BayesianRESCAL(rank, likelihood="bernoulli", prior_shape=shape,
                               prior_rate=rate, random_state=0).fit(train)
        coupled = CoupledPLTF(("ia,jb,abk->ijk", "ia,af->if"), rank, tied_factors={1: 0},
                              likelihood="bernoulli", prior_shape=shape, prior_rate=rate,
                              random_state=0).fit([train, Y])
    scores["RESCAL alone"].append(average_precision_score(truth, alone.predict_entries(test)))
    scores["RESCAL with attributes"].append(
        average_precision_score(truth, coupled.predict_entries(test)))
    print(f"person {person}: AUC-PR alone {scores['RESCAL alone'][-1]:.3f}, "
          f"with attributes {scores['RESCAL with attributes'][-1]:.3f}")

# %%
# Each held-out person's links, ranked: the attributes place a person with
# no recorded relation, where the relations alone cannot.
fig, ax = plt.subplots(figsize=(5, 3.5))
positions = np.arange(n_people)
for offset, (label, values) in zip((-0.2, 0.2), scores.items()):
    ax.bar(positions + offset, values, width=0.4, label=label)
ax.set_xticks(positions, [f"person {p}" for p in people])
ax.set_ylabel("AUC-PR of the held-out person's links")
ax.set_ylim(0, 1)
ax.legend()
fig.tight_layout()
plt.show()
