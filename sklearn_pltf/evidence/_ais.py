"""Annealed importance sampling (AIS) of log p(X) for a Poisson–Gamma PLTF
model (Neal 2001), forward and reverse.

A path of distributions :math:`\\pi_t \\propto s^{1-t} (p(\\theta) p(X \\mid
\\theta))^t` leads from a start s with a known normaliser (t = 0) to the
posterior (t = 1). Each run draws :math:`\\theta_0` from s, then at every
rung :math:`t_k` of the ladder adds :math:`(t_k - t_{k-1}) \\log(p(\\theta)
p(X \\mid \\theta) / s(\\theta))` at :math:`\\theta_{k-1}` to its log weight
and moves θ by MCMC steps that leave :math:`\\pi_{t_k}` invariant. The mean
weight is an unbiased estimate of p(X); its log, a stochastic lower bound on
log p(X). With s the prior, this is the path of power posteriors. Reverse
AIS runs the same ladder down from an exact posterior sample
(:func:`reverse_ais_log_evidence`).

The start: from the prior the runs must travel far, and on large data no
affordable ladder gets there; from a Gamma fit to the posterior marginals
(:class:`GammaStart`, mixed over every relabelling of the components so
that it covers every label-permuted mode of the posterior) the path is
short.

The moves: Metropolis-adjusted Langevin (MALA) steps on :math:`\\phi = \\log
Z` (the Jacobian adds :math:`\\sum \\phi`), since the tempered Poisson
likelihood is not conjugate to the Gamma prior, so Gibbs with an allocation
S is exact only at t = 1, while a Metropolis correction makes each step exact
at every t; then one Metropolis move along each scaling ridge of the
likelihood (:func:`_rescale`). The step sizes of each rung come from a pilot
pass (a quarter of the runs, discarded) that aims at an acceptance of about
0.6; the runs that count use that schedule fixed, so that each of their
moves depends on the current state alone, as AIS needs.

Every run is advanced at once: each factor carries a leading run axis and
every contraction is a chain of batched matrix products over the dense
data, planned once per shapes
(:func:`~sklearn_pltf.engine._array_contract.contract`; ``einsum`` would
take its unbatched loops with the runs as a batch index). The driver
(:func:`anneal_forward`) serves any model that supplies a target: its log
prior, log-likelihood, ridges and (for a start at the prior) exact prior
draws; ``_gaussian_ais`` is the other one.
"""

from __future__ import annotations

import functools
import math
import string
import warnings
from typing import NamedTuple

import numpy as np
from scipy.special import gammaln, logsumexp

from ..engine._array_contract import contract
from ..engine._likelihood import get_likelihood
from ..engine._progress import progress_or_none
from ..inference._gamma import gamma_from_moments
from ._permanent import MAX_SIZE, log_permanent

__all__ = ["AISEstimate", "GammaStart", "ais_log_evidence",
           "posterior_start", "reverse_ais_log_evidence"]

_TARGET_ACCEPTANCE = 0.6


class AISEstimate(NamedTuple):
    """The AIS estimate: the log of the mean weight, its standard error (delta
    method over the runs), each run's log weight, the mean acceptance of the
    counted runs' moves, and the runs' effective number
    :math:`(\\sum w)^2 / \\sum w^2`."""

    log_evidence: float
    standard_error: float
    log_weights: np.ndarray
    acceptance: float
    effective_runs: float


