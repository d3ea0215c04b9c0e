"""The Gaussian family's model (:mod:`sklearn_pltf.inference.gaussian`): priors, states, the
column hyper-parameters and their closed-form marginals, densities and prior draws."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy.special import gammaln, log_ndtr, logsumexp

from .._truncnorm import log_rectified_normal_density, sample_rectified_normal


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
    #: True: location 0 and one variance per component shared by the factors
    #: of a group (ARD), v ~ IG(``hyper_shape``, ``hyper_scale``);
    #: ``hyper_precision`` unused for them.
    ard: bool = False
    #: Under ARD, per factor, the label of the group whose component variances
    #: its columns share (on a model string: the factor's one latent index),
    #: or None for a factor whose columns keep their own (μ, v). None: every
    #: factor in one group (CP's components shared by every mode).
    shared: tuple | None = None


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
    sum of :func:`log_factor_prior` over the factors outside every ARD
    group, and for each group (:func:`ard_members`) the Student-type
    marginal of each of its components over its factors,
    :math:`\\log \\frac{b_0^{a_0} \\Gamma(a_0 + N_r/2)}{\\Gamma(a_0)
    (b_0 + S_r/2)^{a_0 + N_r/2}} - \\frac{N_r}{2} \\log 2\\pi`, plus
    :math:`N_r \\log 2` for half-normal elements."""
    factors = [np.asarray(f, dtype=np.float64) for f in factors]
    groups = ard_members(priors, len(factors))
    grouped = {n for members in groups.values() for n in members}
    if priors.nonnegative and any(np.any(factors[n] < 0) for n in grouped):
        return -np.inf
    a, b = priors.hyper_shape, priors.hyper_scale
    total = sum(log_factor_prior(f, priors) for n, f in enumerate(factors) if n not in grouped)
    for members in groups.values():
        n_r, s_r = _component_statistics([factors[n] for n in members])
        per_component = (a * np.log(b) - gammaln(a) + gammaln(a + 0.5 * n_r)
                         - (a + 0.5 * n_r) * np.log(b + 0.5 * s_r)
                         - 0.5 * n_r * np.log(2 * np.pi)
                         + (n_r * np.log(2.0) if priors.nonnegative else 0.0))
        total += np.sum(per_component)
    return float(total)


def ard_members(priors, n_factors):
    """The ARD groups: ``{label: [factor, ...]}`` in first-seen order
    (:attr:`GaussianPriors.shared`); empty without ARD."""
    if not priors.ard:
        return {}
    shared = priors.shared if priors.shared is not None else (0,) * n_factors
    groups = {}
    for n, label in enumerate(shared):
        if label is not None:
            groups.setdefault(label, []).append(n)
    return groups


def _component_statistics(factors):
    """ARD's statistics of each component r over the given factors: its
    elements' count :math:`N_r` and sum of squares :math:`S_r`."""
    return sum(f.shape[0] for f in factors), sum(np.sum(f**2, axis=0) for f in factors)


def _draw_shared_variances(rng, factors, priors):
    """ARD: each group's column locations (zeros) and variances :math:`v_r`,
    shared by the group's factors, drawn from their conditional; per factor,
    None outside every group."""
    means, variances = [None] * len(factors), [None] * len(factors)
    for members in ard_members(priors, len(factors)).values():
        n_r, s_r = _component_statistics([factors[n] for n in members])
        # One Gamma variate per component: the v_r are independent given the factors.
        v = (priors.hyper_scale + 0.5 * s_r) / rng.standard_gamma(priors.hyper_shape + 0.5 * n_r,
                                                                  size=s_r.shape)
        for n in members:
            means[n], variances[n] = np.zeros_like(v), v
    return tuple(means), tuple(variances)


def draw_hyper(rng, factors, priors):
    """Every column's (μ, v) given the factors: under ARD each group's
    shared v first, then, per column, each other factor's
    Normal–inverse-Gamma conditional."""
    means, variances = map(list, _draw_shared_variances(rng, factors, priors))
    for n, f in enumerate(factors):
        if means[n] is None:
            means[n], variances[n] = _draw_hyper(rng, f, priors)
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
    scale = (max(mean_square, 1e-12) / stats.n_terms(rank)) ** (0.5 / stats.n_factors)
    draw = rng.standard_exponential if priors.nonnegative else rng.standard_normal
    factors = tuple(scale * draw(shape) for shape in stats.factor_shapes(rank))
    means, variances = draw_hyper(rng, factors, priors)
    noise = max(mean_square, 1e-12)
    return GaussianState(factors, tuple(means), tuple(variances), float(noise))


def _draw_hyper(rng, factor, priors):
    """(μ, v) of every column of ``factor`` from their Normal–inverse-Gamma conditional."""
    location, precision, shape, scale = _posterior_hyper(
        factor.sum(0), (factor**2).sum(0), factor.shape[0], priors
    )
    variance = scale / rng.standard_gamma(shape, size=scale.shape)  # one per column
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
