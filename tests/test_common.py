"""scikit-learn's estimator checks over every estimator the package exports."""

import warnings
from numbers import Integral

import array_api_compat
import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import (
    check_array_api_input,
    check_get_feature_names_out_error,
    check_global_output_transform_pandas,
    check_set_output_transform,
    check_set_output_transform_pandas,
    check_transformer_get_feature_names_out,
    check_transformer_get_feature_names_out_pandas,
    parametrize_with_checks,
)
from sklearn.utils._param_validation import Interval, InvalidParameterError
from sklearn.utils._testing import _array_api_for_tests

import sklearn_pltf
from sklearn_pltf.estimators import MAX_RANK, check_ranks
from sklearn_pltf import (
    PLTF,
    AllocationSMC,
    BayesianNMF,
    BayesianRESCAL,
    ProbitRESCAL,
    CoupledPLTF,
    GaussianPLTF,
    GibbsNTF,
    PoissonCP,
    TuckerVB,
)

# These checks test the estimator contract, not accuracy, so the fits are
# short: a few sweeps for GibbsNTF, with Chib's evidence, whose cost follows
# the sweeps (AIS, the default, costs a fixed 1000 rungs per fit; its
# contract is tested in tests/estimators/test_gibbs_ntf.py).
FAST = {"max_iter": 30, "tol": 1e-4, "random_state": 0}

ESTIMATORS = [
    PLTF("ik,kj->ij", 2, **FAST),
    BayesianNMF(2, **FAST),
    PoissonCP(2, **FAST),
    TuckerVB(2, **FAST),
    GibbsNTF(2, evidence="chib", n_warmup=1, n_draws=2, random_state=0),
    GibbsNTF(2, likelihood="probit", nonnegative=False, n_warmup=1, n_draws=2, random_state=0),
    # a Tucker-2 string: the Gaussian family's sums for any model string
    GaussianPLTF("ip,jq,pq->ij", 1, evidence="chib", n_warmup=1, n_draws=2, random_state=0),
    AllocationSMC(2, n_particles=100, random_state=0),
    BayesianRESCAL(2, **FAST),
    ProbitRESCAL(2, n_warmup=2, n_draws=2, random_state=0),
    ProbitRESCAL(2, method="vb", max_iter=5, random_state=0),
    # learned rates and relevances (tests/inference/test_ard.py tests what they compute)
    BayesianNMF(3, ard=True, **FAST),
    PLTF("ik,kj->ij", 3, ard=True, prune=True, **FAST),
    # (10 steps: relevances shared by a core and the factors take Newton's method each step)
    TuckerVB(2, ard=True, prior_rate="auto", **{**FAST, "max_iter": 10}),
]

# The checks that fit scikit-learn's own random data (n_samples x n_features
# uniform floats) before they reach what they test.
_CHECKS_THAT_FIT_RANDOM_DATA = (
    "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object",
    "check_estimator_sparse_array", "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag", "check_estimators_dtypes",
    "check_estimators_fit_returns_self", "check_estimators_overwrite_params",
    "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_fit2d_1feature",
    "check_fit2d_1sample", "check_fit2d_predict1d", "check_fit_check_is_fitted",
    "check_fit_idempotent", "check_fit_score_takes_y", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_n_features_in",
    "check_n_features_in_after_fitting", "check_pipeline_consistency",
    "check_readonly_memmap_input", "check_transformer_data_not_an_array",
    "check_transformer_general", "check_transformer_n_iter",
    "check_transformer_preserve_dtypes", "check_array_api_input",
)

# AllocationSMC allocates whole tokens and refuses non-integer counts with a
# ValueError; scikit-learn's checks fit on uniform random floats, so these
# checks stop at that error before reaching what they test (and the NaN/inf
# check too, which fits finite random floats first). The same contracts
# (pickle, clone, refit, n_features_in_, dtypes, sparse input, transform's row
# order) are tested on counts in tests/inference/allocation/test_allocation.py.
_NON_INTEGER = "fits non-integer random data, which a token-allocation model refuses"
_ALLOCATION_EXPECTED = {name: _NON_INTEGER for name in
                        _CHECKS_THAT_FIT_RANDOM_DATA + ("check_estimators_nan_inf",)}

# BayesianRESCAL models relations among one set of entities: its data are
# square (entity x entity, or entity x entity x relation) and it refuses other
# shapes with a ValueError. scikit-learn's checks fit n_samples x n_features
# data with n_samples != n_features; these stop at that error. The same
# contracts are tested on relational data in tests/inference/relational/test_rescal.py.
_NOT_SQUARE = "fits non-square data, which a model of relations among one set of entities refuses"
_RESCAL_EXPECTED = {name: _NOT_SQUARE for name in _CHECKS_THAT_FIT_RANDOM_DATA}


