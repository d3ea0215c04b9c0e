"""numba kernels for the per-entry loops of the sparse path, and the Pólya-urn
sequential Monte Carlo of the Bayesian Allocation Model (:func:`urn_smc`).

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

import numba
import numpy as np

from ._data import _LANES, _MIX_1, _MIX_2

_GOLDEN = _LANES[0]  # SplitMix64's increment, the golden ratio in 64 bits

__all__ = [
    "entry_xhat", "entry_delta", "entry_allocate", "pair_xhat", "pair_delta", "row_blocks", "urn_smc",
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
# at the ones under the Bernoulli–Poisson one.
WEIGHT, POISSON_RATIO, BERNOULLI_RATIO = 0, 1, 2


@numba.njit(cache=True, nogil=True, inline="always")
def _entry_weight(weight, xhat, mode):  # pragma: no cover - compiled
    if mode == POISSON_RATIO:
        return weight / max(xhat, TINY)
    if mode == BERNOULLI_RATIO:
        return weight / -np.expm1(-max(xhat, TINY))
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


@numba.njit(cache=True, nogil=True, parallel=True)
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


@numba.njit(cache=True, nogil=True, parallel=True)
def entry_delta(buffer, offsets, widths, rows, cols, alpha, weights, mode, bounds, out):  # pragma: no cover
    """Δ_α over the listed entries, accumulated into ``out`` (table_α's layout, flat).

    ``rows`` and ``weights`` list the entries in the order of :func:`row_blocks`
    for factor α (so they are read sequentially), and ``bounds`` cuts them into
    blocks that own disjoint rows of ``out``: threads never write to the same
    place. The entry weight is :func:`_entry_weight` of ``weights[n]`` and
    X̂(n) (X̂ from the same tables) under ``mode``.
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
            w = _entry_weight(weights[n], xhat, mode)
            out_base = rows[alpha, n] * width
            for l in range(n_configs):
                out[out_base + cols[alpha, l]] += w * others[l]


@numba.njit(cache=True, nogil=True, parallel=True, fastmath=_REORDERED_SUMS)
def pair_xhat(first, second, rows, out):  # pragma: no cover - compiled
    """X̂ for two factors sharing the latent block: out[n] = first[rows[0, n]] · second[rows[1, n]]."""
    width = first.shape[1]
    for n in numba.prange(rows.shape[1]):
        i, j = rows[0, n], rows[1, n]
        total = 0.0
        for k in range(width):
            total += first[i, k] * second[j, k]
        out[n] = total


@numba.njit(cache=True, nogil=True, parallel=True, fastmath=_REORDERED_SUMS)
def pair_delta(first, second, rows, alpha, weights, mode, bounds, out):  # pragma: no cover
    """:func:`entry_delta` for two factors sharing the latent block.

    ``out`` is table α (rows x latent): out[rows[α, n]] += w_n · (the other
    table's row), ``w_n`` the :func:`_entry_weight` of ``weights[n]`` and X̂(n).
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
                w = _entry_weight(w, xhat, mode)
            for k in range(width):
                out[own_row, k] += w * other[other_row, k]


@numba.njit(cache=True, nogil=True, parallel=True)
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


# ---------------------------------------------------------------------------
# Pólya-urn sequential Monte Carlo for the Bayesian Allocation Model
# (inference/allocation.py). Particles live in islands of equal size; each
# island is its own particle system (own weights, own resampling), so the
# islands' evidence estimates are independent and their spread is the
# estimate's standard error. Islands run in parallel; every random number is
# drawn beforehand by the caller's Generator, so results do not depend on the
# thread count.


@numba.njit(cache=True, nogil=True)
def _consecutive_tables(offsets):  # pragma: no cover - compiled
    """Per table (even slot j), whether its family and parent offsets are
    0, 1, 2, ... over the configurations (``offsets``: slots x H)."""
    consecutive = np.zeros(offsets.shape[0], dtype=np.bool_)
    for j in range(0, offsets.shape[0], 2):
        consecutive[j] = True
        for h in range(offsets.shape[1]):
            if offsets[j, h] != h or offsets[j + 1, h] != h:
                consecutive[j] = False
    return consecutive


@numba.njit(cache=True, nogil=True, inline="always")
def _token_terms(terms, denominators, counts, p, slots, t, alpha, offsets,
                 consecutive):  # pragma: no cover - compiled
    """``terms[h]`` = token t's predictive probability under configuration
    h in particle p's urn ``counts[p]`` (its segment offsets ``slots[t]``);
    returns their sum.

    Tables whose offsets run 0, 1, 2, ... (CP's) are read without gathers,
    which lets the loop vectorise."""
    n_configs = terms.shape[0]
    terms[:] = 1.0
    denominators[:] = 1.0
    for j in range(0, slots.shape[1], 2):
        base = slots[t, j]
        parent_base = slots[t, j + 1]
        if consecutive[j]:
            for h in range(n_configs):
                terms[h] *= alpha[base + h] + counts[p, base + h]
                denominators[h] *= alpha[parent_base + h] + counts[p, parent_base + h]
        else:
            for h in range(n_configs):
                cell = base + offsets[j, h]
                parent = parent_base + offsets[j + 1, h]
                terms[h] *= alpha[cell] + counts[p, cell]
                denominators[h] *= alpha[parent] + counts[p, parent]
    total = 0.0
    for h in range(n_configs):
        terms[h] /= denominators[h]
        total += terms[h]
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def _drawn(terms, total, u):  # pragma: no cover - compiled
    """The configuration whose cumulative term first exceeds u x total."""
    target = u * total
    h = 0
    running = terms[0]
    while h < terms.shape[0] - 1 and running <= target:
        h += 1
        running += terms[h]
    return h


@numba.njit(cache=True, nogil=True, inline="always")
def _add_token(counts, p, slots, t, offsets, h, step):  # pragma: no cover - compiled
    """Token t enters (step 1) or leaves (-1) particle p's urn under h."""
    for j in range(slots.shape[1]):
        counts[p, slots[t, j] + offsets[j, h]] += step


@numba.njit(cache=True, nogil=True)
def _next_uniform(state):  # pragma: no cover - compiled
    """SplitMix64 (Steele, Lea & Flood 2014): the advanced state and a
    uniform on [0, 1) from its 53 high bits of the mixed state."""
    state = state + _GOLDEN
    z = (state ^ (state >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    z = z ^ (z >> np.uint64(31))
    return state, (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, nogil=True)
def _rejuvenate(counts, allocations, p, slots, n_seen, n_moves, state, alpha, offsets,
                consecutive, terms, denominators):  # pragma: no cover - compiled
    """``n_moves`` Gibbs moves of particle p: each takes one of the first
    ``n_seen`` tokens at random, removes it from the urn and redraws its
    configuration from its exact conditional given every other token, which
    leaves the posterior of the allocations given those tokens invariant."""
    for _ in range(n_moves):
        state, u = _next_uniform(state)
        s = min(int(u * n_seen), n_seen - 1)
        _add_token(counts, p, slots, s, offsets, allocations[p, s], -1)
        total = _token_terms(terms, denominators, counts, p, slots, s, alpha, offsets,
                             consecutive)
        state, u = _next_uniform(state)
        h = _drawn(terms, total, u)
        _add_token(counts, p, slots, s, offsets, h, 1)
        allocations[p, s] = h
    return state


@numba.njit(cache=True, nogil=True)
def _resample_island(counts, allocations, n_seen, log_weights, lo, shift, total, u,
                     offspring):  # pragma: no cover - compiled
    """Systematic resampling of the island whose particles are rows ``lo``
    onwards of ``counts`` (and of ``allocations``, its first ``n_seen``
    columns, when it has any), in place: slot q draws the particle whose
    cumulative weight (``exp(log_weights - shift)``, summing to ``total``)
    first exceeds (q + u) / size of the total. A particle with offspring
    keeps its row; only the rows of particles without any are overwritten.
    The weights are reset to equal."""
    size = log_weights.shape[0]
    offspring[:] = 0
    running = 0.0
    a = 0
    for q in range(size):
        position = (q + u) / size * total
        while a < size - 1:
            w = np.exp(log_weights[a] - shift)
            if running + w > position:
                break
            running += w
            a += 1
        offspring[a] += 1
    dead = 0
    for a in range(size):
        for _ in range(offspring[a] - 1):
            while offspring[dead] != 0:
                dead += 1
            counts[lo + dead] = counts[lo + a]
            if allocations.shape[1]:
                allocations[lo + dead, :n_seen] = allocations[lo + a, :n_seen]
            offspring[dead] = 1  # filled: neither a source nor free
    log_weights[:] = 0.0


@numba.njit(cache=True, nogil=True, parallel=True)
def urn_smc(slots, start, stop, latent_offsets, alpha, uniforms, resample_uniforms, threshold,
            counts, log_weights, log_evidence, n_resampled, allocations, n_moves,
            move_seed):  # pragma: no cover - compiled
    """Allocate tokens ``start`` to ``stop`` in every particle; reweight,
    resample and rejuvenate.

    Particle p's urn is the count vector ``counts[p]``, laid out by
    :mod:`sklearn_pltf.inference._allocation_network`: token t under latent
    configuration h reads, for every table f, the cell of its family at
    ``slots[t, 2f] + latent_offsets[h, 2f]`` and the cell of its parents at
    ``slots[t, 2f + 1] + latent_offsets[h, 2f + 1]``; ``alpha`` holds the
    Dirichlet parameters in the same layout. The token's predictive
    probability under h is

        Π_f (n_f(family) + α_f(family)) / (n_f(parents) + α_f(parents)),

    its sum over h is the incremental weight, and the token is allocated in
    proportion to the terms (the exact conditional: the urn proposal;
    ``uniforms[t - start, p]``). The island's log evidence grows by
    log Σ_p W_p w_p, W the normalised weights before the token; when the
    island's effective sample size falls below ``threshold`` x its size it
    is resampled systematically (``resample_uniforms[t - start, k]``).

    With ``n_moves`` > 0, ``allocations[p, t]`` records every token's
    configuration, and after each resampling every particle of the island
    makes ``n_moves`` Gibbs moves over the tokens placed so far
    (resample-move: Gilks & Berzuini 2001), their uniforms from SplitMix64
    seeded by ``move_seed``, the island, the token and the particle, so the
    numbers do not depend on the thread count. The moves leave the current
    target invariant, so the estimate stays unbiased.
    """
    n_particles = counts.shape[0]
    n_islands = log_evidence.shape[0]
    size = n_particles // n_islands
    n_configs = latent_offsets.shape[0]
    record = allocations.shape[1] > 0
    offsets = np.ascontiguousarray(latent_offsets.T)
    consecutive = _consecutive_tables(offsets)
    for k in numba.prange(n_islands):
        lo = k * size
        terms = np.empty(n_configs)
        denominators = np.empty(n_configs)
        increments = np.empty(size)
        offspring = np.empty(size, dtype=np.int64)
        for t in range(start, stop):
            for q in range(size):
                p = lo + q
                total = _token_terms(terms, denominators, counts, p, slots, t, alpha, offsets,
                                     consecutive)
                increments[q] = np.log(total)
                h = _drawn(terms, total, uniforms[t - start, p])
                _add_token(counts, p, slots, t, offsets, h, 1)
                if record:
                    allocations[p, t] = h
            # log Σ W_p w_p = log Σ e^{lw + inc} - log Σ e^{lw}, both shifted.
            before = -np.inf
            after = -np.inf
            for q in range(size):
                before = max(before, log_weights[lo + q])
                after = max(after, log_weights[lo + q] + increments[q])
            sum_before = 0.0
            sum_after = 0.0
            sum_squares = 0.0
            for q in range(size):
                sum_before += np.exp(log_weights[lo + q] - before)
                log_weights[lo + q] += increments[q]
                w = np.exp(log_weights[lo + q] - after)
                sum_after += w
                sum_squares += w * w
            log_evidence[k] += np.log(sum_after) + after - np.log(sum_before) - before
            if sum_after * sum_after < threshold * size * sum_squares:
                _resample_island(counts, allocations, t + 1, log_weights[lo:lo + size], lo,
                                 after, sum_after, resample_uniforms[t - start, k], offspring)
                n_resampled[k] += 1
                if n_moves > 0:
                    for q in range(size):
                        state = move_seed ^ np.uint64((k * slots.shape[0] + t) * size + q)
                        _rejuvenate(counts, allocations, lo + q, slots, t + 1, n_moves, state,
                                    alpha, offsets, consecutive, terms, denominators)
