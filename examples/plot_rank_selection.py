"""
Choosing the rank with GridSearchCV
===================================

Every estimator's ``score`` on its training data is the log evidence
``log_evidence_`` (here the variational bound), so scikit-learn's
``GridSearchCV`` chooses the rank by the evidence when each candidate is
fitted and scored on all the data: :class:`~sklearn_pltf.model_selection.FullDataSplit`.
The bound rises while more components explain the data better and falls
once they only add parameters. Here a 30 x 25 x 20 count tensor is drawn
from a rank-4 Poisson CP model with 30% of its entries missing, and
:class:`~sklearn_pltf.PoissonCP` is searched over ranks 1 to 7.

With ``cv=5`` instead, the search would choose by the predictive evidence of
held-out samples (slices along axis 0), scored by folding each one in.

The last section does the same in one fit: automatic relevance determination
(``ard=True``) learns a relevance per component by the evidence and switches
off the components the data do not need.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV

from sklearn_pltf import PoissonCP
from sklearn_pltf.datasets import make_poisson_cp
from sklearn_pltf.model_selection import FullDataSplit
from sklearn_pltf.plotting import plot_evidence

true_rank = 4
X, _ = make_poisson_cp((30, 25, 20), true_rank, missing_fraction=0.3, random_state=0)

# %%
# The search: one fit per rank (two restarts each), scored by its evidence;
# ``n_jobs=2`` fits two ranks at a time.
ranks, n_init = list(range(1, 8)), 2
# sphinx_gallery_start_ignore
# The test suite sets SKLEARN_PLTF_QUICK_EXAMPLES to run each example at small settings.
import os  # noqa: E402

if os.environ.get("SKLEARN_PLTF_QUICK_EXAMPLES"):
    ranks, n_init = [3, 4, 5], 1
# sphinx_gallery_end_ignore
search = GridSearchCV(PoissonCP(n_init=n_init, random_state=0), {"n_components": ranks},
                      cv=FullDataSplit(), n_jobs=2).fit(X)
evidence = search.cv_results_["mean_test_score"]
for rank, value in zip(ranks, evidence):
    print(f"rank {rank}: log evidence {value:.1f}")
print("rank chosen by the evidence:", search.best_params_["n_components"])

# %%
# The bound peaks at the true rank.
ax = plot_evidence(ranks, evidence, label="VB bound")
ax.axvline(true_rank, color="grey", linestyle="--")
ax.set_title("GridSearchCV over the CP rank")
plt.show()

# %%
# One fit instead of the grid: ``ard=True`` at twice the rank. Each
# component's relevance is the prior mean of its elements, learned by the
# evidence; the unneeded components' relevances collapse towards zero.
ard = PoissonCP(2 * true_rank, ard=True, random_state=0).fit(X)
print("ARD keeps", ard.effective_rank_, "components; relevances:",
      np.round(np.sort(ard.relevance_)[::-1], 3))
fig, ax = plt.subplots()
ax.bar(np.arange(ard.relevance_.size), np.sort(ard.relevance_)[::-1])
ax.set_xlabel("component (sorted)")
ax.set_ylabel("relevance")
ax.set_title(f"ARD from {2 * true_rank} components: {ard.effective_rank_} kept")
plt.show()
