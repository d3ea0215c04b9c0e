"""Prior rates learned by the evidence: type-II maximum likelihood inside VB.

Two kinds of learned rate, both maximisers of the variational bound in the
rates at the current q:

- **A rate per factor** (``prior_rate="auto"``): factor α's elements share
  one rate :math:`R_\\alpha`; the bound's terms in it,
  :math:`\\sum_v [A_v \\log R_\\alpha - R_\\alpha E[Z_\\alpha(v)]]`, peak at

  .. math:: R_\\alpha = \\sum_v A_v \\big/ \\sum_v E[Z_\\alpha(v)].

- **Automatic relevance determination** over latent indices: a relevance
  :math:`\\lambda^\\ell_p > 0` per value p of each chosen latent index ℓ,
  shared by every factor that carries ℓ, and the prior
  :math:`Z_\\alpha(v) \\sim \\mathrm{Gamma}(A, A \\prod_{\\ell \\in \\alpha}
  \\lambda^\\ell_{v_\\ell})` (prior mean :math:`1 / \\prod \\lambda`; Tan &
  Févotte 2013 tie W's columns to H's rows this way, Zhao, Zhang & Cichocki
  2015 a CP component across modes). In :math:`u = \\log \\lambda` the
  bound's terms :math:`\\sum A (\\log A + \\sum u) - A e^{\\sum u} E[Z]`
  are concave, and each λ given the others peaks at

  .. math::

      \\lambda^\\ell_p = \\frac{\\sum_{\\alpha \\ni \\ell} \\sum_{v: v_\\ell = p} A_v}
      {\\sum_{\\alpha \\ni \\ell} \\sum_{v: v_\\ell = p} A_v E[Z_\\alpha(v)]
       \\prod_{m \\in \\alpha, m \\ne \\ell} \\lambda^m_{v_m}},

  exact in one pass where no factor carries two such indices (NMF, CP),
  by Newton's method in :math:`u` to the joint maximum otherwise (a Tucker core).
  A component the data do not need has its relevance grow without bound
  and its mass fall to zero; its q then equals its prior.

The rates are a function of q (:func:`learned_priors`), so the kernel
:class:`LearnedRatesKernel` keeps VB's state as it is, with the rates learned
at it beside it (:class:`LearnedState`): its step updates q at the rates
learned from the current q, and its objective is the bound at the rates
learned from the state it scores, :math:`B(q, R^*(q)) = \\max_R B(q, R)`.
Each step raises :math:`B(\\cdot, R)` at fixed R and the new rates raise it
again, so the objective never decreases, and SQUAREM and the stopping rule
read it as they read the plain bound, extrapolating VB's state. At
convergence it is a lower bound on :math:`\\log p(X \\mid R^*)`, the evidence
of the model with the learned rates.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq
from scipy.special import digamma, gammaln

from . import _states
from ._common import GammaPriors
from ._states import VBInfo

__all__ = ["RateLearning", "index_letter", "check_one_index_per_factor", "rate_learning",
           "learned_priors", "relevances", "LearnedRatesKernel", "LearnedState", "JointStart",
           "NewEntityRatesKernel"]

#: Newton's method over the relevances stops once no log-relevance moves more than this ...
_RELEVANCE_TOL = 1e-12
#: ... or after this many steps.
_RELEVANCE_ROUNDS = 100


class RateLearning(NamedTuple):
    """Which rates are learned, per factor of a bound model.

    ``relevant[α]``: ``(key, axis)`` pairs of factor α's indices under ARD
    (the key: the index, or ``(index, factor)`` where each factor has
    relevances of its own), ``()`` if none; ``per_factor[α]``: whether factor α,
    carrying no ARD index, learns one rate of its own. Factors in neither
    keep their prior rate.
    """

    relevant: tuple
    per_factor: tuple
    indices: tuple  # the relevances' keys (:func:`index_letter`), in update order
    #: Per factor, the axes whose every value (entity) has a rate of its
    #: own under a Gamma hyperprior (``prior_rate="hierarchical"``); ``()``: none.
    entity_axes: tuple = ()
    #: Per factor, whether its prior shape is learned (``prior_shape="auto"``).
    learn_shape: tuple = ()

    @property
    def letters(self):
        """The latent indices under ARD, in update order (one per index
        however many relevances it has: :func:`index_letter`)."""
        return tuple(dict.fromkeys(index_letter(key) for key in self.indices))

    @property
    def learns(self):
        """Whether any rate or shape is learned."""
        return bool(self.indices) or any(self.per_factor) or self.joint

    @property
    def joint(self):
        """Whether hierarchical rates or a shape are learned: hyperparameters
        found jointly by :func:`_joint_priors` (else in one pass)."""
        return any(self.entity_axes) or any(self.learn_shape)


def index_letter(key):
    """The latent index of an ARD relevance's key: the index itself, or
    ``(index, factor)`` for a relevance of one factor's components."""
    return key[0] if isinstance(key, tuple) else key


