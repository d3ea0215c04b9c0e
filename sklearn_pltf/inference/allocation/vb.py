"""Variational Bayes for the Bayesian Allocation Model: the dense-data
counterpart of its sequential Monte Carlo (:mod:`.smc`), with a bound in
nats that the package's one loop
(:func:`~sklearn_pltf.inference._convergence.run_to_convergence`) runs to
``tol``."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.special import digamma, gammaln

from ...engine._progress import progress_or_none
from .. import _states
from .._convergence import run_to_convergence
from .smc import (AllocationData, _log_multinomial, _normalised, _written_factors,
                  log_total_prior, total_posterior)

__all__ = ["AllocationVBState", "VBResult", "vb_init", "vb_step", "run_vb", "vb_tables", "vb_total_posterior", "vb_factor_means"]


class AllocationVBState(NamedTuple):
    """Dirichlet parameters of q(θ), every table's laid out as the urn's
    counts (their parent cells hold their sums over the children)."""

    concentration: np.ndarray


class _CellPositions:
    """The layout positions every listed cell (``coords``, N x cells)
    touches under every latent configuration: per table, its family cell,
    (cells, H), computed when iterated (:meth:`families`; holding all F at
    once would take cells x H x F integers), and its parent cell,
    ``parents`` (F, H), the same for every cell (parents are latent)."""

    def __init__(self, network, coords):
        self.slots = network.slot_offsets(coords.T)
        self.latent_offsets = network.latent_offsets
        self.parents = (network.starts[1::2, None] + network.latent_offsets[:, 1::2].T)

    def families(self):
        for j in range(0, self.slots.shape[1], 2):
            yield self.slots[:, j, None] + self.latent_offsets[None, :, j]


def _log_terms(values, indices):
    """Σ_f (values at the family cell − at the parent cell) of every listed
    cell under every configuration, (cells, H)."""
    return _log_terms_of([values], indices)[0]


def _log_terms_of(columns, indices):
    """:func:`_log_terms` of each array of ``columns``, each family position
    computed once for them all."""
    sums = [0.0] * len(columns)
    for slot in indices.families():
        sums = [total + values[slot] for total, values in zip(sums, columns)]
    return [total - values[indices.parents].sum(axis=0) for total, values in zip(sums, columns)]


def _expected(L, indices, weighted):
    """Expected tokens per layout cell from listed cells' expected tokens
    ``weighted`` (cells, H) at their positions ``indices``."""
    per_configuration = weighted.sum(axis=0)
    return (sum(np.bincount(slot.ravel(), weights=weighted.ravel(), minlength=L)
                for slot in indices.families())
            + np.bincount(indices.parents.ravel(),
                          weights=np.tile(per_configuration, indices.parents.shape[0]),
                          minlength=L))


def _from_expected(data, *pairs):
    """q(θ) from expected allocations: ``(indices, weighted)`` pairs, each a
    :class:`_CellPositions` and its cells' expected tokens (cells, H)."""
    L = data.network.n_cells
    return AllocationVBState(data.network.alpha + sum(_expected(L, indices, weighted)
                                            for indices, weighted in pairs))


def vb_init(rng, data, indices):
    """q(θ) from random responsibilities of the observed cells (each row
    Dirichlet(1)); ``indices`` their :class:`_CellPositions`."""
    H = data.network.n_configurations
    responsibilities = rng.dirichlet(np.ones(H), size=data.counts.size)
    return _from_expected(data, (indices, data.counts[:, None] * responsibilities))


# Above this many tokens the bound takes the observed zero cells' share of
# the mean tables' mass cell by cell: as one minus the other cells' share it
# carries a rounding error of about T x 1e-16 nats (below 1e-5 here).
_SUBTRACTED_ZERO_SHARE_MAX_TOKENS = 2**36
# ... provided they are at most this many, or as many as the non-zero cells.
_MAX_LISTED_ZERO_CELLS = 2**22
# Series below are used from here up (their first omitted terms < 1e-21).
_ASYMPTOTIC_FROM = 100.0


