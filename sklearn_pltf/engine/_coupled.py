"""Several observed tensors whose factors share indices, in one model:
generalised coupled tensor factorisation (Yılmaz, Cemgil & Şimşekli, NIPS
2011; its variational Bayes: Ermiş, Acar & Cemgil, DMKD 2015).

Tensor t has its own model string over one alphabet of indices, and a factor
whose index string appears in several models is one factor: the same letter
is the same index everywhere. Given the factors, the tensors are
independent, so the joint log-likelihood is the sum of the tensors' and

.. math::

    \\Delta_\\alpha(M) = \\sum_{t \\ni \\alpha} \\Delta^{(t)}_\\alpha(M_t),

the sum over the tensors whose model holds factor α (each with its own
likelihood and missing entries), and the bound's data term is the sum of
theirs. A tensor of weight :math:`w_t` enters every sum times
:math:`w_t` (its likelihood raised to the power :math:`w_t`): the same
updates and bound for that tempered model. :class:`CoupledContractor` offers the contractor interface over the
union of the factors, so VB, EM, SQUAREM and the convergence loop run on a
coupled model unchanged; each factor keeps one Gamma prior and one q.

The samplers (block Gibbs and SADA, :mod:`sklearn_pltf.inference.gibbs`) run
on it unchanged too, at weight 1: the tensors' observed non-zeros are one
list of entries (:class:`CoupledEntries`), each allocating its counts over
its own model's latent configurations. Given the allocations the tensors'
augmented likelihoods multiply, so a shared factor's Gamma conditional adds
every tensor's allocation sum to its shape and Δ(M) to its rate: the block
Gibbs sampler of one model (Şimşekli & Cemgil 2012) over the union.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ._contract import make_contractor
from ._data import ObservedTensor
from .model import Model, check_latent_sizes

__all__ = ["CoupledModel", "CoupledData", "CoupledEntries", "CoupledContractor", "bind_models"]


@dataclass(frozen=True)
class CoupledModel:
    """The union of the factors of several bound models.

    Attributes
    ----------
    models : tuple of Model
        One bound model per observed tensor.
    factors : tuple of str
        Each distinct factor index string, in order of first appearance.
    positions : tuple of tuple of int
        For each model, the joint position of each of its factors.
    """

    models: tuple
    factors: tuple
    positions: tuple
    fixed: frozenset = frozenset()

    @classmethod
    def from_models(cls, models):
        """The coupled model of bound ``models``.

        Raises
        ------
        ValueError
            If an index has different sizes in two models, or a model names
            one factor twice.
        """
        models = tuple(models)
        sizes, factors, positions = {}, [], []
        for t, model in enumerate(models):
            if len(set(model.factors)) != model.n_factors:
                raise ValueError(f"Model {t} ({model.string!r}) names a factor twice.")
            for index, size in model.sizes.items():
                if sizes.setdefault(index, (size, t))[0] != size:
                    first = sizes[index][1]
                    raise ValueError(
                        f"Index {index!r} has size {size} in model {t} ({model.string!r}) but "
                        f"{sizes[index][0]} in model {first} ({models[first].string!r}); the "
                        "same letter is the same index in every model.")
            for factor in model.factors:
                if factor not in factors:
                    factors.append(factor)
            positions.append(tuple(factors.index(f) for f in model.factors))
        return cls(models, tuple(factors), tuple(positions))

    @property
    def n_factors(self):
        return len(self.factors)

    @property
    def free(self):
        return tuple(a for a in range(self.n_factors) if a not in self.fixed)

    @property
    def sizes(self):
        return {c: n for model in self.models for c, n in model.sizes.items()}

    @property
    def string(self):
        return "; ".join(model.string for model in self.models)

    @property
    def output(self):
        """Every index observed in some tensor (an entity index), in order
        of first appearance."""
        return "".join(dict.fromkeys(c for model in self.models for c in model.output))

    @property
    def latent(self):
        """Every index observed in no tensor, in order of first appearance."""
        return "".join(dict.fromkeys(c for factor in self.factors for c in factor
                                     if c not in self.output))

    def with_sizes(self, sizes):
        """The coupled model with the latent ``sizes`` (``{index: size}``)
        changed in every model that has them (ARD's trial without some
        components)."""
        models = tuple(replace(model, sizes=type(model.sizes)(
            {c: sizes.get(c, n) for c, n in model.sizes.items()})) for model in self.models)
        return replace(self, models=models)

    def factor_shape(self, alpha):
        sizes = self.sizes
        return tuple(sizes[c] for c in self.factors[alpha])

    def holders(self, alpha):
        """``(tensor, local position)`` of every model that holds factor α."""
        return [(t, p.index(alpha)) for t, p in enumerate(self.positions) if alpha in p]

    def sharing(self):
        """The factors held by more than one model."""
        return tuple(a for a in range(self.n_factors) if len(self.holders(a)) > 1)


class CoupledData:
    """The observed tensors of a coupled model seen as one: what the
    initial scale (``n_observed``, ``total``) and the samplers' checks read."""

    def __init__(self, datas):
        self.parts = tuple(datas)

    @property
    def n_observed(self):
        return sum(d.n_observed for d in self.parts)

    @property
    def total(self):
        return sum(d.total for d in self.parts)

    def require_integer(self, who="This sampler", remedy="use a variational method"):
        """Raise unless every tensor's observed values are integer counts."""
        for data in self.parts:
            data.require_integer(who, remedy)

    # Every tensor's tokens are held at once: the check of their total.
    require_tokens_in_memory = ObservedTensor.require_tokens_in_memory


