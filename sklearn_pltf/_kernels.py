"""numba kernels for the per-entry loops of the sparse path.

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
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["entry_xhat", "entry_delta", "thread_blocks"]

# X̂ below this (only reachable when a factor underflows to exactly zero under
# EM) is floored so that a ratio X / X̂ stays finite.
TINY = np.finfo(np.float64).tiny


def thread_blocks(n_entries):
    """Fixed contiguous blocks of entries, one per numba thread: the partial sums
    and the order they are added in depend only on the thread count, so results
    are reproducible run to run."""
    return np.linspace(0, n_entries, numba.get_num_threads() + 1).astype(np.int64)


@numba.njit(cache=True, nogil=True, parallel=True)
def entry_xhat(buffer, offsets, widths, rows, cols, out):  # pragma: no cover - compiled
    """X̂ at every listed entry: out[n] = Σ_l Π_α table_α[rows[α, n], cols[α, l]]."""
    n_factors, n_entries = rows.shape
    n_configs = cols.shape[1]
    for n in numba.prange(n_entries):
        total = 0.0
        for l in range(n_configs):
            term = 1.0
            for a in range(n_factors):
                term *= buffer[offsets[a] + rows[a, n] * widths[a] + cols[a, l]]
            total += term
        out[n] = total


@numba.njit(cache=True, nogil=True, parallel=True)
def entry_delta(buffer, offsets, widths, rows, cols, alpha, weights, use_ratio, bounds, out):  # pragma: no cover
    """Δ_α over the listed entries, accumulated into ``out`` (table_α's layout, flat).

    With ``use_ratio`` the entry weight is ``weights[n] / X̂(n)`` (X̂ from the
    same tables), otherwise ``weights[n]``. Block ``b`` of entries
    (``bounds[b]:bounds[b + 1]``, see :func:`thread_blocks`) is scatter-added
    into its own copy of ``out``; the copies are summed in order.
    """
    n_factors = rows.shape[0]
    n_configs = cols.shape[1]
    width = widths[alpha]
    n_blocks = bounds.size - 1
    partial = np.zeros((n_blocks, out.size))
    for b in numba.prange(n_blocks):
        others = np.empty(n_configs)
        for n in range(bounds[b], bounds[b + 1]):
            own_base = offsets[alpha] + rows[alpha, n] * width
            xhat = 0.0
            for l in range(n_configs):
                term = 1.0
                for a in range(n_factors):
                    if a != alpha:
                        term *= buffer[offsets[a] + rows[a, n] * widths[a] + cols[a, l]]
                others[l] = term
                xhat += term * buffer[own_base + cols[alpha, l]]
            if use_ratio:
                w = weights[n] / max(xhat, TINY)
            else:
                w = weights[n]
            out_base = rows[alpha, n] * width
            for l in range(n_configs):
                partial[b, out_base + cols[alpha, l]] += w * others[l]
    for b in range(n_blocks):
        out += partial[b]
