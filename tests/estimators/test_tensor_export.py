"""CP weights, normalised factors, the full reconstruction and the export
to TensorLy agree with the fitted factors."""

import warnings

import numpy as np
import pytest
import tensorly

from sklearn_pltf import AllocationSMC, BayesianNMF, GibbsNTF, PoissonCP, TuckerVB



@pytest.fixture
def tensor():
    return np.random.default_rng(0).poisson(2.0, size=(8, 6, 5)).astype(float)


def _fit(estimator, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X)


@pytest.mark.parametrize("make", [
    lambda: PoissonCP(2, random_state=0),
    lambda: GibbsNTF(2, evidence=None, n_warmup=20, n_draws=20, random_state=0),
    lambda: GibbsNTF(2, nonnegative=False, evidence=None, n_warmup=20, n_draws=20,
                     random_state=0),
    lambda: AllocationSMC(2, method="vb", random_state=0),
], ids=["poisson-cp", "gibbs-ntf", "signed-ntf", "allocation"])
def test_cp_weights_normalised_factors_and_tensorly(tensor, make):
    est = _fit(make(), tensor)
    weights, normalized = est.weights_, est.normalized_factors_
    for factor in normalized:
        np.testing.assert_allclose(np.abs(factor).sum(axis=0), 1.0, rtol=1e-12)
    X_hat = est.reconstruct()
    assert X_hat.shape == tensor.shape
    np.testing.assert_allclose(np.einsum("r,ir,jr,kr->ijk", weights, *normalized), X_hat,
                               rtol=1e-10, atol=1e-12)
    cp = est.to_tensorly()
    np.testing.assert_allclose(tensorly.cp_to_tensor(cp), X_hat, rtol=1e-10, atol=1e-12)


def test_tucker_to_tensorly_and_reconstruction(tensor):
    est = TuckerVB((2, 3, 2), random_state=0).fit(tensor)
    tucker = est.to_tensorly()
    assert tucker.core.shape == (2, 3, 2)
    np.testing.assert_allclose(tensorly.tucker_to_tensor(tucker), est.reconstruct(), rtol=1e-10)


def test_reconstruct_is_inverse_transform_of_the_fitted_factor():
    X = np.random.default_rng(0).poisson(2.0, size=(12, 7)).astype(float)
    est = BayesianNMF(2, random_state=0).fit(X)
    np.testing.assert_allclose(est.reconstruct(), est.inverse_transform(est.transform(X)),
                               rtol=1e-10)
