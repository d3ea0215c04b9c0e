"""The two contractions every PLTF algorithm needs, on dense and sparse data.

For a model with factors :math:`Z_\\alpha(v_\\alpha)` and observed indices
:math:`v_0`:

.. math::

    \\hat X(v_0) = \\sum_{\\bar v_0} \\prod_\\alpha Z_\\alpha(v_\\alpha), \\qquad
    \\Delta_\\alpha(Q)(v_\\alpha) = \\sum_{v \\setminus v_\\alpha} Q(v_0)
        \\prod_{\\alpha' \\neq \\alpha} Z_{\\alpha'}(v_{\\alpha'})

(Yılmaz, Cemgil & Şimşekli, NIPS 2011, eq. 6). Algorithms ask a contractor for

- ``ratio_delta(alpha, Z)``: :math:`\\Delta_\\alpha(M \\circ E[N] / \\hat X)`,
  ``E[N]`` the expected latent count of each entry (:mod:`._likelihood`:
  ``X`` itself for Poisson data, so :math:`\\Delta_\\alpha(M \\circ X / \\hat X)`);
- ``ratio_deltas(alphas, Z)``: ``{α: ratio_delta(α, Z)}`` for several factors
  at the same Z (one X̂ and one ratio serve them all on dense data);
- ``masked_delta(alpha, Z)``: :math:`\\Delta_\\alpha(M)`;
- ``masked_total(Z)``: :math:`\\sum M \\circ \\hat X`;
- ``data_loglik(Z)``: the non-zeros' terms of the log-likelihood besides
  :math:`-\\hat X`, e.g. :math:`\\sum M \\circ X \\log \\hat X`; with
  ``log_base_measure`` and ``masked_total`` it makes log p(X | Z).

The dense path contracts whole tensors with opt_einsum expressions planned once
per subscripts and shapes. The sparse path works on entry lists (the observed
non-zeros, and separately the missing entries): it gathers each factor's slice
at the listed coordinates, contracts in chunks with a batch index, and
scatter-adds into the factor's shape, so memory and time follow the number of
listed entries. Masked quantities are the all-observed value (a product of
sums, the size of the factors) minus the contribution of the missing entries.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _kernels
from ._array_api import float64_sum, like
from ._array_contract import ArrayAPIContractor, array_full_xhat
from ._data import array_bytes
from ._elementwise import (count_ratio_into, floor_in_place, in_layout_of, memory_axes,
                           memory_order_view, ratio_and_log_sum)
from ._likelihood import PoissonLikelihood, get_likelihood
from ._planner import expand_to_factor, planner_for

__all__ = ["make_contractor", "EntryList", "full_xhat"]

# Largest number of floats in one chunk's intermediate (16 MB of float64).
_CHUNK_FLOATS = 1 << 21
# Up to this many configurations of all latent indices, the sparse path
# enumerates them per entry in a numba kernel; beyond, it contracts with einsum.
_MAX_ENUMERATED_CONFIGS = 512


def make_contractor(model, data, likelihood="poisson"):
    """The contractor for a bound ``model``, an :class:`ObservedTensor` and a
    likelihood (a name in :data:`._likelihood.LIKELIHOODS`, checked against
    the data)."""
    likelihood = get_likelihood(likelihood)
    likelihood.check(data)
    if data.is_array_api:  # computes where its arrays live
        return ArrayAPIContractor(model, data, likelihood)
    if data.is_distributed:  # it brings its own, which computes where its blocks live
        return data.contractor(model, likelihood)
    if data.is_sparse:
        return SparseContractor(model, data, likelihood)
    return DenseContractor(model, data, likelihood)


def full_xhat(model, factors):
    """X̂ over the whole observed tensor (dense) for a bound model; in the
    factors' namespace and on their device where any is not a NumPy array."""
    template = next((f for f in factors if not isinstance(f, np.ndarray)), None)
    if template is not None:
        return array_full_xhat(model, [like(f, template) for f in factors])
    return planner_for(model).full_xhat(factors)


