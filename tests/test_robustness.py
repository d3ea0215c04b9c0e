"""Bad, extreme and interrupted input: each case a user met, reproduced.

Every case here once gave a wrong number, a raw error from deep inside, or
an estimator left half-updated. Each now raises a ``ValueError`` naming the
problem and the remedy, or gives the right answer.
"""

import inspect
import sys
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
import scipy.sparse as sp
import sparse
from sklearn.base import clone

from sklearn_pltf import PLTF, AllocationSMC, BayesianNMF, BayesianRESCAL, GibbsNTF, PoissonCP
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.evidence._checks import saturated_log_likelihood


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
    # 1.08e9 tokens, within the 2^31 - 1 the SMC's urns hold (more are
    # refused with that limit: tests/inference/allocation/test_allocation.py),
    # with every particle's allocation of each recorded for the moves: 4 PB.
    with pytest.raises(ValueError, match=r"counts \(tokens\).*GiB.*method='vb'"):
        AllocationSMC(2, n_particles=10**6).fit(np.full((3, 3, 3), 4e7))


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


# ------------------------------------------- first contact with newer features
@pytest.mark.parametrize("method", ["vb", "em", "gibbs", "sada", "sgld"])
@pytest.mark.parametrize("data", ["one entity", "diagonal only"])
def test_rescal_without_an_off_diagonal_entry_is_a_clear_error(method, data):
    X = (np.ones((1, 1, 3)) if data == "one entity"
         else np.where(np.eye(3, dtype=bool)[:, :, None], 1.0, np.nan) * np.ones((3, 3, 2)))
    with pytest.raises(ValueError, match="No off-diagonal entry"):
        BayesianRESCAL(2, method=method).fit(X)


@pytest.mark.parametrize("method", ["vb", "em", "gibbs"])
def test_tied_entity_factors_may_be_written_latent_first(method):
    """'ai,bj,abk->ijk' is 'ia,jb,abk->ijk' with the entity factor transposed:
    the same fit, the factor in the layout the model writes."""
    X = np.random.default_rng(0).poisson(1.0, (6, 6, 3)).astype(float)
    short = dict(method=method, random_state=0, n_draws=10, n_warmup=5, keep_draws=True)
    canonical = PLTF("ia,jb,abk->ijk", 2, tied_factors={1: 0}, **short).fit(X)
    latent_first = PLTF("ai,bj,abk->ijk", 2, tied_factors={1: 0}, **short).fit(X)
    mixed = PLTF("ai,jb,abk->ijk", 2, tied_factors={1: 0}, **short).fit(X)
    A = canonical.factors_[0]
    np.testing.assert_allclose(latent_first.factors_[0], A.T)
    np.testing.assert_allclose(latent_first.factors_[1], A.T)
    np.testing.assert_allclose(mixed.factors_[0], A.T)
    np.testing.assert_allclose(mixed.factors_[1], A)
    for est in (latent_first, mixed):
        assert est.score(X) == pytest.approx(canonical.score(X))
        np.testing.assert_allclose(est.transform(X), A)
        np.testing.assert_allclose(est.inverse_transform(A), canonical.inverse_transform(A))
    if method == "gibbs":
        np.testing.assert_allclose(latent_first.draws_[0], np.swapaxes(canonical.draws_[0], 2, 3))


@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_rescal_sampler_evidence_ignores_the_diagonal_as_the_fit_does(method):
    """Large counts on the (ignored) diagonal lowered the bound the evidence
    is checked against below a correct estimate of the off-diagonal data."""
    X = (np.random.default_rng(0).random((6, 6, 2)) < 0.1).astype(float)
    X[np.arange(6), np.arange(6)] = 30.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        est = BayesianRESCAL(2, method=method, random_state=0, n_draws=20, n_warmup=10).fit(X)
    off_diagonal = X.copy()
    off_diagonal[np.arange(6), np.arange(6)] = 0.0
    bound = saturated_log_likelihood(as_observed_tensor(off_diagonal))
    assert est.log_evidence_ <= bound
    # ... and above the bound with the diagonal, which the check once used.
    assert est.log_evidence_ > saturated_log_likelihood(as_observed_tensor(X))


def test_a_log_evidence_of_binary_data_is_never_positive():
    with pytest.warns(RuntimeWarning, match="0 is returned instead"):
        est = BayesianNMF(2, likelihood="bernoulli", method="sada", evidence="chib", n_draws=6,
                          n_warmup=4, random_state=0).fit(np.ones((6, 5)))
    assert est.log_evidence_ == 0.0


