"""The VB bound as an evidence estimate: below the exact evidence, and it picks the rank."""

import warnings

import numpy as np
import pytest

from sklearn_pltf import PLTF
from sklearn_pltf.evidence import exact_log_evidence

TINY_MATRICES = [
    np.array([[2, 0, 1], [0, 3, 1]]),
    np.array([[1, 1], [0, 2], [3, 0]]),
    np.array([[0, 4], [1, 0]]),
]


@pytest.mark.parametrize("n_components", [1, 2, 3])
@pytest.mark.parametrize("index", range(len(TINY_MATRICES)))
@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.2)], ids=["a1b1", "a.5b.2"])
def test_vb_bound_is_below_the_exact_evidence(index, n_components, prior):
    X = TINY_MATRICES[index].astype(float)
    shape, rate = prior
    exact = exact_log_evidence(X, n_components, prior_shape=shape, prior_rate=rate)
    est = PLTF("ik,kj->ij", n_components, prior_shape=shape, prior_rate=rate,
               n_init=5, tol=1e-12, max_iter=5000, random_state=0).fit(X)
    # Jensen: log p(X) - B = KL(q || p(.|X)) >= 0 for every q. (The gap is not
    # small in general: mean-field q sits in one of the K! label-permuted modes
    # and ignores posterior correlations; here it reaches ~5 nats at K=3.)
    assert est.log_evidence_ <= exact + 1e-9


def cp_rank_sweep(X, ranks, prior_shape, prior_mean, n_init):
    bounds = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in ranks:
            est = PLTF("ir,jr,kr->ijk", k, prior_shape=prior_shape,
                       prior_rate=prior_shape / prior_mean, n_init=n_init,
                       max_iter=1000, random_state=0)
            bounds[k] = est.fit(X).log_evidence_
    return bounds


def draw_cp(shape, rank, prior_shape, prior_mean, seed):
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(prior_shape, prior_mean / prior_shape, size=(n, rank)) for n in shape]
    X = rng.poisson(np.einsum("ir,jr,kr->ijk", *factors)).astype(float)
    return X, rng


# The quick tier fits with missing entries; the fully observed and the
# mostly missing draws run in the slow tier.
@pytest.mark.parametrize("missing", [
    pytest.param(0.0, marks=pytest.mark.slow(minutes=0.05)),
    0.4,
    pytest.param(0.8, marks=pytest.mark.slow(minutes=0.05)),
])
def test_bound_picks_the_rank_small(missing):
    """Default tier: 20x20x20 of true rank 3, ranks 1..5."""
    X, rng = draw_cp((20, 20, 20), 3, 1.0, 1.0, seed=1)
    X[rng.random(X.shape) < missing] = np.nan
    bounds = cp_rank_sweep(X, range(1, 6), 1.0, 1.0, n_init=3)
    assert max(bounds, key=bounds.get) == 3, bounds


@pytest.mark.slow(minutes=1.5)
@pytest.mark.parametrize("missing", [0.0, 0.4, 0.8])
def test_bound_picks_the_rank_pltf_vb_setting(missing):
    """The PLTF-VB paper's setting: 50x50x50 CP of true rank 7, gamma priors of
    shape 0.5 and mean 10, ranks 2..10 with restarts."""
    X, rng = draw_cp((50, 50, 50), 7, 0.5, 10.0, seed=0)
    X[rng.random(X.shape) < missing] = np.nan
    bounds = cp_rank_sweep(X, range(2, 11), 0.5, 10.0, n_init=3)
    assert max(bounds, key=bounds.get) == 7, bounds
