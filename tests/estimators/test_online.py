"""partial_fit: stochastic variational inference over minibatches of samples."""

import pickle

import numpy as np
import pytest
from scipy.special import digamma
from sklearn.base import clone

from sklearn_pltf import BayesianNMF, PoissonCP, TuckerVB


def _nmf_counts(n_rows, seed=0, n_cols=40, rank=3):
    rng = np.random.default_rng(seed)
    W = rng.gamma(1.0, 1.0, (n_rows, rank))
    H = rng.gamma(1.0, 1.0, (rank, n_cols))
    return rng.poisson(W @ H).astype(float)


def test_a_step_blends_the_natural_parameters_towards_the_scaled_batch_update():
    """Hoffman et al. (2013) eqs. 25 and 35 for H, from the estimator's own
    q of W and H, with ρ₂ = (0 + 2)^-1 and the batch standing for 3x its rows."""
    X = _nmf_counts(20)
    est = BayesianNMF(3, prior_shape=0.8, prior_rate=1.5, learning_offset=0.0,
                      learning_decay=1.0, total_samples=60, random_state=0)
    est.partial_fit(X)
    before = est._state
    est.partial_fit(X)
    after = est._state
    E_w, L_w = after.mean[0], after.geometric[0]  # the batch's W, folded in with H held
    L_h = before.geometric[1]
    target_shape = 0.8 + 3.0 * L_h * (L_w.T @ (X / (L_w @ L_h)))
    target_rate = 1.5 + 3.0 * E_w.sum(axis=0)[:, None]
    shape = 0.5 * before.shape[1] + 0.5 * target_shape
    rate = 0.5 / before.scale[1] + 0.5 * target_rate
    np.testing.assert_allclose(after.shape[1], shape, rtol=1e-10)
    np.testing.assert_allclose(after.scale[1], 1.0 / rate, rtol=1e-10)
    np.testing.assert_allclose(after.geometric[1], np.exp(digamma(shape)) / rate, rtol=1e-10)
    np.testing.assert_allclose(est.components_, shape / rate, rtol=1e-10)
    assert est.n_batch_iter_ == 3


def test_online_learning_reaches_the_held_out_score_of_batch_vb():
    """Five passes of 50-row batches over 300 rows: the held-out bound per
    entry within the issue's 0.02 nats of batch VB's on the same rows."""
    X = _nmf_counts(360)
    train, test = X[:300], X[300:]
    batch = BayesianNMF(3, random_state=0).fit(train)
    online = BayesianNMF(3, total_samples=300, random_state=0)
    scores = []
    for _ in range(5):
        for start in range(0, 300, 50):
            online.partial_fit(train[start:start + 50])
        scores.append(online.score(test) / test.size)
    reference = batch.score(test) / test.size
    assert abs(scores[-1] - reference) < 0.02
    assert scores[-1] > scores[0]  # the passes after the first still help


@pytest.mark.parametrize("Estimator, shape", [(PoissonCP, (24, 6, 5)), (TuckerVB, (24, 6, 5))])
def test_transform_and_score_work_after_any_number_of_batches(Estimator, shape):
    rng = np.random.default_rng(1)
    X = rng.poisson(1.5, size=shape).astype(float)
    new = rng.poisson(1.5, size=(4,) + shape[1:]).astype(float)
    est = Estimator(2, total_samples=24, random_state=0)
    for n_batches, start in enumerate(range(0, 24, 8), start=1):
        est.partial_fit(X[start:start + 8])
        assert est.n_batch_iter_ == n_batches + 1
        assert not hasattr(est, "log_evidence_")
        W = est.transform(new)
        assert W.shape == (4, est.n_components) and np.all(np.isfinite(W)) and np.all(W > 0)
        assert np.isfinite(est.score(new))
    # reproducible, and it pickles and clones
    again = Estimator(2, total_samples=24, random_state=0)
    for start in range(0, 24, 8):
        again.partial_fit(X[start:start + 8])
    np.testing.assert_array_equal(again.transform(new), est.transform(new))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).transform(new), est.transform(new))
    assert not hasattr(clone(est), "n_batch_iter_")


def test_partial_fit_continues_a_fit_and_refuses_what_it_cannot_do():
    X = _nmf_counts(30)
    est = BayesianNMF(2, random_state=0).fit(X)
    H = est.components_.copy()
    est.partial_fit(X[:10])
    assert est.n_batch_iter_ == 2 and not hasattr(est, "log_evidence_")
    assert not np.allclose(est.components_, H)  # it moved from the fitted posterior
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(X[:10, :-1])
    with pytest.raises(ValueError, match="method='vb'"):
        BayesianNMF(2, method="em").partial_fit(X)
    # a fit afterwards starts afresh
    assert not hasattr(est.fit(X), "n_batch_iter_")


@pytest.mark.parametrize("Estimator, shape, n_components", [
    (BayesianNMF, (42, 12), 3), (PoissonCP, (42, 6, 5), 3), (TuckerVB, (42, 6, 5), (2, 2, 2))])
@pytest.mark.parametrize("learned", [{"ard": True}, {"prior_rate": "auto"}])
@pytest.mark.parametrize("start", ["partial_fit", "fit"])
def test_learned_rates_follow_batches_of_any_size(Estimator, shape, n_components, learned, start):
    """The rates learned on the first batch (or by fit) are held for batches
    of other sizes: the sample factor's, which do not vary along the samples,
    at each batch's size, the others' as they were learned."""
    rng = np.random.default_rng(2)
    X = rng.poisson(2.0, size=shape).astype(float)
    est = Estimator(n_components, total_samples=42, random_state=0, **learned)
    getattr(est, start)(X[:20])
    first = [None if r is None else r.copy() for r in est.prior_rate_]
    for batch in (X[20:35], X[35:]):
        est.partial_fit(batch)
        assert est.prior_rate_[0].shape[0] == est.factors_[0].shape[0] == batch.shape[0]
        W = est.transform(X[:5])
        assert W.shape[0] == 5 and np.all(np.isfinite(W)) and np.all(W > 0)
        assert np.isfinite(est.score(X[:5]))
    assert all(np.all(np.isfinite(r)) and np.all(r > 0) for r in est.prior_rate_ if r is not None)
    # the sample factor's per-sample rate and the other factors' rates as learned first
    np.testing.assert_array_equal(est.prior_rate_[0], np.broadcast_to(first[0][:1],
                                                                      est.prior_rate_[0].shape))
    for held, now in zip(first[1:], est.prior_rate_[1:]):
        np.testing.assert_array_equal(now, held)


def test_a_failed_partial_fit_leaves_the_estimator_as_it_was(monkeypatch):
    """Whatever the step raises (here the SVI step itself, after the fold-in),
    every attribute is put back, and the estimator goes on working."""
    from sklearn_pltf.inference import svi

    X = _nmf_counts(42)
    est = BayesianNMF(3, ard=True, total_samples=42, random_state=0)
    est.partial_fit(X[:20]).partial_fit(X[20:35])
    before = dict(est.__dict__)
    W = est.transform(X[:5])

    def broken(*args, **kwargs):
        raise RuntimeError("the step fails")

    monkeypatch.setattr(svi, "global_step", broken)
    with pytest.raises(RuntimeError, match="the step fails"):
        est.partial_fit(X[35:])
    assert est.__dict__.keys() == before.keys()
    assert all(est.__dict__[k] is v for k, v in before.items())
    np.testing.assert_array_equal(est.transform(X[:5]), W)
    monkeypatch.undo()
    assert est.partial_fit(X[35:]).n_batch_iter_ == 4