def _stirling_remainder(x):
    """log Γ(x) − x log x + x, elementwise, without the cancellation of its
    terms for large x (Stirling's series: ½ log(2π / x) + 1/(12x) − ...)."""
    def series(big):
        inverse = 1.0 / big
        square = inverse * inverse
        return 0.5 * np.log(2.0 * np.pi / big) + inverse * (
            1.0 / 12 - square * (1.0 / 360 - square * (1.0 / 1260 - square / 1680)))

    return _series_above(x, series, lambda small: gammaln(small) - small * np.log(small) + small)


def _digamma_gap(x):
    """log x − ψ(x) > 0, elementwise, without cancellation for large x
    (1/(2x) + 1/(12x²) − ...)."""
    def series(big):
        inverse = 1.0 / big
        square = inverse * inverse
        return 0.5 * inverse + square * (
            1.0 / 12 - square * (1.0 / 120 - square * (1.0 / 252 - square / 240)))

    return _series_above(x, series, lambda small: np.log(small) - digamma(small))


def _series_above(x, series, exact):
    """``series`` (an asymptotic expansion) where ``x >= _ASYMPTOTIC_FROM``,
    ``exact`` below, elementwise."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    large = x >= _ASYMPTOTIC_FROM
    out[large] = series(x[large])
    out[~large] = exact(x[~large])
    return out


def _normalisation_residuals(network, gamma):
    """Two sums that vanish for exact arithmetic, from the stored Dirichlet
    parameters ``gamma``, each exactly rounded: Σ_c s_c γ_c (each parent
    cell holds the sum of its children, up to the rounding of the sums that
    formed them) and Z − 1, Z the mass that the tables at q's means give
    all cells of the tensor under all configurations (1 when every table's
    rows sum to one).

    Each table's children are observed indices (its rows sum to 1 + ε(pa))
    or, for a root, latent ones; every index is the child of one table, so
    Z = Σ_h ρ(h) Π_f (1 + ε_f(pa_f(h))), ρ(h) the roots' ratios."""
    H = network.n_configurations
    output = set(network.model.output)
    offsets = network.latent_offsets
    excesses = []
    log_roots = np.zeros(H)  # log ρ(h)
    log_root_sums = 0.0  # log Σ_h ρ(h)
    log_rows = np.zeros(H)  # Σ_f log(1 + ε_f(pa_f(h))) over the observed-child tables
    for f, table in enumerate(network.tables):
        family = network.segment(gamma, f)
        parents = network.segment(gamma, f, parents=True).reshape(-1)
        children = table.child_axes
        rows = np.moveaxis(family, children, range(family.ndim - len(children), family.ndim))
        rows = rows.reshape(parents.size, -1)
        excess = _row_sums_minus(rows, parents)
        excesses.append(excess)
        relative = np.log1p(excess / parents)
        if set(table.children) & output:
            log_rows += relative[offsets[:, 2 * f + 1]]
        else:  # a root: one parent cell, its children latent
            log_root_sums += float(relative[0])
            log_roots += np.log(family.reshape(-1)[offsets[:, 2 * f]] / parents[0])
    z_minus_one = float(np.expm1(log_root_sums) + np.exp(log_roots) @ np.expm1(log_rows))
    return math.fsum(np.concatenate(excesses)), z_minus_one


def _row_sums_minus(rows, subtrahends):
    """``rows.sum(axis=1) - subtrahends`` with the error of a sum in twice
    the precision: pairwise, each addition's rounding error kept exactly
    (Knuth's TwoSum) and the errors summed apart, so that a difference of
    sums of ~10^17 comes out to ~1e-15."""
    values = np.concatenate([rows, -np.asarray(subtrahends)[:, None]], axis=1)
    errors = np.zeros(values.shape[0])
    while values.shape[1] > 1:
        if values.shape[1] % 2:
            values = np.concatenate([values, np.zeros((values.shape[0], 1))], axis=1)
        first, second = values[:, 0::2], values[:, 1::2]
        values = first + second
        back = values - first
        errors += ((first - (values - back)) + (second - back)).sum(axis=1)
    return values[:, 0] + errors


