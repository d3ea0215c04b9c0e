"""Stochastic thermodynamic integration (STI): log p(X) from minibatch SGLD
over power posteriors (Şimşekli, Badeau, Richard & Cemgil, ICASSP 2016).

Thermodynamic integration (Ogata 1989; Friel & Pettitt 2008) writes the
evidence as an integral over the temperature ``t`` of the power posterior
:math:`\\pi_t(\\theta) \\propto p(\\theta) p(X \\mid \\theta)^t`:

.. math::

    \\log p(X) = \\int_0^1 \\mathbb E_{\\pi_t}[\\log p(X \\mid \\theta)]\\, dt
        \\approx \\sum_{i=1}^{n-1} \\frac{t_i - t_{i-1}}{2}
            \\big(\\bar\\ell_{i-1} + \\bar\\ell_i\\big),

each :math:`\\bar\\ell_i` the mean of unbiased minibatch estimates of
:math:`\\log p(X \\mid \\theta)` over SGLD draws at :math:`t_i`. The
integrand's derivative is known, :math:`\\frac{d}{dt}\\mathbb E_{\\pi_t}[\\ell]
= \\mathrm{Var}_{\\pi_t}[\\ell]`, so the estimate subtracts the
Euler–Maclaurin end correction of each interval,
:math:`\\sum_i \\frac{(t_i - t_{i-1})^2}{12} (V_i - V_{i-1})` (the corrected
trapezoid rule of Friel, Hurn & Wyse 2014), with :math:`V_i` the variance of
the estimates at :math:`t_i` less their minibatch noise. The plain rule is
kept in ``STIEstimate.trapezoid``.

The ladder. :math:`\\mathbb E_{\\pi_t}[\\log p(X|\\theta)]` rises steeply
near ``t = 0``, where the prior still holds the parameters away from the
data, over a range of t that shrinks with the data's size. A uniform ladder
puts one interval over that rise and misses the integral by hundreds of
nats or more, even with exact integrands (``tests/evidence/test_sti.py``). Powers
:math:`t_i = (i / (n - 1))^p` (Friel & Pettitt 2008; Calderhead & Girolami
2009) pack temperatures where it changes; the default p = 6 with 40
temperatures and the corrected rule below is checked against the exact
integral of the Gaussian additive model (``tests/evidence/test_sti.py``
compares the ladders).

How long to run each temperature. Each temperature starts where the last
one ended, at a colder power posterior, and the log-likelihood relaxes
towards its new level over many steps; meanwhile the draws are
autocorrelated. With ``n_steps="auto"`` the chain first walks the ladder
keeping :data:`MIN_KEPT` steps at each temperature, then spends further
blocks of :data:`BLOCK` steps, one at a time, continuing the chain of the
temperature where a block does most good: first any temperature whose
draws still trend (a Geweke test of their two halves, |z| > 2, by more than
that temperature's share of ``tol``; Geweke 1992), whose first half is then
discarded as further warm-up; otherwise the one whose share of the variance,
:math:`w_i^2 \\mathrm{se}_i^2` (w the trapezoid weights), a block reduces
most, which spends the steps as the optimal allocation
:math:`n_i \\propto w_i \\sigma_i \\sqrt{\\tau_i}` does. It stops when no
temperature trends and the total standard error is at most ``tol``, or
after ``max_steps`` steps in all. Temperatures near the prior, of tiny
weight, keep their :data:`MIN_KEPT`; the steps go where the integral is
decided. A temperature still trending at the end is counted in
``STIEstimate.unsettled`` (its mean is biased by more than the standard
error says), and the estimator warns.

The standard error. Each :math:`\\bar\\ell_i` gets a standard error from
its draws' effective sample size (Geyer's initial monotone sequence
estimator), and the trapezoid weights combine them, treating temperatures
as independent (each one re-warms). It covers the Monte Carlo noise, not the
bias of the trapezoid rule or of SGLD's fixed step, nor a slow mode that no
temperature's draws reveal: independent chains' spread does
(``evidence._posterior.combine_chain_estimates``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine._progress import progress_or_none
from ..inference import sgld
from ._mc_error import mean_error

__all__ = ["STIEstimate", "sti_log_evidence", "temperature_ladder", "trapezoid_weights"]

#: Auto mode: SGLD steps per block, kept steps at each temperature on the
#: first walk up the ladder, and the default budget per temperature.
BLOCK = 250
MIN_KEPT = 500
STEPS_PER_TEMPERATURE = 2000


class STIEstimate(NamedTuple):
    """The STI estimate and its parts, one entry per temperature."""

    log_evidence: float  # the corrected trapezoid rule
    standard_error: float
    trapezoid: float  # the plain trapezoid rule, for comparison
    temperatures: np.ndarray
    expected_log_likelihoods: np.ndarray
    standard_errors: np.ndarray
    variances: np.ndarray  # Var_t[log p(X | θ)], minibatch noise removed
    state: sgld.SGLDState  # where the chain ended, at t = 1
    steps: np.ndarray  # SGLD steps after the warm-up at each temperature, discarded ones included
    unsettled: int = 0  # temperatures whose log-likelihood still trended when the budget ran out


def temperature_ladder(n_temperatures, power=6.0):
    """:math:`t_i = (i / (n - 1))^{power}`, ``i = 0..n-1``: from 0 (the prior)
    to 1 (the posterior); ``power=1`` is the uniform ladder."""
    if n_temperatures < 2:
        raise ValueError(f"A ladder needs at least 2 temperatures, got {n_temperatures}.")
    return (np.arange(n_temperatures) / (n_temperatures - 1)) ** float(power)


def trapezoid_weights(temperatures):
    """Weights w with Σ w_i f(t_i) the trapezoid rule over ``temperatures``."""
    t = np.asarray(temperatures, dtype=np.float64)
    widths = np.diff(t)
    weights = np.zeros_like(t)
    weights[:-1] += widths / 2
    weights[1:] += widths / 2
    return weights


def _trending(values, negligible):
    """Geweke's test: do the two halves' means differ by more than twice
    their combined standard error, and by more than ``negligible``?"""
    first, second = np.array_split(values, 2)
    spread = np.hypot(mean_error(first), mean_error(second))
    return bool(abs(second.mean() - first.mean()) > max(2.0 * spread, negligible))


class _Temperature:
    """One temperature's chain in auto mode: its state, kept draws, steps
    taken after the warm-up, and their summaries."""

    def __init__(self, temperature, weight, share, state, log_likelihoods, noises):
        self.temperature, self.weight, self.share = temperature, weight, share
        self.state, self.taken = state, log_likelihoods.size
        self.log_likelihoods, self.noises = log_likelihoods, noises
        self._summarise()

    def _summarise(self):
        self.finite = bool(np.all(np.isfinite(self.log_likelihoods)))
        self.error = mean_error(self.log_likelihoods) if self.finite else np.inf
        self.trending = self.finite and _trending(self.log_likelihoods, negligible=self.share)

    def gain(self):
        """What one more block does: infinite while trending, else the drop
        in :math:`w^2 \\mathrm{se}^2`."""
        if self.trending:
            return np.inf
        return (self.weight * self.error) ** 2 * BLOCK / (self.log_likelihoods.size + BLOCK)

    def extend(self, rng, target, step_size):
        """Discard the first half if trending, then continue the chain a block."""
        if self.trending:
            half = self.log_likelihoods.size // 2
            self.log_likelihoods, self.noises = self.log_likelihoods[half:], self.noises[half:]
        self.state, more, more_noises = sgld.run(
            rng, self.state, target, self.temperature, n_warmup=0, n_steps=BLOCK,
            step_size=step_size,
        )
        self.log_likelihoods = np.concatenate([self.log_likelihoods, more])
        self.noises = np.concatenate([self.noises, more_noises])
        self.taken += BLOCK
        self._summarise()


def _auto_ladder(rng, state, target, ladder, weights, *, n_warmup, step_size, tol, max_steps,
                 progress):
    """Auto mode (module docstring): walk up with :data:`MIN_KEPT` steps a
    temperature, then extend where a block does most good, until nothing
    trends and the standard error is at most ``tol``, or ``max_steps`` (after
    the warm-ups) are spent. Returns the temperatures' chains."""
    shares = tol / np.sqrt(ladder.size) / np.maximum(weights, np.finfo(float).tiny)
    chains = []
    for temperature, weight, share in zip(ladder, weights, shares):
        state, log_likelihoods, noises = sgld.run(
            rng, state, target, temperature, n_warmup=n_warmup, n_steps=MIN_KEPT,
            step_size=step_size,
        )
        chains.append(_Temperature(temperature, weight, share, state, log_likelihoods, noises))
        if progress is not None:
            progress(n_warmup + MIN_KEPT)
    spent = MIN_KEPT * ladder.size
    while spent + BLOCK <= max_steps:
        if not all(c.finite for c in chains):
            break  # a chain diverged: the estimate is not finite, and the caller says so
        total_error = np.sqrt(sum((c.weight * c.error) ** 2 for c in chains))
        if not any(c.trending for c in chains) and total_error <= tol:
            break
        chains[int(np.argmax([c.gain() for c in chains]))].extend(rng, target, step_size)
        spent += BLOCK
        if progress is not None:
            progress(BLOCK)
    if progress is not None and progress.done < progress.total:
        progress(progress.total - progress.done)
    return chains


