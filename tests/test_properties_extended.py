"""Property-based robustness (hypothesis) of the less-travelled paths:
coupled models (:class:`~sklearn_pltf.CoupledPLTF`), learned hyper-parameters
(``prior_rate="auto"``, ``ard``, ``prune``), the compound Poisson likelihood
and array-API input.

As in ``test_properties.py``: random valid input gives finite factors of the
right shapes and a finite bound, leaves the user's arrays as they were and
gives the same numbers for the same ``random_state``; random invalid input
raises a ``ValueError`` or ``TypeError`` that names the problem; a failed
refit leaves a fitted estimator as it was."""

import warnings

import array_api_strict as xp
import numpy as np
import pytest
import sklearn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from sklearn_pltf import PLTF, BayesianNMF, CoupledPLTF, PoissonCP
from sklearn_pltf.engine._likelihood import CompoundPoisson

PROPERTY = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

QUICK = dict(max_iter=15, tol=1e-4, random_state=0)
COUPLED = ("ir,jr->ij", "ir,rf->if")
TIED = ("ia,jb,abk->ijk", "ia,af->if")


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: convergence warnings
        return call(*args, **kwargs)


def _fit(estimator, X, **kwargs):
    return _quiet(estimator.fit, X, **kwargs)


@st.composite
def counts(draw, shape):
    """A count array of ``shape`` (entries 0 to 5), at least one count."""
    values = draw(st.lists(st.integers(0, 5), min_size=int(np.prod(shape)),
                           max_size=int(np.prod(shape))))
    X = np.array(values, dtype=np.float64).reshape(shape)
    X.flat[draw(st.integers(0, X.size - 1))] += 1
    return X


@st.composite
def shapes(draw, ndim):
    return tuple(draw(st.lists(st.integers(2, 5), min_size=ndim, max_size=ndim)))


def _as_likelihood(X, likelihood):
    """``X`` turned into data of ``likelihood``: 0/1 for Bernoulli,
    non-negative reals (with exact zeros) for compound Poisson."""
    if likelihood == "bernoulli":
        return (X > 1).astype(float) if np.any(X > 1) else (X > 0).astype(float)
    if likelihood == "compound_poisson":
        return X * 0.37
    return X


def _same_state(est, before):
    """``est`` holds exactly the attributes (the same objects) of ``before``."""
    assert est.__dict__.keys() == before.keys()
    assert all(est.__dict__[k] is before[k] for k in before)


def _unchanged(given, copies):
    for array, kept in zip(given, copies):
        if array is None:
            assert kept is None
        else:
            np.testing.assert_array_equal(array, kept)


def _observed_sizes(factors, X):
    """Each factor's size along its observed axis matches the data's
    (BayesianNMF's H is (rank, n_features): its second axis)."""
    sizes = [factors[0].shape[0], factors[1].shape[1]] if X.ndim == 2 else [
        f.shape[0] for f in factors]
    return sizes == list(X.shape)


def _finite_factors(est, shapes_=None):
    assert all(np.all(np.isfinite(f)) for f in est.factors_)
    if shapes_ is not None:
        assert [f.shape for f in est.factors_] == shapes_


# ============================================================ coupled models
@st.composite
def coupled_problems(draw):
    """Two tensors sharing the row factor, each with its own likelihood,
    missing entries (NaN or a mask) and maybe tensor weights."""
    I, J, F = draw(st.integers(3, 6)), draw(st.integers(2, 5)), draw(st.integers(2, 4))
    names = ["poisson", "bernoulli", "compound_poisson"]
    likelihood = draw(st.sampled_from(names + [[a, b] for a in names for b in names]),
                      label="likelihood")
    per_tensor = likelihood if isinstance(likelihood, list) else [likelihood] * 2
    X = _as_likelihood(draw(counts((I, J))), per_tensor[0])
    Y = _as_likelihood(draw(counts((I, F))), per_tensor[1])
    missing = draw(st.sampled_from(["none", "nan", "mask"]), label="missing")
    mask = None
    if missing == "nan":
        X[0, 0] = np.nan
    elif missing == "mask":
        mask = [np.ones(X.shape, dtype=bool), None]
        mask[0][-1, -1] = False
    weights = draw(st.sampled_from([None, (1.0, 1.0), (1.0, 0.5), (2.0, 1.0)]), label="weights")
    return X, Y, likelihood, mask, weights


