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

from ...engine._data import _LANES, _MIX_1, _MIX_2
from ...engine._threads import parallel_kernel

_GOLDEN = _LANES[0]  # SplitMix64's increment, the golden ratio in 64 bits

# A token's terms are ratios of products of F factors (n + α), each family
# product at most its parent's. Where every parent product lies in [_LOW,
# _HIGH], far inside the floats, the ratios are exact to rounding (a partial
# product could leave the floats and come back only through dozens of
# tables), and a family product that underflowed makes a term below 1e-157,
# under 1e-57 of a total of at least _LOW_TOTAL. Otherwise (Dirichlet
# parameters near the smallest floats, a predictive probability below
# _LOW_TOTAL) the terms are summed from logs.
_LOW = 1e-150
_HIGH = 1e150
_LOW_TOTAL = 1e-100

#: The most tokens the SMC places, observed and in unobserved cells
#: together: every particle's urn holds its counts as int32, and one cell
#: may receive every token.
SMC_MAX_TOKENS = int(np.iinfo(np.int32).max)

__all__ = ["urn_smc", "SMC_MAX_TOKENS"]


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


@numba.njit(cache=True, nogil=True)
def _parent_products(denominators, counts, p, slots, t, alpha, offsets,
                     consecutive):  # pragma: no cover - compiled
    """``denominators[h]`` = Π_f (n_f + α_f)(parents of table f under h) in
    particle p's urn, for token t's segment offsets ``slots[t]``. Parents
    are latent indices only, so this does not depend on the token's cell.

    Tables whose offsets run 0, 1, 2, ... (CP's) are read without gathers,
    which lets the loop vectorise."""
    n_configs = denominators.shape[0]
    denominators[:] = 1.0
    for j in range(0, slots.shape[1], 2):
        parent_base = slots[t, j + 1]
        if consecutive[j]:
            for h in range(n_configs):
                denominators[h] *= alpha[parent_base + h] + counts[p, parent_base + h]
        else:
            for h in range(n_configs):
                parent = parent_base + offsets[j + 1, h]
                denominators[h] *= alpha[parent] + counts[p, parent]


@numba.njit(cache=True, nogil=True)
def _family_terms(terms, denominators, counts, p, slots, t, alpha, offsets,
                  consecutive):  # pragma: no cover - compiled
    """``terms[h]`` = Π_f (n_f + α_f)(family of table f under h) divided by
    ``denominators[h]`` (:func:`_parent_products`), for token t in particle
    p's urn; returns their sum."""
    n_configs = terms.shape[0]
    terms[:] = 1.0
    for j in range(0, slots.shape[1], 2):
        base = slots[t, j]
        if consecutive[j]:
            for h in range(n_configs):
                terms[h] *= alpha[base + h] + counts[p, base + h]
        else:
            for h in range(n_configs):
                cell = base + offsets[j, h]
                terms[h] *= alpha[cell] + counts[p, cell]
    total = 0.0
    for h in range(n_configs):
        terms[h] /= denominators[h]
        total += terms[h]
    return total


@numba.njit(cache=True, nogil=True)
def _products_in_range(denominators):  # pragma: no cover - compiled
    """Whether every parent product lies in [_LOW, _HIGH], where the products
    of :func:`_family_terms` are exact to rounding."""
    for h in range(denominators.shape[0]):
        if not (_LOW <= denominators[h] <= _HIGH):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _log_terms(terms, counts, p, slots, t, alpha, offsets):  # pragma: no cover - compiled
    """Token t's terms in particle p's urn from the logs of the tables'
    ratios, for urns where the products underflow or overflow (Dirichlet
    parameters near the smallest floats, very many tables): ``terms[h]``
    becomes its term divided by the largest, e^``shift``; returns their sum
    and ``shift``."""
    n_configs = terms.shape[0]
    shift = -np.inf
    for h in range(n_configs):
        value = 0.0
        for j in range(0, slots.shape[1], 2):
            cell = slots[t, j] + offsets[j, h]
            parent = slots[t, j + 1] + offsets[j + 1, h]
            value += (np.log(alpha[cell] + counts[p, cell])
                      - np.log(alpha[parent] + counts[p, parent]))
        terms[h] = value
        shift = max(shift, value)
    total = 0.0
    for h in range(n_configs):
        terms[h] = np.exp(terms[h] - shift)
        total += terms[h]
    return total, shift


