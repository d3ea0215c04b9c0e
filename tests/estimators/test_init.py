"""Where a fit starts: at random, from the data's singular vectors, at
given factors, or where the last fit ended (warm_start)."""

import numpy as np
import pytest
import sparse

from sklearn_pltf import PLTF, BayesianNMF, PoissonCP, TuckerVB


@pytest.fixture
def counts():
    rng = np.random.default_rng(0)
    return rng.poisson(rng.gamma(1.0, 1.0, (60, 3)) @ rng.gamma(1.0, 1.0, (3, 40))).astype(float)


def test_svd_start_is_deterministic_and_the_same_for_sparse_data(counts):
    fits = [BayesianNMF(3, init="svd", random_state=seed).fit(counts) for seed in (0, 1)]
    assert fits[0].lower_bounds_.tolist() == fits[1].lower_bounds_.tolist()
    from_sparse = BayesianNMF(3, init="svd").fit(sparse.COO.from_numpy(counts))
    np.testing.assert_allclose(from_sparse.lower_bounds_, fits[0].lower_bounds_, rtol=1e-9)


@pytest.mark.parametrize("make", [lambda: PoissonCP(2, init="svd"), lambda: TuckerVB(2, init="svd"),
                                  lambda: PLTF("ip,jq,kr,pqr->ijk", 2, init="svd")],
                         ids=["cp", "tucker", "pltf"])
def test_svd_start_fits_tensor_models(make):
    T = np.random.default_rng(1).poisson(2.0, size=(10, 8, 6)).astype(float)
    est = make().fit(T)
    assert est.converged_ and np.isfinite(est.log_evidence_)


def sweeps_to_within_a_nat(est, final):
    """How many plain sweeps ``est`` took to come within a nat of ``final``."""
    return int(np.argmax(est.lower_bounds_ >= final - 1.0)) + 1


def test_given_factors_start_the_first_initialisation(counts):
    # Plain steps: the iterations count sweeps from where the fit started.
    reference = BayesianNMF(3, random_state=0, tol=1e-8, acceleration=None).fit(counts)
    W, H = reference.factors_
    to_the_optimum = sweeps_to_within_a_nat(reference, reference.lower_bound_)
    # From the converged factors the fit has little left to do (q's shapes
    # restart, so not nothing); given by position or by index string.
    for init in ({0: W, 1: H}, {"ik": W, "kj": H}, [W, H]):
        est = BayesianNMF(3, init=init, random_state=5, tol=1e-8, acceleration=None).fit(counts)
        assert sweeps_to_within_a_nat(est, reference.lower_bound_) < to_the_optimum / 3
        # the same optimum, within 100 times the relative stopping tolerance
        assert est.lower_bound_ >= reference.lower_bound_ - 1e-6 * abs(reference.lower_bound_)
    # One factor given: the other is drawn, scaled to the data.
    assert np.isfinite(BayesianNMF(3, init={0: W}, random_state=0).fit(counts).lower_bound_)
    W_before = W.copy()
    BayesianNMF(3, init={0: W}).fit(counts)
    np.testing.assert_array_equal(W, W_before)  # the user's array is untouched


@pytest.mark.parametrize("init, message", [
    ({0: np.ones((60, 2))}, "has shape \\(60, 2\\); the model needs \\(60, 3\\)"),
    ({0: np.zeros((60, 3))}, "must be finite and > 0"),
    ({"q": np.ones((60, 3))}, "init key 'q' must name exactly one factor"),
    ([np.ones((60, 3))], "one entry per factor"),
])
def test_bad_given_factors_are_named(counts, init, message):
    with pytest.raises(ValueError, match=message):
        BayesianNMF(3, init=init).fit(counts)


def test_given_factor_that_is_fixed_is_an_error(counts):
    H = np.ones((3, 40))
    with pytest.raises(ValueError, match="which is fixed"):
        PLTF("ik,kj->ij", 3, fixed_factors={1: H}, init={1: H}).fit(counts)


def test_warm_start_continues_from_the_last_fit(counts):
    est = BayesianNMF(3, warm_start=True, random_state=0, tol=1e-4).fit(counts)
    first = est.lower_bound_
    est.set_params(tol=1e-8).fit(counts)
    cold = BayesianNMF(3, random_state=0, tol=1e-8).fit(counts)
    assert est.n_iter_ < cold.n_iter_
    assert est.lower_bound_ >= first
    # A changed model cannot continue: the fit starts as init says.
    est.set_params(n_components=2).fit(counts)
    assert est.factors_[0].shape == (60, 2)


def test_samplers_refuse_a_start(counts):
    with pytest.raises(ValueError, match="starts its chains at random"):
        BayesianNMF(3, method="gibbs", init="svd", n_warmup=2, n_draws=2).fit(counts)
