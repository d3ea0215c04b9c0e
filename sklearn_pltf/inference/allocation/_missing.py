"""The Bayesian Allocation Model with unobserved cells: the urn's tokens in
them, summed out of the evidence, and the urn's predictive at any cell.

With the cells M unobserved and O observed (T_O tokens), λ ~ Gamma(a, b)
and the tables θ integrated out,

.. math::

    p(X_O) = p(T_O) \\frac{T_O!}{\\prod_{c \\in O} X(c)!}
    \\sum_{U \\ge 0} w(U)\\, P(c_1, \\dots, c_{T_O}, \\underbrace{M, \\dots, M}_U),
    \\qquad w(U) = \\frac{\\Gamma(a + T_O + U)}{\\Gamma(a + T_O)\\, U!\\, (b + 1)^U},

where P is the urn's probability of the observed tokens in a fixed order
followed by U tokens anywhere in M (the tokens are exchangeable, so their
order does not matter, and w(U) counts the ways to interleave them and
carries the negative binomial prior of the total T_O + U). The sequential
Monte Carlo of :func:`.smc.run_smc` places the observed tokens and
then tokens in M one at a time (:func:`missing_phase`): its running product
of mean incremental weights is, after u tokens in M, an unbiased estimate
Ẑ(u) of the u-th probability, so Σ_u w(u) Ẑ(u) is unbiased for the sum up
to where it stops, once its terms have fallen out of reach.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp

from ...engine._data import physical_memory
from ._urn_kernels import SMC_MAX_TOKENS

__all__ = ["log_missing_weight", "cell_probabilities", "within_island", "MissingPhase",
           "missing_phase"]

#: The sum over the tokens in unobserved cells stops once the rest of it, a
#: geometric series at the terms' mean ratio over the last :data:`_RATIO_SPAN`
#: tokens, lies this many nats below the running sum in every island.
NEGLIGIBLE_TERM = 40.0
_RATIO_SPAN = 10


def log_missing_weight(concentration, rate, n_observed, n_missing):
    """log w(U) of the module's docstring, for ``n_missing`` = U (array-like)."""
    a, U = float(concentration) + n_observed, np.asarray(n_missing, dtype=np.float64)
    return gammaln(a + U) - gammaln(a) - gammaln(U + 1.0) - U * np.log1p(rate)


