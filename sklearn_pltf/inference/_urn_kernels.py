"""numba kernels of the Bayesian Allocation Model's Pólya-urn sequential
Monte Carlo (:mod:`sklearn_pltf.inference.allocation`).

Particles live in islands of equal size; each island is its own particle
system (own weights, own resampling), so the islands' evidence estimates are
independent and their spread is the estimate's standard error. Islands run in
parallel; every random number is drawn beforehand by the caller's Generator
(or, for the moves, by SplitMix64 from a seed it draws), so results do not
depend on the thread count.
"""

from __future__ import annotations

import numba
import numpy as np

from .._data import _LANES, _MIX_1, _MIX_2

_GOLDEN = _LANES[0]  # SplitMix64's increment, the golden ratio in 64 bits

__all__ = ["urn_smc"]


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
