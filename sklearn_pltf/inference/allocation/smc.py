"""The Bayesian Allocation Model (BAM) for count tensors: Pólya-urn sequential
Monte Carlo (its variational Bayes is :mod:`.vb`).

The model (Cemgil, Kurutmaz, Yıldırım, Barsbey & Şimşekli, "Bayesian
Allocation Model: marginal likelihood-based model selection for count
tensors", IEEE JSTSP 2020): ``T ~ Poisson(λ)`` tokens, ``λ ~ Gamma(a, b)``,
and each token draws its indices, observed and latent, from a Bayesian
network of Dirichlet tables ``θ_f(children | parents)`` that a model string
describes (:mod:`._network`; CP, ``"ir,jr,kr->ijk"``, is
``θ0(r) θ1(i | r) θ2(j | r) θ3(k | r)``); ``X`` counts the tokens per
observed cell. With ``λ, θ`` integrated out the tokens form a Pólya urn:

.. math::

    p(X) = p(T) \\frac{T!}{\\prod_i X(i)!} \\prod_{k=1}^T p(c_k \\mid c_{<k}),

for the cells ``c_k`` of the tokens in any order, with ``p(T)`` negative
binomial. Each predictive term is a sum over the allocations of the earlier
tokens, which sequential importance sampling with the urn proposal estimates
without bias (:func:`run_smc`); its cost is ``T x particles x H x F`` (H
latent configurations, F tables), whatever the size of the tensor. The
mean-field bound (:func:`.vb.run_vb`) costs ``non-zeros x H x F`` per iteration
instead, the choice for dense data with large counts.

Each algorithm has the package's anatomy: a state, an ``init`` and a pure
``step``; :func:`run_smc` and :func:`.vb.run_vb` drive them.
"""

from __future__ import annotations

import string
from dataclasses import replace
from typing import NamedTuple

import numpy as np
from scipy import sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaln, logsumexp

from ...engine import _kernels
from . import _urn_kernels
from ...engine._contract import EntryList
from ...engine._progress import progress_or_none
from ...engine._threads import blas_on_one_thread
from ...engine.model import Model, cp_model_string
from ._missing import cell_probabilities, missing_phase, within_island
from ._network import allocation_network
from ._urn_kernels import SMC_MAX_TOKENS

__all__ = [
    "AllocationData", "allocation_data", "exact_total", "SMC_MAX_TOKENS", "require_smc_tokens",
    "log_total_prior",
    "SMCState", "SMCResult", "smc_init", "token_order", "smc_step", "run_smc",
    "particle_weights", "ParticleSample", "resample_particles", "particle_factor_means",
    "particle_dirichlet_parameters", "particle_predictive_means", "total_posterior", "draw_factors",
    "sample_factor_layout", "as_sample_factor", "sample_normaliser", "fold_in", "sample_bam",
]

# Tokens per kernel call: bounds the pre-drawn uniforms to about 8 MB.
_UNIFORMS_PER_CALL = 1 << 20


def exact_total(counts):
    """Σ ``counts`` (non-negative int64) as a Python int, exact however
    large: each count is at most 2^62, so their int64 sum wraps from a
    handful of them on. The sum is taken in 32-bit halves, whose int64 sums
    cannot wrap below 2^31 entries (a Python sum beyond)."""
    counts = np.asarray(counts, dtype=np.int64).ravel()
    if counts.size >= 2**31:
        return int(np.sum(counts, dtype=object))
    high, low = counts >> 32, counts & 0xFFFFFFFF
    return (int(high.sum()) << 32) + int(low.sum())


class AllocationData(NamedTuple):
    """Counts and priors of one BAM problem.

    ``coords`` (N x nnz) and ``counts`` (nnz,) list the observed non-zero
    cells and ``missing`` (N x n_missing) the unobserved ones; ``network``
    is the model's tables and their layout
    (:class:`._network.AllocationNetwork`); ``concentration`` is
    λ's Gamma shape ``a`` and ``rate`` its rate ``b``.
    """

    shape: tuple
    coords: np.ndarray
    counts: np.ndarray
    network: object
    concentration: float
    rate: float
    missing: np.ndarray

    @property
    def total(self):
        """T, the observed tokens (a Python int: :func:`exact_total`)."""
        return exact_total(self.counts)


