"""The Bayesian Allocation Model (BAM) for count tensors: Pólya-urn sequential
Monte Carlo and variational Bayes.

The model (Cemgil, Kurutmaz, Yıldırım, Barsbey & Şimşekli, "Bayesian
Allocation Model: marginal likelihood-based model selection for count
tensors", IEEE JSTSP 2020), CP (naive Bayes) topology, ``R`` components, one
total concentration ``a`` split uniformly:

.. math::

    \\lambda \\sim \\mathcal G(a, b), \\quad T \\mid \\lambda \\sim \\mathcal{PO}(\\lambda),
    \\quad \\theta_0 \\sim \\mathcal D(a/R, \\dots), \\quad
    \\theta_n(r, :) \\sim \\mathcal D(a/(R I_n), \\dots),

and each of the ``T`` tokens draws a component ``r ~ θ0`` and, given it, an
index ``i_n ~ θn(r, :)`` in every mode; ``X`` counts the tokens per cell.
With ``λ, θ`` integrated out the tokens form a Pólya urn:

.. math::

    p(X) = p(T) \\frac{T!}{\\prod_i X(i)!} \\prod_{k=1}^T p(c_k \\mid c_{<k}),

for the cells ``c_k`` of the tokens in any order, with ``p(T)`` negative
binomial. Each predictive term is a sum over the allocations of the earlier
tokens, which sequential importance sampling with the urn proposal estimates
without bias (:func:`run_smc`); its cost is ``T x particles x R x N``,
whatever the size of the tensor. The mean-field bound (:func:`run_vb`) costs
``non-zeros x R x N`` per iteration instead, the choice for dense data with
large counts.

Each algorithm has the package's anatomy: a state, an ``init`` and a pure
``step``; :func:`run_smc` and :func:`run_vb` drive them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.special import digamma, gammaln, logsumexp
from threadpoolctl import threadpool_limits

from .. import _kernels
from .._progress import progress_or_none

__all__ = [
    "AllocationData", "allocation_data", "log_total_prior",
    "SMCState", "SMCResult", "smc_init", "token_order", "smc_step", "run_smc",
    "particle_weights", "ParticleSample", "resample_particles", "particle_factor_means",
    "particle_dirichlet_parameters", "total_posterior", "draw_factors",
    "VBState", "VBResult", "vb_init", "vb_step", "run_vb", "vb_factor_means",
    "fold_in", "sample_bam",
]

# Tokens per kernel call: bounds the pre-drawn uniforms to about 8 MB.
_UNIFORMS_PER_CALL = 1 << 20


class AllocationData(NamedTuple):
    """Counts and priors of one BAM problem.

    ``coords`` (N x nnz) and ``counts`` (nnz,) list the non-zero cells;
    ``concentration`` is ``a`` and ``rate`` is ``b``.
    """

    shape: tuple
    coords: np.ndarray
    counts: np.ndarray
    n_components: int
    concentration: float
    rate: float

    @property
    def total(self):
        return int(self.counts.sum())

    @property
    def component_alpha(self):
        """a / R: each entry of θ0's Dirichlet parameter, and θn(r, :)'s total."""
        return self.concentration / self.n_components

    @property
    def cell_alpha(self):
        """a / (R I_n) per mode: each entry of θn(r, :)'s Dirichlet parameter."""
        return self.component_alpha / np.asarray(self.shape, dtype=np.float64)

    @property
    def offsets(self):
        """Where each mode's columns start in a particle's stacked table."""
        return np.concatenate([[0], np.cumsum(self.shape)[:-1]]).astype(np.int64)


def allocation_data(coords, counts, shape, n_components, concentration=1.0, rate=None):
    """An :class:`AllocationData`; ``rate=None`` is ``a / T``, which puts the
    prior mean of λ at the observed total."""
    counts = np.asarray(counts)
    if counts.size and (np.any(counts < 0) or np.any(counts != np.round(counts))):
        raise ValueError("The Bayesian Allocation Model needs non-negative integer counts.")
    keep = counts > 0
    coords = np.asarray(coords, dtype=np.int64)[:, keep]
    counts = counts[keep].astype(np.int64)
    total = int(counts.sum())
    if rate is None:
        if total == 0:
            raise ValueError("The data hold no counts; pass rate= (the default a / T needs T > 0).")
        rate = concentration / total
    return AllocationData(tuple(int(s) for s in shape), coords, counts, int(n_components),
                          float(concentration), float(rate))


def log_total_prior(data):
    """log p(T): λ ~ Gamma(a, b) mixed Poisson, a negative binomial."""
    a, b, T = data.concentration, data.rate, data.total
    return float(gammaln(a + T) - gammaln(a) - gammaln(T + 1.0)
                 + a * np.log(b / (b + 1.0)) - T * np.log1p(b))


