"""Array-API input (scikit-learn's ``array_api_dispatch``) on array-api-strict.

array-api-strict is NumPy underneath but offers only the standard, so a
fit that passes here uses nothing outside it: the same code runs on
PyTorch and CuPy (``benchmarks/run_gpu.py`` checks them on a GPU). The
array-API engine does the same arithmetic as the NumPy one in another order
(matrix products instead of planned einsums, NumPy's pairwise sums against
the compiled kernels' blocked ones), so in float64 the two agree to rounding:
1e-10 relative leaves a margin of about 10^5 over double precision's
2.2e-16 accumulated over these fits' few thousand terms and iterations.
"""

import pickle

import array_api_strict as xp
import matplotlib
import numpy as np
import pytest
import sklearn
from sklearn.base import clone

from sklearn_pltf import (PLTF, AllocationSMC, BayesianNMF, BayesianRESCAL, CoupledPLTF, GibbsNTF,
                          PoissonCP, TuckerVB)
from sklearn_pltf.datasets import make_poisson_cp


RTOL = 1e-10


@pytest.fixture(autouse=True)
def dispatch():
    with sklearn.config_context(array_api_dispatch=True):
        yield


def host(array):
    return np.from_dlpack(array)


def strict(array):
    return xp.asarray(np.asarray(array))


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(0)
    return rng.poisson(rng.gamma(1.0, 2.0, (24, 3)) @ rng.gamma(1.0, 1.0, (3, 15))).astype(float)


@pytest.fixture(scope="module")
def tensor():
    return make_poisson_cp((12, 9, 7), 3, random_state=1)[0].astype(float)


def _with_missing(X, fraction=0.2, seed=3):
    X = np.array(X)
    X[np.random.default_rng(seed).random(X.shape) < fraction] = np.nan
    return X


def _cases():
    em = dict(method="em", prior_shape=1.0)
    return [
        ("nmf-vb", BayesianNMF(3, prior_shape=0.5, random_state=0), "counts", None),
        ("nmf-em", BayesianNMF(3, **em, random_state=0), "counts", None),
        ("nmf-nan", BayesianNMF(3, random_state=0), "counts", "nan"),
        ("nmf-mask", BayesianNMF(3, random_state=0), "counts", "mask"),
        ("nmf-restarts", BayesianNMF(2, n_init=3, n_jobs=2, random_state=0), "counts", None),
        ("nmf-plain-steps", BayesianNMF(3, acceleration=None, random_state=0), "counts", None),
        ("cp-vb", PoissonCP(3, random_state=0), "tensor", None),
        ("cp-em-nan", PoissonCP(3, **em, random_state=0), "tensor", "nan"),
        ("tucker", TuckerVB((2, 3, 2), random_state=0), "tensor", None),
        ("pltf-mask", PLTF("ir,jr,kr->ijk", 2, random_state=0), "tensor", "mask"),
        ("bernoulli", BayesianNMF(3, likelihood="bernoulli", random_state=0), "binary", None),
        ("bernoulli-em", BayesianNMF(3, likelihood="bernoulli", **em, random_state=0), "binary",
         "nan"),
    ]


CASES = _cases()


def _data(kind, missing, counts, tensor):
    X = {"counts": counts, "tensor": tensor, "binary": (counts > 1).astype(float)}[kind]
    mask = None
    if missing == "nan":
        X = _with_missing(X)
    elif missing == "mask":
        mask = np.random.default_rng(4).random(X.shape) > 0.2
    return X, mask


@pytest.mark.parametrize("name, estimator, kind, missing", CASES, ids=[c[0] for c in CASES])
def test_the_fit_equals_the_numpy_fit(name, estimator, kind, missing, counts, tensor):
    X, mask = _data(kind, missing, counts, tensor)
    on_numpy = clone(estimator).fit(X, mask=mask)
    given = strict(X)
    fitted = clone(estimator).fit(given, mask=None if mask is None else strict(mask))
    assert np.array_equal(host(given), X, equal_nan=True)  # the input is left as it was
    assert isinstance(fitted.lower_bound_, float) and isinstance(fitted.n_iter_, int)
    assert fitted.n_iter_ == on_numpy.n_iter_
    assert fitted.lower_bound_ == pytest.approx(on_numpy.lower_bound_, rel=RTOL)
    if on_numpy.method == "vb":
        assert isinstance(fitted.log_evidence_, float)
        assert fitted.log_evidence_ == pytest.approx(on_numpy.log_evidence_, rel=RTOL)
    for ours in fitted.factors_:
        assert type(ours) is type(given) and ours.dtype == xp.float64
    # What the data identify: the bound (above) and X̂. The factors are not
    # identified: where they trade scale along a direction in which the bound
    # is nearly flat (Tucker's core and modes; a masked PLTF), rounding moves
    # them apart (1e-10 at the default tol) while X̂ stays together.
    np.testing.assert_allclose(host(fitted.reconstruct()), on_numpy.reconstruct(), rtol=RTOL)


