"""Bayesian non-negative PARAFAC with Gaussian noise (Schmidt & Mohamed,
"Probabilistic non-negative tensor factorisation using Markov chain Monte
Carlo", EUSIPCO 2009): the model, a column-wise Gibbs sampler and HMC.

The model, for an N-way tensor with observed entries O and rank R:

.. math::

    x_v \\mid A, \\sigma^2 \\sim \\mathcal N\\Big(\\sum_r \\prod_n A_n(v_n, r),\\;
        \\sigma^2\\Big),\\ v \\in O, \\qquad
    \\sigma^2 \\sim \\mathcal{IG}(k, \\theta),

    A_n(i, r) \\mid \\mu_{nr}, v_{nr} \\sim \\mathcal R(\\mu_{nr}, v_{nr})
        \\text{ (the Gaussian truncated to } [0, \\infty)\\text{)},

    p(\\mu_{nr}, v_{nr}) = \\frac{1}{C_{I_n}}\\, \\Phi\\big(\\mu/\\sqrt v\\big)^{I_n}\\,
        \\mathcal N(\\mu \\mid 0, v / s)\\, \\mathcal{IG}(v \\mid a_0, b_0).

With ``GaussianPriors(ard=True)`` (automatic relevance determination; Zhao,
Zhang & Cichocki, TPAMI 2015) every column has location 0 and one variance
:math:`v_r \\sim \\mathcal{IG}(a_0, b_0)` per component r, shared by every
mode: :math:`A_n(i, r) \\sim \\mathcal R(0, v_r)` (half-normal), or
:math:`\\mathcal N(0, v_r)` if signed, so a component the data do not need
has its variance shrink in every mode at once. Given the factors,
:math:`v_r \\sim \\mathcal{IG}(a_0 + N_r / 2, b_0 + S_r / 2)` with
:math:`N_r = \\sum_n I_n` and :math:`S_r = \\sum_n \\sum_i A_n(i, r)^2`
(the half-normal's normaliser does not depend on v), and
:func:`log_factors_prior` integrates v out in closed form.

With ``GaussianPriors(nonnegative=False)`` the elements are plain Gaussians
given (μ, v), of either sign — Bayesian CP (Xiong et al., "Temporal
collaborative filtering with Bayesian probabilistic tensor factorization",
SDM 2010) — and the hyper-prior is the plain Normal–inverse-Gamma
(:math:`C_I = 1`): the same conditionals, drawn without truncation, and HMC
moves A itself.

Each column (n, r) has its own location and scale. The hyper-prior carries the
power of :math:`\\Phi(\\mu/\\sqrt v)` that cancels the truncated Gaussian's
normaliser over the column's :math:`I_n` elements — Schmidt & Mohamed's
device — so that given the column, (μ, v) is Normal–inverse-Gamma: v
inverse-Gamma, μ given v Gaussian, drawn jointly. Its constant
:math:`C_I = \\mathbb E_{u \\sim \\mathcal N(0, 1/s)}[\\Phi(u)^I]` does not
depend on v (substitute :math:`u = \\mu/\\sqrt v`): a one-dimensional
integral (:func:`log_hyper_normalizer`). Integrating (μ, v) out gives each
column's marginal prior in closed form (:func:`log_factor_prior`), which is
what the evidence needs.

Given everything else, the elements of one column are independent rectified
Gaussians: with the column's data precision :math:`P_i` and linear term
:math:`L_i` (from the MTTKRP and Gram identities, :mod:`._cp_stats`),

.. math::

    A_n(i, r) \\mid \\cdot \\sim \\mathcal R\\Big(
        \\frac{L_i/\\sigma^2 + \\mu/v}{P_i/\\sigma^2 + 1/v},\\;
        \\frac{1}{P_i/\\sigma^2 + 1/v}\\Big),

    \\sigma^2 \\mid \\cdot \\sim \\mathcal{IG}\\big(k + |O|/2,\\;
        \\theta + \\tfrac12 \\textstyle\\sum_O (x - \\hat x)^2\\big).

:func:`gibbs_sweep` draws, mode by mode, the hyper-parameters of every
column, then the columns one at a time, then the noise. :func:`hmc_step`
moves all factors jointly by Hamiltonian Monte Carlo on
:math:`\\phi = \\log A` (the Jacobian adds :math:`\\sum \\phi` to the log
density), then draws the hyper-parameters and the noise as Gibbs does.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaln, log_ndtr, logsumexp

from ._chains import drive_chain
from ._truncnorm import log_rectified_normal_density, rectified_normal_mean, sample_rectified_normal

__all__ = [
    "GaussianPriors", "GaussianState", "GaussianInfo", "init", "gibbs_sweep", "hmc_step",
    "log_likelihood", "log_factor_prior", "log_factors_prior", "draw_hyper",
    "component_energy_shares", "column_log_evidence", "log_noise_prior",
    "log_hyper_normalizer", "sample_standardised_location", "sample_column_prior",
    "sample_prior", "sample_elements", "log_element_density", "column_conditional", "log_joint",
    "fold_in", "run_chain", "pool_chains", "GaussianChain",
    "DualAveraging", "AdaptiveHMC",
]


class GaussianPriors(NamedTuple):
    """Hyper-parameters: σ² ~ IG(``noise_shape``, ``noise_scale``); each
    column's v ~ IG(``hyper_shape``, ``hyper_scale``) and μ | v ~ N(0, v /
    ``hyper_precision``) (times the normaliser-cancelling power of Φ)."""

    noise_shape: float = 1.0
    noise_scale: float = 1.0
    hyper_precision: float = 1.0
    hyper_shape: float = 1.0
    hyper_scale: float = 1.0
    #: True: rectified (non-negative) elements; False: Gaussian, of either sign.
    nonnegative: bool = True
    #: True: location 0 and one variance per component shared by every mode
    #: (ARD), v ~ IG(``hyper_shape``, ``hyper_scale``); ``hyper_precision`` unused.
    ard: bool = False


class GaussianState(NamedTuple):
    """Factors (I_n x R each), each column's (μ, v) as length-R arrays per
    mode, and the noise variance σ²."""

    factors: tuple
    means: tuple
    variances: tuple
    noise_variance: float


class GaussianInfo(NamedTuple):
    """log p(X | A, σ²) at the returned state, and HMC's acceptance
    probability for the proposal (1 for a Gibbs sweep)."""

    log_likelihood: float
    acceptance: float = 1.0


# ------------------------------------------------------------------ densities
@lru_cache(maxsize=256)
def _location_grid(n_elements, precision):
    """A grid over u = μ/√v carrying the mass of N(u | 0, 1/s) Φ(u)^I, and
    the log of that integrand on it. The integrand is log-concave and no
    wider than N(0, 1/s), so 12 prior standard deviations either side of
    its mode hold it all; the mode lies between 0 and the tilt I φ(0)/(Φ(0) s)
    (found on a coarse grid first)."""
    scale = 1.0 / np.sqrt(precision)

    def log_integrand(u):
        return -0.5 * (u / scale) ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi) + n_elements * log_ndtr(u)

    coarse = np.linspace(-12.0 * scale, 12.0 * scale + 0.8 * n_elements * scale**2, 20001)
    mode = coarse[np.argmax(log_integrand(coarse))]
    u = np.linspace(mode - 12.0 * scale, mode + 12.0 * scale, 40001)
    return u, log_integrand(u)


def log_hyper_normalizer(n_elements, precision):
    """:math:`\\log C_I = \\log \\int \\mathcal N(u \\mid 0, 1/s)\\, \\Phi(u)^I\\, du`,
    by the trapezoid rule on a fine grid around the integrand's mode
    (smooth and log-concave: relative error ~1e-10)."""
    u, log_f = _location_grid(int(n_elements), float(precision))
    return float(logsumexp(log_f) + np.log(u[1] - u[0]))


def _log_column_normalizer(n_elements, priors):
    """log C_I of one column's hyper-prior: 0 for signed factors (no Φ power)."""
    return log_hyper_normalizer(n_elements, priors.hyper_precision) if priors.nonnegative else 0.0


