"""Tests of the exact BAM (CP topology) evidence by enumeration."""

import itertools
import math

import numpy as np
import pytest

from sklearn_pltf.evidence import _bam_exact
from sklearn_pltf.evidence._bam_exact import bam_exact_log_evidence


def _log_p_total(T, a, b):
    """Negative binomial log p(T): Poisson(T | lambda), lambda ~ Gamma(a, b)."""
    return (
        math.lgamma(a + T) - math.lgamma(a) - math.lgamma(T + 1)
        + a * math.log(b / (b + 1)) - T * math.log(b + 1)
    )


def _all_tensors(shape, T):
    """Every count tensor of `shape` whose entries sum to T."""
    n_cells = math.prod(shape)
    for tokens in itertools.combinations_with_replacement(range(n_cells), T):
        yield np.bincount(tokens, minlength=n_cells).reshape(shape)


@pytest.mark.parametrize("shape, T", [((3,), 4), ((2, 2), 4), ((2, 3, 2), 3)])
@pytest.mark.parametrize("R", [1, 2, 3])
@pytest.mark.parametrize("a", [0.5, 3.0])
def test_conditional_distribution_sums_to_one(shape, T, R, a):
    b = 0.7
    log_p_total = _log_p_total(T, a, b)
    total = sum(
        math.exp(bam_exact_log_evidence(X, R, concentration=a, rate=b) - log_p_total)
        for X in _all_tensors(shape, T)
    )
    assert total == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2), (2, 1, 3, 2)])
@pytest.mark.parametrize("a, b", [(1.0, None), (0.3, 2.0), (5.0, 0.1)])
def test_single_component_matches_dirichlet_multinomial(shape, a, b):
    X = np.random.default_rng(1).poisson(0.8, size=shape)
    T = int(X.sum())
    b_used = a / T if b is None else b
    # One component: the token's indices are independent across modes, each
    # mode a Dirichlet-multinomial with concentration a spread over I_n values.
    expected = _log_p_total(T, a, b_used) + math.lgamma(T + 1)
    expected -= sum(math.lgamma(x + 1) for x in X.ravel())
    for n, size in enumerate(shape):
        margin = X.sum(axis=tuple(m for m in range(X.ndim) if m != n))
        expected += math.lgamma(a) - math.lgamma(a + T)
        expected += sum(math.lgamma(a / size + x) - math.lgamma(a / size) for x in margin)
    assert bam_exact_log_evidence(X, 1, concentration=a, rate=b) == pytest.approx(
        expected, rel=1e-12, abs=1e-12
    )


def test_matches_simulation_of_generative_model():
    shape, T, R, a = (2, 2), 3, 2, 1.0
    n_draws = 200_000
    rng = np.random.default_rng(0)
    theta0 = rng.dirichlet(np.full(R, a / R), size=n_draws)  # (D, R)
    thetas = [rng.dirichlet(np.full(I, a / (R * I)), size=(n_draws, R)) for I in shape]

    def categorical(probs):  # one draw per row of probs (D, T, K)
        u = rng.random(probs.shape[:-1] + (1,))
        return np.minimum((u > np.cumsum(probs, axis=-1)).sum(axis=-1), probs.shape[-1] - 1)

    r = categorical(np.repeat(theta0[:, None, :], T, axis=1))  # (D, T)
    rows = np.arange(n_draws)[:, None]
    index = [categorical(theta[rows, r]) for theta in thetas]
    cell = np.ravel_multi_index(index, shape)  # (D, T)
    counts = np.zeros((n_draws, math.prod(shape)), dtype=np.int64)
    np.add.at(counts, (np.repeat(rows, T, axis=1), cell), 1)

    log_p_total = _log_p_total(T, a, 1.0)
    for X in _all_tensors(shape, T):
        p = math.exp(bam_exact_log_evidence(X, R, concentration=a, rate=1.0) - log_p_total)
        freq = np.mean(np.all(counts == X.ravel(), axis=1))
        # The frequency is Binomial(n_draws, p) / n_draws.  Under the model
        # P(|z| > 4) is about 6e-5 per tensor, so about 1e-3 over all 20 tensors
        # of this shape and total, while a wrong formula (e.g. a wrong Dirichlet
        # parameter or a missing multinomial coefficient) moves some p by many
        # standard errors (about 1e-3 here).
        assert abs(freq - p) < 4 * math.sqrt(p * (1 - p) / n_draws), X


