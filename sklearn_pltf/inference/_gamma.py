"""Element-wise work on Gamma distributions, compiled: moments and bound terms.

Every VB step needs ``exp(ψ(C))`` for each free factor and every bound needs
``log Γ(C)``; with scipy these two special functions cost more than the
contractions on sparse data. The kernels here run them
in parallel, fused with the arithmetic around them, over a fixed split of the
elements so sums do not depend on the thread count.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numba
import numpy as np
from scipy.special import gammaln, polygamma, xlogy

from ..engine import _array_api
from ..engine._threads import parallel_kernel

__all__ = ["digamma", "gamma_from_moments", "gamma_moments", "gamma_bound_term", "log_gamma_density"]

# Below this many elements the kernels run on one thread: starting threads,
# and waiting for cores that BLAS's threads still hold after a contraction,
# cost more than the work saves.
_PARALLEL_FROM = 1 << 17

# Elements are summed in this many fixed blocks (then the block sums in order),
# so a sum is the same whatever the number of threads.
_N_BLOCKS = 64

# ψ is shifted up to at least this argument before its asymptotic series; the
# first omitted term, 3617 / (8160 x^16), is then below 5e-17.
_SERIES_FROM = 10.0


@contextmanager
def _threads_for(n_elements):
    """One numba thread for small arrays (see ``_PARALLEL_FROM``), all otherwise.
    ``numba.set_num_threads`` is per calling thread, so this is thread-safe."""
    if n_elements >= _PARALLEL_FROM:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


@numba.njit(cache=True, nogil=True, inline="always")
def _digamma(x):  # pragma: no cover - compiled
    # Recurrence ψ(x) = ψ(x + 1) - 1/x (Abramowitz & Stegun 6.3.5), then the
    # asymptotic series ψ(x) ~ ln x - 1/(2x) - Σ B_2n / (2n x^2n) (A&S 6.3.18).
    shift = 0.0
    while x < _SERIES_FROM:
        shift -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (
        1.0 / 132 - f * (691.0 / 32760 - f / 12.0))))))
    return shift + math.log(x) - 0.5 / x - series


@parallel_kernel
def _digamma_into(x, out):  # pragma: no cover - compiled
    for i in numba.prange(x.size):
        out[i] = _digamma(x[i])


def digamma(x):
    """ψ(x) = d log Γ(x) / dx for positive ``x`` (any shape), in parallel.

    Within ``1e-14 * max(1, |ψ(x)|)`` of :func:`scipy.special.digamma`:
    each recurrence step and the series term cost an ulp of the largest
    intermediate (``tests/inference/test_gamma.py`` checks x from 1e-8 to 1e8).
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(x.size)
    with _threads_for(x.size):
        _digamma_into(x.reshape(-1), out)
    return out.reshape(x.shape)


@parallel_kernel
def _moments_into(shape, scale, mean, geometric, psi):  # pragma: no cover - compiled
    for i in numba.prange(shape.size):
        psi[i] = _digamma(shape[i])
        mean[i] = shape[i] * scale[i]
        geometric[i] = math.exp(psi[i]) * scale[i]


def gamma_moments(shape, scale):
    """Mean ``C D``, geometric mean ``exp(ψ(C)) D`` and ``ψ(C)`` of Gamma(C, scale D).

    ``ψ(C)`` is returned for the bound (:func:`gamma_bound_term`), which would
    otherwise evaluate it again. Arrays of another namespace than NumPy
    (:mod:`sklearn_pltf.engine._array_api`) are computed in it, where they live.
    """
    if not isinstance(shape, np.ndarray):
        psi = _array_api.digamma(shape)
        return shape * scale, _array_api.namespace_of(psi).exp(psi) * scale, psi
    shape = np.ascontiguousarray(shape, dtype=np.float64)
    scale = np.ascontiguousarray(scale, dtype=np.float64)
    mean, geometric, psi = np.empty(shape.size), np.empty(shape.size), np.empty(shape.size)
    with _threads_for(shape.size):
        _moments_into(shape.reshape(-1), scale.reshape(-1), mean, geometric, psi)
    return tuple(v.reshape(shape.shape) for v in (mean, geometric, psi))