# GibbsNTF(likelihood="probit") models binary data and refuses other values
# with a ValueError; these checks stop there on scikit-learn's random floats.
# The same contracts are tested on binary data in tests/inference/test_probit.py.
_NOT_BINARY = "fits non-binary random data, which the probit likelihood refuses"
_PROBIT_EXPECTED = {name: _NOT_BINARY for name in
                    _CHECKS_THAT_FIT_RANDOM_DATA + ("check_estimators_nan_inf",)
                    if name != "check_transformer_n_iter"}  # it fits 0/1 data


# ProbitRESCAL models binary relations among one set of entities and refuses
# both non-square and non-binary data; tests/inference/test_probit_rescal.py
# tests the same contracts on binary relations.
_PROBIT_RESCAL_EXPECTED = {name: f"{_NOT_SQUARE}, and non-binary data" for name in
                           _CHECKS_THAT_FIT_RANDOM_DATA + ("check_estimators_nan_inf",)}


def _expected_failed_checks(estimator):
    if isinstance(estimator, AllocationSMC):
        return _ALLOCATION_EXPECTED
    if isinstance(estimator, ProbitRESCAL):
        return _PROBIT_RESCAL_EXPECTED
    if getattr(estimator, "likelihood", None) == "probit":
        return _PROBIT_EXPECTED
    return _RESCAL_EXPECTED if isinstance(estimator, BayesianRESCAL) else {}


# An estimator of several tensors at once: its X is a list of arrays, so
# scikit-learn runs only the checks that apply to such input (its tags say
# it takes no 2-D array); tests/estimators/test_coupled.py tests its contracts.
MULTI_TENSOR = [CoupledPLTF(("ik,kj->ij", "ik,kf->if"), 2, **FAST),
                CoupledPLTF(("ia,jb,abk->ijk", "ia,af->if"), 2, tied_factors={1: 0}, **FAST)]


def test_every_exported_estimator_is_checked():
    exported = {name for name in sklearn_pltf.__all__ if name not in ("Model", "CompoundPoisson")}
    assert exported == {type(e).__name__ for e in ESTIMATORS + MULTI_TENSOR}


@parametrize_with_checks(MULTI_TENSOR)
def test_sklearn_checks_that_apply_to_several_tensors(estimator, check):
    """Each of scikit-learn's check_* functions that applies to an estimator
    of a list of tensors raises (AssertionError or an informative error)
    when the estimator breaks its contract."""
    check(estimator)


# Every check passes except AllocationSMC's on non-integer data and
# BayesianRESCAL's on non-square data (above); the array-API check on float32
# input asks what the NumPy engine does, and check_float32_input_is_kept
# asks what the array-API engine does instead.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    """Each of scikit-learn's check_* functions asserts (raises AssertionError or
    an informative error) when the estimator breaks its contract."""
    if _asks_float32_like_numpy(check):
        check_float32_input_is_kept(type(estimator).__name__, estimator, **check.keywords)
        return
    check(estimator)


def _asks_float32_like_numpy(check):
    """scikit-learn's array-API check on float32 input, which expects the
    fitted arrays of the NumPy fit's dtype."""
    return (getattr(check, "func", None) is check_array_api_input
            and check.keywords.get("dtype_name") == "float32")


