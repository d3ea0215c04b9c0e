"""Variational Bayes for Poisson–Gamma PLTF (Cemgil 2009; Yılmaz & Cemgil 2010).

Each free factor has ``q(Z_α) = Gamma(C_α, scale D_α)`` with mean
``E_α = C_α D_α`` and geometric mean ``L_α = exp(ψ(C_α)) D_α``. One step
updates q(S), the allocation of the counts over the latent configurations,
from the current geometric means, and then the free factors in turn
(coordinate ascent on the bound over q(S) and the q(Z_α), so it never
decreases):

.. math::

    C_\\alpha = A_\\alpha + L_\\alpha \\circ \\Delta^L_\\alpha(M \\circ X / \\hat X_L),
    \\qquad D_\\alpha = 1 / (R_\\alpha + \\Delta^E_\\alpha(M)),

where :math:`\\hat X_L` and :math:`\\Delta^L` use the geometric means at the
start of the step (they are q(S)'s statistics, so one X̂ serves every
factor) and :math:`\\Delta^E` the other factors' current means. The bound on :math:`\\log p(X)` is

.. math::

    B = \\sum_{v_0} M [X \\log \\hat X_L - \\hat X_E - \\log\\Gamma(X+1)]
      + \\sum_\\alpha \\sum_{v_\\alpha} [(A-1)(\\psi(C) + \\log D) - R C D
      + A \\log R - \\log\\Gamma(A) + C + \\log D + \\log\\Gamma(C) + (1-C)\\psi(C)].

Held factors (fixed, or held at a posterior during fold-in) keep their
``E`` and ``L`` and add no second term.

For binary data under the Bernoulli–Poisson likelihood
(:mod:`sklearn_pltf.engine._likelihood`), each one has a latent count N with the
zero-truncated Poisson :math:`q(N) \\propto \\hat X_L^N / N!`, N ≥ 1: in the
update, :math:`X / \\hat X_L` becomes :math:`E_q[N] / \\hat X_L = 1 / (1 -
e^{-\\hat X_L})`, and in the bound a one's :math:`X \\log \\hat X_L -
\\log\\Gamma(X+1)` becomes :math:`\\log(e^{\\hat X_L} - 1)` (q(N)'s
normaliser, its entropy included). The contractor supplies both.
"""

from __future__ import annotations

import numpy as np

from ..engine._array_api import namespace_of
from ._common import initial_factors
from ._gamma import gamma_bound_term, gamma_moments
from ._states import INITIAL_SHAPE, VBInfo, VBState, advance, moved, point, priors_at

__all__ = ["VBState", "VBInfo", "init", "step", "bound", "objective", "free_parameter",
           "with_free_parameter", "point", "moved", "priors_at", "advance"]

def init(rng, model, contractor, priors, given=None, start=None):
    """Initial state: means for the free factors, ``given`` for held ones.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the free factors' initial means.
    model : Model
        Bound model.
    contractor : DenseContractor or SparseContractor
    priors : GammaPriors
        ``None`` entries mark held factors.
    given : dict, default=None
        ``{position: (mean, geometric_mean)}`` for every held factor.
    start : dict, default=None
        ``{position: mean}``: free factors whose q starts around these means
        (the others are drawn, :func:`~sklearn_pltf.inference._common.initial_factors`).
    """
    given = dict(given or {})
    means = initial_factors(rng, model, contractor, {a: m for a, (m, _) in given.items()},
                            priors.free, start)
    return state_from_means(means, priors, given)


def state_from_means(means, priors, given):
    """A state whose free factors are Gamma(INITIAL_SHAPE) around ``means``."""
    factors = []
    for alpha, m in enumerate(means):
        if priors.shape[alpha] is None:  # held: no q, its E and L as given
            factors.append((None, None) + tuple(given[alpha]) + (None,))
        else:
            c = (np.full(m.shape, INITIAL_SHAPE) if isinstance(m, np.ndarray)
                 else namespace_of(m).full_like(m, INITIAL_SHAPE))
            d = m / INITIAL_SHAPE
            factors.append((c, d) + gamma_moments(c, d))
    return VBState(*(tuple(column) for column in zip(*factors)))


def free_parameter(state, alpha):
    """The coordinates of factor α that a step maps to new ones: the shapes
    ``C_α`` (the scales ``D_α`` do not depend on α itself)."""
    return state.shape[alpha]


def with_free_parameter(state, alpha, shape, priors):
    """``state`` with factor α's shapes set to ``shape``, raised to at least
    the prior shape ``A_α`` (no update gives less), and its moments to match."""
    shape = namespace_of(shape).maximum(shape, priors.shape[alpha])
    scale = state.scale[alpha]
    columns = [list(field) for field in state]
    for field, value in zip(columns, (shape, scale) + gamma_moments(shape, scale)):
        field[alpha] = value
    return VBState(*(tuple(field) for field in columns))


def step(state, contractor, priors, with_objective=True):
    """One sweep of coordinate-ascent updates over the free factors.

    The sweep updates q(S), the allocation of the counts, once from the
    current geometric means, which gives every free factor's shape; then
    each factor's q in turn, its scale from the other factors' current
    means (module docstring). Each is the exact maximiser of the bound given
    the rest, so the bound never decreases, and one X̂ serves the sweep.
    ``with_objective=False`` skips the bound (a fold-in does not need it).
    """
    shape, scale = list(state.shape), list(state.scale)
    mean, geometric, psi = list(state.mean), list(state.geometric), list(state.digamma)
    pulls = contractor.ratio_deltas(priors.free, state.geometric)
    for alpha in priors.free:
        c = priors.shape[alpha] + state.geometric[alpha] * pulls[alpha]
        d = 1.0 / (priors.rate[alpha] + contractor.masked_delta(alpha, mean))
        shape[alpha], scale[alpha] = c, d
        mean[alpha], geometric[alpha], psi[alpha] = gamma_moments(c, d)
    new = VBState(*(tuple(field) for field in (shape, scale, mean, geometric, psi)))
    return new, VBInfo(objective=bound(new, contractor, priors) if with_objective else None)


def bound(state, contractor, priors):
    """The variational lower bound on log p(X) (module docstring), as a float."""
    # masked_total first: a dense contractor keeps its last X̂, and the next
    # step's first update needs X̂ of the geometric means.
    value = -contractor.masked_total(state.mean) + contractor.log_base_measure
    value += contractor.data_loglik(state.geometric)
    for alpha in priors.free:
        value += gamma_bound_term(
            priors.shape[alpha], priors.rate[alpha], state.shape[alpha], state.scale[alpha],
            state.digamma[alpha], priors.log_normalizer[alpha],
        )
    return value


#: The objective the convergence loop reads (:mod:`._convergence`). The
#: protocol's other members (:class:`~._driver.OptimizerKernel`), ``point``,
#: ``moved``, ``priors_at`` and ``advance``, are :mod:`._states`' (nothing
#: learned: a state is its point).
objective = bound
