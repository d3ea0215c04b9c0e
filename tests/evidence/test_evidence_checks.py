"""No silent impossible evidence: a non-finite estimate, or one above what any
Poisson model can give the data, raises with what to change, and the failed
fit leaves the estimator as it was."""

import warnings

import numpy as np
import pytest
import sparse
from scipy.stats import poisson

from sklearn_pltf import AllocationSMC, BayesianNMF, GibbsNTF, PoissonCP
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.evidence import exact_log_evidence
from sklearn_pltf.evidence._checks import check_log_evidence, saturated_log_likelihood


def test_saturated_log_likelihood_is_each_entry_at_its_own_rate():
    rng = np.random.default_rng(0)
    X = rng.poisson(1.5, size=(6, 5)).astype(float)
    X[0, 0] = np.nan  # missing: no term
    observed = X[~np.isnan(X)]
    expected = poisson.logpmf(observed, np.maximum(observed, 1e-300)).sum()
    dense = saturated_log_likelihood(as_observed_tensor(X))
    np.testing.assert_allclose(dense, expected, rtol=1e-12)
    filled = np.nan_to_num(X)
    sparse_value = saturated_log_likelihood(
        as_observed_tensor(sparse.COO.from_numpy(filled), mask=~np.isnan(X)))
    np.testing.assert_allclose(sparse_value, dense, rtol=1e-12)
    assert dense < 0


@pytest.mark.parametrize("rank", [1, 2])
def test_exact_evidence_lies_below_the_saturated_bound(rank):
    X = np.array([[2, 0, 1], [1, 3, 0]], dtype=float)
    bound = saturated_log_likelihood(as_observed_tensor(X))
    assert exact_log_evidence(X, rank) < bound


def test_check_raises_on_non_finite_and_impossible_values():
    for value in (np.nan, np.inf, -np.inf):
        with pytest.raises(FloatingPointError, match="raise prior_shape"):
            check_log_evidence(value, advice="raise prior_shape")
    # Four standard errors above the bound is not noise; three may be, but
    # log p(X) cannot take the value: the bound is returned, with a warning.
    with pytest.warns(RuntimeWarning, match="-10 is returned instead"):
        assert check_log_evidence(-7.0, standard_error=1.0, upper_bound=-10.0) == -10.0
    assert check_log_evidence(-10.0, standard_error=1.0, upper_bound=-10.0) == -10.0
    with pytest.raises(FloatingPointError, match="impossible.*more particles"):
        check_log_evidence(-5.9, standard_error=1.0, upper_bound=-10.0, advice="more particles")
    with pytest.raises(FloatingPointError, match="impossible"):
        check_log_evidence(4.5e41, upper_bound=-1000.0)


@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_chib_with_a_tiny_prior_shape_raises_and_keeps_the_previous_fit(method):
    """Gamma(0.001) draws underflow to exactly 0, where the density is
    infinite, so Chib's estimate is NaN; the error names prior_shape."""
    X = np.random.default_rng(0).poisson(2.0, size=(15, 10)).astype(float)
    est = BayesianNMF(2, random_state=0).fit(X)
    before = dict(est.__dict__)
    est.set_params(method=method, evidence="chib", prior_shape=1e-3, n_warmup=20, n_draws=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError, match="prior_shape"):
            est.fit(X)
    assert est.__dict__.keys() == before.keys()
    fitted = [k for k in before if k not in est.get_params()]
    assert "log_evidence_" in fitted
    assert all(est.__dict__[k] is before[k] for k in fitted)


@pytest.mark.parametrize("method", [
    "gibbs",
    # Known limitation: under this prior the posterior has many modes (VB
    # restarts' bounds span 68 nats on these data), and AIS started at a VB
    # fit of one of them stays there: its runs agree, so it neither warns nor
    # finds the higher modes (strict: this fails once AIS says so). The user
    # guide states the limit and what to do.
    pytest.param("vb", marks=pytest.mark.xfail(
        strict=True, reason="AIS from a VB fit of one mode of a multimodal posterior neither "
                            "mixes between the modes nor warns")),
])
@pytest.mark.slow(minutes=0.2)
def test_ais_with_a_tiny_prior_shape_warns_with_what_to_change(method):
    """The same prior by AIS: its draws are taken in log space and stay
    finite, but the evidence then hangs on rare runs, and the estimate says
    so rather than passing as a sound number."""
    X = np.random.default_rng(0).poisson(2.0, size=(15, 10)).astype(float)
    est = BayesianNMF(2, method=method, evidence="ais", prior_shape=1e-3, n_warmup=20,
                      n_draws=40, random_state=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "divide by zero", RuntimeWarning)
        with pytest.warns(RuntimeWarning, match="runs carry the weight.*more temperatures"):
            est.fit(X)
    assert np.isfinite(est.log_evidence_)


def test_sti_above_the_saturated_bound_raises():
    """Three temperatures over a thousandfold counts: the end correction
    explodes and the estimate would be positive."""
    X = np.random.default_rng(0).poisson(2.0, size=(20, 15)).astype(float) * 1000
    est = BayesianNMF(2, method="sgld", n_temperatures=3, steps_per_temperature=20,
                      n_warmup=10, n_draws=10, random_state=0)
    with pytest.raises(FloatingPointError, match="impossible.*n_temperatures"):
        est.fit(X)
    assert not hasattr(est, "model_")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator, algorithm", [
    (PoissonCP(2, max_iter=20, random_state=0), "sklearn_pltf.estimators._fitting.fit_by_optimizer"),
    (GibbsNTF(2, evidence=None, n_warmup=5, n_draws=5, random_state=0),
     "sklearn_pltf.inference.gaussian.run_chain"),
    (AllocationSMC(2, n_particles=100, random_state=0),
     "sklearn_pltf.inference.allocation.run_smc"),
], ids=["PoissonCP", "GibbsNTF", "AllocationSMC"])
def test_a_failed_fit_leaves_the_estimator_as_it_was(estimator, algorithm, monkeypatch):
    """Refitted to data of another width, the estimator is changed by
    validation and the start of fit (n_features_in_, model_), then its
    algorithm fails (here: runs out of memory); every attribute is put back."""
    X = np.random.default_rng(1).poisson(2.0, size=(6, 5, 4)).astype(float)
    estimator.fit(X)
    before = dict(estimator.__dict__)

    def out_of_memory(*args, **kwargs):
        raise MemoryError("simulated")

    monkeypatch.setattr(algorithm, out_of_memory)
    with pytest.raises(MemoryError):
        estimator.fit(X[:, :3])
    assert estimator.n_features_in_ == 5
    assert estimator.__dict__.keys() == before.keys()
    assert all(estimator.__dict__[k] is before[k] for k in before)