def allocation_data(coords, counts, shape, n_components, concentration=1.0, rate=None, *,
                    model=None, dirichlet_prior=None, missing=None):
    """An :class:`AllocationData`.

    ``model`` is a model string (None: CP over every axis) whose latent
    indices ``n_components`` sizes (an int for all, or a dict);
    ``dirichlet_prior`` optionally gives tables' parameters
    (:func:`._network.allocation_network`). ``rate=None`` is
    ``a / T``, which puts the prior mean of λ at the observed total.
    ``missing`` (N x n_missing) lists unobserved cells (None: none).
    """
    counts = np.asarray(counts)
    if counts.size and (np.any(counts < 0) or np.any(counts != np.round(counts))):
        raise ValueError("The Bayesian Allocation Model needs non-negative integer counts.")
    keep = counts > 0
    coords = np.asarray(coords, dtype=np.int64)[:, keep]
    counts = counts[keep].astype(np.int64)
    total = exact_total(counts)
    if rate is None:
        if total == 0:
            raise ValueError("The data hold no counts; pass rate= (the default a / T needs T > 0).")
        rate = concentration / total
    shape = tuple(int(s) for s in shape)
    bound = Model.parse(cp_model_string(len(shape)) if model is None else model).bind(
        shape, n_components)
    network = allocation_network(bound, float(concentration), dirichlet_prior)
    missing = (np.empty((len(shape), 0), dtype=np.int64) if missing is None
               else np.asarray(missing, dtype=np.int64).reshape(len(shape), -1))
    return AllocationData(shape, coords, counts, network, float(concentration), float(rate),
                          missing)


def log_total_prior(data):
    """log p(T): λ ~ Gamma(a, b) mixed Poisson, a negative binomial (T the
    observed tokens)."""
    a, b, T = data.concentration, data.rate, data.total
    return float(gammaln(a + T) - gammaln(a) - gammaln(T + 1.0)
                 + a * np.log(b / (b + 1.0)) - T * np.log1p(b))


def _log_multinomial(data):
    """log T! / Π_i X(i)!: the number of token orders giving X."""
    return float(gammaln(data.total + 1.0) - gammaln(data.counts + 1.0).sum())


# --------------------------------------------------------------------- SMC
class SMCState(NamedTuple):
    """A particle system part-way through the tokens.

    ``counts[p]`` is particle p's urn, laid out by the network;
    ``log_weights`` are the particles' unnormalised log weights within their
    island; ``log_evidence[k]`` is island k's running log Π p̂(c_k | c_<k);
    ``allocations[p, t]`` is the configuration of token t in particle p
    (kept only for resample-move; (particles, 0) otherwise).
    """

    counts: np.ndarray
    log_weights: np.ndarray
    log_evidence: np.ndarray
    n_resampled: np.ndarray
    allocations: np.ndarray
    n_done: int


class SMCResult(NamedTuple):
    """The SMC estimate of log p(X) and the final particle system (with
    unobserved cells, each particle at its kept number of tokens in them,
    ``n_missing``: :class:`._missing.MissingPhase`)."""

    log_evidence: float
    standard_error: float
    island_log_evidence: np.ndarray  # per island, the constants included
    n_resampled: int  # resampling events, summed over islands
    state: SMCState
    order: np.ndarray  # the tokens' cells in the order placed, T x N
    n_missing: np.ndarray  # per particle, its kept number of tokens in unobserved cells
    n_missing_placed: int  # tokens placed in unobserved cells
    missing_gap: float  # nats of the rest of the sum over them below it (inf: none)


def require_smc_tokens(data, who="The SMC"):
    """Raise unless the SMC can place the data's tokens: at most
    :data:`SMC_MAX_TOKENS` (its urns' int32 counts)."""
    if data.total > SMC_MAX_TOKENS:
        raise ValueError(
            f"{who} places the data's tokens one by one, {data.total:.4g} of them (the sum of "
            f"the counts), in urns of int32 counts, and runs at most {SMC_MAX_TOKENS} "
            f"(2^31 - 1) of them; use method='vb' (its bound needs only the totals), or scale "
            f"the counts down.")