@pytest.mark.parametrize("make", [
    lambda: BayesianNMF(2, init="svd"), lambda: PoissonCP(2, init="svd"),
    lambda: PLTF("ik,kj->ij", 2, init="svd")])
def test_svd_start_of_all_zero_data_is_a_clear_error(make):
    X = np.zeros((6, 5, 3)) if isinstance(make(), PoissonCP) else np.zeros((6, 5))
    with pytest.raises(ValueError, match="init='svd'.*every observed entry is zero"):
        make().fit(X)


@pytest.mark.parametrize("init, message", [
    ({0: "W", "ik": "2W"}, "gives factor 0 .* twice"),
    ({0: "complex"}, "init for factor 0 must be real numbers.*complex"),
    ({0: "strings"}, "init for factor 0 must be real numbers"),
    ({0: "ragged"}, "init for factor 0 is not a regular array"),
])
def test_init_factors_are_checked_as_fixed_factors_are(counts, init, message):
    W = np.random.default_rng(1).gamma(1.0, size=(6, 2))
    arrays = {"W": W, "2W": 2 * W, "complex": W + 1j, "strings": [["a", "b"]] * 6,
              "ragged": [[1.0, 2.0], [3.0]] + [[1.0, 1.0]] * 4}
    with pytest.raises(ValueError, match=message):
        PLTF("ik,kj->ij", 2, init={k: arrays[v] for k, v in init.items()}).fit(counts)


def test_init_and_fixed_factors_may_be_sparse_arrays(counts):
    W = np.random.default_rng(1).gamma(1.0, size=(6, 2))
    given = PLTF("ik,kj->ij", 2, init={0: W}, random_state=0).fit(counts)
    for container in (sparse.COO.from_numpy, sp.csr_matrix):
        est = PLTF("ik,kj->ij", 2, init={0: container(W)}, random_state=0).fit(counts)
        np.testing.assert_array_equal(est.factors_[0], given.factors_[0])
        fixed = PLTF("ik,kj->ij", 2, fixed_factors={0: container(W)}).fit(counts)
        np.testing.assert_array_equal(fixed.factors_[0], W)


@pytest.mark.parametrize("first", [
    dict(method="gibbs", evidence=None, n_draws=6, n_warmup=4), dict(method="em")])
def test_partial_fit_after_a_fit_that_is_not_vb_is_a_clear_error(counts, first):
    est = BayesianNMF(2, random_state=0, **first).fit(counts)
    with pytest.raises(ValueError, match="not fitted by VB.*clone"):
        est.set_params(method="vb").partial_fit(counts[:3])
    BayesianNMF(2, random_state=0).fit(counts).partial_fit(counts[:3])  # VB continues


def test_partial_fit_after_set_params_changes_the_model_is_a_clear_error(counts):
    est = BayesianNMF(2, random_state=0).partial_fit(counts[:3])
    est.set_params(n_components=3)
    with pytest.raises(ValueError, match="set_params since the last partial_fit"):
        est.partial_fit(counts[3:])
    assert est.components_.shape == (2, 5)


def test_an_all_zero_first_partial_fit_batch_is_a_clear_error(counts3):
    est = PoissonCP(2, random_state=0)
    with pytest.raises(ValueError, match="first partial_fit batch has no non-zero"):
        est.partial_fit(np.zeros((3, 3, 3)))
    assert not hasattr(est, "factors_")
    est.partial_fit(np.zeros((3, 3, 3)) + counts3[:3])  # a batch with counts starts it


def test_factor_names_must_name_different_factors_differently():
    X = np.random.default_rng(0).poisson(1.0, (6, 6, 2)).astype(float)
    est = BayesianRESCAL(2, method="gibbs", evidence=None, n_draws=6, n_warmup=4,
                         random_state=0).fit(X)
    with pytest.raises(ValueError, match="name 'A' to factors 0 and 2"):
        est.to_inference_data(X, factor_names={2: "A"})
    # The two positions of the tied entity factor share one name.
    assert set(est.to_inference_data(X).posterior.data_vars) == {"A", "R"}


def test_an_export_without_the_data_says_what_loo_needs(counts):
    est = BayesianNMF(2, method="gibbs", evidence=None, n_draws=6, n_warmup=4,
                      random_state=0).fit(counts)
    with pytest.warns(UserWarning, match=r"to_inference_data\(X\)"):
        assert "log_likelihood" not in est.to_inference_data().groups()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert "log_likelihood" in est.to_inference_data(counts).groups()