def _log_multinomial(data):
    """log T! / Π_i X(i)!: the number of token orders giving X."""
    return float(gammaln(data.total + 1.0) - gammaln(data.counts + 1.0).sum())


# --------------------------------------------------------------------- SMC
class SMCState(NamedTuple):
    """A particle system part-way through the tokens.

    ``totals[p, r]`` tokens of particle p are in component r;
    ``tables[p, offset_n + j, r]`` of them have index j in mode n.
    ``log_weights`` are the particles' unnormalised log weights within their
    island; ``log_evidence[k]`` is island k's running log Π p̂(c_k | c_<k).
    """

    totals: np.ndarray
    tables: np.ndarray
    log_weights: np.ndarray
    log_evidence: np.ndarray
    n_resampled: np.ndarray
    n_done: int


class SMCResult(NamedTuple):
    """The SMC estimate of log p(X) and the final particle system."""

    log_evidence: float
    standard_error: float
    island_log_evidence: np.ndarray  # per island, the constants included
    n_resampled: int  # resampling events, summed over islands
    state: SMCState
    order: np.ndarray  # the token order (cells, T x N, offset columns)


def smc_init(data, n_particles, n_islands):
    """Empty urns, equal weights."""
    if n_particles % n_islands:
        raise ValueError(f"n_particles ({n_particles}) must be a multiple of n_islands ({n_islands}).")
    columns = int(sum(data.shape))
    return SMCState(
        np.zeros((n_particles, data.n_components), dtype=np.int32),
        np.zeros((n_particles, columns, data.n_components), dtype=np.int32),
        np.zeros(n_particles), np.zeros(n_islands), np.zeros(n_islands, dtype=np.int64), 0,
    )


def token_order(rng, data):
    """The tokens' cells in a uniformly random order (drawn without
    replacement from the observed counts), as stacked-table columns, T x N."""
    cells = np.repeat(data.coords.T + data.offsets, data.counts, axis=0)
    return cells[rng.permutation(cells.shape[0])]


def smc_step(rng, state, data, cells, resample_threshold):
    """Allocate the tokens ``cells`` (the next ones in the order) in every
    particle, reweighting and resampling as they come
    (:func:`sklearn_pltf._kernels.urn_smc`).

    Unlike the package's other steps this one updates ``state``'s arrays in
    place (and returns the advanced state): copying them would cost
    ``n_particles x R x Σ I_n`` per call, a term that grows with the tensor's
    size, which the urn's cost should not.
    """
    n_particles = state.totals.shape[0]
    uniforms = rng.random((cells.shape[0], n_particles))
    resample_uniforms = rng.random((cells.shape[0], state.log_evidence.size))
    _kernels.urn_smc(
        np.ascontiguousarray(cells), state.n_done, data.component_alpha, data.cell_alpha,
        data.concentration, uniforms, resample_uniforms, float(resample_threshold), state.totals,
        state.tables, state.log_weights, state.log_evidence, state.n_resampled,
    )
    return state._replace(n_done=state.n_done + cells.shape[0])