def _posterior_hyper(column_sums, column_squares, n_elements, priors):
    """Normal–inverse-Gamma parameters of (μ, v) given columns with these sums."""
    precision = priors.hyper_precision + n_elements
    location = column_sums / precision
    shape = priors.hyper_shape + 0.5 * n_elements
    scale = priors.hyper_scale + 0.5 * (column_squares - column_sums**2 / precision)
    return location, precision, shape, scale


def column_log_evidence(column_sums, column_squares, n_elements, priors):
    """Per column, the Normal–inverse-Gamma evidence of its values given
    their sums and sums of squares (any leading axes), with the posterior's
    precision, shape and scale, which its gradient needs
    (:math:`\\partial / \\partial a_i = -(\\text{shape}/\\text{scale})(a_i -
    \\text{sum}/\\text{precision})`)."""
    _, precision, shape, scale = _posterior_hyper(column_sums, column_squares, n_elements, priors)
    per_column = (
        -0.5 * n_elements * np.log(2 * np.pi) + 0.5 * np.log(priors.hyper_precision / precision)
        + priors.hyper_shape * np.log(priors.hyper_scale) - shape * np.log(scale)
        + gammaln(shape) - gammaln(priors.hyper_shape)
    )
    return per_column, precision, shape, scale


def log_factor_prior(factor, priors):
    """:math:`\\log p(A_n)` with each column's (μ, v) integrated out: the
    Normal–inverse-Gamma evidence of the column's values minus
    :math:`\\log C_{I_n}` (0 for signed factors); ``-inf`` if an element of
    a non-negative factor is negative."""
    factor = np.asarray(factor, dtype=np.float64)
    if priors.nonnegative and np.any(factor < 0):
        return -np.inf
    n = factor.shape[0]
    per_column = column_log_evidence(factor.sum(0), (factor**2).sum(0), n, priors)[0]
    return float(np.sum(per_column) - factor.shape[1] * _log_column_normalizer(n, priors))


