"""BayesianRESCAL: one entity factor on both entity axes (inference/rescal.py)."""

import pickle
import warnings

import numpy as np
import pytest
import sparse
from sklearn.base import clone
from _helpers import BINARY, COUNTS, _exact_rank_one, _rescal_data

from sklearn_pltf import BayesianRESCAL, PoissonCP
from sklearn_pltf.datasets import load_nations
from sklearn_pltf.inference._predictive import _posterior_draws
from sklearn_pltf.model_selection import FullDataSplit


def test_exact_oracle_is_a_distribution_over_binary_matrices():
    total = sum(np.exp(_exact_rank_one(np.array([[0, u], [v, 0]], float), "bernoulli", n_grid=400))
                for u in (0, 1) for v in (0, 1))
    assert total == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("likelihood, X", [("bernoulli", BINARY), ("poisson", COUNTS)])
@pytest.mark.slow(minutes=0.1)
def test_bound_lies_below_the_exact_evidence(likelihood, X):
    """The VB bound of the best of five starts is a lower bound on log p(X):
    below the exact value, and (a weak check that it bounds the right
    quantity) within 3 nats of it on these six-entry matrices."""
    exact = _exact_rank_one(X, likelihood)
    bound = max(BayesianRESCAL(1, likelihood=likelihood, tol=1e-12, max_iter=20_000,
                               random_state=seed).fit(X).log_evidence_ for seed in range(5))
    assert bound <= exact
    assert bound > exact - 3.0


@pytest.mark.parametrize("likelihood", ["poisson", "bernoulli"])
@pytest.mark.parametrize("method", ["vb", "em"])
def test_objective_never_decreases(likelihood, method):
    rng = np.random.default_rng(0)
    X = _rescal_data(rng, 15, 4, 3, likelihood, scale=0.7)
    X[rng.random(X.shape) < 0.1] = np.nan  # missing entries
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter may stop it early
        est = BayesianRESCAL(4, likelihood=likelihood, method=method, max_iter=200,
                             random_state=0).fit(X)
    objectives = est.lower_bounds_
    # Rounding of sums of about 1e3 nats: 1e-9 relative.
    assert np.all(np.diff(objectives) >= -1e-9 * np.abs(objectives[1:]))
    assert objectives[-1] > objectives[0] + 1.0