@PROPERTY
@given(problem=coupled_problems(), rank=st.integers(1, 2))
def test_coupled_valid_input_gives_finite_numbers_and_is_not_modified(problem, rank):
    X, Y, likelihood, mask, weights = problem
    tensors = [X, Y]
    copies = [X.copy(), Y.copy()]
    mask_copies = None if mask is None else [m if m is None else m.copy() for m in mask]
    est = CoupledPLTF(COUPLED, rank, likelihood=likelihood, tensor_weights=weights, **QUICK)
    _fit(est, tensors, mask=mask)
    I, J = X.shape
    _finite_factors(est, [(I, rank), (J, rank), (rank, Y.shape[1])])
    assert est.shared_factors_ == ("ir",)
    assert np.isfinite(est.lower_bound_) and np.all(np.isfinite(est.lower_bounds_))
    if weights is None or weights == (1.0, 1.0):
        assert np.isfinite(est.log_evidence_)
    else:
        assert not hasattr(est, "log_evidence_")
    assert np.isfinite(est.score(tensors, mask=mask))
    assert np.all(np.isfinite(est.predict_entries([[0, 0], [I - 1, 1]], tensor=1)))
    _unchanged(tensors, copies)
    if mask is not None:
        _unchanged(mask, mask_copies)
    again = _fit(clone(est), [X.copy(), Y.copy()], mask=mask)
    np.testing.assert_array_equal(again.lower_bounds_, est.lower_bounds_)
    for a, b in zip(again.factors_, est.factors_):
        np.testing.assert_array_equal(a, b)


@PROPERTY
@given(data=st.data(), rank=st.integers(1, 2))
def test_coupled_tied_valid_input_gives_finite_numbers_and_is_not_modified(data, rank):
    n, K, F = data.draw(st.integers(3, 5)), data.draw(st.integers(1, 2)), data.draw(
        st.integers(2, 3))
    relation = data.draw(st.sampled_from(["poisson", "bernoulli"]), label="relation")
    X = _as_likelihood(data.draw(counts((n, n, K))), relation)
    X[0, 1, 0] = 1.0  # an off-diagonal entry
    Y = data.draw(counts((n, F)))
    weights = data.draw(st.sampled_from([None, (1.0, 2.0)]), label="weights")
    copies = [X.copy(), Y.copy()]
    est = CoupledPLTF(TIED, rank, likelihood=[relation, "poisson"], tied_factors={1: 0},
                      tensor_weights=weights, **QUICK)
    _fit(est, [X, Y])
    _finite_factors(est, [(n, rank), (n, rank), (rank, rank, K), (rank, F)])
    np.testing.assert_array_equal(est.factors_[0], est.factors_[1])
    assert np.isfinite(est.lower_bound_)
    assert np.isfinite(est.score([X, Y]))
    _unchanged([X, Y], copies)
    again = _fit(clone(est), [X, Y])
    np.testing.assert_array_equal(again.lower_bounds_, est.lower_bounds_)


def _coupled_pair(data):
    I, J, F = data.draw(st.integers(3, 5)), data.draw(st.integers(2, 4)), data.draw(
        st.integers(2, 4))
    return data.draw(counts((I, J))), data.draw(counts((I, F)))


COUPLED_INVALID_DATA = {
    "negative": (lambda X, Y: [X - 10.0, Y], {}, "negative|Negative"),
    "infinite": (lambda X, Y: [X, np.where(Y == Y.max(), np.inf, Y)], {}, "infinit|finite"),
    "one tensor": (lambda X, Y: [X], {}, "2 tensors"),
    "three tensors": (lambda X, Y: [X, Y, Y], {}, "2 tensors"),
    "one array": (lambda X, Y: X, {}, "sequence"),
    "rows disagree": (lambda X, Y: [X, Y[:-1]], {}, "size"),
    "one-dimensional": (lambda X, Y: [X.ravel(), Y], {}, "dimension|axes|ndim|index"),
    "not binary": (lambda X, Y: [X + 2.0, Y], dict(likelihood=["bernoulli", "poisson"]),
                   "neither 0 nor 1|binary"),
    "negative reals": (lambda X, Y: [X, Y * 0.5 - 3.0], dict(likelihood="compound_poisson"),
                       "negative|Negative"),
    "all missing": (lambda X, Y: [np.full(X.shape, np.nan), Y], {}, "missing"),
    "bad mask shape": (lambda X, Y: [X, Y], dict(mask=[np.ones((1, 1), dtype=bool), None]),
                       "mask"),
}


