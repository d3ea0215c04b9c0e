"""Gibbs and SADA for BayesianRESCAL (inference/rescal_gibbs.py) and its
Chib evidence (evidence/_rescal_chib.py)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse
import sparse
from scipy.special import gammaln
from sklearn.base import clone
from _helpers import BINARY, COUNTS, _exact_rank_one, _rescal_data

from sklearn_pltf import BayesianRESCAL
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference.relational import _relational as relational
from sklearn_pltf.inference.relational import rescal_gibbs
from sklearn_pltf.inference._chains import ChainResult, align_labels
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.engine.model import Model


def _quiet_fit(estimator, X, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: R-hat warnings
        return estimator.fit(X, **kwargs)


@pytest.mark.parametrize("likelihood, X, method", [("bernoulli", BINARY, "gibbs"),
                                                   ("poisson", COUNTS, "sada")])
@pytest.mark.slow(minutes=0.2)
def test_chib_matches_the_exact_rank_one_evidence(likelihood, X, method):
    """The rank-one evidence by quadrature (test_rescal.py) against Chib's
    estimate at the defaults: within 0.25 nats, and within four of its own
    standard errors."""
    exact = _exact_rank_one(X, likelihood)
    est = BayesianRESCAL(1, likelihood=likelihood, method=method, random_state=0).fit(X)
    assert abs(est.log_evidence_ - exact) < 0.25
    assert abs(est.log_evidence_ - exact) < 4 * est.log_evidence_error_
    assert est.score(X) == est.log_evidence_


def _prior_monte_carlo(X, likelihood, rank, n_draws=400_000, seed=1):
    """log p(X) = log E_prior p(X | A, G) by plain Monte Carlo over prior draws
    (Gamma(1, 1)) and its standard error (delta method): unbiased before the
    log, and precise to about 0.005 nats on these six-entry matrices."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    a = rng.standard_gamma(1.0, size=(n_draws, n, rank))
    g = rng.standard_gamma(1.0, size=(n_draws, rank, rank))
    off = ~np.eye(n, dtype=bool)
    rate = np.einsum("nia,njb,nab->nij", a, a, g)[:, off]
    x = X[off]
    if likelihood == "poisson":
        log_likelihood = (x * np.log(rate) - rate - gammaln(x + 1)).sum(axis=1)
    else:
        log_likelihood = np.where(x == 1, np.log(-np.expm1(-rate)), -rate).sum(axis=1)
    weights = np.exp(log_likelihood - log_likelihood.max())
    error = weights.std() / np.sqrt(n_draws) / weights.mean()
    return log_likelihood.max() + np.log(weights.mean()), error


@pytest.mark.slow(minutes=0.4)
@pytest.mark.parametrize("likelihood, X", [("bernoulli", BINARY), ("poisson", COUNTS)])
@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_chib_matches_the_evidence_at_rank_two(likelihood, X, method):
    """At rank 2 the cluster labels can switch (the ordinate of the first row
    is averaged over both labellings). Reference: prior Monte Carlo with its
    error below 0.01 nats; Chib's with 5000 draws per clamped run within 0.25
    nats of it."""
    reference, error = _prior_monte_carlo(X, likelihood, 2)
    assert error < 0.01
    est = BayesianRESCAL(2, likelihood=likelihood, method=method, n_draws=5000,
                         random_state=0).fit(X)
    assert abs(est.log_evidence_ - reference) < 0.25


@pytest.mark.slow(minutes=0.1)
def test_prior_monte_carlo_agrees_with_the_quadrature_at_rank_one():
    """The two references check each other: within four standard errors."""
    value, error = _prior_monte_carlo(BINARY, "bernoulli", 1)
    assert abs(value - _exact_rank_one(BINARY, "bernoulli")) < 4 * error


@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_same_seed_same_chain_and_every_layout_the_same(method):
    rng = np.random.default_rng(3)
    X = _rescal_data(rng, 10, 1, 2, "bernoulli")[:, :, 0]
    missing = rng.random(X.shape) < 0.1
    settings = dict(likelihood="bernoulli", method=method, n_draws=60, n_warmup=20,
                    evidence=None, random_state=4)
    dense = _quiet_fit(BayesianRESCAL(2, **settings), np.where(missing, np.nan, X))
    again = _quiet_fit(BayesianRESCAL(2, **settings), np.where(missing, np.nan, X))
    coo = _quiet_fit(BayesianRESCAL(2, **settings), sparse.COO.from_numpy(np.where(missing, 0, X)),
                     mask=~missing)
    csr = _quiet_fit(BayesianRESCAL(2, **settings),
                     scipy.sparse.csr_matrix(np.where(missing, 0, X)), mask=~missing)
    np.testing.assert_array_equal(again.log_likelihoods_, dense.log_likelihoods_)
    for other in (coo, csr):
        np.testing.assert_allclose(other.log_likelihoods_, dense.log_likelihoods_, rtol=1e-8)
        for a, b in zip(other.factors_, dense.factors_):
            np.testing.assert_allclose(a, b, rtol=1e-8)


