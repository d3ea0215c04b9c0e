"""Estimators whose model holds one factor at two positions (a tied factor).

:class:`TiedFactorMixin` gives an estimator the fit, the evidence and the
training-data-only ``transform``/``score`` of a model in the RESCAL
structure (:mod:`sklearn_pltf.inference.relational.structure` maps it onto
the canonical ``"ia,jb,abk->ijk"`` of the relational family's kernels).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils.validation import check_is_fitted

from ..engine._array_api import array_api_refusal
from ..evidence._checks import check_poisson_log_evidence
from ..inference.relational import rescal, rescal_gibbs
from ..inference._common import gamma_priors
from ..inference.relational._relational import (drop_relation_axis, relational_data,
                                                 with_relation_axis, without_relation_axis)
from ..inference.relational.rescal_sgld import RescalTarget
from ..inference.relational.structure import RESCAL_MODEL, tied_structure
from ..engine.model import Model
from ..evidence import _posterior as _mcmc
from ..inference._driver import OptimizerProblem
from ..inference._hyperparameters import LearnedRatesKernel, RateLearning
from ._base import FittedModel, fit_by_optimizer
from ..inference._relevance import hold_learned_rates
from ._relevance import check_learning, set_learned_attributes

__all__ = ["TiedFactorMixin"]

def _rescal_kernels(learning):
    """RESCAL's VB and EM, VB with its rates learned where ``learning`` says."""
    if learning is None:
        return rescal.KERNELS
    return {**rescal.KERNELS, "vb": LearnedRatesKernel(rescal.KERNELS["vb"], learning)}


def rescal_learning(ard, per_factor):
    """The rates RESCAL learns, on its canonical ``(A, A, G)``: with ``ard``
    a relevance λ per cluster, the rate of A(i, a) ``shape · λ_a`` and of
    G(a, b, k) ``shape · λ_a λ_b`` (a cluster switched off leaves no mass in
    A's column nor in G's row and column); with ``per_factor`` (and no
    ``ard``) one rate for A and one for G; None if neither."""
    if not ard and not per_factor:
        return None
    if ard:
        return RateLearning(relevant=((("a", 1),), (), (("a", 0), ("a", 1))),
                            per_factor=(False, False, False), indices=("a",))
    return RateLearning(relevant=((), (), ()), per_factor=(True, False, True), indices=())


