"""Signed Bayesian CP: GibbsNTF(nonnegative=False) and
GaussianPriors(nonnegative=False) in inference.gaussian."""

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from sklearn_pltf import GibbsNTF
from sklearn_pltf._data import as_observed_tensor
from sklearn_pltf.inference import gaussian
from sklearn_pltf.inference._cp_stats import CPStatistics

SIGNED = gaussian.GaussianPriors(nonnegative=False)


def _cp(factors):
    return np.einsum("ir,jr,kr->ijk", *factors)


def _signed_data(seed=0, shape=(8, 6, 5), rank=2, noise=0.3, missing=0.0):
    rng = np.random.default_rng(seed)
    factors = [rng.normal(0.0, 1.0, (s, rank)) for s in shape]
    X = _cp(factors) + rng.normal(0.0, noise, shape)
    if missing:
        X[rng.uniform(size=shape) < missing] = np.nan
    return X, factors


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_column_conditional_is_the_log_joint_in_that_column(missing):
    # The log joint in one column, minus the Gaussian conditional's log
    # density, is a constant: equal differences between two columns of either sign.
    X, _ = _signed_data(missing=missing)
    stats = CPStatistics(as_observed_tensor(X, allow_negative=True))
    rng = np.random.default_rng(2)
    factors = [rng.normal(0.0, 1.0, (s, 2)) for s in X.shape]
    mean, variance, noise = -0.3, 2.0, 0.7
    for n in range(3):
        terms = gaussian._mode_terms(stats, n, factors, stats.grams(factors))
        location, scale = gaussian.column_conditional(
            stats, n, 1, factors[n], terms, stats.missing_xhat(factors), mean, variance, noise)

        def log_joint(column, n=n):
            changed = list(factors)
            changed[n] = factors[n].copy()
            changed[n][:, 1] = column
            return (gaussian.log_likelihood(stats, changed, noise)
                    - np.sum((column - mean) ** 2) / (2 * variance))

        first = factors[n][:, 1]
        second = -first + rng.normal(0.0, 0.5, first.shape)  # signs change
        expected = log_joint(second) - log_joint(first)
        got = np.sum(gaussian.log_element_density(second, location, scale, SIGNED)
                     - gaussian.log_element_density(first, location, scale, SIGNED))
        assert got == pytest.approx(expected, rel=1e-8)


def test_hmc_gradient_matches_finite_differences():
    X, _ = _signed_data(missing=0.2)
    stats = CPStatistics(as_observed_tensor(X, allow_negative=True))
    state = gaussian.init(np.random.default_rng(3), stats, 2, SIGNED)
    assert any(np.any(f < 0) for f in state.factors)  # a signed start
    position = list(state.factors)
    value, gradient, _ = gaussian._log_target_and_gradient(position, state, stats, False)
    h = 1e-6
    for n in range(3):
        for index in [(0, 0), (2, 1)]:
            moved = [p.copy() for p in position]
            moved[n][index] += h
            forward = gaussian._log_target_and_gradient(moved, state, stats, False)[0]
            moved[n][index] -= 2 * h
            backward = gaussian._log_target_and_gradient(moved, state, stats, False)[0]
            assert gradient[n][index] == pytest.approx((forward - backward) / (2 * h),
                                                       rel=1e-5, abs=1e-6)


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


def _signed_prior_monte_carlo_log_evidence(X, rank, priors, n_draws, seed):
    """log p(X) = log E_prior[p(X | A)], σ² integrated out in closed form,
    by plain Monte Carlo over prior draws of the signed factors."""
    rng = np.random.default_rng(seed)
    n, k, theta = X.size, priors.noise_shape, priors.noise_scale
    chunk, sse = 250_000, []
    for _ in range(n_draws // chunk):
        factors = []
        for size in X.shape:
            v = priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, (chunk, 1, rank))
            mu = rng.standard_normal((chunk, 1, rank)) * np.sqrt(v / priors.hyper_precision)
            factors.append(mu + np.sqrt(v) * rng.standard_normal((chunk, size, rank)))
        sse.append(((np.einsum("nir,njr,nkr->nijk", *factors) - X) ** 2).sum(axis=(1, 2, 3)))
    sse = np.concatenate(sse)
    log_lik = (-n / 2 * np.log(2 * np.pi) + gammaln(k + n / 2) - gammaln(k) + k * np.log(theta)
               - (k + n / 2) * np.log(theta + sse / 2))
    weights = np.exp(log_lik - log_lik.max())
    return logsumexp(log_lik) - np.log(sse.size), weights.std() / weights.mean() / np.sqrt(sse.size)


@pytest.mark.slow(minutes=0.4)
def test_chib_matches_monte_carlo_integration_on_a_tiny_signed_tensor():
    """Chib's estimate, its first blocks averaged over labels and signs,
    against a 2-million-draw prior Monte Carlo integral on 3 x 2 x 2 data
    from a signed rank-1 CP, at rank 2; within 3 combined standard errors
    (each reports its own). The chain flips a column's sign only now and
    then, so without the average over signs the first ordinates' spread, and
    Chib's standard error, would be several times larger than the 0.2 allowed."""
    from sklearn_pltf.evidence._gaussian_chib import gaussian_chib_log_evidence

    rng = np.random.default_rng(0)
    truth = [rng.normal(0.0, 1.2, (s, 1)) for s in (3, 2, 2)]
    X = _cp(truth) + rng.normal(0.0, 0.5, (3, 2, 2))
    priors = gaussian.GaussianPriors(noise_shape=3.0, noise_scale=1.0, hyper_precision=1.0,
                                     hyper_shape=3.0, hyper_scale=2.0, nonnegative=False)
    reference, reference_error = _signed_prior_monte_carlo_log_evidence(X, 2, priors, 2_000_000, 1)
    assert reference_error < 0.1
    stats = CPStatistics(as_observed_tensor(X, allow_negative=True))
    estimate = gaussian_chib_log_evidence(np.random.default_rng(2), stats, 2, priors,
                                          n_draws=3000, n_warmup=300)
    assert 0 < estimate.standard_error < 0.2
    assert abs(estimate.log_evidence - reference) < 3 * np.hypot(estimate.standard_error,
                                                                 reference_error)