def log_factors_prior(factors, priors):
    """:math:`\\log p(A_1, \\dots, A_N)`, every (μ, v) integrated out: the
    sum of :func:`log_factor_prior` over the factors, or under ARD the
    Student-type marginal of each component over all modes,
    :math:`\\log \\frac{b_0^{a_0} \\Gamma(a_0 + N_r/2)}{\\Gamma(a_0)
    (b_0 + S_r/2)^{a_0 + N_r/2}} - \\frac{N_r}{2} \\log 2\\pi`, plus
    :math:`N_r \\log 2` for half-normal elements."""
    if not priors.ard:
        return sum(log_factor_prior(f, priors) for f in factors)
    factors = [np.asarray(f, dtype=np.float64) for f in factors]
    if priors.nonnegative and any(np.any(f < 0) for f in factors):
        return -np.inf
    n_r, s_r = _component_statistics(factors)
    a, b = priors.hyper_shape, priors.hyper_scale
    per_component = (a * np.log(b) - gammaln(a) + gammaln(a + 0.5 * n_r)
                     - (a + 0.5 * n_r) * np.log(b + 0.5 * s_r) - 0.5 * n_r * np.log(2 * np.pi)
                     + (n_r * np.log(2.0) if priors.nonnegative else 0.0))
    return float(np.sum(per_component))


def _component_statistics(factors):
    """ARD's statistics of each component r over every mode: its elements'
    count :math:`N_r` and sum of squares :math:`S_r`."""
    return sum(f.shape[0] for f in factors), sum(np.sum(f**2, axis=0) for f in factors)


