"""The compound Poisson likelihood for non-negative reals: its density, the
latent jump count's mean and draws, and every fit that uses them."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate, stats
from scipy.special import gammaln, i0e, i1e, logsumexp
from sklearn.base import clone

from sklearn_pltf import BayesianNMF, BayesianRESCAL, CompoundPoisson, CoupledPLTF, PoissonCP
from sklearn_pltf.engine._elementwise import compound_ratio, ratio_and_log_sum
from sklearn_pltf.engine._kernels import (SERIES_LIMIT, SMALL_Z, compound_count_mean,
                                          compound_log_sum)
from sklearn_pltf.engine._likelihood import _small_normalisers
from sklearn_pltf.evidence import exact_log_evidence


def _draw(seed, shape=(30, 20), rank=3, jump_mean=0.5):
    """Compound Poisson data: Poisson(W H) jumps, each exponential of mean ``jump_mean``."""
    rng = np.random.default_rng(seed)
    rates = rng.gamma(1.0, 1.0, (shape[0], rank)) @ rng.gamma(1.0, 1.0, (rank, shape[1]))
    jumps = rng.poisson(rates)
    return np.where(jumps > 0, rng.gamma(np.maximum(jumps, 1), jump_mean), 0.0)


def test_the_jump_count_mean_and_normaliser_are_the_bessel_functions_on_every_branch():
    """E[N] = √z I₀(2√z) / I₁(2√z) and log S(z) = log(√z I₁(2√z)): the power
    series below z = 8, the Chebyshev interpolants up to 100 and the
    asymptotic expansion above agree with scipy's Bessel functions to a few
    rounding errors, at the branches' edges too."""
    edges = [SMALL_Z, np.nextafter(SMALL_Z, np.inf), np.nextafter(SERIES_LIMIT, 0), SERIES_LIMIT]
    z = np.concatenate([np.logspace(-300, -8, 30), np.logspace(-8, 12, 4001), edges,
                        np.linspace(SMALL_Z, SERIES_LIMIT, 2001)])
    root = 2.0 * np.sqrt(z)
    expected = np.sqrt(z) * i0e(root) / i1e(root)
    got = np.array([compound_count_mean(v) for v in z])
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    log_sum = 0.5 * np.log(z) + np.log(i1e(root)) + root
    got = np.array([compound_log_sum(v) for v in z])
    np.testing.assert_allclose(got, log_sum, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("scale", [0.5, 5.0, 60.0])
def test_the_whole_tensor_passes_equal_the_entry_by_entry_functions(scale):
    """The dense kernels (every entry's polynomial, then the larger z gathered
    block by block for the interpolant, the largest one by one) give each
    entry what the entry-by-entry functions give, whatever mix of branches a
    block holds; zeros of X give 0."""
    rng = np.random.default_rng(int(scale))
    n = 5000  # about ten blocks, and a partial one
    x = np.where(rng.random(n) < 0.3, 0.0, rng.gamma(1.0, scale, n))
    xhat = rng.gamma(2.0, scale / 2, n)
    ratio = np.empty(n)
    compound_ratio(x, xhat, 0.8, ratio)
    z = 0.8 * x * xhat
    expected = np.array([compound_count_mean(v) / h if v > 0 else 0.0 for v, h in zip(z, xhat)])
    # The dense kernel fuses multiply-adds (Horner, Clenshaw): a few roundings apart.
    np.testing.assert_allclose(ratio, expected, rtol=2e-15, atol=0)
    normalisers = np.empty(n)
    large = _small_normalisers(x, xhat, 0.8, normalisers)
    total = large + np.sum(np.log(normalisers))
    reference = sum(compound_log_sum(v) for v in z[x > 0])
    assert total == pytest.approx(reference, rel=1e-14)
    assert np.all(normalisers[z > SMALL_Z] == 1.0)
    # The bound's pass: the same ratio, bit for bit, and the same sum.
    fused_ratio, terms = np.empty(n), xhat.copy()
    fused = ratio_and_log_sum(x, terms, fused_ratio, CompoundPoisson(1.25))
    np.testing.assert_array_equal(fused_ratio, ratio)
    assert fused == pytest.approx(reference, rel=1e-14)


@pytest.mark.parametrize("rate, jump_mean", [(0.3, 1.0), (2.0, 0.7), (15.0, 2.5)])
def test_the_density_is_a_probability_with_the_stated_mean(rate, jump_mean):
    """P(x = 0) + ∫ p(x) dx = 1 and E[x] = jump_mean · X̂ (quadrature)."""
    likelihood = CompoundPoisson(jump_mean)

    def density(x):
        return np.exp(likelihood.entry_log_likelihood(np.array([x]), np.array([rate]))[0])

    upper = jump_mean * (rate + 40 * np.sqrt(rate) + 40)
    mass, _ = integrate.quad(density, 0, upper, limit=400, epsabs=1e-13)
    mean, _ = integrate.quad(lambda x: x * density(x), 0, upper, limit=400, epsabs=1e-13)
    assert mass + np.exp(-rate) == pytest.approx(1.0, abs=1e-9)
    assert mean == pytest.approx(jump_mean * rate, rel=1e-8)


@pytest.mark.parametrize("z", [0.05, 2.0, 60.0, 3e4])
def test_jump_counts_are_drawn_from_their_exact_distribution(z):
    """Draws of N given a positive value follow P(N) ∝ z^N / (N! (N − 1)!):
    a chi-square test over the bins holding the mass, at the 0.1% level with
    a fixed seed."""
    n_draws = 40_000
    draws = CompoundPoisson().draw_counts(np.random.default_rng(0), np.full(n_draws, z),
                                          np.ones(n_draws))
    assert np.all(draws >= 1) and np.all(draws == np.round(draws))
    support = np.arange(1, int(4 * np.sqrt(z) + 60 * z ** 0.25 + 20))
    log_pmf = support * np.log(z) - gammaln(support + 1) - gammaln(support)
    pmf = np.exp(log_pmf - logsumexp(log_pmf))
    expected = n_draws * pmf
    kept = expected >= 5  # chi-square's rule of thumb; the rest pooled
    observed = np.array([(draws == n).sum() for n in support])
    obs = np.append(observed[kept], observed[~kept].sum())
    exp = np.append(expected[kept], expected[~kept].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
        assert observed[~kept].sum() <= 10
    statistic = np.sum((obs - exp) ** 2 / exp)
    assert statistic < stats.chi2.ppf(0.999, len(obs) - 1)


def _exact_compound_log_evidence(X, n_components, jump_mean=1.0, max_jumps=9):
    """log p(X) of compound Poisson NMF, exactly up to a truncation of the
    jump counts: Σ over the counts N of the positive entries of p(X | N)
    (Gamma(N, 1/jump_mean) densities) times the Poisson NMF evidence of N
    (the package's exact oracle). The truncated tail is below e^-20 here."""
    positive = np.argwhere(X > 0)
    terms = []
    for jumps in itertools.product(range(1, max_jumps + 1), repeat=len(positive)):
        counts = np.zeros_like(X)
        log_density = 0.0
        for (i, j), n in zip(positive, jumps):
            counts[i, j] = n
            log_density += stats.gamma.logpdf(X[i, j], n, scale=jump_mean)
        terms.append(log_density + exact_log_evidence(counts, n_components))
    return float(logsumexp(terms))


TINY_REALS = np.array([[0.7, 0.0, 2.3], [1.1, 0.4, 0.0]])


@pytest.fixture(scope="module")
def exact_tiny():
    """The exact evidence of TINY_REALS at rank 1 (2.5 s: computed once)."""
    return _exact_compound_log_evidence(TINY_REALS, 1)


@pytest.mark.slow(minutes=0.15)  # the exact evidence takes 7 s beside another worker
def test_the_bound_lies_below_the_exact_evidence(exact_tiny):
    exact = exact_tiny
    vb = BayesianNMF(1, likelihood="compound_poisson", tol=1e-9, max_iter=5000,
                     random_state=0).fit(TINY_REALS)
    assert exact - 2.0 < vb.log_evidence_ <= exact


@pytest.mark.parametrize("method, evidence", [("gibbs", "chib"), ("gibbs", "ais"),
                                              ("sgld", "sti"), ("sgld", "ais")])
@pytest.mark.slow(minutes=0.3)
def test_every_sampled_evidence_meets_the_exact_evidence(method, evidence, exact_tiny):
    """Chib's, AIS's and STI's estimates lie within four of their standard
    errors of the exact evidence (a normal estimate strays that far once in
    about 16,000 runs)."""
    exact = exact_tiny
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short chain's diagnostics: one run of set length
        est = BayesianNMF(1, likelihood="compound_poisson", method=method, evidence=evidence,
                          n_warmup=500, n_draws=300, random_state=0).fit(TINY_REALS)
    assert abs(est.log_evidence_ - exact) < 4 * est.log_evidence_error_


def test_the_bound_at_another_jump_mean_lies_below_its_exact_evidence():
    X = np.array([[0.35, 0.0], [0.55, 1.2]])
    exact = _exact_compound_log_evidence(X, 1, jump_mean=0.5, max_jumps=10)
    vb = BayesianNMF(1, likelihood=CompoundPoisson(0.5), tol=1e-9, max_iter=5000,
                     random_state=0).fit(X)
    assert exact - 2.0 < vb.log_evidence_ <= exact


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # capped on purpose
@pytest.mark.parametrize("method", ["vb", "em"])
def test_the_objective_never_decreases_with_missing_entries(method):
    X = _draw(0)
    X[0, :4] = np.nan
    est = BayesianNMF(3, likelihood="compound_poisson", method=method, acceleration=None,
                      prior_shape=1.0, tol=1e-4, max_iter=300, random_state=0).fit(X)
    steps = np.diff(est.lower_bounds_)
    assert np.all(steps >= -1e-9 * np.abs(est.lower_bounds_[1:])), steps.min()
    assert est.lower_bounds_[-1] > est.lower_bounds_[0]


@pytest.mark.parametrize("make", [
    lambda X: BayesianNMF(3, likelihood="compound_poisson", tol=1e-6, random_state=0),
    lambda X: PoissonCP(2, likelihood=CompoundPoisson(0.5), tol=1e-6, random_state=0),
])
def test_dense_and_sparse_data_give_the_same_fit(make):
    X = _draw(1)
    if isinstance(make(X), PoissonCP):
        X = np.stack([X, _draw(2)], axis=2)
        import sparse

        as_sparse = sparse.COO.from_numpy(X)
    else:
        as_sparse = sp.csr_matrix(X)
    dense, fitted_sparse = make(X).fit(X), make(X).fit(as_sparse)
    assert fitted_sparse.log_evidence_ == pytest.approx(dense.log_evidence_, rel=1e-10)
    for a, b in zip(dense.factors_, fitted_sparse.factors_):
        np.testing.assert_allclose(a, b, rtol=1e-7)


def test_the_evidence_picks_the_jump_mean_that_drew_the_data():
    X = _draw(3, jump_mean=0.5)
    evidences = {s: BayesianNMF(3, likelihood=CompoundPoisson(s), random_state=0).fit(X).score(X)
                 for s in (0.125, 0.5, 2.0)}
    assert max(evidences, key=evidences.get) == 0.5


def test_predictions_are_the_mean_of_the_values():
    """E[x] = jump_mean · E[X̂]: the fit's mean of the observed values over
    all entries is close to their average (VB's means fit the total)."""
    X = _draw(4, jump_mean=0.5)
    est = BayesianNMF(3, likelihood=CompoundPoisson(0.5), tol=1e-6, random_state=0).fit(X)
    rows, cols = np.indices(X.shape).reshape(2, -1)
    predicted = est.predict_entries(np.stack([rows, cols], axis=1))
    assert predicted.sum() == pytest.approx(X.sum(), rel=0.05)
    np.testing.assert_allclose(predicted, 0.5 * est.reconstruct().ravel(), rtol=1e-12)


@pytest.mark.parametrize("method", ["vb", "em", "gibbs"])
def test_rescal_fits_real_valued_relations(method):
    rng = np.random.default_rng(5)
    A = rng.gamma(1.0, 1.0, (12, 2))
    core = rng.gamma(1.0, 1.0, (2, 2, 2))
    jumps = rng.poisson(np.einsum("ia,jb,abk->ijk", A, A, core))
    X = np.where(jumps > 0, rng.gamma(np.maximum(jumps, 1), 1.0), 0.0)
    kwargs = {"gibbs": dict(n_warmup=500, n_draws=200), "em": dict(prior_shape=1.0)}.get(method, {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short chain's diagnostics: one run of set length
        est = BayesianRESCAL(2, likelihood="compound_poisson", method=method, random_state=0,
                             **kwargs).fit(X)
    assert np.isfinite(est.score(X))
    if method == "vb":  # the compiled row sweep against the generic bound: monotone
        steps = np.diff(est.lower_bounds_)
        assert np.all(steps >= -1e-9 * np.abs(est.lower_bounds_[1:]))


def test_a_coupled_model_mixes_binary_relations_and_real_attributes():
    rng = np.random.default_rng(6)
    A = rng.gamma(1.0, 1.0, (20, 2))
    links = (rng.poisson(A @ rng.gamma(1.0, 1.0, (2, 15))) > 0).astype(float)
    jumps = rng.poisson(A @ rng.gamma(1.0, 1.0, (2, 4)))
    attributes = np.where(jumps > 0, rng.gamma(np.maximum(jumps, 1), 2.0), 0.0)
    est = CoupledPLTF(("ir,rj->ij", "ir,rf->if"), 2,
                      likelihood=("bernoulli", CompoundPoisson(2.0)), random_state=0)
    est.fit([links, attributes])
    assert est.score([links, attributes]) == est.log_evidence_
    assert np.all(est.predict_entries([[0, 0], [1, 2]], tensor=0) < 1.0)


def test_the_likelihood_object_is_a_parameter_like_any_other():
    est = BayesianNMF(2, likelihood=CompoundPoisson(0.25), random_state=0).fit(_draw(7))
    assert clone(est).likelihood == CompoundPoisson(0.25)
    assert repr(est.likelihood) == "CompoundPoisson(jump_mean=0.25)"
    again = pickle.loads(pickle.dumps(est))
    assert again.score(_draw(7)) == est.score(_draw(7))


@pytest.mark.parametrize("jump_mean", [0.0, -1.0, np.inf, np.nan])
def test_a_jump_mean_that_is_not_positive_is_refused(jump_mean):
    with pytest.raises(ValueError, match="jump_mean must be a positive number"):
        CompoundPoisson(jump_mean)


def test_negative_values_are_refused():
    X = _draw(8)
    X[0, 0] = -0.5
    with pytest.raises(ValueError, match="negative"):
        BayesianNMF(2, likelihood="compound_poisson").fit(X)


@pytest.mark.parametrize("jump_mean", [-np.inf, -0.0, -1e-320])
def test_a_jump_mean_that_is_not_positive_is_refused_on_every_side(jump_mean):
    with pytest.raises(ValueError, match="jump_mean must be a positive number"):
        CompoundPoisson(jump_mean)


@pytest.mark.parametrize("jump_mean", [None, "abc", "1.0", True, np.bool_(True), [1.0],
                                       np.array([1.0]), np.array([1.0, 2.0]), np.array(1.0),
                                       1 + 0j])
def test_a_jump_mean_that_is_not_one_real_number_is_a_type_error(jump_mean):
    with pytest.raises(TypeError, match="jump_mean must be one real number"):
        CompoundPoisson(jump_mean)


@pytest.mark.parametrize("jump_mean", [1e-320, 5e-309, np.float64(1e-310)])
def test_a_jump_mean_whose_rate_overflows_is_refused(jump_mean):
    """Positive and finite, but 1 / jump_mean is inf: once accepted, the fit
    then failed with a NaN objective."""
    with pytest.raises(ValueError, match="reciprocal, the jump rate, is finite"):
        CompoundPoisson(jump_mean)


@pytest.mark.parametrize("jump_mean", [np.float32(0.5), np.int64(2), 2, 1e308])
def test_any_real_positive_jump_mean_with_a_finite_rate_is_taken(jump_mean):
    likelihood = CompoundPoisson(jump_mean)
    assert likelihood.jump_mean == float(jump_mean) and type(likelihood.jump_mean) is float
    assert likelihood.jump_rate == 1.0 / float(jump_mean) and np.isfinite(likelihood.jump_rate)


def test_data_holding_more_jumps_than_the_fit_can_count_are_refused_at_fit():
    """x / jump_mean beyond MAX_JUMPS (z = βxX̂ about its square
    overflows): a clear error at fit naming jump_mean, for every estimator
    that takes the likelihood; just below it the fit is finite."""
    from sklearn_pltf.engine._likelihood import MAX_JUMPS

    X = _draw(9)
    tiny = CompoundPoisson(1e-200)
    for estimator, data in [(BayesianNMF(2, likelihood=tiny), X),
                            (CoupledPLTF(("ir,rj->ij", "ir,rf->if"), 2,
                                         likelihood=("poisson", tiny)), [np.round(X), X])]:
        with pytest.raises(ValueError, match=r"jump_mean=1e-200.*more than 1e\+150 jumps"):
            estimator.fit(data)
    near = X * (0.9 * MAX_JUMPS / X.max())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BayesianNMF(2, likelihood="compound_poisson", max_iter=20,
                          random_state=0).fit(near)
    assert np.isfinite(est.lower_bound_) and np.all(np.isfinite(est.lower_bounds_))
