"""The log of an average of exponentials, for the loops that take one per draw."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["log_average_exp"]


def log_average_exp(log_values, axis=None):
    """:math:`\\log \\frac1m \\sum_{i=1}^m e^{v_i}` over ``axis`` (all of
    ``log_values`` if None; a float then, else an array without that axis).

    The arithmetic of :func:`scipy.special.logsumexp`, which it equals bit
    for bit on finite values: the largest term, counted c times, is
    separated out, :math:`v^* + \\log c + \\log(1 + \\sum_{v_i < v^*}
    e^{v_i - v^*} / c) - \\log m`, without scipy's array-API dispatch, whose
    per-call cost Chib's averages over labels and signs (one per kept sweep
    of every clamped run) would pay many times over.
    """
    values = np.asarray(log_values, dtype=np.float64)
    largest = np.max(values, axis=axis, keepdims=True)
    is_largest = values == largest
    count = np.sum(is_largest, axis=axis, keepdims=True, dtype=np.float64)
    rest = np.sum(np.exp(np.where(is_largest, -np.inf, values) - largest), axis=axis,
                  keepdims=True)
    rest = np.where(rest == 0, rest, rest / count)
    total = np.log1p(rest) + np.log(count) + largest
    size = values.size if axis is None else values.shape[axis]
    if axis is None:
        return float(total.reshape(())) - math.log(size)
    return np.squeeze(total, axis=axis) - math.log(size)
