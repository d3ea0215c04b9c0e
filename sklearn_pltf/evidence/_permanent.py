"""The log permanent of exp(L) and its gradient, for a stack of K x K matrices.

:math:`\\log \\operatorname{perm} e^{L} = \\log \\sum_{\\sigma \\in S_K}
\\prod_k e^{L_{k \\sigma(k)}}`: a density averaged over every relabelling of K
exchangeable components, when :math:`L_{kl}` is the log density of slot k's
values under component l's parameters. Summed over the labels' subsets
(Ryser's idea; a forward and a backward pass over the 2^K subsets, in log
space) it costs O(2^K K) per matrix instead of K!; the gradient
:math:`\\partial / \\partial L_{kl}` is the probability that slot k holds
label l under the mixture.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["log_permanent"]

MAX_SIZE = 12  # 2^K subsets per matrix


def log_permanent(L):
    """``log perm exp(L)`` and its gradient for ``L`` of shape (n, K, K).

    Returns
    -------
    value : ndarray of shape (n,)
    gradient : ndarray of shape (n, K, K)
        The marginal probability that slot k takes label l; rows and
        columns sum to 1.
    """
    L = np.ascontiguousarray(L, dtype=np.float64)
    if L.ndim != 3 or L.shape[1] != L.shape[2] or L.shape[1] > MAX_SIZE:
        raise ValueError(f"Expected (n, K, K) with K <= {MAX_SIZE}, got {L.shape}.")
    value = np.empty(L.shape[0])
    gradient = np.empty_like(L)
    _log_permanent(L, value, gradient)
    return value, gradient


@numba.njit(cache=True, nogil=True, inline="always")
def _logaddexp(a, b):  # pragma: no cover - compiled
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    top = max(a, b)
    return top + np.log(np.exp(a - top) + np.exp(b - top))


# Serial: a matrix costs microseconds, less than waking a thread pool.
@numba.njit(cache=True, nogil=True)
def _log_permanent(L, value, gradient):  # pragma: no cover - compiled
    n, K = L.shape[0], L.shape[1]
    full = (1 << K) - 1
    popcount = np.zeros(1 << K, dtype=np.int64)
    for mask in range(1, 1 << K):
        popcount[mask] = popcount[mask >> 1] + (mask & 1)
    for i in range(n):
        # forward[mask]: slots 0 .. |mask| - 1 given the labels in mask;
        # backward[mask]: the remaining slots given the labels not in mask.
        forward = np.full(1 << K, -np.inf)
        backward = np.full(1 << K, -np.inf)
        forward[0] = 0.0
        for mask in range(full):
            if forward[mask] == -np.inf:
                continue
            k = popcount[mask]
            for label in range(K):
                if not mask & (1 << label):
                    nxt = mask | (1 << label)
                    forward[nxt] = _logaddexp(forward[nxt], forward[mask] + L[i, k, label])
        backward[full] = 0.0
        for mask in range(full - 1, -1, -1):
            k = popcount[mask]
            total = -np.inf
            for label in range(K):
                if not mask & (1 << label):
                    total = _logaddexp(total, L[i, k, label] + backward[mask | (1 << label)])
            backward[mask] = total
        log_perm = forward[full]
        value[i] = log_perm
        for k in range(K):
            for label in range(K):
                gradient[i, k, label] = 0.0
        for mask in range(full):
            k = popcount[mask]
            for label in range(K):
                if not mask & (1 << label):
                    gradient[i, k, label] += np.exp(forward[mask] + L[i, k, label]
                                                    + backward[mask | (1 << label)] - log_perm)