@numba.njit(cache=True, nogil=True)
def _token_terms(terms, denominators, counts, p, slots, t, alpha, offsets,
                 consecutive):  # pragma: no cover - compiled
    """``terms[h]`` = token t's predictive probability under configuration
    h in particle p's urn ``counts[p]`` (its segment offsets ``slots[t]``),
    divided by e^``shift``; returns their sum and ``shift``, so that the
    token's predictive probability is ``sum x e^shift``.

    The ratios of products are exact to rounding while the products stay
    well inside the floats; outside (tiny Dirichlet parameters, a predictive
    probability below ``_LOW_TOTAL``) the terms come from logs
    (:func:`_log_terms`), which cost a logarithm per table."""
    _parent_products(denominators, counts, p, slots, t, alpha, offsets, consecutive)
    if _products_in_range(denominators):
        total = _family_terms(terms, denominators, counts, p, slots, t, alpha, offsets,
                              consecutive)
        if total >= _LOW_TOTAL:
            return total, 0.0
    return _log_terms(terms, counts, p, slots, t, alpha, offsets)


@numba.njit(cache=True, nogil=True)
def _drawn(terms, total, u):  # pragma: no cover - compiled
    """The configuration whose cumulative term first exceeds u x total."""
    target = u * total
    h = 0
    running = terms[0]
    while h < terms.shape[0] - 1 and running <= target:
        h += 1
        running += terms[h]
    return h


@numba.njit(cache=True, nogil=True)
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
def _rejuvenate(counts, allocations, p, slots, missing_slots, n_seen, n_moves, state, alpha,
                offsets, consecutive, terms, denominators):  # pragma: no cover - compiled
    """``n_moves`` Gibbs moves of particle p: each takes one of the first
    ``n_seen`` tokens at random, removes it from the urn and redraws its
    configuration from its exact conditional given every other token, which
    leaves the posterior of the allocations given those tokens invariant.

    Tokens past the observed ones (``slots.shape[0]``) lie in unobserved
    cells: ``allocations`` holds ``m x H + h`` for cell m of
    ``missing_slots``, and a move keeps the cell and redraws h."""
    n_observed = slots.shape[0]
    n_configs = terms.shape[0]
    for _ in range(n_moves):
        state, u = _next_uniform(state)
        s = min(int(u * n_seen), n_seen - 1)
        if s < n_observed:
            rows, row, h = slots, s, allocations[p, s]
        else:
            code = allocations[p, s]
            rows, row, h = missing_slots, code // n_configs, code % n_configs
        _add_token(counts, p, rows, row, offsets, h, -1)
        total, _ = _token_terms(terms, denominators, counts, p, rows, row, alpha, offsets,
                                consecutive)
        state, u = _next_uniform(state)
        h = _drawn(terms, total, u)
        _add_token(counts, p, rows, row, offsets, h, 1)
        allocations[p, s] = h if s < n_observed else row * n_configs + h
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
            # Element by element: numba's slice assignment would compile a
            # shape check with string formatting into the kernel.
            for j in range(counts.shape[1]):
                counts[lo + dead, j] = counts[lo + a, j]
            if allocations.shape[1]:
                for j in range(n_seen):
                    allocations[lo + dead, j] = allocations[lo + a, j]
            offspring[dead] = 1  # filled: neither a source nor free
    log_weights[:] = 0.0


@numba.njit(cache=True, nogil=True)
def _advance_island(k, increments, n_seen, resample_u, threshold, counts, log_weights,
                    log_evidence, n_resampled, allocations, n_moves, move_seed, slots,
                    missing_slots, alpha, offsets, consecutive, terms, denominators,
                    offspring):  # pragma: no cover - compiled
    """Island k after every particle has placed one more token (log
    incremental weights ``increments``): its log evidence grows by
    log Σ_p W_p w_p, W the normalised weights before the token; when its
    effective sample size falls below ``threshold`` x its size it is
    resampled systematically (uniform ``resample_u``) and, with ``n_moves``,
    every particle makes that many Gibbs moves over the ``n_seen`` tokens
    placed, their uniforms from SplitMix64 seeded by ``move_seed``, the
    island, the token and the particle."""
    size = increments.shape[0]
    lo = k * size
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
    if sum_after * sum_after >= threshold * size * sum_squares:
        return
    _resample_island(counts, allocations, n_seen, log_weights[lo:lo + size], lo, after,
                     sum_after, resample_u, offspring)
    n_resampled[k] += 1
    if n_moves > 0:
        for q in range(size):
            state = move_seed ^ np.uint64((k * slots.shape[0] + n_seen - 1) * size + q)
            _rejuvenate(counts, allocations, lo + q, slots, missing_slots, n_seen, n_moves,
                        state, alpha, offsets, consecutive, terms, denominators)


