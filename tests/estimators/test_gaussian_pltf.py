"""GaussianPLTF: the Gaussian family on model strings as an estimator — GibbsNTF's
numbers on a CP string, a Tucker fit's predictions, the probit link, the
estimator contract, and the clear errors for what is built for CP only."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from sklearn_pltf import GaussianPLTF, GibbsNTF

SHORT = dict(n_warmup=60, n_draws=60, random_state=0)
TUCKER = "ip,jq,kr,pqr->ijk"


def _tucker(seed=0, shape=(10, 8, 6), noise=0.1, missing=0.2):
    """A signed Tucker tensor (core 2 x 2 x 2) with Gaussian noise, a share
    of its entries NaN; the noiseless tensor too."""
    rng = np.random.default_rng(seed)
    truth = np.einsum(TUCKER, *(rng.normal(size=s) for s in
                                [(shape[0], 2), (shape[1], 2), (shape[2], 2), (2, 2, 2)]))
    X = truth + noise * rng.normal(size=shape)
    X[rng.random(shape) < missing] = np.nan
    return X, truth


def test_on_a_cp_string_it_gives_gibbs_ntf_s_numbers():
    """The CP string in GibbsNTF's layout takes the same sums (the same
    numbers exactly); with each factor's indices the other way round, the
    model string's sums, which give the same chain to rounding."""
    X, _ = _tucker(seed=1, shape=(5, 4, 3), missing=0.0)
    short = dict(n_warmup=30, n_draws=30, random_state=0)
    reference = GibbsNTF(2, nonnegative=False, evidence="chib", **short).fit(X)
    same = GaussianPLTF("ir,jr,kr->ijk", 2, nonnegative=False, evidence="chib", **short).fit(X)
    for a, b in zip(same.factors_, reference.factors_):
        np.testing.assert_array_equal(a, b)
    assert same.log_evidence_ == reference.log_evidence_
    swapped = GaussianPLTF("ri,rj,rk->ijk", 2, nonnegative=False, evidence="chib",
                           **short).fit(X)
    for a, b in zip(swapped.factors_, reference.factors_):
        np.testing.assert_allclose(a.T, b, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(swapped.log_evidence_, reference.log_evidence_, rtol=1e-9)
    entries = np.array([[0, 0, 0], [3, 2, 1], [4, 3, 2]])
    np.testing.assert_allclose(swapped.predict_entries(entries),
                               reference.predict_entries(entries), rtol=1e-8)


def test_a_tucker_fit_predicts_held_out_entries_within_the_noise():
    X, truth = _tucker(seed=2)
    held_out = np.argwhere(np.isnan(X))
    est = GaussianPLTF(TUCKER, {"p": 2, "q": 2, "r": 2}, nonnegative=False, evidence=None,
                       n_warmup=300, n_draws=200, random_state=0).fit(X)
    error = est.predict_entries(held_out) - truth[tuple(held_out.T)]
    assert np.sqrt(np.mean(error**2)) < 0.05 < np.std(truth)  # the noise's SD is 0.1
    assert [f.shape for f in est.factors_] == [(10, 2), (8, 2), (6, 2), (2, 2, 2)]
    assert est.draws_[3].shape == (1, 200, 2, 2, 2)
    np.testing.assert_allclose(est.reconstruct(), np.einsum(TUCKER, *est.factors_))


def test_transform_folds_new_samples_in_and_inverse_transform_rebuilds_them():
    X, truth = _tucker(seed=3, missing=0.0)
    est = GaussianPLTF(TUCKER, 2, nonnegative=False, evidence=None, **SHORT).fit(X[:8])
    W = est.transform(X[8:])
    assert W.shape == (2, 2)
    rebuilt = est.inverse_transform(W)
    assert rebuilt.shape == (2, 8, 6)
    # The fold-in fits the new samples about as well as the fit its own.
    new_error = np.sqrt(np.mean((rebuilt - truth[8:]) ** 2))
    own_error = np.sqrt(np.mean((est.reconstruct() - truth[:8]) ** 2))
    assert new_error < 3 * own_error + 0.05
    assert np.isfinite(est.score(X[8:]))


def test_score_is_chib_s_evidence_and_the_fit_is_reproducible_and_pickles():
    X, _ = _tucker(seed=4, shape=(4, 3, 3))
    est = GaussianPLTF(TUCKER, {"p": 2, "q": 1, "r": 1}, nonnegative=False, n_warmup=20,
                       n_draws=20, random_state=0).fit(X)
    assert est.score(X) == est.log_evidence_ and est.log_evidence_error_ > 0
    again = clone(est).fit(X)
    assert again.log_evidence_ == est.log_evidence_
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict_entries([[1, 2, 2]]),
                                  est.predict_entries([[1, 2, 2]]))