@pytest.mark.parametrize("problem", COUPLED_INVALID_DATA)
@PROPERTY
@given(data=st.data())
def test_coupled_invalid_data_raise_an_error_that_names_the_problem(problem, data):
    X, Y = _coupled_pair(data)
    corrupt, params, message = COUPLED_INVALID_DATA[problem]
    params = dict(params)
    mask = params.pop("mask", None)
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(CoupledPLTF(COUPLED, 2, **params, **QUICK), corrupt(X, Y), mask=mask)


COUPLED_INVALID_PARAMETERS = {
    "tensor_weights": st.one_of(
        st.tuples(st.just(1.0), st.floats(-5.0, 0.0)),
        st.tuples(st.sampled_from([0.0, -1.0, np.nan, np.inf, -np.inf]), st.just(1.0)),
        st.lists(st.floats(0.5, 2.0), min_size=1, max_size=1),
        st.lists(st.floats(0.5, 2.0), min_size=3, max_size=4),
        st.tuples(st.just(1.0), st.sampled_from([None, "a", True]))),
    "n_components": st.one_of(
        st.builds(lambda k, v: {"r": 2, k: v}, st.sampled_from("abcdeghkqz"), st.integers(1, 3)),
        st.builds(lambda k: {k: 2}, st.sampled_from(["i", "j", "f", 0, 1])),
        st.builds(lambda v: {"r": v}, st.integers(-3, 0))),
    "likelihood": st.one_of(
        st.lists(st.just("poisson"), min_size=3, max_size=4),
        st.lists(st.just("poisson"), min_size=1, max_size=1),
        st.text(min_size=1, max_size=6).filter(
            lambda s: s not in {"poisson", "bernoulli", "compound_poisson"})),
    "prior_rate": st.floats(-5.0, 0.0),
    "prior_shape": st.floats(-5.0, 0.0),
}


@pytest.mark.parametrize("parameter", COUPLED_INVALID_PARAMETERS)
@PROPERTY
@given(data=st.data())
def test_coupled_invalid_parameters_are_named(parameter, data):
    X, Y = _coupled_pair(data)
    value = data.draw(COUPLED_INVALID_PARAMETERS[parameter], label=parameter)
    est = CoupledPLTF(COUPLED, 2, **QUICK).set_params(**{parameter: value})
    message = "n_components|rank" if parameter == "n_components" else parameter
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(est, [X, Y])


@PROPERTY
@given(data=st.data(), tied=st.sampled_from([{1: 5}, {5: 0}, {"jb": "xx"}, {0: 0}]))
def test_coupled_bad_tied_factors_are_named(data, tied):
    n = data.draw(st.integers(3, 5))
    X, Y = data.draw(counts((n, n, 2))), data.draw(counts((n, 3)))
    with pytest.raises((ValueError, TypeError), match="tied_factors"):
        _fit(CoupledPLTF(TIED, 2, tied_factors=tied, **QUICK), [X, Y])


@PROPERTY
@given(data=st.data(), bad=st.sampled_from(["negative", "infinite", "one tensor", "rows disagree",
                                            "not binary", "weights"]))
def test_coupled_a_failed_refit_leaves_the_fitted_estimator_as_it_was(data, bad):
    X, Y = _coupled_pair(data)
    est = _fit(CoupledPLTF(COUPLED, 2, **QUICK), [X, Y])
    before, score = dict(est.__dict__), est.score([X, Y])
    if bad == "weights":
        est.set_params(tensor_weights=(1.0, -1.0))
        with pytest.raises(ValueError, match="tensor_weights"):
            _fit(est, [X, Y])
        est.set_params(tensor_weights=before["tensor_weights"])
    else:
        corrupt, params, _ = COUPLED_INVALID_DATA[bad]
        est.set_params(**params)
        with pytest.raises((ValueError, TypeError)):
            _fit(est, corrupt(X, Y))
        est.set_params(likelihood=before["likelihood"])
    _same_state(est, before)
    assert est.score([X, Y]) == score


