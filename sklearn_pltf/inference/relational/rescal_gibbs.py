"""Gibbs sampling for the Poisson–Gamma RESCAL model, whose entity factor A
serves both entity axes (the model of :mod:`sklearn_pltf.inference.relational.rescal`).

The allocation S of each count over the pairs of clusters (Cemgil 2009),

.. math::

    S(i, j, k, \\cdot, \\cdot) \\mid A, G \\sim \\mathrm{Multinomial}\\big(
        N(i, j, k),\\; A(i, a) A(j, b) G(a, b, k) / \\hat X(i, j, k)\\big),

makes every block conjugate off the diagonal (diagonal entries x(i, i, k)
are missing, as in VB). Given S, G is element-wise Gamma,
:math:`G(a, b, k) \\mid S, A \\sim \\mathcal G(\\text{shape} + S(\\cdot, \\cdot, k, a, b),
\\text{rate} + \\Sigma(a) \\Sigma(b) - \\text{missing})`, and a row of A is
Gamma given S and the *other rows*,

.. math::

    A(i, a) \\mid S, A_{-i}, G \\sim \\mathcal G\\big(\\text{shape} + C(i, a),\\;
        \\text{rate} + \\partial_{A(i, a)} \\textstyle\\sum_{\\text{observed}} \\hat X\\big),

where C(i, a) counts the tokens allocated to cluster a at either entity
axis of an entry of i (the rate does not involve row i itself, since the
entries where i meets itself are not modelled). The rows are coupled
through the rate, so they are drawn one at a time, each given the rows drawn
before it: a systematic-scan Gibbs sampler.

Two sweeps (``SWEEPS``): ``"gibbs"`` draws S once, then every row of A,
then G; ``"sada"`` draws a fresh S (given the new A) before G, so that each
block sees an allocation made with the blocks updated before it. Each block
update is an exact data-augmentation step, so both leave p(A, G | X)
invariant. Under the Bernoulli–Poisson likelihood the latent counts N of the
ones are drawn first (zero-truncated Poisson given X̂), as in
:mod:`sklearn_pltf.inference.gibbs`.

A sweep costs O((tokens + missing) R²) plus O(I R²) for the rows.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...engine._kernels import TINY
from .._gamma import log_gamma_density
from ._relational import (by_relation, core_exposure, entry_rates, exposure_sums, initial_means,
                          log_likelihood, row_exposure)

__all__ = ["RescalGibbsState", "RescalGibbsInfo", "Conditionals", "SWEEPS", "init", "sweep",
           "step", "log_prior"]

SWEEPS = ("gibbs", "sada")


class RescalGibbsState(NamedTuple):
    """The current draw; ``factors`` is (A, A, G) in model order."""

    factors: tuple


class RescalGibbsInfo(NamedTuple):
    """What one step reports: log p(X | A, G) at the draw it returns."""

    log_likelihood: float


class Conditionals(NamedTuple):
    """The Gamma conditionals a sweep drew from: row i of A from
    ``(entity_shape[i], entity_rate[i])`` given the rows drawn before it, G
    from ``(core_shape, core_rate)`` (R, R, K)."""

    entity_shape: np.ndarray
    entity_rate: np.ndarray
    core_shape: np.ndarray
    core_rate: np.ndarray


@numba.njit(cache=True, nogil=True)
def _allocate(i, j, k, counts, entity, core, uniforms, n_entities):  # pragma: no cover - compiled
    """Allocate each entry's ``counts`` tokens over the cluster pairs (a, b),
    token t by inversion of the uniform ``uniforms[t]``; return the tokens
    summed onto A's rows (both entity axes) and onto G (as (K, R, R))."""
    r = entity.shape[1]
    entity_counts = np.zeros((n_entities, r))
    core_counts = np.zeros(core.shape)
    cumulative = np.empty(r * r)
    t = 0
    for e in range(i.size):
        total = 0.0
        for a in range(r):
            left = entity[i[e], a]
            for b in range(r):
                total += left * core[k[e], a, b] * entity[j[e], b]
                cumulative[a * r + b] = total
        for _ in range(counts[e]):
            target = uniforms[t] * total
            t += 1
            low, high = 0, r * r - 1
            while low < high:  # the first pair whose cumulative weight exceeds the target
                middle = (low + high) // 2
                if cumulative[middle] > target:
                    high = middle
                else:
                    low = middle + 1
            a, b = low // r, low % r
            entity_counts[i[e], a] += 1.0
            entity_counts[j[e], b] += 1.0
            core_counts[k[e], a, b] += 1.0
    return entity_counts, core_counts


