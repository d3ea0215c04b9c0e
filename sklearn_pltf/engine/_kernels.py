"""numba kernels for the per-entry loops of the sparse path (the Bayesian
Allocation Model's urn kernels are in :mod:`sklearn_pltf.inference.allocation._urn_kernels`).

Every factor is packed as a 2-D table (rows: its observed-index block, columns:
its latent-index block) into one flat buffer. For a listed entry ``n`` and a
configuration ``l`` of *all* latent indices, the model's term is

    Π_α table_α[row_α(n), col_α(l)],

so X̂(n) = Σ_l Π_α (...) and Δ_α(w)[row_α(n), col_α(l)] += w_n Π_{α'≠α} (...).
One pass over the entries gathers, multiplies and scatter-adds without any
temporary of size n_entries x rank. The cost per entry is (number of latent
configurations) x (number of factors): right for CP, NMF, small Tucker cores,
deconvolution and hierarchical models; the einsum path in ``_contract`` serves
models whose latent configurations are too many to enumerate.

Models of two factors that share every latent index (NMF ``ik,kj->ij`` and the
like) get their own pair of kernels, :func:`pair_xhat` and :func:`pair_delta`:
X̂(n) is then a dot product of two table rows, which the compiler vectorises,
where the general kernels' configuration tables defeat it.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._threads import parallel_kernel  # first: how the parallel kernels' threads wait

__all__ = [
    "entry_xhat", "entry_delta", "entry_allocate", "pair_xhat", "pair_delta", "row_blocks",
    "entry_weight", "compound_count_mean", "compound_log_sum", "small_compound_series",
    "middle_count_mean", "middle_log_sum", "middle_entries", "MIDDLE_BLOCK",
    "SMALL_Z", "SERIES_LIMIT",
]

# X̂ below this (only reachable when a factor underflows to exactly zero under
# EM) is floored so that a ratio X / X̂ stays finite.
TINY = np.finfo(np.float64).tiny


# The pair kernels let the compiler reorder the sum over the latent index into
# vector lanes. The order is fixed by the compiled code, not by the thread
# count, so results stay reproducible.
_REORDERED_SUMS = {"reassoc"}

# Entries are split into this many blocks for the parallel scatter-add: a fixed
# number, so the split (and every sum) is the same whatever the thread count.
N_BLOCKS = 64


def row_blocks(rows):
    """Entries ordered by ``rows`` and cut into blocks that never split a row.

    Returns ``(order, bounds)``: block ``b`` is ``order[bounds[b]:bounds[b + 1]]``.
    Each output row is then summed by one thread, over its entries in a fixed
    order, so results do not depend on the number of threads.
    """
    order = np.argsort(rows, kind="stable")
    if rows.size == 0:
        return order.astype(np.int64), np.zeros(1, dtype=np.int64)  # no blocks
    ordered = rows[order]
    targets = np.linspace(0, rows.size, N_BLOCKS + 1).astype(np.int64)[1:-1]
    cuts = np.searchsorted(ordered, ordered[np.minimum(targets, rows.size - 1)], side="left")
    bounds = np.unique(np.concatenate([[0], cuts, [rows.size]])).astype(np.int64)
    return order.astype(np.int64), bounds


# Entry weights of the Δ kernels (``mode``): the weight itself, or the
# weight times E[N | X̂] / X̂ for the latent count N of an observed value
# (``_likelihood``): X / X̂ under the Poisson likelihood, 1 / (1 − e^{−X̂})
# at the ones under the Bernoulli–Poisson one, and under the compound
# Poisson one E[N | X, X̂] / X̂ with z = rate · X · X̂ (``jump_rate``).
WEIGHT, POISSON_RATIO, BERNOULLI_RATIO, COMPOUND_RATIO = 0, 1, 2, 3

# The compound Poisson kernels sum the power series S₀, S₁ as fixed
# polynomials below z = 8 (the next term under 1e-24 of the sum: no
# data-dependent loop, so loops over entries run in vector lanes); between 8
# and 100 they read Chebyshev interpolants in t = √z of what is left of E[N]
# and log S once their growth is taken out (:func:`_middle_residual`); above
# 100, Hankel's asymptotic expansion of the Bessel functions (at 2√z = 20 its
# smallest term, about e^{-2u} = e^{-40}, is below the last bit).
# Coefficients are tabulated: no divisions.
SMALL_Z = 8.0
_SMALL_DEGREE = 22
_SMALL_S0 = np.array([1.0 / math.factorial(k) ** 2 for k in range(_SMALL_DEGREE + 1)])
_SMALL_S1 = np.array([1.0 / (math.factorial(k) * math.factorial(k + 1))
                      for k in range(_SMALL_DEGREE + 1)])
SERIES_LIMIT = 100.0
_SERIES_TERMS = 96
_ASYMPTOTIC_TERMS = 40
_INVERSE_SQUARES = 1.0 / np.arange(1, _SERIES_TERMS + 1, dtype=np.float64) ** 2
_INVERSE_NEXT = 1.0 / np.arange(2, _SERIES_TERMS + 2, dtype=np.float64)
_ODD_SQUARES = (2.0 * np.arange(1, _ASYMPTOTIC_TERMS + 1) - 1.0) ** 2
#: t_k / t_{k-1} of Hankel's series for I₀ and I₁, times u (A&S 9.7.1).
_HANKEL_0 = _ODD_SQUARES / (8.0 * np.arange(1, _ASYMPTOTIC_TERMS + 1))
_HANKEL_1 = (_ODD_SQUARES - 4.0) / (8.0 * np.arange(1, _ASYMPTOTIC_TERMS + 1))


@numba.njit(cache=True, nogil=True, inline="always")
def small_compound_series(z):  # pragma: no cover - compiled
    """S₀(z), S₁(z) (:func:`_compound_series`) for 0 ≤ z ≤ ``SMALL_Z`` by
    Horner's rule on the truncated series."""
    s0, s1 = _SMALL_S0[_SMALL_DEGREE], _SMALL_S1[_SMALL_DEGREE]
    for k in range(_SMALL_DEGREE - 1, -1, -1):
        s0 = s0 * z + _SMALL_S0[k]
        s1 = s1 * z + _SMALL_S1[k]
    return s0, s1