def _same_arrays(kept, factors):
    """Whether ``kept`` holds the very arrays of ``factors`` (inference
    never modifies a factor array in place, so the same arrays mean the same
    X̂ and ratio)."""
    return len(kept) == len(factors) and all(a is b for a, b in zip(kept, factors))


def _sum_of_products(a, b):
    """Σ a·b by numpy's pairwise summation, not BLAS ``dot``: BLAS splits the sum
    over its threads, so its result depends on the thread count (and differs
    in joblib workers, whose BLAS threads are limited). Accumulated in
    float64 whatever the arrays' precision."""
    return float64_sum(a * b)


# ---------------------------------------------------------------------- dense
class DenseContractor:
    """Contractions on a dense data tensor (and a dense mask, if any).

    Float32 data (:func:`~._data.as_observed_tensor`'s ``keep_float32``)
    are contracted in float32 (:attr:`dtype`): the factors a call is given
    (float64: they are the size of the factors) are rounded to float32
    once per set of arrays, and X̂, the ratios and the matrix product that
    starts each Δ (over one index: all of an NMF's Δ) are float32; the rest
    of each Δ (a CP or Tucker model's sums over the other indices) runs in
    float64. The bound's data terms read an X̂ of the
    factors in float64 (:meth:`_bound_xhat`): from float32 factors, each
    factor's rounding would move the data terms by its gradient, and the
    bound would jitter by more than a run gains per cycle near its limit
    (the stopping rule would read the jitter as convergence).
    """

    def __init__(self, model, data, likelihood=PoissonLikelihood()):
        self.model, self.data, self.likelihood = model, data, likelihood
        self._planner = planner_for(model)
        self._x = data.dense  # zero at missing entries, so X / X̂ is too
        #: The precision of the data-sized work: the data's.
        self.dtype = data.dense.dtype
        self._mask = None if data.mask is None else data.mask.astype(self.dtype)
        self._rounded = ((), ())  # factors given, and those in self.dtype
        self._last = ((), None)
        self._scratch = None
        self._ratio_of = ()  # the factors whose ratio the work array holds
        self._xhat_buffers = {}  # by dtype: float32 data's bound has a float64 X̂ too
        self._laid_out = False

    def xhat(self, factors):
        """X̂ over the whole tensor.

        The last result is kept with the factor arrays it came from: inference
        never modifies a factor array in place, so the same arrays mean the same
        X̂ (the bound's X̂ serves the next step's first update).
        """
        last_factors, last_xhat = self._last
        if _same_arrays(last_factors, factors):
            return last_xhat
        xhat = self._full_xhat(self._in_precision(factors))
        if not self._laid_out:
            self._lay_out_as(xhat)
        self._last = (tuple(factors), xhat)
        return xhat

    def _full_xhat(self, operands):
        """X̂ of ``operands``, floored, in their precision: in C order, like
        X, by one matrix product into the contractor's array of that
        precision (only the last X̂ of each is kept, and every caller
        consumes it before asking for another), where the model allows;
        else as the contraction lays it out."""
        if self._planner.last_index_split is None:
            return floor_in_place(self._planner.full_xhat(operands))
        dtype = np.result_type(*operands)
        if dtype not in self._xhat_buffers:
            self._xhat_buffers[dtype] = np.empty(self._x.shape, dtype=dtype)
        return floor_in_place(self._planner.full_xhat_into(operands, self._xhat_buffers[dtype]))

    def _in_precision(self, factors):
        """``factors`` as operands of the data-sized work: themselves for
        float64 data; rounded to float32 for float32 data (once per set of
        arrays: inference never modifies a factor array in place), so that
        no product with the data is promoted to float64."""
        if self.dtype == np.float64:
            return factors
        given, rounded = self._rounded
        if not _same_arrays(given, factors):
            rounded = tuple(f if f is None or f.dtype == self.dtype else f.astype(self.dtype)
                            for f in factors)
            self._rounded = (tuple(factors), rounded)
        return rounded

    def _bound_xhat(self, factors):
        """X̂ for the bound's data terms, floored, laid out as X: :meth:`xhat`
        for float64 data; for float32 data, X̂ of ``factors`` in float64, in
        a float64 array of its own (class docstring)."""
        if self.dtype == np.float64:
            return self.xhat(factors)
        if not self._laid_out:
            self.xhat(factors)
        xhat = self._full_xhat([np.asarray(f, dtype=np.float64) for f in factors])
        return in_layout_of(xhat, self._x, dtype=np.float64)

    def _lay_out_as(self, xhat):
        """Keep X, the mask and the work array in X̂'s memory layout (the
        contraction's axis order, the same at every call), so that the
        element-wise passes read all of them in memory order."""
        self._x = in_layout_of(self._x, xhat)
        if self._mask is not None:
            self._mask = in_layout_of(self._mask, xhat)
        self._scratch = np.empty_like(xhat)
        self._laid_out = True

    def _delta(self, alpha, factors, weights, reductions=None):
        """Δ_α(weights), ``weights`` a tensor of the data's shape and layout.

        The data-sized tensor is first contracted, by one matrix product
        over its memory as it lies (no transposed copy), with the factor
        that alone carries the index at either end of its memory order;
        the rest, smaller by that index's size over the factor's others, is
        left to the planned contraction. ``reductions``, a dict, keeps those
        products across calls on the same ``weights`` and ``factors``: in a
        three-way CP model the first two factors' Δ share one (the
        "dimension tree" of CP-ALS, Phan, Tichavský & Cichocki 2013).

        With float32 data the product runs in float32 and the rest in
        float64, from the factors as given: in float32 the rest's sums (over
        every index but α's and the product's) made each step jitter by more
        than SQUAREM's long extrapolations tolerate. Where no end index
        qualifies, the whole Δ runs in float32.
        """
        p, m = self._planner, self.model
        own = m.factors[alpha]
        others, present = p.others_of(alpha, with_output=True)
        operands = self._in_precision(factors)
        reduced, indices, used = self._reduce_by_one_factor(alpha, operands, weights, reductions)
        if used is None:  # the whole Δ in the data's precision
            factors = operands
        else:
            reduced = reduced.astype(np.float64, copy=False)
        rest = [a for a in others if a != used]
        subscripts = (",".join([p.subs(indices)] + [p.subs(m.factors[a]) for a in rest])
                      + "->" + p.subs(present))
        result = p.contract(subscripts, reduced, *[factors[a] for a in rest])
        return expand_to_factor(result, present, own, m.factor_shape(alpha))

    def _reduce_by_one_factor(self, alpha, factors, weights, reductions=None):
        """``(tensor, its indices, the factor used or None)``: ``weights``
        contracted over the index at one end of its memory order with the one
        factor other than α that carries it, by one matrix product; or
        ``weights`` itself where no end index qualifies. A product already
        in ``reductions`` (keyed by end and factor) is reused, a new one
        stored there."""
        m = self.model
        axes = memory_axes(weights)
        in_memory = "".join(m.output[a] for a in axes)
        for end in (-1, 0):
            index = in_memory[end]
            carriers = [a for a in range(m.n_factors) if index in m.factors[a]]
            if index in m.factors[alpha] or len(carriers) != 1 or weights.shape[axes[end]] < 2:
                continue
            used = carriers[0]
            indices = m.factors[used]
            rest_of_factor = indices.replace(index, "")
            if any(c in in_memory for c in rest_of_factor):  # it would pair two axes
                continue
            if end == -1:
                kept = in_memory[:-1] + rest_of_factor
            else:
                kept = rest_of_factor + in_memory[1:]
            if reductions is not None and (end, used) in reductions:
                return reductions[end, used], kept, used
            table = np.moveaxis(factors[used], indices.index(index), 0)
            table = table.reshape(m.sizes[index], -1)
            flat = memory_order_view(weights)
            if end == -1:  # (rest of memory, index) @ (index, rest of factor)
                product = flat.reshape(-1, m.sizes[index]) @ table
            else:  # (rest of factor, index) @ (index, rest of memory)
                product = table.T @ flat.reshape(m.sizes[index], -1)
            product = product.reshape(tuple(m.sizes[c] for c in kept))
            if reductions is not None:
                reductions[end, used] = product
            return product, kept, used
        return weights, m.output, None

    @functools.cached_property
    def log_base_measure(self):
        """The factor-free part of log p(X | Z) (−Σ log X! for Poisson data),
        computed once: the bound reads it at every evaluation."""
        return self.likelihood.log_base_measure(self.data)

    def _ratio(self, factors):
        """E[N] / X̂ at every entry, in the work array (already there when
        the bound was last taken at the same factors, :meth:`data_loglik`)."""
        if _same_arrays(self._ratio_of, factors):
            return self._scratch
        xhat = self.xhat(factors)  # first: it may lay X out as X̂ is
        ratio = count_ratio_into(self._x, xhat, self._scratch, self.likelihood)
        self._ratio_of = tuple(factors)
        return ratio

    def ratio_delta(self, alpha, factors):
        return self.ratio_deltas((alpha,), factors)[alpha]

    def ratio_deltas(self, alphas, factors):
        ratio = self._ratio(factors)
        reductions = {}
        return {alpha: self._delta(alpha, factors, ratio, reductions) for alpha in alphas}

    def masked_delta(self, alpha, factors):
        if self._mask is None:
            return self._planner.all_observed_delta(alpha, factors)
        return self._delta(alpha, factors, self._mask)

    def masked_total(self, factors):
        if self._mask is None:  # from the factors as given: the size of the factors
            return self._planner.all_observed_total(factors)
        return _sum_of_products(self._mask, self._bound_xhat(factors))

    def data_loglik(self, factors):
        xhat = self._bound_xhat(factors)  # first: it may lay X out as X̂ is
        # The bound's X̂ is the next step's (VB's geometric means, EM's
        # factors): its ratio is taken with the log terms, and X̂'s array
        # holds the terms after it.
        total = ratio_and_log_sum(self._x, xhat, self._scratch, self.likelihood)
        self._last, self._ratio_of = ((), None), tuple(factors)
        return total

    @property
    def nonzeros(self):
        """The observed non-zero entries as an :class:`EntryList` (for samplers,
        which allocate counts where there are counts)."""
        if not hasattr(self, "_nonzeros"):
            coords = np.nonzero(self._x)
            self._nonzeros = EntryList(self.model, np.vstack(coords), self._planner,
                                       values=self._x[coords], likelihood=self.likelihood)
        return self._nonzeros