def _draw_shared_variances(rng, factors, priors):
    """ARD: every mode's column locations (zeros) and the variances
    :math:`v_r` shared by every mode, drawn from their conditional."""
    n_r, s_r = _component_statistics(factors)
    v = (priors.hyper_scale + 0.5 * s_r) / rng.standard_gamma(priors.hyper_shape + 0.5 * n_r)
    return tuple(np.zeros_like(v) for _ in factors), tuple(v for _ in factors)


def draw_hyper(rng, factors, priors):
    """Every column's (μ, v) given the factors: per column (each mode's
    Normal–inverse-Gamma conditional) or, under ARD, one v per component."""
    if priors.ard:
        return _draw_shared_variances(rng, factors, priors)
    means, variances = zip(*(_draw_hyper(rng, f, priors) for f in factors))
    return tuple(means), tuple(variances)


def component_energy_shares(factors):
    """Each component's energy :math:`\\prod_n \\lVert A_n(:, r) \\rVert^2`
    (the squared Frobenius norm of its rank-one term) over the largest's."""
    energy = np.prod([np.sum(np.square(f), axis=0) for f in factors], axis=0)
    return energy / energy.max() if energy.max() > 0 else energy


def log_inverse_gamma_density(x, shape, scale):
    """:math:`\\log \\mathcal{IG}(x \\mid \\text{shape}, \\text{scale})`."""
    return shape * np.log(scale) - gammaln(shape) - (shape + 1) * np.log(x) - scale / x


def log_noise_prior(noise_variance, priors):
    return float(log_inverse_gamma_density(noise_variance, priors.noise_shape, priors.noise_scale))


def log_likelihood(stats, factors, noise_variance, sse=None):
    """:math:`\\log p(X \\mid A, \\sigma^2)` over the observed entries."""
    sse = stats.sum_of_squared_errors(factors) if sse is None else sse
    return float(-0.5 * stats.n_observed * np.log(2 * np.pi * noise_variance) - 0.5 * sse / noise_variance)


# ---------------------------------------------------------------- initial state
def init(rng, stats, rank, priors):
    """Random factors (exponential, or standard normal if signed) whose X̂
    has the data's mean square; (μ, v) drawn from their conditionals; σ² at
    the observed values' variance."""
    mean_square = stats.sum_of_squares / stats.n_observed
    scale = (max(mean_square, 1e-12) / rank) ** (0.5 / stats.ndim)
    draw = rng.standard_exponential if priors.nonnegative else rng.standard_normal
    factors = tuple(scale * draw((size, rank)) for size in stats.shape)
    means, variances = draw_hyper(rng, factors, priors)
    noise = max(mean_square, 1e-12)
    return GaussianState(factors, tuple(means), tuple(variances), float(noise))


def _draw_hyper(rng, factor, priors):
    """(μ, v) of every column of ``factor`` from their Normal–inverse-Gamma conditional."""
    location, precision, shape, scale = _posterior_hyper(
        factor.sum(0), (factor**2).sum(0), factor.shape[0], priors
    )
    variance = scale / rng.standard_gamma(shape)
    return location + np.sqrt(variance / precision) * rng.standard_normal(variance.shape), variance


def sample_prior(rng, shape, rank, priors):
    """A draw of (A, μ, v, σ²) from the prior, for simulation-based checks.

    u = μ/√v has density ∝ N(u | 0, 1/s) Φ(u)^I independent of v (drawn by
    the inverse CDF on the grid of :func:`log_hyper_normalizer`; N(0, 1/s)
    for signed factors), so μ = u √v with v ~ IG(a₀, b₀). Under ARD, μ = 0
    and one v per component serves every mode."""
    factors, means, variances = [], [], []
    shared = (priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, size=rank)
              if priors.ard else None)
    for size in shape:
        if priors.ard:  # location 0, one variance per component for every mode
            mu, v = np.zeros(rank), shared
            factors.append(sample_elements(rng, np.zeros((size, rank)),
                                           np.broadcast_to(np.sqrt(v), (size, rank)), priors))
            means.append(mu)
            variances.append(v)
            continue
        mu, v = sample_column_prior(rng, size, rank, priors)
        factors.append(sample_elements(rng, np.broadcast_to(mu, (size, rank)),
                                       np.broadcast_to(np.sqrt(v), (size, rank)), priors))
        means.append(mu)
        variances.append(v)
    noise = priors.noise_scale / rng.standard_gamma(priors.noise_shape)
    return GaussianState(tuple(factors), tuple(means), tuple(variances), float(noise))