def _compound_series(z):
    """S₀ = Σ_k z^k / k!² and S₁ = Σ_k z^k / (k! (k + 1)!), for z below
    ``SERIES_LIMIT``, term by term: the reference the Chebyshev tables are
    made from (Python, at import)."""
    term, s0, s1 = 1.0, 1.0, 1.0
    for k in range(_SERIES_TERMS):
        term *= z * _INVERSE_SQUARES[k]
        s0 += term
        s1 += term * _INVERSE_NEXT[k]
        if term <= 1e-17 * s0:
            break
    return s0, s1


@numba.njit(cache=True, nogil=True)
def _hankel_sums(u):  # pragma: no cover - compiled
    """P₀, P₁ with I_ν(u) = e^u P_ν(u) / √(2πu) (Hankel's expansion, A&S
    9.7.1), for u = 2√z ≥ 2√``SERIES_LIMIT``, summed until the terms are
    below the last bit."""
    inverse = 1.0 / u
    p0, p1, t0, t1 = 1.0, 1.0, 1.0, 1.0
    for k in range(_ASYMPTOTIC_TERMS):
        t0 *= _HANKEL_0[k] * inverse
        t1 *= _HANKEL_1[k] * inverse
        p0 += t0
        p1 += t1
        if abs(t0) <= 1e-17 and abs(t1) <= 1e-17:
            break
    return p0, p1


def _chebyshev_table(residual):
    """Coefficients c₀ … c_d of the degree-``_MIDDLE_DEGREE`` Chebyshev
    interpolant of ``residual(t)`` on t ∈ [√``SMALL_Z``, √``SERIES_LIMIT``]
    (at the Chebyshev points of the first kind), for :func:`_middle_residual`."""
    low, high = math.sqrt(SMALL_Z), math.sqrt(SERIES_LIMIT)

    def on_points(s):
        return np.array([residual(0.5 * (high + low) + 0.5 * (high - low) * v) for v in s])

    return np.polynomial.chebyshev.chebinterpolate(on_points, _MIDDLE_DEGREE)


def _mean_residual(t):
    """E[N] − t at z = t², by the power series."""
    s0, s1 = _compound_series(t * t)
    return s0 / s1 - t