def smc_init(data, n_particles, n_islands, n_moves=0):
    """Empty urns, equal weights."""
    if n_particles % n_islands:
        raise ValueError(f"n_particles ({n_particles}) must be a multiple of n_islands ({n_islands}).")
    columns = data.total if n_moves else 0
    return SMCState(
        np.zeros((n_particles, data.network.n_cells), dtype=np.int32),
        np.zeros(n_particles), np.zeros(n_islands), np.zeros(n_islands, dtype=np.int64),
        np.zeros((n_particles, columns), dtype=np.int32), 0,
    )


def token_order(rng, data):
    """The tokens' cells in a uniformly random order (drawn without
    replacement from the observed counts), T x N."""
    cells = np.repeat(data.coords.T, data.counts, axis=0)
    return cells[rng.permutation(cells.shape[0])]


def smc_step(rng, state, data, slots, n_tokens, resample_threshold, n_moves=0,
             missing_slots=None):
    """Allocate the next ``n_tokens`` tokens in every particle, reweighting,
    resampling and (``n_moves`` > 0) rejuvenating as they come
    (:func:`._urn_kernels.urn_smc`); ``slots`` are the observed tokens'
    segment offsets in the order placed, and tokens past them lie anywhere
    in the unobserved cells whose offsets are ``missing_slots``.

    Unlike the package's other steps this one updates ``state``'s arrays in
    place (and returns the advanced state): copying them would cost
    ``n_particles x L`` per call, a term that grows with the tensor's size,
    which the urn's cost should not.
    """
    n_particles = state.counts.shape[0]
    uniforms = rng.random((n_tokens, n_particles))
    resample_uniforms = rng.random((n_tokens, state.log_evidence.size))
    move_seed = np.uint64(rng.integers(2**63)) if n_moves else np.uint64(0)
    network = data.network
    if missing_slots is None:
        missing_slots = np.empty((0, slots.shape[1]), dtype=slots.dtype)
    _urn_kernels.urn_smc(
        slots, missing_slots, state.n_done, state.n_done + n_tokens, network.latent_offsets,
        network.alpha, uniforms, resample_uniforms, float(resample_threshold), state.counts,
        state.log_weights, state.log_evidence, state.n_resampled, state.allocations,
        int(n_moves), move_seed,
    )
    return state._replace(n_done=state.n_done + n_tokens)


