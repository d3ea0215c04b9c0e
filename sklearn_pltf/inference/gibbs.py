"""Block Gibbs sampling for Poisson–Gamma PLTF (Şimşekli & Cemgil 2012).

The model is augmented with the allocation ``S`` of each count over the
latent configurations (Cemgil 2009):

.. math::

    S(v_0, \\bar v_0) \\mid Z \\sim
        \\mathrm{Multinomial}\\big(X(v_0), \\Lambda(v_0, \\cdot) / \\hat X(v_0)\\big),
    \\qquad \\Lambda(v) = \\prod_\\alpha Z_\\alpha(v_\\alpha),

    Z_\\alpha \\mid S, Z_{-\\alpha} \\sim
        \\mathcal{G}\\big(A_\\alpha + \\textstyle\\sum_{v \\setminus v_\\alpha} S,\\;
        \\text{rate } R_\\alpha + \\Delta_\\alpha(M)\\big).

One step draws ``S`` given every factor (only observed non-zeros have tokens
to allocate; missing entries have no count and no S), then each free factor
in turn given ``S`` and the others. ``S`` itself is never stored: the
allocation kernel sums it onto each factor's indices on the fly, from uniforms
drawn once per step, so every factor sees the same draw. All randomness comes
from the ``rng`` passed in, and the kernels' sums do not depend on the thread
count, so a seed gives the same chain on any machine with the same numpy.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._common import initial_factors

__all__ = ["GibbsState", "GibbsInfo", "init", "step", "allocate", "conditional", "log_likelihood"]


class GibbsState(NamedTuple):
    """The current draw of every factor (held factors as given)."""

    factors: tuple


class GibbsInfo(NamedTuple):
    """What one step reports: log p(X | Z) at the draw it returns."""

    log_likelihood: float


def init(rng, model, contractor, priors, given=None):
    """A first draw: free factors random around the data's scale (as for VB),
    held factors from ``given`` (``{position: array}``).

    Raises ``ValueError`` unless the observed values are whole counts: the
    sampler allocates counts token by token.
    """
    contractor.data.require_integer("Gibbs sampling")
    factors = initial_factors(rng, model, contractor, dict(given or {}), priors.free)
    return GibbsState(tuple(factors))


def allocate(rng, state, contractor, free):
    """Draw the allocation S given every factor of ``state``; return its sums
    onto each factor in ``free``, ``{α: Σ_{v̄_α} S}``."""
    entries = contractor.nonzeros
    return entries.allocation_sums(free, state.factors, rng.random(entries.n_tokens))


def conditional(alpha, factors, allocated, contractor, priors):
    """Shape and rate of the Gamma conditional of Z_α given S (through its sum
    ``allocated``) and the other ``factors``; element-wise independent."""
    return priors.shape[alpha] + allocated, priors.rate[alpha] + contractor.masked_delta(alpha, factors)


def step(rng, state, contractor, priors):
    """One sweep: the allocation given every factor, then each free factor."""
    factors = list(state.factors)
    allocated = allocate(rng, state, contractor, priors.free)
    for alpha in priors.free:
        shape, rate = conditional(alpha, factors, allocated[alpha], contractor, priors)
        factors[alpha] = rng.standard_gamma(shape) / rate
    new = GibbsState(tuple(factors))
    return new, GibbsInfo(log_likelihood=log_likelihood(new, contractor))


def log_likelihood(state, contractor):
    """log p(X | Z) = Σ M [X log X̂ − X̂ − log Γ(X + 1)]."""
    data = contractor.data
    return (
        contractor.data_loglik(state.factors)
        - contractor.masked_total(state.factors)
        - data.log_factorial_total
    )