def test_sparse_input_gives_the_dense_fit():
    rng = np.random.default_rng(5)
    X = np.where(rng.random((12, 9)) < 0.3, rng.normal(size=(12, 9)), 0.0)
    settings = dict(model="ip,jq,pq->ij", n_components=2, nonnegative=False, evidence=None, **SHORT)
    dense = GaussianPLTF(**settings).fit(X)
    sparse = GaussianPLTF(**settings).fit(sp.csr_matrix(X))
    for a, b in zip(dense.factors_, sparse.factors_):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_the_probit_link_on_a_tucker_string_gives_probabilities():
    X, truth = _tucker(seed=6, shape=(8, 7, 5), missing=0.0)
    binary = (truth + np.random.default_rng(0).normal(size=truth.shape) > 0).astype(float)
    est = GaussianPLTF(TUCKER, 2, likelihood="probit", nonnegative=False, evidence=None,
                       **SHORT).fit(binary)
    p = est.predict_entries(np.argwhere(np.ones(binary.shape, dtype=bool)))
    assert np.all((p > 0) & (p < 1))
    assert np.mean((p > 0.5) == (binary.ravel() > 0)) > 0.75
    with pytest.raises(ValueError, match="binary"):
        clone(est).fit(X)


@pytest.mark.parametrize("settings, message", [
    (dict(ard=True), "ard=True shares a variance per component"),
    (dict(n_init=2), "n_init=2 aligns the chains' components"),
    (dict(method="hmc"), "method='hmc' cannot sample"),
    (dict(evidence="ais"), "evidence='ais' is built for the CP structure"),
    (dict(model="ir,jr,ir->ij"), "each observed index in exactly one factor"),
    (dict(model="ir,jr,kr->ijk", n_components=None), "no size for latent index 'r'"),
    (dict(model="ik,kj->ij"), "describes 2-way data"),
])
def test_what_the_model_string_cannot_take_is_a_clear_error(settings, message):
    X, _ = _tucker(seed=7, shape=(5, 4, 3), missing=0.0)
    if settings.get("model") == "ir,jr,ir->ij":
        X = X[:, :, 0]
    est = GaussianPLTF(**{"model": TUCKER, "n_components": 2, "n_warmup": 2, "n_draws": 2,
                          **settings})
    with pytest.raises(ValueError, match=message):
        est.fit(X)
    assert not hasattr(est, "factors_")  # a fit that fails leaves the estimator as it was


def test_ard_on_an_nmf_string_switches_off_what_the_data_do_not_need():
    """ARD on a string whose factors each carry one latent index: W's and
    H's columns share a relevance per component, so one fit at 6 components
    of signed rank-3 data keeps 3; the string's sums give the chain, and
    Chib's evidence, of the CP layout (GibbsNTF on the matrix)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) @ rng.normal(size=(3, 25)) + rng.normal(0, 0.1, (30, 25))
    est = GaussianPLTF("ik,kj->ij", 6, nonnegative=False, ard=True, evidence=None,
                       n_warmup=500, n_draws=200, random_state=0).fit(X)
    assert est.effective_rank_ == {"k": 3}
    assert set(est.relevance_) == {"k"} and est.relevance_["k"].shape == (6,)
    short = dict(nonnegative=False, ard=True, evidence="chib", n_warmup=30, n_draws=30,
                 random_state=0)
    small = X[:6, :5]
    reference = GibbsNTF(2, **short).fit(small)
    same = GaussianPLTF("ik,kj->ij", 2, **short).fit(small)
    np.testing.assert_allclose(same.factors_[1].T, reference.factors_[1], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(same.log_evidence_, reference.log_evidence_, rtol=1e-9)
    np.testing.assert_allclose(same.relevance_["k"], reference.relevance_, rtol=1e-9)


def test_ard_on_a_cp_string_gives_gibbs_ntf_s_numbers():
    X, _ = _tucker(seed=1, shape=(5, 4, 3), missing=0.0)
    short = dict(nonnegative=False, ard=True, evidence="chib", n_warmup=30, n_draws=30,
                 random_state=0)
    reference = GibbsNTF(3, **short).fit(X)
    same = GaussianPLTF("ir,jr,kr->ijk", 3, **short).fit(X)
    for a, b in zip(same.factors_, reference.factors_):
        np.testing.assert_array_equal(a, b)
    assert same.log_evidence_ == reference.log_evidence_
    np.testing.assert_array_equal(same.relevance_, reference.relevance_)
    assert same.effective_rank_ == reference.effective_rank_
