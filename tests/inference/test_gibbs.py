"""Block Gibbs sampling: input checks, reproducibility, and the right posterior."""

import numpy as np
import pytest
import sparse

from sklearn_pltf.engine._contract import full_xhat, make_contractor
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference import gibbs
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.engine.model import Model


def bound_model(spec, shape, sizes, fixed_shapes=None):
    return Model.parse(spec).bind(shape, sizes, fixed_shapes or {})


SWEEPS = pytest.mark.parametrize("sweep", ["gibbs", "sada"])


def chain(model, X, priors, n_steps, seed, given=None, sweep="gibbs"):
    rng = np.random.default_rng(seed)
    contractor = make_contractor(model, as_observed_tensor(X))
    state = gibbs.init(rng, model, contractor, priors, given)
    draws = []
    for _ in range(n_steps):
        state, info = gibbs.step(rng, state, contractor, priors, gibbs.SWEEPS[sweep])
        assert np.isfinite(info.log_likelihood)
        draws.append(state.factors)
    return draws


def test_non_integer_counts_raise():
    model = bound_model("ik,kj->ij", (3, 2), {"k": 2})
    contractor = make_contractor(model, as_observed_tensor(np.array([[1.0, 2.5], [0.0, 1.0], [3.0, 0.0]])))
    with pytest.raises(ValueError, match="Gibbs sampling allocates integer counts"):
        gibbs.init(np.random.default_rng(0), model, contractor, gamma_priors(model, 1.0, 1.0))


@SWEEPS
def test_same_seed_same_chain_and_dense_equals_sparse(rng, sweep):
    model = bound_model("ir,jr,kr->ijk", (5, 4, 3), {"r": 2})
    X = rng.poisson(1.5, size=(5, 4, 3)).astype(float)
    priors = gamma_priors(model, 1.0, 1.0)
    first = chain(model, X, priors, 20, seed=7, sweep=sweep)
    again = chain(model, X, priors, 20, seed=7, sweep=sweep)
    from_sparse = chain(model, sparse.COO.from_numpy(X), priors, 20, seed=7, sweep=sweep)
    for a, b, c in zip(first, again, from_sparse):
        for fa, fb, fc in zip(a, b, c):
            np.testing.assert_array_equal(fa, fb)
            # Δ(M) is an einsum on dense data and a product of sums on sparse
            # data: equal up to rounding, and the allocations match exactly.
            np.testing.assert_allclose(fa, fc, rtol=1e-10)


@SWEEPS
def test_fixed_factor_is_held(rng, sweep):
    model = bound_model("ik,kj->ij", (6, 4), {"k": 2}, {1: (2, 4)})
    H = rng.gamma(2.0, 1.0, size=(2, 4))
    X = rng.poisson(2.0, size=(6, 4)).astype(float)
    priors = gamma_priors(model, 1.0, 1.0, free=(0,))
    for draw in chain(model, X, priors, 5, seed=0, given={1: H}, sweep=sweep):
        assert draw[1] is H


@SWEEPS
def test_rank_one_with_a_fixed_factor_matches_the_conjugate_posterior(rng, sweep):
    """With H fixed and one component, W_i | X ~ Gamma(A + Σ_j X_ij, R + Σ_j H_j)."""
    model = bound_model("ik,kj->ij", (3, 5), {"k": 1}, {1: (1, 5)})
    H = rng.gamma(2.0, 1.0, size=(1, 5))
    X = rng.poisson(3.0, size=(3, 5)).astype(float)
    a, r = 2.0, 0.5
    priors = gamma_priors(model, a, r, free=(0,))
    W = np.array([d[0][:, 0] for d in chain(model, X, priors, 4000, seed=1, given={1: H}, sweep=sweep)])
    shape, rate = a + X.sum(axis=1), r + H.sum()
    # Draws of W are independent here (W does not enter its own conditional),
    # so the standard error of the mean is sd / sqrt(n).
    se = np.sqrt(shape) / rate / np.sqrt(len(W))
    assert np.all(np.abs(W.mean(axis=0) - shape / rate) < 4 * se)
    # The sample variance of 4000 Gamma(shape ≈ 17) draws has a relative sd of
    # sqrt((2 + 6 / shape) / 4000) ≈ 2.4%: 0.15 is six of them.
    np.testing.assert_allclose(W.var(axis=0), shape / rate**2, rtol=0.15)


def _batch_means(samples, n_batches):
    """Mean and its standard error by batch means (the draws are autocorrelated)."""
    means = np.array([b.mean(axis=0) for b in np.array_split(samples, n_batches)])
    return samples.mean(axis=0), means.std(axis=0, ddof=1) / np.sqrt(n_batches)


