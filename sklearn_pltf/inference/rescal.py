"""Variational Bayes and EM for the Poisson–Gamma RESCAL model: one entity
factor on both entity modes.

.. math::

    \\hat X(i, j, k) = \\sum_{a, b} A(i, a)\\, A(j, b)\\, G(a, b, k),
    \\qquad A, G \\sim \\text{Gamma}(\\text{shape}, \\text{rate}),

for a relational tensor X (entity x entity x relation) under the Poisson or
the Bernoulli–Poisson likelihood (:mod:`sklearn_pltf._likelihood`); the
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
  :math:`X / \\hat X_L` (Poisson) or :math:`1 / (1 - e^{-\\hat X_L})`
  (Bernoulli–Poisson) at the geometric means L. Then G, linear in the rate,
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

from .._data import ObservedTensor
from .._kernels import BERNOULLI_RATIO
from .._likelihood import get_likelihood
from ._gamma import _digamma, gamma_bound_term, gamma_moments
from .em import EMInfo, EMState
from .vb import _INITIAL_SHAPE, VBInfo, VBState

__all__ = ["RelationalData", "relational_data", "with_relation_axis", "priors_with_relation_axis",
           "without_relation_axis", "drop_relation_axis", "core_exposure", "vb_state_around",
           "priors_with_a_mode", "log_likelihood", "KERNELS"]


class _Grouped(NamedTuple):
    """A list of entries sorted by one of their indices (the group), with the
    other two indices and the values in that order: the entries of group g
    are ``pointer[g]:pointer[g + 1]``."""

    pointer: np.ndarray
    other: np.ndarray  # the entity index that is not the group's
    k: np.ndarray
    x: np.ndarray


def _grouped(group, other, k, x, n_groups):
    order = np.argsort(group, kind="stable")
    pointer = np.zeros(n_groups + 1, dtype=np.intp)
    np.cumsum(np.bincount(group, minlength=n_groups), out=pointer[1:])
    return _Grouped(pointer, np.ascontiguousarray(other[order]), np.ascontiguousarray(k[order]),
                    np.ascontiguousarray(x[order]))


class RelationalData(NamedTuple):
    """An entity x entity x relation tensor prepared for the row updates.

    ``i, j, k, x`` are the observed off-diagonal non-zeros, ``missing_*`` the
    entries not observed, the diagonal included; ``first``/``second`` hold
    each list grouped by its first/second entity.
    """

    n_entities: int
    n_relations: int
    likelihood: object
    i: np.ndarray
    j: np.ndarray
    k: np.ndarray
    x: np.ndarray
    first: _Grouped
    second: _Grouped
    missing_i: np.ndarray
    missing_j: np.ndarray
    missing_k: np.ndarray
    missing_first: _Grouped
    missing_second: _Grouped
    #: The likelihood's constant over the modelled entries (−Σ log Γ(x + 1) for Poisson).
    log_base_measure: float
    observed: object  # the ObservedTensor of the modelled entries

    @property
    def n_observed(self):
        return self.n_entities ** 2 * self.n_relations - self.missing_i.size


def relational_data(data, likelihood):
    """:class:`RelationalData` from an :class:`~sklearn_pltf._data.ObservedTensor`
    of shape (I, I, K): the diagonal joins the missing entries.

    Raises
    ------
    ValueError
        Unless the data have three axes and the first two have the same size.
    """
    if len(data.shape) != 3 or data.shape[0] != data.shape[1]:
        raise ValueError(
            "The RESCAL structure needs an entity x entity x relation tensor, its first two "
            f"axes the same size; got shape {data.shape}."
        )
    n, n_relations = data.shape[0], data.shape[2]
    if data.is_sparse:
        coords, values, missing = data.coords, data.values, data.missing
    else:
        coords = np.array(np.nonzero(data.dense))
        values = data.dense[tuple(coords)]
        missing = (np.empty((3, 0), dtype=np.intp) if data.mask is None
                   else np.array(np.nonzero(~data.mask)))
    off = coords[0] != coords[1]
    coords, values = coords[:, off].astype(np.intp), values[off]
    missing = missing[:, missing[0] != missing[1]].astype(np.intp)
    entities = np.repeat(np.arange(n), n_relations)
    diagonal = np.array([entities, entities, np.tile(np.arange(n_relations), n)])
    missing = np.concatenate([missing, diagonal], axis=1)
    observed = ObservedTensor(shape=tuple(data.shape), coords=coords,
                              values=np.asarray(values, dtype=np.float64), missing=missing)
    likelihood = get_likelihood(likelihood)
    i, j, k = observed.coords
    x = observed.values
    mi, mj, mk = observed.missing
    ones = np.ones(mi.size)
    return RelationalData(
        n, n_relations, likelihood, i, j, k, x,
        _grouped(i, j, k, x, n), _grouped(j, i, k, x, n),
        mi, mj, mk, _grouped(mi, mj, mk, ones, n), _grouped(mj, mi, mk, ones, n),
        float(likelihood.log_base_measure(observed)), observed,
    )


def with_relation_axis(data):
    """A square matrix (one relation) as an (I, I, 1) tensor; a tensor as it is."""
    if data.ndim == 3:
        return data
    shape = tuple(data.shape) + (1,)
    if data.is_sparse:
        return ObservedTensor(
            shape=shape, values=data.values,
            coords=np.vstack([data.coords, np.zeros((1, data.coords.shape[1]), np.intp)]),
            missing=np.vstack([data.missing, np.zeros((1, data.missing.shape[1]), np.intp)]))
    return ObservedTensor(shape=shape, dense=data.dense[..., None],
                          mask=None if data.mask is None else data.mask[..., None])


def priors_with_relation_axis(priors):
    """Priors of a one-relation model with G's given as (R, R, 1)."""
    if priors.shape[2].ndim == 3:
        return priors
    return priors._replace(shape=priors.shape[:2] + (priors.shape[2][..., None],),
                           rate=priors.rate[:2] + (priors.rate[2][..., None],))