def _listed_zero_cells(data):
    """The observed zero cells (N x n), when the bound needs them listed
    (:data:`_SUBTRACTED_ZERO_SHARE_MAX_TOKENS`), else None."""
    size = math.prod(data.shape)
    n_zero = size - data.counts.size - data.missing.shape[1]
    if n_zero == 0 or data.total <= _SUBTRACTED_ZERO_SHARE_MAX_TOKENS:
        return None
    if n_zero > max(_MAX_LISTED_ZERO_CELLS, data.counts.size) or size > 2**33:
        raise ValueError(
            f"The variational bound of {data.total:.4g} tokens sums the tables' mass on the "
            f"{n_zero} zero cells one by one (as the rest of the mass, its rounding error "
            f"would reach {data.total * 2.0**-52:.3g} nats); it lists at most "
            f"{max(_MAX_LISTED_ZERO_CELLS, data.counts.size)} of them, as many as the non-zero "
            f"cells or {_MAX_LISTED_ZERO_CELLS}. Scale the counts down to at most "
            f"{_SUBTRACTED_ZERO_SHARE_MAX_TOKENS:.4g} in all, or use method='smc'.")
    unlisted = np.ones(data.shape, dtype=bool)
    unlisted[tuple(data.coords)] = False
    unlisted[tuple(data.missing)] = False
    return np.array(np.nonzero(unlisted), dtype=np.int64).reshape(len(data.shape), -1)


def _divergence(weights, log_weights, u):
    """Σ S (u − 1 + e^{−u}) over the entries with S > 0: the part of
    Σ S log(S / q) (u = log(S / q)) that is second order in u, so that its
    rounding does not grow with S where the model fits. Below u = −1 it is
    taken as S u + q − S (e^{−u} may overflow where S is 0)."""
    weights, log_weights, u = weights.ravel(), log_weights.ravel(), u.ravel()
    near = u >= -1.0
    total = float(weights @ np.where(near, u + np.expm1(-np.maximum(u, -1.0)), 0.0))
    far = np.flatnonzero(~near & (weights > 0))
    if far.size:
        S, u, log_S = weights[far], u[far], log_weights[far]
        total += float(np.sum(S * u + np.exp(log_S - u) - S))
    return total


def _log_observed_constant(data, p_missing):
    """log [b^a Γ(a + T) / (Γ(a) Π X(i)!)] − (a + T) log(b + 1 − p_missing):
    the terms of log p(X_O | θ) free of θ once p_O = 1 − p_missing."""
    shift = np.log1p(-p_missing / (data.rate + 1.0))
    return log_total_prior(data) + _log_multinomial(data) - (data.concentration + data.total) * shift


