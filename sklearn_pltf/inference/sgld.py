"""Stochastic gradient Langevin dynamics (SGLD) on power posteriors.

At temperature :math:`t \\in [0, 1]` the target is the power posterior
:math:`\\pi_t(\\theta) \\propto p(\\theta)\\, p(X \\mid \\theta)^t` (Welling &
Teh, ICML 2011; Şimşekli, Badeau, Richard & Cemgil, ICASSP 2016). A step is a
preconditioned discretisation of the Langevin diffusion,

.. math::

    \\theta_{k+1} = \\theta_k + \\frac{\\epsilon}{2} P \\hat g(\\theta_k)
        + \\sqrt{\\epsilon P}\\, \\frac{\\xi_k + \\xi_{k+1}}{2}, \\qquad
    \\hat g = \\nabla \\log p(\\theta)
        + t \\frac{N}{N_s} \\sum_{n \\in B} \\nabla \\log p(x_n \\mid \\theta),

with a minibatch :math:`B` of :math:`N_s` of the :math:`N` listed entries, so
:math:`\\hat g` is unbiased, and standard normal :math:`\\xi_k`, each used by
two consecutive steps: the Leimkuhler–Matthews scheme (Leimkuhler &
Matthews 2013), the same cost as Euler–Maruyama's fresh
:math:`\\mathcal N(0, \\epsilon P)` per step, but with an invariant law that is
exact for Gaussian targets at any stable step (Euler's variance is too large
by a factor :math:`1/(1 - \\epsilon\\lambda/4)` along curvature
:math:`\\lambda`) and off by :math:`O(\\epsilon^2)` otherwise. Thermodynamic
integration needs each temperature's mean log-likelihood to within a
fraction of a nat, which Euler's bias spends at useful step sizes. The
step size follows :math:`\\epsilon_k = (a / k)^b` over the ``n_warmup``
warm-up steps, from 1 down to the final :math:`(a / K)^b`, which is held
afterwards (:func:`step_sizes`). ``P`` is diagonal: the inverse of the
target's curvature (a positive approximation of the diagonal of
:math:`-\\nabla^2 \\log \\pi_t`) averaged over the warm-up and frozen after
it, so ``epsilon`` is a step in units of the posterior's width. A constant
``P`` needs no correction term (a position-dependent one would; Ma, Chen &
Fox 2015). An estimate from squared
gradients, :math:`1/\\mathbb E[\\hat g^2]` (equal to the curvature at
stationarity), is not used: it freezes a chain that starts far from the
mode, where large gradients make the steps tiny, so the gradients stay large.

A target is any object with

- ``init(rng)``: a first point, a tuple of arrays (unconstrained coordinates);
- ``draw_batch(rng)``: a minibatch;
- ``gradient(params, batch, temperature, anchor)``: a
  :class:`~._batches.TargetGradient`, the stochastic gradient above, an
  unbiased estimate ℓ̂ of log p(X | θ), an estimate of ℓ̂'s variance over
  minibatches (:func:`~._batches.subsampling_variance`) and what
  ``curvature`` reads, with the control variates of ``anchor`` (None:
  none);
- ``curvature(params, temperature, allocated)``: the preconditioner's
  inverse, one positive array per block, from the ``allocated`` of the
  last gradient;
- ``anchor(params)``: the control variates' reference point at ``params``
  (:class:`~._batches.ControlVariates` for :class:`PoissonTarget`);
- ``factors(params)``: every factor of the model, in model order;
  ``positions``: the model position of each parameter block; ``tied``:
  ``{position: source position}`` of factors that are another factor.

A target holds the data and the model only; the chain's state, its
reference point included, is the ``SGLDState``.
:class:`PoissonTarget` is the Poisson–Gamma PLTF model on any model string,
with uniform (:class:`~._batches.RandomBatches`) or parallel-block
(:class:`~._batches.BlockBatches`) minibatches; :class:`DistributedPoissonTarget`
is the same posterior over a Dask array's blocks, each part of the parallel
blocks computed on the workers that hold them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine._kernels import TINY
from ..engine.distributed import BlockParts, anchor_blocks, part_gradient_terms
from ._batches import (
    BlockBatches, ControlVariates, RandomBatches, TargetGradient, subsampling_variance,
    subsampling_variance_of,
)
from ._common import initial_factors

__all__ = [
    "SGLDState", "SGLDInfo", "step", "step_sizes", "AdaptiveSGLD", "run", "init", "PoissonTarget",
    "DistributedPoissonTarget",
]


class SGLDState(NamedTuple):
    """The current point (unconstrained coordinates, one array per block of
    parameters), the diagonal preconditioner of each block, the standard
    normal noise of the last step (the next step reuses it), and the
    target's control variates (None until the first warm-up ends)."""

    params: tuple
    preconditioner: tuple
    noise: tuple
    anchor: object = None


