"""Contractions planned once per model: opt_einsum expressions kept per
(subscripts, shapes), and the whole-tensor and factor-sized contractions
every contractor builds on (:mod:`._contract`)."""

from __future__ import annotations

import functools

import numpy as np
import opt_einsum

__all__ = ["planner_for", "expand_to_factor"]


@functools.lru_cache(maxsize=64)
def planner_for(model):
    """The :class:`_Planner` of a bound model, one per model (models are
    hashable and immutable), so its planned contractions are reused by every
    contractor, restart and fold-in on it."""
    return _Planner(model)


class _Planner:
    """opt_einsum expressions planned once per (subscripts, shapes), then reused."""

    def __init__(self, model):
        self.model = model
        # Model indices -> einsum symbols; one more symbol for the batch axis.
        self.symbol = {c: opt_einsum.get_symbol(i) for i, c in enumerate(model.indices)}
        self.batch = opt_einsum.get_symbol(len(model.indices))
        self._expressions = {}
        self._presummed = {}
        self._others = {}

    def subs(self, indices):
        return "".join(self.symbol[c] for c in indices)

    def contract(self, subscripts, *operands):
        key = (subscripts, tuple(op.shape for op in operands))
        expression = self._expressions.get(key)
        if expression is None:
            expression = opt_einsum.contract_expression(subscripts, *key[1])
            self._expressions[key] = expression
        return expression(*operands)

    def full_xhat(self, factors):
        """X̂ over the whole observed tensor."""
        m = self.model
        return self.contract(",".join(self.subs(f) for f in m.factors) + "->" + self.subs(m.output), *factors)

    @functools.cached_property
    def last_index_split(self):
        """For X̂ in C order by one matrix product: the plan
        ``(f, others, subscripts, present, kept, f_axes, width)``, ``f`` the
        one factor carrying the last observed index, all of whose other
        indices (``latent``) are latent; None where no factor is such (or it
        is the only factor). The other factors contract by ``subscripts``
        to ``present``, broadcast to ``kept`` (the other observed indices,
        then ``latent``); ``f_axes`` puts ``f`` in (``latent``, last) order
        and ``width`` is the size of ``latent``."""
        m = self.model
        last = m.output[-1]
        carriers = [a for a in range(m.n_factors) if last in m.factors[a]]
        if len(carriers) != 1 or m.n_factors < 2:
            return None
        f = carriers[0]
        latent = m.factors[f].replace(last, "")
        if any(c in m.output for c in latent):
            return None
        others = [a for a in range(m.n_factors) if a != f]
        kept = m.output[:-1] + latent
        carried = set().union(*(m.factors[a] for a in others))
        present = "".join(c for c in kept if c in carried)
        subscripts = (",".join(self.subs(m.factors[a]) for a in others) + "->"
                      + self.subs(present))
        f_axes = [m.factors[f].index(c) for c in latent + last]
        width = int(np.prod([m.sizes[c] for c in latent], dtype=np.int64))
        return f, others, subscripts, present, kept, f_axes, width

    def full_xhat_into(self, factors, out):
        """X̂ written into ``out`` (C-contiguous, the observed shape) as
        (the other factors contracted to the other observed and ``f``'s
        latent indices) @ ``f``, where :attr:`last_index_split` applies."""
        m = self.model
        f, others, subscripts, present, kept, f_axes, width = self.last_index_split
        rest = self.contract(subscripts, *[factors[a] for a in others])
        rest = expand_to_factor(rest, present, kept, tuple(m.sizes[c] for c in kept))
        np.matmul(rest.reshape(-1, width), np.transpose(factors[f], f_axes).reshape(width, -1),
                  out=out.reshape(-1, m.sizes[m.output[-1]]))
        return out

    def others_of(self, alpha, with_output=False):
        """The other factors' positions, and α's indices that they (or, with
        ``with_output``, the observed indices) carry, in α's order."""
        key = (alpha, with_output)
        if key not in self._others:
            model = self.model
            others = [a for a in range(model.n_factors) if a != alpha]
            carried = set(model.output if with_output else "").union(*(model.factors[a] for a in others))
            self._others[key] = (others, "".join(c for c in model.factors[alpha] if c in carried))
        return self._others[key]

    def contract_presummed(self, operands, indices, output):
        """Contract after summing each operand over indices no other operand or the
        output carries, so e.g. ``ir,jr->r`` costs O((I+J)R), not O(IJR)."""
        key = (tuple(indices), output)
        plan = self._presummed.get(key)
        if plan is None:
            plan = self._presummed[key] = self._plan_presummed(indices, output)
        lonely_axes, subscripts = plan
        if not lonely_axes:
            return np.float64(1.0)
        reduced = [operand.sum(axis=lonely) if lonely else operand
                   for operand, lonely in zip(operands, lonely_axes)]
        if subscripts is None:  # one operand, already in the output's order
            return reduced[0]
        return self.contract(subscripts, *reduced)

    def _plan_presummed(self, indices, output):
        """For :meth:`contract_presummed`: each operand's axes to sum first, and
        the subscripts that contract the rest (None when nothing is left to do)."""
        lonely_axes, reduced_indices = [], []
        for position, own in enumerate(indices):
            elsewhere = set(output).union(*(set(o) for p, o in enumerate(indices) if p != position))
            lonely_axes.append(tuple(axis for axis, c in enumerate(own) if c not in elsewhere))
            reduced_indices.append("".join(c for c in own if c in elsewhere))
        if len(reduced_indices) == 1 and reduced_indices[0] == output:
            return lonely_axes, None
        return lonely_axes, ",".join(self.subs(i) for i in reduced_indices) + "->" + self.subs(output)

    def all_observed_delta(self, alpha, factors):
        """Δ_α(1): the product of the other factors summed over every index not in α."""
        model = self.model
        own = model.factors[alpha]
        others, present = self.others_of(alpha)
        result = self.contract_presummed(
            [factors[a] for a in others], [model.factors[a] for a in others], present
        )
        # Indices of α that no other factor carries: Σ over observed indices not in α
        # already happened; the result is constant along these, so broadcast.
        return expand_to_factor(result, present, own, model.factor_shape(alpha))

    def all_observed_total(self, factors):
        """Σ over every entry of X̂: a full contraction to a scalar."""
        model = self.model
        return float(self.contract_presummed(list(factors), list(model.factors), ""))


def expand_to_factor(array, present, own, shape):
    """Broadcast ``array`` (axes ``present``) to a factor with axes ``own``, as
    a new array (in the inner loops of the samplers and SGLD: a reshape and
    one fill, no axis normalisation)."""
    if present == own:
        return np.asarray(array)
    array = np.asarray(array)
    order = [present.index(c) for c in own if c in present]
    if order != sorted(order):
        array = np.transpose(array, order)
    axes = iter(array.shape)  # α's axes that ``array`` lacks become length 1
    expanded = np.empty(shape, dtype=array.dtype)
    expanded[...] = array.reshape(tuple(next(axes) if c in present else 1 for c in own))
    return expanded
