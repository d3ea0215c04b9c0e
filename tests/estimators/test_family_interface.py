"""doc/contributing.rst's recipe for a model family ("Adding a model
family"), shown with a test-only one that plugs in touching no package file:
its kernel (the optimiser's :class:`OptimizerKernel`), its name in the table
of families and in the rows of the methods it offers, and an estimator that
plans the fit, calls the driver once and sets what it returns.

The family: i.i.d. counts x_n ~ Poisson(λ), λ ~ Gamma(a, b). q(λ) = Gamma is
the exact posterior, so VB's bound is the exact log evidence."""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest
from scipy.special import digamma, gammaln
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import InvalidParameterError, StrOptions

from sklearn_pltf.estimators._fitting import fit_by_optimizer, set_fitted
from sklearn_pltf.inference import _states
from sklearn_pltf.inference._driver import OptimizerKernel, OptimizerProblem, Settings
from sklearn_pltf.inference._methods import (EVIDENCE, FAMILIES, METHODS, FamilyMethods,
                                             capability_table, choose_evidence, method_in)


class RateState(NamedTuple):
    """q(λ) = Gamma(shape, rate)."""

    shape: np.ndarray
    rate: np.ndarray


class RateData(NamedTuple):
    """What the steps read: the counts' sum and number, and Σ log x!."""

    total: float
    n: int
    log_factorials: float


class RateKernel:
    """VB for one Poisson rate under a Gamma(a, b) prior (``priors``: (a, b)).
    It learns none of its priors: point, moved, priors_at and advance are
    the shared ones."""

    point = staticmethod(_states.point)
    moved = staticmethod(_states.moved)
    priors_at = staticmethod(_states.priors_at)
    advance = staticmethod(_states.advance)

    def init(self, rng, data, priors):
        return RateState(np.array(rng.gamma(1.0)), np.array(1.0))

    def step(self, state, data, priors, with_objective=True):
        a, b = priors
        new = RateState(np.array(a + data.total), np.array(b + data.n))
        return new, _states.VBInfo(self.objective(new, data, priors) if with_objective else None)

    def objective(self, state, data, priors):
        """E log p(x | λ) + E log p(λ) − E log q(λ)."""
        a, b = priors
        shape, rate = float(state.shape), float(state.rate)
        mean, log_mean = shape / rate, digamma(shape) - np.log(rate)
        likelihood = data.total * log_mean - data.n * mean - data.log_factorials
        prior = a * np.log(b) - gammaln(a) + (a - 1) * log_mean - b * mean
        entropy = shape - np.log(rate) + gammaln(shape) + (1 - shape) * digamma(shape)
        return float(likelihood + prior + entropy)


class PoissonRate(BaseEstimator):
    """The family's estimator: parameters, the plan, one driver call, the
    attributes set from the result."""

    _parameter_constraints = {"method": [StrOptions(FamilyMethods("rate"))]}

    def __init__(self, method="vb", prior_shape=2.0, prior_rate=1.0):
        self.method = method
        self.prior_shape = prior_shape
        self.prior_rate = prior_rate

    def fit(self, X, y=None):
        self._validate_params()
        method = method_in(self.method, "rate")
        evidence = choose_evidence(self.method, "auto", "rate")
        x = np.asarray(X, dtype=float).ravel()
        data = RateData(x.sum(), x.size, gammaln(x + 1).sum())
        kernel = method.kernel
        problem = OptimizerProblem(kernel, data, (self.prior_shape, self.prior_rate),
                                   start=lambda rng, restart, data: kernel.init(rng, data, None))
        result = fit_by_optimizer(problem, np.random.default_rng(0).spawn(1),
                                  Settings(max_iter=20, tol=1e-9, acceleration=None))
        set_fitted(self, {"rate_": float(result.state.shape / result.state.rate),
                          "n_iter_": len(result.objectives), "converged_": result.converged,
                          **({"log_evidence_": result.objectives[-1]} if evidence else {})})
        return self


def exact_log_evidence(x, a, b):
    """log ∫ Π Poisson(x_n | λ) Gamma(λ | a, b) dλ."""
    total, n = x.sum(), x.size
    return float(a * np.log(b) - gammaln(a) + gammaln(a + total) - (a + total) * np.log(b + n)
                 - gammaln(x + 1).sum())


@pytest.fixture
def rate_family(monkeypatch):
    """The family plugged in: its name in FAMILIES, VB's row (and its
    bound's) naming it, with the family's kernel."""
    monkeypatch.setitem(FAMILIES, "rate", ("one Poisson rate", "PoissonRate"))
    monkeypatch.setitem(METHODS, "vb", dataclasses.replace(
        METHODS["vb"], families=METHODS["vb"].families | {"rate"}))
    monkeypatch.setitem(EVIDENCE, "vb", dataclasses.replace(
        EVIDENCE["vb"], families=EVIDENCE["vb"].families | {"rate"}))
    kernel = RateKernel()
    # A family with kernels of its own keeps them by method name in its
    # folder; this one-method family gives VB's row its kernel for the test.
    monkeypatch.setitem(METHODS, "vb", dataclasses.replace(METHODS["vb"], kernel=kernel))
    return kernel


def test_the_family_kernel_has_the_declared_interface():
    assert isinstance(RateKernel(), OptimizerKernel)


def test_a_family_plugs_in_through_the_tables(rate_family):
    x = np.random.default_rng(3).poisson(4.0, 50)
    est = PoissonRate().fit(x)
    assert est.converged_
    assert est.log_evidence_ == pytest.approx(exact_log_evidence(x, 2.0, 1.0), abs=1e-9)
    assert est.rate_ == pytest.approx((2.0 + x.sum()) / (1.0 + x.size))
    assert "PoissonRate" in capability_table()
    with pytest.raises(InvalidParameterError, match="method"):
        PoissonRate(method="gibbs").fit(x)  # a method whose row does not name the family
    with pytest.raises(ValueError, match="one Poisson rate"):
        method_in("em", "rate")