def rate_learning(model, free, ard_indices=(), per_factor=False, hierarchical=False,
                  learn_shape=False, by_factor=False, tie=None):
    """The :class:`RateLearning` of ``model``'s ``free`` factors.

    Parameters
    ----------
    model : Model
        A bound model.
    free : tuple of int
        The factors with priors.
    ard_indices : str or sequence of str
        Latent indices with a relevance per value.
    per_factor : bool
        Whether free factors carrying no ARD index learn a rate each.
    hierarchical : bool
        Whether every value of a free factor's observed indices (an entity:
        a row of W, a country, a relation) has a rate of its own under a
        Gamma hyperprior; a factor without observed index (a core) learns
        one rate instead, unless it carries an ARD index.
    learn_shape : bool
        Whether each free factor's prior shape is learned.
    by_factor : bool
        Whether each factor has a relevance of its own per component (keyed
        ``(index, factor string)``: group-sparse ARD, Klami, Bouchard &
        Tripathi, ICLR 2014, so that a component can be switched off in
        some factors and kept in others), instead of one per component
        shared by every factor that carries it.
    tie : dict, default=None
        ``{index: ARD index}``: latent indices that are another's under ARD
        (RESCAL's second cluster index is its first: the core's row and
        column take one relevance per cluster).
    """
    ard_indices = tuple(ard_indices)
    unknown = [c for c in ard_indices if c not in model.latent]
    if unknown:
        raise ValueError(f"ARD indices {unknown} are not latent indices of {model.string!r} "
                         f"(latent: {', '.join(model.latent) or 'none'}).")
    tie = dict(tie or {})
    relevant, learned, entities = [], [], []
    for alpha, factor in enumerate(model.factors):
        own = (tuple(((c, factor) if by_factor else c, axis) for c in ard_indices
                     for axis, letter in enumerate(factor) if tie.get(letter, letter) == c)
               if alpha in free else ())
        axes = (tuple(i for i, c in enumerate(factor) if c in model.output)
                if hierarchical and alpha in free else ())
        relevant.append(own)
        entities.append(axes)
        learned.append(bool((per_factor or hierarchical) and alpha in free and not own
                            and not axes))
    carried = {index_letter(key) for own in relevant for key, _ in own}
    orphans = [c for c in ard_indices if c not in carried]
    if orphans:
        raise ValueError(f"ARD indices {orphans} are carried by no free factor of "
                         f"{model.string!r}: their relevance would have no data.")
    if by_factor:
        check_one_index_per_factor(model, relevant)
    keys = (tuple(dict.fromkeys(key for c in ard_indices for own in relevant for key, _ in own
                                if index_letter(key) == c)) if by_factor else ard_indices)
    shapes = tuple(bool(learn_shape and alpha in free) for alpha in range(model.n_factors))
    return RateLearning(tuple(relevant), tuple(learned), keys, tuple(entities),
                        shapes if any(shapes) else ())


def check_one_index_per_factor(model, relevant):
    """Raise where a factor would have relevances of its own over two latent
    indices (``relevant``: :class:`RateLearning`'s, keyed by factor): only
    their product sets its rates, so they trade scale and the bound does not
    identify them."""
    for factor, own in zip(model.factors, relevant):
        letters = sorted({index_letter(key) for key, _ in own})
        if len(letters) > 1:
            raise ValueError(
                f"ard='factor' gives each factor one relevance per component, and factor "
                f"{factor!r} carries the latent indices {letters}: relevances of its own over "
                "both would trade scale and are not identified. Use ard=True there (a "
                "relevance per component, shared by every factor that carries it).")


def _relevance_product(factor_shape, own, lam):
    """Π λ^m over factor α's ARD indices m, broadcast to its shape."""
    product = np.ones([1] * len(factor_shape))
    for index, axis in own:
        shape = [1] * len(factor_shape)
        shape[axis] = factor_shape[axis]
        product = product * lam[index].reshape(shape)
    return product


