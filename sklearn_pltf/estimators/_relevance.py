"""Learned prior rates and relevances (ARD) for the Poisson–Gamma estimators.

What an estimator asks for (``prior_rate="auto"``, ``ard``, ``prune``)
becomes a :class:`~sklearn_pltf.inference._hyperparameters.RateLearning`;
VB then runs :class:`~sklearn_pltf.inference._hyperparameters.LearnedRatesKernel`,
and after it this module reads the relevances, finds the components the
evidence does not need and, with ``prune=True``, removes them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np
from opt_einsum import contract

from ..inference._common import GammaPriors
from ..inference._hyperparameters import rate_learning, relevances

__all__ = ["ARD_PARAMETERS", "ARD_ATTRIBUTES", "LEARNED_ATTRIBUTES", "learning_of",
           "set_learned_attributes", "held_priors", "check_learning", "Relevance", "find_relevance",
           "HeldRates", "hold_learned_rates"]

ARD_PARAMETERS = """\
    ard : bool, default=False
        Automatic relevance determination: a relevance per component,
        shared by every factor that carries it, learned by the evidence
        with VB (Tan & Févotte 2013; Zhao, Zhang & Cichocki 2015). The
        component's elements have prior ``Gamma(prior_shape,
        prior_shape / relevance)``, so a component the data do not need
        has its relevance fall towards zero and carries no mass: one fit
        at a generous ``n_components`` finds the rank (``relevance_``,
        ``effective_rank_``). ``log_evidence_`` is then the bound at the
        learned relevances. ``prior_rate`` applies to factors that carry
        no component.
    prune : bool, default=False
        With ``ard=True``: remove the components the evidence does not
        need (those whose removal lowers the bound by at most ``tol``
        nats), so ``factors_``, ``transform`` and ``model_`` have the
        effective rank; the bound is that of the smaller model."""


ARD_ATTRIBUTES = """\
    prior_rate_ : tuple of ndarray
        With ``prior_rate="auto"`` or ``ard=True``: the fitted prior rate of
        every element of each factor (None for fixed factors), the rates at
        which ``log_evidence_`` is the bound and new samples are folded in.
        After :meth:`partial_fit`, the sample factor's is of the last batch's
        size (the same rate for every sample).
    relevance_ : ndarray of shape (n_components,), or dict
        With ``ard=True``: each component's relevance, the prior mean
        ``1 / λ`` of its elements; near zero for components the data do not
        need. With several latent indices (Tucker's core), ``{index: array}``.
        With ``prune=True``, of the components kept.
    effective_rank_ : int or dict
        With ``ard=True``: the number of components the evidence needs
        (dropping any other lowers the bound by at most ``tol`` nats); a dict
        per latent index where there are several."""


#: The fitted attributes of learned rates.
LEARNED_ATTRIBUTES = ("prior_rate_", "relevance_", "effective_rank_")


def learning_of(estimator, model, ard_indices):
    """The :class:`RateLearning` that ``estimator``'s ``prior_rate`` and
    ``ard_indices`` (a string of latent indices) ask for, or None."""
    per_factor = isinstance(estimator.prior_rate, str)  # "auto"
    if getattr(estimator, "ard", False) and not ard_indices:
        raise ValueError(f"ard asks for a relevance per component, and {model.string!r} has "
                         "no latent index to give one to.")
    if not ard_indices and not per_factor:
        return None
    return rate_learning(model, model.free, ard_indices, per_factor)


def check_learning(estimator, learning):
    """Raise unless ``estimator``'s method learns rates (VB)."""
    if getattr(estimator, "prune", False) and (learning is None or not learning.indices):
        raise ValueError("prune=True removes the components that ARD switched off: it needs "
                         "ard=True.")
    if learning is None:
        return
    if estimator.method != "vb":
        raise ValueError(
            "prior_rate='auto' and ard=True learn the rates with variational Bayes: they need "
            f"method='vb', got {estimator.method!r}. (The posterior mode taken jointly over "
            "the factors and their rates does not exist: a factor at zero under a rate that "
            "grows without bound has unbounded density.)")
    if estimator.evidence not in ("auto", "vb", None):
        raise ValueError(
            f"evidence={estimator.evidence!r} with learned rates: the evidence is the VB "
            "bound at the learned rates; use evidence='auto' or 'vb'.")


class Relevance(NamedTuple):
    """The relevances of a fit and the components kept, per ARD index."""

    #: ``{index: 1 / λ}``: the prior mean of each component's elements.
    values: dict
    #: ``{index: positions}``: the components the evidence needs.
    kept: dict


def component_masses(model, means, index):
    """Σ over every entry of X̂'s part through each value of latent ``index``
    (the data's missing entries included): a component's total mass."""
    operands, subscripts = [], []
    for factor, mean in zip(model.factors, means):
        summed = tuple(i for i, c in enumerate(factor) if c in model.output)
        operands.append(np.sum(mean, axis=summed))
        subscripts.append("".join(c for c in factor if c not in model.output))
    return contract(",".join(subscripts) + "->" + index, *operands)


def find_relevance(kernel, learning, model, state, priors, tol, contractor_for, bound,
                   tied=None):
    """The relevances at ``state`` and the components to keep.

    Per ARD index, components are tried in order of increasing mass; each is
    dropped (with those dropped before it) while the bound of the smaller
    model, with its rates learned afresh, is at most ``tol`` below the
    bound of the full one.

    Parameters
    ----------
    kernel : LearnedRatesKernel
    learning : RateLearning
    model : Model
        The bound model of ``state`` (RESCAL's canonical one, relation axis
        included, for a tied factor).
    state, priors
        The fitted state and the priors the fit started from.
    tol : float
        In nats.
    contractor_for : callable
        ``contractor_for(model)``: what ``kernel.objective`` reads, for a
        model of any sizes.
    bound : float
        ``kernel.objective`` at ``state``: the fit's last objective.
    tied : dict, default=None
        ``{index: other index}``: indices that take the same components
        (RESCAL's two cluster indices).

    Returns
    -------
    relevance : Relevance
    pruned : tuple
        ``(model, state, priors, bound)`` of the model without the dropped
        components.
    """
    tied = dict(tied or {})
    lam = relevances(learning, state.mean, priors.shape)
    kept = {c: np.arange(model.sizes[c]) for c in learning.indices}
    current = (model, state, priors, bound)
    for c in learning.indices:
        for p in np.argsort(component_masses(model, state.mean, c), kind="stable"):
            if kept[c].size == 1:
                break
            trial_kept = {**kept, c: kept[c][kept[c] != p]}
            trial = _sliced(model, state, priors, _with_tied(trial_kept, tied))
            value = kernel.objective(trial[1], contractor_for(trial[0]), trial[2])
            if value < bound - tol:
                break
            kept, current = trial_kept, trial + (value,)
    return Relevance({c: 1.0 / lam[c] for c in learning.indices}, kept), current


def _with_tied(kept, tied):
    """``kept`` with each tied index keeping its partner's components."""
    return {**kept, **{other: kept[c] for c, other in tied.items()}}


def _sliced(model, state, priors, kept):
    """``(model, state, priors)`` with only the ``kept`` values of each ARD index."""
    sizes = {**model.sizes, **{c: int(k.size) for c, k in kept.items()}}
    small = replace(model, sizes=type(model.sizes)(sizes))

    def take(array, alpha):
        if array is None:
            return None
        for axis, c in enumerate(model.factors[alpha]):
            if c in kept:
                array = np.take(array, kept[c], axis=axis)
        return np.ascontiguousarray(array)

    def take_field(field):
        taken = []
        for alpha, array in enumerate(field):
            # A tied position (the same array as an earlier one) stays the same array.
            same = next((beta for beta in range(alpha) if array is not None
                         and field[beta] is array), None)
            taken.append(take(array, alpha) if same is None else taken[same])
        return tuple(taken)

    fields = [take_field(field) for field in state]
    shapes = tuple(take(None if s is None else np.broadcast_to(s, model.factor_shape(a)), a)
                   for a, s in enumerate(priors.shape))
    rates = tuple(take(None if r is None else np.broadcast_to(r, model.factor_shape(a)), a)
                  for a, r in enumerate(priors.rate))
    small_priors = GammaPriors(shapes, rates, priors.log_normalizer)
    return small, type(state)(*fields), small_priors


def set_learned_attributes(estimator, learning, relevance, priors):
    """``prior_rate_`` and, with ARD, ``relevance_`` and ``effective_rank_``
    (one array and int per ARD index; the array and int themselves where
    there is one)."""
    estimator.prior_rate_ = tuple(None if r is None else np.array(r) for r in priors.rate)
    if relevance is None:
        return
    pruned = getattr(estimator, "prune", False)
    values = {c: relevance.values[c][relevance.kept[c]] if pruned else relevance.values[c]
              for c in learning.indices}
    ranks = {c: int(relevance.kept[c].size) for c in learning.indices}
    single = len(learning.indices) == 1
    estimator.relevance_ = next(iter(values.values())) if single else values
    estimator.effective_rank_ = next(iter(ranks.values())) if single else ranks


def held_priors(priors, fitted, sample_priors, alpha):
    """``priors`` (of a model with another number of samples) with the fitted
    rates held: the fitted ones for every factor but the sample factor
    ``alpha``, whose rates come from ``sample_priors``."""
    rates, normalizers = list(fitted.rate), list(fitted.log_normalizer)
    rates[alpha] = sample_priors.rate[alpha]
    normalizers[alpha] = sample_priors.log_normalizer[alpha]
    return GammaPriors(priors.shape, tuple(rates), tuple(normalizers))


class HeldRates(NamedTuple):
    """What a fit with learned rates goes on with (:func:`hold_learned_rates`)."""

    relevance: Relevance | None
    model: object
    state: object
    #: The priors at the rates learned at ``state``, held from then on.
    priors: object
    #: The bound of ``model`` at ``state`` with those rates.
    bound: float


def hold_learned_rates(kernel, learning, model, state, priors, tol, contractor_for, bound,
                       prune=False, tied=None):
    """After VB with learned rates: with ARD the relevances
    (:func:`find_relevance`) and, with ``prune``, the model without the
    components the evidence does not need; then the rates learned at the
    state it goes on with, held from then on (the fold-ins, the evidence).
    The arguments are :func:`find_relevance`'s."""
    relevance = None
    if learning.indices:
        relevance, pruned = find_relevance(kernel, learning, model, state, priors, tol,
                                           contractor_for, bound, tied)
        if prune:
            model, state, priors, bound = pruned
    return HeldRates(relevance, model, state, kernel.priors_at(state, priors), bound)
