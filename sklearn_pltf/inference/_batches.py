"""Minibatches of listed entries for stochastic-gradient samplers
(:mod:`.sgld`, :mod:`.relational.rescal_sgld`), the variance that subsampling adds
to an estimated sum, and what their targets return and keep."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "RandomBatches", "BlockBatches", "subsampling_variance", "subsampling_variance_of",
    "TargetGradient", "ControlVariates",
]


class TargetGradient(NamedTuple):
    """What a target's ``gradient`` returns: the stochastic gradient ĝ per
    parameter block, the unbiased estimate ℓ̂ of log p(X | θ), its variance
    over minibatches, and the estimated expected allocation of each block
    (what the target's ``curvature`` reads; None if it reads nothing)."""

    gradient: tuple
    log_likelihood: float
    log_likelihood_noise: float
    allocated: tuple | None


class ControlVariates(NamedTuple):
    """A target's reference point θ₀ and what its control variates need
    there: the factors (model order, or the target's own tuple), the
    expected allocation of each parameter block, and each listed entry's
    log-likelihood term and E[N] / X̂; ``total`` is the sum of the terms."""

    reference: tuple
    allocation: tuple
    terms: np.ndarray
    ratios: np.ndarray
    total: float


class RandomBatches:
    """Minibatches of ``batch_size`` distinct entries out of ``n_entries``,
    uniformly at random; each comes with its scale ``n_entries / batch_size``."""

    def __init__(self, n_entries, batch_size):
        self.n_entries = int(n_entries)
        self.batch_size = int(min(batch_size, n_entries))

    def draw(self, rng):
        if self.batch_size >= self.n_entries:
            return np.arange(self.n_entries), 1.0
        index = rng.choice(self.n_entries, self.batch_size, replace=False)
        return index, self.n_entries / self.batch_size


def subsampling_variance(terms, scale):
    """Estimated variance of ``scale * Σ terms`` over minibatches, from the
    batch's own ``terms``: N² (1 - N_s/N) S² / N_s for a simple random
    sample of N_s of N = ``scale`` N_s terms with sample variance S² (a
    part of :class:`BlockBatches` is treated the same way: an approximation,
    since its entries are not a simple random sample)."""
    n = terms.size
    return subsampling_variance_of(n, np.var(terms, ddof=1) if n > 1 else 0.0, scale)


def subsampling_variance_of(n, variance, scale):
    """:func:`subsampling_variance` from the batch's size ``n`` and the
    sample variance of its terms (for terms summed where they live)."""
    if n < 2 or scale <= 1.0:
        return 0.0
    total = scale * n
    return float(total**2 * (1.0 - n / total) * variance / n)


class BlockBatches:
    """Parallel-block minibatches (Şimşekli et al., ICML 2015): the tensor is
    cut into ``n_blocks`` ranges per axis, and a *part* is a set of
    ``n_blocks`` blocks no two of which share a range on any axis (block
    ``(b, b + s_2, ..., b + s_N) mod n_blocks`` for a shift vector ``s``).
    The blocks of a part touch disjoint rows of every factor that carries
    an observed index, so their updates are conditionally independent: one
    vectorised step updates them together. Each step takes one of the
    ``n_blocks^(N-1)`` parts at random; every entry lies in exactly one
    part, so scaling by the number of parts keeps the gradient unbiased.
    """

    def __init__(self, coords, shape, n_blocks):
        coords = np.asarray(coords)
        blocks = [(coords[m] * n_blocks) // shape[m] for m in range(len(shape))]
        part = np.zeros(coords.shape[1], dtype=np.int64)
        for m in range(1, len(shape)):
            part = part * n_blocks + (blocks[m] - blocks[0]) % n_blocks
        self.n_parts = n_blocks ** (len(shape) - 1)
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange(self.n_parts + 1))
        self._parts = [order[bounds[i]:bounds[i + 1]] for i in range(self.n_parts)]

    def draw(self, rng):
        return self._parts[rng.integers(self.n_parts)], float(self.n_parts)
