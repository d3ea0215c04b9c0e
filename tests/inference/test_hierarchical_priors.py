"""Hierarchical prior rates (``prior_rate="hierarchical"``) and learned prior
shapes (``prior_shape="auto"``), learned by the evidence inside VB.

What must hold: the bound with them never decreases; it stays below the
evidence of the model at the learned hyperparameters (exactly computed for
shapes; for hierarchical rates, integrated over the entities' rates by
Monte Carlo); dense and sparse data give the same fit; new samples start
at the hyperprior's mean and have their own rates inferred; only VB learns
them."""

import warnings

import numpy as np
import pytest
import sparse
from scipy.special import gammaln, logsumexp

from sklearn_pltf import PLTF, BayesianNMF, BayesianRESCAL, PoissonCP, TuckerVB
from sklearn_pltf.datasets import make_poisson_cp, make_poisson_nmf
from sklearn_pltf.evidence import exact_log_evidence
from sklearn_pltf.estimators import _one_tensor as one_tensor
from sklearn_pltf.estimators._one_tensor import with_n_samples
from sklearn_pltf.inference._hyperparameters import HYPERPRIOR_SHAPE

TINY = np.array([[2, 0, 1], [0, 3, 1], [1, 0, 2]])


def _gains(estimator):
    bounds = np.asarray(estimator.lower_bounds_)
    return np.diff(bounds) / np.abs(bounds[1:])


LEARNED = [
    dict(prior_rate="hierarchical"),
    dict(prior_shape="auto"),
    dict(prior_rate="hierarchical", prior_shape="auto"),
    dict(prior_rate="auto", prior_shape="auto"),
    dict(prior_rate="hierarchical", ard=True),
    dict(prior_rate="hierarchical", prior_shape="auto", ard=True),
]
MODELS = {
    "nmf": lambda: BayesianNMF(4),
    "cp": lambda: PoissonCP(4),
    "cp-missing": lambda: PoissonCP(4),
    "cp-binary": lambda: PoissonCP(4, likelihood="bernoulli"),
    "cp-sparse": lambda: PLTF("ir,jr,kr->ijk", 4),
    "tucker": lambda: TuckerVB((2, 2, 2), max_iter=150),
    "relations": lambda: BayesianRESCAL(3, likelihood="bernoulli"),
}
#: Run in the default tier (every other pair in the slow one): each kind of
#: model and data once, each learned hyperparameter at least once.
FAST = {("nmf", 0), ("cp-missing", 2), ("cp-sparse", 5), ("tucker", 1), ("relations", 5),
        ("cp-binary", 3), ("cp", 4)}


def _case(data, index):
    learned = LEARNED[index]
    marks = () if (data, index) in FAST else (pytest.mark.slow,)
    return pytest.param(data, learned, marks=marks,
                        id=data + "-" + "+".join(f"{k}={v}" for k, v in learned.items()))


@pytest.mark.parametrize("data, learned", [_case(data, index) for data in MODELS
                                           for index in range(len(LEARNED))])
