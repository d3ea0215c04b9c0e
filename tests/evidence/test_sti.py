"""Stochastic thermodynamic integration against the analytic evidence of the
Gaussian additive model (Şimşekli et al., ICASSP 2016)."""

import numpy as np
import pytest
from _helpers import (
    GaussianAdditiveTarget,
    draw_data,
    expected_log_likelihood,
    log_evidence,
    variance_log_likelihood,
)

from sklearn_pltf.evidence._posterior import warn_if_unsettled
from sklearn_pltf.evidence import sti_log_evidence, temperature_ladder
from sklearn_pltf.evidence._mc_error import batch_means_error, effective_sample_size
from sklearn_pltf.evidence._sti import BLOCK, MIN_KEPT, _trending, trapezoid_weights

RANKS = range(1, 11)


def _quadrature_error(x, rank, ladder, corrected):
    """Error of the (corrected) trapezoid rule with the exact integrand."""
    means = np.array([expected_log_likelihood(x, rank, t) for t in ladder])
    estimate = trapezoid_weights(ladder) @ means
    if corrected:
        variances = np.array([variance_log_likelihood(x, rank, t) for t in ladder])
        estimate -= np.sum(np.diff(ladder) ** 2 / 12 * np.diff(variances))
    return estimate - log_evidence(x, rank)


def test_ladder_runs_from_prior_to_posterior():
    ladder = temperature_ladder(40)
    assert ladder[0] == 0 and ladder[-1] == 1
    assert np.all(np.diff(ladder) > 0)
    np.testing.assert_allclose(ladder, (np.arange(40) / 39) ** 6)
    np.testing.assert_allclose(temperature_ladder(5, power=1), [0, 0.25, 0.5, 0.75, 1])
    assert trapezoid_weights(ladder).sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 2"):
        temperature_ladder(1)


def test_exact_integrand_check_of_the_derivative():
    # The correction rests on d/dt E_t[log p(x|θ)] = Var_t[log p(x|θ)].
    x = draw_data(np.random.default_rng(0), 5)
    for t in (1e-5, 1e-3, 0.3):
        h = t * 1e-4
        slope = (expected_log_likelihood(x, 4, t + h) - expected_log_likelihood(x, 4, t - h)) / (2 * h)
        assert slope == pytest.approx(variance_log_likelihood(x, 4, t), rel=1e-4)


@pytest.mark.parametrize("true_rank", [3, 5, 7])
def test_uniform_ladder_is_badly_biased_and_the_default_is_not(true_rank):
    # With the exact integrand, only the quadrature is tested.
    x = draw_data(np.random.default_rng(true_rank), true_rank)
    uniform = [_quadrature_error(x, r, temperature_ladder(10, power=1), False) for r in RANKS]
    default = [_quadrature_error(x, r, temperature_ladder(40), True) for r in RANKS]
    assert max(abs(e) for e in uniform) > 100
    assert max(abs(e) for e in default) < 0.2


def test_batch_means_error_matches_iid_standard_error():
    values = np.random.default_rng(1).normal(size=20000)
    assert batch_means_error(values) == pytest.approx(1 / np.sqrt(20000), rel=0.4)


def test_effective_sample_size_of_independent_and_autocorrelated_draws():
    rng = np.random.default_rng(1)
    # Independent draws: about n (the estimator holds tau at 1 or more).
    assert effective_sample_size(rng.normal(size=20000)) == pytest.approx(20000, rel=0.1)
    # AR(1) with coefficient 0.9: tau = (1 + 0.9) / (1 - 0.9) = 19. With about
    # 10,000 effective draws the estimate's relative error is a few percent.
    from scipy.signal import lfilter

    series = lfilter([1.0], [1.0, -0.9], rng.normal(size=200_000))
    assert effective_sample_size(series) == pytest.approx(200_000 / 19, rel=0.15)
    assert effective_sample_size([1.0, 2.0]) == 2.0


def test_ladder_must_span_zero_to_one():
    x = draw_data(np.random.default_rng(0), 2, n=100)
    with pytest.raises(ValueError, match="from 0 to 1"):
        sti_log_evidence(np.random.default_rng(0), GaussianAdditiveTarget(x, 2),
                         temperatures=[0.1, 0.5, 1.0])


def _sti(x, rank, seed, n_steps=3000):
    return sti_log_evidence(np.random.default_rng(seed), GaussianAdditiveTarget(x, rank),
                            n_steps=n_steps, n_warmup=500)