def sti_log_evidence(rng, target, *, n_temperatures=40, power=6.0, n_steps="auto",
                     n_warmup=500, step_size=0.1, temperatures=None, tol=1.0,
                     max_steps=None, verbose=0):
    """Estimate log p(X) by stochastic thermodynamic integration.

    The chain starts from ``target.init`` and walks the ladder upwards: at
    each temperature it warms up (``n_warmup`` steps, decreasing sizes, the
    preconditioner re-estimated), then keeps steps whose log-likelihood
    estimates average into :math:`\\bar\\ell_i`: ``n_steps`` of them, or
    with ``"auto"`` as many as the temperature needs (module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
    target : object
        An SGLD target (:mod:`sklearn_pltf.inference.sgld`), e.g. a
        :class:`~sklearn_pltf.inference.sgld.PoissonTarget`.
    n_temperatures : int, default=40
        Size of the ladder.
    power : float, default=6.0
        Ladder spacing (:func:`temperature_ladder`).
    n_steps : int or "auto", default="auto"
        Kept SGLD steps per temperature, or ``"auto"``: spend steps where
        the draws still trend or the standard error is largest, until
        nothing trends and the standard error meets ``tol``, within
        ``max_steps``.
    n_warmup : int, default=500
        Warm-up steps at each temperature (decreasing step sizes).
    step_size : float, default=0.1
        The SGLD step after warm-up, in units of the preconditioner (the
        posterior's width): smaller is less biased and mixes more slowly.
    temperatures : array-like, default=None
        A ladder of your own (increasing, from 0 to 1), instead of
        ``n_temperatures`` and ``power``.
    tol : float, default=1.0
        With ``n_steps="auto"``: the standard error (nats) to aim at; a
        temperature's trend matters when its weight times the trend exceeds
        ``tol / sqrt(n_temperatures)``.
    max_steps : int, default=None
        With ``n_steps="auto"``: the most SGLD steps after the warm-ups, over
        the whole ladder; None is :data:`STEPS_PER_TEMPERATURE` times the
        number of temperatures.
    verbose : int, default=0
        At 1 or more, progress lines over the temperatures with the time left.

    Returns
    -------
    STIEstimate
    """
    ladder = (temperature_ladder(n_temperatures, power) if temperatures is None
              else np.asarray(temperatures, dtype=np.float64))
    if ladder[0] != 0 or ladder[-1] != 1 or np.any(np.diff(ladder) <= 0):
        raise ValueError("temperatures must increase from 0 to 1.")
    auto = isinstance(n_steps, str)
    if auto and n_steps != "auto":
        raise ValueError(f"n_steps must be a positive integer or 'auto', got {n_steps!r}.")
    weights = trapezoid_weights(ladder)
    state = sgld.init(rng, target)
    if auto:
        max_steps = STEPS_PER_TEMPERATURE * ladder.size if max_steps is None else max_steps
        total = ladder.size * (n_warmup + MIN_KEPT) + max(max_steps - MIN_KEPT * ladder.size, 0)
        progress = progress_or_none(verbose, "STI", total, unit="steps")
        chains = _auto_ladder(rng, state, target, ladder, weights, n_warmup=n_warmup,
                              step_size=step_size, tol=tol, max_steps=max_steps,
                              progress=progress)
        runs = [(c.log_likelihoods, c.noises) for c in chains]
        errors = np.array([c.error for c in chains])
        state, steps = chains[-1].state, np.array([c.taken for c in chains])
        unsettled = sum(c.trending for c in chains)
    else:
        progress = progress_or_none(verbose, "STI", ladder.size, unit="temperatures")
        runs = []
        for temperature in ladder:
            state, log_likelihoods, noises = sgld.run(
                rng, state, target, temperature, n_warmup=n_warmup, n_steps=n_steps,
                step_size=step_size,
            )
            runs.append((log_likelihoods, noises))
            if progress is not None:
                progress()
        steps, unsettled = np.full(ladder.size, n_steps), 0
        errors = np.array([mean_error(log_likelihoods) for log_likelihoods, _ in runs])
    means = np.array([log_likelihoods.mean() for log_likelihoods, _ in runs])
    # The estimates' spread is the posterior's plus the minibatches'.
    variances = np.array([max(log_likelihoods.var(ddof=1) - noises.mean(), 0.0)
                          for log_likelihoods, noises in runs])
    plain = float(weights @ means)
    correction = float(np.sum(np.diff(ladder) ** 2 / 12 * np.diff(variances)))
    return STIEstimate(
        plain - correction, float(np.sqrt(np.sum((weights * errors) ** 2))), plain,
        ladder, means, errors, variances, state, steps, unsettled,
    )
