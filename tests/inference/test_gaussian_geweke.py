"""Geweke's joint-distribution test (Geweke 2004) of the Gaussian NTF samplers.

Two ways to draw (X, θ) from the joint p(θ) p(X | θ): marginal-conditional
(θ from the prior, then X) and successive-conditional (alternately X | θ and
one sampler transition θ | X). The second has the joint as its stationary
law only if the transition leaves p(θ | X) invariant, so any error in a
conditional, a density, a Jacobian or an accept/reject step shows up as a
difference in the means of test functions of θ.
"""

import numpy as np
import pytest

from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.engine._random import as_generator
from sklearn_pltf.evidence._mc_error import batch_means_error
from sklearn_pltf.inference import gaussian
from sklearn_pltf.inference._cp_stats import CPStatistics

SHAPE = (3, 2, 2)
PRIORS = gaussian.GaussianPriors(noise_shape=3.0, noise_scale=1.0, hyper_precision=1.0,
                                 hyper_shape=3.0, hyper_scale=2.0)
# Lighter-tailed priors (v and sigma^2 near 1) for HMC: with PRIORS the joint
# chain wanders into states of tiny noise, where a fixed step is rejected for
# hundreds of iterations.
LIGHT_PRIORS = gaussian.GaussianPriors(noise_shape=10.0, noise_scale=5.0, hyper_precision=1.0,
                                       hyper_shape=10.0, hyper_scale=9.0)
# Signed Bayesian CP (Gaussian elements of either sign), with the same hyper-priors.
SIGNED_PRIORS = PRIORS._replace(nonnegative=False)
SIGNED_LIGHT_PRIORS = LIGHT_PRIORS._replace(nonnegative=False)


def _simulate(rng, state):
    xhat = np.einsum("ir,jr,kr->ijk", *state.factors)
    return xhat + rng.normal(0.0, np.sqrt(state.noise_variance), SHAPE)


def _test_functions(state, signed=False):
    """Label-invariant summaries of θ (the posterior has R! symmetric modes);
    for signed factors also sign-invariant (flipping a component's column in
    two modes, with its μ, leaves the model unchanged), so squares replace
    the sums that change sign."""
    a = state.factors
    # Under ARD the locations are zero: the shared variances stand in for them.
    location = state.means[0] if np.any(state.means[0]) else np.log(state.variances[0])
    if signed:
        sums = [(a[0] ** 2).sum(), (a[1] ** 2).sum(), (location ** 2).sum()]
    else:
        sums = [a[0].sum(), a[1].sum(), location.sum()]
    return np.array([
        state.noise_variance,
        np.log(state.noise_variance),
        sums[0],
        sums[1],
        (a[2] ** 2).sum(),
        np.einsum("ir,jr,kr->", *a),
        sums[2],
        state.variances[1].sum(),
    ])


def _transition(sampler, priors):
    if sampler == "gibbs":
        return lambda rng, state, stats: gaussian.gibbs_sweep(rng, state, stats, priors)[0]

    # A step drawn afresh each time, independently of the state (a mixture of
    # HMC kernels, each exact), around 0.03 x 30 leapfrog steps: adaptation
    # would make the transition depend on the past.
    def hmc(rng, state, stats):
        step = 0.03 * np.exp(rng.uniform(-1.0, 1.0))
        return gaussian.hmc_step(rng, state, stats, priors, step, 30)[0]

    return hmc


@pytest.mark.slow(minutes=1.6)
@pytest.mark.parametrize("sampler, rank, priors, n_steps", [
    ("gibbs", 2, PRIORS, 40_000),
    ("hmc", 1, LIGHT_PRIORS, 20_000),
    # At rank 2 the joint chain moves between the label and scale modes
    # slowly: the integrated autocorrelation time of the sum of X̂ is several
    # hundred steps, so its z is the noisiest of the eight.
    ("hmc", 2, LIGHT_PRIORS, 20_000),
    # Signed factors: at rank 2 under PRIORS the joint chain creeps through
    # states of tiny noise, where a column can change sign only through
    # zero, and the batch-means errors stop covering its autocorrelation;
    # rank 1 under PRIORS and rank 2 under LIGHT_PRIORS test the same code.
    ("gibbs", 1, SIGNED_PRIORS, 40_000),
    ("gibbs", 2, SIGNED_LIGHT_PRIORS, 40_000),
    ("hmc", 1, SIGNED_LIGHT_PRIORS, 20_000),
    # ARD: one variance per component shared by the modes, location 0.
    ("gibbs", 2, PRIORS._replace(ard=True), 20_000),
    ("gibbs", 2, SIGNED_LIGHT_PRIORS._replace(ard=True), 20_000),
    ("hmc", 1, LIGHT_PRIORS._replace(ard=True), 20_000),
], ids=["gibbs-rank2", "hmc-rank1", "hmc-rank2", "signed-gibbs-rank1", "signed-gibbs-rank2",
        "signed-hmc-rank1", "ard-gibbs-rank2", "ard-signed-gibbs-rank2", "ard-hmc-rank1"])
def test_sampler_passes_geweke(sampler, rank, priors, n_steps):
    rng = as_generator(0)
    signed = not priors.nonnegative
    prior = np.array([_test_functions(gaussian.sample_prior(rng, SHAPE, rank, priors), signed)
                      for _ in range(n_steps)])
    transition = _transition(sampler, priors)
    state = gaussian.sample_prior(rng, SHAPE, rank, priors)
    successive = np.empty_like(prior)
    for t in range(n_steps):
        stats = CPStatistics(as_observed_tensor(_simulate(rng, state), allow_negative=True))
        state = transition(rng, state, stats)
        successive[t] = _test_functions(state, signed)
    se_prior = prior.std(axis=0, ddof=1) / np.sqrt(n_steps)
    se_successive = np.array([batch_means_error(successive[:, j], n_batches=50)
                              for j in range(prior.shape[1])])
    z = (successive.mean(axis=0) - prior.mean(axis=0)) / np.hypot(se_prior, se_successive)
    # Eight functions, each z ~ N(0, 1) when the sampler is right (batch means
    # with 50 batches): P(any |z| > 4) < 1e-3.
    assert np.all(np.abs(z) < 4), z
