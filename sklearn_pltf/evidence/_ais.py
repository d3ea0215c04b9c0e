"""Annealed importance sampling (AIS) of log p(X) for a Poisson–Gamma PLTF
model (Neal 2001).

A path of power posteriors :math:`\\pi_t(\\theta) \\propto p(\\theta)
p(X \\mid \\theta)^t` leads from the prior (t = 0) to the posterior (t = 1).
Each run draws :math:`\\theta_0` from the prior, then at every rung
:math:`t_k` of the ladder adds :math:`(t_k - t_{k-1}) \\log p(X \\mid
\\theta_{k-1})` to its log weight and moves θ by MCMC steps that leave
:math:`\\pi_{t_k}` invariant. The mean weight is an unbiased estimate of
p(X); its log, a stochastic lower bound on log p(X).

The moves are Metropolis-adjusted Langevin (MALA) steps on
:math:`\\phi = \\log Z` (the Jacobian adds :math:`\\sum \\phi`): the tempered
Poisson likelihood is not conjugate to the Gamma prior, so Gibbs with an
allocation S is exact only at t = 1, while a Metropolis correction makes each
step exact at every t. The step size of each rung comes from a pilot pass
(a quarter of the runs, discarded) that aims at an acceptance of about 0.6;
the runs that count use that schedule fixed, so that each of their moves
depends on the current state alone, as AIS needs.

Every run is advanced at once: each factor carries a leading run axis and
every contraction is one batched einsum over the dense data.
"""

from __future__ import annotations

import math
import string
import warnings
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp, xlogy

from .._progress import progress_or_none

__all__ = ["AISEstimate", "ais_log_evidence", "reverse_ais_log_evidence"]

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


class _Batched:
    """X̂ and the gradient of the log-likelihood for a stack of runs."""

    def __init__(self, model, data, free, given):
        used = set("".join(model.factors))
        run = next(c for c in string.ascii_letters if c not in used)
        self.model, self.free, self.given = model, free, given
        self.X = data.dense
        self.mask = np.ones(data.shape, dtype=bool) if data.mask is None else data.mask
        self.constant = -data.log_factorial_total
        operands = [(run + f) if a in free else f for a, f in enumerate(model.factors)]
        self._xhat = ",".join(operands) + "->" + run + model.output
        self._deltas = {}
        for alpha in free:
            others = [op for a, op in enumerate(operands) if a != alpha]
            self._deltas[alpha] = (",".join([run + model.output, *others]) + "->" + operands[alpha])

    def factors(self, phi):
        z = {a: np.exp(p) for a, p in phi.items()}
        return [z[a] if a in self.free else self.given[a] for a in range(self.model.n_factors)]

    def log_likelihood(self, factors):
        """log p(X | Z) for each run (n_runs,)."""
        xhat = np.einsum(self._xhat, *factors, optimize=True)
        terms = np.where(self.mask, xlogy(self.X, xhat) - xhat, 0.0)
        return _per_run_sum(terms) + self.constant, xhat

    def gradient(self, factors, xhat):
        """∂ log p(X | Z) / ∂φ_α = Z_α ∘ Δ_α(M ∘ (X / X̂ − 1)), per free factor."""
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(self.mask, self.X / xhat - 1.0, 0.0)
        q = np.where(np.isfinite(q), q, 0.0)
        out = {}
        for alpha in self.free:
            others = [f for a, f in enumerate(factors) if a != alpha]
            out[alpha] = factors[alpha] * np.einsum(self._deltas[alpha], q, *others, optimize=True)
        return out


def _per_run_sum(terms):
    """Sum over every axis but the leading run axis."""
    return terms.reshape(terms.shape[0], -1).sum(axis=1)


class _Terms(NamedTuple):
    """The tempered target's parts at φ, per run: log p(φ) (Gamma in log
    space, Jacobian included, up to the normaliser, which cancels in every
    Metropolis ratio), log p(X | φ), and their gradients per free factor. At
    temperature t the target is ``prior + t * log_lik``, so a new rung reuses
    them."""

    prior: np.ndarray
    log_lik: np.ndarray
    prior_grad: dict
    lik_grad: dict

    def value(self, t):
        return self.prior + t * self.log_lik

    def grad(self, t):
        return {a: self.prior_grad[a] + t * self.lik_grad[a] for a in self.prior_grad}