def relevances(learning, means, shapes, start=None):
    """The ARD relevances ``{key: λ}`` that maximise the bound given the
    factors' means ``E[Z]`` and prior shapes (module docstring): in closed
    form where no factor carries two ARD indices, else by Newton's method
    on the concave objective in log λ, from ``start`` (relevances near the
    maximum: the last ones found) or the closed form's first round."""
    if not learning.indices:
        return {}
    carriers = {c: [(a, axis) for a, own in enumerate(learning.relevant)
                    for index, axis in own if index == c] for c in learning.indices}
    weighted = {a: shapes[a] * means[a] for a, own in enumerate(learning.relevant) if own}
    counts = {c: sum(_sum_except(np.broadcast_to(shapes[a], means[a].shape), axis)
                     for a, axis in carriers[c]) for c in learning.indices}
    # λ^ℓ given the others at one: exact where each factor carries one ARD index.
    lam = {c: counts[c] / np.maximum(sum(_sum_except(weighted[a], axis)
                                         for a, axis in carriers[c]), np.finfo(float).tiny)
           for c in learning.indices}
    if all(len(own) <= 1 for own in learning.relevant):
        return lam
    if start is not None and all(start[c].shape == lam[c].shape for c in learning.indices):
        lam = start
    return _newton_relevances(learning, weighted, counts, lam)


def _newton_relevances(learning, weighted, counts, lam):
    """Maximise :math:`f(u) = \\sum n u - \\sum_\\alpha \\sum_v w_v
    e^{\\sum_{\\ell \\in \\alpha} u_\\ell}` (u = log λ, w = A E[Z]; concave)
    by Newton steps with backtracking, from ``lam``."""
    offsets = np.cumsum([0] + [counts[c].size for c in learning.indices])
    slot = {c: slice(offsets[i], offsets[i + 1]) for i, c in enumerate(learning.indices)}
    n = np.concatenate([counts[c] for c in learning.indices])

    def terms(u):
        """f(u), its gradient and its Hessian."""
        value, gradient = float(n @ u), n.copy()
        hessian = np.zeros((u.size, u.size))
        for a, w in weighted.items():
            own = learning.relevant[a]
            log_rate = np.zeros([1] * w.ndim)
            for c, axis in own:
                shape = [1] * w.ndim
                shape[axis] = w.shape[axis]
                log_rate = log_rate + u[slot[c]].reshape(shape)
            t = w * np.exp(log_rate)
            value -= float(np.sum(t))
            for i, (c, axis) in enumerate(own):
                gradient[slot[c]] -= _sum_except(t, axis)
                hessian[slot[c], slot[c]] -= np.diag(_sum_except(t, axis))
                for m, other in own[i + 1:]:
                    block = np.sum(t, axis=tuple(x for x in range(t.ndim)
                                                 if x not in (axis, other)))
                    block = block if axis < other else block.T
                    hessian[slot[c], slot[m]] -= block
                    hessian[slot[m], slot[c]] -= block.T
        return value, gradient, hessian

    u = np.concatenate([np.log(lam[c]) for c in learning.indices])
    value, gradient, hessian = terms(u)
    for _ in range(_RELEVANCE_ROUNDS):
        step = np.linalg.solve(hessian, -gradient)
        length = 1.0
        while True:
            trial = terms(u + length * step)
            if trial[0] >= value or length < 1e-12:
                break
            length /= 2
        u = u + length * step
        value, gradient, hessian = trial
        if np.max(np.abs(length * step)) <= _RELEVANCE_TOL:
            break
    return {c: np.exp(u[slot[c]]) for c in learning.indices}


def _sum_except(array, axis):
    """Sum of ``array`` over every axis but ``axis``."""
    return np.sum(array, axis=tuple(i for i in range(array.ndim) if i != axis))