def without_relation_axis(state):
    """A fitted state of one relation with G as (R, R), for the model ``"ia,jb,ab->ij"``."""
    return type(state)(*(drop_relation_axis(field) for field in state))


def drop_relation_axis(per_position):
    """Per-position arrays (A, A, G), G's trailing relation axis (of length
    one) dropped; None stays None."""
    return tuple(f if f is None or position != 2 else f[..., 0]
                 for position, f in enumerate(per_position))


# ----------------------------------------------------------------- contractions
@numba.njit(cache=True, nogil=True)
def _entry_rates(i, j, k, entity, core):  # pragma: no cover - compiled
    """X̂(i_e, j_e, k_e) = Σ_ab A(i_e, a) A(j_e, b) G(k_e, a, b) per entry (G as (K, R, R))."""
    r = entity.shape[1]
    out = np.empty(i.size)
    for e in range(i.size):
        total = 0.0
        for a in range(r):
            inner = 0.0
            for b in range(r):
                inner += core[k[e], a, b] * entity[j[e], b]
            total += entity[i[e], a] * inner
        out[e] = total
    return out


@numba.njit(cache=True, nogil=True)
def _pair_sums(i, j, k, weight, entity, n_relations):  # pragma: no cover - compiled
    """S(k, a, b) = Σ_e w_e A(i_e, a) A(j_e, b) over the entries of relation k."""
    r = entity.shape[1]
    out = np.zeros((n_relations, r, r))
    for e in range(i.size):
        for a in range(r):
            left = weight[e] * entity[i[e], a]
            for b in range(r):
                out[k[e], a, b] += left * entity[j[e], b]
    return out


def _rates(data, entity, core):
    """X̂ at every listed non-zero."""
    return _entry_rates(data.i, data.j, data.k, entity, _by_relation(core))


def _observed_total(data, entity, core):
    """Σ X̂ over the observed entries: Sᵀ G(·, ·, k) S per relation, minus the
    missing entries (the diagonal included)."""
    s = entity.sum(axis=0)
    missing = _entry_rates(data.missing_i, data.missing_j, data.missing_k, entity,
                           _by_relation(core))
    return float(np.einsum("a,abk,b->", s, core, s)) - float(missing.sum())


@numba.njit(cache=True, nogil=True)
def _exposure_sums(entity, core):  # pragma: no cover - compiled
    """What :func:`_row_exposure` reads: G summed over relations (core as
    (K, R, R)) and the column sums of A."""
    r = entity.shape[1]
    core_sum = np.zeros((r, r))
    for k in range(core.shape[0]):
        core_sum += core[k]
    column_sums = np.zeros(r)
    for row in range(entity.shape[0]):
        column_sums += entity[row]
    return core_sum, column_sums


