"""Compiled loops of the probit link (:class:`~.links.ProbitLink`): the latent
Gaussian's draws, the binary log-likelihood and Φ of every entry, one pass
over the entries each.

The draws are serial by design: they read the caller's
``numpy.random.Generator`` (numba shares its bit generator), so the same
``random_state`` gives the same numbers. The log-likelihood and Φ run on
the kernels' threads (:func:`~sklearn_pltf.engine._threads.parallel_kernel`):
the log-likelihood sums fixed blocks of entries, then the blocks in order,
so its value does not depend on the thread count.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...engine._threads import parallel_kernel

#: Below this mean the body's rejection would accept fewer than Φ(-0.8) ≈ 21%
#: of its draws: the tail's exponential rejection takes over.
_BODY_FROM = -0.8
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(cache=True, nogil=True, inline="always")
def _positive_normal(rng, mean):  # pragma: no cover - compiled
    """One draw of N(mean, 1) truncated to [0, ∞). Where ``mean >= -0.8``,
    a Gaussian draw kept when it lands at or above zero; below, with
    a = -mean the truncation point of the standard normal, Robert's
    exponential rejection ("Simulation of truncated normal variables",
    Statistics and Computing 1995): z = a + Exp(λ), λ = (a + √(a² + 4))/2,
    kept with probability exp(-(z - λ)²/2); the draw is z - a."""
    if mean >= _BODY_FROM:
        while True:
            draw = mean + rng.standard_normal()
            if draw >= 0.0:
                return draw
    a = -mean
    rate = 0.5 * (a + math.sqrt(a * a + 4.0))
    while True:
        z = a + rng.standard_exponential() / rate
        if rng.random() <= math.exp(-0.5 * (z - rate) ** 2):
            return z - a


@numba.njit(cache=True, nogil=True)
def draw_latent(rng, xhat, signs, out):  # pragma: no cover - compiled
    """z given X̂ (flat arrays): N(x̂, 1) truncated to z ≥ 0 where ``signs``
    is +1, to z ≤ 0 where it is -1, untruncated where it is 0 (missing)."""
    for v in range(xhat.size):
        s = signs[v]
        if s == 0.0:
            out[v] = xhat[v] + rng.standard_normal()
        else:
            out[v] = s * _positive_normal(rng, s * xhat[v])
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _lower_tail(x):  # pragma: no cover - compiled
    """Φ(-|x|) = erfc(|x|/√2)/2, from which Φ(x) and log Φ(±x) all follow
    with their relative precision in either tail."""
    return 0.5 * math.erfc(abs(x) / math.sqrt(2.0))


@numba.njit(cache=True, nogil=True, inline="always")
def _log_cdf(x, tail):  # pragma: no cover - compiled
    """log Φ(x) given ``tail`` = Φ(-|x|): ``log1p(-tail)`` above 0 (Φ near 1),
    ``log(tail)`` down to -30, where it is still far from underflow; below,
    the asymptotic series of Mills' ratio (relative error under 1e-11 there)."""
    if x > 0.0:
        return math.log1p(-tail)
    if x > -30.0:
        return math.log(tail)
    inv = 1.0 / (x * x)
    series = 1.0 - inv * (1.0 - 3.0 * inv * (1.0 - 5.0 * inv * (1.0 - 7.0 * inv)))
    return -0.5 * x * x - math.log(-x) - _LOG_SQRT_2PI + math.log(series)


@numba.njit(cache=True, nogil=True, inline="always")
def log_ndtr(x):  # pragma: no cover - compiled
    """log Φ(x)."""
    return _log_cdf(x, _lower_tail(x))


@numba.njit(cache=True, nogil=True, inline="always")
def _cdf(x, tail):  # pragma: no cover - compiled
    """Φ(x) given ``tail`` = Φ(-|x|)."""
    return tail if x < 0.0 else 1.0 - tail


#: Entries per block of :func:`binary_log_likelihood`'s sum.
_BLOCK = 1 << 14


def binary_log_likelihood(xhat, signs, cdf=None):
    """Σ over entries with ``signs`` ≠ 0 of log Φ(s x̂) (flat arrays); with
    ``cdf`` (a flat array like ``xhat``), Φ(x̂) of every entry written there
    too, from the same ``erfc`` (the sampler's predictive probabilities)."""
    sums = np.empty(-(-xhat.size // _BLOCK))
    _block_log_likelihoods(xhat, signs, sums, np.empty(0) if cdf is None else cdf)
    return float(np.sum(sums))


@parallel_kernel
def _block_log_likelihoods(xhat, signs, sums, cdf):  # pragma: no cover - compiled
    """Each block's Σ log Φ(s x̂) into ``sums``, and Φ(x̂) into ``cdf``
    unless it is empty."""
    write = cdf.size > 0
    for b in numba.prange(sums.size):
        total = 0.0
        for v in range(b * _BLOCK, min((b + 1) * _BLOCK, xhat.size)):
            x = xhat[v]
            tail = _lower_tail(x)
            if write:
                cdf[v] = _cdf(x, tail)
            if signs[v] != 0.0:
                total += _log_cdf(signs[v] * x, tail)
        sums[b] = total


def normal_cdf(xhat):
    """Φ(x̂) of every entry, an array of ``xhat``'s shape."""
    xhat = np.ascontiguousarray(xhat, dtype=np.float64)
    out = np.empty(xhat.shape)
    _normal_cdf_into(xhat.ravel(), out.ravel())
    return out


@parallel_kernel
def _normal_cdf_into(xhat, out):  # pragma: no cover - compiled
    for v in numba.prange(xhat.size):
        out[v] = _cdf(xhat[v], _lower_tail(xhat[v]))


@numba.njit(cache=True, nogil=True)
def latent_expectation(xhat, signs, out):  # pragma: no cover - compiled
    """VB's q(z) given the mean X̂ (flat arrays): writes E[z] and returns
    Σ log Φ(s x̂) over the observed entries. Where ``signs`` is ±1, q(z)
    is N(x̂, 1) truncated to the side s names, of mean
    :math:`\\hat x + s\\,\\varphi(s \\hat x)/\\Phi(s \\hat x)` (the inverse
    Mills ratio, as a difference of logs so that it holds far in the
    tail); where it is 0, q(z) is N(x̂, 1) itself."""
    total = 0.0
    for v in range(xhat.size):
        s = signs[v]
        if s == 0.0:
            out[v] = xhat[v]
        else:
            t = s * xhat[v]
            log_cdf = log_ndtr(t)
            total += log_cdf
            out[v] = xhat[v] + s * math.exp(-0.5 * t * t - _LOG_SQRT_2PI - log_cdf)
    return total
