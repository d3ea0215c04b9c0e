"""Splitters for choosing a factorization: by its evidence, or by held-out entries.

- :class:`FullDataSplit`: one split that fits and scores on every sample, for
  :class:`~sklearn.model_selection.GridSearchCV` to choose the rank by the log evidence.
- :class:`EntryKFold` and :func:`cross_validate_entries`: K-fold
  cross-validation over the *entries* of a tensor (zeros included), the
  link-prediction protocol: each fold's entries are held out as missing, the
  estimator is fitted to the rest and scored on them.
"""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np
import sparse
from joblib import Parallel, delayed
from sklearn import clone

from .engine._array_api import array_namespace_of_input, to_numpy
from .engine._data import as_observed_tensor
from .engine._random import as_generator
from .estimators import CoupledPLTF
from .metrics import link_prediction_scorer

__all__ = ["FullDataSplit", "EntryKFold", "cross_validate_entries"]


def _n_samples(X):
    """The length of axis 0 of an array, a sparse array or matrix, or a list."""
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) else len(X)


class FullDataSplit:
    """A single split that trains and tests on every sample.

    With it, ``GridSearchCV(estimator, {"n_components": [...]}, cv=FullDataSplit())``
    fits each candidate to all the data and scores it on the same data, where
    the estimators' ``score`` is the log evidence ``log_evidence_``: the grid
    search then chooses the rank by the evidence (Bayesian model selection),
    with no data held out. A K-fold splitter instead chooses by the predictive
    evidence of held-out samples.

    Missing entries may be NaN in ``X`` or a ``mask``:
    ``search.fit(X, mask=m)`` passes ``m`` to each ``fit`` only, and
    ``score(X)`` recognises ``X`` as the data fitted with ``m`` and returns
    that fit's evidence. With scikit-learn's metadata routing
    (``sklearn.set_config(enable_metadata_routing=True)``), request the mask
    for both: ``estimator.set_fit_request(mask=True).set_score_request(mask=True)``.
    (A K-fold splitter scores new samples, which need their own mask: NaN in
    ``X``, or routed to ``score`` so.)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_pltf import BayesianNMF
    >>> from sklearn_pltf.model_selection import FullDataSplit
    >>> X = np.random.default_rng(0).poisson(2.0, size=(30, 8))
    >>> search = GridSearchCV(BayesianNMF(random_state=0), {"n_components": [1, 2]},
    ...                       cv=FullDataSplit()).fit(X)
    >>> search.best_params_["n_components"] in (1, 2)
    True
    """

    def split(self, X, y=None, groups=None):
        """Yield ``(train, test)``: both are every sample's index."""
        indices = np.arange(_n_samples(X))
        yield indices, indices

    def get_n_splits(self, X=None, y=None, groups=None):
        """Always 1."""
        return 1

    def __repr__(self):
        return "FullDataSplit()"