def cell_probabilities(counts, network, coords):
    """The urn's predictive probability of a next token at each cell,
    Σ_h Π_f (n_f(family) + α_f(family)) / (n_f(parents) + α_f(parents)),
    for every particle: ``counts`` (particles, L), ``coords`` (N, cells) ->
    (particles, cells). Given a particle's allocation it is the posterior
    mean of p(cell)."""
    slots = network.slot_offsets(np.asarray(coords).T)
    positions = slots[:, None, :] + network.latent_offsets[None]  # (cells, H, 2F)
    signs = np.where(np.arange(slots.shape[1]) % 2 == 0, 1.0, -1.0)
    out = np.empty((counts.shape[0], slots.shape[0]))
    # A few particles at a time bounds the (particles, cells, H, 2F) temporary.
    step = max(1, (1 << 22) // max(1, positions.size))
    for lo in range(0, counts.shape[0], step):
        values = np.log(counts[lo:lo + step].astype(np.float64) + network.alpha)
        logs = values[:, positions] @ signs
        out[lo:lo + step] = np.exp(logsumexp(logs, axis=2))
    return out


class MissingPhase:
    """What the phase keeps: per island, ``log_sum``, the log of
    Σ_u w(u) Ẑ(u) so far; per particle, its urn at its own number of tokens
    in M, ``n_missing``, drawn in proportion to the island's terms w(u) Ẑ(u)
    (a weighted reservoir over u, independently per particle), with its
    weight normalised within the island at that u. Self-normalised, the kept
    particles estimate the posterior, the mixture of the systems π_u at each
    u with weights w(u) Ẑ(u).
    """

    def __init__(self, state):
        self.log_sum = state.log_evidence.copy()  # u = 0: w(0) = 1
        self.counts = state.counts.copy()
        self.log_weights = within_island(state.log_weights, self.log_sum.size)
        self.n_missing = np.zeros(state.counts.shape[0], dtype=np.int64)

    def offer(self, rng, state, terms, u):
        """Add island terms ``terms`` (log w(u) Ẑ(u)) and keep each
        particle's state at u with probability term / running sum."""
        self.log_sum = np.logaddexp(self.log_sum, terms)
        size = state.counts.shape[0] // terms.size
        chance = np.repeat(np.exp(terms - self.log_sum), size)
        kept = rng.random(chance.size) < chance
        self.counts[kept] = state.counts[kept]
        self.log_weights[kept] = within_island(state.log_weights, terms.size)[kept]
        self.n_missing[kept] = u


def within_island(log_weights, n_islands):
    """Log weights normalised within each island (particles in island order)."""
    within = log_weights.reshape(n_islands, -1)
    return (within - logsumexp(within, axis=1, keepdims=True)).ravel()


def _token_cap(data, state):
    """At most this many tokens in M: many times the expected number under
    the urn's p_M of each island's first particle, for a fixed p_M
    negative binomial, (a + T_O) p_M / (b + 1 - p_M), and no more than the
    urns' int32 counts hold beside the observed tokens
    (:data:`._urn_kernels.SMC_MAX_TOKENS`)."""
    size = state.counts.shape[0] // state.log_evidence.size
    p_missing = cell_probabilities(state.counts[::size], data.network, data.missing).sum(axis=1)
    p_missing = float(np.clip(p_missing.mean(), 0.0, 1.0))
    expected = (data.concentration + data.total) * p_missing / (data.rate + 1.0 - p_missing)
    return int(min(5 * expected + 50 * np.sqrt(expected) + 100, SMC_MAX_TOKENS - data.total))


def missing_phase(rng, state, data, place_one, n_moves, progress_factory):
    """Place tokens in the unobserved cells ``data.missing`` after the
    observed ones, one at a time in every particle, until the terms of
    Σ_u w(u) Ẑ(u) are negligible (:data:`NEGLIGIBLE_TERM`) or a cap is
    reached. ``place_one(state, missing_slots)`` places one more token in
    every particle and returns the advanced state (the SMC's step).

    Returns
    -------
    kept : MissingPhase
    n_placed : int
        Tokens placed in M.
    gap : float
        The least distance over the islands, in nats, of the rest of the sum
        (:func:`_log_rest`) below the island's sum: above
        :data:`NEGLIGIBLE_TERM` when the sum converged; smaller, or -inf if
        the terms were not falling, when the cap stopped it first (it is then
        a lower estimate).
    """
    network = data.network
    missing_slots = np.ascontiguousarray(network.slot_offsets(data.missing.T))
    n_configs = network.n_configurations
    if missing_slots.shape[0] * n_configs >= np.iinfo(np.int32).max:
        raise ValueError("Too many unobserved cells x latent configurations for the urn's "
                         "int32 allocation records; use method='vb' or n_moves=0.")
    cap = _token_cap(data, state)
    n_observed = data.total
    memory = physical_memory()
    if n_moves and memory is not None and 4 * state.counts.shape[0] * cap > memory / 2:
        raise ValueError(
            f"The moves would record up to {cap} tokens in the missing entries per particle, "
            f"{4 * state.counts.shape[0] * cap / 2**30:.3g} GiB, more than half of this "
            "machine's memory. Use fewer particles, n_moves=0, or method='vb'.")
    if n_moves:
        state = state._replace(allocations=np.hstack(
            [state.allocations, np.zeros((state.counts.shape[0], cap), dtype=np.int32)]))
    kept = MissingPhase(state)
    progress = progress_factory(cap)
    recent = [state.log_evidence.copy()]  # the terms of the last _RATIO_SPAN + 1 tokens
    u, gap = 0, -np.inf  # no room left for a token (cap 0): the sum is cut at once
    for u in range(1, cap + 1):
        state = place_one(state, missing_slots)
        terms = state.log_evidence + log_missing_weight(data.concentration, data.rate,
                                                        n_observed, u)
        kept.offer(rng, state, terms, u)
        if progress is not None:
            progress()
        recent = recent[-_RATIO_SPAN:] + [terms]
        gap = float(np.min(kept.log_sum - _log_rest(recent)))
        if gap > NEGLIGIBLE_TERM:
            break
    return kept, u, gap


def _log_rest(recent):
    """Per island, the log of the terms still to come if they fall on as the
    last ones did: Σ_{k≥1} t ρ^k = t ρ / (1 − ρ), t the last term and log ρ
    the mean log ratio over ``recent`` (a list of per-island terms, oldest
    first); +inf where they are not falling."""
    log_ratio = (recent[-1] - recent[0]) / (len(recent) - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rest = recent[-1] + log_ratio - np.log(-np.expm1(np.minimum(log_ratio, 0.0)))
    return np.where(log_ratio < 0.0, rest, np.inf)