# --------------------------------------------------------------------- sparse
class EntryList:
    """Gather / contract / scatter-add over a list of tensor entries, in chunks.

    Parameters
    ----------
    model : Model
        A bound model.
    coords : ndarray of shape (ndim, n_entries)
        Coordinates of the listed entries.
    planner : _Planner, default=None
        Shared expression cache.
    engine : {"auto", "numba", "einsum"}, default="auto"
        ``"numba"`` enumerates the latent configurations per entry in one fused
        pass (:mod:`sklearn_pltf.engine._kernels`); ``"einsum"`` contracts chunks of
        entries with opt_einsum; ``"auto"`` takes numba unless the latent
        configurations are too many to enumerate.
    values : ndarray of shape (n_entries,), default=None
        A value per entry (the data at the non-zeros); None for ones. These are
        the weights of :meth:`delta`.
    likelihood : PoissonLikelihood or BernoulliPoissonLikelihood, default=Poisson
        How ``values`` relate to latent counts: it sets the weights of
        ``delta(ratio=True)`` (:mod:`._likelihood`).
    """

    def __init__(self, model, coords, planner=None, engine="auto", values=None,
                 likelihood=PoissonLikelihood()):
        self.model, self.likelihood = model, likelihood
        self.coords = np.asarray(coords, dtype=np.intp)
        self.n_entries = self.coords.shape[1]
        self.values = (
            np.ones(self.n_entries) if values is None else np.asarray(values, dtype=np.float64)
        )
        self._planner = planner or planner_for(model)
        self._layout = [self._factor_layout(a) for a in range(model.n_factors)]
        latent_widths = [
            int(np.prod([model.sizes[c] for c in self._layout[a][1]], dtype=np.int64))
            for a in range(model.n_factors)
        ]
        self._widths = np.array(latent_widths, dtype=np.int64)
        self._table_forms = [self._table_form(a) for a in range(model.n_factors)]
        n_configs = int(np.prod([model.sizes[c] for c in model.latent], dtype=np.int64))
        if engine == "auto":
            engine = "numba" if n_configs <= _MAX_ENUMERATED_CONFIGS else "einsum"
        self.engine = engine
        self.chunk = max(1024, _CHUNK_FLOATS // max(n_configs, 1))
        # Row of each entry in each factor's observed-index block (0 for a factor
        # without observed indices), for gathers and scatter-adds.
        self._rows = np.array(
            [self._scatter_rows(a) for a in range(model.n_factors)], dtype=np.int64
        ).reshape(model.n_factors, self.n_entries)
        # Two factors whose latent blocks are both every latent index, in the
        # same order (NMF and the like): the vectorised pair kernels serve them.
        self._pair = False
        if engine == "numba":
            self._enumerate()
            self._pair = model.n_factors == 2 and bool(
                np.all(self._cols == np.arange(n_configs)) and np.all(self._widths == n_configs)
            )

    def __sizeof__(self):
        return object.__sizeof__(self) + array_bytes(*vars(self).values())

    def subset(self, index, values=None):
        """The entries at positions ``index`` as an :class:`EntryList` that
        reuses this one's plan (rows, layouts, expressions) and contracts with
        einsum: a minibatch costs what its entries cost, with no per-batch
        planning. ``values`` replaces theirs (e.g. X / X̂ computed once, for
        :meth:`delta` of every factor)."""
        sub = object.__new__(EntryList)
        sub.model, sub._planner, sub._layout = self.model, self._planner, self._layout
        sub.likelihood = self.likelihood
        sub._table_forms = self._table_forms
        sub._widths, sub.chunk, sub.engine, sub._pair = self._widths, self.chunk, "einsum", False
        sub.coords = self.coords[:, index]
        sub.n_entries = sub.coords.shape[1]
        sub.values = self.values[index] if values is None else np.asarray(values, dtype=np.float64)
        sub._rows = self._rows[:, index]
        return sub

    def _enumerate(self):
        """Plan the numba kernels once: configuration columns, and for each
        factor the entries in its row-block order, so a kernel reads them
        sequentially (int32 rows where they fit)."""
        if hasattr(self, "_cols"):
            return
        self._cols = self._config_columns()
        self._blocks = [_kernels.row_blocks(r) for r in self._rows]
        row_type = np.int32 if self._rows.size and self._rows.max() < 2**31 else np.int64
        self._rows_by_factor = [
            np.ascontiguousarray(self._rows[:, order], dtype=row_type) for order, _ in self._blocks
        ]
        self._values_by_factor = [self.values[order] for order, _ in self._blocks]

    def _factor_layout(self, alpha):
        """(observed indices, latent indices, axis permutation putting observed first)."""
        own = self.model.factors[alpha]
        observed = "".join(c for c in own if c in self.model.output)
        latent = "".join(c for c in own if c not in self.model.output)
        permutation = tuple(own.index(c) for c in observed + latent)
        return observed, latent, permutation

    def _scatter_rows(self, alpha):
        observed = self._layout[alpha][0]
        if not observed:
            return np.zeros(self.n_entries, dtype=np.int64)
        sizes = tuple(self.model.sizes[c] for c in observed)
        axes = [self.model.output.index(c) for c in observed]
        return np.ravel_multi_index(tuple(self.coords[axes]), sizes)

    def _config_columns(self):
        """cols[α, l]: column of latent configuration ``l`` in factor α's table."""
        latent = self.model.latent
        sizes = [self.model.sizes[c] for c in latent]
        # (n latent, n configs); a model without latent indices has one configuration
        configs = np.indices(sizes).reshape(len(sizes), -1) if sizes else np.zeros((0, 1), np.int64)
        cols = []
        for alpha in range(self.model.n_factors):
            own = self._layout[alpha][1]
            if not own:
                cols.append(np.zeros(configs.shape[1], dtype=np.int64))
                continue
            values = tuple(configs[latent.index(c)] for c in own)
            cols.append(np.ravel_multi_index(values, [self.model.sizes[c] for c in own]))
        return np.array(cols, dtype=np.int64).reshape(self.model.n_factors, -1)

    def _table(self, alpha, factor):
        """Factor α as a C-contiguous (observed block x latent block) table."""
        table = np.transpose(factor, self._layout[alpha][2]).reshape(-1, self._widths[alpha])
        return np.ascontiguousarray(table)

    def _tables(self, factors):
        """Every factor as (observed block x latent block), packed in one buffer."""
        tables = [self._table(a, f) for a, f in enumerate(factors)]
        offsets = np.cumsum([0] + [t.size for t in tables[:-1]]).astype(np.int64)
        return np.concatenate([t.ravel() for t in tables]), offsets

    def _table_form(self, alpha):
        """Factor α's table: (rows, columns), the shape of its (observed...,
        latent...) block, and the axis order that takes the block back to the
        factor's own order (planned once: the samplers call for it every step)."""
        observed, latent, permutation = self._layout[alpha]
        n_rows = int(np.prod([self.model.sizes[c] for c in observed], dtype=np.int64))
        block = tuple(self.model.sizes[c] for c in observed + latent)
        return (n_rows, int(self._widths[alpha])), block, tuple(int(a) for a in np.argsort(permutation))

    def _zero_table(self, alpha):
        """Factor α's table filled with zeros, flat, and its (rows, columns)."""
        (n_rows, width), _, _ = self._table_forms[alpha]
        return np.zeros(n_rows * width), (n_rows, width)

    def _from_table(self, alpha, flat):
        """Factor α's flat table back to the factor's own axis order."""
        _, block, inverse = self._table_forms[alpha]
        return np.transpose(flat.reshape(block), inverse)

    def _chunks(self):
        for start in range(0, self.n_entries, self.chunk):
            yield slice(start, min(start + self.chunk, self.n_entries))

    def _operand(self, alpha, factor, chunk):
        """Factor α at the chunk's entries: (batch, latent...) or the factor itself."""
        observed, latent, permutation = self._layout[alpha]
        p = self._planner
        if not observed:
            return factor, p.subs(latent)
        table = np.transpose(factor, permutation).reshape(-1, self._widths[alpha])
        gathered = np.take(table, self._rows[alpha][chunk], axis=0)
        latent_shape = tuple(self.model.sizes[c] for c in latent)
        return gathered.reshape((-1,) + latent_shape), p.batch + p.subs(latent)

    def xhat(self, factors):
        """X̂ at every listed entry."""
        out = np.empty(self.n_entries)
        if self._pair:
            _kernels.pair_xhat(*(self._table(a, f) for a, f in enumerate(factors)), self._rows, out)
            return out
        if self.engine == "numba":
            buffer, offsets = self._tables(factors)
            _kernels.entry_xhat(buffer, offsets, self._widths, self._rows, self._cols, out)
            return out
        p = self._planner
        for chunk in self._chunks():
            ops, subs = zip(*(self._operand(a, f, chunk) for a, f in enumerate(factors)))
            out[chunk] = p.contract(",".join(subs) + "->" + p.batch, *ops)
        return out

    @property
    def n_tokens(self):
        """Σ values: how many uniforms :meth:`allocation_sum` takes (values are counts)."""
        return int(self.values.sum())

    def _tokens_by_factor(self, alpha, counts=None):
        """For factor α's entry order: each entry's count (``values``, or
        ``counts`` when given as (counts, starts)), and where its tokens start
        among the uniforms (which follow the entries' own order)."""
        self._enumerate()
        if counts is not None:  # (counts, starts) in the entries' own order
            counts, starts = counts
            order = self._blocks[alpha][0]
            return counts[order], starts[order]
        if not hasattr(self, "_tokens"):
            counts = self.values.astype(np.int64)
            starts = np.cumsum(counts) - counts
            self._tokens = [(counts[order], starts[order]) for order, _ in self._blocks]
        return self._tokens[alpha]

    def allocation_sums(self, alphas, factors, uniforms, counts=None):
        """``{α: Σ_{v̄_α} S}`` for each α in ``alphas``: the allocation S of the
        entries' counts (``values``, or ``counts`` when given; whole numbers)
        over the latent configurations, Multinomial(x_n, Λ(n, :) / X̂(n)),
        summed onto factor α's indices. ``uniforms`` (one U[0, 1) draw per
        token) fix the allocation: every α sees the same one."""
        buffer, offsets = self._tables(factors)
        if counts is not None:  # where each entry's tokens start: once for every α
            counts = counts.astype(np.int64)
            counts = (counts, np.cumsum(counts) - counts)
        sums = {}
        for alpha in alphas:
            total, _ = self._zero_table(alpha)
            counts_alpha, starts = self._tokens_by_factor(alpha, counts)
            _kernels.entry_allocate(
                buffer, offsets, self._widths, self._rows_by_factor[alpha], self._cols, alpha,
                counts_alpha, starts, uniforms, self._blocks[alpha][1], total,
            )
            sums[alpha] = self._from_table(alpha, total)
        return sums

    def marginal_allocation_sum(self, alpha, factors, rng, counts=None):
        """Σ_{v̄_α} S for a fresh allocation S of the entries' counts
        (``values``, or ``counts`` when given), drawn through its margin on
        factor α's latent indices only.

        Summing a multinomial over categories gives a multinomial, so the
        counts of entry n fall on α's latent configurations ``l`` as
        Multinomial(x_n, Λ_α(n, l) / X̂(n)) with Λ_α(n, l) = Z_α(n, l) P(n, l)
        (:meth:`_others`). numpy draws each row as a chain of binomials; S over
        all latent configurations is never formed.
        """
        total, (n_rows, latent_size) = self._zero_table(alpha)
        for chunk in self._chunks():
            n = chunk.stop - chunk.start
            weights = self._others(alpha, factors, chunk).reshape(n, latent_size)
            weights = weights * self._own_rows(alpha, factors[alpha], chunk)
            weights /= np.maximum(weights.sum(axis=1, keepdims=True), _kernels.TINY)
            chunk_counts = (self.values if counts is None else counts)[chunk].astype(np.int64)
            self._add_rows(alpha, chunk, rng.multinomial(chunk_counts, weights).astype(np.float64), total)
        return self._from_table(alpha, total)

    def _own_rows(self, alpha, factor, chunk):
        """Factor α at the chunk's entries as (entries, latent block of α), or
        (1, latent block) for a factor without observed indices."""
        own, _ = self._operand(alpha, factor, chunk)
        return own.reshape(-1 if self._layout[alpha][0] else 1, self._widths[alpha])

    def _add_rows(self, alpha, chunk, contribution, total):
        """Scatter-add a chunk's (entries x latent block of α) contribution onto
        factor α's flat table ``total``."""
        latent_size = contribution.shape[1]
        if self._layout[alpha][0]:
            rows = self._rows[alpha][chunk]
            flat = (rows[:, None] * latent_size + np.arange(latent_size)).ravel()
            total += np.bincount(flat, contribution.ravel(), minlength=total.size)
        else:
            total += contribution.sum(axis=0)

    def _others(self, alpha, factors, chunk):
        """P(n, latent of α): the product of the other factors at each entry,
        summed over every latent index α does not carry."""
        p = self._planner
        latent = self._layout[alpha][1]
        others, carried = p.others_of(alpha)
        ops, subs = zip(*(self._operand(a, factors[a], chunk) for a in others))
        present = "".join(c for c in latent if c in carried)
        batched = any(p.batch in s for s in subs)
        result = p.contract(
            ",".join(subs) + "->" + (p.batch if batched else "") + p.subs(present), *ops
        )
        n = chunk.stop - chunk.start
        if not batched:  # no other factor carries an observed index: same for every entry
            result = np.broadcast_to(result, (n,) + result.shape)
        # "#" stands for the batch axis, which is never a model index.
        sizes = tuple(self.model.sizes[c] for c in latent)
        return expand_to_factor(result, "#" + present, "#" + latent, (n,) + sizes)

    def delta(self, alpha, factors, ratio=False):
        """Δ_α over the listed entries, weighted by their ``values``.

        This is Δ_α(values), or with ``ratio=True`` Δ_α(E[N] / X̂), E[N] the
        expected latent count of each entry given its value (the value itself
        for Poisson data, :mod:`._likelihood`), X̂ computed from ``factors`` on
        the way (one contraction of the other factors per entry, or per chunk,
        serves both).
        """
        mode = self.likelihood.kernel_mode if ratio else _kernels.WEIGHT
        total, (n_rows, latent_size) = self._zero_table(alpha)
        if self.engine == "numba":
            bounds = self._blocks[alpha][1]
            rows, w = self._rows_by_factor[alpha], self._values_by_factor[alpha]
            if self._pair:
                tables = [self._table(a, f) for a, f in enumerate(factors)]
                _kernels.pair_delta(
                    *tables, rows, alpha, w, mode, self.likelihood.jump_rate, bounds,
                    total.reshape(n_rows, latent_size)
                )
            else:
                buffer, offsets = self._tables(factors)
                _kernels.entry_delta(
                    buffer, offsets, self._widths, rows, self._cols, alpha, w, mode,
                    self.likelihood.jump_rate, bounds, total
                )
            return self._from_table(alpha, total)
        for chunk in self._chunks():
            others = self._others(alpha, factors, chunk).reshape(chunk.stop - chunk.start, -1)
            w = self.values[chunk]
            if ratio:
                own = self._own_rows(alpha, factors[alpha], chunk)
                xhat = np.einsum("nl,nl->n", np.broadcast_to(own, others.shape), others)
                w = self.likelihood.count_ratio(w, np.maximum(xhat, _kernels.TINY))
            self._add_rows(alpha, chunk, others * w[:, None], total)
        return self._from_table(alpha, total)


class SparseContractor:
    """Contractions over the observed non-zeros and the missing entries only."""

    def __init__(self, model, data, likelihood=PoissonLikelihood()):
        self.model, self.data, self.likelihood = model, data, likelihood
        self._planner = planner_for(model)
        self._nonzeros = EntryList(model, data.coords, self._planner, values=data.values,
                                   likelihood=likelihood)
        self._missing = EntryList(model, data.missing, self._planner) if data.n_missing else None
        self._x = data.values

    @property
    def nonzeros(self):
        """The observed non-zero entries as an :class:`EntryList`."""
        return self._nonzeros

    def __sizeof__(self):
        held = [self.data, self._nonzeros] + ([] if self._missing is None else [self._missing])
        return object.__sizeof__(self) + array_bytes(*(vars(part) for part in held))

    @functools.cached_property
    def log_base_measure(self):
        """The factor-free part of log p(X | Z) (−Σ log X! for Poisson data),
        computed once: the bound reads it at every evaluation."""
        return self.likelihood.log_base_measure(self.data)

    def ratio_delta(self, alpha, factors):
        return self._nonzeros.delta(alpha, factors, ratio=True)

    def ratio_deltas(self, alphas, factors):
        return {alpha: self.ratio_delta(alpha, factors) for alpha in alphas}

    def masked_delta(self, alpha, factors):
        delta = self._planner.all_observed_delta(alpha, factors)
        if self._missing is not None:
            delta = delta - self.missing_delta(alpha, factors)
        return delta

    def masked_total(self, factors):
        total = self._planner.all_observed_total(factors)
        if self._missing is not None:
            total -= self.missing_total(factors)
        return total

    def missing_delta(self, alpha, factors):
        """Δ_α(1 − M): factor α's share of X̂ at the missing entries."""
        if self._missing is None:
            return np.zeros(self.model.factor_shape(alpha))
        return self._missing.delta(alpha, factors)

    def missing_total(self, factors):
        """Σ (1 − M) ∘ X̂: X̂ summed over the missing entries."""
        return 0.0 if self._missing is None else float(self._missing.xhat(factors).sum())

    def data_loglik(self, factors):
        if self._x.size == 0:
            return 0.0
        return self.likelihood.log_terms(self._x, np.maximum(self._nonzeros.xhat(factors), _kernels.TINY))
