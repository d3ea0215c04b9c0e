"""The Gaussian additive model of Şimşekli et al. (ICASSP 2016), a test
fixture for SGLD and STI: its evidence, and every power posterior, are
analytic.

.. math::

    x_n \\sim \\mathcal N\\big(\\textstyle\\sum_{r=1}^R \\theta_r, \\sigma_x^2\\big),
    \\qquad \\theta_r \\sim \\mathcal N(\\mu_\\theta, \\sigma_\\theta^2).

The likelihood depends on θ through s = Σ θ_r alone, a priori
N(R μθ, R σθ²), so x ~ N(R μθ 1, σx² I + R σθ² 1 1ᵀ).
"""

import numpy as np

from sklearn_pltf.inference._batches import RandomBatches, TargetGradient, subsampling_variance

MU, PRIOR_VAR, NOISE_VAR = 5.0, 3.0, 5.0


def draw_data(rng, n_components, n=5000):
    theta = rng.normal(MU, np.sqrt(PRIOR_VAR), size=n_components)
    return rng.normal(theta.sum(), np.sqrt(NOISE_VAR), size=n)


def log_evidence(x, n_components):
    """log N(x; R μθ 1, σx² I + R σθ² 1 1ᵀ), by Sherman–Morrison."""
    n, c = x.size, n_components * PRIOR_VAR
    d = x - n_components * MU
    quadratic = (d @ d - c * d.sum() ** 2 / (NOISE_VAR + n * c)) / NOISE_VAR
    log_det = n * np.log(NOISE_VAR) + np.log1p(n * c / NOISE_VAR)
    return -0.5 * (n * np.log(2 * np.pi) + log_det + quadratic)


def expected_log_likelihood(x, n_components, t):
    """E[log p(x | θ)] under the power posterior at temperature ``t``."""
    n = x.size
    precision = 1.0 / (n_components * PRIOR_VAR) + t * n / NOISE_VAR
    mean = (MU / PRIOR_VAR + t * x.sum() / NOISE_VAR) / precision
    spread = np.sum((x - x.mean()) ** 2) + n * ((x.mean() - mean) ** 2 + 1.0 / precision)
    return -0.5 * n * np.log(2 * np.pi * NOISE_VAR) - spread / (2 * NOISE_VAR)


class GaussianAdditiveTarget:
    """The model as an SGLD target (:mod:`sklearn_pltf.inference.sgld`)."""

    def __init__(self, x, n_components, batch_size=250):
        self.x, self.n_components = np.asarray(x, dtype=np.float64), n_components
        self.batches = RandomBatches(self.x.size, batch_size)

    def init(self, rng):
        return (rng.normal(MU, np.sqrt(PRIOR_VAR), size=self.n_components),)

    def draw_batch(self, rng):
        return self.batches.draw(rng)

    def _log_densities(self, x, s):
        return -0.5 * np.log(2 * np.pi * NOISE_VAR) - (x - s) ** 2 / (2 * NOISE_VAR)

    def gradient(self, params, batch, temperature, anchor=None):
        (theta,) = params
        index, scale = batch
        xb, s = self.x[index], theta.sum()
        reference_sum, reference_total, reference_gradient = anchor or (0.0, 0.0, None)
        # With the control variate around s₀ the gradient is exact: it is
        # linear in s (Baker et al. 2019).
        if reference_gradient is None:
            likelihood = scale * np.sum(xb - s) / NOISE_VAR
        else:
            likelihood = reference_gradient + scale * xb.size * (reference_sum - s) / NOISE_VAR
        gradient = -(theta - MU) / PRIOR_VAR + temperature * likelihood
        differences = self._log_densities(xb, s) - self._log_densities(xb, reference_sum)
        log_likelihood = reference_total + scale * np.sum(differences)
        return TargetGradient((gradient,), float(log_likelihood),
                              subsampling_variance(differences, scale), None)

    def curvature(self, params, temperature, allocated):
        """The Hessian's diagonal: 1/σθ² + t N / σx²."""
        return (np.full(self.n_components, 1.0 / PRIOR_VAR + temperature * self.x.size / NOISE_VAR),)

    def anchor(self, params):
        """(s₀, the log-likelihood at s₀, its gradient in s at s₀)."""
        reference_sum = float(params[0].sum())
        return (reference_sum, float(np.sum(self._log_densities(self.x, reference_sum))),
                float(np.sum(self.x - reference_sum)) / NOISE_VAR)


def variance_log_likelihood(x, n_components, t):
    """Var[log p(x | θ)] under the power posterior at ``t`` (the derivative
    in t of :func:`expected_log_likelihood`): with s ~ N(m, v),
    Var[(x̄ - s)²] = 2 v² + 4 (x̄ - m)² v."""
    n = x.size
    precision = 1.0 / (n_components * PRIOR_VAR) + t * n / NOISE_VAR
    mean = (MU / PRIOR_VAR + t * x.sum() / NOISE_VAR) / precision
    v = 1.0 / precision
    scale = n / (2 * NOISE_VAR)
    return scale**2 * (2 * v**2 + 4 * (x.mean() - mean) ** 2 * v)
