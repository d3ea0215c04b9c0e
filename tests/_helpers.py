"""Helpers shared by several test modules (no test module imports another):
test modules in any folder of ``tests/`` import them as ``from _helpers import
...`` (``tests/conftest.py`` puts ``tests/`` on ``sys.path``).

- The Gaussian additive model, a fixture for SGLD and STI whose evidence is
  analytic (``tests/evidence/test_sti.py``; ``doc/validation/sti_analytic.py``).
- Gaussian CP data and the evidence checks of the Gaussian NTF samplers
  (``tests/inference/test_gaussian*.py``).
- RESCAL data and the exact rank-one evidence
  (``tests/inference/relational/``, ``tests/estimators/test_tied_factors.py``).
- Counts for over-ranked fits, where a redundant component's plateau stops a
  run short (``tests/inference/test_stopping_rule.py``,
  ``tests/inference/test_moves.py``).
"""

import itertools

import numpy as np
from scipy.special import gammaln, logsumexp
from scipy.stats import gamma as gamma_distribution

from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference import gaussian
from sklearn_pltf.inference._batches import RandomBatches, TargetGradient, subsampling_variance
from sklearn_pltf.inference._cp_stats import CPStatistics


# --- The Gaussian additive model ---------------------------------------------
# The Gaussian additive model of Şimşekli et al. (ICASSP 2016), a test
# fixture for SGLD and STI: its evidence, and every power posterior, are
# analytic.
#
# .. math::
#
#     x_n \sim \mathcal N\big(\textstyle\sum_{r=1}^R \theta_r, \sigma_x^2\big),
#     \qquad \theta_r \sim \mathcal N(\mu_\theta, \sigma_\theta^2).
#
# The likelihood depends on θ through s = Σ θ_r alone, a priori
# N(R μθ, R σθ²), so x ~ N(R μθ 1, σx² I + R σθ² 1 1ᵀ).

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


# --- Gaussian CP data and the Gaussian NTF samplers' evidence checks ----------

def _cp(factors):
    return np.einsum("ir,jr,kr->ijk", *factors)


def _data(seed=0, shape=(8, 6, 5), rank=2, noise=0.5, missing=0.0, signed=False):
    """CP data with Gamma(2, 1) factors, or standard normal ones if ``signed``."""
    rng = np.random.default_rng(seed)
    factors = [rng.normal(0.0, 1.0, (s, rank)) if signed else rng.gamma(2.0, 1.0, (s, rank))
               for s in shape]
    X = _cp(factors) + rng.normal(0.0, noise, shape)
    if missing:
        X[rng.uniform(size=shape) < missing] = np.nan
    return X, factors


def _prior_monte_carlo_log_evidence(X, rank, priors, n_draws, seed):
    """log p(X) = log E_prior[p(X | A)], σ² integrated out in closed form
    (a Student-t likelihood), by plain Monte Carlo over prior draws of A
    (non-negative or signed, per column or under ARD, as ``priors`` say)."""
    from scipy.special import gammaln, logsumexp

    rng = np.random.default_rng(seed)
    n, k, theta = X.size, priors.noise_shape, priors.noise_scale
    chunk, sse = 250_000, []
    for _ in range(n_draws // chunk):  # in chunks, to bound the memory
        factors = []
        shared = (priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, (chunk, 1, rank))
                  if priors.ard else None)  # ARD: location 0, one v per component
        for size in X.shape:
            v = (shared if priors.ard else
                 priors.hyper_scale / rng.standard_gamma(priors.hyper_shape, (chunk, 1, rank)))
            if priors.ard:
                u = np.zeros((chunk, 1, rank))
            elif priors.nonnegative:
                u = gaussian.sample_standardised_location(rng, size, priors.hyper_precision,
                                                           (chunk, 1, rank))
            else:
                u = rng.standard_normal((chunk, 1, rank)) / np.sqrt(priors.hyper_precision)
            mu = u * np.sqrt(v)
            factors.append(gaussian.sample_elements(rng, np.broadcast_to(mu, (chunk, size, rank)),
                                                    np.broadcast_to(np.sqrt(v), (chunk, size, rank)),
                                                    priors))
        sse.append(((np.einsum("nir,njr,nkr->nijk", *factors) - X) ** 2).sum(axis=(1, 2, 3)))
    sse = np.concatenate(sse)
    log_lik = (-n / 2 * np.log(2 * np.pi) + gammaln(k + n / 2) - gammaln(k) + k * np.log(theta)
               - (k + n / 2) * np.log(theta + sse / 2))
    weights = np.exp(log_lik - log_lik.max())
    return logsumexp(log_lik) - np.log(sse.size), weights.std() / weights.mean() / np.sqrt(sse.size)