def test_invariant_to_relabelling_indices_and_modes():
    rng = np.random.default_rng(2)
    X = rng.poisson(0.6, size=(3, 2, 4))
    X[0, 0, 0] = 2
    reference = bam_exact_log_evidence(X, 2, concentration=0.8)
    permuted = X[rng.permutation(3)][:, ::-1][:, :, rng.permutation(4)]
    assert bam_exact_log_evidence(permuted, 2, concentration=0.8) == pytest.approx(
        reference, abs=1e-10
    )
    # The model is also symmetric in the modes (each keeps its own size I_n).
    transposed = X.transpose(2, 0, 1)
    assert bam_exact_log_evidence(transposed, 2, concentration=0.8) == pytest.approx(
        reference, abs=1e-10
    )


def test_chunking_does_not_change_result(monkeypatch):
    X = np.array([[2, 1, 0], [1, 0, 3]])
    reference = bam_exact_log_evidence(X, 3, concentration=2.0)
    monkeypatch.setattr(_bam_exact, "_CHUNK_SIZE", 7)
    assert bam_exact_log_evidence(X, 3, concentration=2.0) == pytest.approx(reference, abs=1e-12)


def test_all_zero_tensor_with_rate():
    a, b = 1.5, 0.25
    result = bam_exact_log_evidence(np.zeros((2, 3)), 2, concentration=a, rate=b)
    assert isinstance(result, float)
    assert result == pytest.approx(a * math.log(b / (b + 1)), abs=1e-14)


@pytest.mark.parametrize(
    "X, kwargs, error, match",
    [
        ([[1, -1], [0, 2]], {}, ValueError, "negative"),
        ([[1, 0.5], [0, 2]], {}, ValueError, "non-integer"),
        ([[1, np.nan], [0, 2]], {}, ValueError, "NaN or infinite"),
        ([[1, np.inf], [0, 2]], {}, ValueError, "NaN or infinite"),
        (np.zeros((0, 2)), {}, ValueError, "non-empty"),
        (np.zeros((2, 2)), {}, ValueError, "rate must be given"),
        ([[1, 2]], {"n_components": 0}, ValueError, "n_components must be >= 1"),
        ([[1, 2]], {"n_components": 2.0}, TypeError, "n_components must be an integer"),
        ([[1, 2]], {"concentration": 0.0}, ValueError, "concentration must be finite and > 0"),
        ([[1, 2]], {"concentration": -1.0}, ValueError, "concentration must be finite and > 0"),
        ([[1, 2]], {"rate": 0.0}, ValueError, "rate must be finite and > 0"),
        ([[1, 2]], {"rate": -2.0}, ValueError, "rate must be finite and > 0"),
        # 3 * 6 = 18 allocations with R = 3; 6 ** 4 = 1296 with R = 2 below.
        ([[1, 2]], {"n_components": 3, "max_allocations": 17}, ValueError,
         r"18 allocations .*max_allocations=17"),
        (np.full((2, 2), 5), {"max_allocations": 1295}, ValueError,
         r"1296 allocations .*max_allocations=1295"),
        (np.full((10, 10), 50), {"n_components": 5}, ValueError, r"about 10\^"),
    ],
)
def test_input_validation(X, kwargs, error, match):
    kwargs = {"n_components": 2, **kwargs}
    n_components = kwargs.pop("n_components")
    with pytest.raises(error, match=match):
        bam_exact_log_evidence(X, n_components, **kwargs)


def test_allocation_limit_is_inclusive():
    # Exactly max_allocations allocations is allowed.
    X = np.full((2, 2), 5)
    assert np.isfinite(bam_exact_log_evidence(X, 2, max_allocations=1296))
