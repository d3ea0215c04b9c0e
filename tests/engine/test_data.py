"""Input normalisation: every accepted form, and each bad input's message."""

import numpy as np
import pytest
import scipy.sparse as sp
import sparse

from sklearn_pltf.engine._data import as_observed_tensor


def test_dense_nan_is_missing_and_user_array_is_untouched():
    X = np.array([[1.0, np.nan], [0.0, 3.0]])
    before = X.copy()
    data = as_observed_tensor(X)
    np.testing.assert_array_equal(X, before)
    assert data.n_missing == 1 and data.n_observed == 3
    assert data.total == 4.0


def test_dense_mask_combines_with_nan():
    X = np.array([[1.0, np.nan], [2.0, 3.0]])
    data = as_observed_tensor(X, mask=np.array([[True, True], [False, True]]))
    assert data.n_missing == 2 and data.total == 4.0


@pytest.mark.parametrize("form", ["pydata", "gcxs", "scipy"])
def test_sparse_forms_give_the_same_entries(form):
    X = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 5.0]])
    converted = {
        "pydata": sparse.COO.from_numpy(X),
        "gcxs": sparse.GCXS.from_numpy(X),
        "scipy": sp.csr_matrix(X),
    }[form]
    data = as_observed_tensor(converted)
    assert data.is_sparse and data.shape == (2, 3)
    dense = np.zeros(data.shape)
    dense[tuple(data.coords)] = data.values
    np.testing.assert_array_equal(dense, X)


def test_sparse_duplicates_are_summed_and_zeros_dropped():
    coords = np.array([[0, 0, 1, 1], [1, 1, 0, 2]])
    X = sparse.COO(coords, np.array([1.0, 2.0, 0.0, 4.0]), shape=(2, 3), has_duplicates=False, sorted=True)
    data = as_observed_tensor(X)
    assert data.coords.shape[1] == 2
    assert sorted(data.values) == [3.0, 4.0]


def test_sparse_mask_with_fill_value_true_lists_missing_entries():
    X = sparse.COO.from_numpy(np.array([[0.0, 2.0], [1.0, 3.0]]))
    mask = sparse.COO(np.array([[0, 1], [1, 1]]), np.array([False, False]), shape=(2, 2), fill_value=True)
    data = as_observed_tensor(X, mask)
    assert data.n_missing == 2
    assert data.values.tolist() == [1.0]  # the 2 and the 3 are missing


def test_dense_mask_for_sparse_data_and_nan_in_sparse_values():
    X = sparse.COO(np.array([[0, 1], [1, 0]]), np.array([np.nan, 3.0]), shape=(2, 2))
    data = as_observed_tensor(X, mask=np.array([[True, True], [True, False]]))
    assert data.n_missing == 2 and data.total == 3.0


@pytest.mark.parametrize(
    "X, message",
    [
        (np.array([[1.0, -1.0]]), "Negative values in data"),
        (np.array([[1.0, np.inf]]), "infinite values"),
        (np.array([["a", "b"]]), "real numbers"),
        (np.array([[1 + 1j]]), "real numbers"),
        (np.zeros((0, 3)), "empty"),
        (np.array(2.0), "empty"),
        (np.full((2, 2), np.nan), "All entries of the data are missing"),
        (sparse.COO.from_numpy(np.array([[0.0, -2.0]])), "Negative values in data"),
        (sp.csr_matrix(np.array([[0.0, np.inf]])), "infinite values"),
        (sparse.COO.from_numpy(np.ones((2, 2)), fill_value=1.0), "fill value 0"),
    ],
)
def test_bad_data_raise(X, message):
    with pytest.raises(ValueError, match=message):
        as_observed_tensor(X)


@pytest.mark.parametrize(
    "X, mask, message",
    [
        (np.ones((2, 2)), np.ones((3, 2), bool), "mask has shape"),
        (np.ones((2, 2)), np.full((2, 2), 2), "boolean"),
        (np.ones((2, 2)), np.zeros((2, 2), bool), "All entries of the data are missing"),
        (sparse.COO.from_numpy(np.ones((2, 2))), sparse.COO.from_numpy(np.eye(2, dtype=bool)), "fill_value=True"),
        (sparse.COO.from_numpy(np.ones((2, 2))), sp.eye(2, format="csr", dtype=bool), "scipy.sparse mask"),
        (sparse.COO.from_numpy(np.ones((2, 2))), np.ones((2, 3), bool), "mask has shape"),
    ],
)
def test_bad_masks_raise(X, mask, message):
    with pytest.raises(ValueError, match=message):
        as_observed_tensor(X, mask)


def test_integer_check_for_samplers():
    assert as_observed_tensor(np.array([[1.0, 2.0]])).is_integer
    data = as_observed_tensor(np.array([[1.5, 2.0]]))
    with pytest.raises(ValueError, match="non-integer"):
        data.require_integer()


def test_fingerprint_tells_data_apart():
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    a, b = as_observed_tensor(X), as_observed_tensor(X.copy())
    Y = X.copy()
    Y[0, 0] = 2.0
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != as_observed_tensor(Y).fingerprint
    assert a.fingerprint != as_observed_tensor(X, mask=np.array([[True, False], [True, True]])).fingerprint


