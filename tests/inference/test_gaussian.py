"""Gaussian non-negative PARAFAC (inference.gaussian): the rectified-Gaussian
sampler, the data sums, the conditionals, the HMC gradient and the priors."""

import numpy as np
import pytest
import sparse
from _helpers import _cp, _data, _prior_monte_carlo_log_evidence, assert_chib_matches
from scipy import stats as scipy_stats
from scipy.integrate import quad

from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference import gaussian
from sklearn_pltf.inference.gaussian import hmc as gaussian_hmc
from sklearn_pltf.inference.gaussian import sweeps as gaussian_sweeps
from sklearn_pltf.inference._cp_stats import CPStatistics
from sklearn_pltf.inference._truncnorm import (
    log_rectified_normal_density,
    sample_rectified_normal,
)


@pytest.mark.parametrize("mean, std", [(1.0, 1.0), (0.0, 2.0), (-3.0, 1.0), (-50.0, 1.0), (40.0, 0.5)])
def test_rectified_normal_draws_match_scipy(mean, std):
    # Kolmogorov–Smirnov against scipy's truncnorm, deep in the tail included
    # (mean 50 standard deviations below the bound); 20,000 draws detect a
    # CDF error of 0.015 with probability > 0.999.
    rng = np.random.default_rng(0)
    draws = sample_rectified_normal(rng, np.full(20000, mean), std)
    assert np.all(draws >= 0)
    reference = scipy_stats.truncnorm(-mean / std, np.inf, loc=mean, scale=std)
    assert scipy_stats.kstest(draws, reference.cdf).pvalue > 1e-3
    # The mean within 4 standard errors.
    assert abs(draws.mean() - reference.mean()) < 4 * reference.std() / np.sqrt(draws.size)


def test_rectified_normal_density_matches_scipy():
    x = np.array([0.0, 0.1, 1.0, 5.0])
    for mean, std in [(1.0, 1.0), (-20.0, 0.7), (3.0, 2.0)]:
        expected = scipy_stats.truncnorm(-mean / std, np.inf, loc=mean, scale=std).logpdf(x)
        np.testing.assert_allclose(log_rectified_normal_density(x, mean, std), expected, rtol=1e-9)
    assert log_rectified_normal_density(-1.0, 0.0, 1.0) == -np.inf


def _layouts(X):
    """The same data as dense (NaN = missing) and as pydata sparse with a mask."""
    observed = ~np.isnan(X)
    yield as_observed_tensor(X, allow_negative=True)
    coo = sparse.COO.from_numpy(np.where(observed, X, 0.0))
    mask = sparse.COO.from_numpy(observed, fill_value=True)
    yield as_observed_tensor(coo, mask=mask if not observed.all() else None, allow_negative=True)


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_cp_statistics_match_dense_sums(missing):
    X, _ = _data(missing=missing)
    rng = np.random.default_rng(1)
    factors = [rng.gamma(2.0, 1.0, (s, 2)) for s in X.shape]
    observed = ~np.isnan(X)
    residual = np.where(observed, X - _cp(factors), 0.0)
    expected_gradients = [
        np.einsum("ijk,jr,kr->ir", residual, factors[1], factors[2]),
        np.einsum("ijk,ir,kr->jr", residual, factors[0], factors[2]),
        np.einsum("ijk,ir,jr->kr", residual, factors[0], factors[1]),
    ]
    for data in _layouts(X):
        stats = CPStatistics(data)
        assert stats.n_observed == observed.sum()
        np.testing.assert_allclose(stats.sum_of_squared_errors(factors), np.sum(residual**2), rtol=1e-10)
        for n in range(3):
            np.testing.assert_allclose(stats.masked_gradient_terms(n, factors), expected_gradients[n],
                                       rtol=1e-9, atol=1e-9)


def test_negative_values_need_allow_negative():
    X = np.array([[1.0, -0.5], [2.0, 0.0]])
    with pytest.raises(ValueError, match="Negative values"):
        as_observed_tensor(X)
    assert as_observed_tensor(X, allow_negative=True).dense[0, 1] == -0.5