def sample_column_prior(rng, n_elements, shape, priors):
    """Draws (``shape`` each) of a column's location and variance (μ, v) from
    their joint hyper-prior, for columns of ``n_elements``: v ~ IG(a₀, b₀)
    and u = μ/√v, independent of v, ∝ N(u | 0, 1/s) Φ(u)^I for a
    non-negative factor (:func:`sample_standardised_location`), N(0, 1/s)
    for a signed one."""
    v = priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, size=shape)
    if priors.nonnegative:
        u = sample_standardised_location(rng, n_elements, priors.hyper_precision, shape)
    else:
        u = rng.standard_normal(shape) / np.sqrt(priors.hyper_precision)
    return u * np.sqrt(v), v


def sample_elements(rng, location, scale, priors):
    """Draws of N(location, scale²), rectified to [0, ∞) for non-negative factors."""
    if priors.nonnegative:
        return sample_rectified_normal(rng, location, scale)
    return location + scale * rng.standard_normal(np.shape(location))


def log_element_density(x, location, scale, priors):
    """The log density of :func:`sample_elements`' draws at ``x``."""
    if priors.nonnegative:
        return log_rectified_normal_density(x, location, scale)
    z = (np.asarray(x, dtype=np.float64) - location) / scale
    return -0.5 * z**2 - np.log(scale) - 0.5 * np.log(2.0 * np.pi)


def sample_standardised_location(rng, n_elements, precision, size):
    """Draws of u = μ/√v ∝ N(u | 0, 1/s) Φ(u)^I, the standardised column
    location of a non-negative factor's hyper-prior (independent of v), by
    the inverse CDF on the grid of :func:`log_hyper_normalizer`."""
    u, log_f = _location_grid(int(n_elements), float(precision))
    cdf = np.cumsum(np.exp(log_f - log_f.max()))
    cdf /= cdf[-1]
    return np.interp(rng.uniform(size=size), cdf, u)




# ------------------------------------------------------------------ Gibbs sweep
class _ModeTerms(NamedTuple):
    """What the column conditionals of mode n read, fixed while mode n is updated."""

    mttkrp: np.ndarray  # I_n x R
    gram: np.ndarray  # R x R, the Hadamard product of the other modes' Grams
    missing_others: np.ndarray | None  # K_n at the missing entries
    missing_precision: np.ndarray | None  # I_n x R: Σ_missing K_n²


def _mode_terms(stats, n, factors, grams):
    others = stats.missing_rows(n, factors)
    precision = None if others is None else stats.scatter_missing(n, others**2)
    return _ModeTerms(stats.mttkrp(n, factors), stats.hadamard_gram(grams, skip=n), others, precision)


def column_conditional(stats, n, r, factor, terms, missing_xhat, mean, variance, noise_variance):
    """Location and scale (standard deviation) of the (rectified) Gaussians of
    column r of mode n given everything else (module docstring);
    ``missing_xhat`` is X̂ at the missing entries with the current ``factor``."""
    linear = terms.mttkrp[:, r] - factor @ terms.gram[:, r] + factor[:, r] * terms.gram[r, r]
    precision = np.full(factor.shape[0], terms.gram[r, r])
    if terms.missing_others is not None:
        k_r = terms.missing_others[:, r]
        rows = stats.missing_row_index(n)
        without_r = missing_xhat - factor[rows, r] * k_r
        linear = linear + stats.scatter_missing(n, (without_r * k_r)[:, None])[:, 0]
        precision = precision - terms.missing_precision[:, r]
    total_precision = np.maximum(precision, 0.0) / noise_variance + 1.0 / variance
    location = (linear / noise_variance + mean / variance) / total_precision
    return location, 1.0 / np.sqrt(total_precision)