@numba.njit(cache=True, nogil=True)
def _row_exposure(row, core_sum, column_sums, missing_first, missing_second, entity, core,
                  exposure):  # pragma: no cover - compiled
    """Into ``exposure``: ∂/∂A(row, ·) of Σ X̂ over the observed off-diagonal
    entries, from the column sums S of A (Σ_b (Ḡ(a, b) + Ḡ(b, a)) S(b), Ḡ
    summed over relations) less the row's missing entries, the diagonal among
    them. Row ``row``'s own values cancel: the result does not depend on them."""
    r = entity.shape[1]
    for a in range(r):
        total = 0.0
        for b in range(r):
            total += (core_sum[a, b] + core_sum[b, a]) * column_sums[b]
        exposure[a] = total
    for e in range(missing_first.pointer[row], missing_first.pointer[row + 1]):
        j, k = missing_first.other[e], missing_first.k[e]
        for a in range(r):
            for b in range(r):
                exposure[a] -= core[k, a, b] * entity[j, b]
    for e in range(missing_second.pointer[row], missing_second.pointer[row + 1]):
        i, k = missing_second.other[e], missing_second.k[e]
        for a in range(r):
            weight = entity[i, a]
            for b in range(r):
                exposure[b] -= weight * core[k, a, b]


@numba.njit(cache=True, nogil=True)
def _entity_sweep(variational, bernoulli, first, second, missing_first, missing_second,
                  prior_shape, prior_rate, shape, scale, mean, geometric, psi,
                  core_geometric, core_mean):  # pragma: no cover - compiled
    """Update every row of A in turn, in place (module docstring).

    ``core_*`` are G as (K, R, R). EM passes ``mean`` and ``geometric`` as
    the same array (and the cores alike); ``shape``, ``scale`` and ``psi``
    are then not read. A row's data pull is
    Σ_e ratio_e v_e over its entries, v_e(a) = ∂X̂_e / ∂A(row, a), with X̂
    and v at the geometric means; its exposure is Σ_e v_e at the means over
    every observed off-diagonal entry, from the column sums S of A less the
    missing entries.
    """
    n, r = mean.shape
    core_sum, column_sums = _exposure_sums(mean, core_mean)
    v = np.empty(r)
    pull = np.empty(r)
    exposure = np.empty(r)
    for row in range(n):
        pull[:] = 0.0
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
            ratio = first.x[e] / (-math.expm1(-xhat) if bernoulli else xhat)
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
            ratio = second.x[e] / (-math.expm1(-xhat) if bernoulli else xhat)
            for b in range(r):
                pull[b] += ratio * v[b]
        _row_exposure(row, core_sum, column_sums, missing_first, missing_second, mean,
                      core_mean, exposure)
        for a in range(r):
            old = mean[row, a]
            rate = prior_rate[row, a] + max(exposure[a], 0.0)
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
    ratio = data.likelihood.count_ratio(data.x, _rates(data, entity_geo, core_geo))
    pull = _pair_sums(data.i, data.j, data.k, ratio, entity_geo, data.n_relations)
    return pull.transpose(1, 2, 0), core_exposure(data, entity_mean)


def core_exposure(data, entity):
    """∂/∂G(a, b, k) of Σ X̂ over the observed off-diagonal entries:
    S(a) S(b) less the missing entries' A(i, a) A(j, b), as (R, R, K)."""
    s = entity.sum(axis=0)
    missing = _pair_sums(data.missing_i, data.missing_j, data.missing_k,
                         np.ones(data.missing_i.size), entity, data.n_relations)
    exposure = np.outer(s, s)[None] - missing
    return np.maximum(exposure, 0.0).transpose(1, 2, 0)


def _by_relation(core):
    """G as (K, R, R), so that ``[k]`` is one relation's slice."""
    return np.ascontiguousarray(core.transpose(2, 0, 1))


# ----------------------------------------------------------------- initial values
def _initial_means(rng, data, n_components):
    """A and G as ``s · Gamma(1, 1)`` draws, s making the mean rate over the
    observed entries equal the data's mean (plus one pseudo-count)."""
    r = n_components
    mean_data = (float(data.x.sum()) + 1.0) / data.n_observed
    scale = (mean_data / r ** 2) ** (1.0 / 3.0)
    entity = scale * rng.standard_gamma(1.0, size=(data.n_entities, r))
    core = scale * rng.standard_gamma(1.0, size=(r, r, data.n_relations))
    return entity, core


def _tied(entity_fields, core_fields):
    """The three-position form the estimators read: positions 0 and 1 the same A."""
    return tuple((e, e, c) for e, c in zip(entity_fields, core_fields))


# --------------------------------------------------------------------------- VB
def vb_init(rng, data, priors, n_components):
    """q(A) and q(G) Gamma(_INITIAL_SHAPE) around random means."""
    return vb_state_around(*_initial_means(rng, data, n_components))