def test_fingerprint_does_not_depend_on_the_container_or_entry_order(rng):
    """The same data as dense (NaN or mask for missing), pydata COO in any
    entry order, GCXS or scipy CSR/CSC is recognised as the same data."""
    X = rng.poisson(0.8, size=(7, 5)).astype(float)
    X[0, 0] = 0.0
    mask = rng.random(X.shape) > 0.2
    with_nan = np.where(mask, X, np.nan)
    coo = sparse.COO.from_numpy(X)
    shuffled = rng.permutation(coo.nnz)
    reordered = sparse.COO(coo.coords[:, shuffled], coo.data[shuffled], shape=X.shape,
                           sorted=False, has_duplicates=False)
    explicit_zero = sparse.COO(np.c_[coo.coords, [[0], [0]]], np.r_[coo.data, 0.0], shape=X.shape)
    prints = {
        as_observed_tensor(with_nan).fingerprint,
        as_observed_tensor(X, mask).fingerprint,
        as_observed_tensor(reordered, mask).fingerprint,
        as_observed_tensor(sparse.GCXS.from_numpy(X), mask).fingerprint,
        as_observed_tensor(sp.csr_matrix(X), mask).fingerprint,
        as_observed_tensor(sp.csc_matrix(X), mask).fingerprint,
        as_observed_tensor(explicit_zero, mask).fingerprint,
    }
    assert len(prints) == 1
    assert as_observed_tensor(X).fingerprint not in prints


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_take_samples_is_the_data_of_those_samples(layout, rng):
    X = rng.poisson(0.7, size=(9, 4, 3)).astype(float)
    mask = rng.random(X.shape) > 0.3
    as_input = sparse.COO.from_numpy if layout == "sparse" else np.asarray
    rows = np.array([0, 2, 3, 7])
    taken = as_observed_tensor(as_input(X), mask).take_samples(rows)
    direct = as_observed_tensor(as_input(X[rows]), mask[rows])
    assert taken.shape == direct.shape == (4, 4, 3)
    assert taken.fingerprint == direct.fingerprint  # same values, missing entries and order


@pytest.mark.parametrize("shape", [(1, 1), (30, 20), (7, 5, 3), (70, 40, 30)])
@pytest.mark.parametrize("with_mask", [False, True])
def test_the_dense_fingerprint_pass_equals_the_listed_entries_digest(shape, with_mask):
    """The one-pass digest of dense data (no listing of the non-zeros) is
    the digest of its listed non-zeros and missing entries, so a dense array
    and the same data in a sparse container share a fingerprint."""
    from sklearn_pltf.engine._data import dense_digest, entry_digest

    rng = np.random.default_rng(0)
    X = np.asfortranarray(rng.poisson(0.5, shape).astype(float))  # any memory order
    mask = rng.random(shape) > 0.2 if with_mask else None
    if with_mask:
        mask.flat[0] = True  # one entry observed at least
    data = as_observed_tensor(X, mask=mask)
    coords, values = data.nonzero_entries
    assert dense_digest(data.dense, data.mask) == entry_digest(shape, coords, values,
                                                                data.missing_entries)
    nan_where_missing = np.where(mask, X, np.nan) if with_mask else X
    assert as_observed_tensor(sparse.COO.from_numpy(nan_where_missing)).fingerprint \
        == data.fingerprint


@pytest.mark.parametrize("kind", ["small counts", "large counts", "reals"])
def test_the_dense_value_sums_equal_the_sums_over_the_listed_values(kind, monkeypatch):
    """Σ x, Σ log Γ(x + 1) and Σ x log x − x − log Γ(x + 1) (the Poisson
    saturated log-likelihood) from the compiled dense pass (its tables of
    whole numbers, lgamma beyond them; zeros at missing entries skipped)
    equal scipy's sums over the observed non-zeros, serial twin and parallel
    kernel alike."""
    from scipy.special import gammaln, xlogy

    from sklearn_pltf.engine import _threads
    from sklearn_pltf.engine._likelihood import PoissonLikelihood

    rng = np.random.default_rng(3)
    X = {"small counts": rng.poisson(2.0, (70, 60, 30)),
         "large counts": rng.poisson(5000.0, (70, 60, 30)) * (rng.random((70, 60, 30)) < 0.3),
         "reals": rng.gamma(0.5, 2.0, (70, 60, 30))}[kind].astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    observed = X[np.isfinite(X) & (X != 0)]
    log_factorials = gammaln(observed + 1.0)
    expected = [observed.sum(), log_factorials.sum(),
                np.sum(xlogy(observed, observed) - observed - log_factorials)]
    for below in (0, 1 << 40):  # every call parallel, then every call serial
        monkeypatch.setattr(_threads, "SERIAL_BELOW", below)
        data = as_observed_tensor(X)
        assert data.dense is not None
        np.testing.assert_allclose([data.total, data.log_factorial_total,
                                    PoissonLikelihood.saturated_log_likelihood(data)],
                                   expected, rtol=1e-12)
