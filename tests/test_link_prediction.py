"""Entry-wise K-fold cross-validation and link-prediction AUC."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sparse

from sklearn_pltf import PoissonCP
from sklearn_pltf.datasets import make_poisson_cp
from sklearn_pltf.metrics import entry_values, link_prediction_auc, link_prediction_scorer
from sklearn_pltf.model_selection import EntryKFold, cross_validate_entries


def binary_tensor(seed=0, shape=(12, 10, 8)):
    X, _ = make_poisson_cp(shape, 2, prior_rate=2.0, random_state=seed)
    return (X > 0).astype(np.int8)


def folds(cv, X, **kwargs):
    return list(cv.split(X, **kwargs))


@pytest.mark.parametrize("stratify", [False, True])
def test_every_entry_is_held_out_once(stratify):
    X = binary_tensor()
    splits = folds(EntryKFold(5, stratify=stratify, random_state=0), X)
    flat = np.concatenate([np.ravel_multi_index(tuple(test.T), X.shape) for _, test in splits])
    np.testing.assert_array_equal(np.sort(flat), np.arange(X.size))
    sizes = [len(test) for _, test in splits]
    assert max(sizes) - min(sizes) <= 1
    for train, test in splits:
        held_out = np.zeros(X.shape, dtype=bool)
        held_out[tuple(test.T)] = True
        np.testing.assert_array_equal(train, ~held_out)


def test_stratified_folds_share_the_links():
    X = binary_tensor()
    links_per_fold = [X[tuple(test.T)].sum() for _, test in folds(
        EntryKFold(5, stratify=True, random_state=0), X)]
    assert max(links_per_fold) - min(links_per_fold) <= 1
    plain = [X[tuple(test.T)].sum() for _, test in folds(EntryKFold(5, random_state=0), X)]
    assert sum(plain) == sum(links_per_fold) == X.sum()


def test_folds_are_reproducible_and_seeded():
    X = binary_tensor()
    a = folds(EntryKFold(4, random_state=1), X)
    b = folds(EntryKFold(4, random_state=1), X)
    c = folds(EntryKFold(4, random_state=2), X)
    assert all(np.array_equal(s[1], t[1]) for s, t in zip(a, b))
    assert not all(np.array_equal(s[1], t[1]) for s, t in zip(a, c))


def test_unshuffled_folds_are_contiguous():
    X = binary_tensor()
    (_, first), *_ = folds(EntryKFold(4, shuffle=False), X)
    flat = np.ravel_multi_index(tuple(first.T), X.shape)
    np.testing.assert_array_equal(flat, np.arange(X.size // 4))


@pytest.mark.parametrize("layout", ["pydata", "scipy"])
def test_sparse_data_give_the_dense_folds_and_sparse_masks(layout):
    X = binary_tensor(shape=(15, 9, 1))[:, :, 0] if layout == "scipy" else binary_tensor()
    Xs = sp.csr_matrix(X) if layout == "scipy" else sparse.COO.from_numpy(X)
    dense = folds(EntryKFold(3, random_state=0), X)
    sparse_folds = folds(EntryKFold(3, random_state=0), Xs)
    for (train, test), (strain, stest) in zip(dense, sparse_folds):
        np.testing.assert_array_equal(test, stest)
        assert isinstance(strain, sparse.COO) and strain.fill_value
        assert strain.nnz == len(stest)  # only the held-out entries are stored
        np.testing.assert_array_equal(strain.todense(), train)


def test_missing_entries_are_in_no_fold_and_stay_missing():
    X = binary_tensor().astype(float)
    X[0, 0, :] = np.nan
    mask = np.ones(X.shape, dtype=bool)
    mask[1, 1, :] = False
    splits = folds(EntryKFold(4, random_state=0), X, mask=mask)
    held = np.concatenate([np.ravel_multi_index(tuple(t.T), X.shape) for _, t in splits])
    assert held.size == X.size - 2 * X.shape[2]
    for train, _ in splits:
        assert not train[0, 0].any() and not train[1, 1].any()
    Xs = sparse.COO.from_numpy(np.nan_to_num(X))
    sparse_mask = sparse.COO(np.array([[0] * 8 + [1] * 8, [0] * 8 + [1] * 8,
                                       list(range(8)) * 2]), False, shape=X.shape, fill_value=True)
    for (_, test), (strain, stest) in zip(splits, folds(EntryKFold(4, random_state=0), Xs,
                                                        mask=sparse_mask)):
        np.testing.assert_array_equal(test, stest)
        assert not strain.todense()[0, 0].any() and not strain.todense()[1, 1].any()


def test_bad_splits_are_refused():
    with pytest.raises(ValueError, match="n_splits"):
        EntryKFold(1)
    with pytest.raises(ValueError, match="folds"):
        next(EntryKFold(5).split(np.ones((2, 2))))


def test_entry_values_reads_sparse_without_densifying():
    X = binary_tensor()
    entries = np.argwhere(np.ones(X.shape, dtype=bool))[::7]
    expected = X[tuple(entries.T)]
    np.testing.assert_array_equal(entry_values(sparse.COO.from_numpy(X), entries), expected)
    M = X[:, :, 0]
    entries2 = np.argwhere(np.ones(M.shape, dtype=bool))[::3]
    np.testing.assert_array_equal(entry_values(sp.csc_matrix(M), entries2), M[tuple(entries2.T)])


class Oracle:
    """Predicts each entry from the complete data, with a sign."""

    def __init__(self, X, sign=1.0):
        self.X, self.sign = X, sign

    def predict_entries(self, entries):
        return self.sign * self.X[tuple(np.asarray(entries).T)].astype(float)


def test_auc_of_a_perfect_and_of_a_reversed_ranking():
    X = binary_tensor()
    entries = np.argwhere(np.ones(X.shape, dtype=bool))
    perfect = link_prediction_auc(Oracle(X), X, entries)
    assert perfect.roc_auc == 1.0 and perfect.pr_auc == 1.0
    reversed_ = link_prediction_auc(Oracle(X, -1.0), X, entries)
    assert reversed_.roc_auc == 0.0 and reversed_.pr_auc < 0.5 + X.mean()
    assert link_prediction_scorer("roc_auc")(Oracle(X), X, entries) == 1.0
    with pytest.raises(ValueError, match="metric"):
        link_prediction_scorer("accuracy")


def test_auc_needs_both_classes_and_known_labels():
    X = binary_tensor().astype(float)
    ones = np.argwhere(X == 1)[:5]
    with pytest.raises(ValueError, match="both links"):
        link_prediction_auc(Oracle(X), X, ones)
    X[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="missing"):
        link_prediction_auc(Oracle(X), X, np.array([[0, 0, 0], [1, 1, 1]]))


def test_cross_validation_predicts_links_of_a_low_rank_tensor():
    X = binary_tensor(shape=(20, 15, 10))
    est = PoissonCP(2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = cross_validate_entries(est, X, cv=EntryKFold(5, random_state=0))
        shuffled = cross_validate_entries(
            est, np.random.default_rng(0).permuted(X.ravel()).reshape(X.shape),
            cv=EntryKFold(5, random_state=0), scoring="roc_auc")
    assert set(scores) == {"fit_time", "test_roc_auc", "test_pr_auc"}
    assert scores["test_roc_auc"].shape == (5,)
    # the links follow a rank-2 Poisson CP; with their structure destroyed
    # by a shuffle, the AUC falls to chance (0.5 give or take its noise)
    assert scores["test_roc_auc"].mean() > 0.75
    assert abs(shuffled["test_roc_auc"].mean() - 0.5) < 0.1
    assert scores["test_pr_auc"].mean() > X.mean() + 0.2


@pytest.mark.slow(minutes=0.15)
def test_cross_validation_is_the_same_sparse_and_in_parallel():
    X = binary_tensor()
    est = PoissonCP(2, method="em", random_state=0, tol=1e-10, max_iter=200)
    cv = EntryKFold(3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        serial = cross_validate_entries(est, X, cv=cv)
        on_sparse = cross_validate_entries(est, sparse.COO.from_numpy(X), cv=cv)
        parallel = cross_validate_entries(est, X, cv=cv, n_jobs=2)
    for key in ("test_roc_auc", "test_pr_auc"):
        np.testing.assert_allclose(on_sparse[key], serial[key], rtol=1e-6)
        np.testing.assert_allclose(parallel[key], serial[key], rtol=1e-12)


def test_a_list_of_tensors_for_an_estimator_of_one_is_refused_with_the_reason():
    """A list is several tensors (CoupledPLTF's X); an estimator of one
    tensor given one is told so, not numpy's "inhomogeneous shape"."""
    from sklearn_pltf import BayesianNMF

    A = binary_tensor()[:, :, 0].astype(float)
    B = np.ones((A.shape[1], 3))
    for estimator, X in [(BayesianNMF(2), [A, B]), (PoissonCP(2), (binary_tensor(),))]:
        with pytest.raises(ValueError, match=fr"X is a {type(X).__name__} of {len(X)} items, "
                           r"which cross_validate_entries reads as several tensors, but "
                           fr"{type(estimator).__name__} fits one tensor\. Pass that tensor as "
                           r"one array .*or use CoupledPLTF"):
            cross_validate_entries(estimator, X, cv=3)


def test_cross_validation_of_a_coupled_model_takes_its_list_of_tensors():
    from sklearn_pltf import CoupledPLTF

    rng = np.random.default_rng(0)
    A, F = rng.gamma(1.0, 1.0, (20, 2)), rng.gamma(1.0, 1.0, (2, 4))
    X = (rng.poisson(A @ rng.gamma(1.0, 1.0, (2, 15))) > 0).astype(float)
    Y = rng.poisson(A @ F).astype(float)
    est = CoupledPLTF(("ir,jr->ij", "ir,rf->if"), likelihood=("bernoulli", "poisson"),
                      random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = cross_validate_entries(est, [X, Y], cv=EntryKFold(3, random_state=0))
    assert scores["test_roc_auc"].shape == (3,) and np.all(scores["test_roc_auc"] > 0.5)
