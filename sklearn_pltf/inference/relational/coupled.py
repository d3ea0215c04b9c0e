"""RESCAL's tied entity factor inside a coupled model: relations among
entities together with other tensors that share the entity factor (their
attributes), one model and one bound.

The target is the RESCAL structure ``"ia,jb,abk->ijk"`` with ``"jb"`` tied
to ``"ia"`` (:mod:`sklearn_pltf.inference.relational.rescal`); the side tensors have
any model strings over the same alphabet, and hold the entity factor A as
``"ia"`` (or ``"jb"``) once each. Given the factors the tensors are independent, so the bound is
RESCAL's plus the side tensors' data terms and their own factors' prior
terms, and one sweep is coordinate ascent on it:

1. the side tensors' pull on A, :math:`P = \\sum_t \\Delta^{(t)}_A(M_t \\circ
   E[N_t] / \\hat X_t)` at the geometric means, and their exposure
   :math:`E = \\sum_t \\Delta^{(t)}_A(M_t)` at the means (the side tensors'
   q(N) updated once);
2. RESCAL's row sweep over A with row i's shape
   :math:`a + L_i \\circ (\\text{pull}_i + P_i)` and rate :math:`b +
   \\text{exposure}_i + E_i`, then G (:func:`sklearn_pltf.inference.relational.rescal.vb_step`);
3. one VB sweep of the side tensors' own factors with A held
   (:func:`sklearn_pltf.inference.vb.step` over their
   :class:`~sklearn_pltf.engine._coupled.CoupledContractor`).

EM is the same with point estimates (``rescal.em_step``, ``em.step``).
The algorithms are :mod:`sklearn_pltf.inference`'s; this module only
composes them. The joint state lists the joint model's positions: A, A
(one array, as in RESCAL's state), G with its relation axis, then the side
tensors' own factors.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import em, vb
from . import rescal
from .._common import GammaPriors
from .._states import EMInfo, EMState, VBInfo, VBState

__all__ = ["CoupledRelationalData", "KERNELS", "vb_state_around"]

#: Joint positions of RESCAL's three factors: A, A (tied) and G.
RESCAL_POSITIONS = (0, 1, 2)


class CoupledRelationalData(NamedTuple):
    """What a coupled RESCAL sweep reads.

    Attributes
    ----------
    relational : RelationalData
        The relation tensor, diagonal missing (:mod:`._relational`).
    side : CoupledContractor
        The side tensors' contractions, over their own joint model.
    side_positions : tuple of int
        For each factor of the side model, its joint position.
    entity_positions : tuple of int
        The side model's positions that are A.
    n_components : int
    """

    relational: object
    side: object
    side_positions: tuple
    entity_positions: tuple
    n_components: int


def rescal_part(state):
    """The RESCAL state (A, A, G) of a joint state."""
    return type(state)(*(field[:3] for field in state))


def rescal_priors(priors):
    """The priors of A, A and G."""
    return GammaPriors(*(None if field is None else field[:3] for field in priors))


def side_priors(priors, data):
    """The side model's priors: A held (None), its own factors their joint priors."""
    fields = []
    for field in priors[:3]:
        fields.append(tuple(None if s in data.entity_positions else field[j]
                            for s, j in enumerate(data.side_positions)))
    return GammaPriors(*fields)


def side_state(state, data):
    """The side model's state: A held at its current q (no shape, scale or
    digamma, as :mod:`.vb` holds a factor), its own factors as they are."""
    if isinstance(state, EMState):
        return EMState(tuple(state.factors[j] for j in data.side_positions))
    fields = [[], [], [], [], []]
    for s, j in enumerate(data.side_positions):
        held = s in data.entity_positions
        for f, (column, value) in enumerate(zip(fields, (field[j] for field in state))):
            column.append(None if held and f in (0, 1, 4) else value)
    return VBState(*(tuple(column) for column in fields))


def joint_state(relational_state, own_state, data):
    """The joint state from RESCAL's (A, A, G) and the side model's state."""
    n_joint = 3 + sum(1 for j in set(data.side_positions) if j >= 3)
    columns = [list(field) + [None] * (n_joint - 3) for field in relational_state]
    for s, j in enumerate(data.side_positions):
        if j >= 3:
            for column, field in zip(columns, own_state):
                column[j] = field[s]
    return type(relational_state)(*(tuple(column) for column in columns))