def vb_step(state, data, indices, missing_indices, zero_indices=None):
    """One coordinate-ascent sweep: responsibilities from q(θ), then q(θ).

    With λ integrated out, p(X_O | θ) = b^a Γ(a + T) / (Γ(a) Π X(i)!)
    Π_i p_i^{X(i)} (b + p_O)^{-(a + T)}, p_O the probability of the observed
    cells and p_M = 1 − p_O that of the unobserved ones. Returns the new
    state and the bound at the old q(θ),

    .. math::

        C(P_M) + \\sum_i X(i) \\log \\sum_h
        e^{\\sum_f E\\log\\theta_f(c_f(i, h))} - \\mathrm{KL}(q(\\theta) \\| p(\\theta)),
        \\qquad P_M = \\sum_{m \\in M} \\sum_h e^{\\sum_f E\\log\\theta_f(c_f(m, h))},

    :func:`_log_observed_constant` ``C``, which never decreases from one
    sweep to the next: −(a + T) log(b + 1 − p_M) lies above its tangent in
    p_M at P_M, which is linear in p_M with slope κ = (a + T) / (b + 1 −
    P_M), and E p_M ≥ P_M (Jensen, term by term). The update gives the
    unobserved cells κ e^{Σ_f E log θ_f} expected tokens under each
    configuration, beside the observed cells' responsibilities. With γ the
    Dirichlet parameters and s = ±1 on family and parent cells,
    ``E log θ_f(c) = ψ(γ(c)) - ψ(γ(pa(c)))`` and
    ``KL = Σ s (log Γ(α) - log Γ(γ) + (γ - α) ψ(γ))``. Fully observed,
    P_M = 0 and C = log p(T) + log T! / Π X(i)!.

    The bound is evaluated by :func:`_bound`, in a form whose terms stay of
    the size of the result however large the counts (written as above, they
    reach T log T and cancel: at T = 10^17 their rounding alone is hundreds
    of nats). ``zero_indices`` are the observed zero cells'
    :class:`_CellPositions` where the bound needs them listed (more than
    2^36 tokens, :func:`_listed_zero_cells`; found here when None).
    """
    alpha, gamma = data.network.alpha, state.concentration
    digammas, gaps, log_gamma = digamma(gamma), _digamma_gap(gamma), np.log(gamma)
    if zero_indices is None:
        zeros = _listed_zero_cells(data)
        zero_indices = None if zeros is None else _CellPositions(data.network, zeros)
    # The zero cells' mass as the rest of it needs the observed cells' mass.
    subtracted = (zero_indices is None
                  and math.prod(data.shape) > data.counts.size + data.missing.shape[1])
    log_responsibilities, observed_gaps, *observed_log_mass = _log_terms_of(
        [digammas, gaps] + ([log_gamma] if subtracted else []), indices)
    top = log_responsibilities.max(axis=1, initial=-np.inf, keepdims=True)
    log_responsibilities -= top
    responsibilities = np.exp(log_responsibilities)
    sums = responsibilities.sum(axis=1, keepdims=True)
    responsibilities /= sums
    log_sums = np.log(sums)
    log_responsibilities -= log_sums
    log_norm = (top + log_sums).ravel()
    missing_log_terms, missing_gaps, missing_log_mass = _log_terms_of(
        [digammas, gaps, log_gamma], missing_indices)
    missing_terms = np.exp(missing_log_terms)
    p_missing = float(missing_terms.sum())
    slope = (data.concentration + data.total) / (data.rate + 1.0 - p_missing)
    weighted = data.counts[:, None] * responsibilities
    observed = _expected(data.network.n_cells, indices, weighted)
    new = AllocationVBState(alpha + observed
                  + _expected(data.network.n_cells, missing_indices, slope * missing_terms))
    bound = _bound(data, gamma, gaps, log_gamma, log_norm, log_responsibilities, weighted,
                   observed, observed_gaps, observed_log_mass[0] if subtracted else None,
                   missing_gaps, missing_log_mass, zero_indices)
    return new, bound


