"""The VB/EM loop: SQUAREM's safeguard, and a stopping rule that keeps its
promise in nats."""

import numpy as np
import pytest

from sklearn_pltf import BayesianNMF, PoissonCP
from sklearn_pltf.inference._convergence import (distance_to_limit, objective_resolution,
                                                 rounding_allowance)


def test_distance_is_unknown_until_three_blocks_and_zero_at_a_repeat():
    assert distance_to_limit([-10.0, -5.0]) == np.inf
    assert distance_to_limit(list(-(0.5 ** np.arange(20)))) == np.inf  # 19 gains < 24
    assert distance_to_limit([-3.0, -2.0, -2.0]) == 0.0


@pytest.mark.parametrize("rate", [0.5, 0.9, 0.99])
def test_distance_covers_a_linear_tail(rate):
    """Gains shrinking by ``rate`` each iteration leave Δ ρ / (1 − ρ) to
    gain; the block estimate is at least that (and the last block's gain)."""
    gains = 10.0 * rate ** np.arange(30)  # the last still resolved beside the sum
    objectives = np.concatenate([[0.0], np.cumsum(gains)])
    left = 10.0 * rate**30 / (1 - rate)  # Σ of the gains not yet made
    estimate = distance_to_limit(list(objectives))
    assert estimate >= left * (1 - 1e-9)
    assert estimate <= max(left, gains[-8:].sum()) * 1.01


def test_gains_within_the_rounding_count_as_none():
    """A float32 bound at its fixed point moves up and down by its rounding:
    gains within ``resolution`` are no progress, larger ones still count;
    the rounding of N terms grows as √N, not N."""
    rng = np.random.default_rng(0)
    noise = list(-1e6 + rng.uniform(-0.05, 0.05, 30))
    assert distance_to_limit(noise) > 0.1  # above the default tol: never stops
    assert distance_to_limit(noise, resolution=0.2) == 0.0
    climbing = list(np.arange(30.0))  # one nat a step: beyond any rounding of 0.2
    assert distance_to_limit(climbing, resolution=0.2) == distance_to_limit(climbing)
    state = (np.ones(3, dtype=np.float32),)
    assert objective_resolution(state, -1e6, 10**6) == pytest.approx(
        4 * np.finfo(np.float32).eps * 1e6 / 1e3)
    assert objective_resolution((np.ones(3),), -1e6, 10**6) < 1e-12  # float64
    # A fall larger than every term's rounding in one direction is no rounding.
    falling = [-1e6, -1e6 + 5.0, -1e6 + 1.0]
    assert rounding_allowance(state, falling, None, tol=0.1) == pytest.approx(
        4 * np.finfo(np.float32).eps * 1e6)
    assert rounding_allowance((np.ones(3),), falling, None, tol=0.1) < 1e-8
    assert rounding_allowance(state, falling, None, tol=0) == 0.0


def test_gains_that_do_not_shrink_count_as_a_slow_tail():
    objectives = list(np.arange(30.0))  # one nat every iteration
    # a block of 8 nats, at the slowest rate the rule assumes (1 - 1e-3)
    assert distance_to_limit(objectives) == pytest.approx(8 * (1 - 1e-3) / 1e-3)


def _problems():
    rng = np.random.default_rng(3)
    W, H = rng.gamma(0.5, 1.0, (40, 3)), rng.gamma(0.5, 1.0, (3, 30))
    A, B, C = (rng.gamma(0.5, 1.0, (n, 3)) for n in (20, 15, 10))
    return {
        "nmf": (BayesianNMF, rng.poisson(3 * W @ H).astype(float)),
        "cp": (PoissonCP, rng.poisson(2 * np.einsum("ir,jr,kr->ijk", A, B, C)).astype(float)),
    }


@pytest.mark.parametrize("name", ["nmf", "cp"])
@pytest.mark.parametrize("acceleration", [None, "squarem", "anderson"])
def test_the_returned_bound_is_within_tol_of_the_runs_limit(name, acceleration):
    """At the default tol (0.1 nats) the bound is within tol of the same run
    continued until it repeats exactly (or 1e-9 nats)."""
    make, X = _problems()[name]
    settings = dict(n_components=3, random_state=0, acceleration=acceleration)
    fitted = make(**settings).fit(X)
    assert fitted.converged_
    continued = make(tol=1e-9, max_iter=100_000, **settings).fit(X)
    np.testing.assert_array_equal(continued.lower_bounds_[:fitted.n_iter_], fitted.lower_bounds_)
    assert 0.0 <= continued.lower_bounds_[-1] - fitted.lower_bounds_[-1] <= fitted.tol