def side_terms(own, data, shape):
    """The side tensors' pull on A (at the geometric means) and exposure (at
    the means), each of A's ``shape`` (n_entities, R), from the side model's
    state ``own`` (module docstring, step 1)."""
    pull, exposure = np.zeros(shape), np.zeros(shape)
    pulls = data.side.ratio_deltas(data.entity_positions, own.geometric)
    for s in data.entity_positions:
        pull += pulls[s]
        exposure += data.side.masked_delta(s, own.mean)
    return pull, exposure


def _step(rescal_step, side_step, state, data, priors, with_objective, objective):
    own = side_state(state, data)
    side = side_terms(own, data, state.mean[0].shape)
    relational_state, _ = rescal_step(rescal_part(state), data.relational, rescal_priors(priors),
                                      with_objective=False, side=side)
    held = joint_state(relational_state, own, data)
    own_priors = side_priors(priors, data)
    own_state, _ = side_step(side_state(held, data), data.side, own_priors, with_objective=False)
    new = joint_state(relational_state, own_state, data)
    return new, (objective(new, data, priors) if with_objective else None)


def vb_init(rng, data, priors, n_components):
    """RESCAL's start for A and G; the side factors drawn around the side
    data's scale with A held at its start."""
    relational_state = rescal.vb_init(rng, data.relational, rescal_priors(priors), n_components)
    own_priors = side_priors(priors, data)
    given = {s: (relational_state.mean[0], relational_state.geometric[0])
             for s in data.entity_positions}
    own = vb.init(rng, data.side.model, data.side, own_priors, given=given)
    return joint_state(relational_state, own, data)


def vb_state_around(em_state, data, priors):
    """A VB state whose q are Gamma around an EM state's point estimates
    (RESCAL's :func:`.rescal.vb_state_around` for A and G; the side
    factors' as :func:`.vb.state_from_means`): VB's start from the mode."""
    relational_state = rescal.vb_state_around(em_state.factors[0], em_state.factors[2])
    own_priors = side_priors(priors, data)
    means = side_state(em_state, data).factors
    given = {s: (relational_state.mean[0], relational_state.geometric[0])
             for s in data.entity_positions}
    own = vb.state_from_means([np.maximum(m, 1e-3 * m.mean()) for m in means], own_priors, given)
    return joint_state(relational_state, own, data)


def vb_step(state, data, priors, with_objective=True):
    """One sweep (module docstring)."""
    new, value = _step(rescal.vb_step, vb.step, state, data, priors, with_objective, vb_bound)
    return new, VBInfo(objective=value)


def vb_bound(state, data, priors):
    """RESCAL's bound, plus the side tensors' data terms and the prior terms
    of their own factors (A's is RESCAL's)."""
    return (rescal.vb_bound(rescal_part(state), data.relational, rescal_priors(priors))
            + vb.bound(side_state(state, data), data.side, side_priors(priors, data)))


def em_init(rng, data, priors, n_components):
    """As :func:`vb_init`, point estimates."""
    relational_state = rescal.em_init(rng, data.relational, rescal_priors(priors), n_components)
    given = {s: (relational_state.factors[0],) * 2 for s in data.entity_positions}
    own = em.init(rng, data.side.model, data.side, side_priors(priors, data), given=given)
    return joint_state(relational_state, own, data)


def em_step(state, data, priors, with_objective=True):
    """One sweep of conditional maximisations (module docstring)."""
    new, value = _step(rescal.em_step, em.step, state, data, priors, with_objective,
                       em_log_joint)
    return new, EMInfo(objective=value)


def em_log_joint(state, data, priors):
    """log p(X, Y, Z) at the point estimates."""
    return (rescal.em_log_joint(rescal_part(state), data.relational, rescal_priors(priors))
            + em.log_joint(side_state(state, data), data.side, side_priors(priors, data)))


#: As :data:`.rescal.KERNELS`.
KERNELS = {"vb": rescal._Kernel(vb_init, vb_step, vb_bound),
           "em": rescal._Kernel(em_init, em_step, em_log_joint)}
