"""The shared base of the Poisson–Gamma PLTF estimators.

The base class owns everything but the model: input validation, one
:class:`numpy.random.Generator` per fit spawned into the restarts (or chains),
the plan of the fit (its :class:`~._fitting.FitSettings`, the bound model,
priors, what is learned, the evidence, the structure) handed to the
optimiser driver or to the samplers, ``transform``, ``inverse_transform``,
``score`` and entry predictions. A subclass says which model string,
latent sizes and fixed factors it fits (:meth:`_model_spec`), and which
factors are tied (:meth:`_tied_positions`): the fit's structure is then
:class:`~._tied.TiedFit`, else :class:`~._one_tensor.OneTensorFit`, chosen
once by :meth:`_structure`.
"""
from __future__ import annotations

import functools
from abc import abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine._array_api import array_api_refusal, like, to_numpy
from ..engine._likelihood import LIKELIHOODS, Likelihood, get_likelihood
from ..evidence._ais import ais_log_evidence, has_posterior_start, posterior_start
from ..inference import em
from ..inference._common import gamma_priors, priors_for
from ..inference._convergence import ACCELERATIONS
from ..inference._methods import METHODS, FamilyMethods, choose_evidence
from ..inference._svd_start import svd_start
from ..engine.distributed import block_grid
from ..engine.model import Model
from ..inference._predictive import predictive_at_entries
from ._relevance import given_priors
from ._fitting import FittedModel, FittedView, fit_settings
from ._one_tensor import OneTensorFit, copy_array, sample_major, sample_start, with_n_samples
from ._sampled import export_draws, fit_sampler
from ._skeleton import BaseFactorization
from ._tied import TiedFit
from ..engine._factor_checks import (check_entry_indices, check_fixed_factors_reach_the_data,
                                     given_start)
from ._validation import validate_tensor

__all__ = ["BasePoissonPLTF"]