def _bound(data, gamma, gaps, log_gamma, log_norm, log_responsibilities, weighted, observed,
           observed_gaps, observed_log_mass, missing_gaps, missing_log_mass, zero_indices):
    """The bound of :func:`vb_step` at q(θ) = Dir(``gamma``) with the
    optimal responsibilities (``log_responsibilities``; ``weighted`` = X r,
    ``observed`` their expected tokens per layout cell m), in terms that do
    not grow with the counts. ``gaps`` is D(γ) and ``log_gamma`` log γ per
    layout cell; per observed and unobserved cell and configuration,
    ``*_gaps`` is E and ``*_log_mass`` log P̃ (for the observed cells only
    where the zero cells' mass is taken as the rest, else None);
    ``zero_indices`` lists the zero cells where they are summed.

    With R(x) = log Γ(x) − x log x + x, D(x) = log x − ψ(x), P̃(i, h) the
    tables' mass at q's means (Π_f γ(c_f) / γ(pa_f)), E(i, h) = log P̃ −
    Σ_f E log θ_f = Σ_f s D(γ), W = Z − P̃_M the observed cells' mass and
    u = log(X(i) r(i, h) W / (T P̃(i, h))), the bound of :func:`vb_step` is,
    term for term,

    .. math::

        K + \\sum_c s_c [\\alpha_c \\log\\gamma_c + R(\\gamma_c)
          - \\log\\Gamma(\\alpha_c) - (m_c - \\gamma_c + \\alpha_c) D(\\gamma_c)]
          - \\sum_c s_c \\gamma_c - \\sum_i [R(X_i) + \\log X_i]
          - \\sum_{i,h} X_i r_{ih} (u - 1 + e^{-u}) - T \\tilde P_Z / W
          + T \\log\\Big(1 + \\frac{W - 1 + y}{1 - y}\\Big) - a \\log(1 - y),

    K = T log(1 + a/T) + a log(a + T) − a + R(a + T) − log Γ(a) + a log(b /
    (b + 1)) − T log(1 + b), y = P_M / (b + 1) and P̃_Z the zero cells'
    mass: T log T − T cancels between log Γ(a + T) and the multinomial, the
    x log x of every log Γ and ψ between the likelihood and the KL, and what
    is left of Σ X(i) log(X(i) / (T p_i)) is second order in u. The sums
    that vanish exactly (Σ s γ, Z − 1, P_M − P̃_M) are formed from their
    parts' differences (:func:`_normalisation_residuals`), never as a
    difference of totals.
    """
    network = data.network
    a, b, T = data.concentration, data.rate, float(data.total)
    alpha, signs = network.alpha, network.cell_signs()
    excess, z_minus_one = _normalisation_residuals(network, gamma)
    cells = float(signs @ (alpha * log_gamma + _stirling_remainder(gamma) - gammaln(alpha)
                           - (observed - gamma + alpha) * gaps)) - excess
    # The unobserved cells: P̃_M and δ = P_M − P̃_M = Σ P̃ (e^{−E} − 1).
    missing_mass = np.exp(missing_log_mass)
    p_tilde_missing = float(missing_mass.sum())
    delta = float(np.sum(missing_mass * np.expm1(-missing_gaps)))
    mass = 1.0 + z_minus_one - p_tilde_missing  # W
    y = (p_tilde_missing + delta) / (b + 1.0)
    tail = (T * np.log1p((z_minus_one + (delta - b * p_tilde_missing) / (b + 1.0)) / (1.0 - y))
            - a * np.log1p(-y))
    counts = data.counts.astype(np.float64)
    entries = -float(np.sum(_stirling_remainder(counts) + np.log(counts)))
    divergence, zero_share = 0.0, 0.0
    if T > 0:
        u = (np.log(counts / T) - log_norm)[:, None] - observed_gaps + np.log(mass)
        log_weights = np.log(counts)[:, None] + log_responsibilities
        divergence = _divergence(weighted, log_weights, u)
        if zero_indices is not None:
            zero_share = T * float(np.exp(_log_terms(log_gamma, zero_indices)).sum()) / mass
        elif observed_log_mass is not None:
            # At most 2^36 tokens: the rest of the mass, its rounding below 1e-5 nats.
            observed_mass = float(np.exp(observed_log_mass).sum())
            zero_share = T * max(math.fsum([1.0, z_minus_one, -p_tilde_missing,
                                            -observed_mass]), 0.0) / mass
    K = (gammaln(a + T) - gammaln(a) if T == 0 else
         T * np.log1p(a / T) + a * np.log(a + T) - a
         + float(_stirling_remainder(np.array([a + T]))[0]) - gammaln(a))
    K += a * (np.log(b) - np.log1p(b)) - T * np.log1p(b)
    return float(K + cells + entries - divergence - zero_share + tail)


class VBResult(NamedTuple):
    state: AllocationVBState
    lower_bound: float
    lower_bounds: np.ndarray
    converged: bool


class _VBProblem(NamedTuple):
    """What the sweeps read: the data and their cells' positions."""

    data: AllocationData
    indices: _CellPositions
    missing_indices: _CellPositions
    zero_indices: object  # _CellPositions or None


