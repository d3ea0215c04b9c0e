"""The PLTF estimator: transform, fold-in, score, predictions, reproducibility."""

import pickle

import numpy as np
import pytest
import sparse
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_pltf import PLTF


@pytest.fixture
def cp_data():
    rng = np.random.default_rng(0)
    A, B, C = (rng.gamma(2.0, 1.0, size=(n, 3)) for n in (25, 12, 8))
    return rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C)).astype(float)


def fit(X, **params):
    params = {"model": "ir,jr,kr->ijk", "n_components": 3, "random_state": 0, **params}
    return PLTF(**params).fit(X)


def test_fitted_attributes(cp_data):
    est = fit(cp_data)
    assert [f.shape for f in est.factors_] == [(25, 3), (12, 3), (8, 3)]
    assert est.converged_ and est.n_iter_ == len(est.lower_bounds_)
    assert est.log_evidence_ == est.lower_bound_
    # The final fold-in takes q of the sample-mode factor to its (unique)
    # optimum given the other factors, so the bound does not go down (beyond
    # the fold-in's own convergence tolerance).
    assert est.lower_bound_ >= est.lower_bounds_[-1] - 1e-6 * abs(est.lower_bounds_[-1])
    assert est.n_features_in_ == 12
    assert est.model_.sizes == {"i": 25, "j": 12, "k": 8, "r": 3}


def test_fit_transform_equals_transform_and_inverse_transform_reconstructs(cp_data):
    est = fit(cp_data)
    W = est.fit_transform(cp_data)
    np.testing.assert_allclose(W, est.transform(cp_data), rtol=1e-6)
    np.testing.assert_allclose(W, est.factors_[0], rtol=1e-12)
    xhat = est.inverse_transform(W)
    np.testing.assert_allclose(xhat, np.einsum("ir,jr,kr->ijk", *est.factors_), rtol=1e-12)
    entries = np.array([[0, 0, 0], [24, 11, 7], [3, 5, 2]])
    np.testing.assert_allclose(est.predict_entries(entries), xhat[tuple(entries.T)], rtol=1e-12)


def test_fold_in_recovers_the_fitted_rows(cp_data):
    """Folding in training rows (new data to the estimator) gives their posterior
    means back: with the other factors held, each row's optimum is unique.

    The multiplicative updates converge linearly, so both the joint fit and the
    fold-in run to a fixed point (tol=0); at 2000 iterations they still differ
    by 7e-5, at 8000 by 4e-7.
    """
    est = fit(cp_data, tol=0.0, max_iter=8000)
    W = est.transform(cp_data[:10])
    np.testing.assert_allclose(W, est.factors_[0][:10], rtol=1e-5)


def test_fold_in_with_missing_entries(cp_data):
    est = fit(cp_data)
    X = cp_data[:5].copy()
    X[:, :6, :] = np.nan
    W = est.transform(X)
    assert W.shape == (5, 3) and np.all(np.isfinite(W)) and np.all(W > 0)


def test_score_is_log_evidence_on_training_data_and_predictive_on_new(cp_data):
    est = fit(cp_data[:20])
    assert est.score(cp_data[:20]) == est.log_evidence_
    new = est.score(cp_data[20:])
    assert np.isfinite(new) and new < 0
    # the predictive evidence of more samples is lower (it is a log probability)
    assert est.score(cp_data[18:]) < new


def test_em_has_no_evidence_and_scores_the_log_joint(cp_data):
    est = fit(cp_data, method="em", prior_shape=1.0)
    assert not hasattr(est, "log_evidence_")
    assert est.score(cp_data) == est.lower_bound_
    with pytest.raises(ValueError, match="posterior mode, which does not exist"):
        fit(cp_data, method="em", prior_shape=0.5)


def test_same_random_state_same_numbers_and_clone_and_pickle(cp_data):
    est = fit(cp_data, n_init=2)
    again = clone(est).fit(cp_data)
    np.testing.assert_array_equal(est.lower_bounds_, again.lower_bounds_)
    for a, b in zip(est.factors_, again.factors_):
        np.testing.assert_array_equal(a, b)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.transform(cp_data[:3]), est.transform(cp_data[:3]))
    assert restored.score(cp_data) == est.score(cp_data)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_random_state_forms(cp_data):
    seeded = fit(cp_data, random_state=np.random.RandomState(3), max_iter=5, tol=0)
    generator = fit(cp_data, random_state=np.random.default_rng(3), max_iter=5, tol=0)
    assert np.isfinite(seeded.lower_bound_) and np.isfinite(generator.lower_bound_)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_parallel_restarts_equal_serial(cp_data, layout):
    """joblib workers run with fewer BLAS and numba threads than this process;
    the sparse kernels' sums do not depend on thread counts, so the result is
    identical (dense BLAS products may differ in the last bits on large data)."""
    X = sparse.COO.from_numpy(cp_data) if layout == "sparse" else cp_data
    serial = fit(X, n_init=3)
    parallel = fit(X, n_init=3, n_jobs=2)
    np.testing.assert_array_equal(serial.lower_bounds_, parallel.lower_bounds_)