class EntryKFold:
    """K folds over the entries of a dense or sparse tensor, zeros included.

    Every observed entry of ``X`` (those not NaN, and not in the ``mask``'s
    missing set) falls in exactly one fold. For each fold, :meth:`split`
    yields a training mask, with that fold's entries missing, and the fold's
    entries as a coordinate list: fit with ``estimator.fit(X, mask=train)``,
    predict with ``estimator.predict_entries(test)``. This is the protocol of
    the relational link-prediction literature (10 folds over all entries;
    e.g. Nickel, Tresp & Kriegel 2011).

    Memory and time are linear in ``X.size`` (every entry is assigned a
    fold), also for sparse ``X``; the training mask of sparse data is itself
    sparse (a pydata ``sparse.COO`` with fill value True that stores the
    held-out entries), so the data are never densified. A dense array of
    another namespace (PyTorch, CuPy, ...; scikit-learn's
    ``array_api_dispatch``) is copied to the host once to assign its entries
    to folds; the training masks are NumPy arrays, which ``fit`` moves to
    the data's device.

    Parameters
    ----------
    n_splits : int, default=10
        Number of folds, at least 2.
    shuffle : bool, default=True
        Assign entries to folds at random; False cuts the entries, in C
        order, into contiguous folds.
    stratify : bool, default=False
        Spread each distinct value (e.g. the ones and the zeros of a binary
        tensor) evenly over the folds, so every fold has the data's share of
        links.
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the shuffle.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf.model_selection import EntryKFold
    >>> X = np.random.default_rng(0).poisson(0.5, size=(6, 5, 4))
    >>> cv = EntryKFold(n_splits=4, random_state=0)
    >>> train, test = next(cv.split(X))
    >>> test.shape, int((~train).sum())
    ((30, 3), 30)
    """

    def __init__(self, n_splits=10, *, shuffle=True, stratify=False, random_state=None):
        if not isinstance(n_splits, Integral) or n_splits < 2:
            raise ValueError(f"n_splits must be an integer >= 2, got {n_splits!r}.")
        self.n_splits = int(n_splits)
        self.shuffle = shuffle
        self.stratify = stratify
        self.random_state = random_state

    def split(self, X, y=None, mask=None):
        """Yield ``(train_mask, test_entries)`` for each fold.

        Parameters
        ----------
        X : ndarray, pydata sparse array or scipy.sparse matrix
            The data (NaN: missing; such entries are in no fold).
        y : None
            Ignored.
        mask : array-like of bool, default=None
            True where observed, as for the estimators' ``fit``; entries it
            marks missing are in no fold and stay missing in every training
            mask.

        Yields
        ------
        train_mask : ndarray of bool or sparse.COO
            ``X``'s shape; False at the fold's entries and at missing ones.
        test_entries : ndarray of shape (n_test, ndim)
            The fold's entries, in C order.
        """
        if array_namespace_of_input(X) is not None:  # assigned on the host (see above)
            X = to_numpy(X)
            mask = None if mask is None else to_numpy(mask)
        data = as_observed_tensor(X, mask, allow_negative=True)
        observed, values = _observed_entries(data)
        if observed.size < self.n_splits:
            raise ValueError(
                f"Cannot split {observed.size} observed entries into {self.n_splits} folds."
            )
        fold = self._assign_folds(observed, values)
        missing = _missing_flat(data)
        for k in range(self.n_splits):
            held_out = observed[fold == k]
            yield _training_mask(data, held_out, missing), np.column_stack(
                np.unravel_index(held_out, data.shape))

    def _assign_folds(self, observed, values):
        """Fold number of each observed entry: round-robin over a random
        order (each value's entries together when stratified), or contiguous
        blocks without shuffling."""
        n = observed.size
        if not self.shuffle:
            return np.repeat(np.arange(self.n_splits),
                             [len(b) for b in np.array_split(np.arange(n), self.n_splits)])
        rng = as_generator(self.random_state)
        order = rng.permutation(n)
        if self.stratify:
            order = order[np.argsort(values[order], kind="stable")]
        fold = np.empty(n, dtype=np.intp)
        fold[order] = np.arange(n) % self.n_splits
        return fold

    def get_n_splits(self, X=None, y=None, mask=None):
        """The number of folds."""
        return self.n_splits

    def __repr__(self):
        return (f"EntryKFold(n_splits={self.n_splits}, shuffle={self.shuffle}, "
                f"stratify={self.stratify}, random_state={self.random_state!r})")


def _observed_entries(data):
    """C-order flat indices of the observed entries and their values."""
    if not data.is_sparse:
        if data.mask is None:
            return np.arange(data.size), data.dense.ravel()
        observed = np.flatnonzero(data.mask)
        return observed, data.dense.ravel()[observed]
    values = np.zeros(data.size)
    values[np.ravel_multi_index(tuple(data.coords), data.shape)] = data.values
    observed = np.setdiff1d(np.arange(data.size), _missing_flat(data), assume_unique=True)
    return observed, values[observed]


def _missing_flat(data):
    """C-order flat indices of the entries missing in ``data``."""
    if data.is_sparse:
        if data.missing is None or data.missing.size == 0:
            return np.empty(0, dtype=np.intp)
        return np.ravel_multi_index(tuple(data.missing), data.shape)
    return np.empty(0, dtype=np.intp) if data.mask is None else np.flatnonzero(~data.mask)


def _training_mask(data, held_out, missing):
    """True where observed for training: not held out, not already missing."""
    if not data.is_sparse:
        train = np.ones(data.shape, dtype=bool) if data.mask is None else data.mask.copy()
        train.flat[held_out] = False
        return train
    absent = np.union1d(held_out, missing)
    coords = np.vstack(np.unravel_index(absent, data.shape))
    return sparse.COO(coords, np.zeros(absent.size, dtype=bool), shape=data.shape,
                      fill_value=True)