def _log_residual(t):
    """log S(z) − (2t + ½ log z − ½ log(4πt)) at z = t², by the power series:
    log P₁(2t) of Hankel's expansion, which tends to 0 as t grows."""
    z = t * t
    return (math.log(z) + math.log(_compound_series(z)[1])
            - (2.0 * t + 0.5 * math.log(z) - 0.5 * math.log(4.0 * math.pi * t)))


# The degree at which both interpolants reach the series' own accuracy over
# the whole range (doc/validation.rst, "Converged fits and the compound
# Poisson likelihood").
_MIDDLE_DEGREE = 28
_MIDDLE_CENTRE = 0.5 * (math.sqrt(SERIES_LIMIT) + math.sqrt(SMALL_Z))
_MIDDLE_INVERSE_HALF_WIDTH = 2.0 / (math.sqrt(SERIES_LIMIT) - math.sqrt(SMALL_Z))
_MIDDLE_MEAN = _chebyshev_table(_mean_residual)
_MIDDLE_LOG = _chebyshev_table(_log_residual)


@numba.njit(cache=True, nogil=True, inline="always")
def _middle_residual(coefficients, t):  # pragma: no cover - compiled
    """Σ_k c_k T_k(s), s = t mapped from [√``SMALL_Z``, √``SERIES_LIMIT``]
    onto [−1, 1], by Clenshaw's recurrence: a fixed number of steps, so
    loops over entries run in vector lanes."""
    two_s = 2.0 * (t - _MIDDLE_CENTRE) * _MIDDLE_INVERSE_HALF_WIDTH
    b1, b2 = 0.0, 0.0
    for k in range(_MIDDLE_DEGREE, 0, -1):
        b0 = two_s * b1 - b2 + coefficients[k]  # a temporary, not a tuple swap: vector lanes
        b2 = b1
        b1 = b0
    return 0.5 * two_s * b1 - b2 + coefficients[0]


@numba.njit(cache=True, nogil=True, inline="always")
def middle_count_mean(z):  # pragma: no cover - compiled
    """E[N] by its Chebyshev interpolant, z clamped into its range: no
    branch, so a loop over a block of entries runs in vector lanes."""
    t = math.sqrt(min(max(z, SMALL_Z), SERIES_LIMIT))
    return t + _middle_residual(_MIDDLE_MEAN, t)


@numba.njit(cache=True, nogil=True, inline="always")
def middle_log_sum(z):  # pragma: no cover - compiled
    """log S(z) by its Chebyshev interpolant, z clamped into its range."""
    z = min(max(z, SMALL_Z), SERIES_LIMIT)
    t = math.sqrt(z)
    return (2.0 * t + 0.5 * math.log(z) - 0.5 * math.log(4.0 * math.pi * t)
            + _middle_residual(_MIDDLE_LOG, t))


#: Entries per block of the passes over the z above ``SMALL_Z``
#: (:func:`middle_entries`); a fixed size, so nothing depends on the threads.
MIDDLE_BLOCK = 512


@numba.njit(cache=True, nogil=True, inline="always")
def middle_entries(x, xhat, jump_rate, start, stop, index, z):  # pragma: no cover - compiled
    """Gather the entries ``start:stop`` whose z = rate · x · X̂ lies in the
    interpolants' range: their positions into ``index[:m]`` and their z into
    ``z[:m]`` (both at least ``stop - start`` long). Returns m and the count
    of z at or above ``SERIES_LIMIT``.

    Without a branch (every entry is written, the count moves on for those
    kept) the gather costs the same whatever the data; the interpolants then
    run over ``z[:m]`` in vector lanes, where entry by entry, between other
    entries, their recurrence would run serially."""
    m, above = 0, 0
    for i in range(start, stop):
        value = jump_rate * x[i] * xhat[i]
        index[m] = i
        z[m] = value
        m += (value > SMALL_Z) & (value < SERIES_LIMIT)
        above += value >= SERIES_LIMIT
    return m, above


