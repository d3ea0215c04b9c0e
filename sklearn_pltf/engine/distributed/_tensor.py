"""A data tensor whose chunks live on the workers of a Dask cluster.

The user's ``dask.array.Array`` (chunks of pydata ``sparse`` arrays, the
Dask convention for sparse tensors, or dense chunks with NaN at missing
entries), with an optional Boolean Dask mask of the same shape, is
persisted on the cluster; each chunk is then validated *on its worker*
into an :class:`~sklearn_pltf.engine._data.ObservedTensor` in the sparse layout,
coordinates local to the chunk, and kept there. What the client learns are
sums over the chunks (the count of missing entries, the total, the
constant of the likelihood, the fingerprint): numbers, never entries.
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import numpy as np

from .._data import TensorExtent, as_observed_tensor, combine_digests, entry_digest, is_dask_array
from ._contract import DistributedContractor

__all__ = ["Block", "DistributedTensor", "as_distributed_tensor"]


class Block(NamedTuple):
    """One chunk of a distributed tensor: where it starts along each axis,
    its shape, and the future of its :class:`ObservedTensor` on a worker."""

    offset: tuple
    shape: tuple
    future: object


def _client():
    """The active ``dask.distributed`` client, or an error saying how to start one."""
    try:
        from distributed import get_client
    except ImportError as exc:  # pragma: no cover - the 'dask' extra is absent
        raise ImportError("Fitting a Dask array needs dask.distributed: "
                          "pip install 'sklearn-pltf[dask]'.") from exc
    try:
        return get_client()
    except ValueError:
        raise ValueError(
            "A Dask array is fitted on a dask.distributed cluster, and no client is active: "
            "start one first, e.g. `from distributed import Client; client = Client()` "
            "(a LocalCluster on this machine) or Client('scheduler-address'). For data that "
            "fit in memory, pass X.compute() instead."
        ) from None


def _worker_addresses(client):
    """The addresses of the cluster's workers, asked of the scheduler now.

    ``Client.nthreads`` queries the scheduler directly; the worker list in
    ``Client.scheduler_info()`` is a cache that the client's periodic refresh
    can overwrite with an empty one between the query and its return.
    An empty list (no worker yet) means no placement preference.
    """
    return sorted(client.nthreads())


def _load_block(chunk, mask_chunk, allow_negative):
    """On a worker: a chunk (and its mask) as a sparse-layout ObservedTensor."""
    data = as_observed_tensor(chunk, mask_chunk, allow_negative=allow_negative,
                              require_observed=False)
    return data.sparse_layout()


def _summarise(block, offset, shape):
    """On a worker: the sums the client keeps of one block."""
    offset = np.asarray(offset, dtype=np.int64)[:, None]
    coords, values = block.nonzero_entries
    return {
        "n_missing": block.n_missing,
        "total": block.total,
        "log_factorial_total": block.log_factorial_total,
        "saturated_total": block.saturated_total,
        "digest": entry_digest(shape, coords + offset, values,
                               block.missing.astype(np.int64) + offset),
    }


def _value_sum(block, function):
    return block.value_sum(function)


def _take_rows(block, rows):
    return block.take_samples(rows)


def _chunk_futures(client, array):
    """The persisted chunks of ``array``, in C order of their chunk indices."""
    from distributed import futures_of

    persisted = client.persist(array)
    by_key = {future.key: future for future in futures_of(persisted)}
    return persisted, [by_key[(persisted.name,) + index] for index in np.ndindex(persisted.numblocks)]


def _check_mask(mask, shape):
    if mask is None:
        return None
    if not is_dask_array(mask):
        raise ValueError(
            "With a Dask array X, the mask must be a Dask array too (Boolean, True = "
            f"observed, chunked like X); got {type(mask).__name__}.")
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"The mask has shape {tuple(mask.shape)} but the data have shape "
                         f"{tuple(shape)}.")
    return mask


def as_distributed_tensor(X, mask=None, allow_negative=False):
    """Persist a Dask array (and mask) on the active cluster as a :class:`DistributedTensor`.

    Parameters
    ----------
    X : dask.array.Array
        Chunks of pydata ``sparse`` arrays (implicit zeros observed), or of
        dense arrays (NaN marks missing entries).
    mask : dask.array.Array of bool, default=None
        True where an entry is observed; rechunked like ``X`` on the cluster.
    allow_negative : bool, default=False
        Accept negative values.

    Raises
    ------
    ValueError
        If no ``dask.distributed`` client is active, a chunk fails the checks
        in-memory data get (its message, raised on the worker), or every entry
        is missing.
    """
    if len(X.shape) == 0 or any(np.isnan(n) for c in X.chunks for n in c) or 0 in X.shape:
        raise ValueError(f"The data are empty or of unknown shape ({X.shape}); need known "
                         "chunk sizes and at least one entry.")
    shape = tuple(int(n) for n in X.shape)
    mask = _check_mask(mask, shape)
    client = _client()
    persisted, chunks = _chunk_futures(client, X)
    if mask is None:
        masks = [None] * len(chunks)
    else:
        _, masks = _chunk_futures(client, mask.rechunk(persisted.chunks))
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int) for c in persisted.chunks]
    # Blocks go to the workers in turn, so each holds an equal share however
    # the chunks were placed; every later computation follows its block. A
    # preference only: if a worker is lost, its blocks are rebuilt elsewhere.
    workers = _worker_addresses(client)
    blocks = []
    for k, (index, chunk, mask_chunk) in enumerate(zip(np.ndindex(persisted.numblocks), chunks,
                                                       masks)):
        offset = tuple(int(starts[axis][i]) for axis, i in enumerate(index))
        extent = tuple(int(persisted.chunks[axis][i]) for axis, i in enumerate(index))
        placement = (dict(workers=[workers[k % len(workers)]], allow_other_workers=True)
                     if workers else {})
        future = client.submit(_load_block, chunk, mask_chunk, allow_negative, pure=False,
                               **placement)
        blocks.append(Block(offset, extent, future))
    data = DistributedTensor(shape, tuple(blocks), client)
    if data.n_observed == 0:
        raise ValueError("All entries of the data are missing; there is nothing to fit.")
    return data


class DistributedTensor(TensorExtent):
    """Observed data in blocks on a Dask cluster (module docstring).

    It offers what the variational and EM fits read of an
    :class:`~sklearn_pltf.engine._data.ObservedTensor` (shape, counts, sums,
    :meth:`value_sum`, :meth:`take_samples`, the fingerprint); a method
    that would need every entry in one place is not there.

    Parameters
    ----------
    shape : tuple of int
    blocks : tuple of Block
        Disjoint blocks covering the tensor.
    client : distributed.Client
    """

    is_sparse = True
    is_distributed = True

    def __init__(self, shape, blocks, client):
        self.shape, self.blocks, self.client = tuple(shape), tuple(blocks), client
        self._kept = {}

    def submit_each(self, function, *args, per_block=None):
        """Futures of ``function(block data, *per_block[i], *args)`` for each
        block ``i``, run where the blocks live."""
        per_block = per_block or [()] * len(self.blocks)
        return [self.client.submit(function, block.future, *own, *args, pure=False)
                for block, own in zip(self.blocks, per_block)]

    def map_blocks(self, function, *args, per_block=None):
        """What :meth:`submit_each` computes, gathered in block order."""
        return self.client.gather(self.submit_each(function, *args, per_block=per_block))

    def keep_on_blocks(self, key, function, per_block):
        """:meth:`submit_each`'s futures, computed once per ``key`` and kept
        on the workers while this tensor lives (e.g. each block's contractor
        for one model: restarts and repeated fits of the model share them)."""
        if key not in self._kept:
            self._kept[key] = self.submit_each(function, per_block=per_block)
        return self._kept[key]

    @cached_property
    def _summary(self):
        return self.map_blocks(_summarise, self.shape, per_block=[(b.offset,) for b in self.blocks])

    @cached_property
    def n_missing(self):
        return sum(part["n_missing"] for part in self._summary)

    @cached_property
    def total(self):
        """Sum of the observed values."""
        return float(sum(part["total"] for part in self._summary))

    @cached_property
    def log_factorial_total(self):
        """Σ over observed entries of log Γ(X + 1)."""
        return float(sum(part["log_factorial_total"] for part in self._summary))

    @cached_property
    def saturated_total(self):
        """Σ over observed entries of x log x − x − log Γ(x + 1)."""
        return float(sum(part["saturated_total"] for part in self._summary))

    @cached_property
    def fingerprint(self):
        """The same fingerprint as the data in memory would have."""
        return combine_digests(self.shape, [part["digest"] for part in self._summary])

    def contractor(self, model, likelihood):
        """The :class:`~sklearn_pltf.engine.distributed.DistributedContractor` of
        ``model`` (bound) and a likelihood object over these blocks."""
        return DistributedContractor(model, self, likelihood)

    def value_sum(self, function):
        """Σ ``function(values)`` over the observed values, block by block on the workers."""
        return float(sum(self.map_blocks(_value_sum, function)))

    def take_samples(self, rows):
        """The samples ``rows`` (increasing positions along axis 0), renumbered
        from 0, as a distributed tensor: each block keeps its rows where it is."""
        rows = np.asarray(rows, dtype=np.intp)
        blocks = []
        for block in self.blocks:
            start, stop = block.offset[0], block.offset[0] + block.shape[0]
            first, last = np.searchsorted(rows, [start, stop])
            if first == last:
                continue
            future = self.client.submit(_take_rows, block.future, rows[first:last] - start,
                                        pure=False)
            blocks.append(Block((int(first),) + block.offset[1:],
                                (int(last - first),) + block.shape[1:], future))
        return DistributedTensor((rows.size,) + self.shape[1:], tuple(blocks), self.client)

    @property
    def observed_values(self):
        raise ValueError(
            "This step needs every observed value in one process, which a Dask array of "
            "data does not offer: fit it with method='vb' or 'em', or pass X.compute().")

    nonzero_entries = observed_values

    def __repr__(self):
        return f"DistributedTensor(shape={self.shape}, blocks={len(self.blocks)})"