def _target_and_side(estimator, X, mask):
    """For several tensors (a list or tuple): the tensors and a list of
    their masks (the first is the target's, which the folds cut); for one,
    ``([X], None)``. A list for an estimator of one tensor is refused."""
    if not isinstance(X, (list, tuple)):
        return [X], None
    if not isinstance(estimator, CoupledPLTF):  # every other estimator fits one tensor
        raise ValueError(
            f"X is a {type(X).__name__} of {len(X)} items, which cross_validate_entries reads "
            f"as several tensors, but {type(estimator).__name__} fits one tensor. Pass that "
            "tensor as one array (np.asarray(X) if it is written as nested lists), or use "
            "CoupledPLTF for several tensors that share factors.")
    if len(X) == 0:
        raise ValueError("X is an empty list; pass one tensor or a list of several.")
    masks = [None] * len(X) if mask is None else list(mask)
    if len(masks) != len(X):
        raise ValueError(f"mask must be None or a list of {len(X)} masks, one per tensor "
                         "(None where a tensor has none).")
    return list(X), masks


def _fit_and_score(estimator, X, train, test, scorers, masks=None):
    """Fit with ``train`` as the mask (of the first tensor, ``masks`` the
    list of every tensor's, when there are several) and score the fold."""
    start = time.perf_counter()
    fitted = estimator.fit(X, mask=train if masks is None else masks)
    fit_time = time.perf_counter() - start
    target = X if masks is None else X[0]
    scores = {name: scorer(fitted, target, test) for name, scorer in scorers.items()}
    return fit_time, scores


def cross_validate_entries(estimator, X, *, cv=None, scoring=("roc_auc", "pr_auc"), mask=None,
                           n_jobs=None, verbose=0):
    """Cross-validate link prediction over the entries of ``X``.

    For each fold of ``cv``, a clone of ``estimator`` is fitted to ``X`` with
    the fold's entries missing and scored on them (by default AUC-ROC and
    AUC-PR of its posterior mean, :func:`~sklearn_pltf.metrics.link_prediction_auc`).

    An estimator of several tensors (:class:`~sklearn_pltf.CoupledPLTF`)
    takes ``X`` as its list of tensors: the folds are over the first tensor
    (the target), every other tensor is used whole in every fold, and the
    held-out entries are predicted with ``predict_entries`` on the first.

    Parameters
    ----------
    estimator : estimator with ``fit(X, mask=...)`` and ``predict_entries``
    X : ndarray, pydata sparse array or scipy.sparse matrix, or a list of them
        The data; a list or tuple for an estimator of several tensors (an
        estimator of one tensor refuses one). With ``array_api_dispatch``,
        a dense array of another namespace is fitted and predicted where it
        lives (:class:`EntryKFold` assigns its folds on the host).
    cv : int or EntryKFold, default=None
        An :class:`EntryKFold`, or a number of folds (shuffled, unseeded);
        None is 10 folds.
    scoring : str, callable, or tuple of them, default=("roc_auc", "pr_auc")
        Names of :func:`~sklearn_pltf.metrics.link_prediction_scorer`
        metrics, or callables ``scorer(estimator, X, entries) -> float``.
    mask : array-like of bool, default=None
        Entries known to be missing (False), in no fold; with several
        tensors, a list of masks (None where a tensor has none), the first
        the target's.
    n_jobs : int or None, default=None
        Folds fitted in parallel through joblib.
    verbose : int, default=0
        joblib's verbosity.

    Returns
    -------
    scores : dict of ndarray
        ``"test_<name>"`` per metric and ``"fit_time"``, one value per fold
        (as :func:`sklearn.model_selection.cross_validate`).
    """
    if cv is None or isinstance(cv, Integral):
        cv = EntryKFold(10 if cv is None else cv)
    if isinstance(scoring, str) or callable(scoring):
        scoring = (scoring,)
    scorers = {}
    for item in scoring:
        name = item if isinstance(item, str) else getattr(item, "__name__", "score")
        scorers[name] = link_prediction_scorer(item) if isinstance(item, str) else item
    tensors, masks = _target_and_side(estimator, X, mask)
    results = Parallel(n_jobs=n_jobs, verbose=verbose)(
        delayed(_fit_and_score)(clone(estimator), X, train, test, scorers,
                                masks=None if masks is None else [train] + masks[1:])
        for train, test in cv.split(tensors[0], mask=masks[0] if masks else mask)
    )
    out = {"fit_time": np.array([fit_time for fit_time, _ in results])}
    for name in scorers:
        out[f"test_{name}"] = np.array([scores[name] for _, scores in results])
    return out