def _terms(phi, batched, priors):
    factors = batched.factors(phi)
    log_lik, xhat = batched.log_likelihood(factors)
    prior = sum(_per_run_sum(priors.shape[a] * p - priors.rate[a] * np.exp(p))
                for a, p in phi.items())
    prior_grad = {a: priors.shape[a] - priors.rate[a] * np.exp(p) for a, p in phi.items()}
    return _Terms(prior, log_lik, prior_grad, batched.gradient(factors, xhat))


def _mala(rng, phi, current, t, step, batched, priors):
    """One MALA step per run at temperature t with per-run step sizes ``step``
    (n_runs,); ``current`` holds the target's :class:`_Terms` at ``phi``
    (both are updated where a run accepts)."""
    shape = {a: (-1,) + (1,) * (p.ndim - 1) for a, p in phi.items()}
    h = {a: step.reshape(shape[a]) for a in phi}
    grad = current.grad(t)
    proposal = {a: phi[a] + 0.5 * h[a] ** 2 * grad[a] + h[a] * rng.standard_normal(phi[a].shape)
                for a in phi}
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        new = _terms(proposal, batched, priors)
        new_grad = new.grad(t)

        def log_q(to, frm, grad_frm):  # log density of proposing `to` from `frm`, per run
            return sum(_per_run_sum(-0.5 * ((to[a] - frm[a] - 0.5 * h[a] ** 2 * grad_frm[a])
                                            / h[a]) ** 2) for a in phi)

        log_ratio = (new.value(t) - current.value(t) + log_q(phi, proposal, new_grad)
                     - log_q(proposal, phi, grad))
    log_ratio = np.where(np.isfinite(log_ratio), log_ratio, -np.inf)
    accept_prob = np.exp(np.minimum(log_ratio, 0.0))
    accept = rng.uniform(size=accept_prob.shape) < accept_prob

    def pick(new_value, old_value):
        return np.where(accept.reshape((-1,) + (1,) * (old_value.ndim - 1)), new_value, old_value)

    for a in phi:
        phi[a] = pick(proposal[a], phi[a])
    current = _Terms(pick(new.prior, current.prior), pick(new.log_lik, current.log_lik),
                     {a: pick(new.prior_grad[a], current.prior_grad[a]) for a in phi},
                     {a: pick(new.lik_grad[a], current.lik_grad[a]) for a in phi})
    return current, accept_prob


def _prior_draws(rng, n_runs, priors, free):
    """``n_runs`` exact draws of every free φ = log Z from the Gamma prior."""
    return {a: np.log(rng.standard_gamma(np.broadcast_to(priors.shape[a],
                                                         (n_runs, *priors.shape[a].shape)))
                      / priors.rate[a]) for a in free}


def _anneal(rng, ladder, steps, start, n_moves, batched, priors, adapt, progress=None):
    """Run AIS from ``start`` (φ per free factor, a leading run axis) over
    ``ladder``, which may rise (forward AIS) or fall (reverse AIS); ``steps``
    holds each rung's step size (updated in place when ``adapt``). Returns
    the log weights :math:`\\sum_k (t_k - t_{k-1}) \\log p(X \\mid
    \\theta_{k-1})` and the mean acceptance."""
    phi = {a: np.array(p, dtype=np.float64) for a, p in start.items()}
    n_runs = next(iter(phi.values())).shape[0]
    current = _terms(phi, batched, priors)
    log_weights = np.zeros(n_runs)
    acceptances = []
    for k in range(1, ladder.size):
        log_weights += (ladder[k] - ladder[k - 1]) * current.log_lik
        for _ in range(n_moves):
            current, accept_prob = _mala(rng, phi, current, ladder[k], np.full(n_runs, steps[k]),
                                         batched, priors)
            rate = float(np.mean(accept_prob))
            acceptances.append(rate)
            if adapt:  # Robbins–Monro on the log step, toward the target acceptance
                steps[k:] = np.exp(np.log(steps[k]) + 0.5 * (rate - _TARGET_ACCEPTANCE))
        if progress is not None:
            progress()
    return log_weights, float(np.mean(acceptances))


