"""Variational Bayes and EM for the Poisson–Gamma RESCAL model: one entity
factor on both entity modes.

.. math::

    \\hat X(i, j, k) = \\sum_{a, b} A(i, a)\\, A(j, b)\\, G(a, b, k),
    \\qquad A, G \\sim \\text{Gamma}(\\text{shape}, \\text{rate}),

for a relational tensor X (entity x entity x relation) under the Poisson or
the Bernoulli–Poisson likelihood (:mod:`sklearn_pltf.engine._likelihood`); the
structure is that of RESCAL (Nickel, Tresp & Kriegel, ICML 2011) with
non-negative factors, the model string ``"ia,jb,abk->ijk"`` with factor 1 tied
to factor 0.

**Where the factor meets itself.** At a diagonal entry x(i, i, k) the rate
holds A(i, a) A(i, b), and A(i, a)² where a = b, which is not conjugate to a
Gamma. Those entries are treated as missing (not modelled, not predicted from
the fit's own data). Off the diagonal, A(i, ·) enters each rate once, so given
every other row it is conjugate, and rows are updated one at a time:

- VB (coordinate ascent on the bound, never decreasing): for row i,
  :math:`C_i = \\text{shape} + L_i \\circ \\sum_{j,k}` ratio
  :math:`\\times [\\sum_b L(j, b) L_G(\\cdot, b, k) + \\sum_b L(j, b)
  L_G(b, \\cdot, k)]` over the observed non-zeros in which i is the first
  or the second entity, and :math:`D_i = 1 / (\\text{rate} +` the expected
  rate's derivative over the observed off-diagonal entries), where ratio is
  :math:`E[N] / \\hat X_L` (:mod:`sklearn_pltf.engine._likelihood`: :math:`X /
  \\hat X_L` for counts) at the geometric means L. Then G, linear in the rate,
  as one block. The bound is that of :mod:`sklearn_pltf.inference.vb` with A
  counted once.
- EM (the posterior mode): the same row by row with the point estimates,
  :math:`A_i \\leftarrow (\\text{shape} - 1 + A_i \\circ \\cdot) / (\\text{rate} + \\cdot)`,
  each an exact conditional maximisation (ECM), so the log joint never
  decreases.

The expected rate summed over the observed entries uses column sums of A,
:math:`S = \\sum_j E[A(j, \\cdot)]`, minus the missing entries (the diagonal
among them), so zeros are never visited: a sweep costs
O((non-zeros + missing) R²) plus O(I R²) for the rows.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from scipy.special import gammaln, xlogy

from ...engine._kernels import entry_weight
from .._convergence import run_to_convergence
from .._gamma import _digamma, gamma_bound_term, gamma_moments
from ._relational import (by_relation, core_exposure, exposure_sums, initial_means,
                          log_likelihood, observed_total, pair_sums, rates_at_nonzeros,
                          row_exposure)
from .. import _states
from .._states import INITIAL_SHAPE, EMInfo, EMState, VBInfo, VBState

__all__ = ["vb_init", "vb_step", "vb_bound", "vb_state_around", "priors_with_a_mode", "em_init",
           "em_step", "em_log_joint", "KERNELS"]


@numba.njit(cache=True, nogil=True)
def _entity_sweep(variational, mode, jump_rate, first, second, missing_first, missing_second,
                  prior_shape, prior_rate, shape, scale, mean, geometric, psi,
                  core_geometric, core_mean, side_pull, side_exposure):  # pragma: no cover

    """Update every row of A in turn, in place (module docstring).

    ``core_*`` are G as (K, R, R). EM passes ``mean`` and ``geometric`` as
    the same array (and the cores alike); ``shape``, ``scale`` and ``psi``
    are then not read. A row's data pull is
    Σ_e ratio_e v_e over its entries, v_e(a) = ∂X̂_e / ∂A(row, a), with X̂
    and v at the geometric means; its exposure is Σ_e v_e at the means over
    every observed off-diagonal entry, from the column sums S of A less the
    missing entries. ``side_pull`` and ``side_exposure`` (n, R) add other
    tensors' terms on each row (:mod:`.coupled`;
    zeros for RESCAL alone).
    """
    n, r = mean.shape
    core_sum, column_sums = exposure_sums(mean, core_mean)
    v = np.empty(r)
    pull = np.empty(r)
    exposure = np.empty(r)
    for row in range(n):
        pull[:] = side_pull[row]
        # Entries (row, j, k): v(a) = Σ_b G(a, b, k) A(j, b).
        for e in range(first.pointer[row], first.pointer[row + 1]):
            j, k = first.other[e], first.k[e]
            xhat = 0.0
            for a in range(r):
                total = 0.0
                for b in range(r):
                    total += core_geometric[k, a, b] * geometric[j, b]
                v[a] = total
                xhat += geometric[row, a] * total
            ratio = entry_weight(first.x[e], xhat, mode, jump_rate)
            for a in range(r):
                pull[a] += ratio * v[a]
        # Entries (i, row, k): v(b) = Σ_a A(i, a) G(a, b, k).
        for e in range(second.pointer[row], second.pointer[row + 1]):
            i, k = second.other[e], second.k[e]
            for b in range(r):
                v[b] = 0.0
            for a in range(r):
                weight = geometric[i, a]
                for b in range(r):
                    v[b] += weight * core_geometric[k, a, b]
            xhat = 0.0
            for b in range(r):
                xhat += geometric[row, b] * v[b]
            ratio = entry_weight(second.x[e], xhat, mode, jump_rate)
            for b in range(r):
                pull[b] += ratio * v[b]
        row_exposure(row, core_sum, column_sums, missing_first, missing_second, mean,
                     core_mean, exposure)
        for a in range(r):
            old = mean[row, a]
            rate = prior_rate[row, a] + max(exposure[a], 0.0) + side_exposure[row, a]
            if variational:
                shape[row, a] = prior_shape[row, a] + geometric[row, a] * pull[a]
                scale[row, a] = 1.0 / rate
                psi[row, a] = _digamma(shape[row, a])
                mean[row, a] = shape[row, a] * scale[row, a]
                geometric[row, a] = math.exp(psi[row, a]) * scale[row, a]
            else:
                mean[row, a] = max(prior_shape[row, a] - 1.0 + old * pull[a], 0.0) / rate
            column_sums[a] += mean[row, a] - old


def _core_terms(data, entity_geo, core_geo, entity_mean):
    """For G: the data's pull (without G's own factor) and the expected rate's
    derivative over the observed off-diagonal entries, both (R, R, K)."""
    ratio = data.likelihood.count_ratio(data.x, rates_at_nonzeros(data, entity_geo, core_geo))
    pull = pair_sums(data.i, data.j, data.k, ratio, entity_geo, data.n_relations)
    return pull.transpose(1, 2, 0), core_exposure(data, entity_mean)


def _tied(entity_fields, core_fields):
    """The three-position form the estimators read: positions 0 and 1 the same A."""
    return tuple((e, e, c) for e, c in zip(entity_fields, core_fields))


# --------------------------------------------------------------------------- VB
def vb_init(rng, data, priors, n_components):
    """q(A) and q(G) Gamma(INITIAL_SHAPE) around random means."""
    return vb_state_around(*initial_means(rng, data, n_components))


def vb_state_around(entity, core):
    """q(A) and q(G) Gamma(INITIAL_SHAPE) with the given means (zeros
    raised to a thousandth of their factor's mean, so that every q is a
    proper Gamma)."""
    fields = []
    for mean in (entity, core):
        mean = np.maximum(mean, 1e-3 * mean.mean())
        shape = np.full(mean.shape, INITIAL_SHAPE)
        fields.append((shape, mean / INITIAL_SHAPE) + gamma_moments(shape, mean / INITIAL_SHAPE))
    return VBState(*_tied(*fields))


def priors_with_a_mode(priors):
    """The priors with every shape raised to at least 1, so that the
    posterior mode exists (EM's start for VB)."""
    shapes = tuple(None if a is None else np.maximum(a, 1.0) for a in priors.shape)
    normalizers = tuple(None if a is None else float(np.sum(xlogy(a, r) - gammaln(a)))
                        for a, r in zip(shapes, priors.rate))
    return priors._replace(shape=shapes, log_normalizer=normalizers)


def restart_state(kernels, state_around, method, start, rng, data, priors, n_components,
                  max_iter, tol, acceleration="squarem"):
    """Where a VB or EM run starts: with ``method="vb"`` and ``start="mode"``
    around the posterior mode found by EM from a random start (every prior
    shape raised to at least 1, :func:`priors_with_a_mode`;
    ``state_around(mode, data, priors)`` makes the VB state), otherwise
    ``kernels[method]``'s random start. ``kernels``: this module's
    :data:`KERNELS`, or a coupled RESCAL's."""
    if method == "vb" and start == "mode":
        em, mode_priors = kernels["em"], priors_with_a_mode(priors)
        mode, _, _ = run_to_convergence(em, em.init(rng, data, mode_priors, n_components), data,
                                        mode_priors, max_iter, tol, acceleration=acceleration)
        return state_around(em.point(mode), data, priors)
    return kernels[method].init(rng, data, priors, n_components)


def mode_first(restart):
    """Where VB's ``restart``-th run starts by default: around EM's mode for
    the first, at random for the others (:func:`restart_state`'s ``start``)."""
    return "mode" if restart == 0 else "random"


def vb_start(how, restart):
    """Where VB's ``restart``-th run starts for the choice ``how``: ``"auto"``
    as :func:`mode_first`, else ``how`` itself (``"mode"`` or ``"random"``)."""
    return mode_first(restart) if how == "auto" else how


def restart_start(kernels, state_around, method, vb_start, settings, priors, n_components, rng,
                  restart, data):
    """:func:`restart_state` as the optimiser driver's
    ``start(rng, restart, contractor)`` (``data``: the relational data the
    kernels read), with ``vb_start(restart)`` its ``start`` and the loop's
    ``settings`` those of EM's run to the mode."""
    return restart_state(kernels, state_around, method, vb_start(restart), rng, data, priors,
                         n_components, settings.max_iter, settings.tol, settings.acceleration)


def state_around_mode(mode, data, priors):
    """RESCAL's VB state around an EM mode (for :func:`restart_state`)."""
    return vb_state_around(mode.factors[0], mode.factors[2])


def _no_side(state):
    """Zero side terms: RESCAL alone."""
    zeros = np.zeros(state.mean[0].shape)
    return zeros, zeros


def vb_step(state, data, priors, with_objective=True, side=None):
    """One sweep: every row of A in turn, then G (module docstring).
    ``side``: other tensors' ``(pull, exposure)`` on A's rows
    (:mod:`.coupled`)."""
    shape, scale = state.shape[0].copy(), state.scale[0].copy()
    mean, geo, psi = state.mean[0].copy(), state.geometric[0].copy(), state.digamma[0].copy()
    _entity_sweep(True, *_kernel_likelihood(data), data.first, data.second, data.missing_first,
                  data.missing_second, priors.shape[0], priors.rate[0], shape, scale, mean, geo,
                  psi, by_relation(state.geometric[2]), by_relation(state.mean[2]),
                  *(side or _no_side(state)))
    pull, exposure = _core_terms(data, geo, state.geometric[2], mean)
    g_shape = priors.shape[2] + state.geometric[2] * pull
    g_scale = 1.0 / (priors.rate[2] + exposure)
    core_fields = (g_shape, g_scale) + gamma_moments(g_shape, g_scale)
    new = VBState(*_tied((shape, scale, mean, geo, psi), core_fields))
    return new, VBInfo(objective=vb_bound(new, data, priors) if with_objective else None)


def _kernel_likelihood(data):
    """The likelihood as the compiled sweep reads it: its ratio mode and jump rate."""
    return data.likelihood.kernel_mode, data.likelihood.jump_rate


def vb_bound(state, data, priors):
    """The variational lower bound on log p(X) over the modelled entries."""
    value = data.log_base_measure - observed_total(data, state.mean[0], state.mean[2])
    value += data.likelihood.log_terms(
        data.x, rates_at_nonzeros(data, state.geometric[0], state.geometric[2]))
    for alpha in (0, 2):
        value += gamma_bound_term(priors.shape[alpha], priors.rate[alpha], state.shape[alpha],
                                  state.scale[alpha], state.digamma[alpha],
                                  priors.log_normalizer[alpha])
    return value


# --------------------------------------------------------------------------- EM
def em_init(rng, data, priors, n_components):
    """Random point estimates of A and G."""
    entity, core = initial_means(rng, data, n_components)
    return EMState((entity, entity, core))


def em_step(state, data, priors, with_objective=True, side=None):
    """One sweep of conditional maximisations: every row of A, then G
    (``side`` as for :func:`vb_step`)."""
    entity, core = state.factors[0].copy(), state.factors[2]
    core_by_relation = by_relation(core)
    unused = np.empty((0, 0))
    _entity_sweep(False, *_kernel_likelihood(data), data.first, data.second, data.missing_first,
                  data.missing_second, priors.shape[0], priors.rate[0], unused, unused, entity,
                  entity, unused, core_by_relation, core_by_relation, *(side or _no_side(state)))
    pull, exposure = _core_terms(data, entity, core, entity)
    core = np.maximum(priors.shape[2] - 1.0 + core * pull, 0.0) / (priors.rate[2] + exposure)
    new = EMState((entity, entity, core))
    return new, EMInfo(objective=em_log_joint(new, data, priors) if with_objective else None)


def em_log_joint(state, data, priors):
    """log p(X, A, G) at the point estimates."""
    entity, core = state.factors[0], state.factors[2]
    value = log_likelihood(data, entity, core)
    for alpha, z in ((0, entity), (2, core)):
        a, r = priors.shape[alpha], priors.rate[alpha]
        value += float(np.sum(xlogy(a - 1.0, z) - r * z)) + priors.log_normalizer[alpha]
    return value


class _Kernel(NamedTuple):
    """A kernel of functions
    (:class:`~sklearn_pltf.inference._driver.OptimizerKernel`); one that
    learns none of its priors takes the ``point``, ``moved``, ``priors_at``
    and ``advance`` of :mod:`~sklearn_pltf.inference._states`."""

    init: object
    step: object
    objective: object
    point: object = _states.point
    moved: object = _states.moved
    priors_at: object = _states.priors_at
    advance: object = _states.advance


#: The two methods, each an ``init(rng, data, priors, n_components)``, a
#: ``step(state, data, priors)`` returning ``(state, info)`` with the
#: objective first in ``info``, the objective of a state, and the other
#: members of the kernel protocol
#: (:class:`~sklearn_pltf.inference._driver.OptimizerKernel`).
KERNELS = {"vb": _Kernel(vb_init, vb_step, vb_bound), "em": _Kernel(em_init, em_step, em_log_joint)}
