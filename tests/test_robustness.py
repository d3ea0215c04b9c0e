"""Bad, extreme and interrupted input: each case a user met, reproduced.

Every case here once gave a wrong number, a raw error from deep inside, or
an estimator left half-updated. Each now raises a ``ValueError`` naming the
problem and the remedy, or gives the right answer.
"""

import inspect
import sys
from contextlib import contextmanager

import numpy as np
import pytest
import scipy.sparse as sp
import sparse
from sklearn.base import clone

from sklearn_pltf import PLTF, AllocationSMC, BayesianNMF, BayesianRESCAL, GibbsNTF, PoissonCP


@pytest.fixture
def counts():
    return np.random.default_rng(0).poisson(2.0, size=(6, 5)).astype(float)


@pytest.fixture
def counts3():
    return np.random.default_rng(0).poisson(2.0, size=(4, 3, 3)).astype(float)


# ------------------------------------------------------------ the container
def test_score_of_the_training_data_does_not_depend_on_its_container(counts):
    """The training data are recognised (and scored by their evidence) as
    dense, pydata sparse or scipy.sparse, whatever the fit was given."""
    est = BayesianNMF(2, random_state=0).fit(counts)
    scores = [est.score(X) for X in (counts, sparse.COO.from_numpy(counts),
                                     sp.csr_matrix(counts), sp.csc_matrix(counts))]
    assert scores == [est.log_evidence_] * 4
    sparse_fit = BayesianNMF(2, random_state=0).fit(sp.csr_matrix(counts))
    assert sparse_fit.score(counts) == sparse_fit.log_evidence_


# ------------------------------------------------------- interrupted refits
@contextmanager
def interrupted_after(n_calls):
    """Raise ``KeyboardInterrupt`` at the ``n_calls``-th call of a Python
    function of the package (None: only count them); yields the count."""
    seen = [0]

    def trace(frame, event, arg):
        # Generators are skipped: their "call" events include being closed
        # when dropped early (``all(...)`` stopping at a False), where Python
        # itself drops what the trace raises.
        if (event == "call" and not frame.f_code.co_flags & inspect.CO_GENERATOR
                and frame.f_globals.get("__name__", "").startswith("sklearn_pltf")):
            seen[0] += 1
            if n_calls is not None and seen[0] == n_calls:
                raise KeyboardInterrupt
        return None

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        yield seen
    finally:
        sys.settrace(previous)


REFITS = [
    (PoissonCP(2, random_state=0, max_iter=30), dict(n_components=3)),
    (PoissonCP(2, method="sada", evidence=None, n_warmup=10, n_draws=10, random_state=0),
     dict(n_components=3)),
    (GibbsNTF(2, evidence=None, n_warmup=10, n_draws=10, random_state=0), dict(n_components=3)),
    (AllocationSMC(2, method="vb", random_state=0), dict(n_components=3)),
]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator, change", REFITS,
                         ids=["cp-vb", "cp-sada", "gibbs-ntf", "allocation-vb"])
@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.95])
def test_an_interrupted_refit_leaves_the_estimator_as_it_was(counts3, estimator, change,
                                                             fraction):
    """A ``KeyboardInterrupt`` anywhere in a refit (here at a fraction of its
    calls) leaves every fitted attribute as it was: ``transform`` gives what it
    gave before."""
    with interrupted_after(None) as calls:
        clone(estimator).set_params(**change).fit(counts3 + 1)
    est = clone(estimator).fit(counts3)
    before, transformed = dict(est.__dict__), est.transform(counts3)
    est.set_params(**change)
    with pytest.raises(KeyboardInterrupt), interrupted_after(max(1, int(fraction * calls[0]))):
        est.fit(counts3 + 1)
    est.set_params(**{name: estimator.get_params()[name] for name in change})
    assert est.__dict__.keys() == before.keys()
    assert all(est.__dict__[k] is before[k] for k in before)
    np.testing.assert_array_equal(est.transform(counts3), transformed)


