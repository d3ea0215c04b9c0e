"""The shared base of the Poisson–Gamma PLTF estimators.

The base class owns everything but the model: input validation, one
:class:`numpy.random.Generator` per fit spawned into the restarts (or chains),
the fit problem (bound model, priors, what is learned) handed to the
optimiser driver (:mod:`._fitting`) or to the samplers (:mod:`._sampled`),
fold-in of new samples, ``transform``, ``inverse_transform``, ``score`` and
entry predictions. A subclass says which model string, latent sizes and
fixed factors it fits (:meth:`_model_spec`), and which factors are tied
(:meth:`_tied_positions`; :class:`~._tied.TiedFit` then runs the steps a
tie changes).
"""
from __future__ import annotations

import functools
from abc import abstractmethod
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine._array_api import (array_api_refusal, as_namespace, device_of, like, moveaxis,
                          namespace_of, to_numpy)
from ..engine._contract import full_xhat, make_contractor
from ..engine._likelihood import LIKELIHOODS, CompoundPoisson, get_likelihood
from ..evidence._ais import ais_log_evidence, has_posterior_start, posterior_start
from ..evidence._checks import check_poisson_log_evidence
from ..inference import em, vb
from ..inference._fold_in import fold_in, with_factor
from ..inference._common import gamma_priors, priors_for
from ..inference.relational import rescal
from ..inference._convergence import ACCELERATIONS
from ..inference._methods import METHODS, choose_evidence, method_names
from ..inference._driver import OptimizerProblem, Settings
from ..inference._hyperparameters import LearnedRatesKernel, NewEntityRatesKernel
from ..inference._svd_start import svd_start
from ..engine.distributed import block_grid
from ..engine.model import Model
from ..inference._predictive import predictive_at_entries
from ..inference._relevance import hold_learned_rates
from ._relevance import check_learning, given_priors, learning_of, set_learned_attributes
from ._fitting import FittedModel, fit_by_optimizer, optimizer_start
from ._sampled import export_draws, fit_sampler
from ._skeleton import BaseFactorization
from ._tied import TiedFit
from ._validation import (check_entry_indices, check_fixed_factors_reach_the_data,
                          given_start, validate_tensor)

__all__ = ["BasePoissonPLTF", "cp_reconstruction", "with_n_samples"]

_KERNELS = {"vb": vb, "em": em}

#: A fold-in stops each sample once a step changes its factor by less than
#: this (or ``tol``, if smaller) relative to its largest entry.
FOLD_IN_TOL = 1e-6


def with_n_samples(model, n_samples):
    """The bound ``model`` with its sample axis (axis 0) of size ``n_samples``."""
    return replace(model, sizes={**model.sizes, model.output[0]: n_samples})


def cp_reconstruction(estimator, W):
    """Dense X̂ of a fitted CP estimator (``model_``, ``factors_``) from
    sample-mode factor values ``W`` (n_samples, n_components), the other
    factors at their fitted values: its ``inverse_transform``."""
    check_is_fitted(estimator)
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[1] != estimator.n_components:
        raise ValueError(
            f"Expected an array of shape (n_samples, {estimator.n_components}), got {W.shape}."
        )
    return full_xhat(with_n_samples(estimator.model_, W.shape[0]), [W, *estimator.factors_[1:]])


def _kernel(method, learning):
    """VB or EM, with its rates learned where ``learning`` (a
    :class:`~sklearn_pltf.inference._hyperparameters.RateLearning`) says."""
    return _KERNELS[method] if learning is None else LearnedRatesKernel(_KERNELS[method], learning)


