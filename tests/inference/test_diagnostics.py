"""Sampler fits say when their chains have not mixed."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_pltf import BayesianNMF, GibbsNTF
from sklearn_pltf.inference._diagnostics import RHAT_LIMIT, split_rhat


def test_split_rhat_of_agreeing_and_disagreeing_chains(rng):
    agreeing = rng.normal(size=(4, 1000))
    assert abs(split_rhat(agreeing) - 1.0) < 0.01
    shifted = agreeing + np.array([[0.0], [0.0], [0.0], [2.0]])
    assert split_rhat(shifted) > 1.2
    trending = np.linspace(0.0, 3.0, 1000)[None] + rng.normal(size=(1, 1000))
    assert split_rhat(trending) > 1.2  # one chain: its halves disagree
    assert np.isnan(split_rhat(agreeing[:, :3]))


def _counts(seed=0):
    rng = np.random.default_rng(seed)
    return rng.poisson(rng.gamma(1.0, 3.0, (30, 3)) @ rng.gamma(1.0, 1.0, (3, 20))).astype(float)


def test_unmixed_gibbs_chains_warn_and_mixed_ones_do_not():
    X = _counts()
    with pytest.warns(ConvergenceWarning, match="R-hat.*n_warmup"):
        est = BayesianNMF(3, method="gibbs", evidence=None, n_init=2, n_warmup=0, n_draws=6,
                          random_state=0).fit(X)
    assert est.rhat_ > RHAT_LIMIT
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = BayesianNMF(1, method="gibbs", evidence=None, n_init=2, n_warmup=100,
                          n_draws=400, random_state=0).fit(X)
    assert est.rhat_ < RHAT_LIMIT


def test_gibbs_ntf_warns_while_its_chain_still_climbs():
    # No warm-up on a rank-3 20 x 15 x 10 tensor: the first sweeps climb
    # from the random start (measured R-hat 1.6-2.1 over six seeds).
    rng = np.random.default_rng(0)
    factors = [rng.standard_exponential((n, 3)) for n in (20, 15, 10)]
    X = np.einsum("ir,jr,kr->ijk", *factors) + rng.normal(0.0, 0.3, (20, 15, 10))
    with pytest.warns(ConvergenceWarning, match="R-hat"):
        est = GibbsNTF(3, evidence=None, n_warmup=0, n_draws=6, random_state=0).fit(X)
    assert est.rhat_ > RHAT_LIMIT
