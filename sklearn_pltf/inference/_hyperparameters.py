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
:class:`LearnedRatesKernel` keeps VB's state as it is: its step updates q at
the rates learned from the current q, and its objective is the bound at the
rates learned from the state it scores, :math:`B(q, R^*(q)) = \\max_R B(q, R)`.
Each step raises :math:`B(\\cdot, R)` at fixed R and the new rates raise it
again, so the objective never decreases, and SQUAREM and the stopping rule
read it as they read the plain bound. At convergence it is a lower bound on
:math:`\\log p(X \\mid R^*)`, the evidence of the model with the learned rates.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import gammaln

from ._common import GammaPriors
from ._states import VBInfo

__all__ = ["RateLearning", "rate_learning", "learned_priors", "relevances",
           "LearnedRatesKernel"]

#: Newton's method over the relevances stops once no log-relevance moves more than this ...
_RELEVANCE_TOL = 1e-12
#: ... or after this many steps.
_RELEVANCE_ROUNDS = 100


class RateLearning(NamedTuple):
    """Which rates are learned, per factor of a bound model.

    ``relevant[α]``: the positions ((index, axis) pairs) of factor α's
    indices under ARD, ``()`` if none; ``per_factor[α]``: whether factor α,
    carrying no ARD index, learns one rate of its own. Factors in neither
    keep their prior rate.
    """

    relevant: tuple
    per_factor: tuple
    indices: tuple  # the ARD indices, in update order

    @property
    def learns(self):
        """Whether any rate is learned."""
        return bool(self.indices) or any(self.per_factor)


def rate_learning(model, free, ard_indices=(), per_factor=False):
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
    """
    ard_indices = tuple(ard_indices)
    unknown = [c for c in ard_indices if c not in model.latent]
    if unknown:
        raise ValueError(f"ARD indices {unknown} are not latent indices of {model.string!r} "
                         f"(latent: {', '.join(model.latent) or 'none'}).")
    relevant, learned = [], []
    for alpha, factor in enumerate(model.factors):
        own = (tuple((c, factor.index(c)) for c in ard_indices if c in factor)
               if alpha in free else ())
        relevant.append(own)
        learned.append(bool(per_factor and alpha in free and not own))
    carried = {c for own in relevant for c, _ in own}
    orphans = [c for c in ard_indices if c not in carried]
    if orphans:
        raise ValueError(f"ARD indices {orphans} are carried by no free factor of "
                         f"{model.string!r}: their relevance would have no data.")
    return RateLearning(tuple(relevant), tuple(learned), ard_indices)


def _relevance_product(factor_shape, own, lam):
    """Π λ^m over factor α's ARD indices m, broadcast to its shape."""
    product = np.ones([1] * len(factor_shape))
    for index, axis in own:
        shape = [1] * len(factor_shape)
        shape[axis] = factor_shape[axis]
        product = product * lam[index].reshape(shape)
    return product


def relevances(learning, means, shapes, start=None):
    """The ARD relevances ``{index: λ}`` that maximise the bound given the
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


def learned_priors(learning, means, priors, start=None):
    """``priors`` with every learned rate at its maximiser given ``means``
    (``start``: relevances to search from, as for :func:`relevances`), and
    the relevances."""
    if not learning.learns:
        return priors, {}
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


class LearnedRatesKernel:
    """VB's kernel with the rates learned at every step (module docstring).

    Parameters
    ----------
    kernel : module
        :mod:`~sklearn_pltf.inference.vb` (anything with its ``init``,
        ``step``, ``objective`` and ``state_from_means``).
    learning : RateLearning
    """

    def __init__(self, kernel, learning):
        self.kernel = kernel
        self.learning = learning
        # The last state's means (held, so its identity is not reused) and
        # what was learned there: a step's start is the last step's result.
        self._last = (None, None, None, None)

    def init(self, *args, **kwargs):
        """The kernel's initial state (its prior rates only set its scale)."""
        return self.kernel.init(*args, **kwargs)

    def priors_at(self, state, priors):
        """``priors`` with the rates learned at ``state``."""
        means, given, learned, lam = self._last
        if means is state.mean and given is priors:
            return learned
        learned, lam = learned_priors(self.learning, state.mean, priors, start=lam or None)
        self._last = (state.mean, priors, learned, lam)
        return learned

    def step(self, state, contractor, priors, with_objective=True):
        """The kernel's step at the rates learned from ``state``; its
        objective, the bound at the rates learned from the new state."""
        new, _ = self.kernel.step(state, contractor, self.priors_at(state, priors),
                                  with_objective=False)
        return new, VBInfo(objective=self.objective(new, contractor, priors)
                           if with_objective else None)

    def objective(self, state, contractor, priors):
        """:math:`\\max_R B(q, R)`: the bound at the rates learned from ``state``."""
        return self.kernel.objective(state, contractor, self.priors_at(state, priors))
