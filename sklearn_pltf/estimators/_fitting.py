"""What every fit of the Poisson–Gamma estimators shares: the settings the
parameters decide once (:class:`FitSettings`, read by the fit's steps in
place of the estimator), the optimiser driver's one call, where a restart
starts, and the fitted model a fit hands to its fold-ins."""

from __future__ import annotations

import warnings
from typing import NamedTuple

from sklearn.exceptions import ConvergenceWarning

from ..inference._driver import Settings, optimize

__all__ = ["FitSettings", "FittedModel", "fit_by_optimizer", "optimizer_start"]


class FitSettings(NamedTuple):
    """What a fit's steps read of the estimator's parameters, decided once
    per fit (:meth:`~._base.BasePoissonPLTF._fit_settings`): the steps take
    this, never the estimator.

    ``loop``: the optimiser driver's :class:`~sklearn_pltf.inference._driver.Settings`;
    ``chains``: the samplers' lengths and keeping (``n_warmup``,
    ``n_draws``, ``thin``, ``keep_draws``); ``sgld``: SGLD's and STI's
    settings; ``tied_start``: where a tied model's restarts start
    (``"auto"``: around EM's mode first, then at random; ``"mode"``,
    ``"random"``); ``prior_shape``, ``prior_rate``: as given (what a fold-in
    of new samples takes where nothing was learned)."""

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