@pytest.mark.usefixtures("kernels_in_parallel_at_any_size")
def test_sparse_results_do_not_depend_on_thread_counts(cp_data):
    """Every thread numba has against one (a pytest-xdist worker runs with
    its share of the cores, so the count is set here, not inherited)."""
    import numba
    from threadpoolctl import threadpool_limits

    most = numba.config.NUMBA_NUM_THREADS
    if most == 1:
        pytest.skip("numba has one thread on this machine: nothing to compare")
    X = sparse.COO.from_numpy(cp_data)
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(most)
        with threadpool_limits(most):
            reference = fit(X).lower_bounds_
        numba.set_num_threads(1)
        with threadpool_limits(1):
            single = fit(X).lower_bounds_
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_array_equal(single, reference)


def test_restarts_keep_the_best_bound(cp_data):
    """Each restart runs on its own spawned generator; the best final bound is kept."""
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference import vb
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.inference._driver import OptimizerProblem, Settings, optimize

    best = fit(cp_data, n_init=4, random_state=1)
    priors = gamma_priors(best.model_, 1.0, 1.0)
    data = as_observed_tensor(cp_data)
    problem = OptimizerProblem(
        vb, make_contractor(best.model_, data, "poisson"), priors,
        start=lambda rng, restart, contractor: vb.init(rng, best.model_, contractor, priors))
    finals = [
        optimize(problem, [child], Settings(best.max_iter, best.tol)).objectives[-1]
        for child in np.random.default_rng(1).spawn(4)
    ]
    assert len(set(finals)) == 4  # the restarts differ
    assert best.lower_bounds_[-1] == max(finals)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_convergence_warning(cp_data):
    with pytest.warns(ConvergenceWarning, match="did not converge in 3 iterations"):
        fit(cp_data, max_iter=3)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_verbose_prints_progress(cp_data, capsys):
    fit(cp_data, verbose=2, verbose_interval=5, max_iter=10, tol=0)
    out = capsys.readouterr().out
    assert "Initialization 0" in out and "Iteration 10" in out


@pytest.mark.parametrize("acceleration", [None, "squarem"])
def test_sparse_input_matches_dense(cp_data, acceleration):
    """Plain steps: the same numbers. SQUAREM's extrapolations amplify the
    two layouts' rounding differences (by up to its squared step length), so
    there the two fits agree to the stopping rule's promise: bounds within
    tol nats, each within tol of its limit."""
    dense = fit(cp_data, acceleration=acceleration)
    from_sparse = fit(sparse.COO.from_numpy(cp_data), acceleration=acceleration)
    if acceleration is not None:
        assert abs(from_sparse.lower_bound_ - dense.lower_bound_) <= 2 * dense.tol
        return
    np.testing.assert_allclose(from_sparse.lower_bounds_, dense.lower_bounds_, rtol=1e-8)
    np.testing.assert_allclose(
        from_sparse.transform(sparse.COO.from_numpy(cp_data[:4])), dense.transform(cp_data[:4]), rtol=1e-8
    )