def learned_priors(learning, means, priors, start=None, logs=None, rounds=None):
    """``priors`` with every learned hyperparameter at its maximiser given
    the factors' ``means`` (and, for hierarchical rates or a learned shape,
    ``logs``: E[log Z]), and the relevances (for hierarchical rates or a
    learned shape, a :class:`JointStart` holding them). ``start``: what the
    last call returned, to search from."""
    if not learning.learns:
        return priors, {}
    if learning.joint:
        return _joint_priors(learning, means, logs, priors, start, rounds or _JOINT_ROUNDS)
    lam = relevances(learning, means, priors.shape, start)
    rates, normalizers = list(priors.rate), list(priors.log_normalizer)
    for alpha in priors.free:
        a = priors.shape[alpha]
        if learning.relevant[alpha]:
            rate = a * _relevance_product(means[alpha].shape, learning.relevant[alpha], lam)
        elif learning.per_factor[alpha]:
            rate = np.sum(np.broadcast_to(a, means[alpha].shape)) / np.sum(means[alpha])
        else:
            continue
        rates[alpha] = np.ascontiguousarray(np.broadcast_to(rate, means[alpha].shape))
        normalizers[alpha] = float(np.sum(a * np.log(rates[alpha]) - gammaln(a)))
    return GammaPriors(priors.shape, tuple(rates), tuple(normalizers)), lam


# ------------------------------------------------ hierarchical rates and shapes

#: Shape c of the hyperprior of hierarchical rates, β ~ Gamma(c, c μ) (mean
#: 1 / μ); Gopalan, Hofman & Blei (2015) take 0.3 for theirs.
HYPERPRIOR_SHAPE = 1.0
#: The joint maximisation stops once a round raises the bound's terms in the
#: hyperparameters by at most this fraction of their size ...
_JOINT_TOL = 1e-12
#: ... or after this many rounds. Each round raises the bound and every call
#: starts where the last one stopped, so the objective that VB's loop reads
#: never decreases even where a call stops short of the maximum (a ridge:
#: hierarchical rates and relevances trade scale, and coordinate ascent
#: crawls along it over the fit's iterations rather than within one call).
_JOINT_ROUNDS = 5


class JointStart(NamedTuple):
    """Where :func:`_joint_priors` starts: the last call's relevances and,
    per factor, its other hyperparameters (:meth:`_Hyper.saved`)."""

    lam: dict
    factors: dict
#: Where the fit's learned hyperparameters are held (after it, for the
#: fold-ins and the evidence), the joint maximisation runs up to this many
#: rounds from a fresh start: the fit's own may have run in another process.
_HOLD_ROUNDS = 5000
#: A learned shape stays in [_SHAPE_FLOOR, _SHAPE_CEILING]: below the floor
#: exp(ψ(C)) of q's shapes underflows and E[log Z] is no longer finite.
_SHAPE_FLOOR, _SHAPE_CEILING = 1e-2, 1e6


def _learns_at(learning, alpha):
    """Whether factor ``alpha`` learns anything of its prior."""
    return bool(learning.relevant[alpha] or learning.per_factor[alpha]
                or (learning.entity_axes and learning.entity_axes[alpha])
                or (learning.learn_shape and learning.learn_shape[alpha]))