# ============================================== learned hyper-parameters
LEARNING = {
    "nmf-auto": (lambda: BayesianNMF(2, prior_rate="auto", **QUICK), 2),
    "nmf-ard": (lambda: BayesianNMF(2, ard=True, **QUICK), 2),
    "nmf-ard-auto": (lambda: BayesianNMF(2, ard=True, prior_rate="auto", **QUICK), 2),
    "nmf-prune": (lambda: BayesianNMF(2, ard=True, prune=True, **QUICK), 2),
    "cp-ard-prune": (lambda: PoissonCP(2, ard=True, prune=True, **QUICK), 3),
    "pltf-ard-r": (lambda: PLTF("ir,jr,kr->ijk", 2, ard="r", prior_rate="auto", **QUICK), 3),
}


def _learned_are_finite(est):
    rates = est.prior_rate_
    assert all(np.all(np.isfinite(r)) and np.all(np.asarray(r) > 0) for r in rates)
    if hasattr(est, "relevance_") and est.relevance_ is not None:
        assert np.all(np.isfinite(est.relevance_))


@pytest.mark.parametrize("name", LEARNING)
@PROPERTY
@given(data=st.data())
def test_learned_rates_on_valid_input_give_finite_numbers(name, data):
    make, ndim = LEARNING[name]
    X = data.draw(counts(data.draw(shapes(ndim))))
    if data.draw(st.booleans(), label="missing entry"):
        X[0, 0] = np.nan
    given_X = X.copy()
    est = _fit(make(), X)
    np.testing.assert_array_equal(X, given_X)
    rank = est.factors_[0].shape[1]
    assert 1 <= rank <= 2
    assert est.factors_[0].shape[0] == X.shape[0]
    assert _observed_sizes(est.factors_, X)
    _finite_factors(est)
    _learned_are_finite(est)
    assert np.isfinite(est.log_evidence_)
    assert np.isfinite(est.score(X))
    W = est.transform(X)
    assert W.shape == (X.shape[0], rank) and np.all(np.isfinite(W))
    np.testing.assert_array_equal(X, given_X)
    again = _fit(make(), X)
    np.testing.assert_array_equal(again.lower_bounds_, est.lower_bounds_)
    np.testing.assert_array_equal(again.factors_[0], est.factors_[0])


@pytest.mark.parametrize("name", ["nmf-auto", "nmf-ard", "nmf-ard-auto"])
@PROPERTY
@given(data=st.data())
def test_learned_rates_with_partial_fit_give_finite_numbers(name, data):
    make, _ = LEARNING[name]
    X = data.draw(counts((data.draw(st.integers(4, 6)), data.draw(st.integers(2, 5)))))
    given_X = X.copy()
    est = make().set_params(total_samples=2 * X.shape[0])
    half = X.shape[0] // 2
    _quiet(est.partial_fit, X[:half])
    _quiet(est.partial_fit, X[half:])
    np.testing.assert_array_equal(X, given_X)
    _finite_factors(est)
    _learned_are_finite(est)
    W = est.transform(X)
    assert W.shape == (X.shape[0], 2) and np.all(np.isfinite(W))
    assert np.isfinite(est.score(X))
    np.testing.assert_array_equal(X, given_X)


LEARNING_INVALID_PARAMETERS = [
    ("prior_rate", lambda: BayesianNMF(2), st.one_of(
        st.builds(lambda k: {k: 1.0}, st.sampled_from(["W", "H", "zz", "ik", 2, 7, -1])),
        st.builds(lambda k: {0: 1.0, k: 2.0}, st.sampled_from([2, 3, "x"])))),
    ("prior_rate", lambda: BayesianNMF(2), st.text(min_size=1, max_size=5).filter(
        lambda s: s != "auto")),
    ("n_components", lambda: PLTF("ir,jr->ij", 2), st.builds(
        lambda k: {"r": 2, k: 1}, st.sampled_from(["q", "x", "z", "i", "j"]))),
    ("ard", lambda: PLTF("ir,jr->ij", 2), st.sampled_from(["q", "i", "rr", "xyz"])),
    ("prune", lambda: BayesianNMF(2), st.just(True)),  # prune needs ard
    ("method", lambda: BayesianNMF(2, prior_rate="auto"), st.sampled_from(["em", "gibbs"])),
    ("method", lambda: BayesianNMF(2, ard=True), st.sampled_from(["em", "gibbs"])),
]


@pytest.mark.parametrize("parameter, make, values", LEARNING_INVALID_PARAMETERS,
                         ids=[f"{p}-{i}" for i, (p, _, _) in
                              enumerate(LEARNING_INVALID_PARAMETERS)])
