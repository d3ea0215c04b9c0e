"""The shared base of the Poisson–Gamma PLTF estimators.

The base class owns everything but the model: input validation, one
:class:`numpy.random.Generator` per fit spawned into the restarts (or chains), the
convergence loop, keeping the best restart, the sampler path
(:mod:`sklearn_pltf.evidence._posterior`), fold-in of new samples, ``transform``,
``inverse_transform``, ``score`` and entry predictions. A subclass says which
model string, latent sizes and fixed factors it fits (:meth:`_model_spec`).
"""

from __future__ import annotations

import functools
import warnings
from abc import abstractmethod
from dataclasses import replace
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from joblib import effective_n_jobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine._array_api import (array_api_refusal, as_namespace, device_of, like, moveaxis,
                          namespace_of, to_numpy)
from ..engine._contract import full_xhat, make_contractor
from ..engine._kernels import TINY
from ..engine._likelihood import LIKELIHOODS, CompoundPoisson, get_likelihood
from ..evidence._ais import ais_log_evidence, has_posterior_start, posterior_start
from ..evidence._checks import check_poisson_log_evidence
from ..inference import em, gibbs, vb
from ..inference._fold_in import fold_in, with_factor
from ..inference._common import gamma_priors, priors_for
from ..inference._convergence import ACCELERATIONS
from ..inference._diagnostics import RHAT_LIMIT, split_rhat
from ..inference._driver import OptimizerProblem, Settings, optimize
from ..inference._hyperparameters import LearnedRatesKernel
from ..inference._svd_start import svd_start
from ..engine.distributed import block_grid
from ..engine.model import Model
from ..evidence import _posterior as _mcmc
from ._inference_data import export_inference_data, factor_names_of
from ..inference._predictive import predictive_at_entries
from ..inference._relevance import hold_learned_rates
from ._relevance import check_learning, learning_of, set_learned_attributes
from ._skeleton import BaseFactorization
from ._validation import (check_entry_indices, check_fixed_factors_reach_the_data,
                          given_start, validate_tensor)

__all__ = ["BasePoissonPLTF", "FittedModel", "cp_reconstruction", "fit_by_optimizer",
           "optimizer_start", "warn_unless_mixed", "with_n_samples"]

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


def fit_by_optimizer(problem, rngs, settings, n_jobs=1):
    """Every VB and EM fit's one call of the optimiser driver
    (:func:`~sklearn_pltf.inference._driver.optimize`): the best of the
    restarts, with a :class:`~sklearn.exceptions.ConvergenceWarning` where it
    did not converge."""
    result = optimize(problem, rngs, settings, n_jobs=n_jobs)
    if result.not_converged:
        warnings.warn(result.not_converged, ConvergenceWarning)
    return result


class FittedModel(NamedTuple):
    """What a fit hands to its fold-ins (the last step of the fit, and later
    ``transform``/``score``): the bound model (pruned, if ARD pruned it), the
    priors at the held learned rates, what was learned, and where each new
    sample's factor starts (None without a sample-mode factor)."""

    model: object
    priors: object
    learning: object
    sample_start: object


def optimizer_start(kernel, model, priors, given, first_start, rng, restart, contractor):
    """Where restart ``restart`` starts: ``first_start`` for the first (if
    given), else at random."""
    return kernel.init(rng, model, contractor, priors, given,
                       first_start if restart == 0 else None)


def _kernel(method, learning):
    """VB or EM, with its rates learned where ``learning`` (a
    :class:`~sklearn_pltf.inference._hyperparameters.RateLearning`) says."""
    return _KERNELS[method] if learning is None else LearnedRatesKernel(_KERNELS[method], learning)


def warn_unless_mixed(trace, what="the log-likelihood", advice="raise n_warmup and n_draws"):
    """A ``ConvergenceWarning`` when the split R-hat of ``trace`` (n_chains,
    n_draws) exceeds :data:`RHAT_LIMIT`; returns the R-hat."""
    rhat = split_rhat(trace)
    if rhat > RHAT_LIMIT:
        warnings.warn(
            f"The chains have not mixed: split R-hat of {what} is {rhat:.3g} (above "
            f"{RHAT_LIMIT}), so the posterior means and the evidence are not yet to be "
            f"trusted; {advice}.", ConvergenceWarning, stacklevel=2)
    return rhat



