"""Data held on a Dask cluster, and the contractions over it.

A :class:`DistributedTensor` is a Dask array of sparse (or dense) chunks
persisted on the workers of a ``dask.distributed`` client, each chunk kept
there as an observed block; a :class:`DistributedContractor` computes the
engine's contractions block by block on the workers and adds the blocks'
factor-sized results on the client; on a Dask array chunked on SGLD's
block grid, a minibatch is a part of blocks that share no factor rows,
each computed on its worker (:mod:`._parts`). The data never leave the
workers.
"""

from ._contract import DistributedContractor, unreachable_nonzeros
from ._parts import BlockParts, anchor_blocks, block_grid, part_gradient_terms
from ._tensor import Block, DistributedTensor, as_distributed_tensor

__all__ = ["Block", "DistributedTensor", "DistributedContractor", "as_distributed_tensor",
           "unreachable_nonzeros", "BlockParts", "anchor_blocks", "block_grid",
           "part_gradient_terms"]
