"""What every fit of the estimators shares: the settings the parameters
decide once (:class:`FitSettings`, read by the fit's steps in place of the
estimator), the optimiser driver's one call, where a restart starts, the
fitted model a fit hands to its fold-ins, and the one setter of fitted
attributes (:func:`set_fitted`)."""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

from sklearn.exceptions import ConvergenceWarning

from ..inference._driver import OptimizerProblem, Settings, optimize
from ..inference._relevance import hold_learned_rates

__all__ = ["FitSettings", "FittedModel", "FittedView", "SGLD_PARAMETERS", "fit_by_optimizer",
           "optimize_and_hold",
           "fit_settings", "optimizer_start", "set_fitted"]


class FitSettings(NamedTuple):
    """What a fit's steps read of the estimator's parameters, decided once
    per fit by :func:`fit_settings`: the steps take this, never the
    estimator.

    ``loop``: the optimiser driver's :class:`~sklearn_pltf.inference._driver.Settings`;
    ``chains``: the samplers' lengths and keeping (``n_warmup``,
    ``n_draws``, ``thin``, ``keep_draws``); ``sgld``: SGLD's and STI's
    settings; ``tied_start``: where a tied model's restarts start
    (``"auto"``: around EM's mode first, then at random; ``"mode"``,
    ``"random"``); ``prior_shape``, ``prior_rate``: as given (where a fold-in
    of new samples takes its prior when nothing was learned); ``ard``: as
    given."""

    method: str
    likelihood: object
    evidence: object
    n_init: int
    n_jobs: object
    tol: float
    max_iter: int
    prune: bool
    verbose: int
    loop: Settings
    chains: dict
    sgld: dict
    tied_start: str
    prior_shape: object
    prior_rate: object
    ard: object


#: SGLD's and STI's parameters (none where an estimator has no SGLD).
SGLD_PARAMETERS = ("batch_size", "n_blocks", "n_temperatures", "steps_per_temperature",
                   "step_size")


def fit_settings(params, tied_start="auto"):
    """The :class:`FitSettings` of a fit with the estimator's parameters
    ``params`` (``get_params(deep=False)``): the one place a fit reads them.
    A parameter an estimator does not have takes its neutral value (no
    pruning, no SGLD blocks)."""
    return FitSettings(
        params["method"], params["likelihood"], params["evidence"], params["n_init"],
        params.get("n_jobs"), params["tol"], params["max_iter"], params.get("prune", False),
        params.get("verbose", 0),
        Settings(params["max_iter"], params["tol"], params["acceleration"],
                 params.get("verbose", 0), params.get("verbose_interval", 10)),
        {name: params[name] for name in ("n_warmup", "n_draws", "thin", "keep_draws")},
        {name: params.get(name) for name in SGLD_PARAMETERS}, tied_start,
        params["prior_shape"], params["prior_rate"], params.get("ard", False))


class FittedView(NamedTuple):
    """What the steps after a fit (``transform``, ``inverse_transform``,
    ``score`` of new data) read of a fitted estimator: its model, state and
    factors, the :class:`FittedModel` its fold-ins take, its settings,
    whether the data at hand are its training data, and its name (for
    messages)."""

    model: object
    state: object
    factors: tuple
    fitted: object
    settings: FitSettings
    is_training_data: bool
    name: str


def set_fitted(estimator, attributes, stale=()):
    """The one place the estimator layer sets fitted attributes: a fit's
    steps return what they found, and this sets it when the fit is done
    (the ``stale`` attributes of an earlier fit removed first, so that none
    survives that this fit does not set)."""
    for name in stale:
        estimator.__dict__.pop(name, None)
    for name, value in attributes.items():
        setattr(estimator, name, value)


def fit_by_optimizer(problem, rngs, settings, n_jobs=1):
    """Every VB and EM fit's one call of the optimiser driver
    (:func:`~sklearn_pltf.inference._driver.optimize`): the best of the
    restarts, with a :class:`~sklearn.exceptions.ConvergenceWarning` where it
    did not converge."""
    result = optimize(problem, rngs, settings, n_jobs=n_jobs)
    if result.not_converged:
        warnings.warn(result.not_converged, ConvergenceWarning)
    return result


def optimize_and_hold(settings, kernel, model, priors, start, rngs, learning, contractor_for,
                      *, n_jobs=1, tied=None, delete_moves=None):
    """What every VB and EM fit runs (one tensor, a tie, coupled tensors,
    ``partial_fit``'s first batch): ``kernel``'s restarts, one per generator
    of ``rngs``, each from ``start(rng, restart, contractor)``, to
    convergence (:func:`fit_by_optimizer`), the best kept; then, with
    ``learning``, the rates learned there held
    (:func:`~sklearn_pltf.inference._relevance.hold_learned_rates`, pruning
    with ``settings.prune``; ``tied``: its latent indices that are one).

    ``contractor_for(model)`` builds what the steps read for ``model`` (or
    a smaller, pruned one; restarts in other processes build their own).
    Returns ``(state, objectives, converged, held, contractor)``: ``held``
    None without ``learning``; ``contractor`` the one the restarts in this
    process ran on (over the held model, if it was pruned). ``delete_moves``:
    VB's kernel where VB tries delete moves at convergence
    (:mod:`~sklearn_pltf.inference._moves`), else None."""
    problem = OptimizerProblem(kernel, contractor_for(model), priors, start,
                               rebuild=functools.partial(contractor_for, model),
                               delete_moves=delete_moves)
    state, objectives, converged, _ = fit_by_optimizer(problem, rngs, settings.loop,
                                                       n_jobs=n_jobs)
    contractor, held = problem.contractor, None
    if learning is not None:
        held = hold_learned_rates(kernel, learning, model, state, priors, settings.tol,
                                  contractor_for=contractor_for, bound=objectives[-1],
                                  prune=settings.prune, tied=tied)
        if held.model is not model:
            contractor = contractor_for(held.model)
    return state, objectives, converged, held, contractor


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
