"""The Gaussian family on model strings (inference.gaussian._string_stats):
the data-side sums against CP's Gram identities and against explicit
designs, each column's Gibbs conditional against the exact Gaussian
regression, the same chain as CP's for the same seed, and a planted Tucker
tensor recovered by the sampler."""

import numpy as np
import pytest

from sklearn_pltf.engine._data import ObservedTensor
from sklearn_pltf.engine.model import Model
from sklearn_pltf.inference import gaussian
from sklearn_pltf.inference._cp_stats import CPStatistics
from sklearn_pltf.inference.gaussian._string_stats import StringStatistics
from sklearn_pltf.inference.gaussian import links
from sklearn_pltf.inference.gaussian.links import statistics_of
from sklearn_pltf.inference.gaussian.sweeps import _mode_terms, column_conditional

SHAPE = (6, 5, 4)
#: Structures with their latent sizes: every kind of factor (observed and
#: latent indices; only latent, as a core; only observed; several latent).
MODELS = {
    "cp": ("ir,jr,kr->ijk", 2),
    "tucker": ("ip,jq,kr,pqr->ijk", {"p": 2, "q": 3, "r": 2}),
    "nmf": ("ik,kj->ij", 3),
    "hierarchical": ("fi,ik,kt->ft", {"i": 3, "k": 2}),
    "deconvolution": ("r,d,dtr->t", {"r": 2, "d": 3}),
    "observed-only factor": ("ij,kr,r->ijk", 2),
}


