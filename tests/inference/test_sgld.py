"""SGLD: the integrator, the minibatches and the Poisson–Gamma target."""

import numpy as np
import pytest
import sparse

from sklearn_pltf.engine._contract import make_contractor
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference import sgld
from sklearn_pltf.inference._batches import BlockBatches, TargetGradient
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.engine.model import Model


class _StandardGaussian:
    """N(0, 1/λ) in one dimension, exact gradients: an integrator check."""

    def __init__(self, curvature):
        self.lam = curvature

    def init(self, rng):
        return (np.zeros(1),)

    def draw_batch(self, rng):
        return None

    def gradient(self, params, batch, temperature, anchor=None):
        return TargetGradient((-self.lam * params[0],), 0.0, 0.0, None)

    def curvature(self, params, temperature, allocated):
        return (np.full(1, self.lam),)

    def anchor(self, params):
        return None


def test_step_sizes_decay_from_one_to_the_final_size():
    sizes = sgld.step_sizes(0.1, 500)
    assert sizes[0] == pytest.approx(1.0) and sizes[-1] == pytest.approx(0.1)
    assert np.all(np.diff(sizes) < 0)
    np.testing.assert_allclose(sgld.step_sizes(2.0, 10), 2.0)


def test_leimkuhler_matthews_samples_a_gaussian_exactly():
    # Euler–Maruyama at this step has variance 1/(λ(1 - ελ/4)) = 1.6/λ; the
    # scheme used here is exact for Gaussians at any stable step.
    target = _StandardGaussian(curvature=4.0)
    rng = np.random.default_rng(0)
    state = sgld.init(rng, target)
    advance = sgld.AdaptiveSGLD(target, 1.0, n_warmup=10, step_size=1.5)
    draws = []
    for k in range(10 + 40000):
        state, _ = advance(rng, state)
        if k >= 10:
            draws.append(state.params[0][0])
    # Draws are AR(1) with coefficient 1 - ελP/2 = 0.25: the variance
    # estimate's standard error is about sqrt(2 (1 + 0.25²)/(1 - 0.25²) / n) ≈ 1%.
    assert np.var(draws) * 4.0 == pytest.approx(1.0, abs=0.05)


def _nmf_problem(sparse_input=False, mask=None, likelihood="poisson"):
    rng = np.random.default_rng(0)
    X = rng.poisson(rng.gamma(1.0, 1.0, (12, 2)) @ rng.gamma(1.0, 1.0, (2, 9))).astype(float)
    if likelihood == "bernoulli":
        X = (X > 0).astype(float)
    data = as_observed_tensor(sparse.COO.from_numpy(X) if sparse_input else X, mask)
    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": 3})
    contractor = make_contractor(model, data, likelihood)
    priors = gamma_priors(model, 0.7, 1.3)
    return model, contractor, priors


def _log_posterior(target, params, temperature):
    """log p(φ) + t log p(X | e^φ), with the Jacobian: the φ-density."""
    factors = target.factors(params)
    value = temperature * target.log_likelihood(params)
    for a, phi in zip(target.free, params):
        value += np.sum(target.priors.shape[a] * phi - target.priors.rate[a] * factors[a])
    return value


@pytest.mark.parametrize("likelihood", ["poisson", "bernoulli"])
@pytest.mark.parametrize("sparse_input", [False, True])
def test_full_batch_gradient_is_the_log_posterior_gradient(sparse_input, likelihood):
    mask = np.ones((12, 9), dtype=bool)
    mask[3, 4] = mask[7, 0] = False
    model, contractor, priors = _nmf_problem(sparse_input, mask, likelihood)
    target = sgld.PoissonTarget(model, contractor, priors)
    params = target.init(np.random.default_rng(1))
    full = (np.arange(contractor.nonzeros.n_entries), 1.0)
    gradient, log_likelihood, noise, _ = target.gradient(params, full, 0.7)
    assert log_likelihood == pytest.approx(target.log_likelihood(params))
    assert noise == 0.0
    h = 1e-6
    for block, phi in enumerate(params):
        for element in [(0, 0), (2, 1)]:
            moved = [p.copy() for p in params]
            moved[block][element] += h
            up = _log_posterior(target, moved, 0.7)
            moved[block][element] -= 2 * h
            down = _log_posterior(target, moved, 0.7)
            assert gradient[block][element] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-6)