class BasePoissonPLTF(BaseFactorization):
    """Base class of the Poisson–Gamma PLTF estimators (not for direct use)."""

    _stale_attributes = ("prior_rate_", "prior_shape_", "relevance_", "effective_rank_",
                         "log_evidence_", "lower_bound_", "lower_bounds_", "converged_", "draws_",
                         "log_likelihoods_", "log_evidence_error_", "rhat_", "n_batch_iter_")

    _parameter_constraints: dict = {
        "likelihood": [StrOptions(set(LIKELIHOODS)), Likelihood],
        "method": [StrOptions(FamilyMethods("poisson"))],
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

    def _tied_start(self):
        """Where a tied model's VB restarts start: ``"auto"``, around EM's
        posterior mode for the first and at random after."""
        return "auto"

    def _structure(self, model):
        """The fit's structure, chosen once: :class:`~._tied.TiedFit` where
        ``model`` has tied factors, else :class:`~._one_tensor.OneTensorFit`."""
        tied = self._tied_positions(model)
        return TiedFit(model, tied, type(self).__name__) if tied else OneTensorFit()

    def _fit_settings(self):
        """The fit's :class:`~._fitting.FitSettings`, from the parameters."""
        return fit_settings(self.get_params(deep=False), tied_start=self._tied_start())

    def _has_tied_factor(self):
        """Whether the parameters tie factors (known before the data are:
        a subclass that offers ties says so)."""
        return False

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
                               chunks=self._distributed_chunks,
                               keep_float32=self._fits_float32)

    @property
    def _fits_float32(self):
        """Whether dense float32 data are fitted in float32: by the methods
        the table marks (VB and EM) on the dense engine of one tensor; a
        tie's row updates run in float64."""
        return METHODS[self.method].float32 and not self._has_tied_factor()

    @property
    def _fits_distributed_data(self):
        """Whether a Dask array is fitted on its cluster: VB and EM run over the
        blocks, and SGLD over parts of parallel blocks (``n_blocks``); Gibbs,
        SADA and the SVD start need the data in one process."""
        if (isinstance(self.init, str) and self.init == "svd") or self._has_tied_factor():
            return False  # the SVD, and a tie's row updates, pair entries across blocks
        how, n_blocks = METHODS[self.method].distributed, self.get_params().get("n_blocks")
        return how == "whole" or (how == "blocks" and n_blocks is not None)

    @property
    def _distributed_chunks(self):
        """For SGLD, the chunking of a Dask array into its parallel blocks."""
        n_blocks = self.get_params().get("n_blocks")
        if METHODS[self.method].distributed != "blocks" or n_blocks is None:
            return None
        return functools.partial(block_grid, n_blocks=n_blocks)

    # ------------------------------------------------------------------- fit
    def _fit_data(self, data, rng):
        """Fit the factors to validated ``data``: the restarts or chains of
        ``method``, the evidence, and the state transform and score read.
        Returns the fitted attributes (:meth:`_skeleton.BaseFactorization._fit`
        sets them)."""
        settings = self._fit_settings()
        get_likelihood(settings.likelihood).check(data)
        spec, sizes, fixed = self._model_spec(len(data.shape))
        model = Model.parse(spec).bind(data.shape, sizes, {a: f.shape for a, f in fixed.items()})
        structure, method = self._structure(model), METHODS[settings.method]
        # AIS from the prior is far too short for real data: where no start
        # can be fitted to the posterior, "auto" passes it over (Chib then).
        free = tuple(a for a in model.free if a not in fixed)
        evidence = choose_evidence(
            settings.method, settings.evidence, structure.family, sparse=data.is_sparse,
            passed_over=() if has_posterior_start(model, free, tuple(fixed)) else ("ais",))
        if data.is_array_api:  # every factor where the data live
            fixed = {a: like(f, data.dense) for a, f in fixed.items()}
        check_fixed_factors_reach_the_data(model, data, fixed)
        priors = priors_for(self._gamma_priors(model), data)
        learning = structure.rate_learning(model, self._ard_indices(model), settings)
        if method.mode:  # which needs shapes of at least 1
            em.check_priors(priors)
        first_start = self._first_start(model, data, fixed)
        if method.sampler:
            state, attributes = fit_sampler(settings, structure, data, model, priors, fixed, rng,
                                            evidence)
            fitted, folded_in = FittedModel(model, priors, None, sample_start(model, state)), False
        else:
            state, fitted, folded_in, attributes = structure.fit_optimizer(
                settings, data, model, priors, fixed, rng, evidence, first_start, learning)
            model, priors = fitted.model, fitted.priors
        if evidence == "ais":
            # The path starts from a Gamma fit to the fitted posterior marginals
            # (EM has none: from the prior). Its own stream, spawned after the
            # method's: the fit is the same with or without it.
            start = (None if method.mode
                     else posterior_start(model, state.mean, state.geometric, held=tuple(fixed)))
            # AIS runs in float64 whatever the fit's precision.
            estimate = ais_log_evidence(rng.spawn(1)[0], model, data.in_float64(), priors,
                                        fixed, start=start,
                                        verbose=settings.verbose, likelihood=settings.likelihood)
            attributes["log_evidence_"] = structure.check_log_evidence(
                estimate.log_evidence, data, standard_error=estimate.standard_error,
                advice=("evidence='ais' runs sklearn_pltf.evidence.ais_log_evidence at its "
                        "defaults; call it directly with more runs or temperatures."),
                likelihood=settings.likelihood)
            attributes["log_evidence_error_"] = estimate.standard_error
        return {**attributes, "model_": fitted.model, "factors_": tuple(map(copy_array,
                                                                          state.mean)),
                "_state": state, "_folded_in_fit": folded_in, "_fitted_priors": fitted.priors,
                "_rate_learning": fitted.learning, "_sample_start": fitted.sample_start,
                # Seeds predict_entries' draws: its own stream, spawned last.
                "_predictive_seed": int(rng.spawn(1)[0].integers(2**63))}

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

    def _view(self, data=None):
        """What the steps after the fit read (:class:`~._fitting.FittedView`),
        ``data`` the data at hand (None: no data)."""
        return FittedView(self.model_, self._state, self.factors_, self._fitted(),
                          self._fit_settings(), data is not None and self._is_training_data(data),
                          type(self).__name__)

    def _transform_data(self, data):
        """:meth:`transform` of validated data, folded in in float64: each
        sample's stopping rule (a step's change below 1e-6 of its largest
        entry) sits at float32's rounding, where its fold-in crawls."""
        self._sample_factor()  # raises unless the model has a sample-mode factor
        self._check_sample_shape(data)
        data = data.in_float64()
        return self._structure(self.model_).transform(data, self._view(data))

    def _fitted_transform(self, data):
        if self._folded_in_fit:  # fit ended with this fold-in
            alpha = self._sample_factor()
            return sample_major(copy_array(self._state.mean[alpha]), self.model_, alpha)
        return self._transform_data(data)

    def transform(self, X, mask=None):
        """The posterior mean (EM: mode) of the sample-mode factor for the
        samples in ``X``, every other factor held at its posterior (fold-in),
        each sample on its own; for the training data, the factor the fit
        ended with (its final fold-in, started from the fit's own factor);
        with a tied entity factor, the entity factor A of the training data
        (the only data it takes).

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
        self._sample_factor()  # raises unless the model has a sample-mode factor
        return self._structure(self.model_).inverse_transform(X, self._view())

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
        data = data.in_float64()  # its fold-in too (_transform_data)
        return self._structure(self.model_).predictive_score(data, self._view(data))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.positive_only = True
        tags.array_api_support = self._array_api_refusal() is None
        if self._fits_float32 and tags.transformer_tags is not None:
            tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

