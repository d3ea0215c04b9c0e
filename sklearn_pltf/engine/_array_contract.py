"""The contractions of :mod:`sklearn_pltf.engine._contract` on dense data of any
array namespace (PyTorch, CuPy, array-api-strict), where the data live.

The array API standard has no ``einsum``. A contraction is planned once per
subscripts and shapes by opt_einsum's path search, and each pairwise step
of the path runs as one batched matrix product (``matmul`` over
``(batch, kept, summed)`` reshapes), which is what BLAS-backed ``einsum``
implementations do too; indices that one operand alone carries and the
result drops are summed first.
"""

from __future__ import annotations

import functools

import opt_einsum

from ._array_api import float64_sum, like, namespace_of

__all__ = ["ArrayAPIContractor", "contract", "array_full_xhat"]


@functools.lru_cache(maxsize=256)
def _plan(subscripts, shapes):
    """The pairwise steps of ``subscripts`` at ``shapes``: a tuple of
    ``(positions, kept indices)``, each step contracting the operands at
    ``positions`` (popped from the list, the result appended) to ``kept``."""
    inputs, output = subscripts.split("->")
    operands = inputs.split(",")
    path, _ = opt_einsum.contract_path(subscripts, *shapes, shapes=True, optimize="auto")
    steps = []
    for positions in path:
        taken = [operands[p] for p in positions]
        for p in sorted(positions, reverse=True):
            del operands[p]
        needed = set(output).union(*operands)
        kept = "".join(dict.fromkeys(c for indices in taken for c in indices if c in needed))
        steps.append((tuple(positions), kept))
        operands.append(kept)
    return tuple(steps), operands[0]


def contract(subscripts, *operands):
    """``einsum(subscripts, *operands)`` for arrays of one namespace (no index
    repeated within an operand)."""
    xp = namespace_of(operands[0])
    inputs, output = subscripts.split("->")
    indices = inputs.split(",")
    steps, last = _plan(subscripts, tuple(tuple(op.shape) for op in operands))
    arrays = list(operands)
    for positions, kept in steps:
        taken = [(arrays[p], indices[p]) for p in positions]
        for p in sorted(positions, reverse=True):
            del arrays[p]
            del indices[p]
        if len(taken) == 1:
            result = _sum_to(xp, *taken[0], kept)
        else:
            result = _pairwise(xp, *taken[0], *taken[1], kept)
        arrays.append(result)
        indices.append(kept)
    return _permuted(xp, arrays[0], last, output)


def _sum_to(xp, array, indices, kept):
    """``array`` summed over its indices not in ``kept``, in ``kept``'s order."""
    summed = tuple(axis for axis, c in enumerate(indices) if c not in kept)
    if summed:
        array = xp.sum(array, axis=summed)
        indices = "".join(c for c in indices if c in kept)
    return _permuted(xp, array, indices, kept)


def _permuted(xp, array, indices, order):
    if indices == order:
        return array
    return xp.permute_dims(array, tuple(indices.index(c) for c in order))


def _pairwise(xp, a, a_indices, b, b_indices, kept):
    """Σ a·b over the shared indices not in ``kept``, as (batch, rows, inner)
    @ (batch, inner, columns), the result in ``kept``'s order."""
    lonely_a = "".join(c for c in a_indices if c not in b_indices and c not in kept)
    lonely_b = "".join(c for c in b_indices if c not in a_indices and c not in kept)
    if lonely_a:
        a_indices_kept = "".join(c for c in a_indices if c not in lonely_a)
        a, a_indices = _sum_to(xp, a, a_indices, a_indices_kept), a_indices_kept
    if lonely_b:
        b_indices_kept = "".join(c for c in b_indices if c not in lonely_b)
        b, b_indices = _sum_to(xp, b, b_indices, b_indices_kept), b_indices_kept
    size = dict(zip(a_indices, a.shape)) | dict(zip(b_indices, b.shape))
    shared = [c for c in a_indices if c in b_indices]
    batch = "".join(c for c in shared if c in kept)
    inner = "".join(c for c in shared if c not in kept)
    rows = "".join(c for c in a_indices if c not in b_indices)
    columns = "".join(c for c in b_indices if c not in a_indices)

    def extent(indices):
        n = 1
        for c in indices:
            n *= int(size[c])
        return n

    left = xp.reshape(_permuted(xp, a, a_indices, batch + rows + inner),
                      (extent(batch), extent(rows), extent(inner)))
    right = xp.reshape(_permuted(xp, b, b_indices, batch + inner + columns),
                       (extent(batch), extent(inner), extent(columns)))
    result = xp.reshape(xp.matmul(left, right), tuple(int(size[c]) for c in batch + rows + columns))
    return _permuted(xp, result, batch + rows + columns, kept)


def _symbols(model):
    return {c: opt_einsum.get_symbol(i) for i, c in enumerate(model.indices)}


def array_full_xhat(model, factors):
    """X̂ over the whole observed tensor for factors of one array namespace."""
    symbol = _symbols(model)
    subscripts = (",".join("".join(symbol[c] for c in f) for f in model.factors) + "->"
                  + "".join(symbol[c] for c in model.output))
    return contract(subscripts, *factors)