def _evidence_advice(evidence, priors):
    """What to change when a sampler's evidence estimate fails its check."""
    if evidence == "sti":
        return ("Use more temperatures (n_temperatures) or more steps per temperature "
                "(steps_per_temperature), or a smaller step_size.")
    advice = "Lengthen Chib's clamped runs (n_warmup, n_draws)."
    if min(np.min(shape) for shape in priors.shape if shape is not None) < 1:
        advice += (" With prior_shape below 1 the Gamma density is infinite at 0, and Gibbs "
                   "draws of small factor elements underflow to exactly 0: raise prior_shape "
                   "to 1 or more, or estimate the evidence by STI (method='sgld').")
    return advice


class BasePoissonPLTF(BaseFactorization):
    """Base class of the Poisson–Gamma PLTF estimators (not for direct use)."""

    _stale_attributes = ("prior_rate_", "relevance_", "effective_rank_", "log_evidence_",
                         "lower_bound_", "lower_bounds_", "converged_", "draws_",
                         "log_likelihoods_", "log_evidence_error_", "rhat_", "n_batch_iter_")

    _parameter_constraints: dict = {
        "likelihood": [StrOptions(set(LIKELIHOODS)), CompoundPoisson],
        "method": [StrOptions({"vb", "em", *_mcmc.SAMPLERS})],
        "evidence": [StrOptions({"auto", "vb", "chib", "sti", "ais"}), None],
        "prior_shape": [Interval(Real, 0, None, closed="neither"), "array-like", dict],
        "prior_rate": [Interval(Real, 0, None, closed="neither"), "array-like", dict,
                       StrOptions({"auto"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "acceleration": [StrOptions(set(ACCELERATIONS)), None],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
        "verbose_interval": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "n_draws": [Interval(Integral, 1, None, closed="left")],
        "n_warmup": [Interval(Integral, 0, None, closed="left")],
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

    #: ``{position: source position}`` of factors that are another factor
    #: (drawn once for both in the Bernoulli–Poisson predictive).
    _tied_factors: dict = {}

    # ------------------------------------------------------------ subclass API
    @abstractmethod
    def _model_spec(self, ndim):
        """Return ``(model string, latent sizes, {position: fixed array})`` for
        data with ``ndim`` dimensions."""

    def _gamma_priors(self, model):
        """The Gamma priors of ``model``'s free factors from ``prior_shape`` and
        ``prior_rate`` (``"auto"``: a rate of 1 until learned)."""
        return gamma_priors(model, self.prior_shape, self._given_rate)

    @property
    def _given_rate(self):
        """``prior_rate``, with 1 for ``"auto"`` (where VB learns the rates)."""
        return 1.0 if isinstance(self.prior_rate, str) else self.prior_rate

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
        if self.method not in _KERNELS:
            asked.append(f"method={self.method!r}")
        if self.evidence not in ("auto", "vb", None):
            asked.append(f"evidence={self.evidence!r}")
        if not isinstance(self.likelihood, str) or self.likelihood not in ("poisson", "bernoulli"):
            asked.append("likelihood='compound_poisson'")
        if isinstance(self.prior_rate, str) or self.ard:
            asked.append("learned prior rates (prior_rate='auto' or ard)")
        if isinstance(self.init, str) and self.init == "svd":
            asked.append("init='svd'")
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
        if isinstance(self.init, str) and self.init == "svd":
            return False
        n_blocks = self._sgld_settings()["n_blocks"]
        return self.method in _KERNELS or (self.method == "sgld" and n_blocks is not None)

    @property
    def _distributed_chunks(self):
        """For SGLD, the chunking of a Dask array into its parallel blocks."""
        n_blocks = self._sgld_settings()["n_blocks"]
        if self.method != "sgld" or n_blocks is None:
            return None
        return functools.partial(block_grid, n_blocks=n_blocks)

    # ------------------------------------------------------------------- fit
    def _fit_data(self, data, rng):
        """Fit the factors to validated ``data``: the restarts or chains of
        ``method``, the evidence, and the state transform and score read."""
        get_likelihood(self.likelihood).check(data)
        evidence = self._evidence_method(data.is_sparse)
        spec, sizes, fixed = self._model_spec(len(data.shape))
        model = Model.parse(spec).bind(data.shape, sizes, {a: f.shape for a, f in fixed.items()})
        if data.is_array_api:  # every factor where the data live
            fixed = {a: like(f, data.dense) for a, f in fixed.items()}
        check_fixed_factors_reach_the_data(model, data, fixed)
        priors = priors_for(self._gamma_priors(model), data)
        learning = self._rate_learning_for(model)
        if (self.evidence == "auto" and evidence == "ais"
                and not has_posterior_start(model, priors.free, tuple(fixed))):
            # AIS from the prior is far too short for real data; Chib then.
            evidence = "chib"
        if self.method == "em":
            em.check_priors(priors)
        first_start = self._first_start(model, data, fixed)
        if self.method in _mcmc.SAMPLERS:
            state = self._fit_sampler(data, model, priors, fixed, rng, evidence)
            fitted, folded_in = FittedModel(model, priors, None, _sample_start(model, state)), False
        else:
            state, fitted, folded_in = self._fit_optimizer(data, model, priors, fixed, rng,
                                                           evidence, first_start, learning)
            model, priors = fitted.model, fitted.priors
        if evidence == "ais":
            # The path starts from a Gamma fit to the fitted posterior marginals
            # (EM has none: from the prior). Its own stream, spawned after the
            # method's: the fit is the same with or without it.
            start = (None if self.method == "em"
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
        if self.method not in _KERNELS:
            raise ValueError(
                f"init and warm_start set where VB and EM start; method={self.method!r} "
                "starts its chains at random and forgets the start in the warm-up: leave "
                "init='random' and warm_start=False.")
        if warm:
            return {a: np.array(to_numpy(self.factors_[a])) for a in model.free}
        if isinstance(init, str):  # "svd"
            return svd_start(model, data, model.free, fixed)
        return given_start(model, init)

    def _evidence_method(self, data_is_sparse=False):
        """The evidence estimator ``evidence`` asks for, checked against ``method``."""
        sampler = self.method in _mcmc.SAMPLERS
        if self.evidence == "auto":
            if self.method == "sgld":
                return "sti"
            if sampler:
                return "chib" if data_is_sparse else "ais"
            return "vb" if self.method == "vb" else None
        if self.evidence == "vb" and self.method != "vb":
            raise ValueError(f"evidence='vb' is the variational bound: it needs method='vb', got {self.method!r}.")
        if self.evidence == "chib" and self.method not in gibbs.SWEEPS:
            raise ValueError(
                f"evidence='chib' is estimated from Gibbs runs: it needs method='gibbs' or "
                f"'sada', got {self.method!r}."
            )
        if self.evidence == "ais" and data_is_sparse:
            raise ValueError(
                "evidence='ais' runs on dense data for now; for sparse data use evidence='chib' "
                "(method='gibbs' or 'sada') or 'sti' (method='sgld')."
            )
        if self.evidence == "sti" and self.method != "sgld":
            raise ValueError(
                f"evidence='sti' integrates over SGLD runs at a ladder of temperatures: it needs "
                f"method='sgld', got {self.method!r}."
            )
        return self.evidence

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
        folded_in = fitted.sample_start is not None
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
        set_learned_attributes(self, learning, held.relevance, held.priors)
        return held.model, held.state, held.priors, contractor, held.bound

    def _token_by_token_methods(self, model):
        """The samplers that draw a uniform for every token (count) in each sweep."""
        return ("gibbs",)

    def _fit_sampler(self, data, model, priors, fixed, rng, evidence):
        """Gibbs, SADA or SGLD: ``n_init`` chains, their pooled posterior
        means, and Chib's or STI's evidence."""
        per_token = self._token_by_token_methods(model)
        if self.method in per_token and self.likelihood == "poisson":
            data.require_integer(f"method={self.method!r}")
            others = [repr(m) for m in ("vb", "sgld", "sada") if m not in per_token]
            data.require_tokens_in_memory(
                f"method={self.method!r}", bytes_per_token=8,
                remedy=(f"Use method={', '.join(others[:-1])} or {others[-1]}, or scale the "
                        "counts down."))
        posterior = self._sample_posterior(data, model, priors, fixed, rng, evidence)
        self.n_iter_ = self.n_warmup + self.n_draws * self.thin
        self.log_likelihoods_ = posterior.log_likelihoods
        self.rhat_ = warn_unless_mixed(posterior.log_likelihoods[:, self.n_warmup:])
        if self.keep_draws:
            self.draws_ = posterior.draws
        if posterior.log_evidence is not None:
            self.log_evidence_ = check_poisson_log_evidence(
                posterior.log_evidence, self._modelled_data(data, model),
                standard_error=posterior.log_evidence_error or 0.0,
                advice=_evidence_advice(evidence, priors), likelihood=self.likelihood)
        if posterior.log_evidence_error is not None:
            self.log_evidence_error_ = posterior.log_evidence_error
        return posterior.state

    def _chain_settings(self):
        """What every sampler's chains take from the estimator's parameters."""
        return dict(n_chains=self.n_init, n_warmup=self.n_warmup, n_draws=self.n_draws,
                    thin=self.thin, keep_draws=self.keep_draws, n_jobs=self.n_jobs,
                    verbose=self.verbose)

    def _sgld_settings(self):
        """What SGLD and STI take from the estimator's parameters."""
        return {name: getattr(self, name) for name in (
            "batch_size", "n_blocks", "n_temperatures", "steps_per_temperature", "step_size")}

    def _sample_posterior(self, data, model, priors, fixed, rng, evidence):
        """The chains of ``method`` and their evidence, as a ``SampledPosterior``."""
        common = self._chain_settings()
        if data.is_distributed:  # the chains run one after another, each over the cluster
            common["n_jobs"] = 1
        if self.method == "sgld":
            settings = self._sgld_settings()
            make_target = functools.partial(_mcmc.poisson_target, model, data, self.likelihood,
                                            priors, fixed, settings["batch_size"],
                                            settings["n_blocks"])
            return _mcmc.sgld_posterior(rng, make_target, model, priors.free,
                                        sti=evidence == "sti", settings=settings, **common)
        return _mcmc.sample_posterior(self.method, rng, model, data, priors, fixed,
                                      chib=evidence == "chib", likelihood=self.likelihood,
                                      **common)

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
        check_is_fitted(self)
        if not hasattr(self, "draws_"):
            raise ValueError(
                "No draws to export: fit with method='gibbs', 'sada' or 'sgld' and keep_draws=True."
            )
        model, draws, tied = self.model_, self.draws_, self._tied_factors
        names = factor_names_of(model, factor_names, self._default_factor_names(), tied)
        likelihood = get_likelihood(self.likelihood)

        def factors_at(chain, draw):
            own = [None if d is None else d[chain, draw] for d in draws]
            return [own[a] if own[a] is not None else own[tied[a]] if a in tied
                    else self._state.mean[a] for a in range(model.n_factors)]

        return export_inference_data(
            model, tuple(None if a in tied else d for a, d in enumerate(draws)), names,
            sample_stats={"total_log_likelihood": _mcmc.kept_sweeps(
                self.log_likelihoods_, self.n_warmup, self.thin)},
            coords=self._index_coords(),
            data=None if X is None else self._training_data(X, mask),
            modelled=self._modelled_entries,
            factors_at=factors_at,
            entry_log_likelihood=lambda x, xhat, chain, draw: likelihood.entry_log_likelihood(
                x, np.maximum(xhat, TINY)))

    def _modelled_entries(self, coords, values):
        """The observed entries (coordinates, values) the fit modelled: all."""
        return coords, values

    def _modelled_data(self, data, model):
        """The part of ``data`` the fitted model covers, what its evidence is
        of: all of it."""
        return data

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
        so its result does not depend on the batch.
        """
        if fitted is None:
            self._sample_factor()  # raises unless the model has a sample-mode factor
            fitted = self._fitted()
        model = fitted.model
        alpha = model.sample_factor()
        kernel = _KERNELS[self._fold_in_method]
        given = {
            a: (held_state.mean[a], held_state.geometric[a])
            for a in range(model.n_factors)
            if a != alpha
        }
        axis = model.factors[alpha].index(model.output[0])

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
        per_sample = [np.take(np.broadcast_to(field[alpha], model.factor_shape(alpha)),
                              [0], axis=axis) for field in (priors.shape, priors.rate)]
        return gamma_priors(sub_model, {alpha: per_sample[0]}, {alpha: per_sample[1]},
                            free=(alpha,))

    def _transform_data(self, data):
        """:meth:`transform` of validated data."""
        alpha = self._sample_factor()
        self._check_sample_shape(data)
        return _sample_major(self._fold_in(data, self._state)[0].mean[alpha], self.model_, alpha)

    def _fitted_transform(self, data):
        if self._folded_in_fit:  # fit ended with this fold-in
            alpha = self._sample_factor()
            return _sample_major(_copy(self._state.mean[alpha]), self.model_, alpha)
        return self._transform_data(data)

    def inverse_transform(self, X):
        """Posterior-mean reconstruction X̂ from sample-mode factor values ``X``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_components)
            Values of the sample-mode factor, e.g. from :meth:`transform`.

        Returns
        -------
        X_hat : ndarray of shape (n_samples, ...)
            Dense reconstruction with the other factors at their posterior means.
        """
        check_is_fitted(self)
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
          other factor held at its posterior.

        With ``method="em"`` there is no evidence: the score is the log joint
        density at the MAP estimate, which grows with the rank and must not be
        used to choose it.
        """
        return super().score(X, y, mask)

    def _predictive_score(self, data):
        return _KERNELS[self._fold_in_method].objective(*self._fold_in(data, self._state))

    @property
    def _fold_in_method(self):
        """How new samples are folded in: EM for an EM fit, else VB (a sampler
        fit's other factors are held at their posterior mean and geometric
        mean exp E[log Z])."""
        return "em" if self.method == "em" else "vb"

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
