"""The column-wise Gibbs sweep of the Gaussian family and the mean-field fold-in
of new samples (:mod:`sklearn_pltf.inference.gaussian`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._truncnorm import rectified_normal_mean
from ._model import (GaussianInfo, GaussianState, _draw_hyper, _draw_shared_variances,
                     log_likelihood, sample_elements)


class _ModeTerms(NamedTuple):
    """What the column conditionals of mode n read, fixed while mode n is updated."""

    mttkrp: np.ndarray  # I_n x R
    gram: np.ndarray  # R x R, the design's Gram (CP: the Hadamard product of the other modes' Grams)
    missing_others: np.ndarray | None  # K_n at the missing entries
    missing_precision: np.ndarray | None  # I_n x R: Σ_missing K_n²


def _mode_terms(stats, n, factors, grams):
    others = stats.missing_rows(n, factors)
    precision = None if others is None else stats.scatter_missing(n, others**2)
    return _ModeTerms(stats.mttkrp(n, factors), stats.design_gram(grams, skip=n), others, precision)


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
    """One sweep: for each mode, every column's (μ, v) (under ARD, each
    group's shared v first), then each column; then σ². Returns ``(state, info)``.

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
    # ARD: each group's v per component, given all its factors; then, per
    # factor outside every group, its columns' (μ, v) as its turn comes.
    shared_means, shared_variances = _draw_shared_variances(rng, factors, priors)
    for n in range(stats.n_factors):
        if shared_means[n] is None:
            means[n], variances[n] = _draw_hyper(rng, factors[n], priors)
        else:
            means[n], variances[n] = shared_means[n], shared_variances[n]
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
                                      mode=stats.n_factors - 1, missing_xhat=missing_xhat)
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
