"""Passes over whole dense tensors, entry by entry, in parallel.

- :func:`floor_in_place`: X̂ raised to at least the smallest normal float of
  its precision, so that an entry whose rate underflowed to 0 gives a finite
  ratio and log;
- :func:`count_ratio_into`: E[N | X] / X̂ at every entry (``X / X̂`` for
  Poisson data, ``1 / (1 − e^{−X̂})`` at the ones for Bernoulli–Poisson
  data, the mean of the latent count over X̂ for compound Poisson data, 0
  at zeros; :mod:`sklearn_pltf.engine._likelihood`), the weights of Δ in
  every VB and EM update;
- :func:`log_terms_sum`: Σ over the non-zeros of their log-likelihood term
  besides −X̂ (``X log X̂``, or ``log(e^{X̂} − 1)`` at a one), the data term
  of the bound, the likelihood's own terms on chunks spread over threads;
- :func:`ratio_and_log_sum`: the ratio and the log terms' sum together,
  X̂'s array used for the terms (the bound's X̂ is the next step's: one
  read of X and X̂ serves both), fused in one pass for Poisson and compound
  Poisson data.

They read their arrays in memory order (:func:`memory_order_view`), so the
arrays of one call must share a layout: X̂ comes from the contraction in
whatever axis order it chose, and the dense contractor keeps X and its
work arrays in that order (:class:`sklearn_pltf.engine._contract.DenseContractor`).
The sum runs over fixed chunks, then over the chunks in order, so it does
not depend on the number of threads.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ._kernels import (BERNOULLI_RATIO, COMPOUND_RATIO, MIDDLE_BLOCK, SERIES_LIMIT, SMALL_Z,
                       TINY, compound_count_mean, compound_log_sum, middle_count_mean,
                       middle_entries, middle_log_sum, small_compound_series)
from ._log import log_positive
from ._threads import parallel_kernel

# Entries per chunk of the log-likelihood sum (2 MB of float64 a chunk).
_CHUNK = 1 << 18

__all__ = ["floor_in_place", "count_ratio_into", "compound_ratio", "log_terms_sum",
           "ratio_and_log_sum", "memory_axes", "memory_order_view", "in_layout_of"]


@parallel_kernel
def _floor(values, tiny):  # pragma: no cover - compiled
    for i in numba.prange(values.size):
        values[i] = max(values[i], tiny)


@parallel_kernel
def _poisson_ratio(x, xhat, out):  # pragma: no cover - compiled
    for i in numba.prange(x.size):
        out[i] = x[i] / xhat[i]


@parallel_kernel(fastmath={"contract"})  # as log_positive is compiled
def _poisson_ratio_and_log_terms(x, xhat, out):  # pragma: no cover - compiled
    for i in numba.prange(x.size):
        value = xhat[i]
        out[i] = x[i] / value
        xhat[i] = x[i] * log_positive(value)


@parallel_kernel(fastmath={"contract"})  # fused multiply-adds in Horner's rule
def compound_ratio(x, xhat, jump_rate, out):  # pragma: no cover - compiled
    """E[N | X, X̂] / X̂ of the compound Poisson likelihood at every entry of
    the flat ``x`` and ``xhat`` (0 at zeros), into ``out``."""
    # Every entry by the fixed polynomials (branch-free: vector lanes), then,
    # block by block, the z above SMALL_Z again: those below SERIES_LIMIT
    # gathered and taken together by the Chebyshev interpolant, the rest
    # (Hankel's expansion) one by one.
    for i in numba.prange(x.size):
        s0, s1 = small_compound_series(min(jump_rate * x[i] * xhat[i], SMALL_Z))
        out[i] = s0 / s1 / xhat[i] * (x[i] != 0.0)
    for block in numba.prange((x.size + MIDDLE_BLOCK - 1) // MIDDLE_BLOCK):
        _past_small_block(x, xhat, jump_rate, out, block, False)


@numba.njit(cache=True, nogil=True, inline="always", fastmath={"contract"})
def _past_small_block(x, xhat, jump_rate, out, block, with_log):  # pragma: no cover - compiled
    """The ratio of block ``block``'s entries whose z lies above SMALL_Z,
    into ``out``: those below SERIES_LIMIT gathered and taken together by
    the Chebyshev interpolants, the rest (Hankel's expansion) one by one.
    Returns the sum of their log S with ``with_log``, else 0."""
    start = block * MIDDLE_BLOCK
    stop = min(start + MIDDLE_BLOCK, x.size)
    index, z = np.empty(MIDDLE_BLOCK, dtype=np.int64), np.empty(MIDDLE_BLOCK)
    logs = np.empty(MIDDLE_BLOCK if with_log else 0)
    m, above = middle_entries(x, xhat, jump_rate, start, stop, index, z)
    if with_log:
        for k in range(m):
            logs[k] = middle_log_sum(z[k])
    for k in range(m):
        z[k] = middle_count_mean(z[k])
    total = 0.0
    for k in range(m):
        out[index[k]] = z[k] / xhat[index[k]]
    if with_log:
        for k in range(m):
            total += logs[k]
    if above:
        for i in range(start, stop):
            value = jump_rate * x[i] * xhat[i]
            if value >= SERIES_LIMIT:
                out[i] = compound_count_mean(value) / xhat[i]
                if with_log:
                    total += compound_log_sum(value)
    return total


@parallel_kernel(fastmath={"contract"})  # as compound_ratio
def _compound_ratio_and_log_terms(x, xhat, jump_rate, out, block_sums):  # pragma: no cover
    # The z above SMALL_Z first, block by block as compound_ratio takes them:
    # their ratio into out, their log S summed per block. Then every entry
    # by the fixed polynomials (vector lanes): the small z's ratio into out
    # and log S = log(z S₁) into xhat, 0 there for the others and the zeros.
    for block in numba.prange(block_sums.size):
        block_sums[block] = _past_small_block(x, xhat, jump_rate, out, block, True)
    for i in numba.prange(x.size):
        value = xhat[i]
        z = jump_rate * x[i] * value
        s0, s1 = small_compound_series(min(z, SMALL_Z))
        small = z <= SMALL_Z
        out[i] = s0 / s1 / value * (x[i] != 0.0) if small else out[i]
        normaliser = z * s1
        log = log_positive(max(normaliser, TINY)) if normaliser >= TINY else -np.inf
        xhat[i] = log if small and x[i] != 0.0 else 0.0


@parallel_kernel
def _bernoulli_ratio(x, xhat, out):  # pragma: no cover - compiled
    for i in numba.prange(x.size):
        out[i] = 0.0 if x[i] == 0.0 else x[i] / -math.expm1(-xhat[i])


def memory_axes(array):
    """``array``'s axes from the one whose steps through memory are longest
    to the shortest (``range(ndim)`` for a C-contiguous array)."""
    if array.flags.c_contiguous:
        return tuple(range(array.ndim))
    return tuple(int(a) for a in np.argsort(array.strides, kind="stable")[::-1])


def memory_order_view(array):
    """``array``'s elements as a flat view in memory order (it must be
    contiguous in some order of its axes, as a transposed C array is)."""
    permuted = array.transpose(memory_axes(array))
    if not permuted.flags.c_contiguous:
        raise ValueError("The array is not contiguous in any order of its axes.")
    return permuted.reshape(-1)


def in_layout_of(values, template, dtype=None):
    """``values`` laid out in memory as ``template`` is (same shape), of
    ``dtype`` (``template``'s by default): itself if it already is, else a
    copy."""
    dtype = template.dtype if dtype is None else np.dtype(dtype)
    strides = tuple(stride // template.itemsize * dtype.itemsize for stride in template.strides)
    if values.strides == strides and values.dtype == dtype:
        return values
    copy = np.empty_like(template, dtype=dtype)  # order="K": template's layout
    copy[...] = values
    return copy


def floor_in_place(xhat):
    """Raise every entry of ``xhat`` to at least the smallest normal float
    of its precision."""
    _floor(memory_order_view(xhat), xhat.dtype.type(np.finfo(xhat.dtype).tiny))
    return xhat


def log_terms_sum(x, xhat, likelihood):
    """``likelihood.log_terms`` of ``x`` at ``xhat`` (floored; one layout):
    Σ over the non-zeros of X log X̂ (Poisson) or log(e^{X̂} − 1) (a
    Bernoulli–Poisson one).

    The likelihood's own vectorised numpy terms run on fixed chunks of the
    entries, the chunks spread over numba's threads (numpy releases the
    GIL), and the chunks' sums are added in order: the sum does not depend
    on the thread count.
    """
    x, xhat = memory_order_view(x), memory_order_view(xhat)

    def chunk_sum(start):
        return likelihood.log_terms(x[start:start + _CHUNK], xhat[start:start + _CHUNK])

    starts = range(0, x.size, _CHUNK)
    threads = min(numba.get_num_threads(), len(starts))
    if threads <= 1:
        return float(sum(map(chunk_sum, starts)))
    # A pool per call: one kept across calls would hang in a forked child.
    with ThreadPoolExecutor(threads) as pool:
        return float(sum(pool.map(chunk_sum, starts)))


def count_ratio_into(x, xhat, out, likelihood):
    """Write E[N | X] / X̂ of every entry under ``likelihood`` into ``out``
    and return it; ``x``, ``xhat`` (floored, :func:`floor_in_place`) and
    ``out`` share one layout."""
    x, xhat, out_flat = memory_order_view(x), memory_order_view(xhat), memory_order_view(out)
    if likelihood.kernel_mode == BERNOULLI_RATIO:
        _bernoulli_ratio(x, xhat, out_flat)
    elif likelihood.kernel_mode == COMPOUND_RATIO:
        compound_ratio(x, xhat, likelihood.jump_rate, out_flat)
    else:
        _poisson_ratio(x, xhat, out_flat)
    return out


def ratio_and_log_sum(x, xhat, out, likelihood):
    """Write E[N | X] / X̂ of every entry under ``likelihood`` into ``out``
    (:func:`count_ratio_into`) and return the sum of the log terms
    (:func:`log_terms_sum`); ``xhat`` (floored, :func:`floor_in_place`) is
    overwritten, and ``x``, ``xhat`` and ``out`` share one layout.

    For Poisson and compound Poisson data it is one pass that writes the
    terms into ``xhat`` and sums them by numpy's pairwise sum in memory
    order (with compound Poisson, the terms of the z past the polynomials'
    range in a fixed block order), so the sum does not depend on the thread
    count; for binary data the two functions in turn.
    """
    mode = likelihood.kernel_mode
    if mode == BERNOULLI_RATIO:
        total = log_terms_sum(x, xhat, likelihood)
        count_ratio_into(x, xhat, out, likelihood)
        return total
    x, xhat, out = memory_order_view(x), memory_order_view(xhat), memory_order_view(out)
    if mode == COMPOUND_RATIO:
        block_sums = np.empty((x.size + MIDDLE_BLOCK - 1) // MIDDLE_BLOCK)
        _compound_ratio_and_log_terms(x, xhat, likelihood.jump_rate, out, block_sums)
        return float(np.sum(block_sums) + np.sum(xhat))
    _poisson_ratio_and_log_terms(x, xhat, out)
    return float(np.sum(xhat))
