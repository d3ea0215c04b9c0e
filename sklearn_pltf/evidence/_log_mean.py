"""The logarithm of a Monte Carlo mean, as Chib's ordinates need it."""

from __future__ import annotations

import warnings

import numpy as np

from ..inference._log_average import log_average_exp
from ._mc_error import batch_means_error

__all__ = ["log_mean_exp", "warn_if_ordinates_unreliable"]

#: Above this relative error the second-order correction of
#: :func:`log_mean_exp` (s²/2, 0.125 nats at the limit) no longer accounts
#: for the log of a mean's bias, whose higher-order terms grow as s³ and s⁴.
ORDINATE_ERROR_LIMIT = 0.5


def log_mean_exp(log_values, n_batches=20):
    """:math:`\\log \\frac1T \\sum_t e^{v_t}`, less its first-order bias, and
    its standard error.

    The log of a mean is biased low (Jensen): for a mean :math:`\\hat m` of
    draws with expectation :math:`\\mu`, the second-order delta method gives
    :math:`\\mathbb E[\\log \\hat m] \\approx \\log\\mu -
    \\mathrm{Var}(\\hat m) / (2\\mu^2)`. The relative standard error
    :math:`s = \\widehat{\\mathrm{SE}}(\\hat m)/\\hat m` (batch means, the draws
    being autocorrelated) estimates that ratio, so the estimate returned is
    :math:`\\log\\hat m + s^2/2` (its effect on Chib's estimate: :mod:`._chib`).

    Parameters
    ----------
    log_values : array-like of shape (T,)
        :math:`v_t`, in draw order.
    n_batches : int, default=20
        Batches for the standard error.

    Returns
    -------
    estimate : float
    relative_error : float
        :math:`s`, the standard error of ``estimate`` (delta method); ``inf``
        with fewer than two draws, when no correction is made.
    """
    log_values = np.asarray(log_values, dtype=np.float64)
    log_mean = log_average_exp(log_values)
    weights = np.exp(log_values - log_values.max())  # scaled by the largest: no overflow
    relative_error = batch_means_error(weights, n_batches) / weights.mean()
    if np.isfinite(relative_error):
        log_mean += relative_error**2 / 2
    return log_mean, float(relative_error)


def warn_if_ordinates_unreliable(relative_errors, advice):
    """A ``RuntimeWarning`` naming the worst ordinate when any of Chib's
    ordinates has a relative Monte Carlo error above
    :data:`ORDINATE_ERROR_LIMIT` (or one that cannot be estimated)."""
    errors = np.asarray(relative_errors, dtype=np.float64)
    worst = int(np.argmax(np.where(np.isfinite(errors), errors, np.inf)))
    if not errors[worst] <= ORDINATE_ERROR_LIMIT:
        warnings.warn(
            f"Chib's estimate: ordinate {worst + 1} of {errors.size} has a relative Monte Carlo "
            f"error of {errors[worst]:.3g} (above {ORDINATE_ERROR_LIMIT}), so the log of its mean "
            f"is biased beyond what its correction removes; {advice}.",
            RuntimeWarning, stacklevel=3)