class _Hyper:
    """The hyperparameters of one free factor during :func:`_joint_priors`.

    The prior of element v is ``Gamma(a, a s_v)`` where the factor learns
    its rate (``scaled``: ARD, a rate per factor, hierarchical rates), with
    ``s_v = ρ β_e(v) Π λ`` (ρ: one scale per factor, β_e: its entity's
    hierarchical rate, λ: ARD's relevances); else ``Gamma(a, R_v)`` with
    the given rate R.
    """

    def __init__(self, learning, alpha, mean, log, shape, rate, start=None):
        self.mean, self.log = mean, log
        self.relevant = learning.relevant[alpha]
        self.per_factor = learning.per_factor[alpha]
        self.entity_axes = learning.entity_axes[alpha] if learning.entity_axes else ()
        self.learns_shape = bool(learning.learn_shape and learning.learn_shape[alpha])
        self.scaled = bool(self.relevant or self.per_factor or self.entity_axes)
        self.given_rate = np.broadcast_to(rate, mean.shape)
        # A learned shape starts at the given one's mean (one value per factor).
        self.shape = (np.full(mean.shape, float(np.mean(shape))) if self.learns_shape
                      else np.broadcast_to(shape, mean.shape))
        self.rho = 1.0
        self.relevance = np.ones([1] * mean.ndim)
        self.summed = tuple(i for i in range(mean.ndim) if i not in self.entity_axes)
        # q(β) = Gamma(beta_shape, beta_rate) and the hyper-rate μ; without
        # hierarchical rates β is 1. Where ARD sets the scale, μ is held at 1
        # (else λ and μ trade scale).
        self.beta_shape = self.beta_rate = None
        self.mu, self.learns_mu = 1.0, bool(self.entity_axes) and not self.relevant
        if self.entity_axes:
            entity_shape = [1 if i in self.summed else n for i, n in enumerate(mean.shape)]
            self.beta_mean, self.beta_log = np.ones(entity_shape), np.zeros(entity_shape)
        else:
            self.beta_mean, self.beta_log = 1.0, 0.0
        if start is not None and np.shape(start[0]) == mean.shape:
            (self.shape, self.rho, self.relevance, self.beta_mean, self.beta_log,
             self.beta_shape, self.beta_rate, self.mu) = start

    def saved(self):
        """What the next call starts from."""
        return (self.shape, self.rho, self.relevance, self.beta_mean, self.beta_log,
                self.beta_shape, self.beta_rate, self.mu)

    # ---------------------------------------------------------- coordinates
    def scale_mean(self):
        """E[s_v] / λ-part: ρ E[β], broadcast against the factor."""
        return self.rho * self.beta_mean

    def update_rho(self):
        if self.per_factor:
            a = self.shape
            self.rho = float(np.sum(a) / np.sum(a * self.beta_mean * self.relevance * self.mean))

    def update_beta(self):
        """q(β_e) = Gamma(c + Σ a, c μ + Σ a ρ Π λ E[Z]) over the entity's
        elements; then μ = (number of entities) / Σ E[β] where learned."""
        if not self.entity_axes:
            return
        a = self.shape
        self.beta_shape, self.beta_rate, self.beta_mean, self.beta_log = _entity_rates_q(
            HYPERPRIOR_SHAPE * self.mu, a, a * self.rho * self.relevance * self.mean, self.summed)
        if self.learns_mu:
            self.mu = float(self.beta_mean.size / np.sum(self.beta_mean))

    def update_shape(self):
        """The shape a maximising the factor's prior terms: the root of
        ``log a - ψ(a) = -1 - mean(E log s + E log Z - E[s] E[Z])`` (rate
        a s) or of ``ψ(a) = mean(log R + E log Z)`` (given rate R), both
        monotone in a (Minka 2002, "Estimating a Gamma distribution")."""
        if not self.learns_shape:
            return
        if self.scaled:
            target = -1.0 - float(np.mean(self.log_scale() + self.log
                                          - self.rate_per_shape() * self.mean))
            target = max(target, 0.0)

            def gap(u):
                return u - digamma(np.exp(u)) - target
        else:
            target = float(np.mean(np.log(self.given_rate) + self.log))

            def gap(u):
                return target - digamma(np.exp(u))
        low, high = np.log(_SHAPE_FLOOR), np.log(_SHAPE_CEILING)
        if gap(high) >= 0:
            u = high
        elif gap(low) <= 0:
            u = low
        else:
            u = brentq(gap, low, high, xtol=1e-14, rtol=1e-15)
        self.shape = np.full(self.mean.shape, np.exp(u))

    # -------------------------------------------------------------- results
    def log_scale(self):
        """E[log s_v] (a scaled factor's)."""
        return np.log(self.rho) + self.beta_log + np.log(self.relevance)

    def rate_per_shape(self):
        """E[s_v]."""
        return self.rho * self.beta_mean * self.relevance

    def rate(self):
        """The rate that VB's update of q(Z) reads: a E[s] (or the given R)."""
        if not self.scaled:
            return np.ascontiguousarray(np.broadcast_to(self.given_rate, self.mean.shape))
        return np.ascontiguousarray(np.broadcast_to(self.shape * self.rate_per_shape(),
                                                    self.mean.shape))

    def log_normalizer(self):
        """Σ_v [a E log R_v - log Γ(a)] plus the hyperprior's terms,
        E log p(β) - E log q(β), which the bound adds to the factor's."""
        a = self.shape
        log_rate = (np.log(a) + self.log_scale()) if self.scaled else np.log(self.given_rate)
        value = float(np.sum(a * log_rate - gammaln(a)))
        if self.entity_axes:
            value += _hyperprior_terms(HYPERPRIOR_SHAPE * self.mu, self.beta_shape,
                                       self.beta_rate, self.beta_mean, self.beta_log)
        return value

    def terms(self):
        """The bound's terms that depend on the hyperparameters."""
        rate = self.shape * self.rate_per_shape() if self.scaled else self.given_rate
        return (self.log_normalizer() + float(np.sum((self.shape - 1) * self.log))
                - float(np.sum(rate * self.mean)))

    def new_entity_rate(self):
        """The rate of an entity the fit has not seen: its β at the
        hyperprior's mean 1 / μ (None without hierarchical rates)."""
        if not self.entity_axes:
            return None
        return np.ascontiguousarray(np.broadcast_to(
            self.shape * self.rho * self.relevance / self.mu, self.mean.shape))


