"""After VB with learned rates: the relevances read, the components the
evidence does not need found (and, with ``prune``, removed), and the rates
held from then on.

ARD's relevance λ_r of component r is learned inside VB
(:class:`~._hyperparameters.LearnedRatesKernel`); a component whose
relevance collapsed carries no mass, and removing it leaves the bound
unchanged (Tan & Févotte 2013), which is how :func:`find_relevance` decides
what to keep: by the bound, within ``tol`` nats.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np
from opt_einsum import contract
from scipy.special import digamma as _digamma

from ..engine._array_api import like, to_numpy
from ._common import GammaPriors
from ._hyperparameters import relevances

__all__ = ["Relevance", "LastSearch", "find_relevance", "held_priors", "HeldRates",
           "hold_learned_rates", "components_by_tensor", "without_component"]


class Relevance(NamedTuple):
    """The relevances of a fit and the components kept, per ARD index."""

    #: ``{key: 1 / λ}``: the prior mean of each component's elements (the
    #: key: the ARD index, or ``(index, factor)`` for one factor's).
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


class LastSearch(NamedTuple):
    """The kernel's state of the last search of the learned priors in
    :func:`find_relevance` (each search starts where the last one stopped;
    None: none ran), and whether it is at the state given and at the
    state of the components kept."""

    state: object
    at_given: bool
    at_kept: bool


def find_relevance(kernel, learning, model, state, priors, tol, contractor_for, bound,
                   tied=None, searched=None):
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
        The fitted state (VB's) and the priors the fit started from.
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
    searched : LearnedState, default=None
        The kernel's state at ``state``, where the priors were searched
        (hierarchical rates or learned shapes: the relevances are read
        there, and the first smaller model's search starts there); None:
        the first search starts afresh.

    Returns
    -------
    relevance : Relevance
    pruned : tuple
        ``(model, state, priors, bound)`` of the model without the dropped
        components.
    last : LastSearch
    """
    tied = dict(tied or {})
    # With hierarchical rates or learned shapes the relevances are found
    # jointly with them (the kernel's); else in one pass from the means.
    lam = (kernel.relevances_at(state if searched is None else searched, priors)
           if learning.joint else relevances(learning, state.mean, priors.shape))
    kept = {c: np.arange(model.sizes[c]) for c in learning.letters}
    current, last = (model, state, priors, bound), LastSearch(searched, True, True)
    for c in learning.letters:
        for p in np.argsort(component_masses(model, state.mean, c), kind="stable"):
            if kept[c].size == 1:
                break
            trial_kept = {**kept, c: kept[c][kept[c] != p]}
            trial = _sliced(model, state, priors, _with_tied(trial_kept, tied))
            # The smaller model's priors, searched from where the last search
            # stopped (afresh where none ran).
            at = kernel.moved(trial[1] if last.state is None else last.state, trial[1], trial[2])
            value = kernel.objective(at, contractor_for(trial[0]), trial[2])
            if value < bound - tol:
                last = LastSearch(at, False, False)
                break
            kept, current, last = trial_kept, trial + (value,), LastSearch(at, False, True)
    return Relevance({c: 1.0 / lam[c] for c in learning.indices}, kept), current, last


def _with_tied(kept, tied):
    """``kept`` with each tied index keeping its partner's components."""
    return {**kept, **{other: kept[c] for c, other in tied.items()}}


def _sliced(model, state, priors, kept):
    """``(model, state, priors)`` with only the ``kept`` values of each ARD index."""
    sizes = {**model.sizes, **{c: int(k.size) for c, k in kept.items()}}
    small = (model.with_sizes(sizes) if hasattr(model, "with_sizes")  # several tensors
             else replace(model, sizes=type(model.sizes)(sizes)))

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


