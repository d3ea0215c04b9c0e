"""The named estimators: same results from every input layout, reproducible,
cloneable, picklable, and tags that tell the truth."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import sparse
from sklearn.base import clone

from sklearn_pltf import PLTF, BayesianNMF, PoissonCP, TuckerVB


@pytest.fixture
def counts():
    rng = np.random.default_rng(3)
    W, H = rng.gamma(1.0, 1.0, size=(40, 3)), rng.gamma(1.0, 1.0, size=(3, 15))
    return rng.poisson(W @ H).astype(float)


@pytest.fixture
def tensor():
    rng = np.random.default_rng(4)
    return rng.poisson(2.0, size=(15, 6, 5)).astype(float)


def test_dense_pydata_and_scipy_inputs_give_the_same_fit(counts):
    fits = [
        BayesianNMF(3, random_state=0).fit(X)
        for X in (counts, sparse.COO.from_numpy(counts), sp.csr_matrix(counts), sp.csc_matrix(counts))
    ]
    for other in fits[1:]:
        np.testing.assert_allclose(other.lower_bounds_, fits[0].lower_bounds_, rtol=1e-8)
        np.testing.assert_allclose(other.components_, fits[0].components_, rtol=1e-8)
        np.testing.assert_allclose(other.transform(counts[:5]), fits[0].transform(counts[:5]), rtol=1e-8)


def test_nmf_attributes_and_reconstruction(counts):
    est = BayesianNMF(3, random_state=0).fit(counts)
    W = est.transform(counts)
    assert est.components_.shape == (3, 15)
    np.testing.assert_allclose(est.inverse_transform(W), W @ est.components_, rtol=1e-12)


@pytest.mark.parametrize(
    "make",
    [lambda: PoissonCP(2, random_state=0), lambda: TuckerVB((2, 2, 3), random_state=0)],
    ids=["cp", "tucker"],
)
def test_tensor_estimators_reproducible_cloneable_picklable(tensor, make):
    est = make().fit(tensor)
    again = clone(est).fit(tensor)
    np.testing.assert_array_equal(est.lower_bounds_, again.lower_bounds_)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.transform(tensor[:4]), est.transform(tensor[:4]))
    np.testing.assert_allclose(est.fit_transform(tensor), est.transform(tensor), rtol=1e-6)
    parallel = make().set_params(n_init=2, n_jobs=2).fit(tensor)
    serial = make().set_params(n_init=2).fit(tensor)
    np.testing.assert_array_equal(parallel.lower_bounds_, serial.lower_bounds_)


def test_tucker_core_and_rank_errors(tensor):
    est = TuckerVB((2, 3, 2), random_state=0).fit(tensor)
    assert est.core_.shape == (2, 3, 2)
    assert [f.shape for f in est.factors_[:3]] == [(15, 2), (6, 3), (5, 2)]
    with pytest.raises(ValueError, match="n_components has 2 ranks but the data have 3 modes"):
        TuckerVB((2, 3)).fit(tensor)


def test_tags_tell_the_truth():
    for est in (BayesianNMF(), PoissonCP(), TuckerVB(), PLTF("ik,kj->ij", 2), PLTF("ir,jr,kr->ijk", 2)):
        tags = est.__sklearn_tags__().input_tags
        assert tags.positive_only and tags.allow_nan and tags.sparse
    assert not BayesianNMF().__sklearn_tags__().input_tags.three_d_array
    assert not PLTF("ik,kj->ij", 2).__sklearn_tags__().input_tags.three_d_array
    for est in (PoissonCP(), TuckerVB(), PLTF("ir,jr,kr->ijk", 2)):
        assert est.__sklearn_tags__().input_tags.three_d_array


def test_the_tags_are_honoured(tensor):
    """3-D input, NaN as missing and sparse input all fit (the tags' promises)."""
    X = tensor.copy()
    X[0, 0, 0] = np.nan
    assert np.isfinite(PoissonCP(2, random_state=0).fit(X).lower_bound_)
    with pytest.raises(ValueError, match="Negative values in data"):
        PoissonCP(2).fit(-tensor - 1)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_nmf_features_in_a_pipeline_classify_digits():
    """Digits are counts 0-16; 16 part weights per image, folded in for the test
    images, carry most of the class information (chance is 0.1)."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    pipeline = make_pipeline(
        BayesianNMF(16, max_iter=100, tol=1e-4, random_state=0), StandardScaler(),
        LogisticRegression(max_iter=2000),
    )
    accuracy = pipeline.fit(X_train, y_train).score(X_test, y_test)
    assert accuracy > 0.9, accuracy


def test_fit_transform_folds_in_once(monkeypatch, rng):
    """fit_transform reuses the fold-in fit ends with (a second would double
    the cost of the final step) and gives what fit(X).transform(X) gives."""
    from sklearn_pltf.estimators import _one_tensor

    calls = []
    fold_in = _one_tensor.fold_in_samples

    def counted(*args, **kwargs):
        calls.append(1)
        return fold_in(*args, **kwargs)

    monkeypatch.setattr(_one_tensor, "fold_in_samples", counted)
    X = rng.poisson(2.0, size=(15, 6))
    W = BayesianNMF(2, random_state=0).fit_transform(X)
    assert len(calls) == 1
    np.testing.assert_array_equal(W, BayesianNMF(2, random_state=0).fit(X).transform(X))


@pytest.mark.parametrize("make, X_shape", [
    (lambda **kw: BayesianNMF(2, **kw), (12, 6)),
    (lambda **kw: PoissonCP(2, **kw), (8, 5, 4)),
    (lambda **kw: PLTF("ik,kj->ij", 2, **kw), (12, 6)),
])
@pytest.mark.parametrize("name", ["prior_shape", "prior_rate"])
@pytest.mark.parametrize("key", [7, -1, "ik", 1.0, True])
def test_a_prior_key_that_names_no_factor_is_refused(make, X_shape, name, key):
    """A dict prior's keys are factor positions; any other key is an error
    naming it and the model's positions, not an entry silently dropped."""
    X = np.random.default_rng(0).poisson(2.0, size=X_shape).astype(float)
    n_factors = len(X_shape)
    value = {a: 1.0 for a in range(n_factors)}
    value[key] = 2.0
    if len(value) == n_factors:  # True and 1.0 are equal to the key 1: replace it
        value = {a: 1.0 for a in range(n_factors) if a != 1}
        value[key] = 2.0
    est = make(**{name: value})
    with pytest.raises(ValueError, match=rf"{name} key {key!r} names no factor.*positions, here 0 \('"):
        est.fit(X)
    assert not hasattr(est, "model_")
    # positions, numpy integers among them, are accepted
    make(**{name: {np.int64(a): 1.0 for a in range(n_factors)}}, max_iter=5).fit(X)


def test_auto_only_as_the_whole_prior_rate(counts):
    for value in ({0: "auto"}, {0: "auto", 1: 1.0}):
        est = BayesianNMF(2, prior_rate=value)
        with pytest.raises(ValueError, match="'auto' is accepted only as the whole value"):
            est.fit(counts)
        with pytest.raises(ValueError, match="'auto' is accepted only as the whole value"):
            est.partial_fit(counts)
        assert not hasattr(est, "model_")
    with pytest.raises(ValueError, match=r"prior_rate\[1\]='fast'"):
        BayesianNMF(2, prior_rate={0: 1.0, 1: "fast"}).fit(counts)
    # the whole value learns the rates
    assert len(BayesianNMF(2, prior_rate="auto", max_iter=5).fit(counts).prior_rate_) == 2


def test_dict_priors_of_the_tied_and_fixed_factors_are_accepted():
    """RESCAL's documented {0: A, 2: G} (and 1, A again) and a fixed factor's
    position are positions of the model."""
    from sklearn_pltf import BayesianRESCAL

    rng = np.random.default_rng(1)
    X = rng.poisson(1.0, size=(6, 6, 2)).astype(float)
    BayesianRESCAL(2, prior_rate={0: 1.0, 2: 2.0}, max_iter=5, random_state=0).fit(X)
    BayesianRESCAL(2, prior_rate={0: 1.0, 1: 1.0, 2: 2.0}, max_iter=5, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"prior_rate key 3 names no factor"):
        BayesianRESCAL(2, prior_rate={0: 1.0, 2: 2.0, 3: 1.0}).fit(X)
    H = rng.gamma(1.0, 1.0, size=(2, 6))
    PLTF("ik,kj->ij", 2, fixed_factors={1: H}, prior_rate={0: 1.0, 1: 3.0},
         max_iter=5, random_state=0).fit(X[:, :, 0])


def test_tucker_fits_a_matrix_with_a_rank_per_mode():
    """TuckerVB((2, 2)) on a matrix: the check of whether the parameters tie
    factors once bound the model for three modes and refused the two ranks."""
    X = np.random.default_rng(0).poisson(2.0, (8, 6)).astype(float)
    est = TuckerVB((2, 2), random_state=0).fit(X)
    assert est.core_.shape == (2, 2) and np.isfinite(est.lower_bound_)
