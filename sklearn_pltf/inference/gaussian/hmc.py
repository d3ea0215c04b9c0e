"""Hamiltonian Monte Carlo for the Gaussian family (on log A for non-negative
factors), with its step size adapted by dual averaging."""

from __future__ import annotations

import numpy as np

from ._model import (GaussianInfo, GaussianState, draw_hyper, log_factors_prior,
                     log_likelihood, log_noise_prior)


def _to_position(factor, priors):
    """Where HMC moves a factor: φ = log A for non-negative factors, A itself if signed."""
    return np.log(factor) if priors.nonnegative else factor


def _log_target_and_gradient(phi, state, stats, nonnegative=True):
    """log p(A | X, μ, v, σ²) in φ = log A (Jacobian Σφ included), up to a
    constant, and its gradient in each φ_n:
    :math:`A_n \\circ \\big(\\sum_O (x - \\hat x) K_n / \\sigma^2 - (A_n - \\mu_n)/v_n\\big) + 1`;
    for signed factors (``nonnegative=False``) φ = A, no Jacobian, and the
    gradient is the bracket alone."""
    factors = [np.exp(p) for p in phi] if nonnegative else list(phi)
    grams = stats.grams(factors)
    noise = state.noise_variance
    value, gradient = 0.0, []
    for n, (p, a) in enumerate(zip(phi, factors)):
        residual_terms, mttkrp = stats.masked_gradient_terms(n, factors, grams, with_mttkrp=True)
        if n == 0:
            sse = stats.sum_of_squared_errors(factors, grams=grams, mttkrp=mttkrp)
            value -= 0.5 * sse / noise
        centred = (a - state.means[n]) / state.variances[n]
        if nonnegative:
            value += float(np.sum(-0.5 * centred * (a - state.means[n]) + p))
            gradient.append(a * (residual_terms / noise - centred) + 1.0)
        else:
            value += float(np.sum(-0.5 * centred * (a - state.means[n])))
            gradient.append(residual_terms / noise - centred)
    return value, gradient, factors


def hmc_step(rng, state, stats, priors, step_size, n_leapfrog, inverse_mass=None):
    """One HMC transition for the factors (in log space, or as they are if
    signed; leapfrog with
    ``n_leapfrog`` steps of ``step_size``, Metropolis accept/reject), then
    (μ, v) and σ² from their conditionals as in :func:`gibbs_sweep`.

    ``inverse_mass`` (one array per factor, default ones) is the diagonal
    inverse mass matrix: the scale of each φ, so that one step size suits
    elements whose posterior widths differ. The info's ``acceptance`` is
    the proposal's acceptance probability."""
    phi = [_to_position(f, priors) for f in state.factors]
    inverse_mass = [np.ones_like(p) for p in phi] if inverse_mass is None else inverse_mass
    value, gradient, _ = _log_target_and_gradient(phi, state, stats, priors.nonnegative)
    momentum = [rng.standard_normal(p.shape) / np.sqrt(w) for p, w in zip(phi, inverse_mass)]

    def kinetic(momentum):
        return 0.5 * sum(float(np.sum(w * m**2)) for m, w in zip(momentum, inverse_mass))

    energy = -value + kinetic(momentum)
    position, new_gradient, new_value = phi, gradient, value
    with np.errstate(over="ignore", invalid="ignore"):
        momentum = [m + 0.5 * step_size * g for m, g in zip(momentum, new_gradient)]
        for k in range(n_leapfrog):
            position = [p + step_size * w * m for p, m, w in zip(position, momentum, inverse_mass)]
            new_value, new_gradient, _ = _log_target_and_gradient(position, state, stats,
                                                                  priors.nonnegative)
            scale = step_size if k < n_leapfrog - 1 else 0.5 * step_size
            momentum = [m + scale * g for m, g in zip(momentum, new_gradient)]
        new_energy = -new_value + kinetic(momentum)
    log_ratio = energy - new_energy
    acceptance = float(np.exp(min(log_ratio, 0.0))) if np.isfinite(log_ratio) else 0.0
    factors = state.factors
    if rng.uniform() < acceptance:
        factors = tuple(np.exp(p) for p in position) if priors.nonnegative else tuple(position)
    return _draw_hyper_and_noise(rng, factors, stats, priors, acceptance)


