"""
The Bayesian Allocation Model: exact, SMC and VB evidence
=========================================================

``AllocationSMC`` integrates the parameters of a Poisson CP model out into a
Pólya urn over the tokens (the counts) and estimates the evidence by
sequential Monte Carlo over them: unbiased, at a cost that follows the total
count, not the size of the tensor. On a count matrix small enough to sum over
every allocation of its tokens, the SMC estimate meets the exact evidence,
while the variational bound of the same model stays below it, by more as the
rank grows. Then, on a sparse 20 x 25 x 30 tensor of 1000 tokens drawn at
rank 5, the SMC evidence chooses the rank.
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_pltf import AllocationSMC
from sklearn_pltf.evidence import bam_exact_log_evidence
from sklearn_pltf.datasets import make_bam

X = np.array([[3, 0, 1], [0, 2, 0], [1, 0, 1], [0, 1, 0]])  # 4 x 3, 9 tokens

ranks, n_particles = [1, 2, 3, 4], 100_000  # exact against SMC and VB
grid, n_grid_particles = list(range(2, 9)), 1000  # rank selection
# sphinx_gallery_start_ignore
# The test suite sets SKLEARN_PLTF_QUICK_EXAMPLES to run each example at small settings.
import os  # noqa: E402

if os.environ.get("SKLEARN_PLTF_QUICK_EXAMPLES"):
    ranks, n_particles = [1, 2], 2000
    grid, n_grid_particles = [4, 5], 200
# sphinx_gallery_end_ignore
exact, smc, smc_error, vb = [], [], [], []
for rank in ranks:
    exact.append(bam_exact_log_evidence(X, rank))
    est = AllocationSMC(rank, n_particles=n_particles, random_state=0).fit(X)
    smc.append(est.log_evidence_)
    smc_error.append(est.log_evidence_error_)
    vb.append(AllocationSMC(rank, method="vb", random_state=0).fit(X).log_evidence_)
for row in zip(ranks, exact, smc, smc_error, vb):
    print("rank {}: exact {:.3f}  SMC {:.3f} ± {:.3f}  VB bound {:.3f}".format(*row))

# %%
# SMC sits on the exact values; the bound falls below them.
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(ranks, exact, "o-", label="exact (enumeration)")
ax.errorbar(ranks, smc, yerr=2 * np.array(smc_error), fmt="x", capsize=3, label="SMC ± 2 se")
ax.plot(ranks, vb, "s--", label="VB bound")
ax.set_xlabel("rank")
ax.set_ylabel("log evidence")
ax.legend()
fig.tight_layout()

# %%
# Rank selection on sparse counts: 1000 tokens in a 20 x 25 x 30 tensor (2%
# of its cells hold a count), drawn from the model at rank 5 with
# concentration 10.
Y, _ = make_bam((20, 25, 30), 5, concentration=10.0, n_tokens=1000, random_state=1000)
curve = [AllocationSMC(rank, concentration=10.0, n_particles=n_grid_particles,
                       random_state=0).fit(Y).log_evidence_ for rank in grid]
print("non-zero cells:", np.count_nonzero(Y), "of", Y.size)
print("rank chosen by the SMC evidence:", grid[int(np.argmax(curve))])

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(grid, curve, "o-")
ax.axvline(5, color="grey", linestyle="--", label="true rank")
ax.set_xlabel("rank")
ax.set_ylabel("log evidence (SMC)")
ax.legend()
fig.tight_layout()
plt.show()