class TiedFactorMixin:
    """Fit, evidence, transform and score of a model with a tied factor
    (module docstring), for a :class:`~._base.BasePoissonPLTF` subclass.

    The subclass says which positions are tied (:meth:`_tied_positions`);
    where none are, every method falls through to the base class.
    """

    def _tied_positions(self, model):
        """``{position: source position}`` of ``model``'s tied factors."""
        return {}

    def _vb_start(self, restart):
        """Where VB's ``restart``-th run starts: ``"mode"`` (around EM's
        posterior mode) for the first, ``"random"`` for the others."""
        return rescal.mode_first(restart)

    def _structure(self, model):
        tied = self._tied_positions(model)
        return tied_structure(model, tied) if tied else None

    def _has_tied_factor(self):
        return bool(self._tied_positions(Model.parse(self._model_spec(3)[0])))

    @property
    def _fits_distributed_data(self):
        """A tied factor's updates pair entries across the blocks: in memory only."""
        return super()._fits_distributed_data and not self._has_tied_factor()

    @property
    def _tied_factors(self):
        return self._tied_positions(self.model_) if hasattr(self, "model_") else {}

    def _gamma_priors(self, model):
        """The base's, where a dict of priors may leave out the tied position
        (its source's entry serves it)."""
        tied = self._tied_positions(model)

        def filled(value):
            if not isinstance(value, dict):
                return value
            return {**{t: value[s] for t, s in tied.items() if s in value}, **value}

        return gamma_priors(model, filled(self.prior_shape), filled(self._given_rate))

    def _rate_learning_for(self, model):
        """The base's; for the RESCAL structure, :func:`rescal_learning` (a
        relevance per entity cluster)."""
        if self._structure(model) is None:
            return super()._rate_learning_for(model)
        indices = self._ard_indices(model)
        stray = sorted(set(indices) - set(model.latent))
        if stray:
            raise ValueError(f"ARD indices {stray} are not latent indices of {model.string!r}; "
                             "a tied model's relevances are its entity clusters'.")
        learning = rescal_learning(bool(indices), isinstance(self.prior_rate, str))
        check_learning(self, learning)
        return learning

    def _hold_tied_rates(self, relational, model, structure, state, priors, learning):
        """After VB with learned rates, on the canonical state: the relevances,
        the unneeded clusters removed with ``prune``, the rates held. Returns
        the canonical ``(state, priors)`` and the model with its cluster sizes."""
        r = state.mean[0].shape[1]
        canonical = Model.parse(RESCAL_MODEL).bind(relational.observed.shape, {"a": r, "b": r})
        held = hold_learned_rates(
            _rescal_kernels(learning)["vb"], learning, canonical, state, priors, self.tol,
            contractor_for=lambda _: relational, bound=self.lower_bound_, prune=self.prune,
            tied={"a": "b"})
        if held.model is not canonical:  # pruned: the model's two cluster indices shrink
            clusters = [model.factors[a].replace(model.output[n], "")
                        for n, a in enumerate((structure.first, structure.second))]
            model = replace(model, sizes={**model.sizes,
                                          **{c: held.model.sizes["a"] for c in clusters}})
            self.lower_bound_ = held.bound
        rates = held.priors.rate if len(model.output) == 3 else drop_relation_axis(held.priors.rate)
        set_learned_attributes(self, learning, held.relevance,
                               held.priors._replace(rate=structure.to_model_order(rates)))
        return held.state, held.priors, model

    def _array_api_refusal(self):
        """A tied factor's updates run on RESCAL's NumPy engine."""
        if self._has_tied_factor():
            return array_api_refusal(f"{type(self).__name__} with a tied factor")
        return super()._array_api_refusal()

    def _observed(self, X, mask, reset):
        data = super()._observed(X, mask, reset)
        if self._has_tied_factor() and data.shape[0] != data.shape[1]:
            raise ValueError(
                f"{type(self).__name__} with a tied entity factor needs an entity x entity "
                f"(x relation) array, its first two axes the same size; got shape {data.shape}.")
        return data

    def _evidence_method(self, data_is_sparse=False):
        """As the base's, with Chib's the default of Gibbs and SADA; AIS is
        not built for a tied factor."""
        if not self._has_tied_factor():
            return super()._evidence_method(data_is_sparse)
        if self.evidence == "ais":
            raise ValueError(
                "evidence='ais' is not built for a model with a tied factor: use the VB bound, "
                "Chib's estimate (method='gibbs' or 'sada') or STI (method='sgld').")
        if self.evidence == "auto" and self.method in rescal_gibbs.SWEEPS:
            return "chib"
        return super()._evidence_method(data_is_sparse)

    def _relational(self, data, structure, priors):
        return (relational_data(with_relation_axis(data), self.likelihood),
                structure.priors_to_canonical(priors))

    def _modelled_entries(self, coords, values):
        """The observed entries without those where the tied factor meets
        itself (x(i, i, ...), missing in every fit)."""
        if self._structure(self.model_) is None:
            return coords, values
        off_diagonal = coords[0] != coords[1]
        return coords[:, off_diagonal], values[off_diagonal]

    def _modelled_data(self, data, model):
        """The observed entries :meth:`_modelled_entries` keeps, without the
        diagonal's, as data: what the evidence is of."""
        if self._structure(model) is None:
            return data
        return relational_data(with_relation_axis(data), self.likelihood).observed

    def _token_by_token_methods(self, model):
        if self._structure(model) is None:
            return super()._token_by_token_methods(model)
        return tuple(rescal_gibbs.SWEEPS)

    def _sample_posterior(self, data, model, priors, fixed, rng, evidence):
        """Gibbs or SADA chains with the rows of A drawn in turn
        (:mod:`sklearn_pltf.inference.relational.rescal_gibbs`) and Chib's evidence, or
        SGLD chains (:mod:`sklearn_pltf.inference.relational.rescal_sgld`) and STI's."""
        structure = self._structure(model)
        if structure is None:
            return super()._sample_posterior(data, model, priors, fixed, rng, evidence)
        relational, canonical_priors = self._relational(data, structure, priors)
        r = structure.canonical.sizes["a"]
        common = self._chain_settings()
        if self.method == "sgld":
            settings = self._sgld_settings()
            if settings["n_blocks"] is not None:
                raise ValueError(
                    "n_blocks: parallel blocks share no factor rows, which a tied entity factor "
                    "(on both entity axes) cannot give; use batch_size.")
            make_target = functools.partial(RescalTarget, relational, canonical_priors, r,
                                            settings["batch_size"])
            posterior = _mcmc.sgld_posterior(rng, make_target, structure.canonical, (0, 1, 2),
                                             sti=evidence == "sti", settings=settings,
                                             tied_labels=[("a", "b")], **common)
        else:
            posterior = _mcmc.rescal_posterior(self.method, rng, structure.canonical, relational,
                                               canonical_priors, r, chib=evidence == "chib",
                                               **common)
        state, draws = posterior.state, posterior.draws
        if data.ndim == 2:  # one relation: G without its relation axis
            state, draws = without_relation_axis(state), drop_relation_axis(draws)
        state = type(state)(*(structure.to_model_order(field) for field in state))
        return posterior._replace(state=state, draws=structure.to_model_order(draws, lead=2))

    def _fit_optimizer(self, data, model, priors, fixed, rng, evidence, first_start, learning):
        """VB or EM: restarts to convergence, the best kept (the base's
        returns: the state, the :class:`~._base.FittedModel`, no fold-in)."""
        structure = self._structure(model)
        if structure is None:
            return super()._fit_optimizer(data, model, priors, fixed, rng, evidence, first_start,
                                          learning)
        if first_start is not None:
            raise ValueError("init and warm_start are not supported with tied factors; leave "
                             "init='random' and warm_start=False.")
        relational, canonical_priors = self._relational(data, structure, priors)
        kernels, settings = _rescal_kernels(learning), self._optimizer_settings()
        problem = OptimizerProblem(
            kernels[self.method], relational, canonical_priors,
            start=functools.partial(rescal.restart_start, kernels, rescal.state_around_mode,
                                    self.method, self._vb_start, settings, canonical_priors,
                                    structure.canonical.sizes["a"]))
        state, objectives, converged, _ = fit_by_optimizer(
            problem, rng.spawn(self.n_init), settings, n_jobs=effective_n_jobs(self.n_jobs))
        self.lower_bound_ = objectives[-1]
        if learning is not None:
            state, priors, model = self._hold_tied_rates(relational, model, structure, state,
                                                         canonical_priors, learning)
        if data.ndim == 2:
            state = without_relation_axis(state)
        state = type(state)(*(structure.to_model_order(field) for field in state))
        self.n_iter_ = len(objectives)
        self.converged_ = converged
        self.lower_bounds_ = np.asarray(objectives)
        if evidence == "vb":
            self.log_evidence_ = check_poisson_log_evidence(
                self.lower_bound_, relational.observed,
                advice="A variational bound cannot lie above log p(X): please report this.",
                likelihood=self.likelihood)
        return state, FittedModel(model, priors, learning, None), False

    def _require_training_data(self, data, what):
        if not self._is_training_data(data):
            raise ValueError(
                f"{type(self).__name__} with a tied entity factor {what} its training data "
                "only: its entities are that tensor's, and a new entity needs its relations "
                "to them; refit on the tensor with the new entities."
            )

    def transform(self, X, mask=None):
        """The entity factor A of the training data (posterior mean, or mode
        for EM); without a tied factor, the base's fold-in.

        Returns
        -------
        A : ndarray of shape (n_entities, n_components)
        """
        return super().transform(X, mask)

    def _transform_data(self, data):
        structure = self._structure(self.model_)
        if structure is None:
            return super()._transform_data(data)
        self._require_training_data(data, "transforms")
        return np.array(structure.entity_to_canonical(structure.first,
                                                      self.factors_[structure.first]))

    def score(self, X, y=None, mask=None):
        """Log evidence of ``X``; with a tied factor, of the training data
        only (``log_evidence_``; EM: the log joint), recognised also without
        the mask they were fitted with (as the base's ``score``)."""
        check_is_fitted(self)
        if self._structure(self.model_) is None:
            return super().score(X, y, mask)
        data = self._observed(X, mask, reset=False)
        if not self._is_training_data_without_its_mask(data, mask):
            self._require_training_data(data, "scores")
        return self._training_score()

    def inverse_transform(self, X):
        """X̂ from entity factor rows ``X`` (e.g. from :meth:`transform`) at
        both entity positions and the fitted core; without a tied factor, the
        base's reconstruction.

        Parameters
        ----------
        X : ndarray of shape (n_entities, n_components)

        Returns
        -------
        X_hat : ndarray of shape (n_entities, n_entities[, n_relations])
        """
        check_is_fitted(self)
        structure = self._structure(self.model_)
        if structure is None:
            return super().inverse_transform(X)
        W = np.asarray(X, dtype=np.float64)
        r = structure.canonical.sizes["a"]
        if W.ndim != 2 or W.shape[1] != r:
            raise ValueError(f"Expected an array of shape (n_entities, {r}), got {W.shape}.")
        factors = list(self.factors_)
        factors[structure.first] = structure.entity_to_model(structure.first, W)
        factors[structure.second] = structure.entity_to_model(structure.second, W)
        return np.einsum(self.model_.string, *factors)
