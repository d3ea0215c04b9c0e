"""The samplers through the estimators: method="gibbs"|"sada", evidence="chib",
draws, running summaries, label alignment and the ArviZ export."""

import pickle

import arviz
import numpy as np
import pytest
from sklearn.base import clone

from sklearn_pltf import PLTF, BayesianNMF, PoissonCP
from sklearn_pltf.evidence import exact_log_evidence
from sklearn_pltf.inference._chains import ChainResult, align_labels
from sklearn_pltf.engine.model import Model

SHORT = {"n_draws": 200, "n_warmup": 50, "random_state": 0}


@pytest.fixture
def counts(rng):
    W = rng.gamma(2.0, 1.0, size=(12, 2))
    H = rng.gamma(2.0, 1.0, size=(2, 7))
    return rng.poisson(W @ H).astype(float)


@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_non_integer_counts_raise(method, counts):
    X = counts + 0.5
    with pytest.raises(ValueError, match="allocates integer counts, but the data contain non-integer"):
        BayesianNMF(2, method=method, evidence=None, **SHORT).fit(X)


@pytest.mark.parametrize(
    "method, evidence, message",
    [("vb", "chib", "evidence='chib' is estimated from Gibbs runs"),
     ("em", "chib", "evidence='chib' is estimated from Gibbs runs"),
     ("sgld", "chib", "evidence='chib' is estimated from Gibbs runs"),
     ("gibbs", "vb", "evidence='vb' is the variational bound"),
     ("gibbs", "sti", "evidence='sti' integrates over SGLD runs"),
     ("vb", "sti", "evidence='sti' integrates over SGLD runs")],
)
def test_evidence_must_suit_the_method(method, evidence, message, counts):
    with pytest.raises(ValueError, match=message):
        BayesianNMF(2, method=method, evidence=evidence, prior_shape=1.5, **SHORT).fit(counts)


@pytest.mark.slow(minutes=0.2)
def test_chib_through_the_estimator_matches_the_exact_evidence():
    """Default sampler settings (2000 draws, 500 warm-up): the acceptance
    tolerance of Chib's estimate, 0.25 nats (tests/evidence/test_chib.py)."""
    X = np.array([[2, 0, 1], [0, 3, 1]], dtype=float)
    for method in ("gibbs", "sada"):
        est = BayesianNMF(2, method=method, random_state=0).fit(X)
        assert abs(est.score(X) - exact_log_evidence(X, 2)) < 0.25
        assert est.score(X) == est.log_evidence_


def test_factors_are_the_pooled_posterior_means(counts):
    est = BayesianNMF(2, method="gibbs", n_init=2, thin=2, evidence=None, **SHORT).fit(counts)
    for factor, draws in zip(est.factors_, est.draws_):
        assert draws.shape == (2, 200) + factor.shape
        np.testing.assert_allclose(factor, draws.mean(axis=(0, 1)), rtol=1e-12)
    assert est.log_likelihoods_.shape == (2, 50 + 200 * 2) and est.n_iter_ == 450
    assert np.all(np.isfinite(est.log_likelihoods_))
    # running sums only: the same means, no draws
    light = clone(est).set_params(keep_draws=False).fit(counts)
    assert not hasattr(light, "draws_")
    for a, b in zip(est.factors_, light.factors_):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="No draws to export"):
        light.to_inference_data()


