"""log_average_exp: scipy's logsumexp, less the log of the count, bit for bit."""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_pltf.inference._log_average import log_average_exp


@pytest.mark.parametrize("seed", range(5))
def test_it_equals_scipy_s_logsumexp_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for size in (1, 2, 3, 7, 40):
        values = rng.normal(0.0, 30.0, size)
        values[-1] = values[0] if size > 2 and seed % 2 else values[-1]  # a tied largest term
        assert log_average_exp(values) == logsumexp(values) - math.log(size)
        assert log_average_exp(list(values)) == logsumexp(values) - math.log(size)
        table = rng.normal(0.0, 5.0, (6, size))
        np.testing.assert_array_equal(log_average_exp(table, axis=1),
                                      logsumexp(table, axis=1) - math.log(size))
        np.testing.assert_array_equal(log_average_exp(table, axis=0),
                                      logsumexp(table, axis=0) - math.log(6))


def test_it_holds_far_from_zero_and_at_ties():
    assert log_average_exp([-1e4, -1e4]) == -1e4
    assert log_average_exp([800.0, 800.0 + math.log(3.0)]) == pytest.approx(800.0 + math.log(2.0))
    assert log_average_exp([-np.inf, 0.0]) == -math.log(2.0)
