"""The fit of a Poisson–Gamma model whose factor sits at two positions (a tied factor).

:class:`TiedFit` is the structure :class:`~._base.BasePoissonPLTF` fits
when the model has a tied factor (:class:`~._one_tensor.OneTensorFit`
otherwise): the fit, the evidence and the training-data-only
``transform``/``score`` of a model in the RESCAL structure
(:mod:`sklearn_pltf.inference.relational.structure` maps it onto the
canonical ``"ia,jb,abk->ijk"`` of the relational family's kernels). An
estimator offers ties by its ``_tied_positions`` hook.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
from joblib import effective_n_jobs

from ..engine.model import Model
from ..evidence import _posterior as _mcmc
from ..evidence._checks import check_poisson_log_evidence
from ..inference._methods import METHODS
from ..inference.relational import rescal
from ..inference.relational._relational import (drop_relation_axis, relational_data,
                                                 with_relation_axis, without_relation_axis)
from ..inference.relational.rescal_sgld import RescalTarget
from ..inference.relational.structure import (RESCAL_MODEL, rescal_kernels, rescal_learning,
                                              tied_structure,
                                              with_entity_prior_at_both_positions)
from ._fitting import FittedModel, optimize_and_hold
from ._one_tensor import BOUND_ADVICE, optimizer_attributes
from ._relevance import check_learning, learned_attributes, learned_kinds

__all__ = ["TiedFit"]


class TiedFit:
    """The steps of a fit, and after it, of a bound ``model`` whose factors
    ``tied`` (``{position: source position}``) are in the RESCAL structure
    (:func:`~sklearn_pltf.inference.relational.structure.tied_structure`
    checks it): the interface :class:`~._one_tensor.OneTensorFit` shares.
    It takes the fit's :class:`~._fitting.FitSettings` and returns values;
    ``name`` (the estimator's) is for messages."""

    #: Its family in the table of methods (:mod:`sklearn_pltf.inference._methods`).
    family = "tied"

    def __init__(self, model, tied, name):
        shape = model.observed_shape
        if shape[0] != shape[1]:  # the data's first two axes hold the same entities
            raise ValueError(
                f"{name} with a tied entity factor needs an entity x entity (x relation) "
                f"array, its first two axes the same size; got shape {shape}.")
        self.structure = tied_structure(model, tied)

    # ------------------------------------------------------------- the fit
    def rate_learning(self, model, ard_indices, settings):
        """:func:`rescal_learning`: a relevance per entity cluster."""
        stray = sorted(set(ard_indices) - set(model.latent))
        if stray:
            raise ValueError(f"ARD indices {stray} are not latent indices of {model.string!r}; "
                             "a tied model's relevances are its entity clusters'.")
        learning = rescal_learning(bool(ard_indices), *learned_kinds(settings))
        check_learning(settings, learning)
        return learning

    def _relational(self, data, priors, likelihood):
        """The data and priors in the canonical layout RESCAL's kernels read."""
        return (relational_data(with_relation_axis(data), likelihood),
                self.structure.priors_to_canonical(priors))

    def _to_model(self, state, data):
        """A canonical state in the model's factor order and layout."""
        if data.ndim == 2:  # one relation: G without its relation axis
            state = without_relation_axis(state)
        return type(state)(*(self.structure.to_model_order(field) for field in state))

    def fit_optimizer(self, settings, data, model, priors, fixed, rng, evidence, first_start,
                      learning):
        """VB or EM on RESCAL's kernels: restarts to convergence, the best
        kept, learned rates held (returns as
        :meth:`~._one_tensor.OneTensorFit.fit_optimizer`; no fold-in)."""
        if first_start is not None:
            raise ValueError("init and warm_start are not supported with tied factors; leave "
                             "init='random' and warm_start=False.")
        relational, canonical_priors = self._relational(data, priors, settings.likelihood)
        kernels = rescal_kernels(learning)
        r = self.structure.canonical.sizes["a"]
        canonical = Model.parse(RESCAL_MODEL).bind(relational.observed.shape, {"a": r, "b": r})
        state, objectives, converged, held, _ = optimize_and_hold(
            settings, kernels[settings.method], canonical, canonical_priors,
            functools.partial(rescal.restart_start, kernels, rescal.state_around_mode,
                              settings.method,
                              functools.partial(rescal.vb_start, settings.tied_start),
                              settings.loop, canonical_priors, r),
            rng.spawn(settings.n_init), learning, functools.partial(_same, relational),
            n_jobs=effective_n_jobs(settings.n_jobs), tied={"a": "b"})
        bound, attributes = objectives[-1], {}
        if held is not None:
            state, priors, model, bound, attributes = self._held_rates(settings, model, held,
                                                                       learning)
        attributes.update(optimizer_attributes(objectives, converged, bound))
        if evidence == "vb":
            attributes["log_evidence_"] = check_poisson_log_evidence(
                bound, relational.observed, advice=BOUND_ADVICE, likelihood=settings.likelihood)
        return (self._to_model(state, data), FittedModel(model, priors, learning, None), False,
                attributes)

    def _held_rates(self, settings, model, held, learning):
        """After VB with learned rates, from the canonical ``held``
        (:class:`~sklearn_pltf.inference._relevance.HeldRates`): the
        canonical ``(state, priors)``, the model with its cluster sizes (the
        unneeded clusters removed with ``prune``), the bound at the held
        rates and the learned attributes."""
        structure = self.structure
        canonical = structure.canonical
        if held.model.sizes["a"] != canonical.sizes["a"]:  # pruned: the cluster indices shrink
            clusters = [model.factors[a].replace(model.output[n], "")
                        for n, a in enumerate((structure.first, structure.second))]
            model = replace(model, sizes={**model.sizes,
                                          **{c: held.model.sizes["a"] for c in clusters}})
        shown = with_entity_prior_at_both_positions(held.priors)
        rates, shapes = shown.rate, shown.shape
        if len(model.output) == 2:  # one relation: G without its relation axis
            rates, shapes = drop_relation_axis(rates), drop_relation_axis(shapes)
        attributes = learned_attributes(learning, held.relevance, held.priors._replace(
            rate=structure.to_model_order(rates), shape=structure.to_model_order(shapes)),
            pruned=settings.prune)
        # With learned shapes, the bound at their held maximum.
        return held.state, held.priors, model, held.bound, attributes

    def sample_posterior(self, settings, data, model, priors, fixed, rng, evidence, common):
        """Gibbs or SADA chains with the rows of A drawn in turn
        (:mod:`sklearn_pltf.inference.relational.rescal_gibbs`) and Chib's
        evidence on request, or SGLD chains
        (:mod:`sklearn_pltf.inference.relational.rescal_sgld`) and STI's
        (``common``: the chains' settings)."""
        structure = self.structure
        relational, canonical_priors = self._relational(data, priors, settings.likelihood)
        r = structure.canonical.sizes["a"]
        if METHODS[settings.method].minibatch:
            sgld = settings.sgld
            if sgld["n_blocks"] is not None:
                raise ValueError(
                    "n_blocks: parallel blocks share no factor rows, which a tied entity factor "
                    "(on both entity axes) cannot give; use batch_size.")
            make_target = functools.partial(RescalTarget, relational, canonical_priors, r,
                                            sgld["batch_size"])
            posterior = _mcmc.sgld_posterior(rng, make_target, structure.canonical, (0, 1, 2),
                                             sti=evidence == "sti", settings=sgld,
                                             tied_labels=[("a", "b")], **common)
        else:
            posterior = _mcmc.rescal_posterior(settings.method, rng, structure.canonical,
                                               relational, canonical_priors, r, **common)
        draws = drop_relation_axis(posterior.draws) if data.ndim == 2 else posterior.draws
        return posterior._replace(state=self._to_model(posterior.state, data),
                                  draws=structure.to_model_order(draws, lead=2))

    def modelled_entries(self, coords, values):
        """The observed entries without those where the tied factor meets
        itself (x(i, i, ...), missing in every fit)."""
        off_diagonal = coords[0] != coords[1]
        return coords[:, off_diagonal], values[off_diagonal]

    def check_log_evidence(self, value, data, likelihood, **checks):
        """:func:`check_poisson_log_evidence` of the data the evidence is of:
        the observed entries :meth:`modelled_entries` keeps."""
        modelled = relational_data(with_relation_axis(data), likelihood).observed
        return check_poisson_log_evidence(value, modelled, likelihood=likelihood, **checks)

    # -------------------------------------------------------- after the fit
    def _require_training_data(self, view, what):
        """A ValueError unless the data are the training data: a tied fit's
        entities are that tensor's."""
        if not view.is_training_data:
            raise ValueError(
                f"{view.name} with a tied entity factor {what} its training data only: its "
                "entities are that tensor's, and a new entity needs its relations to them; "
                "refit on the tensor with the new entities.")

    def transform(self, data, view):
        """The entity factor A of the training data, (n_entities, n_components)."""
        self._require_training_data(view, "transforms")
        structure = self.structure
        return np.array(structure.entity_to_canonical(structure.first,
                                                      view.factors[structure.first]))

    def predictive_score(self, data, view):
        """No new data to score: a ValueError (training data are scored by
        their evidence before this is asked)."""
        self._require_training_data(view, "scores")

    def inverse_transform(self, X, view):
        """X̂ from entity factor rows ``X`` at both entity positions and the
        fitted core."""
        structure = self.structure
        W = np.asarray(X, dtype=np.float64)
        r = structure.canonical.sizes["a"]
        if W.ndim != 2 or W.shape[1] != r:
            raise ValueError(f"Expected an array of shape (n_entities, {r}), got {W.shape}.")
        factors = list(view.factors)
        factors[structure.first] = structure.entity_to_model(structure.first, W)
        factors[structure.second] = structure.entity_to_model(structure.second, W)
        return np.einsum(view.model.string, *factors)


def _same(contractor, model):
    """``contractor`` for any ``model``: RESCAL's kernels read the relational
    data whatever the cluster sizes."""
    return contractor
