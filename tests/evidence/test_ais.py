"""Annealed importance sampling against the exact evidence of tiny count
matrices (the check Chib's estimate passes, tests/evidence/test_chib.py)."""

import numpy as np
import pytest

from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.evidence import ais_log_evidence, exact_log_evidence, reverse_ais_log_evidence
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.engine.model import Model

TINY_MATRICES = [
    np.array([[2, 0, 1], [0, 3, 1]]),
    np.array([[1, 1], [0, 2], [3, 0]]),
    np.array([[0, 4], [1, 0]]),
]
TOLERANCE = 0.25  # nats, as for Chib's estimate


def ais(X, n_components, fixed_H=None, seed=0, **settings):
    model = Model.parse("ik,kj->ij").bind(
        X.shape, {"k": n_components}, {} if fixed_H is None else {1: fixed_H.shape})
    priors = gamma_priors(model, 1.0, 1.0, free=(0,) if fixed_H is not None else None)
    given = None if fixed_H is None else {1: fixed_H}
    return ais_log_evidence(np.random.default_rng(seed), model, as_observed_tensor(X), priors,
                            given, **settings)


# Each matrix and each rank once in the quick tier (the diagonal of the 3 x 3
# grid); the other six cases in the slow tier.
@pytest.mark.parametrize("matrix, n_components", [
    (matrix, n_components) if matrix + 1 == n_components
    else pytest.param(matrix, n_components, marks=pytest.mark.slow(minutes=0.05))
    for matrix in range(len(TINY_MATRICES)) for n_components in (1, 2, 3)
])
def test_ais_at_its_defaults_is_close_to_the_exact_evidence(matrix, n_components):
    """Default settings (32 runs, 1000 rungs, 2 MALA moves each): the errors
    measured over these nine cases were below 0.05 nats, with standard errors
    of 0.02-0.04; the tolerance is the one Chib's estimate meets."""
    X = TINY_MATRICES[matrix].astype(float)
    estimate = ais(X, n_components)
    assert abs(estimate.log_evidence - exact_log_evidence(X, n_components)) < TOLERANCE
    assert 0 < estimate.standard_error < 0.1
    assert 0.4 < estimate.acceptance < 0.8  # the pilot tuned the steps toward 0.6


def test_ais_with_a_fixed_factor(rng):
    X = TINY_MATRICES[1].astype(float)
    H = rng.gamma(2.0, 1.0, size=(2, X.shape[1]))
    estimate = ais(X, 2, fixed_H=H)
    assert abs(estimate.log_evidence - exact_log_evidence(X, 2, fixed_factors={1: H})) < TOLERANCE


def test_ais_reproducible_and_refuses_sparse_data():
    X = TINY_MATRICES[0].astype(float)
    first, second = ais(X, 2, n_temperatures=50), ais(X, 2, n_temperatures=50)
    np.testing.assert_array_equal(first.log_weights, second.log_weights)
    import sparse

    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": 2})
    with pytest.raises(TypeError, match="dense"):
        ais_log_evidence(np.random.default_rng(0), model,
                         as_observed_tensor(sparse.COO.from_numpy(X)),
                         gamma_priors(model, 1.0, 1.0))


@pytest.mark.parametrize("method", ["vb", "gibbs"])
@pytest.mark.slow(minutes=0.1)
def test_estimators_take_ais_evidence_without_changing_the_fit(method):
    from sklearn_pltf import BayesianNMF

    X = TINY_MATRICES[0].astype(float)
    settings = dict(method=method, n_warmup=20, n_draws=50, random_state=0)
    est = BayesianNMF(2, evidence="ais", **settings).fit(X)
    assert abs(est.log_evidence_ - exact_log_evidence(X, 2)) < TOLERANCE
    assert est.score(X) == est.log_evidence_ and 0 < est.log_evidence_error_ < 0.1
    plain = BayesianNMF(2, evidence=None, **settings).fit(X)
    for ours, theirs in zip(est.factors_, plain.factors_):
        np.testing.assert_array_equal(ours, theirs)


def test_ais_evidence_refuses_sparse_input():
    import scipy.sparse as sp

    from sklearn_pltf import BayesianNMF

    X = sp.csr_matrix(TINY_MATRICES[0].astype(float))
    with pytest.raises(ValueError, match="evidence='ais' runs on dense data"):
        BayesianNMF(2, evidence="ais").fit(X)


def test_degenerate_weights_warn_with_what_to_change():
    """Twenty rungs between the prior and the posterior of a 20 x 15 matrix
    of about 600 counts: one run carries nearly all the weight."""
    X = np.random.default_rng(0).poisson(2.0, size=(20, 15)).astype(float)
    with pytest.warns(RuntimeWarning, match="use more temperatures"):
        estimate = ais(X, 2, n_temperatures=20)
    assert estimate.effective_runs < 8
    tiny = ais(TINY_MATRICES[0].astype(float), 2)
    assert tiny.effective_runs > 24  # at the defaults on tiny data: no warning