@numba.njit(cache=True, nogil=True)
def compound_count_mean(z):  # pragma: no cover - compiled
    """E[N] for P(N) ∝ z^N / (N! (N − 1)!), N ≥ 1: the latent count of a
    non-zero value of the compound Poisson likelihood (``_likelihood``).

    E[N] = √z I₀(2√z) / I₁(2√z) = S₀(z) / S₁(z): by the power series below
    ``SMALL_Z`` (:func:`small_compound_series`), √z plus its Chebyshev
    residual (:func:`middle_count_mean`) below ``SERIES_LIMIT``, by Hankel's
    expansion above it.
    """
    if z <= SMALL_Z:
        s0, s1 = small_compound_series(z)
        return s0 / s1
    if z < SERIES_LIMIT:
        return middle_count_mean(z)
    p0, p1 = _hankel_sums(2.0 * math.sqrt(z))
    return math.sqrt(z) * p0 / p1


@numba.njit(cache=True, nogil=True)
def compound_log_sum(z):  # pragma: no cover - compiled
    """log S(z), S(z) = Σ_{N ≥ 1} z^N / (N! (N − 1)!) = z S₁(z) = √z I₁(2√z):
    the normaliser of the jump count's distribution (z > 0). Above
    ``SMALL_Z`` it is 2√z + ½ log z − ½ log(4π√z) + log P₁(2√z), log P₁ by its
    Chebyshev interpolant below ``SERIES_LIMIT`` (:func:`middle_log_sum`) and
    by Hankel's expansion above."""
    if z <= SMALL_Z:
        return math.log(z) + math.log(small_compound_series(z)[1])
    if z < SERIES_LIMIT:
        return middle_log_sum(z)
    u = 2.0 * math.sqrt(z)
    return 0.5 * math.log(z) + u - 0.5 * math.log(2.0 * math.pi * u) + math.log(_hankel_sums(u)[1])


@numba.njit(cache=True, nogil=True, inline="always")
def entry_weight(weight, xhat, mode, jump_rate):  # pragma: no cover - compiled
    if mode == POISSON_RATIO:
        return weight / max(xhat, TINY)
    if mode == BERNOULLI_RATIO:
        return weight / -np.expm1(-max(xhat, TINY))
    if mode == COMPOUND_RATIO:
        if weight == 0.0:
            return 0.0
        xhat = max(xhat, TINY)
        return compound_count_mean(jump_rate * weight * xhat) / xhat
    return weight


@numba.njit(cache=True, nogil=True, inline="always")
def _find_rows(offsets, widths, rows, n, bases):  # pragma: no cover - compiled
    """bases[α] = where entry n's row of table α starts in the buffer."""
    for a in range(bases.size):
        bases[a] = offsets[a] + rows[a, n] * widths[a]


@numba.njit(cache=True, nogil=True, inline="always")
def _config_term(buffer, bases, cols, l):  # pragma: no cover - compiled
    """Λ_l = Π_α table_α[row, cols[α, l]] for the entry whose rows are ``bases``."""
    term = 1.0
    for a in range(bases.size):
        term *= buffer[bases[a] + cols[a, l]]
    return term


@parallel_kernel
def entry_xhat(buffer, offsets, widths, rows, cols, out):  # pragma: no cover - compiled
    """X̂ at every listed entry: out[n] = Σ_l Π_α table_α[rows[α, n], cols[α, l]]."""
    n_factors, n_entries = rows.shape
    n_configs = cols.shape[1]
    for n in numba.prange(n_entries):
        bases = np.empty(n_factors, dtype=np.int64)  # each factor's row, found once
        _find_rows(offsets, widths, rows, n, bases)
        total = 0.0
        for l in range(n_configs):
            total += _config_term(buffer, bases, cols, l)
        out[n] = total