def gibbs_sweep(rng, state, stats, priors, clamped=None, clamp_noise=False, visit=None):
    """One sweep: for each mode, every column's (μ, v), then each column;
    then σ². Returns ``(state, info)``.

    ``clamped`` maps a column ``(n, r)`` to True (the column keeps its
    values) or to a boolean array over its elements (those keep theirs; the
    others are drawn, exactly, as the elements are independent given the
    rest); σ² keeps its value with ``clamp_noise``. ``visit(n, r, location,
    scale)`` (or ``visit("noise", shape, scale)``) sees each conditional
    before its draw (Chib's estimator reads them)."""
    clamped = clamped or {}
    factors, means, variances = list(state.factors), list(state.means), list(state.variances)
    grams = stats.grams(factors)
    missing_xhat = stats.missing_xhat(factors)
    if priors.ard:  # one v per component for every mode, given every factor
        means, variances = map(list, _draw_shared_variances(rng, factors, priors))
    for n in range(stats.ndim):
        if not priors.ard:
            means[n], variances[n] = _draw_hyper(rng, factors[n], priors)
        terms = _mode_terms(stats, n, factors, grams)
        factor = factors[n].copy()
        for r in range(factor.shape[1]):
            location, scale = column_conditional(stats, n, r, factor, terms, missing_xhat,
                                                 means[n][r], variances[n][r], state.noise_variance)
            if visit is not None:
                visit(n, r, location, scale)
            keep = clamped.get((n, r))
            if keep is True:
                continue
            new = sample_elements(rng, location, scale, priors)
            if keep is not None:
                new = np.where(keep, factor[:, r], new)
            if terms.missing_others is not None:
                rows = stats.missing_row_index(n)
                missing_xhat = missing_xhat + (new - factor[:, r])[rows] * terms.missing_others[:, r]
            factor[:, r] = new
        factors[n], grams[n] = factor, factor.T @ factor
    # The last mode's MTTKRP and the tracked X̂ at missing entries still hold.
    sse = stats.sum_of_squared_errors(factors, grams=grams, mttkrp=terms.mttkrp,
                                      mode=stats.ndim - 1, missing_xhat=missing_xhat)
    shape, scale = priors.noise_shape + 0.5 * stats.n_observed, priors.noise_scale + 0.5 * sse
    if visit is not None:
        visit("noise", shape, scale)
    noise = state.noise_variance if clamp_noise else float(scale / rng.standard_gamma(shape))
    new_state = GaussianState(tuple(factors), tuple(means), tuple(variances), noise)
    return new_state, GaussianInfo(log_likelihood(stats, factors, noise, sse))