def run_smc(rng, data, *, n_particles=500, n_islands=10, resample_threshold=0.5, verbose=0):
    """Estimate log p(X) by sequential importance sampling over the tokens
    with the urn proposal and adaptive resampling.

    The particles form ``n_islands`` independent systems (Vergé, Dubarry, Del
    Moral & Moulines 2015) sharing one random token order. Each island's
    product of mean incremental weights, Ẑ_k, is an unbiased estimate of
    p(X) for any fixed order, so their mean is too, and the spread of the
    Ẑ_k gives the standard error (by the delta method on the log scale).
    With ``verbose``, progress lines count the tokens placed and give the
    time left.

    Returns
    -------
    SMCResult
    """
    order = token_order(rng, data)
    state = smc_init(data, n_particles, n_islands)
    chunk = max(1, _UNIFORMS_PER_CALL // n_particles)
    progress = progress_or_none(verbose, "SMC", order.shape[0], unit="tokens")
    for start in range(0, order.shape[0], chunk):
        cells = order[start:start + chunk]
        state = smc_step(rng, state, data, cells, resample_threshold)
        if progress is not None:
            progress(cells.shape[0])
    constant = log_total_prior(data) + _log_multinomial(data)
    islands = state.log_evidence + constant
    log_evidence = float(logsumexp(islands) - np.log(n_islands))
    relative = np.exp(islands - log_evidence)
    error = float(relative.std(ddof=1) / np.sqrt(n_islands)) if n_islands > 1 else np.inf
    return SMCResult(log_evidence, error, islands, int(state.n_resampled.sum()), state, order)


def particle_weights(result):
    """Normalised weight of every particle: its island's share of the
    evidence times its weight within the island."""
    state = result.state
    n_islands = state.log_evidence.size
    within = state.log_weights.reshape(n_islands, -1)
    within = within - logsumexp(within, axis=1, keepdims=True)
    island = result.island_log_evidence - logsumexp(result.island_log_evidence)
    return np.exp(within + island[:, None]).ravel()


class ParticleSample(NamedTuple):
    """Equally weighted particles resampled from the final system:
    their urn tables (particles, columns, R) and component totals
    (particles, R), and ``match`` (particles, R, R), 1 / particles where a
    particle's label r is the reference particle's label s."""

    tables: np.ndarray
    totals: np.ndarray
    match: np.ndarray


def resample_particles(rng, result, n_summary=1000):
    """The weighted particle system thinned to ``n_summary`` equally weighted
    particles by systematic resampling (its Monte Carlo error is that of
    ``n_summary`` posterior draws). Components carry arbitrary labels in each
    particle, so every one is matched to the heaviest particle (Hungarian
    assignment maximising Σ_c s_p(r, c) s_ref(r', c), the co-occurrence of
    their tokens' indices over all modes)."""
    # These products are small; BLAS threads started right after the urn
    # kernel would compete with numba's for the cores.
    with threadpool_limits(limits=1, user_api="blas"):
        state = result.state
        weights = particle_weights(result)
        n_summary = min(n_summary, weights.size)
        positions = (rng.random() + np.arange(n_summary)) / n_summary
        chosen = np.minimum(np.searchsorted(np.cumsum(weights), positions * weights.sum()),
                            weights.size - 1)
        tables = state.tables[chosen]
        n_chosen, columns, R = tables.shape
        reference = state.tables[np.argmax(weights)].astype(np.float64)
        # similarity[p, r, s]: particle p's component r against the reference's s
        by_component = tables.astype(np.float64).transpose(0, 2, 1).reshape(n_chosen * R, columns)
        similarity = (by_component @ reference).reshape(n_chosen, R, R)
        match = np.zeros((n_chosen, R, R))
        for p in range(n_chosen):
            rows, cols = linear_sum_assignment(similarity[p], maximize=True)
            match[p, rows, cols] = 1.0 / n_chosen
        return ParticleSample(tables, state.totals[chosen], match)


def particle_factor_means(sample, data):
    """Posterior means of the CP factors from resampled particles
    (:func:`resample_particles`).

    Given a particle's allocation, E[λ θ0(r) θ1(r, i)] and E[θn(r, j)] are
    products of Gamma and Dirichlet posterior means; each particle's labels
    are matched to the reference's before the means are taken.

    Returns
    -------
    factors : list of ndarray
        ``factors[0]`` (I_1, R) holds λθ0θ1, ``factors[n]`` (I_n, R) θn, so
        X̂ = Σ_r factors[0][i_1, r] Π_n factors[n][i_n, r] is λ p(i).
    """
    with threadpool_limits(limits=1, user_api="blas"):
        tables = sample.tables.astype(np.float64)  # (particles, columns, R)
        n_chosen, _, R = tables.shape
        totals = sample.totals.astype(np.float64)
        a = data.concentration
        lam = (a + data.total) / (data.rate + 1.0)
        theta0 = (data.component_alpha + totals) / (a + data.total)
        row_totals = data.component_alpha + totals
        factors = []
        for n, (start, size) in enumerate(zip(data.offsets, data.shape)):
            theta = (data.cell_alpha[n] + tables[:, start:start + size, :]) / row_totals[:, None, :]
            if n == 0:
                theta *= lam * theta0[:, None, :]
            # Σ_p Σ_r θ_p[j, r] match[p, r, s]: relabel and average in one product.
            factors.append(theta.transpose(1, 0, 2).reshape(size, n_chosen * R)
                           @ sample.match.reshape(n_chosen * R, R))
        return factors


def particle_dirichlet_parameters(sample, data):
    """Per particle, the Dirichlet parameters of θ0 (particles, R) and of each
    mode's θn (particles, I_n, R) given its allocation, labels matched to
    the reference's (the posterior of the factors given an allocation)."""
    relabel = np.argsort(sample.match.argmax(axis=2), axis=1)  # reference label -> own

    def matched(array):
        return np.take_along_axis(array, relabel.reshape(relabel.shape[:1] + (1,) * (array.ndim - 2)
                                                         + relabel.shape[1:]), axis=-1)

    component = data.component_alpha + matched(sample.totals.astype(np.float64))
    tables = matched(sample.tables.astype(np.float64))
    modes = [data.cell_alpha[n] + tables[:, start:start + size, :]
             for n, (start, size) in enumerate(zip(data.offsets, data.shape))]
    return component, modes


def total_posterior(data):
    """Shape and rate of λ's Gamma posterior, (a + T, b + 1)."""
    return data.concentration + data.total, data.rate + 1.0


def draw_factors(rng, component, modes, total_posterior):
    """Posterior draws of the CP factors, one per row of the Dirichlet
    parameters ``component`` (draws, R) and ``modes`` (draws, I_n, R each):
    λ ~ Gamma(``total_posterior``), θ0 ~ Dir(component),
    θn(r, :) ~ Dir(modes[n][:, :, r]), returned as ``factors[0]`` = λ θ0 θ1
    and ``factors[n]`` = θn, each (draws, I_n, R), as
    :func:`particle_factor_means` orders them."""
    n_draws = component.shape[0]
    shape, rate = total_posterior
    lam = rng.standard_gamma(shape, size=n_draws) / rate
    theta0 = rng.standard_gamma(component)
    theta0 /= theta0.sum(axis=1, keepdims=True)
    factors = []
    for params in modes:
        theta = rng.standard_gamma(params)
        factors.append(theta / theta.sum(axis=1, keepdims=True))
    factors[0] = factors[0] * (lam[:, None] * theta0)[:, None, :]
    return factors


# ---------------------------------------------------------------------- VB
class VBState(NamedTuple):
    """Dirichlet parameters of q(θ0) (R,) and of q(θn(r, :)), (I_n, R) per mode."""

    component: np.ndarray
    modes: tuple


def _selectors(data):
    """Per mode, the sparse (I_n x nnz) matrix summing cell values into indices."""
    nnz = data.counts.size
    return tuple(
        sp.csr_matrix((np.ones(nnz), (data.coords[n], np.arange(nnz))), shape=(size, nnz))
        for n, size in enumerate(data.shape)
    )


def _expected_logs(state):
    component = digamma(state.component) - digamma(state.component.sum())
    modes = tuple(digamma(g) - digamma(g.sum(axis=0, keepdims=True)) for g in state.modes)
    return component, modes


def _from_responsibilities(data, selectors, weighted):
    """Dirichlet parameters from expected allocations ``weighted`` (nnz, R)."""
    return VBState(data.component_alpha + weighted.sum(axis=0),
                   tuple(data.cell_alpha[n] + s @ weighted for n, s in enumerate(selectors)))


def vb_init(rng, data, selectors):
    """q(θ) from random responsibilities (each cell's row Dirichlet(1));
    ``selectors`` from :func:`_selectors`."""
    responsibilities = rng.dirichlet(np.ones(data.n_components), size=data.counts.size)
    return _from_responsibilities(data, selectors, data.counts[:, None] * responsibilities)


def _dirichlet_kl(posterior, prior, axis):
    """KL(Dir(posterior) || Dir(prior)) along ``axis``, summed over the rest."""
    total_q = posterior.sum(axis=axis)
    total_p = np.broadcast_to(prior, posterior.shape).sum(axis=axis)
    kl = (gammaln(total_q) - gammaln(total_p)
          - (gammaln(posterior) - gammaln(prior)).sum(axis=axis)
          + ((posterior - prior) * (digamma(posterior)
                                    - np.expand_dims(digamma(total_q), axis))).sum(axis=axis))
    return float(np.sum(kl))


def vb_step(state, data, selectors):
    """One coordinate-ascent sweep: responsibilities from q(θ), then q(θ).

    Returns the new state and the bound at the old q(θ) with its optimal
    responsibilities,

    .. math::

        \\log p(T) + \\log\\frac{T!}{\\prod_i X(i)!} + \\sum_i X(i) \\log \\sum_r
        e^{E\\log\\theta_0(r) + \\sum_n E\\log\\theta_n(r, i_n)} - \\mathrm{KL}(q(\\theta) \\| p(\\theta)),

    which never decreases from one sweep to the next.
    """
    component, modes = _expected_logs(state)
    log_terms = component + sum(e[data.coords[n]] for n, e in enumerate(modes))
    log_norm = logsumexp(log_terms, axis=1)
    responsibilities = np.exp(log_terms - log_norm[:, None])
    kl = _dirichlet_kl(state.component, data.component_alpha, axis=0) + sum(
        _dirichlet_kl(g, data.cell_alpha[n], axis=0) for n, g in enumerate(state.modes))
    bound = (log_total_prior(data) + _log_multinomial(data) + float(data.counts @ log_norm) - kl)
    new = _from_responsibilities(data, selectors, data.counts[:, None] * responsibilities)
    return new, bound


class VBResult(NamedTuple):
    state: VBState
    lower_bound: float
    lower_bounds: np.ndarray
    converged: bool


def run_vb(rng, data, *, max_iter=500, tol=1e-8, verbose=0):
    """Coordinate ascent until the bound's relative change is below ``tol``
    (with ``verbose``, progress lines give the time left to ``max_iter``)."""
    selectors = _selectors(data)
    state = vb_init(rng, data, selectors)
    bounds = []
    converged = False
    progress = progress_or_none(verbose, "Allocation VB", max_iter, unit="iterations")
    for _ in range(max_iter):
        state, bound = vb_step(state, data, selectors)
        bounds.append(bound)
        if progress is not None:
            progress()
        if len(bounds) > 1 and abs(bounds[-1] - bounds[-2]) <= tol * abs(bounds[-1]):
            converged = True
            break
    # The bound of the final q(θ).
    _, bound = vb_step(state, data, selectors)
    bounds.append(bound)
    return VBResult(state, bound, np.asarray(bounds), converged)


def vb_factor_means(state, data):
    """CP factors from q: λθ0θ1 and θn at their posterior means (see
    :func:`particle_factor_means`)."""
    lam = (data.concentration + data.total) / (data.rate + 1.0)
    theta0 = state.component / state.component.sum()
    factors = [g / g.sum(axis=0, keepdims=True) for g in state.modes]
    factors[0] = lam * theta0 * factors[0]
    return factors


# ---------------------------------------------------------------- fold-in
def fold_in(coords, counts, n_samples, factors, *, max_iter=1000, tol=1e-10):
    """Component weights of new samples, the other modes' θn held fixed.

    With θn(r, :) summing to one, the Poisson likelihood of sample i's counts
    in the weights w_i(r) (X̂ = Σ_r w_i(r) Π_n θn(r, i_n)) is maximised where
    w_i(r) equals the expected number of its tokens in component r: the
    fixed point iterated here, started at the fitted θ0 times the sample's
    total. The result sums to each sample's total count.

    Parameters
    ----------
    coords : ndarray of shape (N, nnz)
        Non-zero cells, axis 0 the sample.
    counts : ndarray of shape (nnz,)
    factors : list of ndarray
        The fitted factors (:func:`particle_factor_means`); ``factors[0]``
        only gives the starting proportions.
    """
    others = np.ones((counts.size, factors[0].shape[1]))
    for n in range(1, len(factors)):
        others *= factors[n][coords[n]]
    rows = coords[0]
    start = factors[0].sum(axis=0)
    totals = np.bincount(rows, weights=counts, minlength=n_samples)
    weights = totals[:, None] * (start / start.sum())
    selector = sp.csr_matrix((counts.astype(np.float64), (rows, np.arange(counts.size))),
                             shape=(n_samples, counts.size))
    active = np.ones(n_samples, dtype=bool)
    for _ in range(max_iter):
        terms = weights[rows] * others
        xhat = terms.sum(axis=1, keepdims=True)
        new = selector @ (terms / np.maximum(xhat, _kernels.TINY))
        # Each sample stops on its own, so its weights do not depend on
        # which other samples are transformed with it.
        change = np.abs(new - weights).max(axis=1)
        weights[active] = new[active]
        active &= change > tol * np.maximum(1.0, totals)
        if not active.any():
            break
    return weights


# --------------------------------------------------------------- sampling
def sample_bam(rng, shape, n_components, *, concentration=1.0, n_tokens=None, rate=1.0):
    """Draw a count tensor from the BAM: λ (unless ``n_tokens`` fixes T),
    θ0, θn, then the tokens' cells. Returns the dense counts and the
    parameters ``(T, θ0, [θn (R, I_n)])``."""
    a, R = float(concentration), int(n_components)
    T = int(rng.poisson(rng.gamma(a, 1.0 / rate))) if n_tokens is None else int(n_tokens)
    theta0 = rng.dirichlet(np.full(R, a / R))
    thetas = [rng.dirichlet(np.full(size, a / (R * size)), size=R) for size in shape]
    per_component = rng.multinomial(T, theta0)
    X = np.zeros(shape, dtype=np.int64)
    for r in range(R):
        cells = tuple(rng.choice(size, p=theta[r], size=per_component[r])
                      for size, theta in zip(shape, thetas))
        np.add.at(X, cells, 1)
    return X, (T, theta0, thetas)
