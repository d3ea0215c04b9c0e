"""The compiled Gamma kernels agree with scipy's special functions."""

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from sklearn_pltf.inference._gamma import digamma as fast_digamma
from sklearn_pltf.inference._gamma import gamma_bound_term, gamma_moments


def test_digamma_matches_scipy_across_scales():
    # Tiny arguments (ψ ~ -1/x), the root near 1.46, the switch to the series
    # at 10, and large arguments (ψ ~ log x).
    x = np.concatenate([np.logspace(-8, 8, 20001), np.linspace(0.5, 12.0, 20001)])
    expected = digamma(x)
    # Each recurrence step and the series term costs an ulp or so of the
    # largest intermediate, which is at most max(1, |ψ|) in size.
    np.testing.assert_array_less(np.abs(fast_digamma(x) - expected), 1e-14 * np.maximum(1.0, np.abs(expected)))


def test_digamma_keeps_the_shape():
    x = np.arange(1.0, 25.0).reshape(2, 3, 4)
    assert fast_digamma(x).shape == (2, 3, 4)
    np.testing.assert_allclose(fast_digamma(x), digamma(x), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("prior_shape", [0.1, 1.0, 3.0])
def test_moments_and_bound_term_match_the_textbook_formula(prior_shape, rng):
    shape = prior_shape + rng.gamma(1.0, 5.0, size=(40, 7))
    scale = rng.gamma(1.0, 0.3, size=(40, 7))
    a = np.full(shape.shape, prior_shape)
    r = rng.gamma(2.0, 1.0, size=shape.shape)
    mean, geometric, psi = gamma_moments(shape, scale)
    np.testing.assert_allclose(mean, shape * scale, rtol=1e-15)
    # Absolute near ψ's root at 1.46, where ψ is a difference of O(1) terms.
    np.testing.assert_allclose(psi, digamma(shape), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(geometric, np.exp(digamma(shape)) * scale, rtol=1e-14)

    normalizer = float(np.sum(a * np.log(r) - gammaln(a)))
    textbook = np.sum(
        (a - 1.0) * (digamma(shape) + np.log(scale)) - r * shape * scale + a * np.log(r) - gammaln(a)
        + shape + np.log(scale) + gammaln(shape) + (1.0 - shape) * digamma(shape)
    )
    assert gamma_bound_term(a, r, shape, scale, psi, normalizer) == pytest.approx(textbook, rel=1e-12)