@pytest.mark.slow(minutes=0.25)
@pytest.mark.parametrize("rank", [2, 5])
def test_sti_matches_analytic_evidence(rank):
    # N = 5000, minibatches of 250, as in the paper; the true rank is 5.
    x = draw_data(np.random.default_rng(5), 5)
    estimate = _sti(x, rank, seed=100 + rank)
    assert abs(estimate.log_evidence - log_evidence(x, rank)) < 1.0
    assert 0 < estimate.standard_error < 1.0
    # The chain ended at t = 1 near the posterior of s = Σ θ.
    assert estimate.state.params[0].sum() == pytest.approx(x.mean(), abs=0.2)


@pytest.mark.slow(minutes=0.12)
@pytest.mark.parametrize("rank", [2, 5])
def test_self_tuning_sti_matches_analytic_evidence(rank):
    """The default, n_steps="auto": its standard error within the default
    target (tol=1), the analytic evidence within three of it (the estimate
    is a sum of 40 independent means, so close to normal), and fewer steps
    in all than the 3000 a temperature that the fixed-length test needs."""
    x = draw_data(np.random.default_rng(5), 5)
    estimate = sti_log_evidence(np.random.default_rng(200 + rank), GaussianAdditiveTarget(x, rank))
    assert 0 < estimate.standard_error <= 1.0
    assert abs(estimate.log_evidence - log_evidence(x, rank)) < 3 * estimate.standard_error
    assert estimate.unsettled == 0
    assert estimate.steps.sum() < 3000 * estimate.temperatures.size / 2
    assert estimate.steps.min() == MIN_KEPT


def test_trend_test_separates_a_relaxing_chain_from_a_settled_one():
    rng = np.random.default_rng(0)
    noise = rng.normal(size=2000)
    assert not _trending(noise, negligible=0.0)
    assert _trending(noise + np.linspace(-1.0, 1.0, 2000), negligible=0.0)
    # A trend smaller than what matters to the integral is let through.
    assert not _trending(noise + np.linspace(-1.0, 1.0, 2000), negligible=5.0)


def test_self_tuning_sti_spends_its_budget_and_flags_what_it_cannot_settle():
    """Chains started without warm-up, with small steps, far from each
    temperature's posterior: with a budget of one block past the first walk
    up the ladder, a temperature is still trending at the end and is
    counted unsettled."""
    x = draw_data(np.random.default_rng(0), 2, n=2000)
    target = GaussianAdditiveTarget(x, 2)
    budget = 5 * MIN_KEPT + BLOCK
    capped = sti_log_evidence(np.random.default_rng(0), target, n_temperatures=5, n_warmup=0,
                              max_steps=budget, step_size=1e-3)
    assert capped.steps.sum() == budget
    assert capped.unsettled >= 1
    with pytest.warns(RuntimeWarning, match="still trending.*steps_per_temperature"):
        warn_if_unsettled([capped])
    with pytest.raises(ValueError, match="positive integer or 'auto'"):
        sti_log_evidence(np.random.default_rng(0), target, n_steps="many")


def test_sti_is_reproducible():
    x = draw_data(np.random.default_rng(0), 2, n=500)
    first = sti_log_evidence(np.random.default_rng(3), GaussianAdditiveTarget(x, 2),
                             n_temperatures=5, n_steps=50, n_warmup=20)
    second = sti_log_evidence(np.random.default_rng(3), GaussianAdditiveTarget(x, 2),
                              n_temperatures=5, n_steps=50, n_warmup=20)
    assert first.log_evidence == second.log_evidence


@pytest.mark.slow(minutes=3.5)
def test_sti_curve_matches_analytic_curve():
    """Every rank 1..4 within 1 nat of the analytic evidence, and the same
    argmax wherever the analytic best beats the runner-up by over 1 nat.
    Data drawn at rank 3; ``doc/validation/sti_analytic.py --long`` runs
    the same check with the same seeds over ranks 1..10 and on data drawn at
    ranks 5 and 7, left out of CI for its time (as are ranks 5 and 6 here,
    the costliest, to keep .ci/run within its 45 minutes).

    12,000 kept steps per temperature: ranks far below the truth carry the
    largest Monte Carlo error, since the log-likelihood's spread along the
    ladder between prior and posterior is large there
    (``doc/validation/sti_analytic.py`` gives the standard errors at 3000
    steps and self-tuned)."""
    true_rank = 3
    x = draw_data(np.random.default_rng(true_rank), true_rank)
    ranks = range(1, 5)
    exact = np.array([log_evidence(x, r) for r in ranks])
    estimated = np.array([_sti(x, r, seed=100 * true_rank + r, n_steps=12_000).log_evidence
                          for r in ranks])
    assert np.max(np.abs(estimated - exact)) < 1.0
    best, runner_up = np.sort(exact)[::-1][:2]
    if best - runner_up > 1.0:
        assert np.argmax(estimated) == np.argmax(exact)