#: What a step reports: its target's :class:`~._batches.TargetGradient` at
#: the point the step started from (the unbiased estimate of log p(X | θ),
#: its variance over minibatches, 0 for the full data, the stochastic
#: gradient, and what the target's ``curvature`` reads).
SGLDInfo = TargetGradient


def step(rng, state, target, temperature, step_size, batch):
    """One SGLD step on ``target``'s power posterior at ``temperature``."""
    estimate = target.gradient(state.params, batch, temperature, state.anchor)
    fresh = tuple(rng.standard_normal(p.shape) for p in state.params)
    params = tuple(
        p + 0.5 * step_size * pre * g + np.sqrt(step_size * pre) * 0.5 * (old + new)
        for p, g, pre, old, new in zip(state.params, estimate.gradient, state.preconditioner,
                                       state.noise, fresh)
    )
    return state._replace(params=params, noise=fresh), estimate


def step_sizes(step_size, n_warmup, first=1.0):
    """Warm-up step sizes ``(a / k)^b``, ``k = 1..n_warmup``, from ``first``
    (``k = 1``) down to ``step_size`` (the last, held afterwards):
    ``b = log(first / step_size) / log(n_warmup)`` and ``a = first^(1/b)``.
    Sizes at or below ``step_size`` throughout if ``first`` is not larger."""
    k = np.arange(1, n_warmup + 1)
    if first <= step_size or n_warmup < 2:
        return np.full(n_warmup, float(step_size))
    decay = np.log(first / step_size) / np.log(n_warmup)
    return first * k ** -decay


class AdaptiveSGLD:
    """SGLD steps at ``temperature`` with :func:`step_sizes`' warm-up: the
    first ``n_warmup`` calls take decreasing steps and re-estimate the
    preconditioner as the mean curvature over the warm-up (the start of a
    temperature counts as much as its end: both are the posterior's scale);
    the first call after them freezes it and puts the target's control
    variates at that point into the state (its ``anchor``); every later call
    takes a step of ``step_size``.

    ``adaptive(rng, state) -> (state, info)`` is the ``step`` a chain driver
    takes (:func:`~._chains.drive_chain`); ``info.log_likelihood`` is the
    estimate at the point the step started from.
    """

    def __init__(self, target, temperature, *, n_warmup, step_size):
        self.target, self.temperature = target, temperature
        self.n_warmup, self.step_size = n_warmup, step_size
        self._warmup_sizes = step_sizes(step_size, n_warmup)
        self._curvature = None
        self._taken = 0
        self._settled = False

    def __call__(self, rng, state):
        target, temperature = self.target, self.temperature
        if self._taken >= self.n_warmup:
            state = self.settle(state)
            self._taken += 1
            return step(rng, state, target, temperature, self.step_size, target.draw_batch(rng))
        curvature = self._curvature_of(state)
        self._taken += 1
        state = state._replace(preconditioner=tuple(1.0 / c for c in curvature))
        state, info = step(rng, state, target, temperature, self._warmup_sizes[self._taken - 1],
                           target.draw_batch(rng))
        self._curvature = [c + (new - c) / (self._taken + 1) for c, new in
                           zip(curvature, target.curvature(state.params, temperature,
                                                           info.allocated))]
        return state, info

    def settle(self, state):
        """``state`` with the warm-up's preconditioner frozen and the control
        variates anchored there; done once, after the warm-up."""
        if self._settled:
            return state
        curvature = self._curvature_of(state)
        self._settled = True
        return state._replace(preconditioner=tuple(1.0 / c for c in curvature),
                              anchor=self.target.anchor(state.params))

    def _curvature_of(self, state):
        if self._curvature is None:
            self._curvature = [1.0 / p for p in state.preconditioner]
        return self._curvature


def run(rng, state, target, temperature, *, n_warmup, n_steps, step_size):
    """Warm up at ``temperature`` and take ``n_steps`` steps after it
    (:class:`AdaptiveSGLD`): one temperature of a ladder.

    Returns the final state, the log-likelihood estimate of each step after
    the warm-up and the estimated minibatch variance of each.
    """
    advance = AdaptiveSGLD(target, temperature, n_warmup=n_warmup, step_size=step_size)
    for _ in range(n_warmup):
        state, _ = advance(rng, state)
    log_likelihoods, noises = np.empty(n_steps), np.empty(n_steps)
    for k in range(n_steps):
        state, info = advance(rng, state)
        log_likelihoods[k], noises[k] = info.log_likelihood, info.log_likelihood_noise
    return advance.settle(state), log_likelihoods, noises