@PROPERTY
@given(data=st.data())
def test_learned_rates_invalid_parameters_are_named(parameter, make, values, data):
    X = data.draw(counts(data.draw(shapes(2))))
    message = {"prune": "ard", "method": "method", "ard": "ard|latent"}.get(parameter, parameter)
    est = make().set_params(**{parameter: data.draw(values)})
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(est, X)


@pytest.mark.parametrize("name", ["nmf-auto", "nmf-prune", "cp-ard-prune"])
@PROPERTY
@given(data=st.data())
def test_learned_rates_invalid_data_are_named(name, data):
    make, ndim = LEARNING[name]
    X = data.draw(counts(data.draw(shapes(ndim))))
    bad, message = data.draw(st.sampled_from([
        (X - 10.0, "negative"), (np.where(X == X.max(), np.inf, X), "infinit|finite"),
        (X.ravel(), "dimension|2D|3D"), (X + 1j, "[Cc]omplex")]))
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(make(), bad)


@pytest.mark.parametrize("name", ["nmf-ard-auto", "nmf-prune"])
@PROPERTY
@given(data=st.data(), bad=st.sampled_from(["negative", "infinite", "prior_rate key",
                                            "partial_fit prune"]))
def test_learned_rates_a_failed_refit_leaves_the_fitted_estimator_as_it_was(name, data, bad):
    make, _ = LEARNING[name]
    X = data.draw(counts(data.draw(shapes(2))))
    est = _fit(make(), X)
    before, score, W = dict(est.__dict__), est.score(X), est.transform(X)
    if bad == "prior_rate key":
        params = est.get_params()
        est.set_params(prior_rate={"zz": 1.0})
        with pytest.raises(ValueError, match="prior_rate"):
            _fit(est, X)
        est.set_params(prior_rate=params["prior_rate"])
    elif bad == "partial_fit prune":
        est.set_params(prune=True)
        with pytest.raises(ValueError, match="prune|partial_fit"):
            _quiet(est.partial_fit, X)
        est.set_params(prune=before["prune"])
    else:
        corrupt = X - 10.0 if bad == "negative" else np.where(X == X.max(), np.inf, X)
        with pytest.raises(ValueError):
            _fit(est, corrupt)
    _same_state(est, before)
    assert est.score(X) == score
    np.testing.assert_array_equal(est.transform(X), W)


# ================================================ compound Poisson likelihood
@st.composite
def non_negative_reals(draw, shape):
    """Non-negative reals with exact zeros and at least one positive value."""
    values = draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 20.0)),
                           min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    X = np.array(values, dtype=np.float64).reshape(shape)
    X.flat[draw(st.integers(0, X.size - 1))] += 0.5
    return X


COMPOUND = {
    "nmf": (lambda likelihood: BayesianNMF(2, likelihood=likelihood, **QUICK), 2),
    "nmf-em": (lambda likelihood: BayesianNMF(2, likelihood=likelihood, method="em", **QUICK), 2),
    "cp": (lambda likelihood: PoissonCP(2, likelihood=likelihood, **QUICK), 3),
    "nmf-ard": (lambda likelihood: BayesianNMF(2, likelihood=likelihood, ard=True, **QUICK), 2),
}


@pytest.mark.parametrize("name", COMPOUND)
@PROPERTY
@given(data=st.data(), jump_mean=st.one_of(st.none(), st.floats(0.05, 20.0)))
def test_compound_poisson_valid_input_gives_finite_numbers_and_is_not_modified(name, data,
                                                                                jump_mean):
    make, ndim = COMPOUND[name]
    likelihood = "compound_poisson" if jump_mean is None else CompoundPoisson(jump_mean)
    X = data.draw(non_negative_reals(data.draw(shapes(ndim))))
    if data.draw(st.booleans(), label="missing entry"):
        X[0, 0] = np.nan
    given_X = X.copy()
    est = _fit(make(likelihood), X)
    np.testing.assert_array_equal(X, given_X)
    _finite_factors(est)
    assert _observed_sizes(est.factors_, X)
    if name != "nmf-em":
        assert np.isfinite(est.log_evidence_)
    assert np.isfinite(est.score(X))
    W = est.transform(X)
    assert W.shape[0] == X.shape[0] and np.all(np.isfinite(W))
    np.testing.assert_array_equal(X, given_X)
    again = _fit(make(likelihood), X)
    np.testing.assert_array_equal(again.factors_[0], est.factors_[0])
    assert again.score(X) == est.score(X)