class BasePoissonPLTF(BaseFactorization):
    """Base class of the Poisson–Gamma PLTF estimators (not for direct use)."""

    _stale_attributes = ("prior_rate_", "prior_shape_", "relevance_", "effective_rank_",
                         "log_evidence_", "lower_bound_", "lower_bounds_", "converged_", "draws_",
                         "log_likelihoods_", "log_evidence_error_", "rhat_", "n_batch_iter_")

    _parameter_constraints: dict = {
        "likelihood": [StrOptions(set(LIKELIHOODS)), CompoundPoisson],
        "method": [StrOptions(set(method_names("poisson")))],
        "evidence": [StrOptions({"auto", "vb", "chib", "sti", "ais"}), None],
        "prior_shape": [Interval(Real, 0, None, closed="neither"), "array-like", dict,
                        StrOptions({"auto"})],
        "prior_rate": [Interval(Real, 0, None, closed="neither"), "array-like", dict,
                       StrOptions({"auto", "hierarchical"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "acceleration": [StrOptions(set(ACCELERATIONS)), None],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
        "verbose_interval": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "n_draws": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_warmup": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "keep_draws": ["boolean"],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "n_blocks": [Interval(Integral, 1, None, closed="left"), None],
        "n_temperatures": [Interval(Integral, 2, None, closed="left")],
        "steps_per_temperature": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "step_size": [Interval(Real, 0, None, closed="neither")],
        "ard": ["boolean"],
        "prune": ["boolean"],
        "init": [StrOptions({"random", "svd"}), dict, list, tuple],
    }

    def __init__(self, n_components, *, likelihood, method, evidence, prior_shape, prior_rate,
                 ard, prune, init, max_iter, tol, acceleration, n_init, random_state, verbose,
                 verbose_interval, n_jobs, n_draws, n_warmup, thin, keep_draws, batch_size,
                 n_temperatures, steps_per_temperature, step_size):
        # The parameters every Poisson–Gamma estimator has, stored once; each
        # subclass lists them in its own signature (scikit-learn reads the
        # parameters from it) and passes them here, adding its own.
        self.n_components = n_components
        self.likelihood = likelihood
        self.method = method
        self.evidence = evidence
        self.prior_shape = prior_shape
        self.prior_rate = prior_rate
        self.ard = ard
        self.prune = prune
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.acceleration = acceleration
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.n_jobs = n_jobs
        self.n_draws = n_draws
        self.n_warmup = n_warmup
        self.thin = thin
        self.keep_draws = keep_draws
        self.batch_size = batch_size
        self.n_temperatures = n_temperatures
        self.steps_per_temperature = steps_per_temperature
        self.step_size = step_size

    # ------------------------------------------------------------ subclass API
    @abstractmethod
    def _model_spec(self, ndim):
        """Return ``(model string, latent sizes, {position: fixed array})`` for
        data with ``ndim`` dimensions."""

    def _tied_positions(self, model):
        """``{position: source position}`` of ``model``'s tied factors (a
        factor that is another: :class:`~._tied.TiedFit` fits them)."""
        return {}

    def _tied_start(self, restart):
        """Where a tied model's VB restart ``restart`` starts: ``"mode"``
        (around EM's posterior mode) for the first, ``"random"`` after."""
        return rescal.mode_first(restart)

    def _tie(self, model):
        """The :class:`~._tied.TiedFit` of ``model``, or None without a tie."""
        tied = self._tied_positions(model)
        return TiedFit(self, model, tied) if tied else None

    def _has_tied_factor(self):
        return bool(self._tied_positions(Model.parse(self._model_spec(3)[0])))

    @property
    def _tied_factors(self):
        """The fitted model's tied factors (drawn once for both in the
        Bernoulli–Poisson predictive)."""
        return self._tied_positions(self.model_) if hasattr(self, "model_") else {}

    def _gamma_priors(self, model):
        """The Gamma priors of ``model``'s free factors from ``prior_shape`` and
        ``prior_rate`` (``"auto"``: a rate of 1 until learned); a dict of
        priors may leave out a tied position (its source's entry serves it)."""
        tied = self._tied_positions(model)

        def filled(value):
            if not isinstance(value, dict):
                return value
            return {**{t: value[s] for t, s in tied.items() if s in value}, **value}

        return gamma_priors(model, *(filled(value) for value in given_priors(self)))

    def _ard_indices(self, model):
        """The latent indices of ``model`` with a relevance per value (``ard``)."""
        return ""

    def _rate_learning_for(self, model):
        """What rates the fit learns (None: none), checked against ``method``."""
        learning = learning_of(self, model, self._ard_indices(model))
        check_learning(self, learning)
        return learning

    def _array_api_refusal(self):
        """None where VB or EM fits array-API input where it lives (the dense
        engine, :mod:`sklearn_pltf.engine._array_contract`); else what refuses it."""
        asked = []
        if not METHODS[self.method].array_api:
            asked.append(f"method={self.method!r}")
        if self.evidence not in ("auto", *METHODS[self.method].evidence, None):
            asked.append(f"evidence={self.evidence!r}")
        if not isinstance(self.likelihood, str) or self.likelihood not in ("poisson", "bernoulli"):
            asked.append("likelihood='compound_poisson'")
        if isinstance(self.prior_rate, str) or isinstance(self.prior_shape, str) or self.ard:
            asked.append("learned prior rates or shapes (prior_rate='auto' or "
                         "'hierarchical', prior_shape='auto', or ard)")
        if isinstance(self.init, str) and self.init == "svd":
            asked.append("init='svd'")
        if self._has_tied_factor():  # its updates run on RESCAL's NumPy engine
            asked.append("a tied factor")
        if not asked:
            return None
        return array_api_refusal(f"{type(self).__name__} with {', '.join(asked)}")

    def _warm_start_requested(self):
        """Whether the parameters ask the fit to start from the last one's
        factors (``warm_start``, where a subclass offers it)."""
        return False

    def _min_ndim(self):
        """Fewest data dimensions the estimator accepts (2: a sample axis and more)."""
        return 2

    def _observed(self, X, mask, reset):
        """Validate ``X`` (and ``mask``) into an :class:`ObservedTensor`, or a
        Dask array into a :class:`~sklearn_pltf.engine.distributed.DistributedTensor`
        (:func:`validate_tensor`)."""
        return validate_tensor(self, X, mask, reset=reset, min_ndim=self._min_ndim(),
                               distributed=self._fits_distributed_data,
                               chunks=self._distributed_chunks)

    @property
    def _fits_distributed_data(self):
        """Whether a Dask array is fitted on its cluster: VB and EM run over the
        blocks, and SGLD over parts of parallel blocks (``n_blocks``); Gibbs,
        SADA and the SVD start need the data in one process."""
        if (isinstance(self.init, str) and self.init == "svd") or self._has_tied_factor():
            return False  # the SVD, and a tie's row updates, pair entries across blocks
        how, n_blocks = METHODS[self.method].distributed, self._sgld_settings()["n_blocks"]
        return how == "whole" or (how == "blocks" and n_blocks is not None)

    @property
    def _distributed_chunks(self):
        """For SGLD, the chunking of a Dask array into its parallel blocks."""
        n_blocks = self._sgld_settings()["n_blocks"]
        if METHODS[self.method].distributed != "blocks" or n_blocks is None:
            return None
        return functools.partial(block_grid, n_blocks=n_blocks)

    # ------------------------------------------------------------------- fit
    def _fit_data(self, data, rng):
        """Fit the factors to validated ``data``: the restarts or chains of
        ``method``, the evidence, and the state transform and score read."""
        get_likelihood(self.likelihood).check(data)
        spec, sizes, fixed = self._model_spec(len(data.shape))
        model = Model.parse(spec).bind(data.shape, sizes, {a: f.shape for a, f in fixed.items()})
        tie = self._tie(model)
        method = METHODS[self.method]
        # AIS from the prior is far too short for real data: where no start
        # can be fitted to the posterior, "auto" passes it over (Chib then).
        free = tuple(a for a in model.free if a not in fixed)
        evidence = choose_evidence(
            self.method, self.evidence, "poisson" if tie is None else "tied",
            sparse=data.is_sparse,
            passed_over=() if has_posterior_start(model, free, tuple(fixed)) else ("ais",))
        if data.is_array_api:  # every factor where the data live
            fixed = {a: like(f, data.dense) for a, f in fixed.items()}
        check_fixed_factors_reach_the_data(model, data, fixed)
        priors = priors_for(self._gamma_priors(model), data)
        learning = self._rate_learning_for(model) if tie is None else tie.rate_learning(model)
        if method.mode:  # which needs shapes of at least 1
            em.check_priors(priors)
        first_start = self._first_start(model, data, fixed)
        if method.sampler:
            state = fit_sampler(self, data, model, priors, fixed, rng, evidence, tie)
            fitted, folded_in = FittedModel(model, priors, None, _sample_start(model, state)), False
        else:
            fit_optimizer = self._fit_optimizer if tie is None else tie.fit_optimizer
            state, fitted, folded_in = fit_optimizer(data, model, priors, fixed, rng, evidence,
                                                     first_start, learning)
            model, priors = fitted.model, fitted.priors
        if evidence == "ais":
            # The path starts from a Gamma fit to the fitted posterior marginals
            # (EM has none: from the prior). Its own stream, spawned after the
            # method's: the fit is the same with or without it.
            start = (None if method.mode
                     else posterior_start(model, state.mean, state.geometric, held=tuple(fixed)))
            estimate = ais_log_evidence(rng.spawn(1)[0], model, data, priors, fixed, start=start,
                                        verbose=self.verbose, likelihood=self.likelihood)
            self.log_evidence_ = check_poisson_log_evidence(
                estimate.log_evidence, data, standard_error=estimate.standard_error,
                advice=("evidence='ais' runs sklearn_pltf.evidence.ais_log_evidence at its "
                        "defaults; call it directly with more runs or temperatures."),
                likelihood=self.likelihood)
            self.log_evidence_error_ = estimate.standard_error
        self._state, self._folded_in_fit = state, folded_in
        self.model_, self._fitted_priors, self._rate_learning, self._sample_start = fitted
        # Seeds predict_entries' draws: its own stream, spawned last.
        self._predictive_seed = int(rng.spawn(1)[0].integers(2**63))
        self.factors_ = tuple(_copy(m) for m in state.mean)

    def _first_start(self, model, data, fixed):
        """Where the first restart starts, ``{position: array}``, or None
        (at random): the previous fit's factors with ``warm_start`` (same
        model and sizes), else ``init``: an SVD-based start or given factors."""
        init = self.init
        warm = self._warm_start_requested() and hasattr(self, "model_") and self.model_ == model
        if not warm and (isinstance(init, str) and init == "random"):
            return None
        if not METHODS[self.method].takes_start:
            raise ValueError(
                f"init and warm_start set where VB and EM start; method={self.method!r} "
                "starts its chains at random and forgets the start in the warm-up: leave "
                "init='random' and warm_start=False.")
        if warm:
            return {a: np.array(to_numpy(self.factors_[a])) for a in model.free}
        if isinstance(init, str):  # "svd"
            return svd_start(model, data, model.free, fixed)
        return given_start(model, init)

    def _fit_optimizer(self, data, model, priors, fixed, rng, evidence, first_start, learning):
        """VB or EM: restarts to convergence (the first from ``first_start``,
        ``{position: array}``, if given), the best kept, the learned rates
        held, the final fold-in. Returns the state, the :class:`FittedModel`
        and whether the fit ended with the fold-in ``transform`` would do."""
        given = {a: (f, f) for a, f in fixed.items()}
        kernel = _kernel(self.method, learning)
        # One contractor serves every restart run here and the final fold-in;
        # restarts in other processes build their own.
        problem = OptimizerProblem(
            kernel, make_contractor(model, data, self.likelihood), priors,
            start=functools.partial(optimizer_start, kernel, model, priors, given, first_start),
            rebuild=functools.partial(make_contractor, model, data, self.likelihood))
        contractor = problem.contractor
        # Distributed data: the restarts run one after another, each over the
        # whole cluster, on the one set of blocks.
        # Array-API data: one after another on the data's device.
        in_process = data.is_distributed or data.is_array_api
        state, objectives, converged, _ = fit_by_optimizer(
            problem, rng.spawn(self.n_init), self._optimizer_settings(),
            n_jobs=1 if in_process else effective_n_jobs(self.n_jobs))
        final_objective = objectives[-1]
        if learning is not None:
            model, state, priors, contractor, final_objective = self._hold_learned_rates(
                data, model, state, priors, contractor, final_objective, learning)
        fitted = FittedModel(model, priors, learning, _sample_start(model, state))
        # With a rate per sample the fit's own sample factor and its q(β)
        # stay (a fold-in infers a rate per sample at the held hyper-rate).
        folded_in = fitted.sample_start is not None and not (
            priors.new_entity_rate is not None
            and priors.new_entity_rate[model.sample_factor()] is not None)
        if folded_in:
            # Final fold-in: the sample-mode factor re-inferred exactly as
            # transform does, so fit_transform(X) equals fit(X).transform(X).
            alpha = model.sample_factor()
            folded, fold_contractor, _ = self._fold_in(data, state, contractor, fitted)
            state = with_factor(state, alpha, folded, lambda folded_value, _: folded_value)
            final_objective = _KERNELS[self.method].objective(state, fold_contractor, priors)
        self.n_iter_ = len(objectives)
        self.converged_ = converged
        self.lower_bounds_ = like(np.asarray(objectives), state.mean[0])
        self.lower_bound_ = final_objective
        if evidence == "vb":
            # The converged bound is the VB estimate of log p(X) (a lower bound).
            self.log_evidence_ = check_poisson_log_evidence(
                self.lower_bound_, data,
                advice="A variational bound cannot lie above log p(X): please report this.",
                likelihood=self.likelihood)
        return state, fitted, folded_in

    def _optimizer_settings(self):
        """The optimiser driver's loop settings from the parameters."""
        return Settings(self.max_iter, self.tol, self.acceleration, self.verbose,
                        self.verbose_interval)

    def _hold_learned_rates(self, data, model, state, priors, contractor, bound, learning):
        """After VB with learned rates (:func:`~sklearn_pltf.inference._relevance.hold_learned_rates`):
        the rates held at ``state`` from here on; with ARD, the relevances read
        and, with ``prune``, the unneeded components removed. Returns the
        ``(model, state, priors, contractor, bound)`` to go on with."""
        held = hold_learned_rates(
            _kernel(self.method, learning), learning, model, state, priors, self.tol,
            contractor_for=lambda small: make_contractor(small, data, self.likelihood),
            bound=bound, prune=self.prune)
        if held.model is not model:
            contractor = make_contractor(held.model, data, self.likelihood)
        set_learned_attributes(self, learning, held.relevance, held.priors, pruned=self.prune)
        return held.model, held.state, held.priors, contractor, held.bound

    def _sgld_settings(self):
        """What SGLD and STI take from the estimator's parameters."""
        return {name: getattr(self, name) for name in (
            "batch_size", "n_blocks", "n_temperatures", "steps_per_temperature", "step_size")}

    def to_inference_data(self, X=None, *, mask=None, factor_names=None):
        """The kept draws as an ArviZ ``InferenceData`` (needs the
        ``diagnostics`` extra), for R-hat, effective sample sizes, trace plots
        and, given the training data, ``az.loo`` and ``az.waic``.

        Parameters
        ----------
        X : array-like, pydata sparse or scipy.sparse, default=None
            The training data. Adds ``observed_data`` and ``log_likelihood``:
            variable ``x``, log p(x_e | Z) of every observed entry e (zeros
            included, C order; dimension ``entry``) at every draw, and
            ``constant_data.entry_index``, each entry's coordinates. Memory
            is chains x draws x observed entries.
        mask : array-like of bool, default=None
            The training mask, as given to :meth:`fit`.
        factor_names : sequence of str or dict, default=None
            A variable name per factor in model order, or ``{position: name}``
            for some. Default: the estimator's (``W`` and ``H`` for
            :class:`BayesianNMF`; ``A``, ``B``, ``C``, ... for the modes of CP
            and Tucker, ``G`` for the core; ``Z<position>_<indices>`` for
            :class:`PLTF`).

        Returns
        -------
        idata : arviz.InferenceData
            ``posterior``: each free factor's draws, ``(chain, draw, *indices)``
            with one dimension per model index (named by its letter); the
            training data's feature names are the coordinates of axis 1's
            index. Chains are aligned to a common labelling first.
            ``sample_stats.total_log_likelihood``: log p(X | Z) of each draw.

        Raises
        ------
        ValueError
            Unless the estimator was fitted by a sampler with
            ``keep_draws=True``, or when ``X`` is not the training data.
        """
        return export_draws(self, X, mask, factor_names)

    # ------------------------------------------------------------- fold-in
    def _resized_model(self, n_samples):
        """The fitted model with axis 0 of size ``n_samples``."""
        return with_n_samples(self.model_, n_samples)

    def _fitted(self):
        """The fitted estimator's :class:`FittedModel`."""
        return FittedModel(self.model_, self._fitted_priors, self._rate_learning,
                           self._sample_start)

    def _fold_in(self, data, held_state, contractor=None, fitted=None):
        """Infer the sample-mode factor of ``data``, every other factor held at
        its value in ``held_state``. Returns ``(state, contractor, priors)``: the
        contractor for ``data`` (``contractor`` if given, one already built for
        it), and priors with only that factor free (the objective of the new
        data is the kernel's objective of these three). ``fitted``: the
        :class:`FittedModel` to fold into (default: the fitted estimator's).

        Every sample starts from the fitted factor's mean over samples and is
        updated on its own (:func:`~sklearn_pltf.inference._fold_in.fold_in`),
        so its result does not depend on the batch. Under hierarchical rates
        each sample's rate is inferred with it
        (:class:`~sklearn_pltf.inference._hyperparameters.NewEntityRatesKernel`),
        and the returned priors hold the rates at the result.
        """
        if fitted is None:
            self._sample_factor()  # raises unless the model has a sample-mode factor
            fitted = self._fitted()
        model = fitted.model
        alpha = model.sample_factor()
        kernel = _KERNELS[self._fold_in_method]
        axis = model.factors[alpha].index(model.output[0])
        learning = fitted.learning
        if (self._fold_in_method == "vb" and learning is not None and learning.entity_axes
                and learning.entity_axes[alpha] == (axis,)):
            kernel = NewEntityRatesKernel(kernel, alpha, axis)
        given = {
            a: (held_state.mean[a], held_state.geometric[a])
            for a in range(model.n_factors)
            if a != alpha
        }

        def problem(sub_data, contractor=None):
            sub_model = with_n_samples(model, sub_data.shape[0])
            priors = priors_for(self._sample_priors(sub_model, alpha, fitted), sub_data)
            if contractor is None:
                contractor = make_contractor(sub_model, sub_data, self.likelihood)
            return contractor, priors

        contractor, priors = problem(data, contractor)
        means = [given.get(a, (None,))[0] for a in range(model.n_factors)]
        start = fitted.sample_start
        means[alpha] = _copy(namespace_of(start).broadcast_to(
            start, contractor.model.factor_shape(alpha)))
        state = kernel.state_from_means(means, priors, given)
        state = fold_in(kernel, state, contractor, priors, alpha, axis,
                        lambda rows: problem(data.take_samples(rows)),
                        tol=min(self.tol, FOLD_IN_TOL),
                        max_iter=self.max_iter)
        if isinstance(kernel, NewEntityRatesKernel):
            priors = kernel.priors_at(state, priors)
        return state, contractor, priors

    def _sample_priors(self, sub_model, alpha, fitted=None):
        """The prior of the sample-mode factor (at ``alpha``) of ``sub_model``,
        the fitted model with other samples: the given one, or the learned
        one (which does not vary along the samples)."""
        fitted = self._fitted() if fitted is None else fitted
        if fitted.learning is None:
            return gamma_priors(sub_model, self.prior_shape, self.prior_rate, free=(alpha,))
        model, priors = fitted.model, fitted.priors
        axis = model.factors[alpha].index(model.output[0])
        # With hierarchical rates a sample's rate is its own: the fold-in
        # starts new samples at the hyperprior's mean and infers theirs
        # (NewEntityRatesKernel).
        entity_rates = priors.new_entity_rate
        rates = priors.rate if entity_rates is None or entity_rates[alpha] is None else entity_rates
        per_sample = [np.take(np.broadcast_to(field[alpha], model.factor_shape(alpha)),
                              [0], axis=axis) for field in (priors.shape, rates)]
        return gamma_priors(sub_model, {alpha: per_sample[0]}, {alpha: per_sample[1]},
                            free=(alpha,))

    def _transform_data(self, data):
        """:meth:`transform` of validated data."""
        tie = self._tie(self.model_)
        if tie is not None:
            return tie.transform(data)
        alpha = self._sample_factor()
        self._check_sample_shape(data)
        return _sample_major(self._fold_in(data, self._state)[0].mean[alpha], self.model_, alpha)

    def _fitted_transform(self, data):
        if self._folded_in_fit:  # fit ended with this fold-in
            alpha = self._sample_factor()
            return _sample_major(_copy(self._state.mean[alpha]), self.model_, alpha)
        return self._transform_data(data)

    def transform(self, X, mask=None):
        """The posterior mean (EM: mode) of the sample-mode factor for the
        samples in ``X``, every other factor held at its posterior (fold-in),
        each sample on its own; with a tied entity factor, the entity factor
        A of the training data (the only data it takes).

        Returns
        -------
        W : ndarray of shape (n_samples, n_components)
        """
        return super().transform(X, mask)

    def inverse_transform(self, X):
        """Posterior-mean reconstruction X̂ from sample-mode factor values ``X``
        (with a tied entity factor: entity factor rows, at both entity
        positions).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_components)
            Values of the sample-mode factor, e.g. from :meth:`transform`.

        Returns
        -------
        X_hat : ndarray of shape (n_samples, ...)
            Dense reconstruction with the other factors at their posterior
            means (tied: (n_entities, n_entities[, n_relations])).
        """
        check_is_fitted(self)
        tie = self._tie(self.model_)
        if tie is not None:
            return tie.inverse_transform(X)
        alpha = self._sample_factor()
        model = self.model_
        fitted = self._state.mean[alpha]
        if isinstance(fitted, np.ndarray):
            W = np.asarray(X, dtype=np.float64)
        else:  # fitted where array-API data live: W goes there too
            W = as_namespace(X, namespace_of(fitted), device_of(fitted), fitted.dtype)
        own = model.factors[alpha]
        latent_shape = tuple(model.sizes[c] for c in own if c != model.output[0])
        if W.ndim != 2 or W.shape[1] != int(np.prod(latent_shape)):
            raise ValueError(
                f"Expected an array of shape (n_samples, {int(np.prod(latent_shape))}), got {W.shape}."
            )
        new_model = self._resized_model(W.shape[0])
        factor = moveaxis(namespace_of(W).reshape(W, (W.shape[0],) + latent_shape), 0,
                          own.index(model.output[0]))
        factors = list(self._state.mean)
        factors[alpha] = factor
        return full_xhat(new_model, factors)

    # ------------------------------------------------------- prediction, score
    def predict_entries(self, indices):
        """Posterior predictive mean at the given entries (for link prediction).

        - ``likelihood="poisson"``: the posterior mean of X̂, X̂ at the
          factors' posterior means (for EM, at the mode).
        - ``likelihood="bernoulli"``: the probability of a link,
          P(x = 1 | X) = E[1 − exp(−X̂)], averaged over 256 draws of the
          factors from the fitted posterior (VB: from q; samplers: their kept
          draws, or without them a Gamma per element with the posterior mean
          and geometric mean; EM: 1 − exp(−X̂) at the mode). The draws are
          seeded at fit, so the same fitted estimator gives the same numbers;
          their Monte Carlo error is at most 0.03 and shared by all entries.

        Parameters
        ----------
        indices : array-like of int, shape (n_entries, n_dims)
            One row of coordinates per entry of the fitted data tensor.

        Returns
        -------
        prediction : ndarray of shape (n_entries,)
        """
        check_is_fitted(self)
        coords = check_entry_indices(to_numpy(indices), self.model_.observed_shape)
        state, template = self._state, self._state.mean[0]
        if not isinstance(template, np.ndarray):  # the factors (not the data) to the host
            state = type(state)(*(tuple(None if a is None else to_numpy(a) for a in field)
                                  for field in state))
        prediction = predictive_at_entries(
            self.model_, state, coords.T, self.likelihood, method=self.method,
            draws=getattr(self, "draws_", None), seed=self._predictive_seed,
            tied=self._tied_factors,
        )
        return like(prediction, template)

    def score(self, X, y=None, mask=None):
        """Log evidence of ``X`` (higher is better).

        - ``X`` is the training data (recognised by a fingerprint taken at
          fit): ``log_evidence_``, the estimate of log p(X) for this model;
        - new samples: the fold-in predictive evidence, a lower bound on
          log p(X_new | X_train) with the new samples' factor inferred and every
          other factor held at its posterior. With a tied entity factor
          (:class:`~sklearn_pltf.BayesianRESCAL`) there are no new samples:
          the training data only.

        With ``method="em"`` there is no evidence: the score is the log joint
        density at the MAP estimate, which grows with the rank and must not be
        used to choose it.
        """
        return super().score(X, y, mask)

    def _predictive_score(self, data):
        tie = self._tie(self.model_)
        if tie is not None:
            tie.require_training_data(data, "scores")
        return _KERNELS[self._fold_in_method].objective(*self._fold_in(data, self._state))

    @property
    def _fold_in_method(self):
        """How new samples are folded in: EM for an EM fit, else VB (a sampler
        fit's other factors are held at their posterior mean and geometric
        mean exp E[log Z])."""
        return METHODS[self.method].fold_in

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.positive_only = True
        tags.array_api_support = self._array_api_refusal() is None
        return tags


def _sample_start(model, state):
    """Where a fold-in starts every sample: the fitted sample-mode factor's
    mean over the samples; None if the model has no such factor."""
    alpha = model.sample_factor()
    if alpha is None:
        return None
    mean = state.mean[alpha]
    return namespace_of(mean).mean(mean, axis=model.factors[alpha].index(model.output[0]),
                                   keepdims=True)


def _sample_major(mean, model, alpha):
    """The sample-mode factor as (n_samples, prod of its latent sizes)."""
    moved = moveaxis(mean, model.factors[alpha].index(model.output[0]), 0)
    if not isinstance(moved, np.ndarray):
        return namespace_of(moved).reshape(moved, (moved.shape[0], -1))
    return np.ascontiguousarray(moved.reshape(moved.shape[0], -1))


def _copy(array):
    """A new array with ``array``'s values, in its namespace and on its device."""
    if isinstance(array, np.ndarray):
        return np.array(array)
    return namespace_of(array).asarray(array, copy=True)
