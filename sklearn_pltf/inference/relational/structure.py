"""Where a RESCAL-structured model keeps its factors.

A tied factor is fitted where the model is the RESCAL structure,

.. math::

    \\hat X(i, j[, k]) = \\sum_{a, b} A(i, a)\\, A(j, b)\\, G(a, b[, k]),

written with any letters, any order of the three factors and any order of
the core's axes, as long as the two entity indices are the data's first two
axes. :class:`TiedStructure` maps such a model onto the canonical
``"ia,jb,abk->ijk"`` of :mod:`.rescal` and back.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...engine.model import Model
from .._common import GammaPriors
from .._hyperparameters import LearnedRatesKernel, rate_learning
from . import rescal
from ._relational import priors_with_relation_axis

__all__ = ["RESCAL_MODEL", "SINGLE_RELATION_MODEL", "TiedStructure", "tied_structure",
           "rescal_kernels", "rescal_learning", "tied_rate_learning",
           "with_entity_prior_at_both_positions"]

#: The canonical structure for a relation tensor and for one relation.
RESCAL_MODEL = "ia,jb,abk->ijk"
SINGLE_RELATION_MODEL = "ia,jb,ab->ij"


class TiedStructure(NamedTuple):
    """Where a RESCAL-structured model keeps its factors.

    ``first`` and ``second`` are the positions of the entity factor on the
    data's first and second axes, ``core`` the core's; the core's axis ``m``
    is canonical axis ``core_axes[m]`` (0: the first entity's cluster, 1:
    the second's, 2: the relation). ``latent_first`` says, for the entity
    factors at ``first`` and ``second``, whether the model writes them
    (cluster, entity), the transpose of the canonical (entity, cluster)."""

    first: int
    second: int
    core: int
    core_axes: tuple
    canonical: Model  # "ia,jb,abk->ijk" or "ia,jb,ab->ij", bound to the same sizes
    latent_first: tuple = (False, False)

    def entity_to_model(self, position, entity, lead=0):
        """The canonical (entity, cluster) factor (after ``lead`` axes) in
        the layout the model writes the entity factor at ``position``."""
        transposed = self.latent_first[0 if position == self.first else 1]
        return np.swapaxes(entity, lead, lead + 1) if transposed and entity is not None else entity

    def entity_to_canonical(self, position, entity):
        """The model's entity factor at ``position`` (or an array of its
        shape, such as its prior) as the canonical (entity, cluster) one."""
        return self.entity_to_model(position, entity) if np.ndim(entity) == 2 else entity

    def core_to_canonical(self, core, lead=0):
        """The core (with ``lead`` leading axes, e.g. draws) in canonical axis order."""
        order = np.argsort(self.core_axes)
        return np.transpose(core, tuple(range(lead)) + tuple(lead + int(m) for m in order))

    def to_model_order(self, per_position, lead=0):
        """Canonical (A, A, G) as the model's tuple of three, the core's axes
        in the model's order; None stays None."""
        out = [None, None, None]
        out[self.first] = self.entity_to_model(self.first, per_position[0], lead)
        out[self.second] = self.entity_to_model(self.second, per_position[1], lead)
        core = per_position[2]
        out[self.core] = None if core is None else np.transpose(
            core, tuple(range(lead)) + tuple(lead + m for m in self.core_axes))
        return tuple(out)

    def priors_to_canonical(self, priors):
        """Gamma priors of the model as the canonical model's, G's as (R, R, K)."""
        def canonical(field):
            entity = self.entity_to_canonical(self.first, field[self.first])
            return (entity, entity, field[self.core])

        shape, rate = canonical(priors.shape), canonical(priors.rate)
        shape = shape[:2] + (self.core_to_canonical(shape[2]),)
        rate = rate[:2] + (self.core_to_canonical(rate[2]),)
        return priors_with_relation_axis(
            GammaPriors(shape, rate, canonical(priors.log_normalizer)))


