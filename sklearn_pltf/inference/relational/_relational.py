"""The relational data and the shared math of the Poisson–Gamma RESCAL
model, one entity factor on both entity axes,

.. math::

    \\hat X(i, j, k) = \\sum_{a, b} A(i, a)\\, A(j, b)\\, G(a, b, k),

for its algorithms (VB and EM in :mod:`.rescal`, Gibbs in :mod:`.rescal_gibbs`,
SGLD in :mod:`.rescal_sgld`): the observed off-diagonal non-zeros and the
missing entries grouped by entity, X̂ at listed entries, Σ X̂ over the
observed entries and its derivatives from the column sums of A (zeros are
never visited), and the log-likelihood. Diagonal entries x(i, i, k) join the
missing ones: there the entity factor would meet itself (A(i, a)², not
conjugate to a Gamma prior).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...engine._data import ObservedTensor
from ...engine._likelihood import get_likelihood

__all__ = ["RelationalData", "relational_data", "with_relation_axis", "priors_with_relation_axis",
           "without_relation_axis", "drop_relation_axis", "entry_rates", "pair_sums",
           "rates_at_nonzeros", "observed_total", "exposure_sums", "row_exposure",
           "entity_pulls", "entity_exposure", "core_exposure", "by_relation", "initial_means",
           "log_likelihood"]


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
    """:class:`RelationalData` from an :class:`~sklearn_pltf.engine._data.ObservedTensor`
    of shape (I, I, K): the diagonal joins the missing entries.

    Raises
    ------
    ValueError
        Unless the data have three axes and the first two have the same size,
        or if no off-diagonal entry is observed.
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
    if missing.shape[1] == n * n * n_relations:
        raise ValueError(
            f"No off-diagonal entry of the data (shape {tuple(data.shape)}) is observed: RESCAL "
            "models the links between two different entities and ignores the diagonal, so "
            "there is nothing to fit. It needs at least two entities and an observed entry "
            "between two of them."
        )
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
    one) dropped; None and scalars stay as they are."""
    return tuple(f if position != 2 or np.ndim(f) < 3 else f[..., 0]
                 for position, f in enumerate(per_position))


@numba.njit(cache=True, nogil=True)
def entry_rates(i, j, k, entity, core):  # pragma: no cover - compiled
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
def pair_sums(i, j, k, weight, entity, n_relations):  # pragma: no cover - compiled
    """S(k, a, b) = Σ_e w_e A(i_e, a) A(j_e, b) over the entries of relation k."""
    r = entity.shape[1]
    out = np.zeros((n_relations, r, r))
    for e in range(i.size):
        for a in range(r):
            left = weight[e] * entity[i[e], a]
            for b in range(r):
                out[k[e], a, b] += left * entity[j[e], b]
    return out


def rates_at_nonzeros(data, entity, core):
    """X̂ at every listed non-zero."""
    return entry_rates(data.i, data.j, data.k, entity, by_relation(core))


def observed_total(data, entity, core):
    """Σ X̂ over the observed entries: Sᵀ G(·, ·, k) S per relation, minus the
    missing entries (the diagonal included)."""
    s = entity.sum(axis=0)
    missing = entry_rates(data.missing_i, data.missing_j, data.missing_k, entity,
                           by_relation(core))
    return float(np.einsum("a,abk,b->", s, core, s)) - float(missing.sum())


@numba.njit(cache=True, nogil=True)
def exposure_sums(entity, core):  # pragma: no cover - compiled
    """What :func:`row_exposure` reads: G summed over relations (core as
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
def row_exposure(row, core_sum, column_sums, missing_first, missing_second, entity, core,
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
def entity_pulls(i, j, k, weight, entity, core, n_entities):  # pragma: no cover - compiled
    """Σ_e w_e ∂X̂_e/∂A(row, ·) over the listed entries (core as (K, R, R)),
    as an (I, R) array: an entry adds G_k A(j_e) to row i_e and G_kᵀ A(i_e)
    to row j_e."""
    r = entity.shape[1]
    out = np.zeros((n_entities, r))
    for e in range(i.size):
        row, column = i[e], j[e]
        for a in range(r):
            first = 0.0
            for b in range(r):
                first += core[k[e], a, b] * entity[column, b]
                out[column, b] += weight[e] * entity[row, a] * core[k[e], a, b]
            out[row, a] += weight[e] * first
    return out


def entity_exposure(data, entity, core):
    """∂/∂A(i, a) of Σ X̂ over the observed off-diagonal entries, every row
    at once: Σ_b (Ḡ(a, b) + Ḡ(b, a)) S(b), Ḡ summed over relations and S the
    column sums of A, less each row's missing entries (the diagonal among
    them); :func:`row_exposure` gives one row while the rows change."""
    summed = core.sum(axis=2)
    everywhere = (summed + summed.T) @ entity.sum(axis=0)
    missing = entity_pulls(data.missing_i, data.missing_j, data.missing_k,
                           np.ones(data.missing_i.size), entity, by_relation(core),
                           data.n_entities)
    return np.maximum(everywhere[None, :] - missing, 0.0)


def core_exposure(data, entity):
    """∂/∂G(a, b, k) of Σ X̂ over the observed off-diagonal entries:
    S(a) S(b) less the missing entries' A(i, a) A(j, b), as (R, R, K)."""
    s = entity.sum(axis=0)
    missing = pair_sums(data.missing_i, data.missing_j, data.missing_k,
                         np.ones(data.missing_i.size), entity, data.n_relations)
    exposure = np.outer(s, s)[None] - missing
    return np.maximum(exposure, 0.0).transpose(1, 2, 0)


def by_relation(core):
    """G as (K, R, R), so that ``[k]`` is one relation's slice."""
    return np.ascontiguousarray(core.transpose(2, 0, 1))


def initial_means(rng, data, n_components):
    """A and G as ``s · Gamma(1, 1)`` draws, s making the mean rate over the
    observed entries equal the data's mean (plus one pseudo-count)."""
    r = n_components
    mean_data = (float(data.x.sum()) + 1.0) / data.n_observed
    scale = (mean_data / r ** 2) ** (1.0 / 3.0)
    entity = scale * rng.standard_gamma(1.0, size=(data.n_entities, r))
    core = scale * rng.standard_gamma(1.0, size=(r, r, data.n_relations))
    return entity, core


def log_likelihood(data, entity, core):
    """log p(X | A, G) over the modelled entries."""
    value = data.log_base_measure - observed_total(data, entity, core)
    return value + data.likelihood.log_terms(data.x, rates_at_nonzeros(data, entity, core))