@parallel_kernel
def _bound_term(prior_shape, prior_rate, shape, scale, psi):  # pragma: no cover - compiled
    n = shape.size
    edges = np.linspace(0, n, _N_BLOCKS + 1).astype(np.int64)
    partial = np.zeros(_N_BLOCKS)
    for b in numba.prange(_N_BLOCKS):
        total = 0.0
        for i in range(edges[b], edges[b + 1]):
            a, c, d = prior_shape[i], shape[i], scale[i]
            total += (a - c) * psi[i] + a * math.log(d) - prior_rate[i] * c * d + c + math.lgamma(c)
        partial[b] = total
    result = 0.0
    for b in range(_N_BLOCKS):  # in order: partial.sum() here would be a parallel reduction
        result += partial[b]
    return result


def gamma_bound_term(prior_shape, prior_rate, shape, scale, psi, log_normalizer):
    """One factor's term of the VB bound: E_q[log p(Z)] - E_q[log q(Z)].

    For a Gamma(A, rate R) prior and q = Gamma(C, scale D) each element
    contributes

    .. math::

        (A-1)(\\psi(C) + \\log D) - R C D + A \\log R - \\log\\Gamma(A)
        + C + \\log D + \\log\\Gamma(C) + (1-C)\\psi(C)
        = (A - C)\\psi(C) + A \\log D - R C D + C + \\log\\Gamma(C)
        + A \\log R - \\log\\Gamma(A).

    ``psi`` is ψ(C), as :func:`gamma_moments` returned it. The last two terms
    do not depend on q: their sum over the factor is computed once per fit and
    passed in as ``log_normalizer``.
    """
    if not isinstance(shape, np.ndarray):
        xp = _array_api.namespace_of(shape)
        if shape.dtype != xp.float64:
            # In float64: the terms are large and cancel (log Γ(C) against
            # C ψ(C)), so each one's float32 rounding would add up to more
            # than the bound's changes near convergence.
            prior_shape, prior_rate, shape, scale = (
                xp.astype(v, xp.float64) if hasattr(v, "dtype") else v
                for v in (prior_shape, prior_rate, shape, scale))
            psi = _array_api.digamma(shape)
        terms = ((prior_shape - shape) * psi + prior_shape * xp.log(scale)
                 - prior_rate * shape * scale + shape + _array_api.gammaln(shape))
        return _array_api.float64_sum(terms) + log_normalizer
    arrays = [np.ascontiguousarray(v, dtype=np.float64).reshape(-1)
              for v in (prior_shape, prior_rate, shape, scale, psi)]
    with _threads_for(arrays[0].size):
        return float(_bound_term(*arrays)) + log_normalizer


def log_gamma_density(z, shape, rate, axis=None):
    """Σ log Gamma(z; shape, rate) over the elements (a float), or over
    ``axis`` only (an array: e.g. one sum per point of a stack)."""
    terms = xlogy(shape, rate) - gammaln(shape) + xlogy(shape - 1.0, z) - rate * z
    return float(np.sum(terms)) if axis is None else np.sum(terms, axis=axis)


def gamma_from_moments(mean, geometric_mean):
    """The Gamma(shape, rate) with the given E[Z] and exp E[log Z], elementwise:
    the shape solves :math:`\\log a - \\psi(a) = \\log m - \\log g` (by
    Newton's method on log a, from Minka's closed-form start) and the rate is
    a / m. The moments a sampler's chains keep give its posterior marginals'
    Gamma fit."""
    mean = np.maximum(np.asarray(mean, dtype=np.float64), 1e-300)
    with np.errstate(divide="ignore"):
        gap = np.log(mean) - np.log(np.asarray(geometric_mean, dtype=np.float64))
    # A geometric mean of 0 (a draw underflowed to 0) caps at a very wide Gamma.
    gap = np.clip(gap, 1e-12, 1e3)
    shape = (3.0 - gap + np.sqrt((gap - 3.0) ** 2 + 24.0 * gap)) / (12.0 * gap)
    for _ in range(20):
        residual = np.log(shape) - digamma(shape) - gap
        shape = shape * np.exp(-residual / (1.0 - shape * polygamma(1, shape)))
    return shape, shape / mean