def _draw_hyper_and_noise(rng, factors, stats, priors, acceptance):
    means, variances = draw_hyper(rng, factors, priors)
    sse = stats.sum_of_squared_errors(list(factors))
    shape, scale = priors.noise_shape + 0.5 * stats.n_observed, priors.noise_scale + 0.5 * sse
    noise = float(scale / rng.standard_gamma(shape))
    state = GaussianState(tuple(factors), tuple(means), tuple(variances), noise)
    return state, GaussianInfo(log_likelihood(stats, factors, noise, sse), acceptance)


def log_joint(state, stats, priors):
    """:math:`\\log p(X, A, \\sigma^2)` with (μ, v) integrated out."""
    return log_likelihood(stats, state.factors, state.noise_variance) + _log_prior(state, priors)


def _log_prior(state, priors):
    """:math:`\\log p(A) + \\log p(\\sigma^2)`, (μ, v) integrated out."""
    return log_factors_prior(state.factors, priors) + log_noise_prior(state.noise_variance, priors)


# ---------------------------------------------------------------------- chains

class DualAveraging:
    """Step-size adaptation toward an acceptance probability (Hoffman & Gelman
    2014, Algorithm 5; γ = 0.05, t₀ = 10, κ = 0.75): ``update(acceptance)``
    after each warm-up iteration, ``step_size`` to use next, ``final`` after."""

    def __init__(self, step_size, target):
        self.target, self.log_step = target, np.log(step_size)
        self._shrink_toward, self._mean_error, self._log_average, self._m = np.log(10 * step_size), 0.0, 0.0, 0

    @property
    def step_size(self):
        return float(np.exp(self.log_step))

    def update(self, acceptance):
        self._m += 1
        m = self._m
        self._mean_error += ((self.target - acceptance) - self._mean_error) / (m + 10)
        self.log_step = self._shrink_toward - np.sqrt(m) / 0.05 * self._mean_error
        weight = m**-0.75
        self._log_average = weight * self.log_step + (1 - weight) * self._log_average

    @property
    def final(self):
        return float(np.exp(self._log_average)) if self._m else self.step_size


class AdaptiveHMC:
    """HMC's transition over a chain, adapting during the warm-up: the step
    size toward ``target_acceptance`` by dual averaging throughout, and the
    diagonal inverse mass to the variance of each log-factor over the
    warm-up's middle half (then the step size adapts anew), both fixed
    afterwards. Each call is one :func:`hmc_step` with the step size jittered
    by ±10%; the object counts its calls to know the phase."""

    def __init__(self, stats, priors, *, n_warmup, step_size, n_leapfrog, target_acceptance):
        self.stats, self.priors, self.n_warmup, self.n_leapfrog = stats, priors, n_warmup, n_leapfrog
        self.target_acceptance = target_acceptance
        self.adaptation = DualAveraging(step_size, target_acceptance)
        self.inverse_mass, self.window, self.t = None, [], 0
        self.window_start, self.window_end = n_warmup // 4, (3 * n_warmup) // 4

    def __call__(self, rng, state):
        t, self.t = self.t, self.t + 1
        size = self.adaptation.step_size if t < self.n_warmup else self.adaptation.final
        state, info = hmc_step(rng, state, self.stats, self.priors, size * rng.uniform(0.9, 1.1),
                               self.n_leapfrog, self.inverse_mass)
        if t < self.n_warmup:
            self.adaptation.update(info.acceptance)
            if self.window_start <= t < self.window_end:
                self.window.append([_to_position(f, self.priors) for f in state.factors])
            elif t == self.window_end and len(self.window) > 1:
                self.inverse_mass = _regularised_variances(self.window)
                self.adaptation = DualAveraging(self.adaptation.step_size, self.target_acceptance)
        return state, info


def _regularised_variances(window):
    """Each position's (log-factor's, or signed factor's) variance over the window, shrunk toward 1e-3
    as Stan does (weight 5 / (n + 5)), for the inverse mass."""
    n = len(window)
    return [
        (n / (n + 5.0)) * np.var(np.array([w[m] for w in window]), axis=0, ddof=1) + 1e-3 * 5.0 / (n + 5.0)
        for m in range(len(window[0]))
    ]
