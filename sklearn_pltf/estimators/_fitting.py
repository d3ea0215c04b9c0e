"""What every VB and EM fit of the estimators shares: the optimiser
driver's one call, where a restart starts, and the fitted model a fit hands
to its fold-ins."""

from __future__ import annotations

import warnings
from typing import NamedTuple

from sklearn.exceptions import ConvergenceWarning

from ..inference._driver import optimize

__all__ = ["FittedModel", "fit_by_optimizer", "optimizer_start"]


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
