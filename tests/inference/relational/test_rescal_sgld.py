"""SGLD and STI for the RESCAL model (inference/rescal_sgld.py)."""

import warnings

import numpy as np
import pytest
from _helpers import BINARY, COUNTS, _exact_rank_one, _rescal_data

from sklearn_pltf import PLTF, BayesianRESCAL
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference.relational import _relational as relational
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.inference.relational.rescal_sgld import RescalTarget
from sklearn_pltf.engine.model import Model


def _target(likelihood, seed=0, batch_size=None):
    rng = np.random.default_rng(seed)
    X = _rescal_data(rng, 6, 2, 2, likelihood)
    X[0, 3, 1] = np.nan  # a missing entry off the diagonal
    data = relational.relational_data(as_observed_tensor(X), likelihood)
    model = Model.parse("ia,jb,abk->ijk").bind((6, 6, 2), {"a": 2, "b": 2})
    priors = relational.priors_with_relation_axis(gamma_priors(model, 1.5, 2.0))
    target = RescalTarget(data, priors, 2, batch_size)
    return target, priors, target.init(rng)


@pytest.mark.parametrize("likelihood", ["poisson", "bernoulli"])
def test_gradient_is_that_of_the_log_power_posterior(likelihood):
    """Against central differences of t log p(X | A, G) + log p(A, G) + Σ φ
    (the Jacobian of φ = log Z), at t = 0.7; the differences' own error is
    about 1e-7 relative at step 1e-6."""
    target, priors, params = _target(likelihood)
    temperature = 0.7

    def log_power_posterior(p):
        prior = sum(np.sum(priors.shape[q] * phi - priors.rate[q] * np.exp(phi))
                    for q, phi in zip(target.positions, p))
        return temperature * target.log_likelihood(p) + prior

    gradient, log_likelihood, noise, _ = target.gradient(
        params, (np.arange(target.data.x.size), 1.0), temperature)
    assert log_likelihood == pytest.approx(target.log_likelihood(params), rel=1e-12)
    assert noise == 0.0
    for block, analytic in enumerate(gradient):
        numeric = np.zeros_like(analytic)
        for index in np.ndindex(analytic.shape):
            for sign in (1, -1):
                moved = [p.copy() for p in params]
                moved[block][index] += sign * 1e-6
                numeric[index] += sign * log_power_posterior(moved) / 2e-6
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-5)


def test_control_variates_are_exact_at_the_reference_point():
    """Anchored at θ₀, a minibatch's gradient and log-likelihood at θ₀ equal
    the full data's whatever the batch (the batch terms cancel)."""
    target, _, params = _target("bernoulli")
    full = target.gradient(params, (np.arange(target.data.x.size), 1.0), 1.0)
    anchor = target.anchor(params)
    batch = target.gradient(params, (np.array([0, 2, 5]), target.data.x.size / 3), 1.0, anchor)
    for a, b in zip(batch[0], full[0]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert batch[1] == pytest.approx(full[1], rel=1e-12)


@pytest.mark.slow(minutes=0.1)
def test_sgld_predicts_as_gibbs_does():
    """The two samplers of one posterior give the same link probabilities up
    to their Monte Carlo error: each is a mean over 256 draws of values in
    [0, 1], so its standard error is at most 0.5 / 16 ≈ 0.031, and the mean
    absolute difference of two such estimates at most about 0.035."""
    X = _rescal_data(np.random.default_rng(3), 12, 2, 2, "bernoulli")
    settings = dict(likelihood="bernoulli", evidence=None, n_draws=4000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gibbs = BayesianRESCAL(2, method="gibbs", **settings).fit(X)
        sgld = BayesianRESCAL(2, method="sgld", **settings).fit(X)
    entries = np.argwhere(np.ones(X.shape))
    difference = np.abs(gibbs.predict_entries(entries) - sgld.predict_entries(entries))
    assert difference.mean() < 0.035


def test_tied_pltf_by_sgld_is_bayesian_rescal_and_blocks_raise():
    X = _rescal_data(np.random.default_rng(4), 8, 1, 2, "poisson")[:, :, 0]
    settings = dict(method="sgld", evidence=None, n_draws=50, n_warmup=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        named = BayesianRESCAL(2, **settings).fit(X)
        general = PLTF("ia,jb,ab->ij", 2, tied_factors={1: 0}, **settings).fit(X)
    assert named.factors_[2].shape == (2, 2) and named.draws_[2].shape == (1, 50, 2, 2)
    for a, b in zip(general.factors_, named.factors_):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="n_blocks"):
        PLTF("ia,jb,ab->ij", 2, tied_factors={1: 0}, n_blocks=2, **settings).fit(X)


@pytest.mark.slow(minutes=1.4)
@pytest.mark.parametrize("likelihood, X", [("bernoulli", BINARY), ("poisson", COUNTS)])
def test_sti_matches_the_exact_rank_one_evidence(likelihood, X):
    """STI at its defaults (two chains) against the quadrature: within four
    of its standard errors, and those below 0.15 nats."""
    est = BayesianRESCAL(1, likelihood=likelihood, method="sgld", n_init=2,
                         random_state=0).fit(X)
    assert est.log_evidence_error_ < 0.15
    assert abs(est.log_evidence_ - _exact_rank_one(X, likelihood)) < 4 * est.log_evidence_error_