# Each likelihood and each estimator (plain, control variates) in the quick
# tier; the other two pairings in the slow tier.
@pytest.mark.parametrize("anchored, likelihood", [
    (True, "poisson"),
    (False, "bernoulli"),
    pytest.param(False, "poisson", marks=pytest.mark.slow(minutes=0.05)),
    pytest.param(True, "bernoulli", marks=pytest.mark.slow(minutes=0.05)),
])
def test_minibatch_gradient_and_log_likelihood_are_unbiased(anchored, likelihood):
    model, contractor, priors = _nmf_problem(likelihood=likelihood)
    target = sgld.PoissonTarget(model, contractor, priors, batch_size=10)
    rng = np.random.default_rng(2)
    params = target.init(rng)
    anchor = None
    if anchored:  # control variates around another point
        anchor = target.anchor(tuple(p + 0.3 * rng.standard_normal(p.shape) for p in params))
    full = target.gradient(params, (np.arange(contractor.nonzeros.n_entries), 1.0), 1.0, anchor)
    samples = [target.gradient(params, target.draw_batch(rng), 1.0, anchor) for _ in range(4000)]
    for block in range(2):
        draws = np.array([s[0][block] for s in samples])
        error = draws.std(axis=0) / np.sqrt(len(samples))
        assert np.all(np.abs(draws.mean(axis=0) - full[0][block]) < 4.5 * error + 1e-12)
    values = np.array([s[1] for s in samples])
    assert abs(values.mean() - full[1]) < 4.5 * values.std() / np.sqrt(len(values))
    # The reported minibatch variance estimates the spread of the estimates.
    assert np.mean([s[2] for s in samples]) == pytest.approx(values.var(), rel=0.15)


def test_block_batches_partition_entries_into_disjoint_blocks():
    rng = np.random.default_rng(0)
    shape = (20, 15, 12)
    coords = np.vstack([rng.integers(0, n, 3000) for n in shape])
    batches = BlockBatches(coords, shape, n_blocks=3)
    assert batches.n_parts == 9
    parts = batches._parts
    assert sorted(np.concatenate(parts).tolist()) == list(range(3000))
    for part in parts:
        blocks = np.vstack([(coords[m, part] * 3) // shape[m] for m in range(3)])
        # within a part, a block's range on axis 0 fixes its ranges on the others
        for b in range(3):
            on_axis0 = blocks[:, blocks[0] == b]
            assert all(len(set(row)) <= 1 for row in on_axis0[1:])
        for m in range(3):  # and no two blocks share a range on any axis
            assert len({tuple(col) for col in blocks.T}) == len(set(blocks[m]))
    index, scale = batches.draw(rng)
    assert scale == 9.0


def test_poisson_target_runs_on_a_sparse_tensor_with_block_batches():
    rng = np.random.default_rng(0)
    shape = (30, 20, 10)
    X = rng.poisson(0.3, size=shape)
    model = Model.parse("ir,jr,kr->ijk").bind(shape, {"r": 2})
    data = as_observed_tensor(sparse.COO.from_numpy(X))
    target = sgld.PoissonTarget(model, make_contractor(model, data), gamma_priors(model, 1.0, 1.0),
                                n_blocks=2)
    state = sgld.init(rng, target, 1.0)
    state, trace, _ = sgld.run(rng, state, target, 1.0, n_warmup=200, n_steps=200, step_size=0.1)
    assert np.all(np.isfinite(trace))
    # near the full-data log-likelihood of the final point, within the noise
    assert abs(trace[-50:].mean() - target.log_likelihood(state.params)) < 5 * trace[-50:].std() + 5