def init(rng, target, temperature=0.0):
    """The target's first point, preconditioned by its curvature there at
    ``temperature`` (``run``'s warm-up re-estimates it)."""
    params = target.init(rng)
    estimate = target.gradient(params, target.draw_batch(rng), temperature, None)
    return SGLDState(
        params, tuple(1.0 / c for c in target.curvature(params, temperature, estimate.allocated)),
        tuple(rng.standard_normal(p.shape) for p in params),
    )


# ------------------------------------------------------------- the PLTF target
class PoissonTarget:
    """The Poisson–Gamma PLTF posterior in log coordinates φ = log Z.

    Positivity comes from the transform: SGLD runs on φ, whose density is
    :math:`p(e^\\phi)\\, e^\\phi` (the Jacobian adds one to the Gamma prior's
    shape), so the log prior's gradient is :math:`A - R Z`, finite at any φ,
    and the likelihood's is

    .. math::

        Z_\\alpha \\circ \\big(\\Delta_\\alpha(M \\circ X / \\hat X)
            - \\Delta_\\alpha(M)\\big),

    bounded by the counts allocated to each element.

    Zeros of the data enter the likelihood only through
    :math:`-\\sum M \\hat X`, whose gradient :math:`\\Delta_\\alpha(M)` the
    contractor gives in closed form at the cost of the factors (plus the
    missing entries). The minibatch samples the observed non-zeros, so a
    step costs what the batch and the factors cost, whatever the number of
    non-zeros.

    Both the gradient and the log-likelihood use control variates around a
    reference point Z₀ that :meth:`anchor` computes (one pass over the
    non-zeros, after each temperature's warm-up) and the chain's state
    carries. The gradient's data term is the
    expected allocation :math:`S_\\alpha(Z) = Z_\\alpha \\circ
    \\Delta_\\alpha(X/\\hat X)(Z)`, estimated as (Baker, Fearnhead, Fox &
    Nemeth 2019)

    .. math::

        S_\\alpha(Z_0) + \\frac{N}{N_s}\\big(S^B_\\alpha(Z) - S^B_\\alpha(Z_0)\\big),

    with :math:`S^B` over the batch: twice the work of the plain estimate
    per step, and a noise that shrinks as Z nears Z₀, where the plain
    estimate's does not (its noise inflates SGLD's stationary variance in
    proportion to the step). Each term is bounded by the counts; a control
    variate on :math:`\\Delta_\\alpha(X/\\hat X)` alone, multiplied by Z
    afterwards, is not, and let a chain run off to Z = inf. The log-likelihood's (Bardenet, Doucet &
    Holmes 2017) is

    .. math::

        \\hat\\ell(Z) = \\sum_n x_n \\log \\hat x_n(Z_0)
            + \\frac{N}{N_s} \\sum_{n \\in B} x_n
                \\log \\frac{\\hat x_n(Z)}{\\hat x_n(Z_0)}
            - \\sum M \\hat X(Z) - \\sum M \\log \\Gamma(X + 1),

    unbiased at any Z₀, and of small variance when Z stays near Z₀. Written
    for Poisson data; under another likelihood (:mod:`sklearn_pltf.engine._likelihood`)
    :math:`X / \\hat X` is the expected latent count over :math:`\\hat X` and
    :math:`x \\log \\hat x` the likelihood's own term at a non-zero.

    Parameters
    ----------
    model : Model
        A bound model.
    contractor : DenseContractor or SparseContractor
        For the data (any non-negative values).
    priors : GammaPriors
        ``None`` marks held factors.
    given : dict
        ``{position: array}`` for every held factor.
    batch_size : int, default=None
        Non-zeros per minibatch (all of them if None or larger). Ignored when
        ``n_blocks`` is given.
    n_blocks : int, default=None
        Parallel-block minibatches (:class:`~._batches.BlockBatches`) with this many
        ranges per axis.
    """

    def __init__(self, model, contractor, priors, given=None, batch_size=None, n_blocks=None):
        self.model, self.contractor, self.priors = model, contractor, priors
        self.given = dict(given or {})
        self.free = priors.free
        self.positions = self.free  # the model positions of the parameter blocks
        self.tied = {}
        self.entries = contractor.nonzeros
        n = self.entries.n_entries
        if n_blocks is not None:
            self.batches = BlockBatches(self.entries.coords, model.observed_shape, n_blocks)
        else:
            self.batches = RandomBatches(n, n if batch_size is None else batch_size)

    def init(self, rng):
        """Log of a start drawn around the data's scale (as the samplers and VB start)."""
        factors = initial_factors(rng, self.model, self.contractor, self.given, self.free)
        return tuple(np.log(np.maximum(factors[a], TINY)) for a in self.free)

    def factors(self, params):
        """Every factor in model order: exp(φ) for the free ones."""
        factors = [self.given.get(a) for a in range(self.model.n_factors)]
        for alpha, phi in zip(self.free, params):
            factors[alpha] = np.exp(phi)
        return factors

    def draw_batch(self, rng):
        return self.batches.draw(rng)

    def gradient(self, params, batch, temperature, anchor=None):
        """The :class:`~._batches.TargetGradient` at ``params`` from ``batch``,
        with the control variates of ``anchor`` (None: none)."""
        index, scale = batch
        factors = self.factors(params)
        if index.size == self.entries.n_entries:
            return self._full_gradient(factors, temperature)
        sub = self.entries.subset(index)
        likelihood = self.contractor.likelihood
        xhat = np.maximum(sub.xhat(factors), TINY) if sub.n_entries else np.ones(0)
        differences = likelihood.entry_log_terms(sub.values, xhat)
        if anchor is not None:
            differences = differences - anchor.terms[index]
        log_likelihood = (
            (anchor.total if anchor is not None else 0.0) + scale * float(np.sum(differences))
            - self.contractor.masked_total(factors) + self.contractor.log_base_measure
        )
        # E[N] / X̂ (X / X̂ for Poisson data) at the batch, at the point and at
        # the reference, computed once for every factor's Δ (delta(ratio=True)
        # would recompute X̂ per factor).
        ratio = self.entries.subset(index, likelihood.count_ratio(sub.values, xhat))
        cancel = None
        if anchor is not None and sub.n_entries:
            cancel = self.entries.subset(index, anchor.ratios[index])
        gradient, allocations = [], []
        for i, alpha in enumerate(self.free):
            z = factors[alpha]
            allocated = anchor.allocation[i] if anchor is not None else 0.0
            if sub.n_entries:
                allocated = allocated + scale * z * ratio.delta(alpha, factors)
            if cancel is not None:
                reference = anchor.reference
                allocated = allocated - scale * reference[alpha] * cancel.delta(alpha, reference)
            gradient.append(self._factor_gradient(alpha, factors, allocated, temperature))
            allocations.append(allocated)
        return TargetGradient(tuple(gradient), float(log_likelihood),
                              subsampling_variance(differences, scale), tuple(allocations))

    def _full_gradient(self, factors, temperature):
        """The exact gradient and log-likelihood, for a batch of every non-zero:
        the control variates would cancel exactly, and the full list has the
        contractor's compiled kernels where the model allows them."""
        entries, c = self.entries, self.contractor
        log_likelihood = -c.masked_total(factors) + c.data_loglik(factors) + c.log_base_measure
        allocations = tuple(factors[alpha] * entries.delta(alpha, factors, ratio=True)
                            for alpha in self.free)
        gradient = tuple(self._factor_gradient(alpha, factors, allocated, temperature)
                         for alpha, allocated in zip(self.free, allocations))
        return TargetGradient(gradient, float(log_likelihood), 0.0, allocations)

    def _factor_gradient(self, alpha, factors, allocated, temperature):
        """∂/∂φ_α of the log power posterior, given the (estimated) expected
        allocation ``allocated`` = Z_α ∘ Δ_α(X / X̂)."""
        z = factors[alpha]
        likelihood = allocated - z * self.contractor.masked_delta(alpha, factors)
        return temperature * likelihood + self.priors.shape[alpha] - self.priors.rate[alpha] * z

    def curvature(self, params, temperature, allocated):
        """The larger of two curvature scales of Z_α's Gamma conditional
        (``inference.gibbs``) in φ = log Z: its shape :math:`A + t\\,\\hat S_\\alpha`
        with the allocation at its expectation
        :math:`\\hat S_\\alpha = Z \\circ \\Delta_\\alpha(X / \\hat X)` (``allocated``,
        as the last :meth:`gradient` estimated it), and its curvature at the current point,
        :math:`(R + t\\,\\Delta_\\alpha(M)) Z` (closed form). Both equal the shape
        at the conditional's mode. The first never falls below A, which keeps
        steps bounded in the flat left tail of log Z; the second is exact
        where Z is too large, and does not depend on how many of an element's
        entries the minibatch happened to hold."""
        factors = self.factors(params)
        return tuple(
            np.maximum(
                self.priors.shape[a] + temperature * np.maximum(s, 0.0),
                factors[a] * (self.priors.rate[a] + temperature * self.contractor.masked_delta(a, factors)),
            )
            for a, s in zip(self.free, allocated)
        )

    def anchor(self, params):
        """The control variates' reference point Z₀ at ``params``, a
        :class:`~._batches.ControlVariates` (one pass over the non-zeros)."""
        reference = self.factors(params)
        allocation = tuple(reference[a] * self.contractor.ratio_delta(a, reference) for a in self.free)
        likelihood, values = self.contractor.likelihood, self.entries.values
        xhat = np.maximum(self.entries.xhat(reference), TINY)
        terms = likelihood.entry_log_terms(values, xhat)
        return ControlVariates(reference, allocation, terms, likelihood.count_ratio(values, xhat),
                               float(np.sum(terms)))

    def log_likelihood(self, params):
        """log p(X | Z) over the whole data (for checks; one pass over the non-zeros)."""
        factors = self.factors(params)
        c = self.contractor
        return -c.masked_total(factors) + c.data_loglik(factors) + c.log_base_measure