def fold_in(stats, factors, mode, means, variances, noise_variance, *, max_iter=500, tol=1e-8,
            nonnegative=True):
    """Mean-field posterior mean of ``factors[mode]`` with every other factor,
    the column hyper-parameters ``means``/``variances`` (length R) and σ²
    held: coordinate ascent over that mode's columns, each element's factor
    :math:`q(a_{ir})` the (rectified, if ``nonnegative``) Gaussian of :func:`column_conditional`
    with the other columns at their means (the likelihood is quadratic in
    the factor, so this is exact mean-field VB). The start is
    ``factors[mode]``. Each row (sample) stops once its own entries change by
    less than ``tol`` relative to its largest, so a row's result depends on
    its data alone, not on the other rows.
    """
    factors = list(factors)
    terms = _mode_terms(stats, mode, factors, stats.grams(factors))
    factor = factors[mode].copy()
    active = np.ones(factor.shape[0], dtype=bool)
    # Kept up to date column by column below.
    missing_xhat = stats.missing_xhat([factor if m == mode else f for m, f in enumerate(factors)])
    for _ in range(max_iter):
        old = factor.copy()
        for r in range(factor.shape[1]):
            location, scale = column_conditional(stats, mode, r, factor, terms, missing_xhat,
                                                 means[r], variances[r], noise_variance)
            mean = rectified_normal_mean(location, scale) if nonnegative else location
            new = np.where(active, mean, factor[:, r])
            if terms.missing_others is not None:
                rows = stats.missing_row_index(mode)
                missing_xhat = missing_xhat + (new - factor[:, r])[rows] * terms.missing_others[:, r]
            factor[:, r] = new
        change = np.max(np.abs(factor - old), axis=1) / np.maximum(np.max(np.abs(old), axis=1), 1e-300)
        active &= change > tol
        if not active.any():
            break
    return factor


# ------------------------------------------------------------------------ HMC
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
class GaussianChain(NamedTuple):
    """One chain's output (or several pooled, :func:`pool_chains`): posterior
    means of the factors and of their logs (None for signed factors), of
    each column's (μ, v) and of σ², the kept draws (or None; a leading chain
    axis once pooled), log p(X | A, σ²) after every iteration (warm-up
    included; a row per chain once pooled), the kept state of highest log
    joint and that log joint, the mean acceptance probability after warm-up
    and HMC's adapted step size (None for Gibbs; the chains' mean once
    pooled)."""

    mean_factors: tuple
    mean_log_factors: tuple
    mean_hyper_means: tuple
    mean_hyper_variances: tuple
    mean_noise_variance: float
    draws: tuple | None
    log_likelihoods: np.ndarray
    best: GaussianState
    best_log_joint: float
    acceptance: float
    step_size: float | None
    noise_variance_draws: np.ndarray | None = None  # σ² at each kept draw, with ``draws``


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


def run_chain(rng, stats, rank, priors, *, sampler="gibbs", n_warmup=500, n_draws=1000, thin=1,
              keep_draws=True, step_size=0.05, n_leapfrog=20, target_acceptance=0.8, verbose=0,
              label=None):
    """Run one Gibbs (:func:`gibbs_sweep`) or HMC (:class:`AdaptiveHMC`) chain
    from a random start (:func:`init`) with
    :func:`~sklearn_pltf.inference._chains.drive_chain`. HMC's
    ``target_acceptance`` should be at least 0.75 (Schmidt & Mohamed's rule
    asks for rejections below 25%). With ``verbose``, progress lines headed
    ``label`` (default: the sampler's name and "chain") give the time left."""
    state = init(rng, stats, rank, priors)
    if sampler == "hmc":
        transition = AdaptiveHMC(stats, priors, n_warmup=n_warmup, step_size=step_size,
                                 n_leapfrog=n_leapfrog, target_acceptance=target_acceptance)
    else:
        transition = lambda rng, state: gibbs_sweep(rng, state, stats, priors)  # noqa: E731
    n = len(state.factors)
    chain = drive_chain(
        rng, state, transition, lambda state: _log_prior(state, priors), tuple(range(n)),
        n_warmup=n_warmup, n_draws=n_draws, thin=thin, keep_draws=keep_draws, verbose=verbose,
        label=label or f"{sampler} chain", unit="iterations", log_summaries=priors.nonnegative,
        collect=lambda state, info: (*state.means, *state.variances, state.noise_variance,
                                     info.acceptance),
        record=lambda state: state.noise_variance)
    hyper = chain.collected
    return GaussianChain(
        chain.mean, chain.mean_log if priors.nonnegative else None, hyper[:n], hyper[n:2 * n],
        hyper[2 * n], chain.draws if keep_draws else None, chain.log_likelihoods, chain.best_state,
        chain.best_log_joint, float(hyper[2 * n + 1]),
        transition.adaptation.final if sampler == "hmc" else None, chain.recorded,
    )