def _entity_rates_q(rate, shapes, weighted, summed):
    """q(β_e) = Gamma(c + Σ a, rate + Σ a s E[Z]) over each entity's elements
    (``shapes``: their prior shapes a; ``weighted``: a s E[Z], s the rest of
    their rate; ``summed``: the axes that are not the entity's), for the
    hyperprior β ~ Gamma(c, ``rate``): its shape, rate, mean and E log β."""
    shape_q = HYPERPRIOR_SHAPE + np.sum(shapes, axis=summed, keepdims=True)
    rate_q = rate + np.sum(weighted, axis=summed, keepdims=True)
    return shape_q, rate_q, shape_q / rate_q, digamma(shape_q) - np.log(rate_q)


def _hyperprior_terms(rate, shape_q, rate_q, mean_q, log_q):
    """:math:`E \\log p(\\beta) - E \\log q(\\beta)` summed over entities, for
    the hyperprior :math:`\\beta \\sim \\mathrm{Gamma}(c, \\text{rate})`
    (c = :data:`HYPERPRIOR_SHAPE`) and q(β) = Gamma(shape_q, rate_q) with
    mean ``mean_q`` and :math:`E \\log \\beta` = ``log_q``."""
    c = HYPERPRIOR_SHAPE
    return float(np.sum(c * np.log(rate) - gammaln(c) + (c - 1) * log_q - rate * mean_q
                        + shape_q - np.log(rate_q) + gammaln(shape_q)
                        + (1 - shape_q) * digamma(shape_q)))


def _joint_priors(learning, means, logs, priors, start, rounds):
    """The hyperparameters of every free factor at the joint maximum of the
    bound given q(Z): coordinate ascent over the relevances, the per-factor
    scales, the hierarchical rates' q(β) and hyper-rate μ, and the shapes,
    each block its exact maximiser given the others, to a fixed point
    (:data:`_JOINT_TOL`). Hierarchical rates are Hierarchical Poisson
    factorization's (Gopalan, Hofman & Blei, UAI 2015): conjugate, so q(β_e)
    is a Gamma and the bound keeps its closed form."""
    start = start if isinstance(start, JointStart) else JointStart({}, {})
    hyper = {alpha: _Hyper(learning, alpha, means[alpha], np.log(logs[alpha]),
                           priors.shape[alpha], priors.rate[alpha], start.factors.get(alpha))
             for alpha in priors.free if _learns_at(learning, alpha)}
    lam, value = dict(start.lam), -np.inf
    for _ in range(rounds):
        if learning.indices:
            scaled_means = [None if alpha not in hyper else
                            means[alpha] * hyper[alpha].scale_mean() for alpha in range(len(means))]
            shapes = [None if alpha not in hyper else hyper[alpha].shape
                      for alpha in range(len(means))]
            lam = relevances(learning, scaled_means, shapes, start=lam or None)
            for alpha, h in hyper.items():
                if h.relevant:
                    h.relevance = _relevance_product(h.mean.shape, h.relevant, lam)
        for h in hyper.values():
            h.update_rho()
            h.update_beta()
            h.update_shape()
        new_value = sum(h.terms() for h in hyper.values())
        if new_value - value <= _JOINT_TOL * abs(new_value):
            break
        value = new_value
    shapes, rates = list(priors.shape), list(priors.rate)
    normalizers, entity_rates = list(priors.log_normalizer), [None] * len(priors.shape)
    for alpha, h in hyper.items():
        shapes[alpha] = np.ascontiguousarray(np.broadcast_to(h.shape, h.mean.shape))
        rates[alpha] = h.rate()
        normalizers[alpha] = h.log_normalizer()
        entity_rates[alpha] = h.new_entity_rate()
    return (GammaPriors(tuple(shapes), tuple(rates), tuple(normalizers), tuple(entity_rates)),
            JointStart(lam, {alpha: h.saved() for alpha, h in hyper.items()}))