# ------------------------------------------------------------- huge values
def test_gaussian_ntf_rejects_data_whose_squares_overflow(counts3):
    with pytest.raises(ValueError, match="squares of the data.*overflow.*scale X down"):
        GibbsNTF(2, evidence=None, n_warmup=5, n_draws=5).fit(counts3 * 1e155)
    # Just below the overflow it fits, with a finite noise variance.
    est = GibbsNTF(2, evidence=None, n_warmup=5, n_draws=5, random_state=0).fit(counts3 * 1e140)
    assert np.isfinite(est.noise_variance_)


@pytest.mark.parametrize("make", [
    lambda: BayesianNMF(2, method="gibbs", evidence=None, n_warmup=2, n_draws=2),
    lambda: BayesianRESCAL(2, method="sada", evidence=None, n_warmup=2, n_draws=2),
])
def test_token_by_token_samplers_reject_more_counts_than_memory_holds(make):
    """Gibbs draws a uniform per count in every sweep: 10¹⁴ counts would need
    far more than any memory, so the fit says so before allocating."""
    X = np.full((5, 5), 4e12)
    with pytest.raises(ValueError, match=r"1e\+14 counts \(tokens\).*GiB.*Use method='vb'"):
        make().fit(X)


def test_allocation_smc_rejects_more_tokens_than_memory_holds(counts3):
    with pytest.raises(ValueError, match=r"counts \(tokens\).*GiB.*method='vb'"):
        AllocationSMC(2).fit(np.full((3, 3, 3), 4e12))


@pytest.mark.parametrize("make", [
    lambda: PoissonCP(2, method="sada", evidence=None, n_warmup=2, n_draws=2),
    lambda: AllocationSMC(2, method="vb"),
])
def test_counts_beyond_int64_are_rejected_with_the_remedy(counts3, make):
    with pytest.raises(ValueError, match="count of 7e\\+300.*scale the counts down"):
        make().fit(counts3 * 1e300)


def test_a_failed_allocation_refit_keeps_the_previous_evidence(counts3):
    est = AllocationSMC(2, method="vb", random_state=0).fit(counts3)
    evidence = est.log_evidence_
    with pytest.raises(ValueError):
        est.fit(counts3 * 1e300)
    assert est.log_evidence_ == evidence


# ----------------------------------------------------------- fixed factors
def test_zero_fixed_factor_is_a_clear_error(counts):
    with pytest.raises(ValueError, match="fixed factors make the model's mean X̂ zero at 2[0-9] "
                                         "observed non-zero entries"):
        PLTF("ik,kj->ij", n_components=2, fixed_factors={0: np.zeros((6, 2))}).fit(counts)
    # All-zero data: nothing is impossible, and the free factor keeps its prior.
    est = PLTF("ik,kj->ij", n_components=2, fixed_factors={0: np.zeros((6, 2))},
               random_state=0).fit(np.zeros((6, 5)))
    np.testing.assert_allclose(est.factors_[1], 1.0)  # Gamma(1, 1) prior mean


def test_fixed_factors_are_copied(counts):
    W = np.random.default_rng(1).gamma(1.0, size=(6, 2))
    est = PLTF("ik,kj->ij", n_components=2, fixed_factors={0: W}, random_state=0).fit(counts)
    prediction = est.predict_entries([[0, 0], [5, 4]])
    W *= 10
    np.testing.assert_array_equal(est.predict_entries([[0, 0], [5, 4]]), prediction)
    assert not np.shares_memory(est.factors_[0], W)


@pytest.mark.parametrize("params, message", [
    (dict(n_components={"k": 2, "q": 99}), "n_components names 'q', which it has not"),
    (dict(n_components=2, fixed_factors={0: "W", "ik": "5W"}), "gives factor 0 .* twice"),
    (dict(n_components=2, fixed_factors={0: "complex"}), "must be real numbers.*complex"),
    (dict(n_components=2, fixed_factors={True: "W"}), "neither a factor position"),
])
def test_silently_accepted_parameters_now_raise(counts, params, message):
    W = np.random.default_rng(1).gamma(1.0, size=(6, 2))
    arrays = {"W": W, "5W": 5 * W, "complex": W + 0j}
    if "fixed_factors" in params:
        params["fixed_factors"] = {k: arrays[v] for k, v in params["fixed_factors"].items()}
    with pytest.raises(ValueError, match=message):
        PLTF("ik,kj->ij", **params).fit(counts)