class ArrayAPIContractor:
    """The contractor of :mod:`sklearn_pltf.engine._contract` on an
    :class:`~sklearn_pltf.engine._array_data.ArrayAPITensor`, for the Poisson and
    Bernoulli–Poisson likelihoods (module docstring).

    Factors given as NumPy arrays (fixed factors, the ones of the starting
    scale) are moved to the data's device on the way in.
    """

    def __init__(self, model, data, likelihood):
        if likelihood.name not in ("poisson", "bernoulli"):
            raise TypeError(f"likelihood={likelihood.name!r} runs on NumPy arrays only; "
                            "array-API input is fitted with 'poisson' or 'bernoulli'.")
        self.model, self.data, self.likelihood = model, data, likelihood
        xp = self.xp = data.xp
        self._x = data.dense
        self._mask = None if data.mask is None else xp.astype(data.mask, data.dtype)
        self._floor = float(xp.finfo(data.dtype).smallest_normal)
        self._symbol = _symbols(model)
        self._last = ((), None)

    def _subs(self, indices):
        return "".join(self._symbol[c] for c in indices)

    def on_device(self, array):
        """``array`` in the data's namespace, dtype and device."""
        return like(array, self._x)

    def _factors(self, factors):
        return [None if f is None else self.on_device(f) for f in factors]

    def xhat(self, factors):
        """X̂ over the whole tensor, at least the smallest normal float; the
        last one is kept with the factor arrays it came from (inference
        never changes a factor array in place)."""
        last_factors, last_xhat = self._last
        if len(last_factors) == len(factors) and all(a is b for a, b in zip(last_factors, factors)):
            return last_xhat
        on_device = self._factors(factors)
        xhat = array_full_xhat(self.model, on_device)
        # The floor reads and writes X̂: skipped where a lower bound from the
        # factors alone shows that no entry needs it, else a reduction tells.
        if (self._smallest_possible(on_device) < self._floor
                and float(self.xp.min(xhat)) < self._floor):
            xhat = self.xp.maximum(xhat, self._floor)
        self._last = (tuple(factors), xhat)
        return xhat

    def _smallest_possible(self, factors):
        """A lower bound on every entry of X̂ from the factors alone:
        X̂(v0) = Σ_latent Π_α Z_α ≥ Σ_latent Π_α min over α's observed indices
        of Z_α (the factors are non-negative)."""
        m, xp = self.model, self.xp
        reduced, indices = [], []
        for own, factor in zip(m.factors, factors):
            observed = tuple(axis for axis, c in enumerate(own) if c in m.output)
            reduced.append(xp.min(factor, axis=observed) if observed else factor)
            indices.append(self._subs("".join(c for c in own if c not in m.output)))
        return float(contract(",".join(indices) + "->", *reduced))

    def _sum_of_products(self, a, b):
        """Σ a·b over whole tensors: in float64, one dot product, the product
        never stored (``matmul`` of the flattened arrays); in a lower
        precision the products summed in float64 (a dot product would sum
        them in the data's precision: :func:`float64_sum`)."""
        xp = self.xp
        if a.dtype == xp.float64 and b.dtype == xp.float64:
            return float(xp.matmul(xp.reshape(a, (-1,)), xp.reshape(b, (-1,))))
        return float64_sum(a * b)

    def _delta(self, alpha, factors, weights=None):
        """Δ_α(weights) for ``weights`` of the data's shape; Δ_α(1), the
        other factors alone summed over the indices α lacks, for None."""
        m = self.model
        own = m.factors[alpha]
        others = [a for a in range(m.n_factors) if a != alpha]
        indices = ([] if weights is None else [m.output]) + [m.factors[a] for a in others]
        carried = set().union(*indices)
        present = "".join(c for c in own if c in carried)
        operands = ([] if weights is None else [weights]) + [factors[a] for a in others]
        subscripts = ",".join(self._subs(i) for i in indices) + "->" + self._subs(present)
        return self._expand(contract(subscripts, *operands), present, own, m.factor_shape(alpha))

    def _expand(self, array, present, own, shape):
        """``array`` (axes ``present``, in ``own``'s order) broadcast to α's shape."""
        if present == own:
            return array
        reshaped = iter(array.shape)
        array = self.xp.reshape(array, tuple(next(reshaped) if c in present else 1 for c in own))
        return self.xp.broadcast_to(array, shape)

    def _ratio(self, factors):
        """E[N] / X̂ at every entry (0 at zeros and missing entries)."""
        xhat = self.xhat(factors)
        if self.likelihood.name == "poisson":
            return self._x / xhat
        return self._x / -self.xp.expm1(-xhat)

    def ratio_delta(self, alpha, factors):
        return self.ratio_deltas((alpha,), factors)[alpha]

    def ratio_deltas(self, alphas, factors):
        ratio = self._ratio(factors)
        on_device = self._factors(factors)
        return {alpha: self._delta(alpha, on_device, ratio) for alpha in alphas}

    def masked_delta(self, alpha, factors):
        return self._delta(alpha, self._factors(factors), self._mask)

    def masked_total(self, factors):
        if self._mask is not None:
            return self._sum_of_products(self._mask, self.xhat(factors))
        m = self.model
        subscripts = ",".join(self._subs(f) for f in m.factors) + "->"
        # Σ X̂ from the factors, in float64 whatever the data's precision.
        return float(contract(subscripts, *[self.xp.astype(f, self.xp.float64, copy=False)
                                            for f in self._factors(factors)]))

    def data_loglik(self, factors):
        xhat = self.xhat(factors)
        if self.likelihood.name == "poisson":
            return self._sum_of_products(self._x, self.xp.log(xhat))
        return self._sum_of_products(self._x, xhat + self.xp.log(-self.xp.expm1(-xhat)))

    @functools.cached_property
    def log_base_measure(self):
        """The factor-free part of log p(X | Z), computed once."""
        return self.likelihood.log_base_measure(self.data)