def assert_chib_matches(X, priors, reference, reference_error, max_standard_error):
    """Chib's estimate at rank 2 (3000 draws after 300 warm-up sweeps) has a
    standard error below ``max_standard_error`` and lies within 3 combined
    standard errors of ``reference`` (each reports its own)."""
    from sklearn_pltf.evidence._gaussian_chib import gaussian_chib_log_evidence

    stats = CPStatistics(as_observed_tensor(X, allow_negative=True))
    estimate = gaussian_chib_log_evidence(np.random.default_rng(2), stats, 2, priors,
                                          n_draws=3000, n_warmup=300)
    assert 0 < estimate.standard_error < max_standard_error
    assert abs(estimate.log_evidence - reference) < 3 * np.hypot(estimate.standard_error,
                                                                 reference_error)


# --- RESCAL data and its exact rank-one evidence -----------------------------

def _rescal_data(rng, n_entities, n_relations, rank, likelihood, scale=1.0):
    """Data drawn from the model: A, G ~ Gamma(1, 1) scaled, then Poisson or
    Bernoulli–Poisson; the diagonal set to 0 (it is not modelled)."""
    a = rng.gamma(1.0, scale, size=(n_entities, rank))
    g = rng.gamma(1.0, scale, size=(rank, rank, n_relations))
    counts = rng.poisson(np.einsum("ia,jb,abk->ijk", a, a, g)).astype(float)
    counts[np.arange(n_entities), np.arange(n_entities)] = 0
    return (counts > 0).astype(float) if likelihood == "bernoulli" else counts


def _exact_rank_one(X, likelihood, n_grid=100):
    """log p(X) for one relation at rank 1 under Gamma(1, 1) priors:
    X̂(i, j) = a_i a_j g off the diagonal. g is integrated in closed form
    (for binary data after inclusion–exclusion over the ones, which turns
    each term into a Poisson zero-probability), each a_i on a grid in log a,
    where the integrand is smooth and decays fast at both ends, so the
    trapezoid rule converges geometrically (raising n_grid from 100 to 220
    changes the result by below 1e-12 on the matrices below)."""
    n = X.shape[0]
    off = [(i, j) for i in range(n) for j in range(n) if i != j]
    t = np.linspace(-30.0, 5.0, n_grid)
    a = np.exp(t)
    log_weight = gamma_distribution.logpdf(a, 1.0) + t + np.log(t[1] - t[0])  # da = a dt
    grid = np.meshgrid(*([a] * n), indexing="ij")
    log_prior = sum(np.meshgrid(*([log_weight] * n), indexing="ij"))
    rate = {(i, j): grid[i] * grid[j] for i, j in off}
    if likelihood == "poisson":
        total = sum(X[e] for e in off)
        log_f = sum(X[e] * np.log(rate[e]) - gammaln(X[e] + 1) for e in off)
        log_f = log_f + gammaln(1.0 + total) - (1.0 + total) * np.log(1.0 + sum(rate.values()))
        return float(logsumexp(log_f + log_prior))
    ones = [e for e in off if X[e] == 1]
    zeros = sum((rate[e] for e in off if X[e] == 0), np.zeros_like(grid[0]))
    terms, signs = [], []
    for size in range(len(ones) + 1):
        for subset in itertools.combinations(ones, size):
            exposure = zeros + sum((rate[e] for e in subset), np.zeros_like(grid[0]))
            terms.append(-np.log1p(exposure) + log_prior)
            signs.append((-1.0) ** size)
    return float(logsumexp(np.stack(terms), b=np.reshape(signs, (-1,) + (1,) * n)))


BINARY = np.array([[0, 1, 0], [1, 0, 1], [1, 0, 0]], dtype=float)
COUNTS = np.array([[0, 2, 0], [1, 0, 3], [1, 0, 0]], dtype=float)


# --- Counts for over-ranked fits ---------------------------------------------
def over_ranked_counts(seed):
    """``{r: 120 x 40 counts of an NMF of rank r, for r = 1, 2, 3; "cp":
    30 x 20 x 15 counts of a rank-2 CP}``, drawn in that order from
    ``default_rng(100 + seed)``."""
    rng = np.random.default_rng(100 + seed)
    data = {}
    for r in (1, 2, 3):
        W, H = rng.gamma(1.0, 1.0, (120, r)), rng.gamma(1.0, 1.0, (r, 40))
        data[r] = rng.poisson(3 * W @ H / r).astype(float)
    A, B, C = (rng.gamma(1.0, 1.0, (n, 2)) for n in (30, 20, 15))
    data["cp"] = rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C)).astype(float)
    return data