def pool_chains(chains):
    """Chains of one model pooled into one :class:`GaussianChain`.

    Each chain settles in one of the posterior's symmetric modes: its
    columns in any order and, for signed factors, a column's signs flipped
    in any set of factors whose product of signs is one. Every chain is
    aligned to the first before averaging: the column order is the
    assignment (Hungarian algorithm) minimising the summed
    ``1 - |cos|`` between the first chain's posterior-mean columns and its
    own over the factors, then (signed factors) each factor but the first
    takes the sign of that cosine and the first the product of theirs.
    Switching within a chain is not undone.
    """
    reference = chains[0]
    aligned = [reference] + [_aligned_to(reference, chain) for chain in chains[1:]]
    n = len(reference.mean_factors)

    def mean(field):
        return tuple(np.mean([getattr(c, field)[m] for c in aligned], axis=0) for m in range(n))

    best = max(aligned, key=lambda c: c.best_log_joint)
    step_sizes = [c.step_size for c in aligned]
    return GaussianChain(
        mean("mean_factors"),
        None if reference.mean_log_factors is None else mean("mean_log_factors"),
        mean("mean_hyper_means"), mean("mean_hyper_variances"),
        float(np.mean([c.mean_noise_variance for c in aligned])),
        None if reference.draws is None else tuple(
            np.stack([c.draws[m] for c in aligned]) for m in range(n)),
        np.stack([c.log_likelihoods for c in aligned]), best.best, best.best_log_joint,
        float(np.mean([c.acceptance for c in aligned])),
        None if step_sizes[0] is None else float(np.mean(step_sizes)),
        None if reference.noise_variance_draws is None else np.stack(
            [c.noise_variance_draws for c in aligned]),
    )


def _aligned_to(reference, chain):
    """``chain`` with its columns ordered, and signed columns flipped, to match ``reference``."""
    cosines = [_column_cosines(a, b) for a, b in zip(reference.mean_factors, chain.mean_factors)]
    _, order = linear_sum_assignment(sum(1.0 - np.abs(c) for c in cosines))
    signs = [np.where(c[np.arange(order.size), order] < 0, -1.0, 1.0) for c in cosines]
    signs[0] = np.prod(signs[1:], axis=0)
    if chain.mean_log_factors is not None:  # non-negative: no signs to flip
        signs = [np.ones(order.size)] * len(signs)

    def moved(arrays, flip=True):
        return tuple(np.take(x, order, axis=-1) * (s if flip else 1.0)
                     for x, s in zip(arrays, signs))

    return chain._replace(
        mean_factors=moved(chain.mean_factors),
        mean_log_factors=(None if chain.mean_log_factors is None
                          else moved(chain.mean_log_factors, flip=False)),
        mean_hyper_means=moved(chain.mean_hyper_means),
        mean_hyper_variances=moved(chain.mean_hyper_variances, flip=False),
        draws=None if chain.draws is None else moved(chain.draws),
    )


def _column_cosines(first, second):
    """Cosines between the columns of two (I, R) matrices: (R, R)."""
    a = first / np.maximum(np.linalg.norm(first, axis=0), 1e-300)
    b = second / np.maximum(np.linalg.norm(second, axis=0), 1e-300)
    return a.T @ b


def _regularised_variances(window):
    """Each position's (log-factor's, or signed factor's) variance over the window, shrunk toward 1e-3
    as Stan does (weight 5 / (n + 5)), for the inverse mass."""
    n = len(window)
    return [
        (n / (n + 5.0)) * np.var(np.array([w[m] for w in window]), axis=0, ddof=1) + 1e-3 * 5.0 / (n + 5.0)
        for m in range(len(window[0]))
    ]