@parallel_kernel
def entry_delta(buffer, offsets, widths, rows, cols, alpha, weights, mode, jump_rate, bounds,
                out):  # pragma: no cover
    """Δ_α over the listed entries, accumulated into ``out`` (table_α's layout, flat).

    ``rows`` and ``weights`` list the entries in the order of :func:`row_blocks`
    for factor α (so they are read sequentially), and ``bounds`` cuts them into
    blocks that own disjoint rows of ``out``: threads never write to the same
    place. The entry weight is :func:`entry_weight` of ``weights[n]`` and
    X̂(n) (X̂ from the same tables) under ``mode`` (and ``jump_rate``, which
    the compound Poisson mode reads).
    """
    n_factors = rows.shape[0]
    n_configs = cols.shape[1]
    width = widths[alpha]
    for b in numba.prange(bounds.size - 1):
        others = np.empty(n_configs)
        bases = np.empty(n_factors, dtype=np.int64)
        for n in range(bounds[b], bounds[b + 1]):
            _find_rows(offsets, widths, rows, n, bases)  # each factor's row, once per entry
            own_base = bases[alpha]
            xhat = 0.0
            for l in range(n_configs):
                term = 1.0
                for a in range(n_factors):
                    if a != alpha:
                        term *= buffer[bases[a] + cols[a, l]]
                others[l] = term
                xhat += term * buffer[own_base + cols[alpha, l]]
            w = entry_weight(weights[n], xhat, mode, jump_rate)
            out_base = rows[alpha, n] * width
            for l in range(n_configs):
                out[out_base + cols[alpha, l]] += w * others[l]


@parallel_kernel(fastmath=_REORDERED_SUMS)
def pair_xhat(first, second, rows, out):  # pragma: no cover - compiled
    """X̂ for two factors sharing the latent block: out[n] = first[rows[0, n]] · second[rows[1, n]]."""
    width = first.shape[1]
    for n in numba.prange(rows.shape[1]):
        i, j = rows[0, n], rows[1, n]
        total = 0.0
        for k in range(width):
            total += first[i, k] * second[j, k]
        out[n] = total


@parallel_kernel(fastmath=_REORDERED_SUMS)
def pair_delta(first, second, rows, alpha, weights, mode, jump_rate, bounds, out):  # pragma: no cover
    """:func:`entry_delta` for two factors sharing the latent block.

    ``out`` is table α (rows x latent): out[rows[α, n]] += w_n · (the other
    table's row), ``w_n`` the :func:`entry_weight` of ``weights[n]`` and X̂(n).
    Entries, ``bounds`` and thread ownership as in :func:`entry_delta`.
    """
    width = first.shape[1]
    other = second if alpha == 0 else first
    for b in numba.prange(bounds.size - 1):
        for n in range(bounds[b], bounds[b + 1]):
            i, j = rows[0, n], rows[1, n]
            own_row, other_row = (i, j) if alpha == 0 else (j, i)
            w = weights[n]
            if mode != WEIGHT:
                xhat = 0.0
                for k in range(width):
                    xhat += first[i, k] * second[j, k]
                w = entry_weight(w, xhat, mode, jump_rate)
            for k in range(width):
                out[own_row, k] += w * other[other_row, k]


@parallel_kernel
def entry_allocate(buffer, offsets, widths, rows, cols, alpha, counts, first_token, uniforms, bounds, out):  # pragma: no cover
    """Allocate each entry's count over the latent configurations; sum onto factor α.

    Entry ``n`` holds ``counts[n]`` tokens. Token ``t`` goes to configuration
    ``l`` with probability Λ_l / X̂(n), Λ_l = Π_α table_α[rows[α, n], cols[α, l]],
    by inverting the cumulative Λ at ``uniforms[first_token[n] + t] · X̂(n)``;
    ``out`` (table α's layout, flat) counts the tokens at (row_α(n), col_α(l)).
    Together the tokens of an entry are a Multinomial(counts[n], Λ / X̂(n))
    draw. The draw depends only on the entry, its uniforms and the tables, so
    the passes for different factors (each in its own entry order, with
    ``rows``, ``counts``, ``first_token`` and ``bounds`` as in
    :func:`entry_delta`) see the same allocation.
    """
    n_factors = rows.shape[0]
    n_configs = cols.shape[1]
    width = widths[alpha]
    for b in numba.prange(bounds.size - 1):
        cumulative = np.empty(n_configs)
        bases = np.empty(n_factors, dtype=np.int64)
        for n in range(bounds[b], bounds[b + 1]):
            _find_rows(offsets, widths, rows, n, bases)
            total = 0.0
            for l in range(n_configs):
                total += _config_term(buffer, bases, cols, l)
                cumulative[l] = total
            out_base = rows[alpha, n] * width
            start = first_token[n]
            for t in range(counts[n]):
                target = uniforms[start + t] * total
                l = 0
                while l < n_configs - 1 and cumulative[l] <= target:
                    l += 1
                out[out_base + cols[alpha, l]] += 1.0