def run_smc(rng, data, *, n_particles=500, n_islands=10, resample_threshold=0.5, n_moves=0,
            verbose=0):
    """Estimate log p(X) by sequential importance sampling over the tokens
    with the urn proposal and adaptive resampling, optionally with
    resample-move rejuvenation (``n_moves`` Gibbs moves per particle after
    each resampling).

    The particles form ``n_islands`` independent systems (Vergé, Dubarry, Del
    Moral & Moulines 2015) sharing one random token order. Each island's
    product of mean incremental weights, Ẑ_k, is an unbiased estimate of
    p(X) for any fixed order, so their mean is too, and the spread of the
    Ẑ_k gives the standard error (by the delta method on the log scale).
    With ``verbose``, progress lines count the tokens placed and give the
    time left.

    With unobserved cells (``data.missing``), each island then places tokens
    in them one at a time and sums their terms
    (:func:`._missing.missing_phase`).

    The tokens are at most :data:`SMC_MAX_TOKENS` (:func:`require_smc_tokens`).

    Returns
    -------
    SMCResult
    """
    require_smc_tokens(data)
    order = token_order(rng, data)
    slots = np.ascontiguousarray(data.network.slot_offsets(order))
    state = smc_init(data, n_particles, n_islands, n_moves)
    chunk = max(1, _UNIFORMS_PER_CALL // n_particles)
    progress = progress_or_none(verbose, "SMC", order.shape[0], unit="tokens")
    for start in range(0, order.shape[0], chunk):
        n_tokens = min(chunk, order.shape[0] - start)
        state = smc_step(rng, state, data, slots, n_tokens, resample_threshold, n_moves)
        if progress is not None:
            progress(n_tokens)
    n_missing, n_placed, gap = np.zeros(n_particles, dtype=np.int64), 0, np.inf
    if data.missing.shape[1]:
        def place_one(current, missing_slots):
            return smc_step(rng, current, data, slots, 1, resample_threshold, n_moves,
                            missing_slots)

        kept, n_placed, gap = missing_phase(
            rng, state, data, place_one, n_moves,
            lambda cap: progress_or_none(verbose, "SMC, tokens in the unobserved cells (at most)",
                                         cap, unit="tokens"))
        state = state._replace(counts=kept.counts, log_weights=kept.log_weights,
                               log_evidence=kept.log_sum)
        n_missing = kept.n_missing
    constant = log_total_prior(data) + _log_multinomial(data)
    islands = state.log_evidence + constant
    log_evidence = float(logsumexp(islands) - np.log(n_islands))
    relative = np.exp(islands - log_evidence)
    error = float(relative.std(ddof=1) / np.sqrt(n_islands)) if n_islands > 1 else np.inf
    return SMCResult(log_evidence, error, islands, int(state.n_resampled.sum()), state, order,
                     n_missing, n_placed, gap)


def particle_weights(result):
    """Normalised weight of every particle: its island's share of the
    evidence times its weight within the island."""
    state = result.state
    n_islands = state.log_evidence.size
    within = within_island(state.log_weights, n_islands).reshape(n_islands, -1)
    island = result.island_log_evidence - logsumexp(result.island_log_evidence)
    return np.exp(within + island[:, None]).ravel()


class ParticleSample(NamedTuple):
    """Equally weighted particles resampled from the final system, each
    distinct one kept once: their urns ``counts`` (distinct, L), how many
    of the resampled particles each stands for, ``multiplicity``, and per
    latent index (in the model's latent order) ``own_labels`` (distinct,
    size): the particle's label matched to each of the reference
    particle's labels; ``n_missing`` (distinct,) the tokens in unobserved
    cells that its urn holds."""

    counts: np.ndarray
    multiplicity: np.ndarray
    own_labels: tuple
    n_missing: np.ndarray


def _label_profiles(network, counts, index):
    """Per particle, the counts of latent ``index``'s labels against every
    configuration of the observed indices they meet in a table, the other
    latent indices summed out: (particles, columns, size)."""
    blocks = []
    for f, table in enumerate(network.tables):
        if index not in table.family:
            continue
        segment = network.segment(counts, f)
        other_latent = tuple(1 + a for a, c in enumerate(table.family)
                             if c != index and c not in network.model.output)
        segment = segment.sum(axis=other_latent)
        kept = [c for c in table.family if c == index or c in network.model.output]
        segment = np.moveaxis(segment, 1 + kept.index(index), -1)
        blocks.append(segment.reshape(segment.shape[0], -1, segment.shape[-1]))
    return np.concatenate(blocks, axis=1)


def resample_particles(rng, result, network, n_summary=1000):
    """The weighted particle system thinned to ``n_summary`` equally weighted
    particles by systematic resampling (its Monte Carlo error is that of
    ``n_summary`` posterior draws); copies of one particle are kept once,
    with their number. Each latent index's labels are arbitrary in each
    particle, so every one is matched to the heaviest particle's (Hungarian
    assignment maximising Σ_c s_p(r, c) s_ref(r', c), the co-occurrence of
    the labels' tokens over the observed indices they meet,
    :func:`_label_profiles`)."""
    # These products are small; BLAS threads started right after the urn
    # kernel would compete with numba's for the cores.
    with blas_on_one_thread():
        state = result.state
        weights = particle_weights(result)
        n_summary = min(n_summary, weights.size)
        positions = (rng.random() + np.arange(n_summary)) / n_summary
        chosen = np.minimum(np.searchsorted(np.cumsum(weights), positions * weights.sum()),
                            weights.size - 1)
        distinct, multiplicity = np.unique(chosen, return_counts=True)
        counts = state.counts[distinct]
        reference = state.counts[np.argmax(weights)][None].astype(np.float32)
        as_float = counts.astype(np.float32)
        own_labels = []
        for index in network.model.latent:
            mine = _label_profiles(network, as_float, index)
            theirs = _label_profiles(network, reference, index)[0]
            similarity = np.matmul(mine.transpose(0, 2, 1), theirs)
            labels = np.empty(similarity.shape[:2], dtype=np.int64)
            for p in range(labels.shape[0]):
                rows, cols = linear_sum_assignment(similarity[p], maximize=True)
                labels[p, cols] = rows
            own_labels.append(labels)
        return ParticleSample(counts, multiplicity, tuple(own_labels), result.n_missing[distinct])


def _matched(network, table, array, own_labels):
    """``array`` (particles, *table family) with each latent axis reordered
    to the reference's labels."""
    for axis, c in enumerate(table.family):
        if c in network.model.output:
            continue
        labels = own_labels[network.model.latent.index(c)]
        shape = [labels.shape[0]] + [1] * len(table.family)
        shape[1 + axis] = labels.shape[1]
        array = np.take_along_axis(array, labels.reshape(shape), axis=1 + axis)
    return array


def _normalised(table, values):
    """``values`` (draws, *family) divided by their sums over the table's
    children: Dirichlet parameters give the mean of θ_f, Gamma draws a
    draw of θ_f."""
    return values / values.sum(axis=tuple(1 + a for a in table.child_axes), keepdims=True)


def _written_factors(network, tables, lam):
    """The written factors from per-table values (each (draws, *family)):
    the carrier times λ (per draw) and the implicit root, so that the model
    string reconstructs ``E[X] = λ p(observed cell)``."""
    factors = [t for t, table in zip(tables, network.tables) if table.position is not None]
    carrier = network.tables[network.carrier]
    scaled = factors[network.carrier] * np.reshape(lam, (-1,) + (1,) * len(carrier.family))
    root = network.implicit_root
    if root is not None:
        draw = next(c for c in string.ascii_letters if c not in network.model.indices)
        carrier_spec, root_spec = draw + carrier.family, draw + root.family
        scaled = np.einsum(f"{carrier_spec},{root_spec}->{carrier_spec}", scaled, tables[-1])
    factors[network.carrier] = scaled
    return factors


def particle_factor_means(sample, network, total_posterior):
    """Posterior means of the written factors from resampled particles
    (:func:`resample_particles`), labels matched to the reference's.

    Given a particle's allocation, the tables, λ and the implicit root are
    independent, so the mean of their product is the product of their
    Gamma and Dirichlet posterior means.

    Returns
    -------
    factors : list of ndarray
        One per written factor, in its index order: ``E[θ_f]``, the carrier
        times ``E[λ]`` and the implicit root's ``E[θ0]`` (for CP,
        ``factors[0]`` holds λθ0θ1), so the model string reconstructs
        ``E[X]``.
    """
    with blas_on_one_thread():
        means = [_normalised(table, parameters) for table, parameters in
                 zip(network.tables, particle_dirichlet_parameters(sample, network))]
        share, lam = _shares_and_lambda(sample, total_posterior)
        return [np.tensordot(share, f, axes=1) for f in _written_factors(network, means, lam)]


def _shares_and_lambda(sample, total_posterior):
    """Each distinct particle's share of the resampled ones and its E[λ]."""
    shape, rate = total_posterior
    lam = np.broadcast_to(np.asarray(shape, dtype=np.float64) / rate, sample.multiplicity.shape)
    return sample.multiplicity / sample.multiplicity.sum(), lam


def particle_dirichlet_parameters(sample, network):
    """Per table, each distinct particle's Dirichlet parameters α_f + n_f
    given its allocation (particles, *family), labels matched to the
    reference's (the posterior of the tables given an allocation)."""
    parameters = sample.counts + network.alpha
    return [_matched(network, table, network.segment(parameters, f), sample.own_labels)
            for f, table in enumerate(network.tables)]


def particle_predictive_means(sample, network, total_posterior, coords):
    """The posterior predictive mean E[X(c) | X] at cells ``coords`` (N,
    cells) from resampled particles: per particle, E[λ] times the urn's
    predictive probability of the cell (:func:`._missing.cell_probabilities`),
    exact given its allocation, averaged over the particles (no labels
    involved)."""
    share, lam = _shares_and_lambda(sample, total_posterior)
    return (share * lam) @ cell_probabilities(sample.counts, network, coords)


def total_posterior(data, n_missing=0):
    """Shape and rate of λ's Gamma posterior given an allocation that holds
    ``n_missing`` tokens in unobserved cells (per particle, or 0),
    (a + T + n_missing, b + 1)."""
    return data.concentration + data.total + np.asarray(n_missing), data.rate + 1.0


def draw_factors(rng, parameters, network, total_posterior):
    """Posterior draws of the written factors, one per row of every table's
    Dirichlet parameters ``parameters`` (draws, *family each): λ ~
    Gamma(``total_posterior``) and each θ_f(·, parents) ~ Dir, combined as
    :func:`particle_factor_means` combines the means."""
    n_draws = parameters[0].shape[0]
    shape, rate = total_posterior
    lam = rng.standard_gamma(np.broadcast_to(shape, n_draws)) / rate
    tables = []
    for table, params in zip(network.tables, parameters):
        tables.append(_normalised(table, rng.standard_gamma(params)))
    return _written_factors(network, tables, lam)


# ---------------------------------------------------------------------- VB
def sample_factor_layout(model):
    """The sample factor's position, its sample axis and its latent indices
    (in its order): new samples' rows are ``W`` (n_samples, S), S the
    number of configurations of those indices."""
    alpha = model.sample_factor()
    family = model.factors[alpha]
    return alpha, family.index(model.output[0]), family.replace(model.output[0], "")


def as_sample_factor(W, model):
    """Rows ``W`` (n_samples, S) laid out as the sample factor."""
    alpha, axis, latent = sample_factor_layout(model)
    shape = tuple(model.sizes[c] for c in latent)
    return np.moveaxis(np.reshape(W, (W.shape[0],) + shape), 0, axis)


def sample_normaliser(factors, model):
    """ν(s) = Σ_e G(s, e): the expected tokens in all of one sample's cells
    per unit of its row at the sample factor's latent configuration s (1 in
    CP, whose other factors are distributions)."""
    alpha, _, latent = sample_factor_layout(model)
    rest = [(f, family) for a, (f, family) in enumerate(zip(factors, model.factors)) if a != alpha]
    return np.einsum(",".join(family for _, family in rest) + "->" + latent,
                     *(f for f, _ in rest)).reshape(-1)


def _configuration_terms(coords, n_samples, factors, model):
    """G(s, e) at the listed cells ``coords`` (N, cells) of new samples: the
    model's value with the sample factor's row one-hot at configuration s,
    (cells, S)."""
    alpha, axis, latent = sample_factor_layout(model)
    sample_model = replace(model, sizes={**model.sizes, model.output[0]: n_samples})
    n_configs = int(np.prod([model.sizes[c] for c in latent], dtype=np.int64))
    entries = EntryList(sample_model, coords)
    terms = np.empty((coords.shape[1], n_configs))
    for s in range(n_configs):
        unit = np.zeros((n_samples, n_configs))
        unit[:, s] = 1.0
        held = [as_sample_factor(unit, sample_model) if a == alpha else f
                for a, f in enumerate(factors)]
        terms[:, s] = entries.xhat(held)
    return terms


def fold_in(coords, counts, n_samples, factors, model, *, missing=None, max_iter=1000,
            tol=1e-10):
    """Sample-factor rows of new samples, every other factor held fixed.

    With the other factors held, sample i's counts are Poisson with means
    X̂(i, ·) = Σ_s W(i, s) G(s, ·), s the sample factor's latent
    configurations. The likelihood of its observed entries is maximised at
    the fixed point of

    .. math::

        W(i, s) \\leftarrow \\frac{1}{\\nu_i(s)} \\sum_{e \\in i} X(e)
        \\frac{W(i, s) G(s, e)}{\\hat X(e)}, \\qquad \\nu_i(s) = \\sum_{e \\in i,
        \\text{observed}} G(s, e),

    iterated here from the fitted factor's shares of the tokens scaled to
    the sample's total; ``W(i, s) ν_i(s)``, the expected number of the
    sample's tokens in its observed entries in configuration s, then sums to
    its total count. Each sample stops on its own, so its rows do not depend
    on the other samples.

    Parameters
    ----------
    coords : ndarray of shape (N, nnz)
        Non-zero cells, axis 0 the sample.
    counts : ndarray of shape (nnz,)
    factors : list of ndarray
        The fitted written factors (:func:`particle_factor_means`).
    model : Model
        The bound model; it must have a sample factor
        (:meth:`~sklearn_pltf.engine.model.Model.sample_factor`).
    missing : ndarray of shape (N, n_missing) or None, default=None
        The samples' missing entries.

    Returns
    -------
    W : ndarray of shape (n_samples, S)
    normaliser : ndarray of shape (n_samples, S)
        ν_i(s).
    """
    alpha, axis, _ = sample_factor_layout(model)
    others = _configuration_terms(coords, n_samples, factors, model)
    n_configs = others.shape[1]
    normaliser = np.tile(sample_normaliser(factors, model), (n_samples, 1))
    if missing is not None and missing.shape[1]:
        unobserved = _configuration_terms(missing, n_samples, factors, model)
        for s in range(n_configs):
            normaliser[:, s] -= np.bincount(missing[0], weights=unobserved[:, s],
                                            minlength=n_samples)
        normaliser = np.maximum(normaliser, _kernels.TINY)
    rows = coords[0]
    fitted = np.moveaxis(factors[alpha], axis, 0).reshape(-1, n_configs).sum(axis=0)
    fitted = fitted * normaliser
    totals = np.bincount(rows, weights=counts, minlength=n_samples)
    weights = totals[:, None] * (fitted / fitted.sum(axis=1, keepdims=True)) / normaliser
    selector = sp.csr_matrix((counts.astype(np.float64), (rows, np.arange(counts.size))),
                             shape=(n_samples, counts.size))
    active = np.ones(n_samples, dtype=bool)
    for _ in range(max_iter):
        terms = weights[rows] * others
        xhat = terms.sum(axis=1, keepdims=True)
        new = (selector @ (terms / np.maximum(xhat, _kernels.TINY))) / normaliser
        change = np.abs(new - weights).max(axis=1)
        weights[active] = new[active]
        active &= change > tol * np.maximum(1.0, totals)
        if not active.any():
            break
    return weights, normaliser


# --------------------------------------------------------------- sampling
def sample_bam(rng, shape, n_components, *, concentration=1.0, n_tokens=None, rate=1.0,
               model=None, dirichlet_prior=None):
    """Draw a count tensor from the BAM: λ (unless ``n_tokens`` fixes T), the
    tables, then the tokens' cells.

    With ``model=None`` (CP) the parameters are ``(T, θ0, [θn (R, I_n)])``;
    with a model string (sized by ``n_components``, an int or a dict) they
    are ``(T, tables)``, one array per table of
    :func:`._network.allocation_network` in its family's shape,
    and the cells are drawn from the dense joint over the observed indices
    (small tensors)."""
    a = float(concentration)
    T = int(rng.poisson(rng.gamma(a, 1.0 / rate))) if n_tokens is None else int(n_tokens)
    if model is not None:
        bound = Model.parse(model).bind(tuple(shape), n_components)
        network = allocation_network(bound, a, dirichlet_prior)
        tables = []
        for table in network.tables:
            theta = rng.standard_gamma(table.alpha)
            tables.append(theta / theta.sum(axis=table.child_axes, keepdims=True))
        joint = np.einsum(",".join(t.family for t in network.tables) + "->" + bound.output,
                          *tables)
        X = rng.multinomial(T, joint.ravel() / joint.sum()).reshape(joint.shape)
        return X.astype(np.int64), (T, tables)
    R = int(n_components)
    theta0 = rng.dirichlet(np.full(R, a / R))
    thetas = [rng.dirichlet(np.full(size, a / (R * size)), size=R) for size in shape]
    per_component = rng.multinomial(T, theta0)
    X = np.zeros(shape, dtype=np.int64)
    for r in range(R):
        cells = tuple(rng.choice(size, p=theta[r], size=per_component[r])
                      for size, theta in zip(shape, thetas))
        np.add.at(X, cells, 1)
    return X, (T, theta0, thetas)