def tied_structure(model, tied):
    """The :class:`TiedStructure` of a bound ``model`` with ``tied``
    (``{position: source position}``).

    Raises
    ------
    ValueError
        Unless the model is the RESCAL structure (module docstring) with its
        two entity factors tied, the entity axes the data's first two, and
        the two entity factors of the same shape.
    """
    expected = ("tied_factors: a tied factor is supported in the RESCAL structure, "
                "X(i, j[, k]) = Σ_ab A(i, a) A(j, b) G(a, b[, k]) with the two entity factors "
                "tied (e.g. PLTF('ia,jb,abk->ijk', tied_factors={1: 0})), the entity axes the "
                "data's first two")
    if len(tied) != 1:
        raise ValueError(f"{expected}; got {len(tied)} ties {tied} in {model.string!r}.")
    (second, first), = tied.items()
    output = model.output
    if first == second or model.n_factors != 3 or len(output) not in (2, 3):
        raise ValueError(f"{expected}; got {tied} in {model.string!r}.")
    if output[0] in model.factors[second]:
        first, second = second, first
    core = 3 - first - second
    entity_first, entity_second, core_indices = (model.factors[a] for a in (first, second, core))
    if not (len(entity_first) == len(entity_second) == 2
            and output[0] in entity_first and output[1] in entity_second):
        raise ValueError(f"{expected}; got {tied} in {model.string!r}.")
    latent_first = entity_first.replace(output[0], "")
    latent_second = entity_second.replace(output[1], "")
    canonical_order = latent_first + latent_second + output[2:]
    if (latent_first in output or latent_second in output or latent_first == latent_second
            or sorted(core_indices) != sorted(canonical_order)):
        raise ValueError(f"{expected}; got {tied} in {model.string!r}.")
    sizes = model.sizes
    if model.fixed & {first, second, core}:
        raise ValueError(f"tied_factors: the factors of {model.string!r} cannot also be fixed.")
    if sizes[output[0]] != sizes[output[1]] or sizes[latent_first] != sizes[latent_second]:
        raise ValueError(
            f"tied_factors: factor {second} ({entity_second!r}) is factor {first} "
            f"({entity_first!r}), so their index sizes must agree; got "
            f"{(sizes[output[1]], sizes[latent_second])} and "
            f"{(sizes[output[0]], sizes[latent_first])}.")
    r = sizes[latent_first]
    spec = RESCAL_MODEL if len(output) == 3 else SINGLE_RELATION_MODEL
    canonical = Model.parse(spec).bind(model.observed_shape, {"a": r, "b": r})
    core_axes = tuple(canonical_order.index(c) for c in core_indices)
    latent_first = (entity_first.index(output[0]) == 1, entity_second.index(output[1]) == 1)
    return TiedStructure(first, second, core, core_axes, canonical, latent_first)


def rescal_kernels(learning, kernels=None):
    """RESCAL's VB and EM (``kernels``, by method: :data:`.rescal.KERNELS`
    or coupled RESCAL's), VB with its rates learned where ``learning`` says."""
    kernels = rescal.KERNELS if kernels is None else kernels
    if learning is None:
        return kernels
    return {**kernels, "vb": LearnedRatesKernel(kernels["vb"], learning)}


def rescal_learning(ard, per_factor, hierarchical=False, learn_shape=False):
    """The rates RESCAL learns, on its canonical ``(A, A, G)``
    (:func:`tied_rate_learning` of ``"ia,jb,abk->ijk"``): with ``ard`` a
    relevance λ per cluster, the rate of A(i, a) ``shape · λ_a`` and of
    G(a, b, k) ``shape · λ_a λ_b`` (a cluster switched off leaves no mass in
    A's column nor in G's row and column); with ``per_factor`` (and no
    ``ard``) one rate for A and one for G; with ``hierarchical``, a rate per
    entity (A's rows) and per relation (G's slices) under a Gamma
    hyperprior, times the relevances under ARD; with ``learn_shape`` the
    prior shapes of A and G; None if none."""
    if not (ard or per_factor or hierarchical or learn_shape):
        return None
    return tied_rate_learning(Model.parse(RESCAL_MODEL), ard, per_factor, hierarchical,
                              learn_shape)


def tied_rate_learning(model, ard, per_factor, hierarchical, learn_shape, by_factor=False):
    """What a model with RESCAL's tie learns of its priors
    (:class:`~sklearn_pltf.inference._hyperparameters.RateLearning` on its
    positions A, A, G, then any other tensors' own factors in a coupled
    model).

    :func:`~sklearn_pltf.inference._hyperparameters.rate_learning` with the
    tie read into it: the second entity factor is A itself and learns
    nothing of its own, and its cluster index is the first's, so under ARD
    a cluster's relevance λ_a sets the rate of A's column, of G's row and
    column (``λ_a λ_b``) and of every other factor that carries it; with
    ``by_factor``, A, G and every other factor have relevances of their own
    (G's one per cluster, on its row and column).
    """
    first, second = model.factors[0][1], model.factors[1][1]
    return rate_learning(model, tuple(a for a in model.free if a != 1),
                         tuple(c for c in model.latent if c != second) if ard else (),
                         per_factor, hierarchical, learn_shape, by_factor, tie={second: first})


def with_entity_prior_at_both_positions(priors):
    """``priors`` (of a model in RESCAL's layout, A at positions 0 and 1) with
    A's shape and rate shown at both of its positions: the kernels read the
    first only."""
    return priors._replace(**{field: tuple(getattr(priors, field)[:1]) * 2
                              + tuple(getattr(priors, field)[2:]) for field in ("shape", "rate")})