@pytest.mark.parametrize("likelihood", ["poisson", "bernoulli"])
def test_dense_and_sparse_inputs_give_the_same_fit(likelihood):
    rng = np.random.default_rng(1)
    X = _rescal_data(rng, 12, 3, 2, likelihood)
    missing = rng.random(X.shape) < 0.15
    dense = np.where(missing, np.nan, X)
    coo = sparse.COO.from_numpy(np.where(missing, 0.0, X))
    settings = dict(likelihood=likelihood, max_iter=50, tol=0, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_dense = BayesianRESCAL(3, **settings).fit(dense)
        from_sparse = BayesianRESCAL(3, **settings).fit(coo, mask=~missing)
    np.testing.assert_allclose(from_sparse.lower_bounds_, from_dense.lower_bounds_, rtol=1e-8)
    for a, b in zip(from_sparse.factors_, from_dense.factors_):
        np.testing.assert_allclose(a, b, rtol=1e-8)


def test_diagonal_entries_are_not_modelled():
    rng = np.random.default_rng(2)
    X = _rescal_data(rng, 10, 3, 2, "poisson")
    with_diagonal = X.copy()
    with_diagonal[np.arange(10), np.arange(10)] = 7.0
    first = BayesianRESCAL(2, random_state=0).fit(X)
    second = BayesianRESCAL(2, random_state=0).fit(with_diagonal)
    assert second.log_evidence_ == pytest.approx(first.log_evidence_, rel=1e-12)
    np.testing.assert_allclose(second.factors_[0], first.factors_[0], rtol=1e-12)


def test_single_relation_matrix_is_one_slice_of_a_tensor():
    rng = np.random.default_rng(4)
    X = _rescal_data(rng, 12, 1, 2, "bernoulli")
    matrix = BayesianRESCAL(2, likelihood="bernoulli", random_state=0).fit(X[:, :, 0])
    tensor = BayesianRESCAL(2, likelihood="bernoulli", random_state=0).fit(X)
    assert matrix.model_.string == "ia,jb,ab->ij"
    assert matrix.factors_[2].shape == (2, 2)
    assert matrix.log_evidence_ == pytest.approx(tensor.log_evidence_, rel=1e-12)
    np.testing.assert_allclose(matrix.factors_[2], tensor.factors_[2][:, :, 0], rtol=1e-12)
    entries = np.argwhere(np.ones((12, 12)))
    np.testing.assert_allclose(matrix.predict_entries(entries),
                               tensor.predict_entries(np.c_[entries, np.zeros(len(entries), int)]))


def test_evidence_prefers_rescal_on_rescal_data():
    """Binary relations drawn from a rank-3 RESCAL model (27% ones), priors
    at the generating ones: RESCAL's best evidence over ranks 2–3 beats
    non-negative CP's over ranks 2–8."""
    X = _rescal_data(np.random.default_rng(5), 30, 4, 3, "bernoulli", scale=0.35)
    settings = dict(likelihood="bernoulli", prior_rate=1 / 0.35, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rescal = max(BayesianRESCAL(r, n_init=3, **settings).fit(X).score(X) for r in (2, 3))
        cp = max(PoissonCP(r, **settings).fit(X).score(X) for r in (2, 4, 8))
    assert rescal > cp


def test_grid_search_chooses_the_rank_by_the_evidence():
    from sklearn.model_selection import GridSearchCV

    X = load_nations().data.astype(float)
    search = GridSearchCV(BayesianRESCAL(likelihood="bernoulli", random_state=0),
                          {"n_components": [1, 3]}, cv=FullDataSplit()).fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.argmax(scores) == search.best_index_
    assert search.best_estimator_.log_evidence_ == pytest.approx(scores.max())


def test_predictive_draws_share_the_tied_factor():
    est = BayesianRESCAL(2, likelihood="bernoulli", random_state=0).fit(BINARY)
    draws = list(_posterior_draws(np.random.default_rng(0), est.model_, est._state, None, {1: 0}))
    assert all(d[1] is d[0] for d in draws)
    assert not np.allclose(draws[0][0], draws[1][0])  # a fresh draw each time


def test_link_probabilities_are_reproducible_probabilities():
    X = load_nations().data.astype(float)
    est = BayesianRESCAL(3, likelihood="bernoulli", tol=1e-4, random_state=0).fit(X)
    entries = np.argwhere(np.ones(X.shape))[::7]
    first = est.predict_entries(entries)
    assert np.all((first > 0) & (first < 1))
    np.testing.assert_array_equal(first, est.predict_entries(entries))
    np.testing.assert_array_equal(first, pickle.loads(pickle.dumps(est)).predict_entries(entries))
    refit = clone(est).fit(X)
    np.testing.assert_array_equal(first, refit.predict_entries(entries))


def test_transform_and_score_take_the_training_data_only():
    X = _rescal_data(np.random.default_rng(6), 8, 2, 2, "poisson")
    est = BayesianRESCAL(2, random_state=0).fit(X)
    np.testing.assert_array_equal(est.transform(X), est.factors_[0])
    assert est.score(X) == est.log_evidence_
    assert est.fit_transform(X).shape == (8, 2)
    other = X.copy()
    other[0, 1, 0] += 1
    with pytest.raises(ValueError, match="training data only"):
        est.transform(other)
    with pytest.raises(ValueError, match="training data only"):
        est.score(other)
    np.testing.assert_allclose(est.inverse_transform(est.transform(X)),
                               np.einsum("ia,jb,abk->ijk", *est.factors_))


def test_em_scores_its_log_joint_and_has_no_evidence():
    X = _rescal_data(np.random.default_rng(7), 8, 2, 2, "poisson")
    est = BayesianRESCAL(2, method="em", random_state=0).fit(X)
    assert not hasattr(est, "log_evidence_")
    assert est.score(X) == est.lower_bound_
    with pytest.raises(ValueError, match="prior_shape >= 1"):
        BayesianRESCAL(2, method="em", prior_shape=0.5).fit(X)


@pytest.mark.parametrize("X, message", [
    (np.ones((4, 5, 2)), "first two axes the same size"),
    (np.ones((4, 4, 2, 2)), "first two axes the same size"),
    (np.full((4, 4, 2), 2.0), "neither 0 nor 1"),
])
def test_bad_input_is_rejected_with_a_clear_error(X, message):
    with pytest.raises(ValueError, match=message):
        BayesianRESCAL(2, likelihood="bernoulli").fit(X)


def test_priors_per_factor_name_the_entity_factor_once():
    X = _rescal_data(np.random.default_rng(9), 8, 2, 2, "poisson")
    est = BayesianRESCAL(2, prior_shape={0: 0.5, 2: 2.0}, prior_rate={0: 1.0, 2: 3.0},
                         random_state=0).fit(X)
    priors = est._gamma_priors(est.model_)
    assert np.all(priors.shape[0] == 0.5) and np.all(priors.rate[2] == 3.0)
    with pytest.raises(ValueError, match="no entry for factor 2"):
        BayesianRESCAL(2, prior_shape={0: 0.5}).fit(X)


def test_ais_and_parallel_blocks_are_not_offered():
    with pytest.raises(ValueError, match="'evidence' parameter"):
        BayesianRESCAL(2, method="gibbs", evidence="ais").fit(BINARY)
    with pytest.raises(TypeError, match="n_blocks"):
        BayesianRESCAL(2, method="sgld", n_blocks=2)


def test_scipy_sparse_adjacency_matrix_is_fitted_as_given():
    """A square scipy.sparse matrix (one relation) gives the dense fit, and
    neither input is changed."""
    import scipy.sparse

    X = _rescal_data(np.random.default_rng(8), 20, 1, 2, "bernoulli")[:, :, 0]
    csr = scipy.sparse.csr_matrix(X)
    before = (X.copy(), csr.copy())
    from_dense = BayesianRESCAL(2, likelihood="bernoulli", random_state=0).fit(X)
    from_csr = BayesianRESCAL(2, likelihood="bernoulli", random_state=0).fit(csr)
    assert from_csr.n_features_in_ == 20
    assert from_csr.log_evidence_ == pytest.approx(from_dense.log_evidence_, rel=1e-10)
    np.testing.assert_array_equal(X, before[0])
    assert (csr != before[1]).nnz == 0


def test_vb_starts_from_the_mode_first_and_then_at_random():
    """init="auto" runs its first initialisation from EM's mode (as "mode")
    and keeps the best bound over the others (at random)."""
    X = _rescal_data(np.random.default_rng(10), 20, 3, 3, "bernoulli", scale=0.5)
    settings = dict(likelihood="bernoulli", prior_shape=0.3, random_state=0)
    mode = BayesianRESCAL(4, init="mode", **settings).fit(X)
    auto = BayesianRESCAL(4, **settings).fit(X)
    random = BayesianRESCAL(4, init="random", **settings).fit(X)
    assert auto.log_evidence_ == mode.log_evidence_
    assert random.log_evidence_ != mode.log_evidence_
    several = BayesianRESCAL(4, n_init=3, **settings).fit(X)
    assert several.log_evidence_ >= mode.log_evidence_