def check_float32_input_is_kept(name, estimator, array_namespace, device_name=None,
                                dtype_name="float32"):
    """scikit-learn's ``check_array_api_input`` with the one expectation the
    array-API engine changes on purpose: float32 input is fitted in float32
    (half the memory and the memory traffic), where the NumPy engine's
    compiled kernels fit it in float64. Every array attribute of the NumPy
    fit, and each transform's output, is in the input's namespace, on its
    device, of the NumPy fit's shape, and float32."""
    xp, device = _array_api_for_tests(array_namespace, device_name, dtype_name)
    X = np.random.default_rng(0).poisson(2.0, size=(12, 5)).astype(np.float32)
    reference = clone(estimator).fit(X)
    with config_context(array_api_dispatch=True):
        X_xp = xp.asarray(X, device=device)
        fitted = clone(estimator).fit(X_xp)
        outputs = {"transform": (fitted.transform(X_xp), reference.transform(X))}
        outputs["inverse_transform"] = (fitted.inverse_transform(outputs["transform"][0]),
                                        reference.inverse_transform(outputs["transform"][1]))
    for key, value in vars(reference).items():
        if isinstance(value, np.ndarray):
            outputs[key] = (getattr(fitted, key), value)
        elif isinstance(value, list) and value and isinstance(value[0], np.ndarray):
            outputs.update({f"{key}[{i}]": (array, value[i])
                            for i, array in enumerate(getattr(fitted, key))})
    namespace = array_api_compat.array_namespace(X_xp)
    for key, (array, numpy_array) in outputs.items():
        shape = numpy_array.shape
        if key == "lower_bounds_":  # one per iteration; rounding moves the stopping point
            shape = (len(numpy_array) - reference.n_iter_ + fitted.n_iter_,)
        assert array_api_compat.array_namespace(array) is namespace, f"{name}.{key} namespace"
        assert array_api_compat.device(array) == array_api_compat.device(X_xp), f"{name}.{key}"
        assert tuple(array.shape) == shape, f"{name}.{key} shape"
        assert array.dtype == X_xp.dtype, f"{name}.{key} is {array.dtype}, not float32"


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_every_estimator_shares_the_base(estimator):
    """One skeleton fits, transforms and scores every estimator: validation
    once, one generator, the stale attributes cleared, a failed fit undone.
    No estimator re-implements it."""
    from sklearn_pltf.estimators._skeleton import BaseFactorization

    cls = type(estimator)
    assert isinstance(estimator, BaseFactorization)
    for name in ("_fit", "fit_transform", "_is_training_data", "_check_sample_shape"):
        assert getattr(cls, name) is getattr(BaseFactorization, name), f"{cls.__name__}.{name}"


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_one_vocabulary(estimator):
    """The same thing has the same name everywhere: the algorithm is
    ``method``, a Gamma prior's rate ``prior_rate``."""
    params = estimator.get_params()
    assert "method" in params and "random_state" in params
    assert not {"sampler", "rate"} & set(params)


def _natural_data(estimator):
    """Counts each estimator models: square relations for BayesianRESCAL,
    binary data for the probit likelihood."""
    rng = np.random.default_rng(0)
    if isinstance(estimator, ProbitRESCAL):
        return rng.binomial(1, 0.3, size=(8, 8)).astype(float)
    if getattr(estimator, "likelihood", None) == "probit":
        return rng.binomial(1, 0.3, size=(12, 5)).astype(float)
    if isinstance(estimator, BayesianRESCAL):
        return rng.poisson(1.0, size=(8, 8)).astype(float)
    return rng.poisson(2.0, size=(12, 5)).astype(float)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_set_output_pandas_names_the_columns(estimator):
    """``set_output(transform="pandas")`` (and the global config) gives a
    DataFrame whose columns are ``get_feature_names_out()`` and whose index
    is the input's, from ``transform`` and ``fit_transform``."""
    X = _natural_data(estimator)
    frame = pd.DataFrame(X, index=[f"s{i}" for i in range(X.shape[0])],
                         columns=[f"f{j}" for j in range(X.shape[1])])
    est = clone(estimator).set_output(transform="pandas")
    fitted = est.fit_transform(frame)
    names = est.get_feature_names_out()
    prefix = type(estimator).__name__.lower()
    assert list(names) == [f"{prefix}{k}" for k in range(est._n_features_out)]
    for out in (fitted, est.transform(frame)):
        assert isinstance(out, pd.DataFrame)
        assert list(out.columns) == list(names) and list(out.index) == list(frame.index)
    np.testing.assert_array_equal(fitted.to_numpy(), clone(estimator).fit_transform(X))
    with config_context(transform_output="pandas"):
        assert isinstance(clone(estimator).fit(X).transform(X), pd.DataFrame)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_get_feature_names_out_before_fit_and_in_a_pipeline(estimator):
    with pytest.raises(NotFittedError):
        clone(estimator).get_feature_names_out()
    X = _natural_data(estimator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe = make_pipeline(clone(estimator), StandardScaler()).fit(X)
    assert list(pipe.get_feature_names_out()) == list(pipe[0].get_feature_names_out())


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", [e for e in ESTIMATORS
                                       if not _expected_failed_checks(e)],
                         ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("check", [check_set_output_transform, check_set_output_transform_pandas,
                                   check_global_output_transform_pandas,
                                   check_transformer_get_feature_names_out,
                                   check_transformer_get_feature_names_out_pandas,
                                   check_get_feature_names_out_error],
                         ids=lambda c: c.__name__)
