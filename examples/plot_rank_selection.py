"""
Choosing the rank of a CP tensor by the evidence
================================================

The variational bound on the log evidence, ``log_evidence_``, rises while more
components explain the data better and falls once they only add parameters.
Here a 30 x 25 x 20 count tensor is drawn from a rank-4 Poisson CP model, 30%
of its entries are hidden, and ``PLTF`` is fitted for ranks 1 to 7.
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_pltf import PLTF

rng = np.random.default_rng(0)
true_rank = 4
factors = [rng.gamma(1.0, 1.0, size=(n, true_rank)) for n in (30, 25, 20)]
X = rng.poisson(np.einsum("ir,jr,kr->ijk", *factors)).astype(float)
X[rng.random(X.shape) < 0.3] = np.nan

# %%
# Fit each rank with a few restarts and keep its bound.
ranks = list(range(1, 8))
evidence = [
    PLTF("ir,jr,kr->ijk", rank, n_init=2, random_state=0).fit(X).log_evidence_
    for rank in ranks
]
print("rank chosen by the evidence:", ranks[int(np.argmax(evidence))])

# %%
# The bound peaks at the true rank.
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(ranks, evidence, "o-")
ax.axvline(true_rank, color="grey", linestyle="--", label="true rank")
ax.set_xlabel("rank")
ax.set_ylabel("log evidence (VB bound)")
ax.legend()
fig.tight_layout()
plt.show()
