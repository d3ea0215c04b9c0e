"""The RESCAL posterior as an SGLD target (:mod:`sklearn_pltf.inference.sgld`),
for SGLD sampling and stochastic thermodynamic integration.

The parameters are φ = (log A, log G) (A once, though it serves both entity
axes), with the Gamma priors' Jacobian as in
:class:`~sklearn_pltf.inference.sgld.PoissonTarget`. The gradient of the log
power posterior in φ is, for A,

.. math::

    t\\,\\big(S_A - A \\circ E_A\\big) + \\text{shape} - \\text{rate}\\, A,
    \\qquad S_A(i, a) = A(i, a) \\sum_e r_e\\,
        \\frac{\\partial \\hat X_e}{\\partial A(i, a)},

the sum over the observed off-diagonal non-zeros e in which i is the first
or the second entity, :math:`r_e = E[N_e] / \\hat X_e` (:math:`X / \\hat X`
for Poisson data), and :math:`E_A = \\partial_A \\sum_{\\text{observed}}
\\hat X` from the column sums of A less the missing entries (the diagonal
among them); for G the same with :math:`S_G(a, b, k) = G(a, b, k) \\sum_e
r_e A(i_e, a) A(j_e, b)` over relation k's entries. Minibatches sample the
non-zeros, with the control variates of ``PoissonTarget`` around a
reference point computed by :meth:`RescalTarget.anchor`.
"""

from __future__ import annotations

import numpy as np

from ...engine._kernels import TINY
from . import _relational as relational
from .._batches import ControlVariates, RandomBatches, TargetGradient, subsampling_variance

__all__ = ["RescalTarget"]


class RescalTarget:
    """The power posterior of the Poisson–Gamma RESCAL model in log
    coordinates (module docstring), with the interface of
    :mod:`sklearn_pltf.inference.sgld`.

    Parameters
    ----------
    data : RelationalData
    priors : GammaPriors
        With G's as (R, R, K).
    n_components : int
    batch_size : int, default=None
        Non-zeros per minibatch (all of them if None or larger).
    """

    #: The model positions of the parameter blocks, and A's second position.
    positions = (0, 2)
    tied = {1: 0}

    def __init__(self, data, priors, n_components, batch_size=None):
        self.data, self.priors, self.n_components = data, priors, n_components
        n = data.x.size
        self.batches = RandomBatches(n, n if batch_size is None else batch_size)

    def init(self, rng):
        entity, core = relational.initial_means(rng, self.data, self.n_components)
        return np.log(np.maximum(entity, TINY)), np.log(np.maximum(core, TINY))

    def factors(self, params):
        """(A, A, G) in model order."""
        entity, core = np.exp(params[0]), np.exp(params[1])
        return [entity, entity, core]

    def draw_batch(self, rng):
        return self.batches.draw(rng)

    def _allocation(self, index, weights, entity, core):
        """(S_A, S_G) over the entries ``index`` with weights r_e."""
        d = self.data
        i, j, k = d.i[index], d.j[index], d.k[index]
        by_relation = relational.by_relation(core)
        entity_part = entity * relational.entity_pulls(i, j, k, weights, entity, by_relation,
                                                       d.n_entities)
        core_part = core * relational.pair_sums(i, j, k, weights, entity,
                                                d.n_relations).transpose(1, 2, 0)
        return entity_part, core_part

    def _exposures(self, entity, core):
        """∂/∂A and ∂/∂G of Σ X̂ over the observed off-diagonal entries."""
        return (relational.entity_exposure(self.data, entity, core),
                relational.core_exposure(self.data, entity))

    def gradient(self, params, batch, temperature, anchor=None):
        """The :class:`~.._batches.TargetGradient` at ``params`` from ``batch``,
        with the control variates of ``anchor`` (None: none)."""
        index, scale = batch
        d = self.data
        entity, _, core = self.factors(params)
        likelihood = d.likelihood
        xhat = np.maximum(relational.entry_rates(d.i[index], d.j[index], d.k[index], entity,
                                                 relational.by_relation(core)), TINY)
        differences = likelihood.entry_log_terms(d.x[index], xhat)
        if anchor is not None:
            differences = differences - anchor.terms[index]
        log_likelihood = ((anchor.total if anchor is not None else 0.0)
                          + scale * float(np.sum(differences))
                          - relational.observed_total(d, entity, core) + d.log_base_measure)
        allocated = self._allocation(index, likelihood.count_ratio(d.x[index], xhat), entity, core)
        allocated = tuple(reference + scale * part for reference, part in
                          zip(anchor.allocation if anchor is not None else (0.0, 0.0), allocated))
        if anchor is not None and index.size:
            cancel = self._allocation(index, anchor.ratios[index], *anchor.reference)
            allocated = tuple(a - scale * c for a, c in zip(allocated, cancel))
        exposures = self._exposures(entity, core)
        gradient = tuple(
            temperature * (s - z * e) + self.priors.shape[p] - self.priors.rate[p] * z
            for s, z, e, p in zip(allocated, (entity, core), exposures, self.positions)
        )
        return TargetGradient(gradient, float(log_likelihood),
                              subsampling_variance(differences, scale), allocated)

    def curvature(self, params, temperature, allocated):
        """As ``PoissonTarget.curvature``: the larger of the conditional's
        shape with the expected allocation, and its curvature at the point."""
        entity, _, core = self.factors(params)
        exposures = self._exposures(entity, core)
        return tuple(
            np.maximum(self.priors.shape[p] + temperature * np.maximum(s, 0.0),
                       z * (self.priors.rate[p] + temperature * e))
            for s, z, e, p in zip(allocated, (entity, core), exposures, self.positions)
        )

    def anchor(self, params):
        """The control variates' reference point at ``params``, a
        :class:`~.._batches.ControlVariates` with (A, G) as its reference
        (one pass over the non-zeros)."""
        d = self.data
        entity, _, core = self.factors(params)
        xhat = np.maximum(relational.rates_at_nonzeros(d, entity, core), TINY)
        terms = d.likelihood.entry_log_terms(d.x, xhat)
        ratios = d.likelihood.count_ratio(d.x, xhat)
        allocation = self._allocation(np.arange(d.x.size), ratios, entity, core)
        return ControlVariates((entity, core), allocation, terms, ratios, float(np.sum(terms)))

    def log_likelihood(self, params):
        entity, _, core = self.factors(params)
        return relational.log_likelihood(self.data, entity, core)