@pytest.mark.parametrize("name, estimator, kind, missing",
                         [c for c in CASES if c[0] in ("nmf-vb", "nmf-em", "cp-em-nan", "tucker",
                                                       "pltf-mask", "bernoulli")],
                         ids=lambda c: c if isinstance(c, str) else "")
def test_transform_score_and_predictions_equal_numpy(name, estimator, kind, missing, counts,
                                                     tensor):
    X, mask = _data(kind, missing, counts, tensor)
    on_numpy = clone(estimator).fit(X, mask=mask)
    fitted = clone(estimator).fit(strict(X), mask=None if mask is None else strict(mask))
    new = X[:5]
    W = fitted.transform(strict(new))
    assert type(W) is type(strict(new))
    assert fitted.score(strict(new)) == pytest.approx(on_numpy.score(new), rel=RTOL)
    training_mask = None if mask is None else strict(mask)
    assert fitted.score(strict(X), mask=training_mask) == pytest.approx(
        on_numpy.score(X, mask=mask), rel=RTOL)
    # The new samples' X̂ (their factor W is no more identified than the fit's).
    np.testing.assert_allclose(host(fitted.inverse_transform(W)),
                               on_numpy.inverse_transform(on_numpy.transform(new)), rtol=RTOL)
    np.testing.assert_allclose(host(fitted.reconstruct()), on_numpy.reconstruct(), rtol=RTOL)
    entries = np.array([[0] * X.ndim, [1] * X.ndim, [3] + [2] * (X.ndim - 1)])
    predicted = fitted.predict_entries(entries)
    assert type(predicted) is type(W)
    np.testing.assert_allclose(host(predicted), on_numpy.predict_entries(entries), rtol=RTOL)


def test_fixed_factors_stay_fixed_and_equal_numpy(counts):
    basis = np.random.default_rng(5).gamma(1.0, 1.0, (3, counts.shape[1]))
    estimator = PLTF("ik,kj->ij", fixed_factors={1: basis}, random_state=0)
    on_numpy = clone(estimator).fit(counts)
    fitted = clone(estimator).fit(strict(counts))
    np.testing.assert_array_equal(host(fitted.factors_[1]), basis)
    assert fitted.lower_bound_ == pytest.approx(on_numpy.lower_bound_, rel=RTOL)
    np.testing.assert_allclose(host(fitted.factors_[0]), on_numpy.factors_[0], rtol=RTOL)


def test_fixed_factors_that_cannot_reach_the_data_are_refused(counts):
    basis = np.ones((2, counts.shape[1]))
    basis[:, 0] = 0.0
    with pytest.raises(ValueError, match="fixed factors make the model's mean X̂ zero"):
        PLTF("ik,kj->ij", fixed_factors={1: basis}).fit(strict(counts))


def test_fit_transform_equals_fit_then_transform(counts):
    estimator = BayesianNMF(3, random_state=0)
    W = clone(estimator).fit_transform(strict(counts))
    np.testing.assert_allclose(host(W), host(clone(estimator).fit(strict(counts)).transform(
        strict(counts))), rtol=1e-6)  # fold-in's own tolerance, 1e-6 relative per sample


def test_float32_stays_float32(counts):
    X32 = strict(counts.astype(np.float32))
    fitted = BayesianNMF(3, random_state=0).fit(X32)
    on_numpy = BayesianNMF(3, random_state=0).fit(counts)
    assert all(f.dtype == xp.float32 for f in fitted.factors_)
    assert fitted.transform(X32).dtype == xp.float32
    assert fitted.reconstruct().dtype == xp.float32
    assert np.isfinite(fitted.lower_bound_)
    # Single precision (eps 1.2e-7) over a few hundred entries and iterations:
    # the bound agrees with float64's to well within 1e-4 relative.
    assert fitted.lower_bound_ == pytest.approx(on_numpy.lower_bound_, rel=1e-4)


