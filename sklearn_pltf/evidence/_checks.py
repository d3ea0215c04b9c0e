"""Checks that an evidence estimate is a value log p(X) can take.

For a Poisson model of non-negative data, the evidence is a prior average of
likelihoods, :math:`p(X) = \\int p(\\theta) \\prod_v p(x_v \\mid \\hat x_v(\\theta))
\\, d\\theta`, and no likelihood exceeds the saturated model's, where each
entry has its own rate :math:`\\hat x_v = x_v`:

.. math::

    \\log p(X) \\le \\sum_{v \\text{ observed}} \\big( x_v \\log x_v - x_v
        - \\log \\Gamma(x_v + 1) \\big) \\le 0,

each term the largest value of :math:`x \\log \\lambda - \\lambda -
\\log\\Gamma(x + 1)` over :math:`\\lambda`, and zero for :math:`x = 0` (so the
sum runs over the non-zeros). An estimate above that bound by more than its
Monte Carlo error is wrong, however it came about. For binary data under the
Bernoulli–Poisson likelihood the bound is 0: log p(X) is the log of a
probability.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..engine._likelihood import get_likelihood

__all__ = ["check_log_evidence", "check_poisson_log_evidence", "saturated_log_likelihood"]

# An estimate this many of its standard errors above the bound is not noise.
_N_STANDARD_ERRORS = 4.0


def saturated_log_likelihood(data, likelihood="poisson"):
    """The largest log-likelihood any model gives ``data``: for Poisson data
    each observed entry at its own rate, :math:`\\sum_v x_v \\log x_v - x_v -
    \\log\\Gamma(x_v + 1)` (module docstring), for binary data 0. Its cost
    follows the non-zeros.

    Parameters
    ----------
    data : ObservedTensor
    likelihood : {"poisson", "bernoulli"}, default="poisson"

    Returns
    -------
    float
    """
    return get_likelihood(likelihood).saturated_log_likelihood(data)


def check_log_evidence(value, *, standard_error=0.0, upper_bound=None, advice=""):
    """Raise unless ``value`` is a possible log evidence.

    Parameters
    ----------
    value : float
        The estimate of log p(X).
    standard_error : float, default=0.0
        Its Monte Carlo standard error (0 for a deterministic bound).
    upper_bound : float or None, default=None
        What log p(X) cannot exceed, e.g. :func:`saturated_log_likelihood`
        for a Poisson model; None for densities, which have no such bound.
    advice : str, default=""
        What the user can change, appended to the message.

    Returns
    -------
    value : float
        The same value, when it passes; ``upper_bound`` when the estimate
        lies above it by no more than four standard errors (with a warning).

    Raises
    ------
    FloatingPointError
        If ``value`` is not finite, or lies above ``upper_bound`` by more than
        four standard errors.

    Warns
    -----
    RuntimeWarning
        When ``value`` lies above ``upper_bound`` within four standard errors:
        Monte Carlo noise, but a value log p(X) cannot take, so the bound, the
        nearest possible value, is returned instead.
    """
    value = float(value)
    if not np.isfinite(value):
        raise FloatingPointError(f"The log evidence estimate is {value}. {advice}".strip())
    error = float(standard_error) if np.isfinite(standard_error) else 0.0
    if upper_bound is None or value <= upper_bound:
        return value
    above = (f"above {upper_bound:.6g}: no model of this likelihood gives these data a higher "
             "log-likelihood, so log p(X) cannot exceed it")
    if value > upper_bound + _N_STANDARD_ERRORS * error:
        raise FloatingPointError(f"The log evidence estimate {value:.6g} (standard error "
                                 f"{error:.3g}) is impossible: it lies {above}. {advice}".strip())
    warnings.warn(f"The log evidence estimate {value:.6g} (standard error {error:.3g}) lies "
                  f"{above}; {upper_bound:.6g} is returned instead. The estimate is that noisy: "
                  f"run longer for a usable one. {advice}".strip(), RuntimeWarning, stacklevel=3)
    return float(upper_bound)


def check_poisson_log_evidence(value, data, *, standard_error=0.0, advice="", likelihood="poisson"):
    """:func:`check_log_evidence` for a Poisson model of ``data`` (an
    ObservedTensor), or a Bernoulli–Poisson one of binary data: bounded above
    by :func:`saturated_log_likelihood`."""
    return check_log_evidence(value, standard_error=standard_error,
                              upper_bound=saturated_log_likelihood(data, likelihood), advice=advice)