def test_fitted_sampler_keeps_the_tie_pickles_and_clones():
    X = load_small_relations()
    est = _quiet_fit(BayesianRESCAL(2, likelihood="bernoulli", method="gibbs", n_draws=100,
                                    n_warmup=50, n_init=2, evidence=None, random_state=0), X)
    assert est.draws_[0].shape == (2, 100, 8, 2)
    np.testing.assert_array_equal(est.draws_[1], est.draws_[0])
    np.testing.assert_array_equal(est.factors_[1], est.factors_[0])
    assert est.factors_[2].shape == (2, 2, 3)
    entries = np.argwhere(np.ones(X.shape))
    predicted = est.predict_entries(entries)
    assert np.all((predicted > 0) & (predicted < 1))
    np.testing.assert_array_equal(predicted, pickle.loads(pickle.dumps(est)).predict_entries(entries))
    refit = _quiet_fit(clone(est), X)
    np.testing.assert_array_equal(refit.log_likelihoods_, est.log_likelihoods_)
    with pytest.raises(ValueError, match="evidence=None"):
        est.score(X)


def load_small_relations():
    return _rescal_data(np.random.default_rng(11), 8, 3, 2, "bernoulli", scale=0.8)


def test_chains_are_aligned_with_one_permutation_for_both_entity_axes():
    """A chain that is another relabelled (A's columns and both axes of G
    permuted alike) is mapped back onto it exactly, every position with the
    same permutation."""
    rng = np.random.default_rng(12)
    model = Model.parse("ia,jb,abk->ijk").bind((6, 6, 2), {"a": 3, "b": 3}, {})
    entity, core = rng.gamma(1.0, size=(6, 3)), rng.gamma(1.0, size=(3, 3, 2))
    order = [2, 0, 1]
    relabelled = (entity[:, order], entity[:, order], core[order][:, order])

    def chain(factors):
        return ChainResult(factors, factors, (None,) * 3, np.zeros(1), factors, 0.0)

    _, aligned = align_labels([chain((entity, entity, core)), chain(relabelled)], model,
                              (0, 1, 2), tied=[("a", "b")])
    for back, original in zip(aligned.mean, (entity, entity, core)):
        np.testing.assert_array_equal(back, original)


@pytest.mark.slow(minutes=0.5)
@pytest.mark.parametrize("likelihood", ["poisson", "bernoulli"])
@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_geweke_joint_distribution(likelihood, method):
    """Geweke (2004), as for the CP sampler (test_gibbs.py): prior draws of
    (A, G) with data, against a chain that alternates a sweep given X with a
    fresh X given (A, G). Each statistic's means agree within 4.5 standard
    errors (batch means for the chain); with 9 statistics a correct sampler
    fails with probability below 1e-4."""
    rng = np.random.default_rng(2024)
    n, n_relations, rank = 3, 2, 2
    model = Model.parse("ia,jb,abk->ijk").bind((n, n, n_relations), {"a": rank, "b": rank}, {})
    priors = gamma_priors(model, 2.0, 1.5)
    off = ~np.eye(n, dtype=bool)

    def prior_draw():
        return (rng.gamma(2.0, 1 / 1.5, size=(n, rank)),
                rng.gamma(2.0, 1 / 1.5, size=(rank, rank, n_relations)))

    def simulate(entity, core):
        counts = rng.poisson(np.einsum("ia,jb,abk->ijk", entity, entity, core)).astype(float)
        return counts if likelihood == "poisson" else (counts > 0).astype(float)

    def statistics(entity, core, X):
        x = X[off]
        rate = np.einsum("ia,jb,abk->ijk", entity, entity, core)[off]
        return [entity.sum(), (entity**2).sum(), entity[0].sum(), core.sum(), (core**2).sum(),
                core[0, 1].sum(), x.sum(), (x * rate).sum(), x[0, 0]]

    draws = 12000
    marginal = []
    for _ in range(draws):
        entity, core = prior_draw()
        marginal.append(statistics(entity, core, simulate(entity, core)))
    marginal = np.array(marginal)
    entity, core = prior_draw()
    X = simulate(entity, core)
    state = rescal_gibbs.RescalGibbsState((entity, entity, core))
    successive = []
    for _ in range(draws):
        data = relational.relational_data(as_observed_tensor(X), likelihood)
        state, _ = rescal_gibbs.step(rng, state, data, priors, method)
        entity, core = state.factors[0], state.factors[2]
        X = simulate(entity, core)
        successive.append(statistics(entity, core, X))
    successive = np.array(successive)
    batches = successive.reshape(50, -1, successive.shape[1]).mean(axis=1)
    chain_se = batches.std(axis=0, ddof=1) / np.sqrt(50)
    se = np.sqrt(marginal.var(axis=0, ddof=1) / draws + chain_se**2)
    z = (marginal.mean(axis=0) - successive.mean(axis=0)) / se
    assert np.all(np.abs(z) < 4.5), np.round(z, 2)


def test_sampler_rejects_what_it_cannot_estimate():
    with pytest.raises(ValueError, match="needs method='vb'"):
        BayesianRESCAL(2, method="gibbs", evidence="vb").fit(BINARY)
    with pytest.raises(ValueError, match="evidence"):
        BayesianRESCAL(2, method="gibbs", evidence="sti").fit(BINARY)