def simulated_tiny_matrix(seed, shape=(2, 3), n_components=2, max_total=8):
    """Counts drawn from the model's prior (Gamma(1, 1) factors), with the
    factors that drew them: an exact posterior sample for these counts. The
    first draw with at most ``max_total`` counts, so enumeration stays cheap."""
    rng = np.random.default_rng(seed)
    while True:
        W = rng.gamma(1.0, 1.0, size=(shape[0], n_components))
        H = rng.gamma(1.0, 1.0, size=(n_components, shape[1]))
        X = rng.poisson(W @ H).astype(float)
        if 0 < X.sum() <= max_total:
            return X, W, H


@pytest.mark.parametrize("seed", [pytest.param(0, marks=pytest.mark.slow(minutes=0.1)), 1,
                                  pytest.param(2, marks=pytest.mark.slow(minutes=0.1))])
def test_reverse_ais_from_the_generating_factors_sandwiches_the_exact_evidence(seed):
    """Bidirectional Monte Carlo on counts simulated from the model: reverse
    AIS from the factors that generated them (an exact posterior draw) errs
    high, forward AIS low, both by little at these sizes (the tolerance is
    Chib's); within their standard errors (4 of them, for the two
    estimates together), the sandwich holds the exact value."""
    X, W, H = simulated_tiny_matrix(seed)
    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": 2})
    priors = gamma_priors(model, 1.0, 1.0)
    data = as_observed_tensor(X)
    exact = exact_log_evidence(X, 2)
    lower = ais_log_evidence(np.random.default_rng(seed), model, data, priors)
    upper = reverse_ais_log_evidence(np.random.default_rng(seed), model, data, priors,
                                     {0: W, 1: H})
    assert abs(upper.log_evidence - exact) < TOLERANCE
    assert 0 < upper.standard_error < 0.1 and 0.4 < upper.acceptance < 0.8
    slack = 4 * np.hypot(lower.standard_error, upper.standard_error)
    assert lower.log_evidence - slack <= exact <= upper.log_evidence + slack


def test_reverse_ais_checks_its_starting_sample():
    X, W, H = simulated_tiny_matrix(0)
    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": 2})
    priors = gamma_priors(model, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"posterior_sample\[1\] must be a positive array"):
        reverse_ais_log_evidence(np.random.default_rng(0), model, as_observed_tensor(X), priors,
                                 {0: W, 1: H.T})
    with pytest.raises(ValueError, match="positive"):
        reverse_ais_log_evidence(np.random.default_rng(0), model, as_observed_tensor(X), priors,
                                 {0: W, 1: 0 * H})


@pytest.mark.parametrize("K", [1, 2, 3, 5])
def test_log_permanent_is_the_sum_over_relabellings(K, rng):
    import itertools

    from scipy.special import logsumexp

    from sklearn_pltf.evidence._permanent import log_permanent

    L = 3.0 * rng.normal(size=(4, K, K))
    value, gradient = log_permanent(L)
    brute = [logsumexp([sum(L[i, k, s[k]] for k in range(K))
                        for s in itertools.permutations(range(K))]) for i in range(4)]
    np.testing.assert_allclose(value, brute, rtol=1e-12)
    # the gradient is the slot-label marginal of the mixture: doubly stochastic
    np.testing.assert_allclose(gradient.sum(axis=1), 1.0, rtol=1e-10)
    np.testing.assert_allclose(gradient.sum(axis=2), 1.0, rtol=1e-10)
    step = 1e-6
    shifted = L.copy()
    shifted[:, 0, K - 1] += step
    np.testing.assert_allclose((log_permanent(shifted)[0] - value) / step, gradient[:, 0, K - 1],
                               atol=1e-5)


@pytest.mark.parametrize("spec, shape", [("ik,kj->ij", (3, 4)), ("ir,jr,kr->ijk", (2, 3, 2))])
def test_gamma_start_is_the_relabelled_gamma_mixture(spec, shape, rng):
    """log s against the mixture summed over every relabelling, its
    gradient against finite differences."""
    import itertools

    from scipy.special import gammaln, logsumexp

    from sklearn_pltf.evidence._ais import GammaStart

    K = 3
    model = Model.parse(spec).bind(shape, {spec[1]: K})
    shapes = [rng.gamma(3.0, 1.0, size=model.factor_shape(a)) for a in range(model.n_factors)]
    rates = [rng.gamma(3.0, 1.0, size=model.factor_shape(a)) for a in range(model.n_factors)]
    start = GammaStart(model, shapes, rates)
    phi = start.draw(rng, 5)
    value, gradient = start.log_density(phi)
    latent = spec[1]
    brute = []
    for n in range(5):
        terms = []
        for order in itertools.permutations(range(K)):
            total = 0.0
            for a in range(model.n_factors):
                axis = model.factors[a].index(latent)
                A, B = np.take(shapes[a], order, axis=axis), np.take(rates[a], order, axis=axis)
                total += np.sum(A * phi[a][n] - B * np.exp(phi[a][n]) + A * np.log(B) - gammaln(A))
            terms.append(total)
        brute.append(logsumexp(terms) - np.log(len(terms)))
    np.testing.assert_allclose(value, brute, rtol=1e-12)
    step, index = 1e-6, (slice(None),) + (0,) * (phi[1].ndim - 1)
    shifted = {a: p.copy() for a, p in phi.items()}
    shifted[1][index] += step
    np.testing.assert_allclose((start.log_density(shifted)[0] - value) / step, gradient[1][index],
                               atol=1e-4)