class LearnedState(NamedTuple):
    """A state of :class:`LearnedRatesKernel`: VB's state and what was
    learned at it, so that a step, the objective and the accelerators read
    the hyperparameters from the state alone."""

    #: VB's state (what the accelerators extrapolate and the fit reads).
    point: object
    #: The given priors with the hyperparameters learned at ``point``.
    priors: GammaPriors
    #: What that search found (the relevances, or a :class:`JointStart`):
    #: where the search at the next state starts.
    search: object
    #: Whether the prior shapes are learned yet (the kernel's stage).
    shapes_learned: bool


class LearnedRatesKernel:
    """VB's kernel with the rates learned at every step (module docstring).

    A state is a :class:`LearnedState`, or VB's own state (a start: what
    ``init`` returns), where the search of the hyperparameters has not run
    yet and starts afresh, at the first stage. Each state holds the
    hyperparameters learned at it (from the given priors of the call that
    made it: a run passes the same ones to every call) and where the next
    search starts, so a state the loop keeps goes on from its own search,
    whatever steps were tried from it and dropped (the stopping rule's
    check, a refused SQUAREM cycle): the run's path does not depend on them.

    Parameters
    ----------
    kernel : module or namespace
        :mod:`~sklearn_pltf.inference.vb`, or RESCAL's VB (anything with its
        ``init``, ``step`` and ``objective``).
    learning : RateLearning
    rounds : int, default=None
        The joint search's rounds per call (None: :data:`_JOINT_ROUNDS`).
    held : bool, default=False
        Whether a start is at the last stage (:meth:`holding`).
    """

    def __init__(self, kernel, learning, rounds=None, held=False):
        self.kernel = kernel
        self.learning = learning
        self.rounds = rounds
        # Learned shapes wait for a first convergence at the given ones: from
        # the start's near-uniform factors their maximiser runs off to an
        # extreme and holds q there (doc/hyperparameters.rst).
        self.shapes_learned_at_start = held or not learning.learn_shape

    def holding(self):
        """This kernel at its last stage, each search maximising over the
        hyperparameters to convergence (:data:`_HOLD_ROUNDS`): where a fit's
        learned hyperparameters are held, for its evidence and fold-ins."""
        return LearnedRatesKernel(self.kernel, self.learning, rounds=_HOLD_ROUNDS, held=True)

    def init(self, *args, **kwargs):
        """The kernel's initial state, a start (its prior rates only set its
        scale)."""
        return self.kernel.init(*args, **kwargs)

    def _learned(self, point, priors, search, shapes_learned):
        """The :class:`LearnedState` at VB's state ``point``, its search
        starting at ``search``."""
        active = self.learning if shapes_learned else self.learning._replace(learn_shape=())
        learned, found = learned_priors(active, point.mean, priors, start=search or None,
                                        logs=point.geometric if active.joint else None,
                                        rounds=self.rounds)
        return LearnedState(point, learned, found, shapes_learned)

    def _state(self, state, priors):
        """``state`` as a :class:`LearnedState` (a start searched afresh)."""
        if isinstance(state, LearnedState):
            return state
        return self._learned(state, priors, None, self.shapes_learned_at_start)

    def step(self, state, contractor, priors, with_objective=True):
        """VB's step at the priors of ``state``, and the hyperparameters
        learned at the new state, their search starting where the last one
        stopped; the objective, the bound at them."""
        state = self._state(state, priors)
        new, _ = self.kernel.step(state.point, contractor, state.priors, with_objective=False)
        new = self._learned(new, priors, state.search, state.shapes_learned)
        return new, VBInfo(objective=self.objective(new, contractor, priors)
                           if with_objective else None)

    def objective(self, state, contractor, priors):
        """The bound at the priors learned at ``state`` (``priors``: the
        given ones, read only where ``state`` is a start)."""
        state = self._state(state, priors)
        return self.kernel.objective(state.point, contractor, state.priors)

    def point(self, state):
        """VB's state of ``state``."""
        return state.point if isinstance(state, LearnedState) else state

    def moved(self, state, point, priors):
        """The state at VB's state ``point`` (an extrapolation from
        ``state``), its hyperparameters searched from where ``state``'s
        search stopped, at its stage (afresh where ``state`` is a start)."""
        if not isinstance(state, LearnedState):
            return self._state(point, priors)
        return self._learned(point, priors, state.search, state.shapes_learned)

    def priors_at(self, state, priors):
        """``priors`` with the rates learned at ``state`` (those it holds;
        searched afresh at a start)."""
        return self._state(state, priors).priors

    def advance(self, state, priors):
        """At a convergence at the given shapes, the state learning the
        shapes from there on (:func:`~._convergence.run_to_convergence` goes
        on; the objective, maximised over more hyperparameters, can only
        rise); None where the shapes are learned already."""
        state = self._state(state, priors)
        if state.shapes_learned:
            return None
        return self._learned(state.point, priors, state.search, True)

    def relevances_at(self, state, priors):
        """The ARD relevances ``{index: λ}`` learned at ``state``."""
        found = self._state(state, priors).search
        return found.lam if isinstance(found, JointStart) else found


