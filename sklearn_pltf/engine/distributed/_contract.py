"""The engine's contractions over a :class:`DistributedTensor`, block by block.

Every sum over entries splits over the disjoint blocks: for a block ``b``
covering the ranges :math:`v_0 \\in b` of the observed indices,

.. math::

    \\Delta_\\alpha(Q)(v_\\alpha) = \\sum_b \\Delta^{(b)}_\\alpha(Q)(v_\\alpha),

where :math:`\\Delta^{(b)}_\\alpha` involves only the rows of each factor
that fall in ``b``'s ranges (a factor's latent axes are whole). So each
call ships every block the factor rows it touches, the worker holding the
block computes its part with the in-memory
:class:`~sklearn_pltf.engine._contract.SparseContractor` (built once per block and
kept there), and the client adds the parts, in block order, into the
factor's rows. The all-observed terms (a product of sums, the size of the
factors) are computed on the client as in memory; the data enter only
through the blocks' non-zeros and missing entries.
"""

from __future__ import annotations

import functools

from dataclasses import replace

import numpy as np

from .._contract import EntryList, SparseContractor
from .._planner import planner_for

__all__ = ["DistributedContractor", "unreachable_nonzeros"]


def block_model(model, block):
    """``model`` with its observed indices sized to ``block``'s shape."""
    return replace(model, sizes={**model.sizes, **dict(zip(model.output, block.shape))})


def factor_slices(model, block):
    """For each factor, the index that selects the rows ``block`` touches."""
    ranges = {c: slice(start, start + n)
              for c, start, n in zip(model.output, block.offset, block.shape)}
    return [tuple(ranges.get(c, slice(None)) for c in indices) for indices in model.factors]


def use_worker_threads():
    """Let the compiled kernels use the calling Dask worker's threads, not
    every core: the workers on a machine share its cores, and kernels that
    each spread over all of them contend (the results do not depend on it)."""
    import numba
    from distributed import get_worker

    numba.set_num_threads(max(1, min(get_worker().state.nthreads, numba.config.NUMBA_NUM_THREADS)))


def _build(data, model, likelihood):
    return SparseContractor(model, data, likelihood)


def _call(contractor, factors, name, alpha):
    use_worker_threads()
    method = getattr(contractor, name)
    return method(factors) if alpha is None else method(alpha, factors)


def _unreachable(data, model, factors):
    """On a worker: the block's non-zeros where X̂ is zero, as local coordinates."""
    use_worker_threads()
    coords, _ = data.nonzero_entries
    if coords.shape[1] == 0:
        return coords
    return coords[:, EntryList(model, coords).xhat(factors) <= 0]


class DistributedContractor:
    """The four contractions of :mod:`sklearn_pltf.engine._contract` over a
    :class:`DistributedTensor` (module docstring)."""

    def __init__(self, model, data, likelihood):
        self.model, self.data, self.likelihood = model, data, likelihood
        self._planner = planner_for(model)
        self._client = data.client
        self._slices = [factor_slices(model, block) for block in data.blocks]
        self._blocks = data.keep_on_blocks(
            ("contractor", model, likelihood.name, likelihood.jump_rate), _build,
            [(block_model(model, block), likelihood) for block in data.blocks])

    @functools.cached_property
    def log_base_measure(self):
        """The factor-free part of log p(X | Z) (−Σ log X! for Poisson data),
        computed once: the bound reads it at every evaluation."""
        return self.likelihood.log_base_measure(self.data)

    def block_slices(self, position):
        """Per factor, the index of the rows the block at ``position`` touches."""
        return self._slices[position]

    def submit_blocks(self, function, factor_sets, *args, per_block=None, blocks=None):
        """Futures of ``function(block's contractor, *its rows of each factor
        list in factor_sets, *args)`` (or ``*per_block[i]`` in place of
        ``args`` for the i-th block) for the blocks at ``blocks`` (positions;
        all by default), run where the blocks live."""
        positions = range(len(self._blocks)) if blocks is None else blocks
        futures = []
        for i, position in enumerate(positions):
            slices = self._slices[position]
            rows = [[f[s] for f, s in zip(factors, slices)] for factors in factor_sets]
            extra = args if per_block is None else per_block[i]
            futures.append(self._client.submit(function, self._blocks[position], *rows, *extra,
                                               pure=False))
        return futures

    def gather_blocks(self, function, factor_sets, per_block=None, blocks=None):
        """What :meth:`submit_blocks` computes, gathered in block order."""
        return self._client.gather(
            self.submit_blocks(function, factor_sets, per_block=per_block, blocks=blocks))

    def _gather(self, name, factors, alpha=None):
        """Each block's ``name`` of its rows of ``factors``, in block order."""
        return self._client.gather(self.submit_blocks(_call, [factors], name, alpha))

    def _delta(self, name, alpha, factors):
        total = np.zeros(self.model.factor_shape(alpha))
        for part, slices in zip(self._gather(name, factors, alpha), self._slices):
            total[slices[alpha]] += part
        return total

    def ratio_delta(self, alpha, factors):
        return self._delta("ratio_delta", alpha, factors)

    def ratio_deltas(self, alphas, factors):
        """``{α: ratio_delta(α, factors)}``, one round trip to each block for all."""
        totals = {alpha: np.zeros(self.model.factor_shape(alpha)) for alpha in alphas}
        parts = self._client.gather(self.submit_blocks(_call, [factors], "ratio_deltas",
                                                       tuple(alphas)))
        for part, slices in zip(parts, self._slices):
            for alpha in alphas:
                totals[alpha][slices[alpha]] += part[alpha]
        return totals

    def masked_delta(self, alpha, factors):
        delta = self._planner.all_observed_delta(alpha, factors)
        if self.data.n_missing:
            delta = delta - self._delta("missing_delta", alpha, factors)
        return delta

    def masked_total(self, factors):
        total = self._planner.all_observed_total(factors)
        if self.data.n_missing:
            total -= sum(self._gather("missing_total", factors))
        return total

    def data_loglik(self, factors):
        return float(sum(self._gather("data_loglik", factors)))

    @property
    def nonzeros(self):
        raise ValueError("The samplers allocate counts entry by entry in one process; with a "
                         "Dask array of data use method='vb' or 'em'.")


def unreachable_nonzeros(model, data, factors):
    """The observed non-zeros of a :class:`DistributedTensor` where X̂ of
    ``factors`` is zero, as global coordinates (ndim x n) in C order."""
    found = data.map_blocks(_unreachable, per_block=[
        (block_model(model, block), [f[s] for f, s in zip(factors, factor_slices(model, block))])
        for block in data.blocks])
    coords = np.hstack([part + np.asarray(block.offset)[:, None]
                        for part, block in zip(found, data.blocks)])
    return coords[:, np.lexsort(coords[::-1])]
