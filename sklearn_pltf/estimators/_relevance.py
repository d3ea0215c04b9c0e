"""Learned prior rates and relevances (ARD): the estimators' parameters and
attributes.

What an estimator asks for (``prior_rate="auto"``, ``ard``, ``prune``)
becomes a :class:`~sklearn_pltf.inference._hyperparameters.RateLearning`;
VB then runs :class:`~sklearn_pltf.inference._hyperparameters.LearnedRatesKernel`,
and after it :func:`~sklearn_pltf.inference._relevance.hold_learned_rates`
reads the relevances and, with ``prune=True``, removes the components the
evidence does not need; this module sets the fitted attributes from them.
"""

from __future__ import annotations

import numpy as np

from ..inference._hyperparameters import index_letter, rate_learning
from ..inference._methods import require

__all__ = ["ARD_PARAMETERS", "ARD_ATTRIBUTES", "LEARNED_ATTRIBUTES", "learning_of",
           "learned_kinds", "given_priors", "learned_attributes", "check_learning"]

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
        With ``prior_rate="auto"`` or ``"hierarchical"``, ``prior_shape="auto"``
        or ``ard=True``: the fitted prior rate of every element of each factor
        (None for fixed factors), the rates at which ``log_evidence_`` is the
        bound and new samples are folded in (with hierarchical rates, each
        element's ``prior_shape E[β]``; a new sample's rate is inferred with it).
        After :meth:`partial_fit`, the sample factor's is of the last batch's
        size (the same rate for every sample).
    prior_shape_ : tuple of float
        With ``prior_shape="auto"``: each factor's learned prior shape (None
        for fixed factors).
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
LEARNED_ATTRIBUTES = ("prior_rate_", "prior_shape_", "relevance_", "effective_rank_")


def learning_of(settings, model, ard_indices):
    """The :class:`RateLearning` that a fit's ``prior_rate`` and ``prior_shape``
    (its :class:`~._fitting.FitSettings`) and ``ard_indices`` (a string of
    latent indices) ask for, or None."""
    per_factor, hierarchical, learn_shape = learned_kinds(settings)
    if settings.ard and not ard_indices:
        raise ValueError(f"ard asks for a relevance per component, and {model.string!r} has "
                         "no latent index to give one to.")
    if not ard_indices and not (per_factor or hierarchical or learn_shape):
        return None
    return rate_learning(model, model.free, ard_indices, per_factor, hierarchical, learn_shape)


def learned_kinds(given):
    """``(per_factor, hierarchical, learn_shape)``: what ``prior_rate``
    (``"auto"``, ``"hierarchical"``) and ``prior_shape`` (``"auto"``) ask to
    learn (``given``: the parameters, or the :class:`~._fitting.FitSettings`)."""
    rate = given.prior_rate if isinstance(given.prior_rate, str) else None
    return rate == "auto", rate == "hierarchical", isinstance(given.prior_shape, str)


def given_priors(given):
    """``(prior_shape, prior_rate)`` with 1 for what is learned (a string):
    where the fit starts them."""
    return tuple(1.0 if isinstance(value, str) else value
                 for value in (given.prior_shape, given.prior_rate))


def check_learning(settings, learning):
    """Raise unless the fit's method learns rates (VB)."""
    if settings.prune and (learning is None or not learning.indices):
        raise ValueError("prune=True removes the components that ARD switched off: it needs "
                         "ard=True.")
    if learning is None:
        return
    # (EM cannot: the posterior mode taken jointly over the factors and their
    # rates does not exist, a factor at zero under a rate that grows without
    # bound having unbounded density.)
    require(settings.method, "poisson", "learns_priors",
            "prior_rate='auto' or 'hierarchical', prior_shape='auto' and ard=True learn the "
            "prior by the evidence: they need")
    if settings.evidence not in ("auto", "vb", None):
        raise ValueError(
            f"evidence={settings.evidence!r} with learned rates: the evidence is the VB "
            "bound at the learned rates; use evidence='auto' or 'vb'.")


def learned_attributes(learning, relevance, priors, pruned=False):
    """The fitted attributes of learned priors: ``prior_rate_``, with learned
    shapes ``prior_shape_`` and, with ARD, ``relevance_`` and
    ``effective_rank_`` (one array and int per ARD index; the array and int
    themselves where there is one)."""
    attributes = {"prior_rate_": tuple(None if r is None else np.array(r) for r in priors.rate)}
    if learning.learn_shape:
        attributes["prior_shape_"] = tuple(None if s is None else float(np.asarray(s).flat[0])
                                           for s in priors.shape)
    if relevance is None:
        return attributes
    values = {key: relevance.values[key][relevance.kept[index_letter(key)]] if pruned
              else relevance.values[key] for key in learning.indices}
    ranks = {c: int(relevance.kept[c].size) for c in learning.letters}
    single = len(learning.letters) == 1
    if len(values) > len(ranks) and single:  # a relevance per factor, one index: by factor
        values = {factor: value for (_, factor), value in values.items()}
    attributes["relevance_"] = next(iter(values.values())) if len(values) == 1 else values
    attributes["effective_rank_"] = next(iter(ranks.values())) if single else ranks
    return attributes