class _PoissonTarget:
    """The Poisson–Gamma model's parts of the tempered target for a stack of
    runs: the Gamma prior in φ = log Z and log p(X | Z), with gradients (for
    counts, or under the Bernoulli–Poisson likelihood for binary data)."""

    def __init__(self, model, data, priors, given, likelihood="poisson"):
        free = priors.free
        self.priors = priors
        used = set("".join(model.factors))
        run = next(c for c in string.ascii_letters if c not in used)
        self.model, self.free, self.given = model, free, given
        self.ridges = ridges(model, free)
        self.X = data.dense
        self.mask = np.ones(data.shape, dtype=bool) if data.mask is None else data.mask
        self.likelihood = get_likelihood(likelihood)
        self.likelihood.check(data)
        self.constant = self.likelihood.log_base_measure(data)
        operands = [(run + f) if a in free else f for a, f in enumerate(model.factors)]
        self._xhat = functools.partial(contract, ",".join(operands) + "->" + run + model.output)
        self._deltas = {}
        for alpha in free:
            others = [op for a, op in enumerate(operands) if a != alpha]
            self._deltas[alpha] = functools.partial(
                contract, ",".join([run + model.output, *others]) + "->" + operands[alpha])

    def log_prior(self, phi):
        """Per run: log p(φ) (normalised, Jacobian included) and its gradient."""
        priors = self.priors
        prior = sum(_per_run_sum(priors.shape[a] * p - priors.rate[a] * np.exp(p))
                    + priors.log_normalizer[a] for a, p in phi.items())
        prior_grad = {a: priors.shape[a] - priors.rate[a] * np.exp(p) for a, p in phi.items()}
        return prior, prior_grad

    def log_likelihood(self, phi):
        """Per run: log p(X | φ) and its gradient."""
        factors = self.factors(phi)
        log_lik, xhat = self._log_likelihood(factors)
        return log_lik, self.gradient(factors, xhat)

    def prior_draws(self, rng, n_runs):
        """``n_runs`` exact draws of every free φ = log Z from the Gamma prior."""
        priors = self.priors
        return {a: _log_gamma_draws(rng, np.broadcast_to(priors.shape[a],
                                                         (n_runs, *priors.shape[a].shape)),
                                    priors.rate[a]) for a in self.free}

    def factors(self, phi):
        z = {a: np.exp(p) for a, p in phi.items()}
        return [z[a] if a in self.free else self.given[a] for a in range(self.model.n_factors)]

    def _log_likelihood(self, factors):
        """log p(X | Z) for each run (n_runs,), and X̂."""
        xhat = self._xhat(*factors)
        with np.errstate(divide="ignore", invalid="ignore"):
            data_terms = np.where(self.X > 0, self.likelihood.entry_log_terms(self.X, xhat), 0.0)
        terms = np.where(self.mask, data_terms - xhat, 0.0)
        return _per_run_sum(terms) + self.constant, xhat

    def gradient(self, factors, xhat):
        """∂ log p(X | Z) / ∂φ_α = Z_α ∘ Δ_α(M ∘ (E[N] / X̂ − 1)), per free
        factor (E[N] = X for counts)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(self.mask, self.likelihood.count_ratio(self.X, xhat) - 1.0, 0.0)
        q = np.where(np.isfinite(q), q, 0.0)
        out = {}
        for alpha in self.free:
            others = [f for a, f in enumerate(factors) if a != alpha]
            out[alpha] = factors[alpha] * self._deltas[alpha](q, *others)
        return out


def _per_run_sum(terms):
    """Sum over every axis but the leading run axis."""
    return terms.reshape(terms.shape[0], -1).sum(axis=1)


class _Terms(NamedTuple):
    """The tempered target's parts at φ, per run, for the path
    :math:`\\log \\pi_t = s + t\\,u` from the start s to the posterior: s
    (the start's log density in φ, Jacobian included), the increment u that
    enters the weights (log p(X | φ) from the prior; log p(φ) + log p(X | φ)
    − s from another start), their gradients per free factor, and log p(X |
    φ) with its gradient (which a rescaling move keeps). A new rung
    re-weights them."""

    start: np.ndarray
    increment: np.ndarray
    start_grad: dict
    increment_grad: dict
    log_lik: np.ndarray
    lik_grad: dict

    def value(self, t):
        return self.start + t * self.increment

    def grad(self, t):
        return {a: self.start_grad[a] + t * self.increment_grad[a] for a in self.start_grad}


def _terms(phi, target, start, likelihood=None):
    """The :class:`_Terms` at ``phi``; ``likelihood`` = (log p(X | φ), its
    gradient) when known (a rescaling move leaves them as they were)."""
    prior, prior_grad = target.log_prior(phi)
    log_lik, lik_grad = target.log_likelihood(phi) if likelihood is None else likelihood
    if start is None:
        return _Terms(prior, log_lik, prior_grad, lik_grad, log_lik, lik_grad)
    log_start, start_grad = start.log_density(phi)
    return _Terms(log_start, prior + log_lik - log_start, start_grad,
                  {a: prior_grad[a] + lik_grad[a] - start_grad[a] for a in phi}, log_lik, lik_grad)


class GammaStart:
    """A start for the annealing path closer to the posterior than the prior:
    independent Gammas, symmetrised over the relabellings of the latent
    index, :math:`s(Z) = \\frac{1}{K!} \\sum_{\\sigma \\in S_K} \\prod_k
    \\mathcal G(Z_{\\cdot k}; a_{\\cdot \\sigma(k)}, b_{\\cdot \\sigma(k)})`, so
    that it covers every label-permuted mode of the posterior, as the path's
    end does. The sum over the K! relabellings is a permanent
    (:func:`~._permanent.log_permanent`, O(2^K K)).

    Parameters
    ----------
    model : Model
    shape, rate : sequence
        Per factor position, the Gamma's shape and rate arrays (None for
        held factors), e.g. from :func:`gamma_from_moments`.
    held : iterable of int
        Held factors: a latent index they carry is not relabelled.

    Raises
    ------
    ValueError
        If more than one latent index can be relabelled (Tucker cores tie
        their labels together, so the sum does not reduce to a permanent), or
        the one that can has more than ``MAX_SIZE`` labels.
    """

    def __init__(self, model, shape, rate, held=()):
        self.free = tuple(a for a, v in enumerate(shape) if v is not None)
        latent = relabelled_indices(model, self.free, held)
        if len(latent) > 1:
            raise ValueError(f"More than one latent index to relabel: {''.join(latent)!r}.")
        if latent and model.sizes[latent[0]] > MAX_SIZE:
            raise ValueError(f"Index {latent[0]!r} has more than {MAX_SIZE} labels.")
        self.sizes = {a: np.shape(shape[a]) for a in self.free}
        # Each free factor with the relabelled index as axis 1 (after runs) and
        # its other indices flattened: (K, rest); K = 1 when nothing is relabelled.
        self._axis = {a: (model.factors[a].index(latent[0]) if latent and latent[0]
                          in model.factors[a] else None) for a in self.free}
        self._shape = {a: self._slots(np.asarray(shape[a], dtype=np.float64)[None], a)[0]
                       for a in self.free}
        self._rate = {a: self._slots(np.asarray(rate[a], dtype=np.float64)[None], a)[0]
                      for a in self.free}
        self.n_labels = model.sizes[latent[0]] if latent else 1
        # Σ over each label's elements of a log b − log Γ(a), per factor: (K,)
        self._constant = sum(np.sum(self._shape[a] * np.log(self._rate[a])
                                    - gammaln(self._shape[a]), axis=1) for a in self.free)
        self._log_count = float(gammaln(self.n_labels + 1))

    def _slots(self, values, a):
        """(runs, *factor shape) -> (runs, K, rest)."""
        if self._axis[a] is None:
            return values.reshape(values.shape[0], 1, -1)
        moved = np.moveaxis(values, 1 + self._axis[a], 1)
        return moved.reshape(moved.shape[0], moved.shape[1], -1)

    def _unslot(self, values, a):
        """(runs, K, rest) -> (runs, *factor shape)."""
        if self._axis[a] is None:
            return values.reshape((-1, *self.sizes[a]))
        moved_shape = list(self.sizes[a])
        moved_shape.insert(0, moved_shape.pop(self._axis[a]))
        return np.moveaxis(values.reshape((-1, *moved_shape)), 1, 1 + self._axis[a])

    def log_density(self, phi):
        """log s in φ = log Z (Jacobian included) per run, and its gradient."""
        slots = {a: self._slots(phi[a], a) for a in self.free}
        # L[n, k, l]: log density of run n's slot k under label l's Gammas.
        L = self._constant[None, None, :] + sum(
            np.einsum("nkr,lr->nkl", slots[a], self._shape[a])
            - np.einsum("nkr,lr->nkl", np.exp(slots[a]), self._rate[a]) for a in self.free)
        log_s, weights = log_permanent(L)
        gradient = {a: self._unslot(np.einsum("nkl,lr->nkr", weights, self._shape[a])
                                    - np.einsum("nkl,lr->nkr", weights, self._rate[a])
                                    * np.exp(slots[a]), a) for a in self.free}
        return log_s - self._log_count, gradient

    def draw(self, rng, n_runs):
        """``n_runs`` exact draws of φ: a uniform relabelling, then the Gammas."""
        orders = np.argsort(rng.random((n_runs, self.n_labels)), axis=1)
        return {a: self._unslot(_log_gamma_draws(rng, self._shape[a][orders],
                                                 self._rate[a][orders]), a) for a in self.free}


def relabelled_indices(model, free, held=()):
    """The latent indices whose labels can be permuted: carried by a free
    factor and by no held one."""
    taken = set().union(*(model.factors[a] for a in held)) if held else set()
    return [c for c in dict.fromkeys("".join(model.factors[a] for a in free))
            if c not in model.output and c not in taken]


def has_posterior_start(model, free, held=()):
    """Whether :class:`GammaStart` can mix over the labels of ``model``: at
    most one relabelled index, of at most ``MAX_SIZE`` labels."""
    latent = relabelled_indices(model, free, held)
    return len(latent) == 0 or (len(latent) == 1 and model.sizes[latent[0]] <= MAX_SIZE)


def posterior_start(model, means, geometric_means, held=()):
    """The :class:`GammaStart` fitted to posterior marginals given by their
    means and geometric means (per factor position, None for held ones;
    :func:`gamma_from_moments`), or None (the prior) where
    :func:`has_posterior_start` says it cannot be built."""
    fits = [None if m is None or a in held else gamma_from_moments(m, g)
            for a, (m, g) in enumerate(zip(means, geometric_means))]
    free = tuple(a for a, f in enumerate(fits) if f is not None)
    if not has_posterior_start(model, free, held):
        return None
    return GammaStart(model, [None if f is None else f[0] for f in fits],
                      [None if f is None else f[1] for f in fits], held)


def _mala(rng, phi, current, t, step, target, start):
    """One MALA step per run at temperature t with per-run step sizes ``step``
    (n_runs,); ``current`` holds the target's :class:`_Terms` at ``phi``
    (both are updated where a run accepts)."""
    shape = {a: (-1,) + (1,) * (p.ndim - 1) for a, p in phi.items()}
    h = {a: step.reshape(shape[a]) for a in phi}
    grad = current.grad(t)
    proposal = {a: phi[a] + 0.5 * h[a] ** 2 * grad[a] + h[a] * rng.standard_normal(phi[a].shape)
                for a in phi}
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        new = _terms(proposal, target, start)
        new_grad = new.grad(t)

        def log_q(to, frm, grad_frm):  # log density of proposing `to` from `frm`, per run
            return sum(_per_run_sum(-0.5 * ((to[a] - frm[a] - 0.5 * h[a] ** 2 * grad_frm[a])
                                            / h[a]) ** 2) for a in phi)

        log_ratio = (new.value(t) - current.value(t) + log_q(phi, proposal, new_grad)
                     - log_q(proposal, phi, grad))
    log_ratio = np.where(np.isfinite(log_ratio), log_ratio, -np.inf)
    accept_prob = np.exp(np.minimum(log_ratio, 0.0))
    accept = rng.uniform(size=accept_prob.shape) < accept_prob
    return _picked(accept, phi, proposal, current, new), accept_prob


def _log_gamma_draws(rng, shape, rate):
    """log of Gamma(shape, rate) draws, elementwise, through
    :math:`G_a = G_{a+1} U^{1/a}` (Marsaglia & Tsang 2000), which stays
    finite where a draw itself would underflow to 0 (shapes well below 1)."""
    return (np.log(rng.standard_gamma(shape + 1.0)) + np.log(rng.uniform(size=np.shape(shape)))
            / shape - np.log(rate))


def _rescale(rng, phi, current, t, step, target, start, ridge):
    """One Metropolis move along a scaling ridge of the likelihood: for
    factors α and β that share a latent index (``ridge`` = (α, axis in α, β,
    axis in β)), slice r of Z_α times e^δ_r and of Z_β times e^-δ_r leaves
    every term of X̂, so the likelihood and its gradient in φ, unchanged:
    only the prior and the start weigh the move, and it costs no
    contraction. δ ~ N(0, step²) per run and label (symmetric)."""
    alpha, axis_a, beta, axis_b = ridge
    n_runs, size = phi[alpha].shape[0], phi[alpha].shape[1 + axis_a]
    delta = step * rng.standard_normal((n_runs, size))

    def along(values, axis, ndim):
        shape = [n_runs] + [1] * (ndim - 1)
        shape[1 + axis] = size
        return values.reshape(shape)

    proposal = dict(phi)
    proposal[alpha] = phi[alpha] + along(delta, axis_a, phi[alpha].ndim)
    proposal[beta] = phi[beta] - along(delta, axis_b, phi[beta].ndim)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        new = _terms(proposal, target, start, likelihood=(current.log_lik, current.lik_grad))
        log_ratio = new.value(t) - current.value(t)
    log_ratio = np.where(np.isfinite(log_ratio), log_ratio, -np.inf)
    accept_prob = np.exp(np.minimum(log_ratio, 0.0))
    accept = rng.uniform(size=n_runs) < accept_prob
    return _picked(accept, phi, proposal, current, new), accept_prob


def _picked(accept, phi, proposal, current, new):
    """Update ``phi`` in place, and return the terms, where runs accept."""

    def pick(new_value, old_value):
        return np.where(accept.reshape((-1,) + (1,) * (old_value.ndim - 1)), new_value, old_value)

    for a in phi:
        phi[a] = pick(proposal[a], phi[a])
    return _Terms(*(pick(n, c) if isinstance(n, np.ndarray)
                    else {a: pick(n[a], c[a]) for a in phi} for n, c in zip(new, current)))


def ridges(model, free):
    """(α, axis, β, axis) for consecutive free factors that share a latent
    index: the directions :func:`_rescale` moves along."""
    out = []
    for c in dict.fromkeys("".join(model.factors[a] for a in free)):
        if c in model.output:
            continue
        carriers = [a for a in free if c in model.factors[a]]
        out += [(a, model.factors[a].index(c), b, model.factors[b].index(c))
                for a, b in zip(carriers, carriers[1:])]
    return out


def _anneal(rng, ladder, steps, initial, n_moves, target, start, adapt, progress=None):
    """Run AIS from ``initial`` (φ per free factor, a leading run axis) over
    ``ladder``, which may rise (forward AIS) or fall (reverse AIS), on the
    path from ``start`` (None: the prior) to the posterior. Each rung makes
    ``n_moves`` MALA steps and then a rescaling move along each of the
    target's ``ridges``; ``steps`` (2, n_rungs) holds each rung's
    step sizes for the two kinds (updated in place when ``adapt``). Returns
    the log weights :math:`\\sum_k (t_k - t_{k-1})\\, u(\\theta_{k-1})` (u
    the increment of :class:`_Terms`) and the mean acceptance of the MALA
    steps."""
    phi = {a: np.array(p, dtype=np.float64) for a, p in initial.items()}
    n_runs = next(iter(phi.values())).shape[0]
    current = _terms(phi, target, start)
    log_weights = np.zeros(n_runs)
    acceptances = []

    def tune(row, k, rate):  # Robbins–Monro on the log step, toward the target acceptance
        if adapt:
            steps[row, k:] = np.exp(np.log(steps[row, k]) + 0.5 * (rate - _TARGET_ACCEPTANCE))

    for k in range(1, ladder.size):
        log_weights += (ladder[k] - ladder[k - 1]) * current.increment
        for _ in range(n_moves):
            current, accept_prob = _mala(rng, phi, current, ladder[k],
                                         np.full(n_runs, steps[0, k]), target, start)
            acceptances.append(float(np.mean(accept_prob)))
            tune(0, k, acceptances[-1])
        for ridge in target.ridges:
            current, accept_prob = _rescale(rng, phi, current, ladder[k], steps[1, k], target,
                                            start, ridge)
            tune(1, k, float(np.mean(accept_prob)))
        if progress is not None:
            progress()
    return log_weights, float(np.mean(acceptances))


def ais_log_evidence(rng, model, data, priors, given=None, *, start=None, n_runs=32,
                     n_temperatures=1000, power=None, n_moves=2, verbose=0, likelihood="poisson"):
    """Estimate log p(X) of a Poisson–Gamma PLTF model by annealed importance sampling.

    Parameters
    ----------
    rng : numpy.random.Generator
    model : Model
        A bound model.
    data : ObservedTensor
        Dense layout (the runs are batched over the dense tensor).
    priors : GammaPriors
        Priors of the free factors; ``None`` marks held ones.
    given : dict, default=None
        ``{position: array}`` for every held factor.
    start : GammaStart, default=None
        Where the path starts: the prior (None), or a Gamma approximation of
        the posterior (e.g. :func:`posterior_start` of a sampler's or VB's
        means and geometric means), which shortens the path the runs must
        travel; the estimators pass one.
    n_runs : int, default=32
        Independent annealing runs (the pilot that tunes the step sizes runs
        a quarter as many more).
    n_temperatures : int, default=1000
        Rungs of the ladder :math:`t_k = (k / (n - 1))^{power}`.
    power : float, default=None
        Ladder spacing. None: 4 from the prior (rungs packed near it, where
        :math:`\\mathbb E_{\\pi_t}[\\log p(X \\mid \\theta)]` changes fastest), 1
        (even spacing) from a ``start`` near the posterior.
    n_moves : int, default=2
        MALA steps per rung (each rung then adds one rescaling move per
        scaling ridge, which costs no contraction).
    verbose : int, default=0
        At 1 or more, progress lines over the rungs with the time left.
    likelihood : {"poisson", "bernoulli"}, default="poisson"
        Counts, or binary data under the Bernoulli–Poisson likelihood
        (:mod:`sklearn_pltf.engine._likelihood`).

    Returns
    -------
    AISEstimate

    Warns
    -----
    RuntimeWarning
        When fewer than a quarter of the runs carry the weight: the log of
        the mean is then dominated by the heaviest run and lies low by an
        amount the standard error does not show; use more temperatures.
    """
    target = _PoissonTarget(model, _dense(data, "ais_log_evidence"), priors, dict(given or {}),
                            likelihood)
    return anneal_forward(rng, target, start, n_runs=n_runs, n_temperatures=n_temperatures,
                          power=power, n_moves=n_moves, verbose=verbose)


def anneal_forward(rng, target, start, *, n_runs, n_temperatures, power, n_moves, verbose):
    """Forward AIS on ``target`` (its ``log_prior``, ``log_likelihood``,
    ``ridges`` and, when ``start`` is None, ``prior_draws``) from ``start``:
    a pilot a quarter as large tunes each rung's steps, then the counted
    runs. The estimate for every model."""
    ladder = _ladder(n_temperatures, power, start)
    steps = np.full((2, n_temperatures), 0.5)
    pilot_rng, run_rng = rng.spawn(2)

    def draws(rng, n):  # exact draws from the start, so only the increments enter the weights
        return target.prior_draws(rng, n) if start is None else start.draw(rng, n)

    _anneal(pilot_rng, ladder, steps, draws(pilot_rng, max(n_runs // 4, 2)), n_moves, target,
            start, adapt=True)
    progress = progress_or_none(verbose, "AIS", n_temperatures - 1, unit="temperatures")
    log_weights, acceptance = _anneal(run_rng, ladder, steps, draws(run_rng, n_runs), n_moves,
                                      target, start, adapt=False, progress=progress)
    return _summary(log_weights, acceptance, sign=1.0, n_temperatures=n_temperatures,
                    stacklevel=4)


def reverse_ais_log_evidence(rng, model, data, priors, posterior_sample, given=None, *,
                             start=None, n_runs=32, n_temperatures=1000, power=None, n_moves=2,
                             verbose=0, likelihood="poisson"):
    """A stochastic upper bound on log p(X) by reverse annealed importance
    sampling from an exact posterior sample (Grosse, Ghahramani & Adams 2015,
    "Sandwiching the marginal likelihood using bidirectional Monte Carlo").

    Reverse AIS walks the ladder of :func:`ais_log_evidence` downwards, from
    the posterior (t = 1) to the prior (t = 0). Started at an exact posterior
    draw, each run's weight :math:`\\prod_k \\exp((t_{k-1} - t_k) \\log p(X
    \\mid \\theta_k))` has expectation 1 / p(X), so minus the log of the mean
    weight is a stochastic upper bound on log p(X), as the forward estimate
    is a lower one; the two sandwich the evidence and meet as the ladder
    grows finer. For data simulated from the model, the parameters that
    generated them are such a draw (for that model and prior only).

    Parameters
    ----------
    rng : numpy.random.Generator
    model, data, priors, given, start
        As for :func:`ais_log_evidence` (the path ends at ``start``).
    posterior_sample : dict
        ``{position: array}``, an exact draw of every free factor from
        p(Z | X), e.g. the factors that generated simulated ``data``. Every
        run starts from it.
    n_runs, n_temperatures, power, n_moves, verbose, likelihood
        As for :func:`ais_log_evidence`; the pilot that tunes the step sizes
        runs downwards from the same sample.

    Returns
    -------
    AISEstimate
        ``log_evidence`` is the upper estimate; ``log_weights`` the runs'
        reverse log weights.

    Warns
    -----
    RuntimeWarning
        When fewer than a quarter of the runs carry the weight: the estimate
        then lies high by more than its standard error shows.
    """
    target = _PoissonTarget(model, _dense(data, "reverse_ais_log_evidence"), priors,
                            dict(given or {}), likelihood)
    initial = {}
    for a in priors.free:
        value = np.asarray(posterior_sample[a], dtype=np.float64)
        if value.shape != priors.shape[a].shape or not np.all(value > 0):
            raise ValueError(
                f"posterior_sample[{a}] must be a positive array of shape "
                f"{priors.shape[a].shape}, the free factor's; got shape {value.shape}.")
        initial[a] = np.log(value)
    return anneal_reverse(rng, target, start, initial, n_runs=n_runs,
                          n_temperatures=n_temperatures, power=power, n_moves=n_moves,
                          verbose=verbose)


def anneal_reverse(rng, target, start, initial, *, n_runs, n_temperatures, power, n_moves,
                   verbose):
    """Reverse AIS on ``target`` from ``initial`` (``{position: φ}``, an
    exact posterior draw) down to ``start``: a pilot a quarter as large tunes
    each rung's steps, then the counted runs, every one from ``initial``.
    The upper estimate for every model."""
    ladder = _ladder(n_temperatures, power, start)[::-1]
    steps = np.full((2, n_temperatures), 0.5)
    pilot_rng, run_rng = rng.spawn(2)

    def copies(n):
        return {a: np.broadcast_to(p, (n, *p.shape)) for a, p in initial.items()}

    _anneal(pilot_rng, ladder, steps, copies(max(n_runs // 4, 2)), n_moves, target, start,
            adapt=True)
    progress = progress_or_none(verbose, "reverse AIS", n_temperatures - 1, unit="temperatures")
    log_weights, acceptance = _anneal(run_rng, ladder, steps, copies(n_runs), n_moves, target,
                                      start, adapt=False, progress=progress)
    return _summary(log_weights, acceptance, sign=-1.0, n_temperatures=n_temperatures,
                    stacklevel=4)


def _dense(data, caller):
    if data.is_sparse:
        raise TypeError(f"{caller} runs on dense data; pass a dense array.")
    return data


def _ladder(n_temperatures, power, start):
    """Rungs :math:`t_k = (k / (n - 1))^{power}`, k = 0 .. n - 1 (``power``
    None: 4 from the prior, 1 from another start)."""
    if power is None:
        power = 4.0 if start is None else 1.0
    return (np.arange(n_temperatures) / (n_temperatures - 1)) ** float(power)


def _summary(log_weights, acceptance, *, sign, n_temperatures, stacklevel):
    """``sign`` times the log of the mean weight (forward: log p(X); reverse:
    the weights estimate 1 / p(X)), its delta-method standard error and the
    effective number of runs, with a warning when few runs carry the weight."""
    n_runs = log_weights.size
    estimate = sign * float(logsumexp(log_weights) - math.log(n_runs))
    weights = np.exp(log_weights - log_weights.max())
    error = float(weights.std(ddof=1) / weights.mean() / math.sqrt(n_runs))
    effective = float(weights.sum() ** 2 / np.sum(weights**2))
    if effective < n_runs / 4:
        direction = "low" if sign > 0 else "high"
        warnings.warn(
            f"AIS: {effective:.1f} of {n_runs} runs carry the weight, so the estimate "
            f"{estimate:.6g} is likely too {direction} by more than its standard error "
            f"{error:.3g}; use more temperatures (n_temperatures={n_temperatures} now).",
            RuntimeWarning, stacklevel=stacklevel)
    return AISEstimate(estimate, error, log_weights, acceptance, effective)
