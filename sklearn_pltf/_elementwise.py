"""Passes over whole dense tensors, entry by entry, in parallel.

- :func:`count_ratio_into`: E[N | X] / X̂ at every entry (``X / X̂`` for
  Poisson data, ``1 / (1 − e^{−X̂})`` at the ones for Bernoulli–Poisson
  data, 0 at zeros; :mod:`sklearn_pltf._likelihood`), the weights of Δ in
  every VB and EM update;
- :func:`ratio_and_log_terms_into`: the same ratio and, in the same pass,
  Σ over the non-zeros of their log-likelihood term besides −X̂ (``X log
  X̂``, or ``log(e^{X̂} − 1)`` at a one), the data term of the bound. The
  bound's X̂ is the next sweep's first, so the ratio it leaves serves that
  sweep.

X̂ is read as at least the smallest normal float, so an entry whose rate
underflowed to 0 gives a finite ratio and log; only the non-zeros of X
take a ratio or a log. The passes read their arrays in memory order
(:func:`memory_order_view`), so the arrays of one call must share a layout:
X̂ comes from the contraction in whatever axis order it chose, and the dense
contractor keeps X and its work arrays in that order
(:class:`sklearn_pltf._contract.DenseContractor`). The sum runs over fixed
chunks, then over the chunks in order, so it does not depend on the number
of threads.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._kernels import BERNOULLI_RATIO, TINY
from ._threads import parallel_kernel

# Entries per chunk of the log-likelihood sum (2 MB of float64 a chunk).
_CHUNK = 1 << 18

__all__ = ["count_ratio_into", "ratio_and_log_terms_into", "memory_axes", "memory_order_view",
           "in_layout_of"]


@numba.njit(cache=True, nogil=True, inline="always")
def _ratio_and_term(value, xhat, mode):  # pragma: no cover - compiled
    """(E[N | x] / X̂, the log term) of one non-zero ``value`` at rate ``xhat``."""
    rate = max(xhat, TINY)
    if mode == BERNOULLI_RATIO:  # log(e^{X̂} − 1) = X̂ + log(1 − e^{−X̂})
        shortfall = -math.expm1(-rate)
        return value / shortfall, value * (rate + math.log(shortfall))
    return value / rate, value * math.log(rate)


@parallel_kernel
def _count_ratio(x, xhat, out, mode):  # pragma: no cover - compiled
    for i in numba.prange(x.size):
        out[i] = 0.0 if x[i] == 0.0 else _ratio_and_term(x[i], xhat[i], mode)[0]


@parallel_kernel
def _count_ratio_and_log_terms(x, xhat, out, mode, sums):  # pragma: no cover - compiled
    for c in numba.prange(sums.size):
        total = 0.0
        for i in range(c * _CHUNK, min((c + 1) * _CHUNK, x.size)):
            if x[i] == 0.0:
                out[i] = 0.0
            else:
                out[i], term = _ratio_and_term(x[i], xhat[i], mode)
                total += term
        sums[c] = total


def count_ratio_into(x, xhat, out, mode):
    """Write E[N | X] / X̂ of every entry into ``out`` and return it; ``x``,
    ``xhat`` and ``out`` share one layout. ``mode`` is a likelihood's
    ``kernel_mode`` (:mod:`._kernels`)."""
    _count_ratio(memory_order_view(x), memory_order_view(xhat), memory_order_view(out), mode)
    return out


def ratio_and_log_terms_into(x, xhat, out, mode):
    """:func:`count_ratio_into`, and the sum of the non-zeros' log terms
    (module docstring) from the same pass: ``(out, sum)``."""
    sums = np.empty(-(-x.size // _CHUNK))
    _count_ratio_and_log_terms(memory_order_view(x), memory_order_view(xhat),
                               memory_order_view(out), mode, sums)
    return out, float(sum(sums.tolist()))


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


def in_layout_of(values, template):
    """``values`` laid out in memory as ``template`` is (same shape): itself
    if it already is, else a copy."""
    if values.strides == template.strides and values.dtype == np.float64:
        return values
    copy = np.empty_like(template, dtype=np.float64)  # order="K": template's layout
    copy[...] = values
    return copy