class CoupledLikelihood:
    """The tensors' likelihoods as one over :class:`CoupledEntries`: the
    latent counts the samplers draw, each tensor's by its own likelihood."""

    def __init__(self, likelihoods, sizes):
        self.parts, self._bounds = tuple(likelihoods), np.cumsum((0,) + tuple(sizes))

    @property
    def counts_observed(self):
        return all(lik.counts_observed for lik in self.parts)

    def draw_counts(self, rng, x, xhat):
        """Each tensor's latent counts given its entries' values and X̂, in
        the tensors' order (``x`` and ``xhat`` as :class:`CoupledEntries`
        lists them)."""
        edges = self._bounds
        return np.concatenate([
            lik.draw_counts(rng, x[edges[t]:edges[t + 1]], xhat[edges[t]:edges[t + 1]])
            for t, lik in enumerate(self.parts)])


class CoupledEntries:
    """The observed non-zeros of every tensor as one list (each tensor's
    :class:`~sklearn_pltf.engine._contract.EntryList` in turn), with the
    allocation sums the samplers read over the union of the factors: a
    factor's sum adds those of every tensor that holds it. Latent counts
    and uniforms follow the same order, tensor after tensor."""

    def __init__(self, model, parts):
        self.model, self.parts = model, tuple(parts)

    @property
    def values(self):
        return np.concatenate([entries.values for entries in self.parts])

    @property
    def n_tokens(self):
        return sum(entries.n_tokens for entries in self.parts)

    def xhat(self, factors):
        return np.concatenate([entries.xhat(self._local(t, factors))
                               for t, entries in enumerate(self.parts)])

    def _local(self, t, factors):
        return [factors[a] for a in self.model.positions[t]]

    def _split(self, counts):
        """Each tensor's latent counts and the number of its tokens."""
        if counts is None:
            return [(None, entries.n_tokens) for entries in self.parts]
        edges = np.cumsum([0] + [entries.n_entries for entries in self.parts])
        pieces = [counts[edges[t]:edges[t + 1]] for t in range(len(self.parts))]
        return [(piece, int(piece.sum())) for piece in pieces]

    def allocation_sums(self, alphas, factors, uniforms, counts=None):
        """``{α: Σ_{v̄_α} S}`` (as ``EntryList.allocation_sums``): each
        tensor allocates its tokens from its own run of ``uniforms``, and the
        sums onto a factor held by several tensors are added."""
        sums, start = {}, 0
        for t, (entries, (piece, n_tokens)) in enumerate(zip(self.parts, self._split(counts))):
            positions = self.model.positions[t]
            mine = [a for a in alphas if a in positions]
            if mine:
                local = entries.allocation_sums(
                    [positions.index(a) for a in mine], self._local(t, factors),
                    uniforms[start:start + n_tokens], piece)
                for a in mine:
                    value = local[positions.index(a)]
                    sums[a] = value if a not in sums else sums[a] + value
            start += n_tokens
        return sums

    def marginal_allocation_sum(self, alpha, factors, rng, counts=None):
        """Σ_{v̄_α} S through factor α's margin (as
        ``EntryList.marginal_allocation_sum``), added over the tensors that
        hold α."""
        split = self._split(counts)
        return sum(self.parts[t].marginal_allocation_sum(p, self._local(t, factors), rng,
                                                         split[t][0])
                   for t, p in self.model.holders(alpha))