@pytest.mark.parametrize("signed", [False, True], ids=["nonnegative", "signed"])
@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_column_conditional_is_the_log_joint_in_that_column(missing, signed):
    # The log joint as a function of one column differs from the (rectified)
    # Gaussians' log density by a constant: compare differences between two
    # columns (of either sign for signed factors).
    X, _ = _data(missing=missing)
    stats = CPStatistics(as_observed_tensor(X, allow_negative=True))
    priors = gaussian.GaussianPriors(nonnegative=not signed)
    rng = np.random.default_rng(2)
    factors = [rng.gamma(2.0, 1.0, (s, 2)) * (rng.choice([-1, 1], (s, 2)) if signed else 1)
               for s in X.shape]
    mean, variance, noise = 0.3, 2.0, 0.7
    for n in range(3):
        terms = gaussian_sweeps._mode_terms(stats, n, factors, stats.grams(factors))
        location, scale = gaussian.column_conditional(
            stats, n, 1, factors[n], terms, stats.missing_xhat(factors), mean, variance, noise)

        def log_joint(column, n=n):
            changed = list(factors)
            changed[n] = factors[n].copy()
            changed[n][:, 1] = column
            return (gaussian.log_likelihood(stats, changed, noise)
                    - np.sum((column - mean) ** 2) / (2 * variance))

        first = factors[n][:, 1]
        second = -first + rng.normal(0.0, 0.5, first.shape) if signed else (
            first + rng.uniform(0.0, 0.5, first.shape))
        expected = log_joint(second) - log_joint(first)
        got = np.sum(gaussian.log_element_density(second, location, scale, priors)
                     - gaussian.log_element_density(first, location, scale, priors))
        assert got == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("signed", [False, True], ids=["nonnegative", "signed"])
def test_hmc_gradient_matches_finite_differences(signed):
    # Non-negative factors move as φ = log A, signed ones as A itself.
    X, _ = _data(missing=0.2)
    stats = CPStatistics(as_observed_tensor(X, allow_negative=True))
    priors = gaussian.GaussianPriors(nonnegative=not signed)
    state = gaussian.init(np.random.default_rng(3), stats, 2, priors)
    assert signed == any(np.any(f < 0) for f in state.factors)  # the start's signs
    phi = [gaussian_hmc._to_position(f, priors) for f in state.factors]
    value, gradient, _ = gaussian_hmc._log_target_and_gradient(phi, state, stats, not signed)
    h = 1e-6
    for n in range(3):
        for index in [(0, 0), (2, 1)]:
            moved = [p.copy() for p in phi]
            moved[n][index] += h
            forward, _, _ = gaussian_hmc._log_target_and_gradient(moved, state, stats, not signed)
            moved[n][index] -= 2 * h
            backward, _, _ = gaussian_hmc._log_target_and_gradient(moved, state, stats, not signed)
            assert gradient[n][index] == pytest.approx((forward - backward) / (2 * h), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("n_elements, precision", [(1, 1.0), (5, 1.0), (20, 0.1)])
def test_hyper_normalizer_matches_quadrature(n_elements, precision):
    def integrand(u):
        return scipy_stats.norm.pdf(u, scale=1 / np.sqrt(precision)) * scipy_stats.norm.cdf(u) ** n_elements

    expected, _ = quad(integrand, -np.inf, np.inf, epsabs=1e-13)
    assert gaussian.log_hyper_normalizer(n_elements, precision) == pytest.approx(np.log(expected), rel=1e-7)


@pytest.mark.parametrize("ard", [False, True])
def test_the_columns_hyper_parameters_are_drawn_independently(ard):
    """Given the factors, each column's (μ, v) (under ARD, each component's
    v) is independent of the others': over repeated draws, two columns'
    variances are uncorrelated and each matches its inverse-Gamma
    conditional's mean. (They once shared one Gamma variate: correlation 1,
    the right marginals, the wrong joint, so a Gibbs sweep did not keep the
    posterior.)"""
    rng = np.random.default_rng(0)
    factors = [rng.gamma(2.0, 1.0, (8, 2)), rng.gamma(2.0, 1.0, (6, 2))]
    priors = gaussian.GaussianPriors(hyper_shape=3.0, hyper_scale=2.0, ard=ard)
    draws = np.array([gaussian.draw_hyper(rng, factors, priors)[1][0] for _ in range(4000)])
    assert abs(np.corrcoef(draws.T)[0, 1]) < 0.05
    if ard:
        shape = priors.hyper_shape + 0.5 * 14
        scale = priors.hyper_scale + 0.5 * sum(np.sum(f**2, axis=0) for f in factors)
    else:
        column = factors[0]
        precision = priors.hyper_precision + 8
        shape = priors.hyper_shape + 0.5 * 8
        scale = priors.hyper_scale + 0.5 * (np.sum(column**2, axis=0)
                                            - column.sum(axis=0) ** 2 / precision)
    np.testing.assert_allclose(draws.mean(axis=0), scale / (shape - 1), rtol=0.05)


def test_factor_prior_is_the_hyper_prior_average():
    # p(column) in closed form against the average of prod R(a | mu, v) over
    # (mu, v) drawn from the hyper-prior (sample_prior's draws): 200,000 draws,
    # the standard error of the mean is < 1% here; allow 4%.
    priors = gaussian.GaussianPriors(hyper_precision=1.0, hyper_shape=3.0, hyper_scale=2.0)
    column = np.array([[0.4], [1.3], [0.9]])
    rng = np.random.default_rng(4)
    n_draws = 200_000
    v = priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, size=n_draws)
    u = gaussian.sample_standardised_location(rng, column.shape[0], priors.hyper_precision, n_draws)
    mu = u * np.sqrt(v)
    log_terms = np.sum(log_rectified_normal_density(column, mu, np.sqrt(v)), axis=0)
    weights = np.exp(log_terms)
    estimate = np.log(weights.mean())
    relative_error = weights.std() / weights.mean() / np.sqrt(n_draws)
    assert relative_error < 0.01
    assert gaussian.log_factor_prior(column, priors) == pytest.approx(estimate, abs=0.04)