def test_a_float32_fit_stops_at_the_float64_bound():
    """float32's bound (its data terms rounded in float32, every sum and the
    factors' terms in float64) moves by its rounding near the fixed point;
    the stopping rule reads that as no gain and stops within ``tol`` plus
    that rounding (4 ε₃₂ |B| / √N) of the float64 fit's bound."""
    rng = np.random.default_rng(1)
    X = rng.poisson(rng.gamma(1.0, 1.0, (300, 5)) @ rng.gamma(1.0, 1.0, (5, 200))).astype(float)
    fitted = BayesianNMF(5, random_state=0).fit(strict(X.astype(np.float32)))
    on_numpy = BayesianNMF(5, random_state=0).fit(X)
    assert fitted.converged_ and fitted.n_iter_ < fitted.max_iter
    rounding = 4 * np.finfo(np.float32).eps * abs(on_numpy.lower_bound_) / np.sqrt(X.size)
    assert abs(fitted.lower_bound_ - on_numpy.lower_bound_) <= fitted.tol + rounding


def test_integer_input_is_fitted_in_float64(counts):
    fitted = BayesianNMF(3, random_state=0).fit(xp.asarray(counts.astype(np.int64)))
    assert fitted.factors_[0].dtype == xp.float64
    assert fitted.lower_bound_ == pytest.approx(BayesianNMF(3, random_state=0).fit(
        counts).lower_bound_, rel=RTOL)


def test_pickle_clone_and_same_numbers_again(counts):
    fitted = BayesianNMF(3, random_state=0).fit(strict(counts))
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(host(again.transform(strict(counts[:4]))),
                                  host(fitted.transform(strict(counts[:4]))))
    refit = clone(fitted).fit(strict(counts))
    assert refit.lower_bound_ == fitted.lower_bound_
    np.testing.assert_array_equal(host(refit.factors_[0]), host(fitted.factors_[0]))


def test_warm_start_and_given_init_in_the_namespace(counts):
    fitted = BayesianNMF(3, random_state=0).fit(strict(counts))
    again = BayesianNMF(3, warm_start=True, random_state=1)
    again.fit(strict(counts))
    again.set_params(random_state=2)
    again.fit(strict(counts))
    assert again.lower_bound_ >= fitted.lower_bound_ - 1.0
    given = BayesianNMF(3, init=[fitted.factors_[0], fitted.factors_[1]]).fit(strict(counts))
    assert given.lower_bound_ == pytest.approx(fitted.lower_bound_, abs=1.0)


@pytest.mark.parametrize("values, message", [
    (lambda X: -X, "Negative values"),
    (lambda X: np.where(X == X.max(), np.inf, X), "infinit"),
    (lambda X: np.full_like(X, np.nan), "All entries of the data are missing"),
])
def test_bad_input_is_refused_with_the_numpy_messages(counts, values, message):
    with pytest.raises(ValueError, match=message):
        BayesianNMF(2).fit(strict(values(counts)))
    with pytest.raises(ValueError, match=message):
        BayesianNMF(2).fit(values(counts))


def test_mask_errors(counts):
    with pytest.raises(ValueError, match="The mask has shape"):
        BayesianNMF(2).fit(strict(counts), mask=strict(np.ones((2, 2), dtype=bool)))
    with pytest.raises(ValueError, match="The mask must be boolean"):
        BayesianNMF(2).fit(strict(counts), mask=strict(np.full(counts.shape, 2.0)))


def test_bernoulli_needs_binary_values(counts):
    with pytest.raises(ValueError, match="neither 0 nor 1"):
        BayesianNMF(2, likelihood="bernoulli").fit(strict(counts))


def test_a_failed_fit_leaves_the_estimator_as_it_was(counts):
    estimator = BayesianNMF(3, random_state=0).fit(strict(counts))
    before = host(estimator.factors_[0]).copy()
    with pytest.raises(ValueError):
        estimator.fit(strict(-counts))
    np.testing.assert_array_equal(host(estimator.factors_[0]), before)


