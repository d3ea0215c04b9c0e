"""scikit-learn's estimator checks over every estimator the package exports."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import sklearn_pltf
from sklearn_pltf import PLTF, BayesianNMF, GibbsNTF, PoissonCP, TuckerVB

FAST = {"max_iter": 30, "tol": 1e-4, "random_state": 0}

ESTIMATORS = [
    PLTF("ik,kj->ij", 2, **FAST),
    BayesianNMF(2, **FAST),
    PoissonCP(2, **FAST),
    TuckerVB(2, **FAST),
    GibbsNTF(2, n_warmup=20, n_draws=30, random_state=0),
]


def test_every_exported_estimator_is_checked():
    exported = {name for name in sklearn_pltf.__all__ if name != "Model"}
    assert exported == {type(e).__name__ for e in ESTIMATORS}


# Every check passes: no expected failures to declare.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    """Each of scikit-learn's check_* functions asserts (raises AssertionError or
    an informative error) when the estimator breaks its contract."""
    check(estimator)