@pytest.mark.slow(minutes=0.25)
def test_gibbs_and_hmc_agree_on_the_posterior_mean():
    # Posterior means of X̂ from Gibbs and from HMC, each with a Monte Carlo
    # error estimated by batch means; they agree within 4 combined errors.
    X, _ = _data(seed=5, shape=(6, 5, 4), rank=2, noise=0.5, missing=0.1)
    stats = CPStatistics(as_observed_tensor(X, allow_negative=True))
    priors = gaussian.GaussianPriors()
    means, errors = [], []
    for sampler, n_draws in [("gibbs", 2000), ("hmc", 1000)]:
        chain = gaussian.run_chain(np.random.default_rng(6), stats, 2, priors, sampler=sampler,
                                   n_warmup=500, n_draws=n_draws, n_leapfrog=10)
        xhat = np.array([_cp([d[k] for d in chain.draws]) for k in range(n_draws)])
        batches = xhat.reshape(20, -1, *X.shape).mean(axis=1)
        means.append(xhat.mean(axis=0))
        errors.append(batches.std(axis=0, ddof=1) / np.sqrt(20))
        if sampler == "hmc":
            assert chain.acceptance > 0.6
    z = np.abs(means[0] - means[1]) / np.hypot(errors[0], errors[1])
    # 120 entries: under agreement, |z| > 4 is rare (batch means with 20 batches
    # make z roughly t with 19 df per side; P(|z| > 4) ~ 1e-3 per entry).
    assert np.mean(z > 4) < 0.03
    assert np.median(z) < 1.5


def _tiny_gaussian_problem():
    """3 x 2 x 2 data at rank 2 (two label orders) and its log evidence by a
    2-million-draw prior Monte Carlo integral, with that integral's error."""
    rng = np.random.default_rng(0)
    shape = (3, 2, 2)
    truth = [rng.gamma(2.0, 0.7, (s, 1)) for s in shape]
    X = _cp(truth) + rng.normal(0.0, 0.5, shape)
    priors = gaussian.GaussianPriors(noise_shape=3.0, noise_scale=1.0, hyper_precision=1.0,
                                     hyper_shape=3.0, hyper_scale=2.0)
    reference, reference_error = _prior_monte_carlo_log_evidence(X, 2, priors, 2_000_000, seed=1)
    assert reference_error < 0.1
    return X, priors, reference, reference_error


@pytest.mark.slow(minutes=0.7)
def test_chib_matches_monte_carlo_integration_on_a_tiny_tensor():
    # Chib's estimate (its first blocks average the label orders) against the
    # prior Monte Carlo integral, within 3 combined standard errors (each
    # reports its own).
    X, priors, reference, reference_error = _tiny_gaussian_problem()
    assert_chib_matches(X, priors, reference, reference_error, max_standard_error=0.3)


@pytest.mark.slow(minutes=0.3)
@pytest.mark.xfail(strict=False, reason=(
    "AIS at its defaults lies below the integral by more than its reported standard error: "
    "over seeds 0-7, 0.11 nats below on average (0.01-0.30) against a reported 0.05-0.07, "
    "two seeds of eight beyond 3 combined standard errors, both before and after the column "
    "hyper-parameters were drawn independently (seed 0: 0.12 below, then 0.25). The log of "
    "the runs' mean weight is biased low and its error omits that bias."))
def test_ais_matches_monte_carlo_integration_on_a_tiny_tensor():
    # GibbsNTF's default evidence (AIS from a Gamma fit to the chain's
    # marginals, 1000 rungs) against the same integral, within 3 combined
    # standard errors.
    from sklearn_pltf import GibbsNTF

    X, priors, reference, reference_error = _tiny_gaussian_problem()
    est = GibbsNTF(2, noise_shape=3.0, noise_scale=1.0, hyper_precision=1.0, hyper_shape=3.0,
                   hyper_scale=2.0, random_state=0).fit(X)
    assert 0 < est.log_evidence_error_ < 0.3
    assert abs(est.log_evidence_ - reference) < 3 * np.hypot(est.log_evidence_error_, reference_error)


