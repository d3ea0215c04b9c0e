"""Float32 input: VB and EM of one tensor fit it in float32 (the data-sized
work), return float32 from transform, and reach float64's bound."""

import numpy as np
import pytest

from sklearn_pltf import PLTF, BayesianNMF, BayesianRESCAL, PoissonCP, TuckerVB
from sklearn_pltf.engine._contract import make_contractor
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.engine.model import Model

#: How close a float32 fit's bound comes to the float64 fit's, relative.
BOUND_RTOL = 1e-6


def _counts(shape, rank, seed=0):
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, 1.0, (n, rank)) for n in shape]
    letters = "ijkl"[:len(shape)]
    rate = np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *factors)
    return rng.poisson(rate).astype(np.float64)


def test_the_dense_contractor_works_in_float32_and_its_bound_terms_in_float64():
    X = _counts((30, 20, 10), 3)
    model = Model.parse("ir,jr,kr->ijk").bind(X.shape, {"r": 3})
    rng = np.random.default_rng(1)
    factors = [rng.gamma(2.0, 1.0, (n, 3)) for n in X.shape]
    single = make_contractor(model, as_observed_tensor(X.astype(np.float32), keep_float32=True))
    double = make_contractor(model, as_observed_tensor(X))
    assert single.dtype == np.float32 and single.xhat(factors).dtype == np.float32
    pulls32, pulls64 = single.ratio_deltas((0, 1, 2), factors), double.ratio_deltas((0, 1, 2),
                                                                                    factors)
    for alpha in range(3):
        np.testing.assert_allclose(pulls32[alpha], pulls64[alpha], rtol=1e-5)
    # The bound's data terms read a float64 X̂: float64's up to the data's
    # float32 rounding (none: whole numbers).
    assert single.data_loglik(factors) == pytest.approx(double.data_loglik(factors), rel=1e-13)
    assert single.masked_total(factors) == pytest.approx(double.masked_total(factors), rel=1e-13)


def test_the_data_s_constant_sums_are_float64_s_for_float32_values():
    values = np.random.default_rng(0).gamma(2.0, 1.7, (200, 300)).astype(np.float32)
    single = as_observed_tensor(values, keep_float32=True)
    double = as_observed_tensor(values.astype(np.float64))
    model = Model.parse("ik,kj->ij").bind(values.shape, {"k": 2})
    for likelihood in ("poisson", "compound_poisson"):
        assert (make_contractor(model, single, likelihood).log_base_measure
                == pytest.approx(make_contractor(model, double, likelihood).log_base_measure,
                                 rel=1e-14))
    assert single.saturated_total == pytest.approx(double.saturated_total, rel=1e-14)


@pytest.mark.parametrize("make, shape", [
    (lambda **kw: BayesianNMF(4, **kw), (60, 40)),
    (lambda **kw: BayesianNMF(4, method="em", **kw), (60, 40)),
    (lambda **kw: PoissonCP(3, **kw), (25, 20, 15)),
    (lambda **kw: TuckerVB((2, 2, 2), **kw), (20, 15, 10)),
    # X̂ by the planned contraction (no one product gives it in C order)
    (lambda **kw: PLTF("ir,jr,jk->ijk", {"r": 3}, **kw), (20, 15, 10)),
    (lambda **kw: BayesianNMF(3, init="svd", **kw), (50, 40)),
    (lambda **kw: BayesianNMF(3, likelihood="bernoulli", **kw), (50, 40)),
    (lambda **kw: BayesianNMF(3, likelihood="compound_poisson", **kw), (50, 40)),
])
def test_a_float32_fit_reaches_the_float64_bound(make, shape):
    X = _counts(shape, 3)
    if "bernoulli" in repr(make(random_state=0)):
        X = np.minimum(X, 1.0)
    X[0, 0] = np.nan  # a missing entry
    single, double = X.astype(np.float32), X.copy()
    kept = single.copy()
    fitted32 = make(random_state=0, tol=1e-3, max_iter=5000).fit(single)
    fitted64 = make(random_state=0, tol=1e-3, max_iter=5000).fit(double)
    np.testing.assert_array_equal(single, kept)  # the user's data untouched
    assert fitted32.lower_bound_ == pytest.approx(fitted64.lower_bound_, rel=BOUND_RTOL)
    W32 = fitted32.transform(single)
    assert W32.dtype == np.float32 and fitted32.fit_transform(single).dtype == np.float32
    np.testing.assert_allclose(W32, fitted64.transform(double), rtol=1e-2, atol=1e-3)
    assert fitted64.transform(double).dtype == np.float64


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short chains
def test_methods_that_do_not_run_in_float32_fit_float32_input_as_float64():
    """Gibbs, and a tie's row updates, take float32 input as float64: the
    same numbers as the float64 input, for the same seed."""
    X = _counts((20, 15), 2)
    gibbs = dict(method="gibbs", n_warmup=20, n_draws=20, n_init=1, evidence=None,
                 random_state=0)
    np.testing.assert_array_equal(BayesianNMF(2, **gibbs).fit(X.astype(np.float32)).factors_[1],
                                  BayesianNMF(2, **gibbs).fit(X).factors_[1])
    rng = np.random.default_rng(0)
    relations = rng.poisson(1.0, (12, 12, 3)).astype(np.float64)
    rescal = dict(random_state=0, init="random", max_iter=30)
    assert (BayesianRESCAL(2, **rescal).fit(relations.astype(np.float32)).lower_bound_
            == BayesianRESCAL(2, **rescal).fit(relations).lower_bound_)


def test_new_float32_samples_are_folded_in_in_float64():
    """transform and score of new samples give the float64 input's numbers
    (in float32: their fold-in's stopping rule sits at float32's rounding)."""
    X = _counts((60, 300), 3)
    fitted = BayesianNMF(3, random_state=0).fit(X.astype(np.float32))
    new = _counts((10, 300), 3, seed=1)
    W = fitted.transform(new.astype(np.float32))
    assert W.dtype == np.float32
    np.testing.assert_array_equal(W, fitted.transform(new).astype(np.float32))
    assert fitted.score(new.astype(np.float32)) == fitted.score(new)


def test_float32_data_are_kept_only_where_asked():
    X = np.ones((3, 4), dtype=np.float32)
    assert as_observed_tensor(X).dtype == np.float64
    kept = as_observed_tensor(X, keep_float32=True)
    assert kept.dtype == np.float32 and kept.in_float64().dtype == np.float64
    assert as_observed_tensor(X.astype(np.int32), keep_float32=True).dtype == np.float64