def held_priors(priors, fitted, sample_priors, alpha):
    """``priors`` (of a model with another number of samples) with the fitted
    shapes and rates held: the fitted ones for every factor but the sample
    factor ``alpha``, whose come from ``sample_priors``."""
    shapes, rates = list(fitted.shape), list(fitted.rate)
    normalizers = list(fitted.log_normalizer)
    shapes[alpha], rates[alpha] = sample_priors.shape[alpha], sample_priors.rate[alpha]
    normalizers[alpha] = sample_priors.log_normalizer[alpha]
    entity_rates = fitted.new_entity_rate
    if entity_rates is not None and entity_rates[alpha] is not None:
        # every sample of a batch is an entity the fit has not seen
        entity_rates = entity_rates[:alpha] + (rates[alpha],) + entity_rates[alpha + 1:]
    return GammaPriors(tuple(shapes), tuple(rates), tuple(normalizers), entity_rates)


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
    The arguments are :func:`find_relevance`'s; ``state`` is VB's (the
    driver's result)."""
    searched = None
    if learning.joint:
        # Hierarchical rates or shapes: held at their maximum, found afresh
        # (the fit's search may have run in another process), and the bound
        # read there.
        kernel = kernel.holding()
        searched = kernel.moved(state, state, priors)  # from VB's state: a search afresh
        bound = kernel.objective(searched, contractor_for(model), priors)
    relevance, last = None, LastSearch(searched, True, True)
    if learning.indices:
        relevance, pruned, last = find_relevance(kernel, learning, model, state, priors, tol,
                                                 contractor_for, bound, tied, searched)
        if prune:
            model, state, priors, bound = pruned
    # The priors held: those of the last search where it was at the state
    # kept, else searched there, from where the last search stopped.
    at_state = last.at_kept if prune else last.at_given
    held = (last.state if at_state and last.state is not None
            else kernel.moved(state if last.state is None else last.state, state, priors))
    return HeldRates(relevance, model, state, kernel.priors_at(held, priors), bound)


def components_by_tensor(model, state, priors, objective, tol):
    """Which components each tensor of a coupled model needs, by the bound.

    For tensor t and value p of a latent index c, the elements at p of the
    factors that carry c and that t alone holds are fixed at zero (their
    q set to their prior, so they add nothing to the bound, and their
    means to 0, so X̂ of t loses the component): t needs p where the bound
    then falls by more than ``tol`` nats. A tensor whose every factor with
    c is shared cannot drop p on its own, and needs it; one without c needs
    none of it. Where a component's
    private factors in one tensor carry it and another's do not, the
    component is private to the first (collective matrix factorization's
    shared and private components; Klami, Bouchard & Tripathi, ICLR 2014).

    Parameters
    ----------
    model : CoupledModel
    state : VBState
        The fitted state.
    priors : GammaPriors
        The priors the bound is read at (the learned ones, held).
    objective : callable
        ``objective(state)``: the bound of all the tensors at ``priors``.
    tol : float
        In nats.

    Returns
    -------
    dict
        ``{latent index: bool array (n_tensors, size)}``.
    """
    full = objective(state)
    needed = {}
    for c in model.latent:
        table = np.zeros((len(model.models), model.sizes[c]), dtype=bool)
        for t in range(len(model.models)):
            carrying = [a for a in model.positions[t] if c in model.factors[a]]
            own = [a for a in carrying if len(model.holders(a)) == 1
                   and priors.shape[a] is not None]
            if not own:  # a tensor without c needs none of it; one sharing all, all
                table[t] = bool(carrying)
                continue
            for p in range(model.sizes[c]):
                trial = without_component(model, state, priors, own, c, p)
                table[t, p] = full - objective(trial) > tol
        needed[c] = table
    return needed


def without_component(model, state, priors, alphas, index, value):
    """``state`` with the elements at ``value`` of latent ``index`` of the
    factors ``alphas`` fixed at zero: q their prior, their means 0 (worked
    in NumPy, factor-sized, and returned in each array's own namespace)."""
    fields = [list(field) for field in state]
    shape, scale, mean, geometric, digamma = fields
    for alpha in alphas:
        axis = model.factors[alpha].index(index)
        chosen = [slice(None)] * len(model.factors[alpha])
        chosen[axis] = value
        chosen = tuple(chosen)
        a = np.broadcast_to(to_numpy(priors.shape[alpha]), shape[alpha].shape)
        r = np.broadcast_to(to_numpy(priors.rate[alpha]), shape[alpha].shape)
        for field, value_at in ((shape, a[chosen]), (scale, 1.0 / r[chosen]),
                                (digamma, _digamma(a[chosen])), (mean, 0.0),
                                (geometric, 0.0)):
            template = field[alpha]
            changed = np.array(to_numpy(template), copy=True)
            changed[chosen] = value_at
            field[alpha] = like(changed, template)
    return type(state)(*(tuple(field) for field in fields))