@pytest.mark.slow(minutes=0.3)
def test_forward_and_reverse_ais_sandwich_the_evidence_of_data_from_the_model():
    """Bidirectional Monte Carlo for Gaussian NTF: on a 3 x 2 x 2 tensor drawn
    from the model's prior at rank 2, the generating factors are an exact
    posterior draw (σ² and the columns' (μ, v) are integrated out), so
    reverse AIS from them bounds log p(X) above as forward AIS bounds it
    below. The two estimates must keep that order within 3 combined
    standard errors and, on 12 observations with 1000 rungs, meet within
    half a nat. (A prior Monte Carlo integral is no reference here: on data
    drawn from the prior its weights are heavy-tailed, and it fell below
    both bounds.)"""
    from sklearn_pltf import GibbsNTF
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.evidence import gaussian_ais_log_evidence, gaussian_reverse_ais_log_evidence
    from sklearn_pltf.evidence._ais import posterior_start

    priors = gaussian.GaussianPriors(noise_shape=3.0, noise_scale=1.0, hyper_precision=1.0,
                                     hyper_shape=3.0, hyper_scale=2.0)
    rng = np.random.default_rng(10)
    truth = gaussian.sample_prior(rng, (3, 2, 2), 2, priors)
    X = _cp(truth.factors) + rng.normal(0.0, np.sqrt(truth.noise_variance), (3, 2, 2))
    est = GibbsNTF(2, noise_shape=3.0, noise_scale=1.0, hyper_precision=1.0, hyper_shape=3.0,
                   hyper_scale=2.0, evidence=None, random_state=0, keep_draws=True).fit(X)
    draws = [d[0] for d in est.draws_]
    start = posterior_start(est.model_, [d.mean(axis=0) for d in draws],
                            [np.exp(np.log(d).mean(axis=0)) for d in draws])
    data = as_observed_tensor(X, allow_negative=True)
    lower = gaussian_ais_log_evidence(np.random.default_rng(1), data, 2, priors, start)
    upper = gaussian_reverse_ais_log_evidence(np.random.default_rng(2), data, 2, priors,
                                              truth.factors, start)
    width = upper.log_evidence - lower.log_evidence
    assert -3 * np.hypot(lower.standard_error, upper.standard_error) < width < 0.5
    with pytest.raises(ValueError, match="positive array of shape"):
        gaussian_reverse_ais_log_evidence(np.random.default_rng(2), data, 2, priors,
                                          [f[:, :1] for f in truth.factors], start)


def test_ais_target_draws_the_prior_exactly():
    """AIS from the prior (``start=None``, what GibbsNTF's evidence='ais'
    takes above 12 components) starts from exact prior draws of φ = log A:
    their per-mode column sums and largest elements have the distribution of
    sample_prior's (two-sample Kolmogorov–Smirnov over 1500 draws each), and
    the target's log prior is finite at every draw."""
    from sklearn_pltf.evidence._gaussian_ais import _GaussianTarget

    priors = gaussian.GaussianPriors(noise_shape=3.0, noise_scale=1.0, hyper_precision=2.0,
                                     hyper_shape=3.0, hyper_scale=2.0)
    shape, rank, n_draws = (4, 3, 2), 2, 1500
    data = as_observed_tensor(np.ones(shape), allow_negative=True)
    target = _GaussianTarget(data, rank, priors)
    phi = target.prior_draws(np.random.default_rng(0), n_draws)
    assert all(phi[n].shape == (n_draws, size, rank) for n, size in enumerate(shape))
    assert np.all(np.isfinite(target.log_prior(phi)[0]))
    rng = np.random.default_rng(1)
    reference = [gaussian.sample_prior(rng, shape, rank, priors).factors for _ in range(n_draws)]
    for n in range(len(shape)):
        drawn = np.exp(phi[n])
        wanted = np.array([factors[n] for factors in reference])
        for statistic in (lambda a: a[:, :, 0].sum(axis=1), lambda a: a.max(axis=(1, 2))):
            assert scipy_stats.ks_2samp(statistic(drawn), statistic(wanted)).pvalue > 1e-3


@pytest.mark.slow(minutes=0.2)
def test_ais_from_the_prior_matches_monte_carlo_integration_on_a_tiny_tensor():
    # The path from the prior (start=None; power-4 ladder, 1000 rungs)
    # against the prior Monte Carlo integral, within 3 combined standard
    # errors; measured: 0.05, 0.25 and 0.01 below it for seeds 0-2.
    from sklearn_pltf.evidence import gaussian_ais_log_evidence

    X, priors, reference, reference_error = _tiny_gaussian_problem()
    data = as_observed_tensor(X, allow_negative=True)
    estimate = gaussian_ais_log_evidence(np.random.default_rng(0), data, 2, priors, None)
    assert 0 < estimate.standard_error < 0.3
    assert abs(estimate.log_evidence - reference) < 3 * np.hypot(estimate.standard_error,
                                                                 reference_error)
