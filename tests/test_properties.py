"""Property-based robustness (hypothesis): random invalid input raises a
``ValueError`` or ``TypeError`` that names the problem; random valid input
gives finite factors, evidence and scores; the user's arrays are never
modified; a failed refit leaves a fitted estimator as it was."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from sklearn_pltf import AllocationSMC, BayesianNMF, GibbsNTF, PoissonCP, TuckerVB

PROPERTY = settings(max_examples=15, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

QUICK = dict(max_iter=40, tol=1e-4, random_state=0)
ESTIMATORS = {
    "nmf": (BayesianNMF(2, **QUICK), 2),
    "cp": (PoissonCP(2, **QUICK), 3),
    "tucker": (TuckerVB(2, **QUICK), 3),
    "gibbs-ntf": (GibbsNTF(2, evidence="chib", n_warmup=2, n_draws=4, random_state=0), 3),
    "allocation": (AllocationSMC(2, n_particles=100, random_state=0), 3),
}


@st.composite
def count_tensors(draw, ndim):
    """Small count tensors, every axis 2 to 5 long, at least one count."""
    shape = tuple(draw(st.lists(st.integers(2, 5), min_size=ndim, max_size=ndim)))
    values = draw(st.lists(st.integers(0, 6), min_size=int(np.prod(shape)),
                           max_size=int(np.prod(shape))))
    X = np.array(values, dtype=np.float64).reshape(shape)
    X.flat[draw(st.integers(0, X.size - 1))] += 1
    return X


def _containers(X, container):
    if container == "coo":
        return sparse.COO.from_numpy(X)
    if container == "csr" and X.ndim == 2:
        return sp.csr_matrix(X)
    return X


def _fit(estimator, X, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: convergence and R-hat warnings
        return estimator.fit(X, **kwargs)


@pytest.mark.parametrize("name", ESTIMATORS)
@PROPERTY
@given(data=st.data(), container=st.sampled_from(["dense", "coo", "csr"]))
def test_valid_input_gives_finite_numbers_and_is_not_modified(name, data, container):
    prototype, ndim = ESTIMATORS[name]
    X = data.draw(count_tensors(ndim))
    if data.draw(st.booleans(), label="missing entry"):
        X[0, 0] = np.nan if container == "dense" else X[0, 0]
    given_X = _containers(X, container)
    before = given_X.copy()
    est = _fit(clone(prototype), given_X)
    assert all(np.all(np.isfinite(f)) for f in est.factors_)
    assert np.isfinite(est.log_evidence_)
    assert np.isfinite(est.score(given_X))
    W = est.transform(given_X)
    assert W.shape == (X.shape[0], 2) and np.all(np.isfinite(W))
    if isinstance(before, np.ndarray):
        np.testing.assert_array_equal(given_X, before)
    else:
        assert (abs(given_X - before)).sum() == 0


INVALID_DATA = {
    "negative": (lambda X: X - 10.0, "negative"),
    "infinite": (lambda X: np.where(X == X.max(), np.inf, X), "infinity|finite"),
    "one-dimensional": (lambda X: X.ravel(), "2D|2-D|dimension"),
    "text": (lambda X: np.full(X.shape, "many", dtype=object), "could not convert|string|dtype"),
    "complex": (lambda X: X + 1j, "[Cc]omplex"),
    "empty": (lambda X: X[:0], "0 sample|empty|minimum of 1"),
}


@pytest.mark.parametrize("name", ["nmf", "cp", "gibbs-ntf", "allocation"])
@pytest.mark.parametrize("problem", INVALID_DATA)
@PROPERTY
@given(data=st.data())
def test_invalid_data_raise_an_error_that_names_the_problem(name, problem, data):
    prototype, ndim = ESTIMATORS[name]
    if name == "gibbs-ntf" and problem == "negative":
        return  # real-valued data: negative values are valid
    X = data.draw(count_tensors(ndim))
    corrupt, message = INVALID_DATA[problem]
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(clone(prototype), corrupt(X))


INVALID_PARAMETERS = [
    ("n_components", st.integers(-5, 0)),
    ("n_components", st.floats(0.1, 5.5).filter(lambda v: v != int(v))),
    ("prior_shape", st.floats(-5.0, 0.0)),
    ("prior_rate", st.floats(-5.0, 0.0)),
    ("max_iter", st.integers(-5, 0)),
    ("tol", st.floats(-1.0, -1e-9)),
    ("method", st.text(min_size=1, max_size=6).filter(
        lambda m: m not in {"vb", "em", "gibbs", "sada", "sgld"})),
]


@pytest.mark.parametrize("parameter, values", INVALID_PARAMETERS,
                         ids=[p for p, _ in INVALID_PARAMETERS])
@PROPERTY
@given(data=st.data())
def test_invalid_parameters_are_named(parameter, values, data):
    X = data.draw(count_tensors(2))
    est = BayesianNMF(2, **QUICK).set_params(**{parameter: data.draw(values)})
    with pytest.raises((ValueError, TypeError), match=parameter):
        est.fit(X)


@pytest.mark.parametrize("name", ["nmf", "cp", "gibbs-ntf", "allocation"])
@PROPERTY
@given(data=st.data())
def test_a_failed_refit_leaves_the_fitted_estimator_as_it_was(name, data):
    prototype, ndim = ESTIMATORS[name]
    X = data.draw(count_tensors(ndim))
    est = _fit(clone(prototype), X)
    before, transformed = dict(est.__dict__), est.transform(X)
    bad = data.draw(st.sampled_from(["infinite", "one-dimensional", "empty", "complex"]))
    with pytest.raises((ValueError, TypeError)):
        _fit(est, INVALID_DATA[bad][0](X))
    assert est.__dict__.keys() == before.keys()
    assert all(est.__dict__[k] is before[k] for k in before)
    np.testing.assert_array_equal(est.transform(X), transformed)
