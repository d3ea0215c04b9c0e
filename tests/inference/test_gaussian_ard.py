"""GibbsNTF with automatic relevance determination (``ard=True``): one
variance per component shared by every mode, location 0 (Zhao, Zhang &
Cichocki 2015), for non-negative and signed factors."""

import numpy as np
import pytest
from _helpers import _prior_monte_carlo_log_evidence, assert_chib_matches
from scipy import integrate
from scipy.special import gammaln

from sklearn_pltf import GibbsNTF
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.datasets import make_gaussian_ntf
from sklearn_pltf.inference import gaussian
from sklearn_pltf.inference._cp_stats import CPStatistics

ARD = gaussian.GaussianPriors(noise_shape=3.0, noise_scale=1.0, hyper_shape=3.0, hyper_scale=2.0,
                              ard=True)


@pytest.mark.parametrize("nonnegative", [True, False])
def test_the_ard_prior_integrates_the_shared_variance_out(nonnegative):
    """log p(A_1, A_2) against quadrature over v of Π p(a | v) IG(v)."""
    priors = ARD._replace(nonnegative=nonnegative)
    rng = np.random.default_rng(0)
    factors = [np.abs(rng.normal(size=(3, 2))), np.abs(rng.normal(size=(2, 2)))]
    if not nonnegative:
        factors[1][0] *= -1
    expected = 0.0
    for r in range(2):
        column = np.concatenate([f[:, r] for f in factors])

        def integrand(v, column=column):
            log_density = (np.sum(-0.5 * column**2 / v - 0.5 * np.log(2 * np.pi * v))
                           + (column.size * np.log(2.0) if nonnegative else 0.0))
            log_ig = (priors.hyper_shape * np.log(priors.hyper_scale) - gammaln(priors.hyper_shape)
                      - (priors.hyper_shape + 1) * np.log(v) - priors.hyper_scale / v)
            return np.exp(log_density + log_ig)

        expected += np.log(integrate.quad(integrand, 0, np.inf, epsabs=0, epsrel=1e-12)[0])
    assert gaussian.log_factors_prior(factors, priors) == pytest.approx(expected, rel=1e-9)
    if nonnegative:
        assert gaussian.log_factors_prior([-factors[0], factors[1]], priors) == -np.inf


def test_under_ard_the_modes_share_one_variance_and_the_locations_are_zero():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 3, 2))
    stats = CPStatistics(as_observed_tensor(X, allow_negative=True))
    state = gaussian.init(rng, stats, 3, ARD)
    for _ in range(3):
        state, _ = gaussian.gibbs_sweep(rng, state, stats, ARD)
        for means, variances in zip(state.means, state.variances):
            np.testing.assert_array_equal(means, 0.0)
            np.testing.assert_array_equal(variances, state.variances[0])
    prior_draw = gaussian.sample_prior(rng, (4, 3, 2), 3, ARD)
    np.testing.assert_array_equal(prior_draw.variances[1], prior_draw.variances[0])


@pytest.mark.slow(minutes=0.4)
def test_chib_under_ard_matches_monte_carlo_integration_on_a_tiny_tensor():
    rng = np.random.default_rng(0)
    shape = (3, 2, 2)
    truth = [rng.gamma(2.0, 0.7, (s, 1)) for s in shape]
    X = np.einsum("ir,jr,kr->ijk", *truth) + rng.normal(0.0, 0.5, shape)
    reference, reference_error = _prior_monte_carlo_log_evidence(X, 2, ARD, 2_000_000, seed=1)
    assert reference_error < 0.1
    assert_chib_matches(X, ARD, reference, reference_error, max_standard_error=0.3)


@pytest.mark.parametrize("nonnegative", [True, False])
@pytest.mark.slow(minutes=0.2)
def test_ard_finds_the_rank_of_an_incomplete_tensor(nonnegative):
    X, _ = make_gaussian_ntf((20, 15, 10), 3, noise_std=0.1, missing_fraction=0.5,
                             random_state=2)
    estimator = GibbsNTF(6, ard=True, nonnegative=nonnegative, evidence=None, n_warmup=2000,
                         n_draws=200, hyper_shape=1e-3, hyper_scale=1e-3,
                         random_state=0).fit(X)
    assert estimator.effective_rank_ == 3
    assert estimator.relevance_.shape == (6,)
    shares = np.sort(gaussian.component_energy_shares(estimator.factors_))[::-1]
    assert shares[2] > 1e-2 and shares[3] < 1e-4


def test_ard_evidence_is_chib_and_ais_is_refused():
    X = np.random.default_rng(0).gamma(2.0, 1.0, (4, 3, 3))
    with pytest.raises(ValueError, match="evidence='chib'"):
        GibbsNTF(2, ard=True, evidence="ais", n_warmup=5, n_draws=5).fit(X)
    fitted = GibbsNTF(2, ard=True, n_warmup=20, n_draws=20, random_state=0).fit(X)
    assert np.isfinite(fitted.log_evidence_) and fitted.log_evidence_error_ > 0