@pytest.mark.parametrize("estimator, asked", [
    (BayesianNMF(2, method="gibbs"), "method='gibbs'"),
    (BayesianNMF(2, method="sgld"), "method='sgld'"),
    (PoissonCP(2, method="vb", evidence="ais"), "evidence='ais'"),
    (BayesianNMF(2, prior_rate="auto"), "learned prior rates"),
    (BayesianNMF(2, ard=True), "learned prior rates"),
    (BayesianNMF(2, init="svd"), "init='svd'"),
    (BayesianNMF(2, likelihood="compound_poisson"), "compound_poisson"),
    (BayesianRESCAL(2), "a tied factor"),
    (PLTF("ia,jb,ab->ij", 2, tied_factors={1: 0}), "a tied factor"),
    (GibbsNTF(2), "GibbsNTF"),
    (AllocationSMC(2), "AllocationSMC"),
])
def test_numpy_only_parts_refuse_with_what_to_do(estimator, asked):
    X = strict(np.ones((6, 6)))
    refusal = r"runs on NumPy arrays only.*X\.cpu\(\)\.numpy\(\)"
    with pytest.raises(TypeError, match=refusal) as error:
        estimator.fit(X)
    assert asked in str(error.value)


def test_partial_fit_and_coupled_fits_refuse(counts):
    with pytest.raises(TypeError, match="partial_fit runs on NumPy arrays only"):
        BayesianNMF(2).partial_fit(strict(counts))
    with pytest.raises(TypeError, match="runs on NumPy arrays only"):
        CoupledPLTF(["ir,jr->ij", "ir,kr->ik"], n_components=2).fit(
            [strict(counts), strict(counts)])


def test_numpy_input_keeps_the_numpy_engine_under_dispatch(counts):
    fitted = BayesianNMF(3, random_state=0).fit(counts)
    assert isinstance(fitted.factors_[0], np.ndarray)
    with sklearn.config_context(array_api_dispatch=False):
        assert BayesianNMF(3, random_state=0).fit(counts).lower_bound_ == fitted.lower_bound_


