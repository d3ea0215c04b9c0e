"""EM and VB: objectives never decrease, by coordinate ascent and with
SQUAREM's safeguard; dense and sparse data give the same fit; for count data
(Poisson) and for binary data (Bernoulli–Poisson)."""

import numpy as np
import pytest
import sparse

from sklearn_pltf import PLTF

# (model, data shape, latent sizes, {position: fixed factor shape})
MODELS = {
    "nmf": ("ik,kj->ij", (20, 15), 3, {}),
    "cp3": ("ir,jr,kr->ijk", (8, 7, 6), 3, {}),
    "cp4": ("ir,jr,kr,lr->ijkl", (5, 4, 4, 3), 2, {}),
    "tucker": ("ip,jq,kr,pqr->ijk", (8, 7, 6), {"p": 2, "q": 3, "r": 2}, {}),
    "convolutive": ("r,d,dtr->t", (40,), {"r": 2}, {2: (4, 40, 2)}),
    "hierarchical": ("fi,ik,kt->ft", (12, 15), {"k": 3}, {0: (12, 5)}),
}


def make_problem(name, missing, seed=0, likelihood="poisson"):
    model, shape, sizes, fixed_shapes = MODELS[name]
    rng = np.random.default_rng(seed)
    fixed = {a: rng.gamma(1.0, size=s) for a, s in fixed_shapes.items()}
    X = rng.poisson(3.0, size=shape).astype(float)
    if likelihood == "bernoulli":  # binary, about a third ones
        X = (X > 3.0).astype(float)
    mask = rng.random(shape) >= (0.3 if missing else 0.0)
    return model, sizes, fixed, X, mask


ACCELERATIONS = [None, "squarem", "anderson"]


def fit_trajectory(name, method, layout, missing, n_iter=40, likelihood="poisson",
                   acceleration=None):
    model, sizes, fixed, X, mask = make_problem(name, missing, likelihood=likelihood)
    data = sparse.COO.from_numpy(X) if layout == "sparse" else X
    est = PLTF(model, sizes, method=method, fixed_factors=fixed, max_iter=n_iter, tol=0.0,
               prior_shape=1.5 if method == "em" else 1.0, random_state=0,
               likelihood=likelihood, acceleration=acceleration)
    return est.fit(data, mask=mask).lower_bounds_


def assert_same_fit(sparse_, dense, acceleration):
    """Plain steps: the same trajectory. SQUAREM: the same until one run's
    bound repeats exactly (where tol=0 stops it), and the same limit."""
    if acceleration is not None:
        shared = min(len(sparse_), len(dense))
        np.testing.assert_allclose(sparse_[-1], dense[-1], rtol=1e-8)
        sparse_, dense = sparse_[:shared], dense[:shared]
    np.testing.assert_allclose(sparse_, dense, rtol=1e-8)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("acceleration", ACCELERATIONS)
@pytest.mark.parametrize("missing", [False, True], ids=["observed", "missing"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("method", ["vb", "em"])
@pytest.mark.parametrize("name", list(MODELS))
def test_objective_never_decreases(name, method, layout, missing, acceleration):
    trajectory = fit_trajectory(name, method, layout, missing, acceleration=acceleration)
    steps = np.diff(trajectory)
    # Coordinate ascent (VB) and EM are monotone; allow only rounding error.
    assert np.all(steps >= -1e-9 * np.abs(trajectory[:-1])), steps.min()
    assert trajectory[-1] > trajectory[0]  # and the fit actually moved


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("acceleration", ACCELERATIONS)
@pytest.mark.parametrize("missing", [False, True], ids=["observed", "missing"])
@pytest.mark.parametrize("name", list(MODELS))
def test_dense_and_sparse_give_the_same_trajectory(name, missing, acceleration):
    dense = fit_trajectory(name, "vb", "dense", missing, acceleration=acceleration)
    sparse_ = fit_trajectory(name, "vb", "sparse", missing, acceleration=acceleration)
    assert_same_fit(sparse_, dense, acceleration)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("acceleration", ACCELERATIONS)
@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("method", ["vb", "em"])
@pytest.mark.parametrize("name", list(MODELS))
def test_bernoulli_objective_never_decreases(name, method, layout, acceleration):
    """Bernoulli–Poisson: the VB bound (with the zero-truncated q(N) at the
    ones) and the EM log joint are coordinate ascent too."""
    trajectory = fit_trajectory(name, method, layout, True, likelihood="bernoulli",
                                acceleration=acceleration)
    steps = np.diff(trajectory)
    assert np.all(steps >= -1e-9 * np.abs(trajectory[:-1])), steps.min()
    assert trajectory[-1] > trajectory[0]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method", ["vb", "em"])
@pytest.mark.parametrize("name", list(MODELS))
def test_bernoulli_dense_and_sparse_give_the_same_trajectory(name, method):
    dense = fit_trajectory(name, method, "dense", True, likelihood="bernoulli")
    sparse_ = fit_trajectory(name, method, "sparse", True, likelihood="bernoulli")
    assert_same_fit(sparse_, dense, None)