def _data(shape, layout, seed=0, missing=0.25):
    """An ObservedTensor of Gaussian values, a share of them missing."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=shape)
    mask = rng.random(shape) >= missing
    dense = np.where(mask, values, 0.0)
    if layout == "complete":
        return ObservedTensor(shape, dense=values)
    if layout == "dense":
        return ObservedTensor(shape, dense=dense, mask=mask)
    coords = np.vstack(np.nonzero(dense))
    return ObservedTensor(shape, coords=coords, values=dense[tuple(coords)],
                          missing=np.vstack(np.nonzero(~mask)))


def _bound(name, data_shape=None):
    string, sizes = MODELS[name]
    model = Model.parse(string)
    shape = data_shape or SHAPE[:len(model.output)]
    return model.bind(shape, sizes), shape


def _factors(stats, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) for s in stats.factor_shapes()]


@pytest.mark.parametrize("layout", ["complete", "dense", "sparse"])
def test_string_sums_equal_cp_s_gram_identities(layout):
    data = _data(SHAPE, layout)
    model, _ = _bound("cp")
    cp, string = CPStatistics(data), StringStatistics(data, model)
    factors = _factors(string)
    grams = cp.grams(factors)
    for n in range(3):
        np.testing.assert_allclose(string.mttkrp(n, factors), cp.mttkrp(n, factors), atol=1e-12)
        np.testing.assert_allclose(string.design_gram(grams, skip=n), cp.hadamard_gram(grams, skip=n),
                                   atol=1e-12)
        if layout != "complete":
            np.testing.assert_allclose(string.missing_rows(n, factors), cp.missing_rows(n, factors),
                                       atol=1e-12)
    np.testing.assert_allclose(string.sum_of_squared_errors(factors),
                               cp.sum_of_squared_errors(factors), rtol=1e-12)
    np.testing.assert_allclose(string.dense_xhat(factors), gaussian.cp_dense(factors), atol=1e-12)


def _explicit_design(stats, factors, alpha):
    """∂X̂/∂F_α(row, column) at every entry, by unit factors: (data shape, rows, columns)."""
    rows, cols = stats.factor_shapes()[alpha]
    design = np.zeros(stats.shape + (rows, cols))
    for i in range(rows):
        for c in range(cols):
            unit = [f.copy() for f in factors]
            unit[alpha] = np.zeros((rows, cols))
            unit[alpha][i, c] = 1.0
            design[..., i, c] = stats.dense_xhat(unit)
    return design


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("name", list(MODELS))
def test_each_column_s_conditional_is_the_exact_gaussian_regression(name, layout):
    """Given everything else, column c of factor α is a Bayesian linear
    regression of the observed x on ∂X̂/∂F_α(·, c): precision Σ_O D² / σ² + 1/v
    and mean (Σ_O (x - X̂ + F D) D / σ² + μ/v) / precision, per row."""
    model, shape = _bound(name)
    data = _data(shape, layout, seed=2)
    stats = StringStatistics(data, model)
    factors = _factors(stats, seed=3)
    x = np.zeros(shape)
    observed = np.ones(shape, dtype=bool)
    if data.is_sparse:
        x[tuple(data.coords)] = data.values
        observed[tuple(data.missing)] = False
    else:
        x, observed = data.dense, data.mask
    xhat = stats.dense_xhat(factors)
    noise_variance, mean, variance = 0.7, 0.3, 2.0
    grams = stats.grams(factors)
    for alpha in range(model.n_factors):
        design = _explicit_design(stats, factors, alpha)
        terms = _mode_terms(stats, alpha, factors, grams)
        for c in range(stats.factor_shapes()[alpha][1]):
            d = design[..., c][observed]  # entries x rows
            precision = np.sum(d**2, axis=0) / noise_variance + 1.0 / variance
            residual = (x - xhat)[observed][:, None] + factors[alpha][:, c] * d
            location = (np.sum(residual * d, axis=0) / noise_variance + mean / variance) / precision
            got_location, got_scale = column_conditional(
                stats, alpha, c, factors[alpha], terms, stats.missing_xhat(factors), mean,
                variance, noise_variance)
            np.testing.assert_allclose(got_location, location, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(got_scale, 1.0 / np.sqrt(precision), rtol=1e-9)


@pytest.mark.parametrize("name", list(MODELS))
def test_sums_of_squares_and_entries_match_the_dense_tensor(name):
    model, shape = _bound(name)
    data = _data(shape, "dense", seed=4)
    stats = StringStatistics(data, model)
    factors = _factors(stats, seed=5)
    xhat = np.einsum(model.string, *(stats.factor_tensor(a, f) for a, f in enumerate(factors)))
    np.testing.assert_allclose(stats.dense_xhat(factors), xhat, atol=1e-12)
    np.testing.assert_allclose(stats.sum_of_squared_errors(factors),
                               np.sum(((data.dense - xhat) ** 2)[data.mask]), rtol=1e-10)
    np.testing.assert_allclose(stats.missing_xhat(factors), xhat[~data.mask], atol=1e-12)


@pytest.mark.parametrize("likelihood", ["gaussian", "probit"])
@pytest.mark.parametrize("nonnegative", [True, False])
def test_a_chain_on_the_cp_string_is_cp_s_chain(likelihood, nonnegative, monkeypatch):
    """The same seed gives CP's draws whichever sums the sweep reads."""
    data = _data(SHAPE, "dense", seed=6)
    if likelihood == "probit":
        dense = (data.dense > 0).astype(float)
        data = ObservedTensor(SHAPE, dense=dense, mask=data.mask)
    model, _ = _bound("cp")
    priors = gaussian.GaussianPriors(nonnegative=nonnegative)
    link = gaussian.LIKELIHOODS[likelihood]

    def chain(on):
        return gaussian.run_chain(np.random.default_rng(7), on, 2, priors, n_warmup=20, n_draws=30)

    if likelihood == "gaussian":  # the string's sums on the CP string, not statistics_of's pick
        chains = [chain(link(CPStatistics(data))), chain(link(StringStatistics(data, model)))]
    else:
        chains = [chain(link(data))]
        monkeypatch.setattr(links, "statistics_of", StringStatistics)  # not CP's identities
        on_string = link(data, model)
        assert isinstance(on_string._on_signs, StringStatistics)
        chains.append(chain(on_string))
    for cp, string in zip(chains[0].mean_factors, chains[1].mean_factors):
        np.testing.assert_allclose(string, cp, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(chains[1].log_likelihoods, chains[0].log_likelihoods, rtol=1e-9)


def test_a_planted_tucker_tensor_is_recovered_at_held_out_entries():
    """Gibbs on the Tucker string, a fifth of the entries held out: the
    posterior mean of X̂ there is within the noise of the truth (its RMSE
    against the noiseless X̂ below half the noise's SD), where predicting 0
    misses by the signal's spread."""
    rng = np.random.default_rng(8)
    shape, noise = (12, 10, 8), 0.1
    model = Model.parse("ip,jq,kr,pqr->ijk").bind(shape, {"p": 2, "q": 2, "r": 2})
    truth = np.einsum("ip,jq,kr,pqr->ijk", *(rng.normal(size=s) for s in
                                            [(12, 2), (10, 2), (8, 2), (2, 2, 2)]))
    mask = rng.random(shape) >= 0.2
    values = np.where(mask, truth + noise * rng.normal(size=shape), 0.0)
    stats = StringStatistics(ObservedTensor(shape, dense=values, mask=mask), model)
    chain = gaussian.run_chain(rng, stats, None, gaussian.GaussianPriors(nonnegative=False),
                               n_warmup=300, n_draws=200)
    draws = [stats.dense_xhat([d[i] for d in chain.draws]) for i in range(len(chain.draws[0]))]
    held_out = np.mean(draws, axis=0)[~mask] - truth[~mask]
    assert np.sqrt(np.mean(held_out**2)) < 0.5 * noise < np.std(truth)
    assert 0.5 * noise**2 < chain.mean_noise_variance < 2 * noise**2


def test_statistics_of_picks_cp_s_identities_for_the_cp_string():
    data = _data(SHAPE, "dense")
    assert isinstance(statistics_of(data), CPStatistics)
    for cp in ("ir,jr,kr->ijk", "az,bz,cz->abc"):
        assert isinstance(statistics_of(data, Model.parse(cp).bind(SHAPE, 2)), CPStatistics)
    # Factor 0 on axis 1, or a factor's indices in another order: not CP's layout.
    for other in ("jr,ir,kr->ijk", "ri,jr,kr->ijk"):
        assert isinstance(statistics_of(data, Model.parse(other).bind(SHAPE, 2)), StringStatistics)
    assert isinstance(statistics_of(data, _bound("tucker")[0]), StringStatistics)


def test_a_model_the_sweep_cannot_take_is_refused_by_name():
    data = _data((4, 3), "complete")
    shared = Model.parse("ir,jr,ir->ij").bind((4, 3), 2)  # axis i in two factors
    with pytest.raises(ValueError, match="each observed index in exactly one factor; 'i' is in 2"):
        StringStatistics(data, shared)
    fixed = Model.parse("ik,kj->ij").bind((4, 3), fixed_shapes={1: (2, 3)})
    with pytest.raises(ValueError, match="fixed factors"):
        StringStatistics(data, fixed)


def _prior_monte_carlo_on_a_string(X, stats, priors, n_draws, seed, chunk=200_000):
    """log p(X) = log E_prior[p(X | Z)] over prior draws of every factor
    matrix (each column's (μ, v) from its hyper-prior, then its elements), σ²
    integrated out in closed form (a Student-t likelihood); with the relative
    standard error of the mean."""
    from scipy.special import gammaln, logsumexp

    rng = np.random.default_rng(seed)
    model, n = stats.model, X.size
    k, theta = priors.noise_shape, priors.noise_scale
    sse = []
    for _ in range(n_draws // chunk):
        tensors = []
        for alpha, (rows, cols) in enumerate(stats.factor_shapes()):
            v = priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, (chunk, 1, cols))
            if priors.nonnegative:
                u = gaussian.sample_standardised_location(rng, rows, priors.hyper_precision,
                                                           (chunk, 1, cols))
            else:
                u = rng.standard_normal((chunk, 1, cols)) / np.sqrt(priors.hyper_precision)
            scale = np.broadcast_to(np.sqrt(v), (chunk, rows, cols))
            matrices = gaussian.sample_elements(rng, u * scale, scale, priors)
            tensors.append(stats.factor_tensor(alpha, matrices))
        subscripts = ",".join("n" + f for f in model.factors) + "->n" + model.output
        xhat = np.einsum(subscripts, *tensors, optimize=True)
        sse.append(((xhat - X) ** 2).reshape(chunk, -1).sum(axis=1))
    sse = np.concatenate(sse)
    log_lik = (-n / 2 * np.log(2 * np.pi) + gammaln(k + n / 2) - gammaln(k) + k * np.log(theta)
               - (k + n / 2) * np.log(theta + sse / 2))
    weights = np.exp(log_lik - log_lik.max())
    return logsumexp(log_lik) - np.log(sse.size), weights.std() / weights.mean() / np.sqrt(sse.size)


@pytest.mark.slow(minutes=2.7)
@pytest.mark.parametrize("nonnegative", [False, True], ids=["signed", "non-negative"])
def test_chib_on_a_tucker_string_matches_monte_carlo_integration(nonnegative):
    """Chib's estimate on the Tucker string (3 x 2 x 2 data, core 2 x 2 x 1,
    its first blocks averaged over the labels of p and q and, signed, over
    the signs) against a 2-million-draw prior Monte Carlo integral, within 3
    combined standard errors (each reports its own; measured: signed -13.56
    against -13.43, non-negative -14.74 against -14.86). The data are drawn
    small enough (Gamma(2, 0.5) non-negative factors) that the prior
    integral's weights are not heavy-tailed: at Gamma(2, 1) its 2 million
    draws missed the evidence by 6 nats while reporting an error of 0.4."""
    from sklearn_pltf.evidence._gaussian_chib import gaussian_chib_log_evidence

    rng = np.random.default_rng(0)
    shape, string = (3, 2, 2), "ip,jq,kr,pqr->ijk"
    sizes = [(3, 2), (2, 2), (2, 1), (2, 2, 1)]
    truth = [rng.gamma(2.0, 0.5, s) if nonnegative else rng.normal(0.0, 1.0, s) for s in sizes]
    X = np.einsum(string, *truth) + rng.normal(0.0, 0.5, shape)
    stats = StringStatistics(ObservedTensor(shape, dense=X),
                             Model.parse(string).bind(shape, {"p": 2, "q": 2, "r": 1}))
    priors = gaussian.GaussianPriors(noise_shape=3.0, noise_scale=1.0, hyper_precision=1.0,
                                     hyper_shape=3.0, hyper_scale=2.0, nonnegative=nonnegative)
    reference, reference_error = _prior_monte_carlo_on_a_string(X, stats, priors, 2_000_000, 1)
    assert reference_error < 0.05
    estimate = gaussian_chib_log_evidence(np.random.default_rng(2), stats, None, priors,
                                          n_draws=3000, n_warmup=300)
    assert 0 < estimate.standard_error < 0.3
    assert abs(estimate.log_evidence - reference) < 3 * np.hypot(estimate.standard_error,
                                                                 reference_error)