class DistributedPoissonTarget(PoissonTarget):
    """:class:`PoissonTarget` with parallel-block minibatches over a
    :class:`~sklearn_pltf.engine.distributed.DistributedTensor` chunked on the
    block grid (:func:`~sklearn_pltf.engine.distributed.block_grid`).

    The same gradient and log-likelihood estimates, term for term: a step's
    part is drawn as :class:`~._batches.BlockBatches` draws it, and its
    blocks, which share no factor rows, compute their terms at once, each
    on the worker that holds it; the control variates' per-entry terms are
    kept there too. Closed-form terms (the zeros, the priors) are computed
    on the client, as in memory.

    Parameters
    ----------
    model, contractor, priors, given
        As :class:`PoissonTarget`; ``contractor`` a
        :class:`~sklearn_pltf.engine.distributed.DistributedContractor`.
    n_blocks : int
        Ranges per axis; the data's chunks must be its grid.
    """

    def __init__(self, model, contractor, priors, given=None, n_blocks=1):
        self.model, self.contractor, self.priors = model, contractor, priors
        self.given = dict(given or {})
        self.free = priors.free
        self.positions = self.free
        self.tied = {}
        self.batches = BlockParts(contractor.data, n_blocks)

    def gradient(self, params, batch, temperature, anchor=None):
        part, scale = batch
        factors = self.factors(params)
        if self.batches.n_parts == 1:
            return self._full_gradient(factors, temperature)
        allocation, (n, mean, squares) = part_gradient_terms(
            self.contractor, part, factors, None if anchor is None else anchor.terms, self.free)
        log_likelihood = (
            (anchor.total if anchor is not None else 0.0) + scale * n * mean
            - self.contractor.masked_total(factors) + self.contractor.log_base_measure
        )
        gradient, allocations = [], []
        for i, alpha in enumerate(self.free):
            allocated = (anchor.allocation[i] if anchor is not None else 0.0) + scale * allocation[i]
            gradient.append(self._factor_gradient(alpha, factors, allocated, temperature))
            allocations.append(allocated)
        variance = squares / (n - 1) if n > 1 else 0.0
        return TargetGradient(tuple(gradient), float(log_likelihood),
                              subsampling_variance_of(n, variance, scale), tuple(allocations))

    def _full_gradient(self, factors, temperature):
        c = self.contractor
        log_likelihood = -c.masked_total(factors) + c.data_loglik(factors) + c.log_base_measure
        allocations = tuple(factors[alpha] * c.ratio_delta(alpha, factors) for alpha in self.free)
        gradient = tuple(self._factor_gradient(alpha, factors, allocated, temperature)
                         for alpha, allocated in zip(self.free, allocations))
        return TargetGradient(gradient, float(log_likelihood), 0.0, allocations)

    def anchor(self, params):
        """The reference point: kept on the workers, each block's per-entry
        terms and allocation (``terms`` holds their futures; ``ratios`` is
        unused), and the blocks' allocations added up (one pass over every
        block)."""
        reference = self.factors(params)
        futures, total, allocation = anchor_blocks(self.contractor, reference, self.free)
        return ControlVariates(reference, allocation, futures, None, total)