def test_sklearn_output_checks(estimator, check):
    """scikit-learn's set_output and feature-name checks, which
    ``parametrize_with_checks`` leaves out, on their random data (estimators
    that refuse such data are tested on theirs above). They test output
    containers, not the evidence, so GibbsNTF skips its Chib runs."""
    est = clone(estimator)
    if isinstance(est, (GibbsNTF, GaussianPLTF)):
        est.set_params(evidence=None)
    check(type(estimator).__name__, est)


# ------------------------------------------------ parameters beyond the table
# One estimator of each exported class, for the parameter checks below.
_ONE_OF_EACH = [e for i, e in enumerate(ESTIMATORS + MULTI_TENSOR)
                if type(e) not in {type(f) for f in (ESTIMATORS + MULTI_TENSOR)[:i]}]
def _parameter_cases(make_cases):
    """``make_cases(estimator)`` for one estimator of each class."""
    return [pytest.param(estimator, *case, id=f"{type(estimator).__name__}-{case[0]}")
            for estimator in _ONE_OF_EACH for case in make_cases(estimator)]


def _fit_data(estimator):
    if isinstance(estimator, CoupledPLTF):
        X = _natural_data(estimator)
        return [X, X[:, :3]]
    return _natural_data(estimator)


def _integer_parameters(estimator):
    """The parameters whose constraints declare an integer (``Integral`` or
    an ``Interval`` over it) and take no bool otherwise."""
    def integer(c):
        return c is Integral or c is int or isinstance(c, Interval) and c.type is Integral

    return sorted(name for name, table in type(estimator)._parameter_constraints.items()
                  if any(integer(c) for c in table) and "boolean" not in table)


def test_the_integer_parameters_are_found():
    found = {type(e).__name__: _integer_parameters(e) for e in _ONE_OF_EACH}
    assert {"n_components", "max_iter", "n_init", "n_draws", "n_warmup", "n_jobs"} <= set(
        found["PoissonCP"])
    assert {"n_components", "n_particles", "n_moves", "n_islands", "max_iter"} <= set(
        found["AllocationSMC"])
    assert {"n_components", "n_draws", "n_warmup"} <= set(found["GibbsNTF"])
    assert {"n_components", "max_iter", "n_warmup"} <= set(found["CoupledPLTF"])


@pytest.mark.parametrize("estimator, name, value", _parameter_cases(
    lambda e: [(name, value) for name in _integer_parameters(e) for value in (True, False)]))
def test_a_bool_for_an_integer_parameter_is_refused_at_fit(estimator, name, value):
    """scikit-learn's Interval(Integral, ...) takes a bool (bool is an
    Integral): n_warmup=True ran as 1, and SGLD then failed inside NumPy.
    Every integer parameter of every estimator refuses it, by one rule
    (scikit-learn's own message where the bool is also out of range, as
    max_iter=False)."""
    est = clone(estimator).set_params(**{name: value})
    with pytest.raises(InvalidParameterError,
                       match=rf"The '{name}' parameter of {type(estimator).__name__} must be "
                             rf".*Got {value} instead\."):
        est.fit(_fit_data(estimator))


def _huge_ranks(estimator):
    cases = [("n_components", 10**20, "n_components=100000000000000000000")]
    if isinstance(estimator, TuckerVB):
        cases.append(("n_components", (2, 10**20), r"n_components\[1\]=100000000000000000000"))
    if isinstance(estimator, (PLTF, CoupledPLTF)):
        cases.append(("n_components", {"k": 10**20}, r"n_components\['k'\]=100000000000000000000"))
    return cases


@pytest.mark.parametrize("estimator, name, value, where", _parameter_cases(_huge_ranks))
def test_a_rank_no_array_can_hold_names_n_components_and_the_limit(estimator, name, value,
                                                                    where):
    """n_components=10**20 was refused deep in the fit as 'prior_shape of
    shape () does not broadcast'; now one check names it and the limit."""
    est = clone(estimator).set_params(**{name: value})
    with pytest.raises(ValueError, match=rf"{where} is more than the largest rank a factor can "
                                         rf"have, {MAX_RANK} \(2\^60 - 1\)"):
        est.fit(_fit_data(estimator))


def test_the_largest_rank_an_array_can_hold_passes_the_check():
    for ranks in (MAX_RANK, (2, MAX_RANK), {"k": MAX_RANK}, "not a rank", True):
        check_ranks(ranks)  # what is left is the constraints' and the model's to check
    with pytest.raises(ValueError, match=r"--ranks=1152921504606846976 is more than"):
        check_ranks(MAX_RANK + 1, name="--ranks")