def ais_log_evidence(rng, model, data, priors, given=None, *, n_runs=32, n_temperatures=1000,
                     power=4.0, n_moves=2, verbose=0):
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
    n_runs : int, default=32
        Independent annealing runs (the pilot that tunes the step sizes runs
        a quarter as many more).
    n_temperatures : int, default=1000
        Rungs of the ladder :math:`t_k = (k / (n - 1))^{power}`.
    power : float, default=4.0
        Ladder spacing: rungs packed near the prior, where
        :math:`\\mathbb E_{\\pi_t}[\\log p(X \\mid \\theta)]` changes fastest.
    n_moves : int, default=2
        MALA steps per rung.
    verbose : int, default=0
        At 1 or more, progress lines over the rungs with the time left.

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
    batched = _batched(model, data, priors, given, "ais_log_evidence")
    ladder = _ladder(n_temperatures, power)
    steps = np.full(n_temperatures, 0.5)
    pilot_rng, run_rng = rng.spawn(2)
    _anneal(pilot_rng, ladder, steps, _prior_draws(pilot_rng, max(n_runs // 4, 2), priors,
                                                   priors.free),
            n_moves, batched, priors, adapt=True)
    progress = progress_or_none(verbose, "AIS", n_temperatures - 1, unit="temperatures")
    log_weights, acceptance = _anneal(run_rng, ladder, steps,
                                      _prior_draws(run_rng, n_runs, priors, priors.free),
                                      n_moves, batched, priors, adapt=False, progress=progress)
    # θ_0 is an exact prior draw, so only likelihood increments enter the weights.
    return _summary(log_weights, acceptance, sign=1.0, n_temperatures=n_temperatures,
                    stacklevel=3)


def reverse_ais_log_evidence(rng, model, data, priors, posterior_sample, given=None, *,
                             n_runs=32, n_temperatures=1000, power=4.0, n_moves=2, verbose=0):
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
    model, data, priors, given
        As for :func:`ais_log_evidence`.
    posterior_sample : dict
        ``{position: array}``, an exact draw of every free factor from
        p(Z | X), e.g. the factors that generated simulated ``data``. Every
        run starts from it.
    n_runs, n_temperatures, power, n_moves, verbose
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
    batched = _batched(model, data, priors, given, "reverse_ais_log_evidence")
    start = {}
    for a in priors.free:
        value = np.asarray(posterior_sample[a], dtype=np.float64)
        if value.shape != priors.shape[a].shape or not np.all(value > 0):
            raise ValueError(
                f"posterior_sample[{a}] must be a positive array of shape "
                f"{priors.shape[a].shape}, the free factor's; got shape {value.shape}.")
        start[a] = np.log(value)
    ladder = _ladder(n_temperatures, power)[::-1]
    steps = np.full(n_temperatures, 0.5)
    pilot_rng, run_rng = rng.spawn(2)

    def copies(n):
        return {a: np.broadcast_to(p, (n, *p.shape)) for a, p in start.items()}

    _anneal(pilot_rng, ladder, steps, copies(max(n_runs // 4, 2)), n_moves, batched, priors,
            adapt=True)
    progress = progress_or_none(verbose, "reverse AIS", n_temperatures - 1, unit="temperatures")
    log_weights, acceptance = _anneal(run_rng, ladder, steps, copies(n_runs), n_moves, batched,
                                      priors, adapt=False, progress=progress)
    return _summary(log_weights, acceptance, sign=-1.0, n_temperatures=n_temperatures,
                    stacklevel=3)


def _batched(model, data, priors, given, caller):
    if data.is_sparse:
        raise TypeError(f"{caller} runs on dense data; pass a dense array.")
    return _Batched(model, data, priors.free, dict(given or {}))


def _ladder(n_temperatures, power):
    """Rungs :math:`t_k = (k / (n - 1))^{power}`, k = 0 .. n - 1."""
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
