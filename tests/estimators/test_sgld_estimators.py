"""method="sgld" and evidence="sti" through the estimators."""

import pickle

import numpy as np
import pytest
import sparse
from sklearn.base import clone

from sklearn_pltf import BayesianNMF, PoissonCP
from sklearn_pltf.evidence import exact_log_evidence

SHORT = dict(n_temperatures=8, steps_per_temperature=100, n_warmup=100, n_draws=200)


@pytest.fixture
def counts():
    rng = np.random.default_rng(0)
    return rng.poisson(rng.gamma(1.0, 1.0, (25, 2)) @ rng.gamma(1.0, 1.0, (2, 15))).astype(float)


def test_sgld_fit_has_evidence_draws_and_reproduces(counts):
    est = BayesianNMF(2, method="sgld", random_state=0, **SHORT).fit(counts)
    assert np.isfinite(est.log_evidence_) and est.log_evidence_error_ > 0
    assert est.score(counts) == est.log_evidence_
    assert est.draws_[0].shape == (1, 200, 25, 2)
    np.testing.assert_allclose(est.factors_[0], est.draws_[0].mean(axis=(0, 1)), rtol=1e-12)
    # Every step's estimate, warm-up included, as a Gibbs trace holds every sweep.
    assert est.log_likelihoods_.shape == (1, est.n_iter_) == (1, 300)
    assert np.all(np.isfinite(est.log_likelihoods_))
    assert est.transform(counts[:4]).shape == (4, 2)
    again = clone(est).fit(counts)
    assert again.log_evidence_ == est.log_evidence_
    np.testing.assert_array_equal(again.factors_[1], est.factors_[1])
    restored = pickle.loads(pickle.dumps(est))
    assert restored.score(counts) == est.score(counts)
    idata = est.to_inference_data()
    assert idata.sample_stats["total_log_likelihood"].shape == (1, 200)


def test_sgld_without_evidence(counts):
    est = BayesianNMF(2, method="sgld", evidence=None, random_state=0, keep_draws=False,
                      n_warmup=100, n_draws=100).fit(counts)
    assert not hasattr(est, "log_evidence_") and not hasattr(est, "draws_")
    with pytest.raises(ValueError, match="no evidence of its training data"):
        est.score(counts)
    # the posterior mean reconstructs the data's scale
    xhat = est.factors_[0] @ est.factors_[1]
    assert xhat.sum() == pytest.approx(counts.sum(), rel=0.1)


def test_sgld_accepts_non_integer_values(counts):
    # The Poisson likelihood's gradient needs no whole counts (unlike Gibbs).
    est = BayesianNMF(2, method="sgld", random_state=0, **SHORT).fit(counts + 0.5)
    assert np.isfinite(est.log_evidence_)


def test_parallel_block_minibatches_on_a_sparse_tensor():
    rng = np.random.default_rng(1)
    X = sparse.COO.from_numpy(rng.poisson(0.4, size=(20, 15, 10)))
    est = PoissonCP(2, method="sgld", n_blocks=3, random_state=0, **SHORT).fit(X)
    assert np.isfinite(est.log_evidence_)
    assert [f.shape for f in est.factors_] == [(20, 2), (15, 2), (10, 2)]


@pytest.mark.slow(minutes=0.25)
def test_sti_through_the_estimator_matches_the_exact_evidence():
    """Default STI settings on a matrix small enough to enumerate: within
    1 nat of the exact log evidence, and within 3 of its standard errors
    plus 0.2 nats (the ladder's quadrature error)."""
    X = np.array([[2, 0, 1], [0, 3, 1]], dtype=float)
    exact = exact_log_evidence(X, 2)
    est = BayesianNMF(2, method="sgld", random_state=0).fit(X)
    assert abs(est.log_evidence_ - exact) < 1.0
    assert abs(est.log_evidence_ - exact) < 3 * est.log_evidence_error_ + 0.2


def test_chains_evidence_error_is_at_least_their_spread():
    from sklearn_pltf.evidence._posterior import combine_chain_estimates

    # Chains that agree: their own errors, combined.
    value, error = combine_chain_estimates([-100.0, -100.1, -99.9], [1.0, 1.0, 1.0])
    assert value == pytest.approx(-100.0) and error == pytest.approx(np.sqrt(3) / 3)
    # Chains whose spread exceeds their errors: the spread.
    value, error = combine_chain_estimates([-100.0, -106.0, -94.0], [1.0, 1.0, 1.0])
    assert error == pytest.approx(6.0 / np.sqrt(3))
    # One chain: its own error.
    assert combine_chain_estimates([-5.0], [0.3]) == (-5.0, pytest.approx(0.3))


def test_sti_chains_that_scatter_beyond_their_errors_warn():
    """Five steps per temperature: the chains have not settled, and their
    estimates scatter many times their own errors (20x measured here)."""
    import warnings

    from sklearn_pltf.evidence._posterior import warn_if_chains_disagree

    rng = np.random.default_rng(0)
    X = rng.poisson(rng.gamma(1.0, 3.0, (40, 3)) @ rng.gamma(1.0, 1.0, (3, 30))).astype(float)
    with pytest.warns(RuntimeWarning, match="chains' estimates scatter.*steps_per_temperature"):
        BayesianNMF(3, method="sgld", n_init=3, n_temperatures=10, steps_per_temperature=5,
                    n_warmup=20, n_draws=20, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warn_if_chains_disagree([-10.0, -11.0, -10.5], [0.5, 0.5, 0.5])  # spread 1 x errors
        warn_if_chains_disagree([-10.0], [0.1])  # one chain: nothing to compare
    with pytest.warns(RuntimeWarning):
        warn_if_chains_disagree([-10.0, -14.0, -12.0], [0.5, 0.5, 0.5])  # spread 4 x errors


def test_a_diverging_sgld_ladder_raises_and_says_to_lower_the_step(counts):
    """Steps of 50 posterior widths overflow: the self-tuned ladder stops
    spending its budget at the first non-finite log-likelihood, and the fit
    raises instead of returning a number."""
    est = BayesianNMF(2, method="sgld", n_temperatures=5, n_warmup=20, step_size=50.0,
                      random_state=0)
    with pytest.raises(FloatingPointError, match="lower step_size"), np.errstate(all="ignore"):
        est.fit(counts)
    assert not hasattr(est, "log_evidence_")