class NewEntityRatesKernel:
    """VB's kernel for new samples folded in under hierarchical rates: each
    new sample is an entity the fit has not seen, and its rate is inferred
    with its factor instead of taken at the hyperprior's mean.

    The fit's hyperparameters are held. Writing the fold-in's prior rate of
    the sample factor's elements (the fit's ``new_entity_rate``, ``a ρ Π λ /
    μ``) as :math:`r_v`, new entity e has :math:`\\gamma_e = \\mu \\beta_e
    \\sim \\mathrm{Gamma}(c, c)` and its elements :math:`Z(v) \\sim
    \\mathrm{Gamma}(a, r_v \\gamma_e)`; given q(Z) the bound peaks at

    .. math:: q(\\gamma_e) = \\mathrm{Gamma}\\big(c + \\sum_{v \\in e} a,\\;
              c + \\sum_{v \\in e} r_v E[Z(v)]\\big)

    (hierarchical Poisson factorization's update, Gopalan, Hofman & Blei
    2015). As :class:`LearnedRatesKernel`, the rates are a function of q(Z):
    a step updates q(Z) at the rates of the current q(γ), the objective is
    the bound at the maximising q(γ), so the fold-in's fixed point and its
    bound are those of the joint q(Z) q(γ). Its state is VB's: q(γ) is
    found afresh from q(Z), in closed form, so nothing else is kept.

    Parameters
    ----------
    kernel : module
        :mod:`~sklearn_pltf.inference.vb`.
    alpha : int
        The sample factor.
    axis : int
        Its sample axis (each value an entity).
    """

    def __init__(self, kernel, alpha, axis):
        self.kernel, self.alpha, self.axis = kernel, alpha, axis
        self.free_parameter = kernel.free_parameter
        self.with_free_parameter = kernel.with_free_parameter
        self.state_from_means = kernel.state_from_means

    def init(self, *args, **kwargs):
        """The kernel's initial state."""
        return self.kernel.init(*args, **kwargs)

    def step(self, state, contractor, priors, with_objective=True):
        """VB's step at the priors of ``state``; its objective, the bound at
        the priors of the new state."""
        new, _ = self.kernel.step(state, contractor, self.priors_at(state, priors),
                                  with_objective=False)
        return new, VBInfo(objective=self.objective(new, contractor, priors)
                           if with_objective else None)

    def objective(self, state, contractor, priors):
        """The bound at the priors of ``state``."""
        return self.kernel.objective(state, contractor, self.priors_at(state, priors))

    # A state is VB's, its rates found from it alone; one stage.
    point = staticmethod(_states.point)
    moved = staticmethod(_states.moved)
    advance = staticmethod(_states.advance)

    def priors_at(self, state, priors):
        """``priors`` with the sample factor's rates and log-normaliser at
        q(γ) maximising the bound given ``state``."""
        alpha, mean = self.alpha, state.mean[self.alpha]
        a = np.broadcast_to(priors.shape[alpha], mean.shape)
        r = np.broadcast_to(priors.rate[alpha], mean.shape)
        summed = tuple(i for i in range(mean.ndim) if i != self.axis)
        c = HYPERPRIOR_SHAPE
        g_shape, g_rate, g_mean, g_log = _entity_rates_q(c, a, r * mean, summed)
        normalizer = (float(np.sum(a * (np.log(r) + g_log) - gammaln(a)))
                      + _hyperprior_terms(c, g_shape, g_rate, g_mean, g_log))
        rates, normalizers = list(priors.rate), list(priors.log_normalizer)
        rates[alpha], normalizers[alpha] = np.ascontiguousarray(r * g_mean), normalizer
        return priors._replace(rate=tuple(rates), log_normalizer=tuple(normalizers))
