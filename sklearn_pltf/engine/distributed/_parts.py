"""Parallel-block minibatches over a distributed tensor's blocks, for SGLD.

The in-memory :class:`~sklearn_pltf.inference._batches.BlockBatches` cuts
the tensor into ``n_blocks`` ranges per axis; a *part* is ``n_blocks``
blocks no two of which share a range on any axis (Şimşekli et al., ICML
2015). When a Dask array is chunked on exactly that grid
(:func:`block_grid`), each block is one chunk, and a step's minibatch is a
part: its blocks touch disjoint rows of every factor, so their gradient
terms are computed at once, each on the worker holding it, and placed
side by side on the client. The control variates' per-entry terms stay on
the workers with their blocks.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._kernels import TINY
from ._contract import use_worker_threads

__all__ = ["block_grid", "BlockParts", "anchor_blocks", "part_gradient_terms"]


def block_grid(shape, n_blocks):
    """Chunk sizes per axis whose chunks are BlockBatches' blocks: entry ``c``
    of an axis of size ``n`` lies in block ``c * n_blocks // n``."""
    return tuple(
        tuple(int(s) for s in np.diff([-(-b * n // n_blocks) for b in range(n_blocks + 1)]))
        for n in shape
    )


def _part_of(index, n_blocks):
    """The part of the block with chunk index ``index``, numbered as BlockBatches numbers them."""
    part = 0
    for b in index[1:]:
        part = part * n_blocks + (b - index[0]) % n_blocks
    return part


class BlockParts:
    """The parts of a distributed tensor chunked on :func:`block_grid`:
    ``draw(rng)`` gives a part's block positions and the scale that keeps
    the gradient unbiased, drawing as ``BlockBatches.draw`` does."""

    def __init__(self, data, n_blocks):
        grid = block_grid(data.shape, n_blocks)
        starts = [np.concatenate([[0], np.cumsum(sizes)[:-1]]) for sizes in grid]
        self.n_parts = n_blocks ** (data.ndim - 1)
        self.parts = [[] for _ in range(self.n_parts)]
        for position, block in enumerate(data.blocks):
            index = [int(np.searchsorted(s, o)) for s, o in zip(starts, block.offset)]
            if any(s[i] != o or grid[axis][i] != n for axis, (s, i, o, n) in
                   enumerate(zip(starts, index, block.offset, block.shape))):
                raise ValueError(f"The data's chunks are not the {n_blocks}-block grid "
                                 "of n_blocks; rechunk them with block_grid.")
            self.parts[_part_of(index, n_blocks)].append(position)

    def draw(self, rng):
        return self.parts[rng.integers(self.n_parts)], float(self.n_parts)


class BlockAnchor(NamedTuple):
    """On a worker, a block's share of the control variates at a reference
    point: each entry's log-likelihood term, and per free factor the
    block's expected allocation Z₀ ∘ Δ(E[N] / X̂₀) on its rows."""

    terms: np.ndarray
    allocation: tuple


def _anchor_block(contractor, reference, free):
    use_worker_threads()
    entries = contractor.nonzeros
    if entries.n_entries == 0:
        return BlockAnchor(np.zeros(0), tuple(np.zeros(reference[a].shape) for a in free))
    xhat = np.maximum(entries.xhat(reference), TINY)
    terms = contractor.likelihood.entry_log_terms(entries.values, xhat)
    return BlockAnchor(terms, tuple(reference[a] * entries.delta(a, reference, ratio=True)
                                    for a in free))


def _anchor_summary(anchor):
    return float(np.sum(anchor.terms)), anchor.allocation


def _part_block(contractor, factors, anchor, free):
    """On a worker: the block's allocation at ``factors`` minus its
    allocation at the anchor, per free factor, and the count, mean and sum
    of squared deviations of its entries' log-likelihood differences."""
    use_worker_threads()
    entries = contractor.nonzeros
    if entries.n_entries == 0:
        return tuple(np.zeros(factors[a].shape) for a in free), (0, 0.0, 0.0)
    xhat = np.maximum(entries.xhat(factors), TINY)
    differences = contractor.likelihood.entry_log_terms(entries.values, xhat)
    allocation = [factors[a] * entries.delta(a, factors, ratio=True) for a in free]
    if anchor is not None:
        differences = differences - anchor.terms
        allocation = [now - then for now, then in zip(allocation, anchor.allocation)]
    mean = float(np.mean(differences))
    return tuple(allocation), (differences.size, mean, float(np.sum((differences - mean) ** 2)))


def _pooled_moments(moments):
    """(n, mean, Σ squared deviations) of parts pooled (Chan, Golub & LeVeque 1983)."""
    n, mean, m2 = 0, 0.0, 0.0
    for n_b, mean_b, m2_b in moments:
        if n_b == 0:
            continue
        total = n + n_b
        delta = mean_b - mean
        mean += delta * n_b / total
        m2 += m2_b + delta * delta * n * n_b / total
        n = total
    return n, mean, m2


def _placed(contractor, positions, parts, free, factors):
    """Per free factor, the blocks' factor-row parts added into its shape."""
    totals = [np.zeros(factors[a].shape) for a in free]
    for b, block_parts in zip(positions, parts):
        slices = contractor.block_slices(b)
        for total, value, alpha in zip(totals, block_parts, free):
            total[slices[alpha]] += value
    return tuple(totals)


def anchor_blocks(contractor, reference, free):
    """Each block's :class:`BlockAnchor` at ``reference`` (futures, kept on
    the workers), the sum of every entry's log-likelihood term there, and
    each free factor's allocation Z₀ ∘ Δ(E[N] / X̂₀), the blocks' added up."""
    futures = contractor.submit_blocks(_anchor_block, [reference], free)
    client = contractor.data.client
    summaries = client.gather([client.submit(_anchor_summary, f, pure=False) for f in futures])
    total = sum(terms for terms, _ in summaries)
    allocation = _placed(contractor, range(len(futures)), [a for _, a in summaries], free,
                         reference)
    return futures, float(total), allocation


def part_gradient_terms(contractor, part, factors, anchors, free):
    """For the blocks ``part`` (positions), each free factor's allocation at
    ``factors`` minus that at the anchor (``anchors``: the futures of
    :func:`anchor_blocks`, or None), summed into the factor's shape, and the
    pooled (n, mean, Σ squared deviations) of the entries' log-likelihood
    differences."""
    extra = [(None if anchors is None else anchors[b], free) for b in part]
    results = contractor.gather_blocks(_part_block, [factors], extra, blocks=part)
    allocation = _placed(contractor, part, [parts for parts, _ in results], free, factors)
    return allocation, _pooled_moments(moments for _, moments in results)