@pytest.mark.parametrize("estimator", [BayesianNMF(2, random_state=0), PoissonCP(2, random_state=0),
                                       TuckerVB(2, random_state=0),
                                       PLTF("ik,kj->ij", 2, random_state=0)],
                         ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("device_name", ["CPU_DEVICE", "device1"])
def test_scikit_learns_array_api_checks_in_float64(estimator, device_name):
    """scikit-learn's own checks: attributes and method outputs in the
    input's namespace, on its device, of the NumPy fit's shapes and dtypes,
    and inputs of another namespace refused after the fit. (Its value
    comparison asks for an absolute 2.2e-13 on ``score``, a log evidence in
    the hundreds of nats, so the values are compared above, relatively;
    float32 is kept in float32 here, unlike the NumPy engine:
    tests/test_common.py.)"""
    from sklearn.utils.estimator_checks import (check_array_api_input,
                                                check_array_api_same_namespace)

    assert estimator.__sklearn_tags__().array_api_support
    name = type(estimator).__name__
    check_array_api_input(name, estimator, "array_api_strict", device_name=device_name,
                          dtype_name="float64")
    check_array_api_same_namespace(name, estimator, "array_api_strict", device_name=device_name)


def test_inputs_of_another_namespace_than_the_fit_are_refused(counts):
    fitted = BayesianNMF(2, random_state=0).fit(strict(counts))
    with pytest.raises(ValueError, match=r"BayesianNMF.transform\(\) must use the same namespace"):
        fitted.transform(counts)
    with pytest.raises(ValueError, match=r"BayesianNMF.score\(\) must use the same namespace"):
        BayesianNMF(2, random_state=0).fit(counts).score(strict(counts))


def test_grid_search_over_the_rank_picks_the_numpy_engines_rank(tensor):
    from sklearn.model_selection import GridSearchCV

    from sklearn_pltf.model_selection import FullDataSplit

    grid = {"n_components": [1, 2, 3, 4, 5]}
    searches = [GridSearchCV(PoissonCP(random_state=0), grid, cv=FullDataSplit()).fit(X)
                for X in (tensor, strict(tensor))]
    assert searches[1].best_params_ == searches[0].best_params_ == {"n_components": 3}
    np.testing.assert_allclose(searches[1].cv_results_["mean_test_score"],
                               searches[0].cv_results_["mean_test_score"], rtol=RTOL)
    assert type(searches[1].best_estimator_.factors_[0]) is type(strict(tensor))


@pytest.mark.parametrize("method, prior_shape", [("vb", 0.5), ("em", 1.0)])
def test_a_second_device_gives_the_cpu_devices_numbers(counts, method, prior_shape):
    """array-api-strict's "device1" stands for an accelerator: nothing may
    mix it with the CPU's arrays, and the numbers are the same."""
    device = xp.Device("device1")
    X = _with_missing(counts)
    estimator = BayesianNMF(3, method=method, prior_shape=prior_shape, random_state=0)
    on_cpu = clone(estimator).fit(strict(X))
    fitted = clone(estimator).fit(xp.asarray(X, device=device))
    assert all(f.device == device for f in fitted.factors_)
    assert fitted.lower_bound_ == on_cpu.lower_bound_
    W = fitted.transform(xp.asarray(X[:4], device=device))
    assert W.device == device
    np.testing.assert_array_equal(host(xp.asarray(W, device=xp.Device("CPU_DEVICE"))),
                                  host(on_cpu.transform(strict(X[:4]))))
    assert fitted.score(xp.asarray(X[:4], device=device)) == on_cpu.score(strict(X[:4]))
    assert fitted.predict_entries(np.array([[0, 1]])).device == device


def test_nothing_the_size_of_the_data_goes_to_the_host(counts, monkeypatch):
    """Every explicit copy to the host (``to_numpy``) during fit, transform,
    score and predict_entries is the size of the factors or less; implicit
    ones would raise on array-api-strict's "device1". (scipy.special cannot
    read "device1", so there alone ψ and log Γ go through NumPy; PyTorch
    and CuPy arrays get their own library's functions from scipy.)"""
    import sklearn_pltf.engine._array_api as array_api
    import sklearn_pltf.engine._factor_checks as factor_checks
    import sklearn_pltf.estimators._base as base
    import sklearn_pltf.inference._fold_in as fold_in

    sizes = []

    def recorded(array, original=array_api.to_numpy):
        result = original(array)
        sizes.append(result.size)
        return result

    for module in (base, factor_checks, fold_in):
        monkeypatch.setattr(module, "to_numpy", recorded)
    device = xp.Device("device1")
    X = xp.asarray(_with_missing(counts), device=device)
    fitted = BayesianNMF(3, likelihood="poisson", random_state=0).fit(X)
    fitted.transform(X)
    fitted.score(X[:5, ...])
    fitted.predict_entries(np.array([[0, 0], [1, 2]]))
    assert sizes, "the fold-in's per-sample progress comes to the host"
    largest_factor = max(int(np.prod(f.shape)) for f in fitted.factors_)
    assert max(sizes) <= largest_factor < counts.size


def test_cp_weights_and_plots_of_a_fit_on_the_device(tensor):
    matplotlib.use("Agg")
    from sklearn_pltf.plotting import plot_factors

    device = xp.Device("device1")
    fitted = PoissonCP(3, random_state=0).fit(xp.asarray(tensor, device=device))
    on_numpy = PoissonCP(3, random_state=0).fit(tensor)
    assert fitted.weights_.device == device
    np.testing.assert_allclose(host(xp.asarray(fitted.weights_, device=xp.Device("CPU_DEVICE"))),
                               on_numpy.weights_, rtol=RTOL)
    assert all(f.device == device for f in fitted.normalized_factors_)
    axes = plot_factors(fitted)
    assert len(axes) == 3


def test_without_the_dispatch_arrays_are_converted_as_scikit_learn_does(counts):
    with sklearn.config_context(array_api_dispatch=False):
        fitted = BayesianNMF(3, random_state=0).fit(strict(counts))
    assert isinstance(fitted.factors_[0], np.ndarray)
    assert fitted.lower_bound_ == BayesianNMF(3, random_state=0).fit(counts).lower_bound_


def test_an_underflowing_mean_is_floored_as_the_numpy_engine_floors_it():
    """X̂ below the smallest normal float is raised to it by both engines
    (else X / X̂ is infinite); the array-API engine skips the pass only where
    a lower bound from the factors shows no entry needs it."""
    from sklearn_pltf.engine._array_contract import ArrayAPIContractor
    from sklearn_pltf.engine._array_data import as_array_api_tensor
    from sklearn_pltf.engine._contract import DenseContractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.engine._likelihood import get_likelihood
    from sklearn_pltf.engine.model import Model

    X = np.ones((3, 4))
    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": 2}, {})
    W = np.full((3, 2), 1.0)
    W[1] = 1e-200  # row 1 of X̂ is 2e-400: below the smallest float
    H = np.full((2, 4), 1e-200)
    poisson = get_likelihood("poisson")
    ours = ArrayAPIContractor(model, as_array_api_tensor(strict(X), None, xp), poisson)
    theirs = DenseContractor(model, as_observed_tensor(X), poisson)
    np.testing.assert_array_equal(host(ours.xhat([strict(W), strict(H)])), theirs.xhat([W, H]))
    assert ours.data_loglik([strict(W), strict(H)]) == pytest.approx(
        theirs.data_loglik([W, H]), rel=RTOL)
    assert ours._smallest_possible([strict(np.ones((3, 2))), strict(np.full((2, 4), 0.5))]) == 1.0


@pytest.mark.parametrize("device_name", ["CPU_DEVICE", "device1"])
def test_link_prediction_of_a_fit_on_the_device_equals_numpy(counts, device_name):
    """link_prediction_auc and cross_validate_entries on a fit where the data
    live: predictions made there, ranked on the host (once "Input arrays use
    different devices"); the folds' masks go to the device for each fit."""
    from sklearn_pltf.metrics import entry_values, link_prediction_auc
    from sklearn_pltf.model_selection import EntryKFold, cross_validate_entries

    device = xp.Device(device_name)
    X = _with_missing((counts > 1).astype(float), fraction=0.1)
    given = xp.asarray(X, device=device)
    estimator = BayesianNMF(2, likelihood="bernoulli", random_state=0)
    cv = EntryKFold(3, random_state=0)
    train, test = next(cv.split(X))
    device_train, device_test = next(cv.split(given))
    np.testing.assert_array_equal(device_train, train)
    np.testing.assert_array_equal(device_test, test)
    np.testing.assert_array_equal(entry_values(given, test), X[tuple(test.T)])
    on_numpy = link_prediction_auc(clone(estimator).fit(X, mask=train), X, test)
    fitted = clone(estimator).fit(given, mask=xp.asarray(train, device=device))
    assert fitted.factors_[0].device == device
    auc = link_prediction_auc(fitted, given, test)
    assert isinstance(auc.roc_auc, float) and isinstance(auc.pr_auc, float)
    np.testing.assert_allclose(auc, on_numpy, rtol=RTOL)
    scores = cross_validate_entries(estimator, given, cv=cv)
    expected = cross_validate_entries(estimator, X, cv=cv)
    for name in ("test_roc_auc", "test_pr_auc"):
        np.testing.assert_allclose(scores[name], expected[name], rtol=RTOL)


def test_grid_search_with_a_mask_on_the_device_ranks_by_the_evidence(counts):
    from sklearn.model_selection import GridSearchCV

    from sklearn_pltf.model_selection import FullDataSplit

    device = xp.Device("device1")
    mask = np.random.default_rng(4).random(counts.shape) > 0.2
    X, m = xp.asarray(counts, device=device), xp.asarray(mask, device=device)
    grid = [1, 2, 3]
    evidence = [BayesianNMF(k, random_state=0).fit(X, mask=m).log_evidence_ for k in grid]
    search = GridSearchCV(BayesianNMF(random_state=0), {"n_components": grid},
                          cv=FullDataSplit()).fit(X, mask=m)
    np.testing.assert_array_equal(search.cv_results_["mean_test_score"], evidence)
    assert search.best_params_["n_components"] == grid[int(np.argmax(evidence))]


def test_anderson_acceleration_asks_for_numpy_arrays(counts):
    """Its least squares run on the host: arrays of another namespace get a
    clear error, and the estimator is left as it was."""
    est = BayesianNMF(2, acceleration="anderson", random_state=0)
    with pytest.raises(ValueError, match="runs on NumPy arrays"):
        est.fit(strict(counts))
    assert not hasattr(est, "factors_")