@pytest.mark.parametrize(
    "spec, shape, sizes",
    [("ir,jr,kr->ijk", (6, 5, 4), {"r": 2}), ("ip,jq,pq->ij", (6, 5), {"p": 2, "q": 3})],
    ids=["cp", "tucker"],
)
@pytest.mark.slow(minutes=0.25)
def test_block_gibbs_and_sada_agree_on_the_posterior_mean(spec, shape, sizes):
    """Posterior means of X̂ (label-free) from the two samplers, one missing
    entry included, agree within Monte Carlo error: 4000 draws each, standard
    errors from 20 batch means. Over at most 120 entries a correct pair fails
    |z| < 4.5 with probability below 1e-3 (a t with 38 degrees of freedom is
    a little wider than a normal: still below 0.01). In Tucker, SADA's
    margins on p and on q differ from the full allocation over (p, q)."""
    rng = np.random.default_rng(0)
    model = bound_model(spec, shape, sizes)
    priors = gamma_priors(model, 1.0, 1.0)
    truth = [rng.gamma(1.0, 1.0, size=model.factor_shape(a)) for a in range(model.n_factors)]
    X = rng.poisson(full_xhat(model, truth)).astype(float)
    X.flat[0] = np.nan
    estimates = []
    for seed, sweep in [(1, "gibbs"), (2, "sada")]:
        draws = chain(model, X, priors, 4500, seed=seed, sweep=sweep)[500:]
        estimates.append(_batch_means(np.array([full_xhat(model, d) for d in draws]), 20))
    (mean_gibbs, se_gibbs), (mean_sada, se_sada) = estimates
    z = (mean_gibbs - mean_sada) / np.sqrt(se_gibbs**2 + se_sada**2)
    assert np.all(np.abs(z) < 4.5), np.round(z, 2)


def _prior_draw(rng, model, priors):
    return [rng.gamma(priors.shape[a], 1.0 / priors.rate[a]) for a in range(model.n_factors)]


def _statistics(model, factors, X):
    """Test functions of (Z, X) for the Geweke comparison, all symmetric in the
    components so that label switching does not matter: every factor's mean
    and mean square (how unequal its components are, which is what the
    allocation of counts to components decides), X̂ and X summed, Σ X X̂ and
    Σ X̂² (which tie each entry's intensity to its own count), and the squares
    of the means and sums."""
    xhat = full_xhat(model, factors)
    spread = [float(np.mean(f**2)) for f in factors]
    values = [float(np.mean(f)) for f in factors]
    values += [float(xhat.sum()), float(X.sum()), float(np.sum(X * xhat)), float(np.sum(xhat**2))]
    return np.array(values + [v * v for v in values] + spread)


@pytest.mark.slow(minutes=0.35)
@pytest.mark.parametrize(
    "sweep, layout, likelihood",
    [("gibbs", "dense", "poisson"), ("gibbs", "sparse", "poisson"), ("sada", "sparse", "poisson"),
     ("gibbs", "dense", "bernoulli"), ("sada", "sparse", "bernoulli")],
)
@pytest.mark.parametrize(
    "spec, shape, sizes",
    [("ik,kj->ij", (4, 3), {"k": 2}), ("ir,jr,kr->ijk", (3, 3, 2), {"r": 2}), ("ip,jq,pq->ij", (4, 3), {"p": 2, "q": 2})],
    ids=["nmf", "cp", "tucker"],
)
def test_geweke_joint_distribution(spec, shape, sizes, sweep, layout, likelihood):
    """Geweke (2004): drawing (Z, X) from the prior and the likelihood, and
    alternating a sampler step for Z given X with a fresh X given Z, must give
    the same joint distribution. Each statistic's means must agree within 4.5
    standard errors (batch means for the chain): with at most 21 statistics,
    a correct sampler fails this with probability below 1.5e-4. SADA reaches
    the data through the same entry lists on either layout, so it runs on the
    sparse one only. Under the Bernoulli–Poisson likelihood X = 1[N > 0]
    and each sweep also draws the latent counts N (zero-truncated Poisson at
    the ones)."""
    rng = np.random.default_rng(12345)
    model = bound_model(spec, shape, sizes)
    priors = gamma_priors(model, 2.0, 1.5)
    as_input = sparse.COO.from_numpy if layout == "sparse" else np.asarray

    def simulate(factors):
        counts = rng.poisson(full_xhat(model, factors)).astype(float)
        return counts if likelihood == "poisson" else (counts > 0).astype(float)

    n = 12000
    marginal = []
    for _ in range(n):
        factors = _prior_draw(rng, model, priors)
        X = simulate(factors)
        marginal.append(_statistics(model, factors, X))
    marginal = np.array(marginal)

    factors = _prior_draw(rng, model, priors)
    X = simulate(factors)
    successive = []
    for _ in range(n):
        contractor = make_contractor(model, as_observed_tensor(as_input(X)), likelihood)
        state, _ = gibbs.step(rng, gibbs.GibbsState(tuple(factors)), contractor, priors, gibbs.SWEEPS[sweep])
        factors = list(state.factors)
        X = simulate(factors)
        successive.append(_statistics(model, factors, X))
    successive = np.array(successive)

    chain_mean, chain_se = _batch_means(successive, 50)
    se = np.sqrt(marginal.var(axis=0, ddof=1) / n + chain_se**2)
    z = (marginal.mean(axis=0) - chain_mean) / se
    assert np.all(np.abs(z) < 4.5), np.round(z, 2)