@pytest.mark.parametrize(
    "entries, message",
    [
        (np.array([[0, 0]]), "shape \\(n_entries, 3\\)"),
        (np.array([[0.0, 0.0, 0.0]]), "integers"),
        (np.array([[0, 12, 0]]), "outside"),
        (np.array([[-1, 0, 0]]), "outside"),
    ],
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_predict_entries_errors(cp_data, entries, message):
    est = fit(cp_data, max_iter=5, tol=0)
    with pytest.raises(ValueError, match=message):
        est.predict_entries(entries)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_transform_errors(cp_data):
    est = fit(cp_data, max_iter=5)
    with pytest.raises(ValueError, match="X has 5 features, but PLTF is expecting 12"):
        est.transform(cp_data[:, :5])
    with pytest.raises(ValueError, match="fitted to data of shape"):
        est.transform(cp_data[:, :, :4])
    with pytest.raises(ValueError, match="Expected an array of shape"):
        est.inverse_transform(np.ones((2, 4)))
    rng = np.random.default_rng(0)
    hier = PLTF("fi,ik,kt->ft", {"k": 2}, fixed_factors={0: rng.gamma(1.0, size=(6, 3))}, max_iter=5)
    hier.fit(rng.poisson(2.0, size=(6, 9)).astype(float))
    with pytest.raises(ValueError, match="no sample-mode factor"):
        hier.transform(np.ones((6, 9)))


@pytest.mark.parametrize(
    "params, message",
    [
        ({"method": "hmc"}, "method"),
        ({"n_draws": 0}, "n_draws"),
        ({"thin": 0}, "thin"),
        ({"tol": -1.0}, "tol"),
        ({"prior_shape": 0.0}, "prior_shape"),
        ({"prior_rate": {0: 1.0}}, "prior_rate has no entry for factor 1"),
        ({"prior_rate": np.ones(4)}, "does not broadcast"),
        ({"n_init": 0}, "n_init"),
    ],
)
def test_parameter_errors(cp_data, params, message):
    with pytest.raises(ValueError, match=message):
        fit(cp_data, **params)


def test_a_non_finite_objective_raises_instead_of_reaching_score(cp_data, monkeypatch):
    from sklearn_pltf.inference import vb

    real_step = vb.step

    def step_reporting_nan(state, contractor, priors):
        state, _ = real_step(state, contractor, priors)
        return state, vb.VBInfo(objective=float("nan"))

    monkeypatch.setattr(vb, "step", step_reporting_nan)
    with pytest.raises(FloatingPointError, match="objective became nan"):
        fit(cp_data)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_transform_of_a_sample_does_not_depend_on_the_batch(cp_data, layout):
    """Each new sample is folded in on its own (start, updates and stopping)."""
    est = fit(cp_data)
    new = cp_data + np.arange(cp_data.shape[0])[:, None, None] % 3  # not the training data
    as_input = sparse.COO.from_numpy if layout == "sparse" else np.asarray
    whole = est.transform(as_input(new))
    np.testing.assert_allclose(est.transform(as_input(new[::3])), whole[::3], rtol=1e-12)
    order = np.random.default_rng(0).permutation(len(new))
    np.testing.assert_allclose(est.transform(as_input(new[order])), whole[order], rtol=1e-12)


def test_the_training_data_keep_the_factor_the_fit_ended_with(cp_data):
    """The fit's final fold-in starts from the fit's own factor: transform of
    the training data returns it (as fit_transform does), its bound here is
    at least the fit's last, and the same rows folded in from the common start,
    as new data, reach the same fixed point within the fold-in's tolerance."""
    est = fit(cp_data)
    W = est.fit_transform(cp_data)
    np.testing.assert_array_equal(est.transform(cp_data), W)
    np.testing.assert_array_equal(est.transform(sparse.COO.from_numpy(cp_data)), W)
    assert est.lower_bound_ >= est.lower_bounds_[-1] - 1e-9 * abs(est.lower_bounds_[-1])
    reversed_rows = est.transform(cp_data[::-1])[::-1]  # a new batch to the fingerprint
    assert not np.array_equal(reversed_rows, W)
    np.testing.assert_allclose(reversed_rows, W, rtol=1e-4, atol=1e-4 * W.max())


@pytest.mark.parametrize("model, ard, repeated", [
    ("ir,jr,kr->ijk", "rr", "'r'"),
    ("ip,jq,kr,pqr->ijk", "pqp", "'p'"),
    ("ip,jq,kr,pqr->ijk", "pqrqp", "'p', 'q'"),
])
def test_ard_naming_a_latent_index_twice_is_refused(cp_data, model, ard, repeated):
    """ard names a set of indices: a letter given twice is a slip for
    another, refused before the fit (it once reached the relevance solve as
    a singular matrix)."""
    with pytest.raises(ValueError, match=f"ard='{ard}' names latent index {repeated} more than "
                                         "once"):
        fit(cp_data, model=model, n_components=2, ard=ard, max_iter=3)


@pytest.mark.parametrize("n_components, message", [
    ({0: 3}, "n_components names 0, which it has not; its keys are latent index letters"),
    ({"r": 3, ("r",): 3}, r"n_components names \('r',\), which it has not"),
    ({"r": 3, "i": 3}, "n_components names 'i', which it has not"),  # an observed index
])
def test_n_components_keys_that_are_no_latent_index_are_refused(cp_data, n_components, message):
    with pytest.raises(ValueError, match=message):
        fit(cp_data, n_components=n_components, max_iter=3)