@numba.njit(cache=True, nogil=True)
def _place_missing_token(terms, denominators, cumulative, counts, p, missing_slots, u, alpha,
                         offsets, consecutive):  # pragma: no cover - compiled
    """Place a token anywhere in the unobserved cells in particle p's urn:
    cell m of ``missing_slots`` and configuration h in proportion to their
    term, both from the uniform ``u`` (its position within the chosen
    cell's share gives h). Returns log p_M, the urn's probability of the
    unobserved cells (the token's incremental weight), and ``m x H + h``.
    Parents are latent indices only, so their products serve every cell.
    Where the products leave the range in which they are exact
    (:func:`_token_terms`), every cell's total comes from logs instead."""
    n_cells = missing_slots.shape[0]
    _parent_products(denominators, counts, p, missing_slots, 0, alpha, offsets, consecutive)
    exact = _products_in_range(denominators)
    total = 0.0
    if exact:
        for m in range(n_cells):
            total += _family_terms(terms, denominators, counts, p, missing_slots, m, alpha,
                                   offsets, consecutive)
            cumulative[m] = total
        exact = total >= _LOW_TOTAL
    shift = 0.0
    if not exact:
        shift = -np.inf
        for m in range(n_cells):
            cell_total, cell_shift = _log_terms(terms, counts, p, missing_slots, m, alpha,
                                                offsets)
            cumulative[m] = np.log(cell_total) + cell_shift
            shift = max(shift, cumulative[m])
        total = 0.0
        for m in range(n_cells):
            total += np.exp(cumulative[m] - shift)
            cumulative[m] = total
    target = u * total
    # The first cell whose cumulative term exceeds the target, by bisection
    # (np.searchsorted would compile its generic comparisons into the kernel).
    lo, hi = 0, n_cells - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cumulative[mid] <= target:
            lo = mid + 1
        else:
            hi = mid
    m = lo
    below = cumulative[m - 1] if m > 0 else 0.0
    if exact:
        cell_total = _family_terms(terms, denominators, counts, p, missing_slots, m, alpha,
                                   offsets, consecutive)
        share = cell_total
    else:  # the cell's terms on their own scale, its share on the cumulative one
        cell_total, _ = _log_terms(terms, counts, p, missing_slots, m, alpha, offsets)
        share = cumulative[m] - below
    h = _drawn(terms, cell_total, min(max((target - below) / share, 0.0), 1.0))
    _add_token(counts, p, missing_slots, m, offsets, h, 1)
    return np.log(total) + shift, m * terms.shape[0] + h


@parallel_kernel
def urn_smc(slots, missing_slots, start, stop, latent_offsets, alpha, uniforms,
            resample_uniforms, threshold, counts, log_weights, log_evidence, n_resampled,
            allocations, n_moves, move_seed):  # pragma: no cover - compiled
    """Allocate tokens ``start`` to ``stop`` in every particle; reweight,
    resample and rejuvenate.

    Particle p's urn is the count vector ``counts[p]``, laid out by
    :mod:`sklearn_pltf.inference.allocation._network`: token t under latent
    configuration h reads, for every table f, the cell of its family at
    ``slots[t, 2f] + latent_offsets[h, 2f]`` and the cell of its parents at
    ``slots[t, 2f + 1] + latent_offsets[h, 2f + 1]``; ``alpha`` holds the
    Dirichlet parameters in the same layout. The token's predictive
    probability under h is

        Π_f (n_f(family) + α_f(family)) / (n_f(parents) + α_f(parents)),

    its sum over h is the incremental weight, and the token is allocated in
    proportion to the terms (the exact conditional: the urn proposal;
    ``uniforms[t - start, p]``). Tokens past the observed ones
    (``t >= slots.shape[0]``) lie anywhere in the unobserved cells
    ``missing_slots`` (:func:`_place_missing_token`). The island's log
    evidence grows by log Σ_p W_p w_p and the island is resampled and
    rejuvenated as :func:`_advance_island` says
    (``resample_uniforms[t - start, k]``).

    With ``n_moves`` > 0, ``allocations[p, t]`` records every token's
    configuration (``m x H + h`` for cell m of the unobserved ones), and
    after each resampling every particle of the island makes ``n_moves``
    Gibbs moves over the tokens placed so far (resample-move: Gilks &
    Berzuini 2001). The moves leave the current target invariant, so the
    estimate stays unbiased.
    """
    n_particles = counts.shape[0]
    n_islands = log_evidence.shape[0]
    n_observed = slots.shape[0]
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
        cumulative = np.empty(missing_slots.shape[0])
        for t in range(start, stop):
            for q in range(size):
                p = lo + q
                u = uniforms[t - start, p]
                if t < n_observed:
                    total, shift = _token_terms(terms, denominators, counts, p, slots, t,
                                                alpha, offsets, consecutive)
                    increments[q] = np.log(total) + shift
                    code = _drawn(terms, total, u)
                    _add_token(counts, p, slots, t, offsets, code, 1)
                else:
                    increments[q], code = _place_missing_token(
                        terms, denominators, cumulative, counts, p, missing_slots, u, alpha,
                        offsets, consecutive)
                if record:
                    allocations[p, t] = code
            _advance_island(k, increments, t + 1, resample_uniforms[t - start, k], threshold,
                            counts, log_weights, log_evidence, n_resampled, allocations, n_moves,
                            move_seed, slots, missing_slots, alpha, offsets, consecutive, terms,
                            denominators, offspring)
