"""The declared interfaces a new likelihood, kernel or sampler implements
(``typing.Protocol``), and a test-only likelihood that plugs in through
them: the recipe of ``doc/contributing.rst`` ("Adding a likelihood")."""

import numpy as np
import pytest
import sparse
from scipy.special import gammaln, xlogy

from sklearn_pltf import BayesianNMF, PoissonCP
from sklearn_pltf.engine._kernels import POISSON_RATIO
from sklearn_pltf.engine._likelihood import LIKELIHOODS, Likelihood, get_likelihood
from sklearn_pltf.inference import em, vb
from sklearn_pltf.inference._driver import OptimizerKernel
from sklearn_pltf.engine.model import Model
from sklearn_pltf.inference._hyperparameters import LearnedRatesKernel, rate_learning


class CountsLikelihood:
    """A Poisson likelihood written anew from its interface alone, in NumPy:
    the counts are observed (x = N). Its ratio is Poisson's, so it declares
    the compiled Poisson pass (``kernel_mode``)."""

    name = "counts"
    kernel_mode = POISSON_RATIO
    jump_rate = 1.0  # read by the compound pass only
    counts_observed = True
    mean_is_linear = True

    def check(self, data):
        """Counts: non-negative values, which every input check already asks."""

    def count_ratio(self, x, xhat, out=None):
        return np.divide(x, xhat, out=out)

    def entry_log_terms(self, x, xhat):
        return x * np.log(xhat)

    def log_terms(self, x, xhat, out=None):
        return float(np.sum(self.entry_log_terms(x, xhat), dtype=np.float64))

    def entry_log_likelihood(self, x, xhat):
        return x * np.log(xhat) - xhat - gammaln(x + 1)

    def log_base_measure(self, data):
        return -data.value_sum(lambda x: gammaln(x + 1.0))

    def draw_counts(self, rng, x, xhat):
        return np.asarray(x, dtype=np.int64)

    def predictive(self, xhat_draws):
        return np.mean(xhat_draws, axis=0)

    def saturated_log_likelihood(self, data):
        return data.value_sum(lambda x: xlogy(x, x) - x - gammaln(x + 1.0))


def test_the_shipped_likelihoods_and_kernels_have_the_declared_interfaces():
    for likelihood in LIKELIHOODS.values():
        assert isinstance(likelihood, Likelihood)
    assert isinstance(CountsLikelihood(), Likelihood)
    assert not isinstance(object(), Likelihood)
    model = Model.parse("ik,kj->ij").bind((6, 5), {"k": 2})
    learning = rate_learning(model, model.free, "", True, False, False)
    for kernel in (vb, em, LearnedRatesKernel(vb, learning)):
        assert isinstance(kernel, OptimizerKernel)


def test_a_likelihood_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="likelihood must be one of"):
        get_likelihood(object())
    with pytest.raises(ValueError, match="likelihood"):
        BayesianNMF(2, likelihood=object()).fit(np.ones((4, 3)))


@pytest.mark.parametrize("make, shape", [(BayesianNMF, (12, 8)), (PoissonCP, (6, 5, 4))])
@pytest.mark.parametrize("as_sparse", [False, True])
def test_a_new_likelihood_plugs_in_through_its_interface(make, shape, as_sparse):
    """Given as an object (or named in LIKELIHOODS), a likelihood with the
    declared interface runs every step of a fit, dense and sparse: the same
    bound as the shipped Poisson likelihood it re-implements."""
    X = np.random.default_rng(0).poisson(2.0, shape).astype(float)
    X = sparse.COO.from_numpy(X) if as_sparse else X
    shipped = make(2, random_state=0, max_iter=30).fit(X)
    ours = make(2, likelihood=CountsLikelihood(), random_state=0, max_iter=30).fit(X)
    np.testing.assert_allclose(ours.lower_bound_, shipped.lower_bound_, rtol=1e-10)
    np.testing.assert_allclose(ours.reconstruct(), shipped.reconstruct(), rtol=1e-8)
