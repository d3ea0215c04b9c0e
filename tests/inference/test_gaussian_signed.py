"""Signed Bayesian CP: GibbsNTF(nonnegative=False) and
GaussianPriors(nonnegative=False) in inference.gaussian (the conditionals and
HMC's gradient are tested for both signs in tests/inference/test_gaussian.py,
Geweke's test in tests/inference/test_gaussian_geweke.py)."""

import numpy as np
import pytest

from _helpers import _cp, _data, _prior_monte_carlo_log_evidence, assert_chib_matches

from sklearn_pltf import GibbsNTF
from sklearn_pltf.inference import gaussian

SIGNED = gaussian.GaussianPriors(nonnegative=False)


def _signed_data(seed=0, shape=(8, 6, 5), noise=0.3):
    return _data(seed=seed, shape=shape, noise=noise, signed=True)


def test_factor_prior_is_the_normal_inverse_gamma_marginal():
    """p(column) in closed form against the average of Π N(a | μ, v) over
    (μ, v) drawn from the Normal–inverse-Gamma hyper-prior: 200,000 draws;
    the mean's relative standard error is checked below 1%, and the
    tolerance is 4 such errors."""
    priors = gaussian.GaussianPriors(hyper_precision=1.0, hyper_shape=3.0, hyper_scale=2.0,
                                     nonnegative=False)
    column = np.array([[0.4], [-1.3], [0.9]])
    rng = np.random.default_rng(4)
    n_draws = 200_000
    v = priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, size=n_draws)
    mu = rng.standard_normal(n_draws) * np.sqrt(v / priors.hyper_precision)
    weights = np.exp(np.sum(gaussian.log_element_density(column, mu, np.sqrt(v), priors), axis=0))
    relative_error = weights.std() / weights.mean() / np.sqrt(n_draws)
    assert relative_error < 0.01
    assert gaussian.log_factor_prior(column, priors) == pytest.approx(np.log(weights.mean()), abs=0.04)
    # Negative values are allowed (the non-negative prior gives them -inf).
    assert np.isfinite(gaussian.log_factor_prior(column, priors))
    assert gaussian.log_factor_prior(column, priors._replace(nonnegative=True)) == -np.inf


def test_prior_draws_have_both_signs_and_the_prior_moments():
    priors = gaussian.GaussianPriors(hyper_precision=1.0, hyper_shape=3.0, hyper_scale=2.0,
                                     nonnegative=False)
    rng = np.random.default_rng(5)
    draws = np.array([gaussian.sample_prior(rng, (4,), 1, priors).factors[0][:, 0]
                      for _ in range(20_000)])
    # a = μ + √v z with μ | v ~ N(0, v / s): E a = 0 and Var a = E[v] (1 + 1/s)
    # = b / (a - 1) x 2 = 2. Standard errors: 0.01 for the mean, about 0.03
    # for the variance (heavy-tailed: v is inverse-Gamma with shape 3).
    assert np.mean(draws < 0) == pytest.approx(0.5, abs=0.02)
    assert draws.mean() == pytest.approx(0.0, abs=0.05)
    assert draws.var() == pytest.approx(2.0, rel=0.15)


def test_signed_fit_recovers_signed_structure():
    """On data from a signed rank-2 CP, the signed model predicts held-out
    entries far better than the non-negative one, and its factors take
    both signs."""
    X, _ = _signed_data(seed=6, shape=(10, 8, 6), noise=0.3)
    rng = np.random.default_rng(7)
    held_out = rng.uniform(size=X.shape) < 0.2
    train = np.where(held_out, np.nan, X)
    entries = np.argwhere(held_out)
    settings = dict(evidence=None, n_warmup=150, n_draws=150, random_state=0)
    signed = GibbsNTF(2, nonnegative=False, **settings).fit(train)
    nonneg = GibbsNTF(2, **settings).fit(train)
    truth = X[held_out]
    rmse = {name: np.sqrt(np.mean((est.predict_entries(entries) - truth) ** 2))
            for name, est in (("signed", signed), ("nonnegative", nonneg))}
    # The noise SD is 0.3: a right model's held-out RMSE is near it.
    assert rmse["signed"] < 0.45
    assert rmse["signed"] < 0.5 * rmse["nonnegative"]
    assert any(np.any(f < 0) for f in signed.factors_)
    assert signed.transform(train).shape == (10, 2)


def test_signed_evidence_defaults_to_chib_and_ais_is_refused():
    X, _ = _signed_data(seed=8, shape=(4, 3, 3), noise=0.3)
    est = GibbsNTF(1, nonnegative=False, n_warmup=50, n_draws=50, random_state=0).fit(X)
    assert np.isfinite(est.log_evidence_) and est.log_evidence_error_ > 0
    with pytest.raises(ValueError, match="nonnegative=False"):
        GibbsNTF(1, nonnegative=False, evidence="ais").fit(X)


@pytest.mark.slow(minutes=0.4)
def test_chib_matches_monte_carlo_integration_on_a_tiny_signed_tensor():
    """Chib's estimate, its first blocks averaged over labels and signs,
    against a 2-million-draw prior Monte Carlo integral on 3 x 2 x 2 data
    from a signed rank-1 CP, at rank 2; within 3 combined standard errors
    (each reports its own). The chain flips a column's sign only now and
    then, so without the average over signs the first ordinates' spread, and
    Chib's standard error, would be several times larger than the 0.2 allowed."""
    rng = np.random.default_rng(0)
    truth = [rng.normal(0.0, 1.2, (s, 1)) for s in (3, 2, 2)]
    X = _cp(truth) + rng.normal(0.0, 0.5, (3, 2, 2))
    priors = gaussian.GaussianPriors(noise_shape=3.0, noise_scale=1.0, hyper_precision=1.0,
                                     hyper_shape=3.0, hyper_scale=2.0, nonnegative=False)
    reference, reference_error = _prior_monte_carlo_log_evidence(X, 2, priors, 2_000_000, seed=1)
    assert reference_error < 0.1
    assert_chib_matches(X, priors, reference, reference_error, max_standard_error=0.2)