def test_the_bound_with_learned_hyperparameters_never_decreases(data, learned):
    make = MODELS[data]
    if data == "nmf":
        X, _ = make_poisson_nmf(30, 20, 3, random_state=0)
    elif data == "relations":
        X = (make_poisson_cp((12, 12, 4), 2, random_state=1)[0] > 1).astype(float)
    else:
        X, _ = make_poisson_cp((12, 10, 8), 3, missing_fraction=0.3 if data == "cp-missing"
                               else 0.0, random_state=0)
    if data == "cp-binary":
        X = (X > 0).astype(float)
    if data == "cp-sparse":
        X = sparse.COO.from_numpy(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short Tucker run need not converge
        estimator = make().set_params(random_state=0, **learned).fit(X)
    assert np.all(_gains(estimator) >= -1e-12)
    assert np.isfinite(estimator.log_evidence_)
    assert estimator.lower_bounds_[-1] > estimator.lower_bounds_[0]


@pytest.mark.parametrize("prior_rate", [1.0, "auto"])
def test_the_bound_at_learned_shapes_stays_below_the_exact_evidence(prior_rate):
    estimator = BayesianNMF(2, prior_shape="auto", prior_rate=prior_rate, tol=1e-8,
                            max_iter=5000, random_state=0).fit(TINY)
    shapes = list(estimator.prior_shape_)
    rates = [float(r.flat[0]) for r in estimator.prior_rate_]
    for shape, fitted in zip(shapes, estimator._fitted_priors.shape):
        assert np.all(fitted == shape)  # one shape per factor
    assert shapes != [1.0, 1.0]  # learned, not the start
    exact = exact_log_evidence(TINY, 2, prior_shape=tuple(shapes), prior_rate=tuple(rates))
    assert estimator.log_evidence_ <= exact
    # At the learned shapes the bound is at its maximum in them: the exact
    # evidence at the start's shape 1 is no higher than the bound by more
    # than VB's gap there.
    fixed = BayesianNMF(2, prior_rate=prior_rate, tol=1e-8, max_iter=5000,
                        random_state=0).fit(TINY)
    assert estimator.log_evidence_ >= fixed.log_evidence_ - 1e-6


def _monte_carlo_hierarchical_evidence(X, shape, mu_rows, mu_columns, n_draws, seed):
    """log p(X) of rank-1 NMF with hierarchical rates, β_i ~ Gamma(c, c μ)
    per row and column, W_i ~ Gamma(a, a β_i) (and H alike), by sampling the
    prior: log-mean-exp of the Poisson likelihood, and its standard error."""
    rng = np.random.default_rng(seed)
    c = HYPERPRIOR_SHAPE
    n, m = X.shape
    logs = []
    for _ in range(n_draws // 200_000):
        size = 200_000
        beta = rng.gamma(c, 1 / (c * mu_rows), (size, n))
        gamma = rng.gamma(c, 1 / (c * mu_columns), (size, m))
        W = rng.gamma(shape, 1 / (shape * beta))
        H = rng.gamma(shape, 1 / (shape * gamma))
        rate = W[:, :, None] * H[:, None, :]
        loglik = np.sum(X * np.log(rate) - rate - gammaln(X + 1), axis=(1, 2))
        logs.append(loglik)
    logs = np.concatenate(logs)
    batches = logs.reshape(20, -1)
    per_batch = logsumexp(batches, axis=1) - np.log(batches.shape[1])
    return logsumexp(logs) - np.log(logs.size), per_batch.std(ddof=1) / np.sqrt(20)


def test_the_hierarchical_bound_stays_below_the_evidence_integrated_over_the_rates():
    X = np.array([[3, 0], [1, 2]])
    estimator = BayesianNMF(1, prior_rate="hierarchical", tol=1e-9, max_iter=5000,
                            random_state=0).fit(X)
    priors = estimator._fitted_priors
    # new_entity_rate = a / μ: the hyper-rate μ of each factor, learned.
    mu = [1.0 / float(np.mean(r)) for r in priors.new_entity_rate]
    log_evidence, error = _monte_carlo_hierarchical_evidence(X, 1.0, mu[0], mu[1],
                                                             2_000_000, seed=0)
    assert error < 0.02
    assert estimator.log_evidence_ <= log_evidence + 4 * error
    assert estimator.log_evidence_ >= log_evidence - 1.0  # a bound, not a wild one


def test_each_entity_has_its_own_rate_and_busy_entities_a_lower_one():
    rng = np.random.default_rng(0)
    activity = np.r_[np.full(10, 0.2), np.full(10, 5.0)]  # quiet and busy rows
    W = rng.gamma(1.0, activity[:, None], (20, 3))
    X = rng.poisson(W @ rng.gamma(1.0, 1.0, (3, 40)))
    estimator = BayesianNMF(3, prior_rate="hierarchical", random_state=0).fit(X)
    row_rates = estimator.prior_rate_[0][:, 0]
    assert np.all(estimator.prior_rate_[0] == row_rates[:, None])  # a rate per row
    assert np.median(row_rates[10:]) < np.median(row_rates[:10]) / 3


@pytest.mark.parametrize("learned", [dict(prior_rate="hierarchical"),
                                     dict(prior_rate="hierarchical", prior_shape="auto")])
def test_dense_and_sparse_data_give_the_same_hierarchical_fit(learned):
    X, _ = make_poisson_cp((12, 10, 8), 3, random_state=0)
    settings = dict(acceleration=None, max_iter=60, tol=0, random_state=0, **learned)
    dense = PoissonCP(3, **settings).fit(X)
    from_sparse = PoissonCP(3, **settings).fit(sparse.COO.from_numpy(X))
    np.testing.assert_allclose(from_sparse.lower_bounds_, dense.lower_bounds_, rtol=1e-10)


def test_new_samples_are_folded_in_at_the_hyperprior_mean():
    X, _ = make_poisson_nmf(30, 20, 3, random_state=0)
    estimator = BayesianNMF(3, prior_rate="hierarchical", random_state=0).fit(X)
    priors = estimator._fitted_priors
    sample_priors = one_tensor.sample_priors(estimator._fit_settings(), estimator._fitted(),
                                             with_n_samples(estimator.model_, 5), 0)
    np.testing.assert_allclose(sample_priors.rate[0], np.broadcast_to(
        priors.new_entity_rate[0][:1], (5, 3)))
    W = estimator.transform(X[:5])
    assert W.shape == (5, 3) and np.all(np.isfinite(W)) and np.all(W > 0)


def test_a_new_sample_s_rate_is_inferred_with_its_factor():
    """Rows of very different scales: folding the training rows in gives
    back their fitted factor (each row's q(β) inferred from its counts, the
    fit's hyper-rate held), a busy row at a lower rate than a quiet one, and
    the score of new rows is the bound at those rates."""
    from sklearn_pltf.inference import vb

    rng = np.random.default_rng(0)
    X, _ = make_poisson_nmf(60, 40, 3, random_state=0)
    X = rng.poisson(X * rng.gamma(1.0, 1.0, (60, 1)) * 3).astype(float)
    estimator = BayesianNMF(5, prior_rate="hierarchical", tol=1e-6, max_iter=5000,
                            random_state=0).fit(X)
    W = estimator.factors_[0]
    np.testing.assert_allclose(estimator.transform(X), W, atol=1e-3 * W.max())
    state, contractor, priors = one_tensor.fold_in_samples(
        estimator._fit_settings(), estimator._fitted(), _observed(X[:10]), estimator._state)
    rates = priors.rate[0][:, 0]
    busy, quiet = np.argmax(X[:10].sum(axis=1)), np.argmin(X[:10].sum(axis=1))
    assert rates[busy] < rates[quiet]
    assert estimator.score(X[:10]) == pytest.approx(vb.bound(state, contractor, priors),
                                                    rel=1e-12)


def _observed(X):
    from sklearn_pltf.engine._data import as_observed_tensor

    return as_observed_tensor(X)


@pytest.mark.parametrize("learned", [dict(prior_rate="hierarchical"), dict(prior_shape="auto")])
def test_only_vb_learns_hierarchical_rates_and_shapes(learned):
    X, _ = make_poisson_nmf(10, 8, 2, random_state=0)
    with pytest.raises(ValueError, match="method='vb'"):
        BayesianNMF(2, method="em", **learned).fit(X)


@pytest.mark.parametrize("learned", [dict(prior_rate="hierarchical"),
                                     dict(prior_rate="hierarchical", prior_shape="auto", ard=True),
                                     dict(prior_shape="auto")])
def test_the_returned_bound_is_the_bound_at_the_held_hyperparameters(learned):
    X, _ = make_poisson_nmf(30, 20, 4, random_state=0)
    estimator = BayesianNMF(4, random_state=0, **learned).fit(X)
    # Held at their maximum given the fitted q: no lower than the fit's last
    # objective, and the bound the estimator reports (no fold-in after it).
    last = estimator.lower_bounds_[-1]
    assert estimator.lower_bound_ >= last - 1e-9 * abs(last)
    assert estimator.log_evidence_ == estimator.lower_bound_
    if "prior_rate" in learned and not learned.get("ard"):
        # μ = (number of rows) / Σ E[β]: a new row's rate is the rows' mean rate
        np.testing.assert_allclose(estimator._fitted_priors.new_entity_rate[0][0],
                                   estimator.prior_rate_[0].mean(axis=0), rtol=1e-10)


def test_partial_fit_keeps_the_shapes_learned_on_the_first_batch():
    X, _ = make_poisson_nmf(60, 20, 3, random_state=0)
    estimator = BayesianNMF(3, prior_shape="auto", random_state=0).partial_fit(X[:30])
    first = estimator.prior_shape_
    assert first != (1.0, 1.0)
    estimator.partial_fit(X[30:])
    assert estimator.prior_shape_ == first