def vb_state_around(entity, core):
    """q(A) and q(G) Gamma(_INITIAL_SHAPE) with the given means (zeros
    raised to a thousandth of their factor's mean, so that every q is a
    proper Gamma)."""
    fields = []
    for mean in (entity, core):
        mean = np.maximum(mean, 1e-3 * mean.mean())
        shape = np.full(mean.shape, _INITIAL_SHAPE)
        fields.append((shape, mean / _INITIAL_SHAPE) + gamma_moments(shape, mean / _INITIAL_SHAPE))
    return VBState(*_tied(*fields))


def priors_with_a_mode(priors):
    """The priors with every shape raised to at least 1, so that the
    posterior mode exists (EM's start for VB)."""
    shapes = tuple(None if a is None else np.maximum(a, 1.0) for a in priors.shape)
    normalizers = tuple(None if a is None else float(np.sum(xlogy(a, r) - gammaln(a)))
                        for a, r in zip(shapes, priors.rate))
    return priors._replace(shape=shapes, log_normalizer=normalizers)


def vb_step(state, data, priors, with_objective=True):
    """One sweep: every row of A in turn, then G (module docstring)."""
    shape, scale = state.shape[0].copy(), state.scale[0].copy()
    mean, geo, psi = state.mean[0].copy(), state.geometric[0].copy(), state.digamma[0].copy()
    _entity_sweep(True, _is_bernoulli(data), data.first, data.second, data.missing_first,
                  data.missing_second, priors.shape[0], priors.rate[0], shape, scale, mean, geo,
                  psi, _by_relation(state.geometric[2]), _by_relation(state.mean[2]))
    pull, exposure = _core_terms(data, geo, state.geometric[2], mean)
    g_shape = priors.shape[2] + state.geometric[2] * pull
    g_scale = 1.0 / (priors.rate[2] + exposure)
    core_fields = (g_shape, g_scale) + gamma_moments(g_shape, g_scale)
    new = VBState(*_tied((shape, scale, mean, geo, psi), core_fields))
    return new, VBInfo(bound=vb_bound(new, data, priors) if with_objective else None)


def _is_bernoulli(data):
    return data.likelihood.kernel_mode == BERNOULLI_RATIO


def vb_bound(state, data, priors):
    """The variational lower bound on log p(X) over the modelled entries."""
    value = data.log_base_measure - _observed_total(data, state.mean[0], state.mean[2])
    value += data.likelihood.log_terms(data.x, _rates(data, state.geometric[0], state.geometric[2]))
    for alpha in (0, 2):
        value += gamma_bound_term(priors.shape[alpha], priors.rate[alpha], state.shape[alpha],
                                  state.scale[alpha], state.digamma[alpha],
                                  priors.log_normalizer[alpha])
    return value


# --------------------------------------------------------------------------- EM
def em_init(rng, data, priors, n_components):
    """Random point estimates of A and G."""
    entity, core = _initial_means(rng, data, n_components)
    return EMState((entity, entity, core))


def em_step(state, data, priors, with_objective=True):
    """One sweep of conditional maximisations: every row of A, then G."""
    entity, core = state.factors[0].copy(), state.factors[2]
    core_by_relation = _by_relation(core)
    unused = np.empty((0, 0))
    _entity_sweep(False, _is_bernoulli(data), data.first, data.second, data.missing_first,
                  data.missing_second, priors.shape[0], priors.rate[0], unused, unused, entity,
                  entity, unused, core_by_relation, core_by_relation)
    pull, exposure = _core_terms(data, entity, core, entity)
    core = np.maximum(priors.shape[2] - 1.0 + core * pull, 0.0) / (priors.rate[2] + exposure)
    new = EMState((entity, entity, core))
    return new, EMInfo(log_joint=em_log_joint(new, data, priors) if with_objective else None)


def em_log_joint(state, data, priors):
    """log p(X, A, G) at the point estimates."""
    entity, core = state.factors[0], state.factors[2]
    value = log_likelihood(data, entity, core)
    for alpha, z in ((0, entity), (2, core)):
        a, r = priors.shape[alpha], priors.rate[alpha]
        value += float(np.sum(xlogy(a - 1.0, z) - r * z)) + priors.log_normalizer[alpha]
    return value


def log_likelihood(data, entity, core):
    """log p(X | A, G) over the modelled entries."""
    value = data.log_base_measure - _observed_total(data, entity, core)
    return value + data.likelihood.log_terms(data.x, _rates(data, entity, core))


class _Kernel(NamedTuple):
    init: object
    step: object
    objective: object


#: The two methods, each an ``init(rng, data, priors, n_components)``, a
#: ``step(state, data, priors)`` returning ``(state, info)`` with the
#: objective first in ``info``, and the objective of a state.
KERNELS = {"vb": _Kernel(vb_init, vb_step, vb_bound), "em": _Kernel(em_init, em_step, em_log_joint)}
