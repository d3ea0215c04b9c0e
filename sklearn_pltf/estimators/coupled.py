"""``CoupledPLTF``: several tensors that share factors, fitted as one model
with one evidence (generalised coupled tensor factorisation;
:mod:`sklearn_pltf.engine._coupled`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Set
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine._array_api import array_api_refusal
from ..engine._coupled import CoupledContractor, CoupledData, CoupledModel, bind_models
from ..engine._data import as_observed_tensor, is_dask_array
from ..engine._likelihood import LIKELIHOODS, Likelihood, get_likelihood
from ..engine._random import as_generator
from ..evidence import _posterior as _mcmc
from ..evidence._checks import check_log_evidence, saturated_log_likelihood
from ..inference import vb
from ..inference._states import VBState
from ..inference._common import gamma_priors
from ..inference.relational._relational import relational_data
from ..inference.relational import rescal
from ..inference._convergence import ACCELERATIONS
from ..inference._methods import METHODS, FamilyMethods, choose_evidence, require
from ..inference._hyperparameters import rate_learning
from ..inference._relevance import components_by_tensor
from ..inference.relational import coupled as rescal_coupled
from ._fitting import fit_settings, optimize_and_hold, optimizer_start, set_fitted
from ._one_tensor import BOUND_ADVICE, kernel_for, optimizer_attributes
from ._relevance import LEARNED_ATTRIBUTES, given_priors, learned_attributes, learned_kinds
from ._sampled import fit_sampler
from ..engine._factor_checks import check_entry_indices, tied_positions
from ._validation import check_parameters, input_namespace
from ..inference._predictive import predictive_at_entries
from ._skeleton import (is_training_data_without_its_mask, restore_on_failure,
                        unmasked_fingerprint)
from ..inference.relational.structure import (rescal_kernels, tied_rate_learning, tied_structure,
                                              with_entity_prior_at_both_positions)

__all__ = ["CoupledPLTF"]

# What one method's fit sets and another's does not: a refit clears them.
_METHOD_ATTRIBUTES = ("log_evidence_", "log_evidence_error_", "lower_bound_", "lower_bounds_",
                      "converged_", "draws_", "log_likelihoods_", "rhat_", "n_warmup_")


def _tied_layout(models, tied_factors):
    """The first model's tie (:func:`~sklearn_pltf.inference.relational.structure.tied_structure`),
    checked to be RESCAL's layout ``"ia,jb,abk->ijk"`` with at least one
    other tensor beside it."""
    if len(models) < 2:
        raise ValueError("tied_factors with one tensor is BayesianRESCAL; CoupledPLTF "
                         "needs at least one more tensor sharing the entity factor.")
    structure = tied_structure(models[0], tied_positions(models[0], tied_factors))
    if (structure.first, structure.second, structure.core, structure.core_axes,
            structure.latent_first) != (0, 1, 2, (0, 1, 2), (False, False)):
        raise ValueError(
            "tied_factors in CoupledPLTF: write the first model as the RESCAL structure "
            "'ia,jb,abk->ijk' (entity factors first, (entity, cluster); the core "
            f"(cluster, cluster, relation); any letters) with tied_factors={{1: 0}}; got "
            f"{models[0].string!r} with {tied_factors}.")
    return structure


class _CoupledChains:
    """The structure of a coupled model's chains for
    :func:`~._sampled.fit_sampler` (the interface of
    :class:`~._one_tensor.OneTensorFit`'s fit): the chains over every tensor
    (:class:`~sklearn_pltf.engine._coupled.CoupledContractor`, built in each
    chain's worker) and the evidence's check against the tensors' saturated
    log-likelihoods."""

    family = "coupled"

    def __init__(self, likelihoods):
        self.likelihoods = likelihoods

    def sample_posterior(self, settings, data, model, priors, fixed, rng, evidence, common):
        contractor_for = functools.partial(CoupledContractor, model, data.parts, self.likelihoods)
        return _mcmc.sample_posterior(settings.method, rng, model, contractor_for, priors, fixed,
                                      **common)

    def check_log_evidence(self, value, data, *, standard_error, advice, likelihood):
        return _checked_evidence(value, data.parts, self.likelihoods,
                                 standard_error=standard_error, advice=advice)


def _checked_evidence(value, datas, likelihoods, *, standard_error=0.0, advice):
    """An evidence of the coupled tensors, checked against the sum of their
    saturated log-likelihoods (no model gives the data more)."""
    bound = sum(saturated_log_likelihood(d, lik) for d, lik in zip(datas, likelihoods))
    return check_log_evidence(value, standard_error=standard_error, upper_bound=bound,
                              advice=advice)


def _one_per_tensor(value, name, n_tensors, what, *, or_none=False,
                    sequence="a sequence (a list or tuple)"):
    """``value`` as a list of ``n_tensors`` entries, one per model string of
    ``models`` in the same order; else a ValueError naming ``name``: a
    mapping or a set has no such order, and a string or a scalar is no
    sequence. The one check of every per-tensor sequence (the tensors, their
    masks, likelihoods and weights)."""
    expected = (f"{name} must be {'None or ' if or_none else ''}{sequence} of {n_tensors} "
                f"{what}, one per model string of models, in the same order")
    if (isinstance(value, (Mapping, Set, str, bytes)) or not hasattr(value, "__len__")
            or isinstance(value, np.ndarray) and value.ndim == 0):
        raise ValueError(f"{expected}; got a {type(value).__name__}.")
    if len(value) != n_tensors:
        raise ValueError(f"{expected}; got {len(value)}.")
    return list(value)


class CoupledPLTF(BaseEstimator):
    """Several count, binary or non-negative tensors whose factors share
    indices, fitted as one Bayesian model with one evidence.

    Each observed tensor has its own model string over one alphabet of
    indices; a factor whose index string appears in several models is one
    shared factor (Yılmaz, Cemgil & Şimşekli, NIPS 2011). For a user x item
    x context tensor with item features, ``models=("ur,ir,cr->uic",
    "ir,rf->if")`` shares the item factor ``"ir"``. Each tensor has its own
    likelihood and missing entries; every factor has a Gamma prior, and
    variational Bayes (or EM) updates a shared factor from every tensor that
    holds it, so the bound is one evidence of all the tensors together.

    Parameters
    ----------
    models : sequence of str
        One model string per observed tensor, in the order the tensors are
        given to :meth:`fit`. The first tensor is the one
        :meth:`predict_entries` addresses by default (the target of link
        prediction; the others are side information).
    n_components : int or dict, default=2
        Size of every latent index, or ``{index: size}`` for each latent
        index of every model (each key a latent index of at least one model).
    likelihood : {"poisson", "bernoulli", "compound_poisson"}, CompoundPoisson \
            or sequence of them, default="poisson"
        One for all tensors, or one per tensor: ``"bernoulli"`` for 0/1
        relations (the Bernoulli–Poisson link), ``"compound_poisson"`` or
        ``CompoundPoisson(jump_mean=s)`` for non-negative real values
        (attributes measured on a scale; :class:`~sklearn_pltf.CompoundPoisson`).
    method : {"vb", "em", "gibbs", "sada"}, default="vb"
        Variational Bayes (posterior means and the evidence bound), EM
        (the posterior mode; needs ``prior_shape >= 1``), or a sampler of
        the posterior: block Gibbs or SADA (as for :class:`~sklearn_pltf.PLTF`;
        a shared factor is drawn from every tensor's counts), whose
        evidence is Chib's estimate (``evidence``). The samplers take
        numeric priors, every tensor weight 1 and no ``tied_factors``.
    evidence : {"auto", "vb", "chib"} or None, default="auto"
        What ``log_evidence_`` holds: the variational bound (``"vb"``, with
        VB) or Chib's estimate from the chains (``"chib"``, with Gibbs or
        SADA: a clamped run per factor element, for small tensors; user
        guide). ``"auto"`` picks the one of the method; None computes
        none (EM has none).
    prior_shape, prior_rate : float, default=1.0
        The Gamma prior of every factor element. Learned by the evidence
        with VB, as for :class:`~sklearn_pltf.PLTF`: ``prior_rate="auto"``
        (a rate per factor), ``prior_rate="hierarchical"`` (a rate per
        entity of every tensor: each value of an observed index, under a
        Gamma hyperprior), ``prior_shape="auto"`` (a shape per factor).
    ard : bool or "factor", default=False
        Automatic relevance determination over every latent index (VB): a
        relevance per component, shared by every factor and tensor that
        carries it, so one fit at a generous ``n_components`` finds how many
        components the tensors need together (``relevance_``,
        ``effective_rank_``). With ``tied_factors``, a relevance per entity
        cluster, as in :class:`~sklearn_pltf.BayesianRESCAL`: it sets the rate
        of A's column, of the core's row and column, and of every other
        tensor's factor that carries the cluster. ``"factor"``: a relevance
        per component and factor (group-sparse ARD; Klami, Bouchard &
        Tripathi, ICLR 2014), so a component can be switched off in one
        tensor's own factors and kept in another's, which lets it be
        private to one tensor (``relevance_``: ``{factor: array}``;
        :meth:`components_by_tensor`, without ``tied_factors`` and
        hierarchical rates, reads which is which). Each factor must then
        carry at most one latent index (a core's own relevances over two
        would trade scale); with ``tied_factors`` the core's two cluster
        indices are one.
    max_iter : int, default=1000
        VB and EM: iterations per restart (an iteration is a SQUAREM cycle
        of three sweeps, or one sweep with ``acceleration=None``).
    tol : float, default=0.1
        Stop when the bound's estimated distance to its limit is below
        ``tol`` nats (as for :class:`~sklearn_pltf.PLTF`).
    acceleration : {"squarem", "anderson"} or None, default="squarem"
        SQUAREM or Anderson acceleration of the sweeps, or plain coordinate
        ascent (as for :class:`~sklearn_pltf.PLTF`).
    n_init : int, default=1
        Restarts from random starts; the highest final bound is kept. For
        the samplers: independent chains, pooled after aligning their labels.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        1: each restart's start and end; 2: also every 10th iteration's objective.
    tied_factors : dict or None, default=None
        ``{1: 0}`` (positions or index strings of the first model's factors,
        checked as :class:`~sklearn_pltf.PLTF`'s: ``{"jb": "ia"}`` is the
        same) with the first model the RESCAL structure
        ``"ia,jb,abk->ijk"`` (any letters, in that layout): its two entity
        factors are one factor A, as in :class:`~sklearn_pltf.BayesianRESCAL`,
        and the other tensors share A by its index string, e.g.
        ``models=("ia,jb,abk->ijk", "ia,af->if")`` for relations among
        people and the people's attributes. Each row of A is then updated
        from its relations and its attributes (RESCAL's row sweep with the
        other tensors' terms added), VB's first restart starts around EM's
        posterior mode, and the diagonal x(i, i, k) is not modelled.
    n_jobs : int or None, default=None
        The samplers' chains run in parallel (joblib).
    n_draws, n_warmup : int or "auto", default="auto"
        The samplers' kept sweeps per chain and warm-up sweeps, as for
        :class:`~sklearn_pltf.PLTF` (``"auto"``: the warm-up grows until the
        chains mix, and each of Chib's clamped runs until its ordinates are
        precise).
    thin : int, default=1
        Keep every ``thin``-th sweep of a chain.
    keep_draws : bool, default=True
        Keep the samplers' draws (``draws_``; predictions then average over
        them).
    tensor_weights : sequence of float or None, default=None
        A positive weight per tensor (None: all 1): tensor t's likelihood is
        raised to the power w_t, so a shared factor weighs its messages by
        them (e.g. to keep a large side tensor from swamping the target).
        With any weight other than 1 the bound is that of this tempered
        model, which is not a probability of the data: ``log_evidence_`` is
        then not set, and ``score`` returns the weighted bound, comparable
        only between fits with the same weights. With ``tied_factors`` the
        first tensor's weight must be 1.

    Attributes
    ----------
    models_ : tuple of Model
        The bound model of each tensor.
    factor_indices_ : tuple of str
        The index string of every distinct factor, in order of first
        appearance across ``models``.
    shared_factors_ : tuple of str
        Those held by more than one model.
    factors_ : tuple of ndarray
        Posterior means (EM: the mode), in the order of ``factor_indices_``
        (with ``tied_factors``, A at both of its positions).
    log_evidence_ : float
        The converged variational bound on log p(all tensors) (VB, every
        tensor weight 1), or Chib's estimate of it (Gibbs, SADA).
    log_evidence_error_ : float
        Chib's estimate's Monte Carlo standard error.
    draws_, log_likelihoods_, rhat_, n_warmup_
        The samplers' draws (in the order of ``factor_indices_``), traces,
        split R-hat and warm-up, as for :class:`~sklearn_pltf.PLTF`.
    prior_rate_, prior_shape_, relevance_, effective_rank_
        With learned priors, as for :class:`~sklearn_pltf.PLTF` (in the order
        of ``factor_indices_``); with ``ard="factor"``, ``relevance_`` is
        ``{factor index string: array}`` (``{(index, factor): array}`` where
        the relevances span several latent indices).
    lower_bound_, lower_bounds_, n_iter_, converged_
        The final objective, its trace, the sweeps run and whether the
        stopping rule was met, for the best restart (VB and EM; the
        samplers set ``n_iter_``, their sweeps per chain).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf import CoupledPLTF
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.gamma(1.0, 1.0, (30, 2)), rng.gamma(1.0, 1.0, (20, 2))
    >>> F = rng.gamma(1.0, 1.0, (2, 6))
    >>> X, Y = rng.poisson(A @ B.T), rng.poisson(A @ F)
    >>> est = CoupledPLTF(("ir,jr->ij", "ir,rf->if"), n_components=2, random_state=0).fit([X, Y])
    >>> est.shared_factors_
    ('ir',)
    """

    _parameter_constraints: dict = {
        "models": ["array-like"],
        "n_components": [Interval(Integral, 1, None, closed="left"), dict],
        "likelihood": [StrOptions(set(LIKELIHOODS)), Likelihood, list, tuple],
        "method": [StrOptions(FamilyMethods("coupled"))],
        "evidence": [StrOptions({"auto", "vb", "chib"}), None],
        "prior_shape": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "prior_rate": [Interval(Real, 0, None, closed="neither"),
                       StrOptions({"auto", "hierarchical"})],
        "ard": ["boolean", StrOptions({"factor"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "acceleration": [StrOptions(set(ACCELERATIONS)), None],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "tied_factors": [dict, None],
        "n_jobs": [Integral, None],
        "n_draws": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_warmup": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "keep_draws": ["boolean"],
        "tensor_weights": ["array-like", None],
    }

    def __init__(self, models, n_components=2, *, likelihood="poisson", method="vb",
                 evidence="auto", prior_shape=1.0, prior_rate=1.0, ard=False, max_iter=1000,
                 tol=0.1, acceleration="squarem", n_init=1, random_state=None, verbose=0,
                 n_jobs=None, n_draws="auto", n_warmup="auto", thin=1, keep_draws=True,
                 tied_factors=None, tensor_weights=None):
        self.models = models
        self.n_components = n_components
        self.tied_factors = tied_factors
        self.tensor_weights = tensor_weights
        self.likelihood = likelihood
        self.method = method
        self.evidence = evidence
        self.n_jobs = n_jobs
        self.n_draws = n_draws
        self.n_warmup = n_warmup
        self.thin = thin
        self.keep_draws = keep_draws
        self.prior_shape = prior_shape
        self.prior_rate = prior_rate
        self.ard = ard
        self.max_iter = max_iter
        self.tol = tol
        self.acceleration = acceleration
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose

    def _validate_params(self):
        """scikit-learn's check of ``_parameter_constraints``, then the
        package's (:func:`._validation.check_parameters`), as every other
        estimator's base runs them."""
        super()._validate_params()
        check_parameters(self)

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    @restore_on_failure
    def fit(self, X, y=None, mask=None):
        """Fit every factor to all the tensors at once.

        Parameters
        ----------
        X : sequence of array-like
            One tensor per model string, in the same order: dense NumPy (NaN
            marks a missing entry), pydata ``sparse`` or ``scipy.sparse``.
        y : None
            Ignored.
        mask : sequence of (array-like of bool or None), default=None
            Per tensor, True where an entry is observed (None: all).

        Returns
        -------
        self : object
        """
        strings, datas, likelihoods = self._observed(X, mask)
        models = bind_models(strings, [d.shape for d in datas], self.n_components)
        model = CoupledModel.from_models(models)
        settings = fit_settings(self.get_params(deep=False))
        learning = self._rate_learning(model, settings)
        method = METHODS[settings.method]
        evidence = choose_evidence(settings.method, settings.evidence, "coupled")
        if method.mode and self.prior_shape < 1:
            raise ValueError("method='em' needs prior_shape >= 1 (the mode is then finite).")
        priors = gamma_priors(model, *given_priors(settings))
        weights = self._weights(len(models))
        generator = as_generator(self.random_state)
        if method.sampler:
            state, attributes = self._fit_sampler(settings, model, datas, likelihoods, priors,
                                                  weights, generator, evidence)
        else:
            state, priors, attributes = self._fit_optimizer(
                settings, models, model, datas, likelihoods, priors, weights, learning,
                generator, evidence)
        fingerprints = tuple(d.fingerprint for d in datas)
        set_fitted(self, {
            **attributes, "_priors": priors, "models_": tuple(models), "_coupled": model,
            "_likelihoods": tuple(likelihoods), "factor_indices_": model.factors,
            "shared_factors_": tuple(model.factors[a] for a in model.sharing()),
            "factors_": tuple(np.array(m) for m in state.mean), "_state": state,
            "_fingerprints": fingerprints,
            "_unmasked_fingerprints": unmasked_fingerprint(  # score(X) without the masks
                fingerprints, mask,
                lambda: tuple(d.fingerprint for d in self._observed(X, None)[1])),
            # Seeds predict_entries' draws: its own stream, spawned last.
            "_predictive_seed": int(generator.spawn(1)[0].integers(2**63))},
            stale=_METHOD_ATTRIBUTES + LEARNED_ATTRIBUTES)  # a refit may set others
        return self

    def _fit_optimizer(self, settings, models, model, datas, likelihoods, priors, weights,
                       learning, generator, evidence):
        """VB or EM restarts and the learned priors held
        (:func:`~._fitting.optimize_and_hold`), and the bound as the
        evidence: returns ``(state, priors, fitted attributes)``."""
        if self.tied_factors:
            kernels = rescal_kernels(learning, rescal_coupled.KERNELS)
            kernel = kernels[settings.method]

            def contractor_for(coupled):
                return self._tied_data(coupled.models, coupled, datas, likelihoods, weights)

            start = functools.partial(rescal.restart_start, kernels,
                                      rescal_coupled.vb_state_around, settings.method,
                                      rescal.mode_first, settings.loop, priors,
                                      _tied_layout(models, self.tied_factors).canonical.sizes["a"])
            # A's two positions take the same clusters.
            same_clusters = {model.factors[0][1]: model.factors[1][1]}
        else:
            kernel = kernel_for(settings.method, learning)

            def contractor_for(coupled):
                return CoupledContractor(coupled, datas, likelihoods, weights)

            start = functools.partial(optimizer_start, kernel, model, priors, {}, None)  # at random
            same_clusters = None
        state, objectives, converged, held, contractor = optimize_and_hold(
            settings, kernel, model, priors, start, generator.spawn(settings.n_init), learning,
            contractor_for, tied=same_clusters)
        bound, attributes = float(objectives[-1]), {}
        if held is not None:
            shown = held.priors
            if self.tied_factors:  # the second entity factor is A: A's prior shown there too
                shown = with_entity_prior_at_both_positions(shown)
            attributes = learned_attributes(learning, held.relevance, shown)
            state, bound, priors = held.state, float(held.bound), held.priors
        attributes.update(optimizer_attributes(objectives, converged, bound))
        if evidence == "vb" and all(w == 1.0 for w in weights):
            modelled = list(datas)
            if self.tied_factors:  # the diagonal of the relations is not modelled
                modelled[0] = contractor.relational.observed
            attributes["log_evidence_"] = _checked_evidence(bound, modelled, likelihoods,
                                                            advice=BOUND_ADVICE)
        return state, priors, attributes

    def _fit_sampler(self, settings, model, datas, likelihoods, priors, weights, generator,
                     evidence):
        """Gibbs or SADA chains on every tensor at once, and Chib's evidence
        (:func:`~._sampled.fit_sampler`); returns the pooled posterior state
        and the fitted attributes."""
        if self.tied_factors:
            raise ValueError(f"method={settings.method!r} in CoupledPLTF is built without "
                             "tied_factors; use method='vb' or 'em' there.")
        if any(w != 1.0 for w in weights):
            raise ValueError(f"method={settings.method!r} samples the model itself; "
                             "tensor_weights other than 1 temper it, which only VB and EM fit.")
        return fit_sampler(settings, _CoupledChains(tuple(likelihoods)), CoupledData(datas),
                           model, priors, {}, generator, evidence)

    def _rate_learning(self, model, settings):
        """What the fit learns of the priors
        (:class:`~sklearn_pltf.inference._hyperparameters.RateLearning`), or None."""
        per_factor, hierarchical, learn_shape = learned_kinds(settings)
        if not (self.ard or per_factor or hierarchical or learn_shape):
            return None
        require(settings.method, "coupled", "learns_priors",
                "Learned prior rates, shapes and relevances (prior_rate='auto' or "
                "'hierarchical', prior_shape='auto', ard=True or 'factor') need")
        if self.ard and not model.latent:
            raise ValueError(f"ard={self.ard!r} asks for a relevance per component, and "
                             f"{model.string!r} has no latent index to give one to.")
        if self.tied_factors:
            _tied_layout(model.models, self.tied_factors)
            return tied_rate_learning(model, bool(self.ard), per_factor, hierarchical,
                                      learn_shape, by_factor=self.ard == "factor")
        return rate_learning(model, model.free, model.latent if self.ard else (), per_factor,
                             hierarchical, learn_shape, by_factor=self.ard == "factor")

    def _model_strings(self):
        if isinstance(self.models, str):
            raise ValueError("models is a sequence of model strings, one per tensor; for one "
                             "tensor use PLTF.")
        if isinstance(self.models, (Mapping, Set)):
            raise ValueError("models must be a sequence (a list or tuple) of model strings, in "
                             "the order of the tensors given to fit; got a "
                             f"{type(self.models).__name__}, which has no such order.")
        strings = list(self.models)
        if not strings:
            raise ValueError("models needs at least one model string.")
        return strings

    def _observed(self, X, mask):
        """The model strings, and each tensor checked, with its likelihood."""
        strings = self._model_strings()
        if isinstance(X, np.ndarray):  # not one tensor, even of one more axis
            raise ValueError(f"X must be a sequence (a list or tuple) of {len(strings)} tensors, "
                             "one per model string of models, in the same order; got one "
                             "array.")
        X = _one_per_tensor(X, "X", len(strings), "tensors")
        if any(input_namespace(tensor) is not None for tensor in X):
            raise TypeError(array_api_refusal("CoupledPLTF"))
        if any(is_dask_array(tensor) for tensor in X):
            raise ValueError("CoupledPLTF fits tensors held in memory; pass each Dask array "
                             "computed (X.compute()).")
        masks = [None] * len(strings) if mask is None else _one_per_tensor(
            mask, "mask", len(strings), "masks (a list or tuple; None where a tensor has none)",
            or_none=True, sequence="a sequence")
        likelihoods = ([self.likelihood] * len(strings)
                       if isinstance(self.likelihood, (str, Likelihood))
                       else _one_per_tensor(self.likelihood, "likelihood given per tensor",
                                            len(strings), "likelihoods"))
        datas = []
        for tensor, tensor_mask, name in zip(X, masks, likelihoods):
            data = as_observed_tensor(tensor, mask=tensor_mask)
            get_likelihood(name).check(data)
            datas.append(data)
        return strings, datas, likelihoods

    def _weights(self, n_tensors):
        """The tensors' weights, checked: one positive finite number each (a
        real number, not a bool or a string), in the order of ``models``."""
        if self.tensor_weights is None:
            return (1.0,) * n_tensors
        what = "positive numbers"
        weights = _one_per_tensor(self.tensor_weights, "tensor_weights", n_tensors, what,
                                  or_none=True)
        for t, weight in enumerate(weights):
            if isinstance(weight, (bool, np.bool_)) or not isinstance(weight, Real):
                raise TypeError(f"tensor_weights must be None or {n_tensors} {what}, one per "
                                f"tensor; weight {t} is {weight!r}, not a real number.")
            if not (np.isfinite(weight) and weight > 0):
                raise ValueError(f"tensor_weights must be None or {n_tensors} {what} (finite), "
                                 f"one per tensor; weight {t} is {weight!r}.")
        return tuple(float(w) for w in weights)

    def _tied_data(self, models, model, datas, likelihoods, weights):
        """The first tensor's RESCAL structure with its tie, and the other
        tensors as its side (:mod:`sklearn_pltf.inference.relational.coupled`)."""
        if weights[0] != 1.0:
            raise ValueError("With tied_factors the relations' weight (the first of "
                             "tensor_weights) must be 1; weigh the other tensors instead.")
        structure = _tied_layout(models, self.tied_factors)
        side_model = CoupledModel.from_models(models[1:])
        side_positions = tuple(model.factors.index(f) for f in side_model.factors)
        entity = tuple(s for s, j in enumerate(side_positions) if j in (0, 1))
        for t, positions in enumerate(side_model.positions, start=1):
            if sum(s in entity for s in positions) > 1:
                raise ValueError(
                    f"Model {t} ({models[t].string!r}) holds the tied entity factor twice; a "
                    "tensor beside the relations may hold it once.")
        return rescal_coupled.CoupledRelationalData(
            relational_data(datas[0], likelihoods[0]),
            CoupledContractor(side_model, datas[1:], likelihoods[1:], weights[1:]),
            side_positions, entity,
            structure.canonical.sizes["a"])

    # ---------------------------------------------------- predict and score
    def predict_entries(self, indices, tensor=0):
        """Posterior predictive mean at entries of one tensor (link
        prediction): E[X̂] for counts, P(x = 1) for binary data (as
        :meth:`sklearn_pltf.PLTF.predict_entries`).

        Parameters
        ----------
        indices : array-like of int, shape (n_entries, n_dims)
            Coordinates in tensor ``tensor``.
        tensor : int, default=0
            Which tensor, by its position in ``models``.

        Returns
        -------
        prediction : ndarray of shape (n_entries,)
        """
        check_is_fitted(self)
        if not isinstance(tensor, Integral) or not 0 <= tensor < len(self.models_):
            raise ValueError(f"tensor must be a position 0..{len(self.models_) - 1}, got "
                             f"{tensor!r}.")
        model = self.models_[tensor]
        coords = check_entry_indices(indices, model.observed_shape)
        positions = self._coupled.positions[tensor]
        local = type(self._state)(*(None if field is None else tuple(field[a] for a in positions)
                                    for field in self._state))
        draws = getattr(self, "draws_", None)
        return predictive_at_entries(
            model, local, coords.T, self._likelihoods[tensor], method=self.method,
            draws=None if draws is None else tuple(draws[a] for a in positions),
            seed=self._predictive_seed)

    def components_by_tensor(self, X, mask=None):
        """Which components each tensor needs, by the bound: for each tensor
        and each value of a latent index, whether fixing that component at
        zero in the factors the tensor alone holds lowers the bound by more
        than ``tol`` nats. A component every tensor that carries it needs is
        shared; one that a single tensor needs is private to it (one bound
        per tensor and component).

        Parameters
        ----------
        X, mask
            The tensors the model was fitted to (and their masks), as for
            :meth:`score`.

        Returns
        -------
        needed : ndarray of bool of shape (n_tensors, size), or dict
            One row per tensor (False for a tensor without the index); a
            dict ``{index: array}`` where there are several latent indices.
        """
        check_is_fitted(self)
        if not isinstance(self._state, VBState) or self.tied_factors:
            raise ValueError("components_by_tensor reads the VB bound: it needs method='vb' "
                             "and no tied_factors.")
        if self.prior_rate == "hierarchical":
            raise ValueError("components_by_tensor is not built for hierarchical rates (a "
                             "component's prior terms do not vanish with it there).")
        _, datas, likelihoods = self._observed(X, mask)
        self._check_training_tensors(datas, mask)
        contractor = CoupledContractor(self._coupled, datas, likelihoods,
                                       self._weights(len(datas)))
        found = components_by_tensor(
            self._coupled, self._state, self._priors,
            lambda trial: vb.objective(trial, contractor, self._priors), self.tol)
        return next(iter(found.values())) if len(found) == 1 else found

    def _check_training_tensors(self, datas, mask):
        """Raise unless ``datas`` are the tensors the model was fitted to."""
        given = tuple(d.fingerprint for d in datas)
        if mask is not None and all(m is None for m in mask):
            mask = None  # a mask per tensor, none given
        if given != self._fingerprints and not is_training_data_without_its_mask(
                getattr(self, "_unmasked_fingerprints", None), self._fingerprints, given, mask):
            raise ValueError("CoupledPLTF scores the tensors it was fitted to only; refit to "
                             "score others.")

    def score(self, X, y=None, mask=None):
        """The log evidence of the training tensors (``log_evidence_``; EM:
        its log joint at the mode; with ``tensor_weights`` other than 1, the
        weighted bound). New data have no score here: a coupled model is
        scored on the tensors it was fitted to, given with their masks or
        without any (``GridSearchCV`` passes ``mask`` to ``fit`` only unless
        metadata routing sends it to ``score``: ``set_score_request(mask=True)``)."""
        check_is_fitted(self)
        _, datas, _ = self._observed(X, mask)
        self._check_training_tensors(datas, mask)
        if not hasattr(self, "log_evidence_") and not hasattr(self, "lower_bound_"):
            raise ValueError(f"method={self.method!r} fitted with evidence=None has no evidence "
                             "to score; fit with evidence='auto'.")
        return float(getattr(self, "log_evidence_", getattr(self, "lower_bound_", None)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        return tags
