"""The vectorisable logarithm of the dense passes against numpy's."""

import math

import numba
import numpy as np

from sklearn_pltf.engine._log import log_positive


@numba.njit
def _logs(values):
    out = np.empty_like(values)
    for i in range(values.size):
        out[i] = log_positive(values[i])
    return out


def test_within_one_unit_in_the_last_place_of_numpys_log(rng):
    sqrt2 = math.sqrt(2.0)
    edges = [np.finfo(float).tiny, np.finfo(float).max, 1.0, 2.0, 0.5, 3.0, 1e-300,
             np.nextafter(sqrt2, 0.0), sqrt2, np.nextafter(sqrt2, 2.0),
             np.nextafter(sqrt2 / 2, 0.0), sqrt2 / 2, np.nextafter(1.0, 0.0), np.nextafter(1.0, 2.0)]
    values = np.concatenate([edges, np.logspace(-307.6, 308.2, 100_001),
                             rng.uniform(0.5, 2.0, 100_000), rng.gamma(2.0, 10.0, 100_000)])
    ours, numpys = _logs(values), np.log(values)
    ulps = np.abs(ours - numpys) / np.spacing(np.maximum(np.abs(numpys), np.finfo(float).tiny))
    assert ulps.max() <= 1.0
    assert ours[2] == 0.0  # log 1 exactly


def test_infinity_and_nan_pass_through():
    ours = _logs(np.array([np.inf, np.nan]))
    assert ours[0] == np.inf and np.isnan(ours[1])