class CoupledContractor:
    """The contractions of a :class:`CoupledModel`: each tensor's own
    contractor, their Δ, totals and log terms summed, each times its
    tensor's weight (module docstring; ``weights=None``: all 1)."""

    def __init__(self, model, datas, likelihoods, weights=None):
        self.model = model
        self.parts = [make_contractor(m, d, lik)
                      for m, d, lik in zip(model.models, datas, likelihoods)]
        self.weights = tuple(1.0 for _ in self.parts) if weights is None else tuple(
            float(w) for w in weights)
        self.data = CoupledData(datas)

    @property
    def nonzeros(self):
        """Every tensor's observed non-zeros as one :class:`CoupledEntries`
        (for the samplers, which need every weight to be 1)."""
        if any(w != 1.0 for w in self.weights):
            raise ValueError("The samplers draw counts from the model itself; tensor weights "
                             "other than 1 temper it: leave tensor_weights=None.")
        if not hasattr(self, "_nonzeros"):
            self._nonzeros = CoupledEntries(self.model, [part.nonzeros for part in self.parts])
        return self._nonzeros

    @property
    def likelihood(self):
        """The tensors' likelihoods over :attr:`nonzeros` (:class:`CoupledLikelihood`)."""
        return CoupledLikelihood([part.likelihood for part in self.parts],
                                 [entries.n_entries for entries in self.nonzeros.parts])

    def _local(self, t, factors):
        return [factors[a] for a in self.model.positions[t]]

    def ratio_deltas(self, alphas, factors):
        pulls = {}
        for t, part in enumerate(self.parts):
            positions = self.model.positions[t]
            mine = [a for a in alphas if a in positions]
            if not mine:
                continue
            local = part.ratio_deltas(tuple(positions.index(a) for a in mine),
                                      self._local(t, factors))
            for a in mine:
                value = self._weighted(t, local[positions.index(a)])
                pulls[a] = value if a not in pulls else pulls[a] + value
        return pulls

    def _weighted(self, t, value):
        """``value`` times tensor t's weight (itself at weight 1: no copy)."""
        weight = self.weights[t]
        return value if weight == 1.0 else weight * value

    def ratio_delta(self, alpha, factors):
        return self.ratio_deltas((alpha,), factors)[alpha]

    def masked_delta(self, alpha, factors):
        return sum(self._weighted(t, self.parts[t].masked_delta(p, self._local(t, factors)))
                   for t, p in self.model.holders(alpha))

    def masked_total(self, factors):
        return float(sum(self.weights[t] * part.masked_total(self._local(t, factors))
                         for t, part in enumerate(self.parts)))

    def data_loglik(self, factors):
        return float(sum(self.weights[t] * part.data_loglik(self._local(t, factors))
                         for t, part in enumerate(self.parts)))

    @property
    def log_base_measure(self):
        return float(sum(w * part.log_base_measure for w, part in zip(self.weights, self.parts)))


def bind_models(strings, shapes, n_components):
    """Parse and bind one model string per observed tensor of ``shapes``,
    every latent index sized by ``n_components`` (an int for all, or a dict
    ``{index: size}`` over the indices of every model, each key a latent
    index of at least one: :func:`check_latent_sizes`)."""
    parsed = [Model.parse(string) for string in strings]
    check_latent_sizes(n_components, parsed)
    models = []
    for model, shape in zip(parsed, shapes):
        latent = n_components
        if isinstance(n_components, dict):
            latent = {c: n for c, n in n_components.items() if c in model.latent}
        models.append(model.bind(tuple(shape), latent))
    return models