@PROPERTY
@given(jump_mean=st.one_of(
    st.floats(max_value=0.0, allow_nan=False),
    st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-320])))
def test_compound_poisson_bad_jump_means_are_a_value_error_naming_jump_mean(jump_mean):
    with pytest.raises(ValueError, match="jump_mean"):
        CompoundPoisson(jump_mean)


@PROPERTY
@given(jump_mean=st.sampled_from([None, "1.0", "abc", True, [1.0], (1.0, 2.0), np.array([1.0]),
                                  1 + 0j, {}]))
def test_compound_poisson_jump_means_that_are_no_number_are_a_type_error(jump_mean):
    with pytest.raises(TypeError, match="jump_mean"):
        CompoundPoisson(jump_mean)


@pytest.mark.parametrize("name", ["nmf", "cp"])
@PROPERTY
@given(data=st.data())
def test_compound_poisson_invalid_data_are_named(name, data):
    make, ndim = COMPOUND[name]
    X = data.draw(non_negative_reals(data.draw(shapes(ndim))))
    bad, message = data.draw(st.sampled_from([
        (X - X.max() - 1.0, "negative"), (np.where(X == X.max(), np.inf, X), "infinit|finite"),
        (X.ravel(), "dimension|2D|3D"), (X + 1j, "[Cc]omplex"),
        (np.full(X.shape, np.nan), "missing")]))
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(make("compound_poisson"), bad)


@PROPERTY
@given(data=st.data(), bad=st.sampled_from(["negative", "infinite", "likelihood"]))
def test_compound_poisson_a_failed_refit_leaves_the_fitted_estimator_as_it_was(data, bad):
    X = data.draw(non_negative_reals(data.draw(shapes(2))))
    est = _fit(BayesianNMF(2, likelihood=CompoundPoisson(0.5), **QUICK), X)
    before, score, W = dict(est.__dict__), est.score(X), est.transform(X)
    if bad == "likelihood":  # real values are not counts
        est.set_params(likelihood="bernoulli")
        with pytest.raises(ValueError):
            _fit(est, X)
        est.set_params(likelihood=before["likelihood"])
    else:
        corrupt = X - X.max() - 1.0 if bad == "negative" else np.where(X == X.max(), np.inf, X)
        with pytest.raises(ValueError):
            _fit(est, corrupt)
    _same_state(est, before)
    assert est.score(X) == score
    np.testing.assert_array_equal(est.transform(X), W)


