"""Tests for the exact enumeration of the Poisson--Gamma NMF evidence.

The exact value is checked against things computed by different routes:
plain Monte Carlo over the prior, 2-D quadrature of the original integral,
the Poisson superposition property, normalisation over the sample space and
the row/column symmetry of the model.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln, hyperu, xlogy

from sklearn_pltf.evidence import exact_log_evidence
from sklearn_pltf.evidence._exact import _log_t_integral

# Monte Carlo settings: 2e6 prior draws, in chunks to bound memory.
N_DRAWS = 2_000_000
CHUNK = 250_000
# Agreement required between exact and Monte Carlo, in standard errors.  With
# a correct implementation the MC error of the log estimate is approximately
# Normal(0, se^2) (CLT on a bounded summand, delta method for the log), so a
# 5-se band fails spuriously with probability ~6e-7; the seeds are fixed anyway.
N_SE = 5.0


def _monte_carlo_log_evidence(X, n_components, shape, rate, rng, W=None, H=None):
    """log p(X) by averaging p(X | W, H) over prior draws of the random factors.

    Returns ``(estimate, standard_error)`` where the standard error of the
    log of the sample mean m is, by the delta method, sd(p) / (sqrt(n) m).
    p(X | W, H) <= 1, so its variance is finite and the CLT applies.
    """
    X = np.asarray(X, dtype=float)
    n_rows, n_columns = X.shape
    log_likelihoods = []
    for _ in range(N_DRAWS // CHUNK):
        if W is None:
            W_draw = rng.gamma(shape[0], 1.0 / rate[0], size=(CHUNK, n_rows, n_components))
        else:
            W_draw = np.broadcast_to(W, (CHUNK, *W.shape))
        if H is None:
            H_draw = rng.gamma(
                shape[1], 1.0 / rate[1], size=(CHUNK, n_components, n_columns)
            )
        else:
            H_draw = np.broadcast_to(H, (CHUNK, *H.shape))
        rates = np.einsum("nik,nkj->nij", W_draw, H_draw)
        log_likelihoods.append(
            (xlogy(X, rates) - rates - gammaln(X + 1.0)).sum(axis=(1, 2))
        )
    log_likelihoods = np.concatenate(log_likelihoods)
    peak = log_likelihoods.max()
    scaled = np.exp(log_likelihoods - peak)
    mean = scaled.mean()
    standard_error = scaled.std(ddof=1) / (math.sqrt(scaled.size) * mean)
    return peak + math.log(mean), standard_error


def _assert_agrees_with_monte_carlo(exact, estimate, standard_error):
    difference = exact - estimate
    assert abs(difference) < N_SE * standard_error, (
        f"exact {exact:.6f} vs MC {estimate:.6f}: difference {difference:.2e} nats "
        f"= {difference / standard_error:.2f} standard errors ({standard_error:.2e})"
    )


# --------------------------------------------------------------------------
# 1. Both factors random: Monte Carlo and quadrature
# --------------------------------------------------------------------------

X_SMALL = np.array([[2, 0], [1, 3]])  # total 6
PRIOR_SHAPE = (1.5, 0.8)
PRIOR_RATE = (1.0, 2.0)


@pytest.mark.parametrize("n_components, seed", [(1, 0), (2, 1)])
def test_both_random_matches_prior_monte_carlo(n_components, seed):
    exact = exact_log_evidence(
        X_SMALL, n_components, prior_shape=PRIOR_SHAPE, prior_rate=PRIOR_RATE
    )
    estimate, se = _monte_carlo_log_evidence(
        X_SMALL, n_components, PRIOR_SHAPE, PRIOR_RATE, np.random.default_rng(seed)
    )
    # The MC must be precise enough for the check to mean something: 5 se is
    # at most a few percent of p(X).
    assert se < 0.01
    _assert_agrees_with_monte_carlo(exact, estimate, se)


def test_monte_carlo_check_detects_a_wrong_number_of_components():
    # Guard against a vacuous comparison: K=1 and K=2 evidences must differ
    # by many standard errors, so the MC check above can tell them apart.
    exact_1 = exact_log_evidence(X_SMALL, 1, prior_shape=PRIOR_SHAPE, prior_rate=PRIOR_RATE)
    estimate_2, se = _monte_carlo_log_evidence(
        X_SMALL, 2, PRIOR_SHAPE, PRIOR_RATE, np.random.default_rng(1)
    )
    assert abs(exact_1 - estimate_2) > 10 * N_SE * se


@pytest.mark.parametrize("count", [0, 3])
def test_single_entry_matches_double_quadrature(count):
    shape_W, shape_H, rate_W, rate_H = 2.0, 1.5, 1.0, 2.0
    log_norm_W = shape_W * math.log(rate_W) - math.lgamma(shape_W)
    log_norm_H = shape_H * math.log(rate_H) - math.lgamma(shape_H)

    def joint(h, w):
        # Poisson(count; w h) Gamma(w) Gamma(h), written out in logs.
        rate = w * h
        if w <= 0.0 or h <= 0.0:
            return 0.0
        return math.exp(
            count * math.log(rate) - rate - math.lgamma(count + 1.0)
            + log_norm_W + (shape_W - 1.0) * math.log(w) - rate_W * w
            + log_norm_H + (shape_H - 1.0) * math.log(h) - rate_H * h
        )

    value, error = integrate.dblquad(
        joint, 0.0, np.inf, 0.0, np.inf, epsabs=0.0, epsrel=1e-10
    )
    assert error < 1e-8 * value
    exact = exact_log_evidence(
        [[count]], 1, prior_shape=(shape_W, shape_H), prior_rate=(rate_W, rate_H)
    )
    assert exact == pytest.approx(math.log(value), abs=1e-8)


@pytest.mark.parametrize(
    "power, decay, offset, exponent",
    [(1.5, 1.0, 1.0, 2.0), (7.3, 0.5, 2.0, 10.0), (3.0, 5.0, 5.0, 1.0), (0.2, 3.0, 0.1, 1.1)],
)
def test_t_integral_matches_confluent_hypergeometric_closed_form(
    power, decay, offset, exponent
):
    # For a single row, substituting t = offset x gives
    # int t^(p-1) e^(-d t) (o + t)^(-e) dt = o^(p-e) Gamma(p) U(p, p-e+1, d o).
    closed_form = (
        (power - exponent) * math.log(offset)
        + math.lgamma(power)
        + math.log(hyperu(power, power - exponent + 1.0, decay * offset))
    )
    assert _log_t_integral(power, decay, offset, np.array([exponent])) == pytest.approx(
        closed_form, abs=1e-10
    )


@pytest.mark.parametrize(
    "power, decay, offset, exponents",
    [(4.6, 2.0, 1.0, [1.5, 2.5, 4.5]), (40.0, 1.0, 1.0, [45.0]), (12.0, 0.3, 3.0, [2.0, 9.0])],
)
def test_t_integral_matches_direct_quadrature(power, decay, offset, exponents):
    # Integrate in the original variable t, split at the mode of the
    # integrand, as an independent route (power >= 1: no singularity at 0).
    exponents = np.asarray(exponents)

    def integrand(t):
        return t ** (power - 1.0) * math.exp(-decay * t) * np.prod((offset + t) ** -exponents)

    # Scale out the peak value so quad sees O(1) numbers.
    grid = np.linspace(1e-6, 10 * power / decay, 20_001)
    mode = grid[np.argmax([integrand(t) for t in grid])]
    scale = integrand(mode)
    pieces = [
        integrate.quad(
            lambda t: integrand(t) / scale, a, b, epsabs=0.0, epsrel=1e-13, limit=500
        )[0]
        for a, b in [(0.0, mode), (mode, np.inf)]
    ]
    reference = math.log(scale) + math.log(sum(pieces))
    assert _log_t_integral(power, decay, offset, exponents) == pytest.approx(
        reference, abs=1e-9
    )


# --------------------------------------------------------------------------
# 2. One factor fixed: Monte Carlo over the other
# --------------------------------------------------------------------------

W_FIXED = np.array([[0.7, 2.0], [1.3, 0.4]])
H_FIXED = np.array([[1.1, 0.2], [0.5, 1.7]])


@pytest.mark.parametrize("fixed_index, seed", [(0, 2), (1, 3)])
def test_one_fixed_factor_matches_monte_carlo(fixed_index, seed):
    fixed = {0: W_FIXED} if fixed_index == 0 else {1: H_FIXED}
    exact = exact_log_evidence(
        X_SMALL, prior_shape=PRIOR_SHAPE, prior_rate=PRIOR_RATE, fixed_factors=fixed
    )
    estimate, se = _monte_carlo_log_evidence(
        X_SMALL,
        2,
        PRIOR_SHAPE,
        PRIOR_RATE,
        np.random.default_rng(seed),
        W=fixed.get(0),
        H=fixed.get(1),
    )
    assert se < 0.01
    _assert_agrees_with_monte_carlo(exact, estimate, se)


# --------------------------------------------------------------------------
# 3. Both fixed: Poisson superposition
# --------------------------------------------------------------------------


def test_both_fixed_is_poisson_log_likelihood():
    rng = np.random.default_rng(4)
    W = rng.gamma(1.0, 1.0, size=(2, 3))
    H = rng.gamma(1.0, 1.0, size=(3, 3))
    X = np.array([[2, 0, 1], [1, 3, 0]])
    expected = stats.poisson.logpmf(X, W @ H).sum()
    got = exact_log_evidence(X, 3, fixed_factors={0: W, 1: H})
    assert isinstance(got, float)
    assert got == pytest.approx(expected, abs=1e-10)


def test_both_fixed_impossible_count_gives_minus_infinity():
    W = np.array([[0.0, 0.0], [1.0, 2.0]])  # first row has zero rate
    H = np.array([[1.0, 0.5], [0.3, 1.0]])
    assert exact_log_evidence([[0, 0], [1, 2]], fixed_factors={0: W, 1: H}) == (
        pytest.approx(stats.poisson.logpmf([[0, 0], [1, 2]], W @ H).sum(), abs=1e-10)
    )
    assert exact_log_evidence([[1, 0], [1, 2]], fixed_factors={0: W, 1: H}) == -np.inf


# --------------------------------------------------------------------------
# 4. Normalisation over the sample space
# --------------------------------------------------------------------------


def _tail_bound(n, rate_squared, n_components):
    """Upper bound on P(X_ij >= n) for Gamma(1, b) priors on both factors.

    With lambda = sum_k W_k H_k, E[(X)_m] = E[lambda^m] (Poisson factorial
    moments) and (sum of K terms)^m <= K^(m-1) sum of m-th powers, so
    E[lambda^m] <= K^m (m!)^2 / b^(2m).  Markov on the falling factorial
    (X)_m, which is >= (n)_m whenever X >= n, gives
    P(X >= n) <= E[(X)_m] / (n)_m; take the best m.
    """
    return min(
        n_components**m * math.factorial(m) ** 2 / (rate_squared**m * math.perm(n, m))
        for m in range(1, n + 1)
    )


def test_evidence_sums_to_one_over_sample_space():
    rate, n_components, max_count = 5.0, 2, 20
    total = math.fsum(
        math.exp(
            exact_log_evidence(
                [[a, b]], n_components, prior_shape=1.0, prior_rate=rate
            )
        )
        for a in range(max_count + 1)
        for b in range(max_count + 1)
    )
    # Mass outside the box, by a union bound over the two entries: ~2e-10.
    outside = 2 * _tail_bound(max_count + 1, rate**2, n_components)
    assert outside < 1e-9
    assert 1.0 - outside - 1e-9 <= total <= 1.0 + 1e-9


# --------------------------------------------------------------------------
# 5. Transpose symmetry
# --------------------------------------------------------------------------


def test_transpose_with_swapped_priors_gives_same_evidence():
    # The numerical integral runs over a different factor after transposing,
    # so agreement checks the analytic/numeric split, not just bookkeeping.
    X = np.array([[1, 0, 2], [3, 1, 0]])
    shape, rate = (1.5, 0.7), (2.0, 0.5)
    direct = exact_log_evidence(X, 2, prior_shape=shape, prior_rate=rate)
    transposed = exact_log_evidence(
        X.T, 2, prior_shape=shape[::-1], prior_rate=rate[::-1]
    )
    assert direct == pytest.approx(transposed, abs=1e-9)
    # ...and the priors do matter, so the comparison is not vacuous.
    unswapped = exact_log_evidence(X.T, 2, prior_shape=shape, prior_rate=rate)
    assert abs(direct - unswapped) > 1e-2


def test_transpose_with_fixed_factor_gives_same_evidence():
    X = np.array([[1, 0, 2], [3, 1, 0]])
    W = np.array([[0.5, 1.2], [2.0, 0.3]])
    direct = exact_log_evidence(X, prior_shape=(3.0, 0.6), prior_rate=(9.0, 1.5),
                                fixed_factors={0: W})
    transposed = exact_log_evidence(X.T, prior_shape=(0.6, 3.0), prior_rate=(1.5, 9.0),
                                    fixed_factors={1: W.T})
    assert direct == pytest.approx(transposed, abs=1e-12)


# --------------------------------------------------------------------------
# 6. Input validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([1, 2]), "2-D"),
        (np.ones((2, 2, 2)), "2-D"),
        (np.array([[1, -1]]), "negative"),
        (np.array([[1.5, 2.0]]), "non-integer"),
        (np.array([[1.0, np.nan]]), "NaN or infinite"),
        (np.array([[1.0, np.inf]]), "NaN or infinite"),
        (np.zeros((0, 3)), "empty"),
        (np.array([["a", "b"]]), "numeric"),
    ],
)
def test_bad_counts_raise(X, match):
    with pytest.raises(ValueError, match=match):
        exact_log_evidence(X, 2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({}, "n_components is required"),
        ({"n_components": 0}, "n_components must be >= 1"),
        ({"n_components": 1.5}, "n_components must be an integer"),
        ({"n_components": 2, "prior_shape": 0.0}, "prior_shape must be finite and > 0"),
        ({"n_components": 2, "prior_rate": (1.0, -1.0)}, "prior_rate must be finite and > 0"),
        ({"n_components": 2, "prior_rate": (1.0, 2.0, 3.0)}, "prior_rate must be a scalar or"),
        (
            {"n_components": 3, "fixed_factors": {0: np.ones((2, 2))}},
            "disagrees with the fixed factor",
        ),
        ({"fixed_factors": {0: np.ones((3, 2))}}, r"W \(fixed_factors\[0\]\) must have shape"),
        ({"fixed_factors": {1: np.ones((2, 5))}}, r"H \(fixed_factors\[1\]\) must have shape"),
        ({"fixed_factors": {0: -np.ones((2, 2))}}, r"W \(fixed_factors\[0\]\) contains negative"),
        (
            {"fixed_factors": {1: np.full((2, 2), np.nan)}},
            r"H \(fixed_factors\[1\]\) contains NaN",
        ),
        ({"fixed_factors": {0: np.ones((2, 2)), 1: np.ones((3, 2))}}, "disagree on the number"),
        ({"fixed_factors": {2: np.ones((2, 2))}}, "keys must be 0"),
        ({"n_components": 2, "fixed_factors": [np.ones((2, 2))]}, "must be None or a dict"),
        ({"n_components": 2, "max_allocations": 0}, "max_allocations must be a positive"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        exact_log_evidence(np.array([[1, 2], [0, 3]]), **kwargs)


def test_too_many_allocations_raises_and_limit_is_inclusive():
    X = np.array([[10, 10]])  # C(12, 2)^2 = 4356 allocations with K=3
    with pytest.raises(ValueError, match="4356 allocations.*max_allocations=4355"):
        exact_log_evidence(X, 3, max_allocations=4355)
    assert np.isfinite(exact_log_evidence(X, 3, max_allocations=4356))
