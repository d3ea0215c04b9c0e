"""Non-negative reals: BayesianNMF's compound Poisson likelihood against
scikit-learn's KL NMF, the non-Bayesian model a user of such data runs."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._contenders import ours_whole_fit, sklearn_kl_nmf
from ._protocol import Case
from ._quality import nmf_quality

TITLE = "Compound Poisson (non-negative reals) against scikit-learn"
ABOUT = ("Values that are sums of a Poisson(W H) number of exponential jumps of mean 1 "
         "(exact zeros where no jump): `BayesianNMF(likelihood='compound_poisson')` at its "
         "defaults against scikit-learn's KL NMF at its defaults; quality: the generalised "
         "KL divergence Σ x log(x / x̂) − x + x̂ of each fit's mean (lower is better).")

_QUALITY = nmf_quality("generalised_kl")


def _values(shape, rank, density, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.gamma(1.0, 1.0, (shape[0], rank))
    H = rng.gamma(1.0, 1.0, (rank, shape[1]))
    jumps = rng.poisson(density * (W @ H) / rank)
    return np.where(jumps > 0, rng.gamma(np.maximum(jumps, 1), 1.0), 0.0)



def cases(quick):
    from sklearn_pltf import BayesianNMF

    rank = 5 if quick else 20
    dense = (300, 200) if quick else (2000, 1000)
    sparse = (2000, 500) if quick else (20000, 5000)
    return [
        Case(f"dense {dense[0]} x {dense[1]}, rank {rank}", lambda: _values(dense, rank, 1.0),
             [ours_whole_fit(BayesianNMF, rank, likelihood="compound_poisson"),
              sklearn_kl_nmf(rank)], quality=_QUALITY, repeats=1 if quick else 3),
        Case(f"sparse {sparse[0]} x {sparse[1]} (0.5% non-zero), rank {rank}",
             lambda: sp.csr_matrix(_values(sparse, rank, 0.005)),
             [ours_whole_fit(BayesianNMF, rank, likelihood="compound_poisson"),
              sklearn_kl_nmf(rank)], quality=_QUALITY, repeats=1 if quick else 2),
    ]