# ============================================================= array-API input
# The dispatch is on for the whole test (every example): a function-scoped
# fixture entered once is what these tests want.
ARRAY_PROPERTY = settings(PROPERTY, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture
def dispatch():
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _host(array):
    return np.from_dlpack(array)


def _strict(array):
    return xp.asarray(np.asarray(array))


ARRAY_API = {
    "nmf": (lambda: BayesianNMF(2, **QUICK), 2),
    "nmf-em": (lambda: BayesianNMF(2, method="em", **QUICK), 2),
    "nmf-bernoulli": (lambda: BayesianNMF(2, likelihood="bernoulli", **QUICK), 2),
    "cp": (lambda: PoissonCP(2, **QUICK), 3),
}


@pytest.mark.usefixtures("dispatch")
@pytest.mark.parametrize("name", ARRAY_API)
@ARRAY_PROPERTY
@given(data=st.data())
def test_array_api_valid_input_gives_finite_numbers_and_is_not_modified(name, data):
    make, ndim = ARRAY_API[name]
    X = data.draw(counts(data.draw(shapes(ndim))))
    if name == "nmf-bernoulli":
        X = _as_likelihood(X, "bernoulli")
    if data.draw(st.booleans(), label="missing entry"):
        X[0, 0] = np.nan
    given_X = _strict(X)
    kept = X.copy()
    est = _fit(make(), given_X)
    np.testing.assert_array_equal(_host(given_X), kept)
    factors = [_host(f) for f in est.factors_]
    assert all(np.all(np.isfinite(f)) for f in factors)
    assert _observed_sizes(factors, X)
    if name != "nmf-em":
        assert np.isfinite(float(est.log_evidence_))
    assert np.isfinite(float(est.score(given_X)))
    W = _host(est.transform(given_X))
    assert W.shape == (X.shape[0], 2) and np.all(np.isfinite(W))
    np.testing.assert_array_equal(_host(given_X), kept)
    again = _fit(make(), _strict(X))
    for a, b in zip(again.factors_, est.factors_):
        np.testing.assert_array_equal(_host(a), _host(b))


@pytest.mark.usefixtures("dispatch")
@ARRAY_PROPERTY
@given(data=st.data(), problem=st.sampled_from(["negative", "infinite", "all missing",
                                                "not binary", "mask shape", "mask dtype"]))
def test_array_api_invalid_data_are_named(data, problem):
    X = data.draw(counts(data.draw(shapes(2))))
    likelihood, mask = "poisson", None
    if problem == "negative":
        X, message = X - 10.0, "[Nn]egative"
    elif problem == "infinite":
        X, message = np.where(X == X.max(), np.inf, X), "infinit"
    elif problem == "all missing":
        X, message = np.full(X.shape, np.nan), "missing"
    elif problem == "not binary":
        X, likelihood, message = X + 2.0, "bernoulli", "neither 0 nor 1"
    elif problem == "mask shape":
        mask, message = _strict(np.ones((1, 1), dtype=bool)), "mask"
    else:
        mask, message = _strict(np.full(X.shape, 2.0)), "mask"
    with pytest.raises(ValueError, match=message):
        _fit(BayesianNMF(2, likelihood=likelihood, **QUICK), _strict(X), mask=mask)


ARRAY_API_REFUSALS = [
    (lambda: BayesianNMF(2, prior_rate="auto", **QUICK), "fit", "learned prior rates"),
    (lambda: BayesianNMF(2, ard=True, **QUICK), "fit", "learned prior rates"),
    (lambda: BayesianNMF(2, ard=True, prune=True, **QUICK), "fit", "learned prior rates"),
    (lambda: BayesianNMF(2, likelihood="compound_poisson", **QUICK), "fit", "compound_poisson"),
    (lambda: BayesianNMF(2, likelihood=CompoundPoisson(2.0), **QUICK), "fit", "compound_poisson"),
    (lambda: BayesianNMF(2, **QUICK), "partial_fit", "partial_fit"),
    (lambda: CoupledPLTF(COUPLED, 2, **QUICK), "coupled", "CoupledPLTF"),
]


@pytest.mark.usefixtures("dispatch")
@pytest.mark.parametrize("make, call, asked", ARRAY_API_REFUSALS,
                         ids=[f"{c}-{i}" for i, (_, c, _) in enumerate(ARRAY_API_REFUSALS)])
@ARRAY_PROPERTY
@given(data=st.data())
def test_array_api_numpy_only_parts_refuse_with_a_type_error(make, call, asked, data):
    X = data.draw(counts(data.draw(shapes(2))))
    est = make()
    with pytest.raises(TypeError, match=asked):
        if call == "coupled":
            est.fit([_strict(X), _strict(X[:, :2])])
        else:
            getattr(est, call)(_strict(X))


@pytest.mark.usefixtures("dispatch")
@ARRAY_PROPERTY
@given(data=st.data(), bad=st.sampled_from(["negative", "infinite", "learned rates",
                                            "numpy input after"]))
def test_array_api_a_failed_refit_leaves_the_fitted_estimator_as_it_was(data, bad):
    X = data.draw(counts(data.draw(shapes(2))))
    est = _fit(BayesianNMF(2, **QUICK), _strict(X))
    before, score = dict(est.__dict__), float(est.score(_strict(X)))
    W = _host(est.transform(_strict(X)))
    if bad == "learned rates":
        est.set_params(prior_rate="auto")
        with pytest.raises(TypeError):
            _fit(est, _strict(X))
        est.set_params(prior_rate=before["prior_rate"])
    elif bad == "numpy input after":
        with pytest.raises(ValueError):
            _fit(est, X - 10.0)
    else:
        corrupt = X - 10.0 if bad == "negative" else np.where(X == X.max(), np.inf, X)
        with pytest.raises(ValueError):
            _fit(est, _strict(corrupt))
    _same_state(est, before)
    assert float(est.score(_strict(X))) == score
    np.testing.assert_array_equal(_host(est.transform(_strict(X))), W)


def test_the_module_leaves_the_dispatch_off():
    """The fixture is per test: the other modules see scikit-learn's default."""
    assert not sklearn.get_config()["array_api_dispatch"]