@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_same_seed_same_fit_serial_or_parallel(method, counts):
    X = counts[:, :, None] * np.ones(3)
    one = PoissonCP(2, method=method, n_init=2, evidence=None, **SHORT).fit(X)
    two = clone(one).set_params(n_jobs=2).fit(X)
    for a, b in zip(one.factors_, two.factors_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(one.log_likelihoods_, two.log_likelihoods_)


def test_fixed_factor_is_held_and_not_exported(rng, counts):
    H = rng.gamma(2.0, 1.0, size=(2, counts.shape[1]))
    est = PLTF("ik,kj->ij", fixed_factors={1: H}, method="sada", **SHORT).fit(counts)
    assert est.factors_[1] is not H and np.array_equal(est.factors_[1], H)
    assert est.draws_[1] is None
    idata = est.to_inference_data()
    assert list(idata.posterior.data_vars) == ["Z0_ik"]


def test_well_separated_chains_end_up_with_the_same_labels(rng):
    """Four chains on data with two distinct components (rows 0-9 use one,
    rows 10-19 the other): after alignment, every chain gives the first
    block of rows to the same label. Unaligned, a chain that settled in the
    swapped mode (each does with probability 1/2) would not."""
    W = np.zeros((20, 2))
    W[:10, 0], W[10:, 1] = 8.0, 8.0
    H = np.zeros((2, 10))
    H[0, :5], H[1, 5:] = 2.0, 2.0
    X = rng.poisson(W @ H + 0.05).astype(float)
    est = BayesianNMF(2, method="gibbs", n_init=4, evidence=None, **SHORT).fit(X)
    per_chain = est.draws_[0].mean(axis=1)  # (chain, 20, 2)
    first_block_label = per_chain[:, :10].sum(axis=1).argmax(axis=1)
    second_block_label = per_chain[:, 10:].sum(axis=1).argmax(axis=1)
    assert np.all(first_block_label == first_block_label[0])
    assert np.all(second_block_label == 1 - first_block_label[0])


def test_align_labels_undoes_a_permutation():
    model = Model.parse("ip,jq,pq->ij").bind((5, 4), {"p": 3, "q": 2}, {})
    rng = np.random.default_rng(0)
    means = tuple(rng.gamma(1.0, 1.0, size=model.factor_shape(a)) for a in range(3))
    draws = tuple(np.stack([m, 2 * m]) for m in means)

    def result(ms, ds):
        return ChainResult(ms, tuple(np.log(m) for m in ms), ds, np.zeros(3), ms, 0.0)

    p, q = [2, 0, 1], [1, 0]
    permuted_means = (means[0][:, p], means[1][:, q], means[2][np.ix_(p, q)])
    permuted_draws = (draws[0][:, :, p], draws[1][:, :, q], draws[2][:, p][:, :, q])
    _, aligned = align_labels([result(means, draws), result(permuted_means, permuted_draws)], model, (0, 1, 2))
    for a in range(3):
        np.testing.assert_array_equal(aligned.mean[a], means[a])
        np.testing.assert_array_equal(aligned.draws[a], draws[a])
        np.testing.assert_allclose(aligned.mean_log[a], np.log(means[a]))


def test_transform_score_pickle_and_clone_after_sampling(counts):
    est = BayesianNMF(2, method="sada", **SHORT).fit(counts)
    W = est.transform(counts[:4])
    assert W.shape == (4, 2) and np.all(W > 0)
    new_score = est.score(counts[:4])
    assert np.isfinite(new_score) and new_score != est.log_evidence_
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.transform(counts[:4]), W)
    assert clone(est).get_params() == est.get_params()
    no_evidence = clone(est).set_params(evidence=None).fit(counts)
    with pytest.raises(ValueError, match="no evidence of its training data"):
        no_evidence.score(counts)
    # refitting by VB leaves no sampler attributes behind
    est.set_params(method="vb", max_iter=200, tol=1e-4).fit(counts)
    assert not hasattr(est, "draws_") and not hasattr(est, "log_likelihoods_")
    assert est.score(counts) == est.lower_bound_


def test_inference_data_has_chains_draws_and_diagnostics(counts):
    est = BayesianNMF(1, method="gibbs", n_init=2, thin=3, evidence=None, **SHORT).fit(counts)
    idata = est.to_inference_data()
    assert idata.posterior["W"].shape == (2, 200, 12, 1)
    assert idata.posterior["H"].dims == ("chain", "draw", "k", "j")
    np.testing.assert_array_equal(idata.sample_stats["total_log_likelihood"].values,
                                  est.log_likelihoods_[:, 52::3])
    # Rank one has no labels to switch; X̂ = W H is identified, and so, under
    # the Gamma priors, are W and H well enough for two chains to agree.
    rhat = arviz.rhat(idata)
    assert float(rhat["W"].max()) < 1.1


@pytest.mark.slow(minutes=0.25)
@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_tucker_through_pltf(method, rng):
    """Tucker with a core: two latent indices, both aligned across chains;
    X̂ of the posterior means close to the data's smoothed scale."""
    A, B = rng.gamma(2.0, 1.0, size=(9, 2)), rng.gamma(2.0, 1.0, size=(8, 3))
    core = rng.gamma(2.0, 1.0, size=(2, 3))
    X = rng.poisson(A @ core @ B.T).astype(float)
    est = PLTF("ip,jq,pq->ij", {"p": 2, "q": 3}, method=method, n_init=2, **SHORT).fit(X)
    assert [f.shape for f in est.factors_] == [(9, 2), (8, 3), (2, 3)]
    assert [d.shape[:2] for d in est.draws_] == [(2, 200)] * 3
    xhat = est.factors_[0] @ est.factors_[2] @ est.factors_[1].T
    # the posterior-mean reconstruction tracks the data in total (Poisson:
    # Σ X̂ ≈ Σ X within a few of its standard deviations, sqrt(Σ X))
    assert abs(xhat.sum() - X.sum()) < 4 * np.sqrt(X.sum())
    assert np.isfinite(est.log_evidence_)