def test_gamma_start_refuses_two_relabelled_indices():
    from sklearn_pltf.evidence._ais import GammaStart

    model = Model.parse("ia,jb,ab->ij").bind((3, 4), {"a": 2, "b": 2})
    ones = [np.ones(model.factor_shape(a)) for a in range(model.n_factors)]
    with pytest.raises(ValueError, match="More than one latent index"):
        GammaStart(model, ones, ones)


def test_gamma_from_moments_recovers_the_gamma():
    from scipy.special import digamma

    from sklearn_pltf.inference._gamma import gamma_from_moments

    a, b = np.array([0.05, 0.7, 3.0, 400.0]), np.array([2.0, 0.5, 1.0, 10.0])
    shape, rate = gamma_from_moments(a / b, np.exp(digamma(a) - np.log(b)))
    np.testing.assert_allclose(shape, a, rtol=1e-8)
    np.testing.assert_allclose(rate, b, rtol=1e-8)


@pytest.mark.slow(minutes=0.2)
def test_sampler_default_evidence_is_ais_on_dense_data_and_chib_on_sparse():
    """Chib costs one clamped run per factor element; AIS from a Gamma fit to
    the chains' marginals is the default wherever it runs (dense data)."""
    import scipy.sparse as sp

    from sklearn_pltf import BayesianNMF

    X = TINY_MATRICES[0].astype(float)
    settings = dict(method="gibbs", n_warmup=20, n_draws=50, random_state=0)
    dense = BayesianNMF(2, **settings).fit(X)
    ais_fit = BayesianNMF(2, evidence="ais", **settings).fit(X)
    assert dense.log_evidence_ == ais_fit.log_evidence_
    assert abs(dense.log_evidence_ - exact_log_evidence(X, 2)) < TOLERANCE
    on_sparse = BayesianNMF(2, **settings).fit(sp.csr_matrix(X))
    chib_fit = BayesianNMF(2, evidence="chib", **settings).fit(X)
    assert on_sparse.log_evidence_ == pytest.approx(chib_fit.log_evidence_, abs=1e-9)


@pytest.mark.parametrize("spec, shape", [("ik,kj->ij", (4, 3)), ("ir,jr,kr->ijk", (3, 2, 4))])
def test_rescaling_moves_leave_the_likelihood_unchanged(spec, shape, rng):
    """The ridges the rescaling move follows: scaling a label's slice of one
    factor up and of another down leaves X̂, the log-likelihood and its
    gradient in log space as they were, so only the prior weighs the move."""
    from sklearn_pltf.evidence._ais import _PoissonTarget, ridges

    model = Model.parse(spec).bind(shape, {spec[1]: 3})
    priors = gamma_priors(model, 1.0, 1.0)
    X = rng.poisson(2.0, size=shape).astype(float)
    target = _PoissonTarget(model, as_observed_tensor(X), priors, {})
    assert target.ridges == ridges(model, priors.free) and len(target.ridges) == model.n_factors - 1
    phi = {a: rng.normal(size=(2, *model.factor_shape(a))) for a in priors.free}
    log_lik, lik_grad = target.log_likelihood(phi)
    for alpha, axis_a, beta, axis_b in target.ridges:
        delta = rng.normal(size=3)
        moved = dict(phi)
        moved[alpha] = phi[alpha] + np.expand_dims(delta, [0] + [1 + d for d in range(phi[alpha].ndim - 1) if d != axis_a])
        moved[beta] = phi[beta] - np.expand_dims(delta, [0] + [1 + d for d in range(phi[beta].ndim - 1) if d != axis_b])
        moved_log_lik, moved_grad = target.log_likelihood(moved)
        np.testing.assert_allclose(moved_log_lik, log_lik, rtol=1e-12)
        for a in priors.free:
            np.testing.assert_allclose(moved_grad[a], lik_grad[a], rtol=1e-9, atol=1e-12)


def test_tucker_samplers_keep_chib_by_default():
    """Two latent indices tie their labels through the core, so no Gamma
    start mixes over them and AIS would start from the prior: "auto" falls
    back to Chib there."""
    from sklearn_pltf import TuckerVB
    from sklearn_pltf.evidence._ais import has_posterior_start

    model = Model.parse("ip,jq,pq->ij").bind((4, 3), {"p": 2, "q": 2})
    assert not has_posterior_start(model, model.free)
    assert has_posterior_start(Model.parse("ik,kj->ij").bind((4, 3), {"k": 2}), (0, 1))
    X = np.random.default_rng(0).poisson(2.0, size=(5, 4, 3)).astype(float)
    settings = dict(method="gibbs", n_warmup=50, n_draws=100, random_state=0)
    auto = TuckerVB((2, 2, 2), **settings).fit(X)
    chib = TuckerVB((2, 2, 2), evidence="chib", **settings).fit(X)
    assert auto.log_evidence_ == chib.log_evidence_