class _VBIterate(NamedTuple):
    """q(θ), its bound, and q(θ) after one sweep from it (the sweep that
    evaluates a bound also makes the next update)."""

    state: AllocationVBState
    bound: float
    following: AllocationVBState


class _VBInfo(NamedTuple):
    objective: float


class _AllocationVBKernel:
    """The BAM's coordinate ascent in the kernel protocol
    (:class:`~sklearn_pltf.inference._driver.OptimizerKernel`) that
    :func:`~sklearn_pltf.inference._convergence.run_to_convergence` reads: a
    step moves to the next q(θ) and reports its bound (``priors`` unused).
    Its state is a :class:`_VBIterate`, its own point (it runs without
    acceleration); nothing is learned, and there is one stage."""

    @staticmethod
    def init(state, problem):
        """The iterate at q(θ) ``state``: its bound, and the sweep from it."""
        following, bound = vb_step(state, problem.data, problem.indices, problem.missing_indices,
                                   problem.zero_indices)
        return _VBIterate(state, bound, following)

    @staticmethod
    def step(iterate, problem, priors=None, with_objective=True):
        new = _AllocationVBKernel.init(iterate.following, problem)
        return new, _VBInfo(new.bound)

    @staticmethod
    def objective(iterate, problem, priors=None):
        return iterate.bound

    point = staticmethod(_states.point)
    moved = staticmethod(_states.moved)
    priors_at = staticmethod(_states.priors_at)
    advance = staticmethod(_states.advance)


def run_vb(rng, data, *, max_iter=500, tol=0.1, verbose=0):
    """Coordinate ascent until the bound is estimated to be within ``tol``
    nats of its limit, the package's rule
    (:func:`~sklearn_pltf.inference._convergence.run_to_convergence`), or
    ``max_iter`` sweeps (with ``verbose``, progress lines give the time left
    to ``max_iter``). ``lower_bounds`` holds the bound of the first q(θ),
    after every sweep, then that of the final q(θ), one sweep further."""
    zeros = _listed_zero_cells(data)
    problem = _VBProblem(data, _CellPositions(data.network, data.coords),
                         _CellPositions(data.network, data.missing),
                         None if zeros is None else _CellPositions(data.network, zeros))
    kernel = _AllocationVBKernel
    first = kernel.init(vb_init(rng, data, problem.indices), problem)
    progress = progress_or_none(verbose, "Allocation VB", max_iter, unit="iterations")
    last, bounds, converged = run_to_convergence(
        kernel, first, problem, None, max_iter, tol,
        report=None if progress is None else (lambda iteration, objectives: progress()),
        acceleration=None)
    final, _ = kernel.step(last, problem)
    return VBResult(final.state, final.bound, np.array([first.bound, *bounds, final.bound]),
                    converged)


def vb_tables(state, network):
    """Per table, q's Dirichlet parameters shaped (1, *family)."""
    gamma = state.concentration[None]
    return [network.segment(gamma, f) for f in range(len(network.tables))]


def vb_total_posterior(state, data):
    """λ's Gamma posterior given θ at q's means, (a + T, b + 1 − p_M), p_M
    the unobserved cells' probability there (0 when all are observed)."""
    shape, rate = total_posterior(data)
    log_means = np.log(state.concentration)
    positions = _CellPositions(data.network, data.missing)
    return shape, rate - float(np.exp(_log_terms(log_means, positions)).sum())


def vb_factor_means(state, network, total_posterior):
    """The written factors at q's means, combined as
    :func:`particle_factor_means` combines them, with λ at its mean under
    ``total_posterior`` (:func:`vb_total_posterior`)."""
    shape, rate = total_posterior
    means = [_normalised(table, parameters) for table, parameters in
             zip(network.tables, vb_tables(state, network))]
    return [f[0] for f in _written_factors(network, means, np.array([shape / rate]))]


# ---------------------------------------------------------------- fold-in