@numba.njit(cache=True, nogil=True)
def _draw_rows(standard, prior_rate, entity, core, missing_first, missing_second, clamped, point,
               rates):  # pragma: no cover - compiled
    """Draw every row of A in turn, in place: A(i, ·) = ``standard[i]`` /
    its conditional rate given the rows before it (stored in ``rates``),
    except the ``clamped`` elements, which are set to ``point``. ``standard``
    holds Gamma(shape + C, 1) draws: the shapes depend on S only."""
    n, r = entity.shape
    core_sum, column_sums = exposure_sums(entity, core)
    exposure = np.empty(r)
    for row in range(n):
        row_exposure(row, core_sum, column_sums, missing_first, missing_second, entity, core,
                     exposure)
        for a in range(r):
            rates[row, a] = prior_rate[row, a] + max(exposure[a], 0.0)
            new = point[row, a] if clamped[row, a] else standard[row, a] / rates[row, a]
            column_sums[a] += new - entity[row, a]
            entity[row, a] = new


def init(rng, data, priors, n_components):
    """A first draw of A and G, random around the data's scale (as for VB)."""
    entity, core = initial_means(rng, data, n_components)
    return RescalGibbsState((entity, entity, core))


def _allocation(rng, data, entity, core_by_relation):
    """Latent counts (Bernoulli–Poisson: drawn at the ones) and their
    allocation, summed onto A's rows and onto G (K, R, R)."""
    if data.likelihood.counts_observed:  # Poisson: the counts are the data
        counts = data.x.astype(np.intp)
    else:
        xhat = entry_rates(data.i, data.j, data.k, entity, core_by_relation)
        counts = data.likelihood.draw_counts(rng, data.x, np.maximum(xhat, TINY)).astype(np.intp)
    return _allocate(data.i, data.j, data.k, counts, entity, core_by_relation,
                     rng.random(int(counts.sum())), data.n_entities)


def sweep(rng, state, data, priors, method="gibbs", clamped=None):
    """One sweep: S, every row of A in turn, (``"sada"``: a fresh S), then G.

    Parameters
    ----------
    rng : numpy.random.Generator
    state : RescalGibbsState
    data : RelationalData
    priors : GammaPriors
        With G's as (R, R, K) (:func:`~._relational.priors_with_relation_axis`).
    method : {"gibbs", "sada"}
    clamped : (ndarray, ndarray, ndarray, ndarray), default=None
        ``(entity_mask, entity_point, core_mask, core_point)``: the masked
        elements are not drawn but set to the point (Chib's clamped runs).

    Returns
    -------
    state : RescalGibbsState
    conditionals : Conditionals
    """
    entity, core = state.factors[0].copy(), state.factors[2]
    n, r = entity.shape
    if clamped is None:
        clamped = (np.zeros((n, r), bool), entity, np.zeros(core.shape, bool), core)
    entity_mask, entity_point, core_mask, core_point = clamped
    entity_counts, core_counts = _allocation(rng, data, entity, by_relation(core))
    entity_shape = priors.shape[0] + entity_counts
    entity_rate = np.empty((n, r))
    _draw_rows(rng.standard_gamma(entity_shape), priors.rate[0], entity,
               by_relation(core), data.missing_first, data.missing_second, entity_mask,
               entity_point, entity_rate)
    if method == "sada":
        _, core_counts = _allocation(rng, data, entity, by_relation(core))
    core_shape = priors.shape[2] + core_counts.transpose(1, 2, 0)
    core_rate = priors.rate[2] + core_exposure(data, entity)
    core = np.where(core_mask, core_point, rng.standard_gamma(core_shape) / core_rate)
    return (RescalGibbsState((entity, entity, core)),
            Conditionals(entity_shape, entity_rate, core_shape, core_rate))


def step(rng, state, data, priors, method="gibbs"):
    """One sweep (:func:`sweep`) and the new draw's log-likelihood."""
    state, _ = sweep(rng, state, data, priors, method)
    return state, RescalGibbsInfo(log_likelihood(data, state.factors[0], state.factors[2]))


def log_prior(factors, priors):
    """log p(A, G) under the Gamma priors (A counted once)."""
    return sum(log_gamma_density(factors[a], priors.shape[a], priors.rate[a]) for a in (0, 2))
