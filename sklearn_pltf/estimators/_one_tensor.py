"""The fit of a Poisson–Gamma model of one tensor, without a tied factor,
and the fold-in of new samples.

:class:`OneTensorFit` is the structure :class:`~._base.BasePoissonPLTF`
fits when its model has no tied factor (:class:`~._tied.TiedFit` when it
has); both take the fit's :class:`~._fitting.FitSettings` and return values,
never reading or writing the estimator. :func:`fold_in_samples` is the one
fold-in of new samples, used by the fit's last step, ``transform``,
``score`` and ``partial_fit`` alike (as LDA's E-step is in scikit-learn).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
from joblib import effective_n_jobs

from ..engine._array_api import like, moveaxis, namespace_of, as_namespace, device_of
from ..engine._contract import full_xhat, make_contractor
from ..evidence import _posterior as _mcmc
from ..evidence._checks import check_poisson_log_evidence
from ..inference._common import gamma_priors, priors_for
from ..inference._fold_in import fold_in, with_factor
from ..inference._hyperparameters import LearnedRatesKernel, NewEntityRatesKernel
from ..inference._methods import METHODS, optimizer_kernel
from ._fitting import FittedModel, optimize_and_hold, optimizer_start
from ._relevance import check_learning, learned_attributes, learning_of

__all__ = ["FOLD_IN_TOL", "OneTensorFit", "optimize_one_tensor", "copy_array", "fold_in_samples",
           "kernel_for", "optimizer_attributes", "sample_major", "sample_priors",
           "sample_start", "with_n_samples"]

#: A fold-in stops each sample once a step changes its factor by less than
#: this (or ``tol``, if smaller) relative to its largest entry.
FOLD_IN_TOL = 1e-6

#: The advice of a VB bound that fails its check.
BOUND_ADVICE = "A variational bound cannot lie above log p(X): please report this."


def sample_reconstruction(model, factors, W):
    """Dense X̂ from sample-mode factor values ``W`` (n_samples, the sample
    factor's latent sizes multiplied), the other ``factors`` (model order) as
    given: an ``inverse_transform``."""
    alpha = model.sample_factor()
    own = model.factors[alpha]
    latent_shape = tuple(model.sizes[c] for c in own if c != model.output[0])
    if W.ndim != 2 or W.shape[1] != int(np.prod(latent_shape)):
        raise ValueError(f"Expected an array of shape (n_samples, "
                         f"{int(np.prod(latent_shape))}), got {W.shape}.")
    factor = moveaxis(namespace_of(W).reshape(W, (W.shape[0],) + latent_shape), 0,
                      own.index(model.output[0]))
    factors = list(factors)
    factors[alpha] = factor
    return full_xhat(with_n_samples(model, W.shape[0]), factors)


def with_n_samples(model, n_samples):
    """The bound ``model`` with its sample axis (axis 0) of size ``n_samples``."""
    return replace(model, sizes={**model.sizes, model.output[0]: n_samples})


def kernel_for(method, learning):
    """VB or EM, with its rates learned where ``learning`` (a
    :class:`~sklearn_pltf.inference._hyperparameters.RateLearning`) says."""
    kernel = optimizer_kernel(method)
    return kernel if learning is None else LearnedRatesKernel(kernel, learning)


def optimizer_attributes(objectives, converged, bound, template=None):
    """The fitted attributes of a VB or EM fit's best restart: its objective
    after every iteration (``lower_bounds_``, an array like ``template``,
    where the data live), the final objective, the iterations run and
    whether the stopping rule was met."""
    trace = np.asarray(objectives)
    return {"n_iter_": len(objectives), "converged_": converged,
            "lower_bounds_": trace if template is None else like(trace, template),
            "lower_bound_": bound}


def sample_start(model, state):
    """Where a fold-in starts every sample: the fitted sample-mode factor's
    mean over the samples; None if the model has no such factor."""
    alpha = model.sample_factor()
    if alpha is None:
        return None
    mean = state.mean[alpha]
    return namespace_of(mean).mean(mean, axis=model.factors[alpha].index(model.output[0]),
                                   keepdims=True)


def sample_major(mean, model, alpha):
    """The sample-mode factor as (n_samples, prod of its latent sizes)."""
    moved = moveaxis(mean, model.factors[alpha].index(model.output[0]), 0)
    if not isinstance(moved, np.ndarray):
        return namespace_of(moved).reshape(moved, (moved.shape[0], -1))
    return np.ascontiguousarray(moved.reshape(moved.shape[0], -1))


def copy_array(array):
    """A new array with ``array``'s values, in its namespace and on its device."""
    if isinstance(array, np.ndarray):
        return np.array(array)
    return namespace_of(array).asarray(array, copy=True)


def sample_priors(settings, fitted, sub_model, alpha):
    """The prior of the sample-mode factor (at ``alpha``) of ``sub_model``,
    the fitted model with other samples: the given one, or the learned one
    (which does not vary along the samples)."""
    if fitted.learning is None:
        return gamma_priors(sub_model, settings.prior_shape, settings.prior_rate, free=(alpha,))
    model, priors = fitted.model, fitted.priors
    axis = model.factors[alpha].index(model.output[0])
    # With hierarchical rates a sample's rate is its own: the fold-in starts
    # new samples at the hyperprior's mean and infers theirs
    # (NewEntityRatesKernel).
    entity_rates = priors.new_entity_rate
    rates = priors.rate if entity_rates is None or entity_rates[alpha] is None else entity_rates
    per_sample = [np.take(np.broadcast_to(field[alpha], model.factor_shape(alpha)),
                          [0], axis=axis) for field in (priors.shape, rates)]
    return gamma_priors(sub_model, {alpha: per_sample[0]}, {alpha: per_sample[1]},
                        free=(alpha,))


def fold_in_samples(settings, fitted, data, held_state, contractor=None, warm=False):
    """Infer the sample-mode factor of ``data``, every other factor held at
    its value in ``held_state``, for the :class:`~._fitting.FittedModel`
    ``fitted``. Returns ``(state, contractor, priors)``: the contractor for
    ``data`` (``contractor`` if given, one already built for it), and priors
    with only that factor free (the objective of the new data is the
    kernel's objective of these three).

    Every sample starts from the fitted factor's mean over samples and is
    updated on its own (:func:`~sklearn_pltf.inference._fold_in.fold_in`),
    so its result does not depend on the batch. With ``warm`` (the fit's
    final fold-in: ``data`` are the training data, and the fit has no rate
    per sample, whose fit keeps its own factor), each sample starts
    instead from its own factor in ``held_state``, already near its fixed
    point, so the fold-in ends in a cycle or two. Under hierarchical rates
    each sample's rate is inferred with it
    (:class:`~sklearn_pltf.inference._hyperparameters.NewEntityRatesKernel`),
    and the returned priors hold the rates at the result.
    """
    model, method = fitted.model, METHODS[settings.method].fold_in
    alpha = model.sample_factor()
    kernel = optimizer_kernel(method)
    axis = model.factors[alpha].index(model.output[0])
    learning = fitted.learning
    if (method == "vb" and learning is not None and learning.entity_axes
            and learning.entity_axes[alpha] == (axis,)):
        kernel = NewEntityRatesKernel(kernel, alpha, axis)
    given = {a: (held_state.mean[a], held_state.geometric[a])
             for a in range(model.n_factors) if a != alpha}

    def problem(sub_data, contractor=None):
        sub_model = with_n_samples(model, sub_data.shape[0])
        priors = priors_for(sample_priors(settings, fitted, sub_model, alpha), sub_data)
        if contractor is None:
            contractor = make_contractor(sub_model, sub_data, settings.likelihood)
        return contractor, priors

    contractor, priors = problem(data, contractor)
    means = [given.get(a, (None,))[0] for a in range(model.n_factors)]
    start = fitted.sample_start
    means[alpha] = copy_array(namespace_of(start).broadcast_to(
        start, contractor.model.factor_shape(alpha)))
    state = kernel.state_from_means(means, priors, given)
    if warm:
        state = with_factor(state, alpha, held_state, lambda fitted_value, _: fitted_value)
    state = fold_in(kernel, state, contractor, priors, alpha, axis,
                    lambda rows: problem(data.take_samples(rows)),
                    tol=min(settings.tol, FOLD_IN_TOL), max_iter=settings.max_iter)
    if isinstance(kernel, NewEntityRatesKernel):
        priors = kernel.priors_at(state, priors)
    return state, contractor, priors


def optimize_one_tensor(settings, data, model, priors, fixed, rngs, first_start, learning,
                        n_jobs=1):
    """:func:`~._fitting.optimize_and_hold` of VB or EM (``settings.method``)
    on one tensor, the first restart from ``first_start`` (``{position:
    array}``, or None: at random), the ``fixed`` factors held: what
    :meth:`OneTensorFit.fit_optimizer` and ``partial_fit``'s first batch
    run."""
    kernel = kernel_for(settings.method, learning)
    given = {a: (f, f) for a, f in fixed.items()}
    return optimize_and_hold(
        settings, kernel, model, priors,
        functools.partial(optimizer_start, kernel, model, priors, given, first_start), rngs,
        learning, functools.partial(make_contractor, data=data, likelihood=settings.likelihood),
        n_jobs=n_jobs, delete_moves=(optimizer_kernel(settings.method)
                                     if METHODS[settings.method].delete_moves else None))


class OneTensorFit:
    """The steps of a fit, and after it, of a model without a tied factor
    (the interface :class:`~._tied.TiedFit` shares)."""

    #: Its family in the table of methods (:mod:`sklearn_pltf.inference._methods`).
    family = "poisson"

    # ------------------------------------------------------------- the fit
    def rate_learning(self, model, ard_indices, settings):
        """What rates the fit learns (None: none), checked against the method."""
        learning = learning_of(settings, model, ard_indices)
        check_learning(settings, learning)
        return learning

    def fit_optimizer(self, settings, data, model, priors, fixed, rng, evidence, first_start,
                      learning):
        """VB or EM: restarts to convergence (the first from ``first_start``,
        ``{position: array}``, if given), the best kept, the learned rates
        held, the final fold-in. Returns the state, the :class:`FittedModel`,
        whether the fit ended with the fold-in ``transform`` would do, and the
        fitted attributes."""
        # Distributed data: the restarts run one after another, each over the
        # whole cluster, on the one set of blocks. Array-API data: one after
        # another on the data's device.
        in_process = data.is_distributed or data.is_array_api
        state, objectives, converged, held, contractor = optimize_one_tensor(
            settings, data, model, priors, fixed, rng.spawn(settings.n_init), first_start,
            learning, n_jobs=1 if in_process else effective_n_jobs(settings.n_jobs))
        bound, attributes = objectives[-1], {}
        if held is not None:
            attributes = learned_attributes(learning, held.relevance, held.priors,
                                            pruned=settings.prune)
            model, state, priors, bound = held.model, held.state, held.priors, held.bound
        fitted = FittedModel(model, priors, learning, sample_start(model, state))
        # With a rate per sample the fit's own sample factor and its q(β)
        # stay (a fold-in infers a rate per sample at the held hyper-rate).
        folded_in = fitted.sample_start is not None and not (
            priors.new_entity_rate is not None
            and priors.new_entity_rate[model.sample_factor()] is not None)
        if folded_in:
            # Final fold-in: the sample-mode factor re-inferred with the other
            # factors held, as transform does, from the fit's own factor
            # (transform of the training data returns this result).
            alpha = model.sample_factor()
            folded, fold_contractor, _ = fold_in_samples(settings, fitted, data, state,
                                                         contractor, warm=True)
            state = with_factor(state, alpha, folded, lambda folded_value, _: folded_value)
            bound = optimizer_kernel(settings.method).objective(state, fold_contractor, priors)
        attributes.update(optimizer_attributes(objectives, converged, bound, state.mean[0]))
        if evidence == "vb":
            # The converged bound is the VB estimate of log p(X) (a lower bound).
            attributes["log_evidence_"] = self.check_log_evidence(
                bound, data, advice=BOUND_ADVICE, likelihood=settings.likelihood)
        return state, fitted, folded_in, attributes

    def sample_posterior(self, settings, data, model, priors, fixed, rng, evidence, common):
        """The chains of the method (``common``: the chains' settings) and
        STI's evidence, as a ``SampledPosterior``."""
        common = dict(common)
        if data.is_distributed:  # the chains run one after another, each over the cluster
            common["n_jobs"] = 1
        if METHODS[settings.method].minibatch:
            sgld = settings.sgld
            make_target = functools.partial(_mcmc.poisson_target, model, data,
                                            settings.likelihood, priors, fixed,
                                            sgld["batch_size"], sgld["n_blocks"])
            return _mcmc.sgld_posterior(rng, make_target, model, priors.free,
                                        sti=evidence == "sti", settings=sgld, **common)
        return _mcmc.sample_posterior(settings.method, rng, model,
                                      _mcmc.contractor_of(model, data, settings.likelihood),
                                      priors, fixed, **common)

    def check_log_evidence(self, value, data, **checks):
        """:func:`check_poisson_log_evidence` of the data."""
        return check_poisson_log_evidence(value, data, **checks)

    def modelled_entries(self, coords, values):
        """The observed entries the fit modelled: all of them."""
        return coords, values

    # -------------------------------------------------------- after the fit
    def transform(self, data, view):
        """The sample-mode factor of ``data`` folded in, (n_samples, its
        latent sizes multiplied)."""
        alpha = view.model.sample_factor()
        folded = fold_in_samples(view.settings, view.fitted, data, view.state)[0]
        return sample_major(folded.mean[alpha], view.model, alpha)

    def predictive_score(self, data, view):
        """The fold-in predictive bound (or EM's log joint) of new samples."""
        kernel = optimizer_kernel(METHODS[view.settings.method].fold_in)
        return kernel.objective(*fold_in_samples(view.settings, view.fitted, data, view.state))

    def inverse_transform(self, X, view):
        """X̂ from sample-mode factor values ``X``, the other factors at the
        fitted posterior means."""
        model = view.model
        alpha = model.sample_factor()
        fitted = view.state.mean[alpha]
        if isinstance(fitted, np.ndarray):
            W = np.asarray(X, dtype=np.float64)
        else:  # fitted where array-API data live: W goes there too
            W = as_namespace(X, namespace_of(fitted), device_of(fitted), fitted.dtype)
        return sample_reconstruction(model, view.state.mean, W)
