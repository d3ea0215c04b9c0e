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

Two sweeps target this posterior (``SWEEPS``):

- ``"gibbs"`` (block Gibbs, :func:`block_sweep`) draws ``S`` given every
  factor (only observed non-zeros have tokens to allocate; missing entries
  have no count and no S), then each free factor in turn given ``S`` and the
  others. ``S`` itself is never stored: the allocation kernel sums it onto
  each factor's indices on the fly, token by token, from uniforms drawn once
  per sweep, so every factor sees the same draw.
- ``"sada"`` (:func:`sada_sweep`) draws, before each factor, a fresh
  allocation through its margin on that factor's latent indices alone —
  a multinomial per entry over those indices, drawn as a chain of binomials
  (cost per entry: that factor's latent width, not the count) — and then the
  factor. Each update is an exact data-augmentation step for Z_α, so the
  chain leaves p(Z | X) invariant, and each factor sees an allocation made
  with the factors updated before it.

For binary data under the Bernoulli–Poisson likelihood each sweep first
draws the latent count N of every one, zero-truncated Poisson given X̂
(zeros have N = 0), and allocates N: the same augmentation one level up,
so the chain still leaves p(Z | X) invariant.

All randomness comes from the ``rng`` passed in, and the kernels' sums do not
depend on the thread count, so a seed gives the same chain on any machine with
the same numpy.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine._kernels import TINY
from ._chains import ChainProblem, ChainSettings, drive_chain
from ._common import initial_factors
from ._gamma import log_gamma_density

__all__ = [
    "GibbsState", "GibbsInfo", "SWEEPS", "init", "step", "block_sweep", "sada_sweep",
    "latent_counts", "allocate", "conditional", "log_likelihood", "log_prior", "run_chain",
]


class GibbsState(NamedTuple):
    """The current draw of every factor (held factors as given)."""

    factors: tuple


class GibbsInfo(NamedTuple):
    """What one step reports: log p(X | Z) at the draw it returns."""

    log_likelihood: float


def init(rng, model, contractor, priors, given=None):
    """A first draw: free factors random around the data's scale (as for VB),
    held factors from ``given`` (``{position: array}``).

    Raises ``ValueError`` when the observed values are the counts (Poisson)
    but not whole: the sampler allocates counts token by token.
    """
    if contractor.likelihood.counts_observed:
        contractor.data.require_integer("Gibbs sampling")
    factors = initial_factors(rng, model, contractor, dict(given or {}), priors.free)
    return GibbsState(tuple(factors))


def latent_counts(rng, factors, contractor):
    """The latent Poisson counts N at the observed non-zeros: None when they
    are the data themselves (Poisson likelihood; no random numbers drawn),
    else a draw given the data and X̂ (zero-truncated Poisson at the ones of
    binary data, the jump count of a compound Poisson value;
    :mod:`sklearn_pltf.engine._likelihood`)."""
    likelihood = contractor.likelihood
    if likelihood.counts_observed:
        return None
    entries = contractor.nonzeros
    return likelihood.draw_counts(rng, entries.values, np.maximum(entries.xhat(factors), TINY))


def allocate(rng, state, contractor, free):
    """Draw the latent counts (:func:`latent_counts`) and their allocation S
    given every factor of ``state``; return the sums of S onto each factor in
    ``free``, ``{α: Σ_{v̄_α} S}``."""
    entries = contractor.nonzeros
    counts = latent_counts(rng, state.factors, contractor)
    n_tokens = entries.n_tokens if counts is None else int(counts.sum())
    return entries.allocation_sums(free, state.factors, rng.random(n_tokens), counts)


def conditional(alpha, factors, allocated, contractor, priors):
    """Shape and rate of the Gamma conditional of Z_α given S (through its sum
    ``allocated``) and the other ``factors``; element-wise independent."""
    return priors.shape[alpha] + allocated, priors.rate[alpha] + contractor.masked_delta(alpha, factors)


def block_sweep(rng, factors, contractor, priors, sampled):
    """Block Gibbs: one allocation S given every factor in ``factors`` (a list),
    then, for each α in ``sampled``, yield ``(α, shape, rate)`` of Z_α's
    conditional. The caller draws Z_α and stores it in ``factors[α]`` before
    asking for the next one."""
    allocated = allocate(rng, GibbsState(tuple(factors)), contractor, sampled)
    for alpha in sampled:
        yield (alpha, *conditional(alpha, factors, allocated[alpha], contractor, priors))


def sada_sweep(rng, factors, contractor, priors, sampled):
    """As :func:`block_sweep`, but each Z_α's conditional comes from a fresh
    allocation drawn through its margin on α (given the current ``factors``,
    the ones updated earlier in the sweep included)."""
    entries = contractor.nonzeros
    for alpha in sampled:
        counts = latent_counts(rng, factors, contractor)
        allocated = entries.marginal_allocation_sum(alpha, factors, rng, counts)
        yield (alpha, *conditional(alpha, factors, allocated, contractor, priors))


SWEEPS = {"gibbs": block_sweep, "sada": sada_sweep}


def step(rng, state, contractor, priors, sweep=block_sweep):
    """One sweep over every free factor with ``sweep`` (a member of ``SWEEPS``)."""
    factors = list(state.factors)
    for alpha, shape, rate in sweep(rng, factors, contractor, priors, priors.free):
        factors[alpha] = rng.standard_gamma(shape) / rate
    new = GibbsState(tuple(factors))
    return new, GibbsInfo(log_likelihood=log_likelihood(new, contractor))


def log_likelihood(state, contractor):
    """log p(X | Z) = Σ M [X log X̂ − X̂ − log Γ(X + 1)] for Poisson data, and
    Σ M [X log(e^{X̂} − 1) − X̂] for binary data (:mod:`sklearn_pltf.engine._likelihood`)."""
    # masked_total first: a dense contractor's X̂ of these factors serves it,
    # and data_loglik then uses that array for its terms.
    return (
        -contractor.masked_total(state.factors)
        + contractor.data_loglik(state.factors)
        + contractor.log_base_measure
    )


def log_prior(factors, priors):
    """log p(Z) = Σ over the free factors of their Gamma prior log densities."""
    return sum(log_gamma_density(factors[a], priors.shape[a], priors.rate[a]) for a in priors.free)


def run_chain(rng, model, contractor, priors, given, sweep, *, n_warmup, n_draws, thin=1,
              keep_draws=True, verbose=0, label="Gibbs chain"):
    """Run one chain of ``sweep`` (a member of :data:`SWEEPS`) from a random
    start (:func:`init`) with :func:`~sklearn_pltf.inference._chains.drive_chain`;
    ``given`` is ``{position: array}`` for the held factors. With ``verbose``,
    progress lines under ``label`` give the time left."""
    state = init(rng, model, contractor, priors, given)
    return drive_chain(rng, ChainProblem(
        state, lambda rng, state: step(rng, state, contractor, priors, sweep), priors.free,
        lambda state: log_prior(state.factors, priors)),
        ChainSettings(n_warmup, n_draws, thin, keep_draws, verbose, label))
