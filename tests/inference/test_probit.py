"""The probit link of the Gaussian family (inference.gaussian.links.ProbitLink)
and GibbsNTF(likelihood="probit"): the latent draws, the binary
log-likelihood, Chib's evidence against a prior Monte Carlo reference, the
posterior predictive probabilities, and the estimator's contract on binary data."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats as scipy_stats
from scipy.special import log_ndtr, logsumexp, ndtr
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_pltf import GibbsNTF
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.evidence._gaussian_chib import gaussian_chib_log_evidence
from sklearn_pltf.inference import gaussian
from sklearn_pltf.inference.gaussian import _probit_kernels

SIGNED_ARD = gaussian.GaussianPriors(nonnegative=False, ard=True)


def _binary(shape, rank, seed=0):
    """0/1 data from the probit model with standard normal factors."""
    rng = np.random.default_rng(seed)
    factors = [rng.standard_normal((size, rank)) for size in shape]
    return (gaussian.cp_dense(factors) + rng.standard_normal(shape) > 0).astype(float)


def _prior_monte_carlo(X, mask, rank, priors, n_draws, seed, chunk=100_000):
    """log p(X) = log E_prior[Π Φ(±x̂)] over prior draws of the signed ARD
    factors, with the relative standard error of the mean."""
    rng = np.random.default_rng(seed)
    signs = np.where(X > 0, 1.0, -1.0)[mask]
    logs = []
    for _ in range(n_draws // chunk):
        v = priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, size=(chunk, 1, rank))
        factors = [rng.standard_normal((chunk, size, rank)) * np.sqrt(v) for size in X.shape]
        xhat = np.einsum("nir,njr,nkr->nijk", *factors)
        logs.append(np.sum(log_ndtr(signs * xhat[:, mask]), axis=1))
    logs = np.concatenate(logs)
    weights = np.exp(logs - logs.max())
    return logsumexp(logs) - np.log(logs.size), weights.std() / weights.mean() / np.sqrt(logs.size)


@pytest.mark.parametrize("mean", [-40.0, -6.0, -0.81, -0.8, 0.0, 2.5])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_latent_draws_are_the_truncated_gaussian(mean, sign):
    # At a one (sign +1) z ~ N(x̂, 1) on [0, ∞), at a zero on (-∞, 0]: both
    # sides of the kernel's switch from the body's rejection to the tail's
    # (-0.8), deep tails included. Kolmogorov–Smirnov on 20,000 draws.
    xhat = np.full(20000, sign * mean)
    draws = _probit_kernels.draw_latent(np.random.default_rng(0), xhat, np.full(xhat.size, sign),
                                        np.empty(xhat.size))
    assert np.all(sign * draws >= 0)
    reference = scipy_stats.truncnorm(-mean, np.inf, loc=mean)
    assert scipy_stats.kstest(sign * draws, reference.cdf).pvalue > 1e-3


def test_missing_entries_draw_the_untruncated_gaussian():
    xhat = np.full(20000, 0.7)
    draws = _probit_kernels.draw_latent(np.random.default_rng(0), xhat, np.zeros(xhat.size),
                                        np.empty(xhat.size))
    assert scipy_stats.kstest(draws - 0.7, "norm").pvalue > 1e-3


def test_binary_log_likelihood_matches_scipy():
    x = np.concatenate([np.linspace(-60, 12, 2001), [-30.0, -29.999, -1e3]])
    kernel = np.array([_probit_kernels.binary_log_likelihood(np.array([v]), np.ones(1)) for v in x])
    np.testing.assert_allclose(kernel, log_ndtr(x), rtol=1e-10)
    # Missing entries (sign 0) add nothing; a zero adds log Φ(-x̂).
    assert _probit_kernels.binary_log_likelihood(np.array([3.0, 0.4]), np.array([0.0, -1.0])) \
        == pytest.approx(log_ndtr(-0.4), rel=1e-12)


def test_the_same_random_state_gives_the_same_latent_draws():
    xhat = np.random.default_rng(1).normal(size=500)
    signs = np.sign(np.random.default_rng(2).normal(size=500))
    first, second = (_probit_kernels.draw_latent(np.random.default_rng(7), xhat, signs,
                                                 np.empty(500)) for _ in range(2))
    np.testing.assert_array_equal(first, second)


@pytest.mark.slow(minutes=0.2)
def test_probit_chib_evidence_matches_a_prior_monte_carlo_reference():
    # Chib's identity with the latent Gaussian drawn in every sweep of every
    # clamped run; the likelihood ordinate is the exact Π Φ(±x̂*). The
    # reference averages the likelihood over 10⁶ prior draws.
    X = _binary((3, 3, 2), 1)
    mask = np.ones(X.shape, dtype=bool)
    mask[0, 0, 0] = False
    reference, relative_error = _prior_monte_carlo(X, mask, 1, SIGNED_ARD, 1_000_000, seed=1)
    assert relative_error < 0.01
    link = gaussian.ProbitLink(as_observed_tensor(X, mask))
    estimate = gaussian_chib_log_evidence(np.random.default_rng(0), link, 1, SIGNED_ARD,
                                          n_draws=2000, n_warmup=300)
    assert estimate.standard_error < 0.15
    assert abs(estimate.log_evidence - reference) < 0.25
    # A probability of binary data.
    assert estimate.log_evidence < 0


def test_predict_entries_is_the_posterior_predictive_probability():
    X = _binary((8, 6, 5), 2)
    est = GibbsNTF(3, likelihood="probit", nonnegative=False, ard=True, evidence=None,
                   n_warmup=50, n_draws=40, random_state=0).fit(X)
    entries = np.array([[0, 0, 0], [3, 2, 1], [7, 5, 4]])
    draws = [[d[0, k] for d in est.draws_] for k in range(40)]
    expected = np.mean([ndtr(gaussian.cp_dense(f)[tuple(entries.T)]) for f in draws], axis=0)
    np.testing.assert_allclose(est.predict_entries(entries), expected, rtol=1e-12)
    assert est.noise_variance_ == 1.0
    # Without draws: Φ of the posterior-mean factors' X̂.
    plug_in = clone(est).set_params(keep_draws=False).fit(X)
    np.testing.assert_allclose(plug_in.predict_entries(entries),
                               ndtr(gaussian.cp_dense(plug_in.factors_)[tuple(entries.T)]))


def test_probit_log_likelihoods_are_probabilities_of_the_binary_data():
    X = _binary((8, 6, 5), 2)
    est = GibbsNTF(2, likelihood="probit", nonnegative=False, evidence="chib", n_warmup=30,
                   n_draws=30, random_state=0).fit(X)
    assert np.all(est.log_likelihoods_ < 0)
    assert est.log_likelihoods_[0, -1] > X.size * np.log(0.5)  # better than a coin
    assert np.isfinite(est.log_evidence_) and est.log_evidence_ < 0


def test_dense_and_sparse_binary_input_give_the_same_fit():
    X = _binary((8, 6, 5), 2)
    mask = np.random.default_rng(3).uniform(size=X.shape) > 0.2
    params = dict(likelihood="probit", nonnegative=False, evidence=None, n_warmup=20,
                  n_draws=20, random_state=0)
    dense = GibbsNTF(2, **params).fit(X, mask=mask)
    import sparse
    sparse_fit = GibbsNTF(2, **params).fit(sparse.COO.from_numpy(X), mask=mask)
    for a, b in zip(dense.factors_, sparse_fit.factors_):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    matrix = GibbsNTF(2, **params).fit(sp.csr_matrix(X[:, :, 0]))
    np.testing.assert_allclose(matrix.factors_[0],
                               GibbsNTF(2, **params).fit(X[:, :, 0]).factors_[0], rtol=1e-12)


def test_transform_score_pickle_and_clone_on_binary_data():
    X = _binary((10, 6, 5), 2)
    est = GibbsNTF(2, likelihood="probit", nonnegative=False, evidence=None, n_warmup=30,
                   n_draws=30, random_state=0).fit(X)
    W = est.transform(X)
    # Each sample's fold-in reads its own data: the order of the rows does not matter.
    np.testing.assert_allclose(est.transform(X[::-1]), W[::-1], rtol=1e-6, atol=1e-9)
    score = est.score(X[:4])
    assert np.isfinite(score) and score < 0
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.transform(X), W)
    refit = clone(est).fit(X)
    for a, b in zip(refit.factors_, est.factors_):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("X, params, message", [
    (np.full((4, 3), 2.0), {}, "binary data"),
    (np.full((4, 3), 0.5), {}, "binary data"),
    (-np.ones((4, 3)), {}, "Negative values in data: .*binary data.*X holds -1"),
    (np.ones((4, 3)), {"method": "hmc"}, "cannot sample likelihood='probit'"),
    (np.ones((4, 3)), {"evidence": "ais"}, "use evidence='chib'"),
])
def test_the_probit_likelihood_refuses_what_it_cannot_model(X, params, message):
    est = GibbsNTF(2, likelihood="probit", n_warmup=2, n_draws=2, random_state=0,
                   **params)
    before = dict(vars(est))
    with pytest.raises(ValueError, match=message):
        est.fit(X)
    assert vars(est) == before


@pytest.mark.slow(minutes=0.15)
def test_a_grid_search_chooses_between_bernoulli_poisson_rescal_and_probit_cp_by_the_evidence():
    # Both evidences are log probabilities of the same binary entries (the
    # diagonal missing for both), so score, the log evidence, ranks them:
    # a one-step Pipeline switches the estimator, the mask goes to fit.
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    from sklearn_pltf import BayesianRESCAL
    from sklearn_pltf.datasets import off_diagonal_mask
    from sklearn_pltf.model_selection import FullDataSplit

    rng = np.random.default_rng(0)
    X = (rng.uniform(size=(9, 9, 2)) < 0.3).astype(float)
    X[np.arange(9), np.arange(9)] = 0.0
    mask = off_diagonal_mask(X.shape)
    candidates = [BayesianRESCAL(2, likelihood="bernoulli", random_state=0),
                  GibbsNTF(2, likelihood="probit", nonnegative=False, evidence="chib",
                           n_warmup=30, n_draws=60, random_state=0)]
    search = GridSearchCV(Pipeline([("model", candidates[0])]), {"model": candidates},
                          cv=FullDataSplit())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # short chains, few sweeps
        search.fit(X, model__mask=mask)
        evidences = [clone(c).fit(X, mask=mask).log_evidence_ for c in candidates]
    assert all(np.isfinite(e) and e < 0 for e in evidences)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], evidences)
    assert search.best_index_ == int(np.argmax(evidences))



def test_the_arviz_export_holds_each_entry_s_probit_log_likelihood():
    pytest.importorskip("arviz")
    X = _binary((6, 5, 4), 2)
    est = GibbsNTF(2, likelihood="probit", nonnegative=False, evidence=None, n_warmup=10,
                   n_draws=5, random_state=0).fit(X)
    idata = est.to_inference_data(X)
    pointwise = idata.log_likelihood["x"].values  # (chain, draw, entry)
    entries = idata.constant_data["entry_index"].values
    for k in range(5):
        xhat = gaussian.cp_dense([d[0, k] for d in est.draws_])[tuple(entries.T)]
        signs = np.where(X[tuple(entries.T)] > 0, 1.0, -1.0)
        np.testing.assert_allclose(pointwise[0, k], log_ndtr(signs * xhat), rtol=1e-12)
    # Summed over the entries, each draw's is the chain's log-likelihood there.
    np.testing.assert_allclose(pointwise.sum(axis=-1)[0],
                               est.log_likelihoods_[0, est.n_warmup_:], rtol=1e-9)


@pytest.mark.usefixtures("kernels_in_parallel_at_any_size")
def test_the_compiled_log_likelihood_and_cdf_are_scipy_s_at_any_thread_count():
    """Blocks of the log-likelihood summed in order: one thread or all give
    the same sum, scipy's log Φ's to rounding; Φ is scipy's ndtr's."""
    import numba
    from scipy.special import log_ndtr, ndtr

    from sklearn_pltf.inference.gaussian import _probit_kernels

    rng = np.random.default_rng(0)
    xhat = rng.normal(0.0, 4.0, 3 * _probit_kernels._BLOCK + 17)
    xhat[:4] = [-45.0, -8.0, 8.0, 40.0]  # both tails
    signs = rng.choice([-1.0, 0.0, 1.0], xhat.size)
    previous = numba.get_num_threads()
    try:
        totals = []
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            totals.append(_probit_kernels.binary_log_likelihood(xhat, signs))
    finally:
        numba.set_num_threads(previous)
    assert totals[0] == totals[1]
    observed = signs != 0
    assert totals[0] == pytest.approx(np.sum(log_ndtr(signs[observed] * xhat[observed])),
                                      rel=1e-12)
    cdf = _probit_kernels.normal_cdf(xhat.reshape(-1, 1)).ravel()
    np.testing.assert_allclose(cdf, ndtr(xhat), rtol=1e-13, atol=0)
    # The log-likelihood's pass writes the same Φ when asked, with the same sum.
    written = np.full(xhat.size, np.nan)
    assert _probit_kernels.binary_log_likelihood(xhat, signs, written) == totals[0]
    np.testing.assert_array_equal(written, cdf)