@pytest.mark.parametrize("method", ["vb", "em"])
def test_squarem_reaches_the_plain_limit_in_fewer_sweeps(method):
    make, X = _problems()["nmf"]
    settings = dict(n_components=3, method=method, prior_shape=1.5, tol=1e-9, max_iter=100_000,
                    random_state=0)
    plain = make(acceleration=None, **settings).fit(X)
    accelerated = make(**settings).fit(X)
    # Both at the limit from the same start; 1e-6 relative covers EM's slow
    # tail (it gains ~1e-9 nats a sweep long before it is there).
    np.testing.assert_allclose(accelerated.lower_bounds_[-1], plain.lower_bounds_[-1], rtol=1e-6)
    # Sweeps until each is within 1e-6 nats of the plain limit (plain: about
    # 113-125, SQUAREM: 31-34). Not the sweeps to the stopping rule at
    # tol=1e-9: both then spend a tail at the bound's rounding, whose length
    # follows the CPU's vector kernels (SQUAREM's total was 64 sweeps with
    # AVX-512, 85 with AVX2, against plain's 166).
    limit = plain.lower_bounds_[-1]

    def first_within(bounds):
        return int(np.argmax(np.asarray(bounds) >= limit - 1e-6))

    plain_sweeps = 1 + first_within(plain.lower_bounds_)
    sweeps = 1 + 3 * first_within(accelerated.lower_bounds_)  # a first step, then cycles of three
    assert sweeps < plain_sweeps / 2


def test_a_refused_extrapolation_keeps_the_plain_steps(monkeypatch):
    """An extrapolation whose objective falls (here: forced, by scoring every
    extrapolated cycle at -inf) is replaced by the two plain steps, so the
    trajectory is then that of plain steps two at a time."""
    make, X = _problems()["nmf"]
    settings = dict(n_components=3, random_state=0, tol=0.0, max_iter=6)
    plain = make(acceleration=None, **dict(settings, max_iter=11)).fit(X)

    class Refusing:
        def __init__(self, kernel):
            self.kernel = kernel
            for member in ("init", "objective", "point", "moved", "priors_at", "advance"):
                setattr(self, member, getattr(kernel, member))

        def step(self, state, contractor, priors, with_objective=True):
            new, info = self.kernel.step(state, contractor, priors, with_objective)
            if with_objective:  # the step from the extrapolated point
                info = info._replace(objective=-np.inf)
            return new, info

    from sklearn_pltf.inference import _convergence

    original = _convergence.squarem_cycle

    def refusing_cycle(kernel, *args):
        return original(Refusing(kernel), *args)

    monkeypatch.setattr(_convergence, "squarem_cycle", refusing_cycle)
    refused = make(**settings).fit(X)
    # iteration 1: one step; each later iteration: two plain steps
    np.testing.assert_allclose(refused.lower_bounds_, plain.lower_bounds_[::2], rtol=1e-12)


def test_anderson_reaches_the_plain_limit_in_fewer_sweeps():
    """One sweep an iteration, and a secant step kept where the bound rose:
    the plain limit in under half the plain sweeps."""
    make, X = _problems()["nmf"]
    settings = dict(n_components=3, tol=1e-9, max_iter=100_000, random_state=0)
    plain = make(acceleration=None, **settings).fit(X)
    accelerated = make(acceleration="anderson", **settings).fit(X)
    np.testing.assert_allclose(accelerated.lower_bounds_[-1], plain.lower_bounds_[-1], rtol=1e-9)
    assert accelerated.n_iter_ < plain.n_iter_ / 2


@pytest.mark.parametrize("acceleration", ["squarem", "anderson"])
def test_an_em_zero_stays_zero_under_acceleration(acceleration):
    """EM's mode has exact zeros (here the row of W of an all-zero row of X,
    at prior shape 1): extrapolation in log-coordinates keeps them, where a
    secant step through finite stand-ins would make them positive."""
    make, X = _problems()["nmf"]
    X = X.copy()
    X[0] = 0.0
    est = make(n_components=3, method="em", random_state=0, acceleration=acceleration,
               max_iter=60, tol=0.0).fit(X)
    bounds = est.lower_bounds_
    assert np.all(est.factors_[0][0] == 0.0)
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[:-1]))


def test_acceleration_is_validated():
    with pytest.raises(ValueError, match="acceleration"):
        BayesianNMF(2, acceleration="nesterov").fit(np.ones((4, 3)))


@pytest.mark.parametrize("method", ["vb", "em"])
def test_extrapolation_leaves_fixed_factors_as_given(method):
    """Only the free factors are extrapolated: a fixed factor (here the
    convolutive model's kernel, with zeros) stays bit for bit what was given."""
    from sklearn_pltf import PLTF

    rng = np.random.default_rng(0)
    kernel = rng.gamma(1.0, size=(4, 40, 2))
    kernel[0, :5] = 0.0
    X = rng.poisson(3.0, size=40).astype(float)[None]
    est = PLTF("r,d,dtr->t", {"r": 2}, method=method, prior_shape=1.5, fixed_factors={2: kernel},
               random_state=0, max_iter=30, tol=0.0).fit(X[0])
    np.testing.assert_array_equal(est.factors_[2], kernel)
