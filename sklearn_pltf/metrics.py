"""Link prediction: how well a fitted factorization ranks held-out entries.

An entry is a *link* when its value is non-zero. The estimator's prediction
at the held-out entries (``predict_entries``: the posterior probability of a
link under ``likelihood="bernoulli"``, the posterior mean X̂ for count
models) is the score; the area
under the ROC curve and the area under the precision–recall curve (as
scikit-learn's average precision, the step-wise area, which unlike the
trapezoid rule does not reward interpolating between operating points)
measure how well it ranks the links above the non-links.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import sparse
from sklearn.metrics import average_precision_score, roc_auc_score

from .engine._array_api import array_namespace_of_input, as_namespace, device_of, to_numpy
from .engine._data import is_sparse_input

__all__ = ["LinkPredictionAUC", "link_prediction_auc", "link_prediction_scorer", "entry_values"]


class LinkPredictionAUC(NamedTuple):
    """AUC-ROC and AUC-PR (average precision) of one set of held-out entries."""

    roc_auc: float
    pr_auc: float


def entry_values(X, entries):
    """The values of ``X`` (dense, pydata sparse or scipy.sparse, or a dense
    array of another namespace, e.g. PyTorch or CuPy) at ``entries``
    (n_entries x ndim integer coordinates), as a NumPy array, without
    densifying (nor, with ``array_api_dispatch``, copying more than those
    values from a device)."""
    entries = to_numpy(entries)
    xp = array_namespace_of_input(X)
    if xp is not None:  # gathered where X lives; only the entries' values come to the host
        flat = np.ravel_multi_index(tuple(entries.T), tuple(int(n) for n in X.shape))
        index = as_namespace(flat.astype(np.int64), xp, device_of(X))
        return to_numpy(xp.take(xp.reshape(X, (-1,)), index))
    if not is_sparse_input(X):
        return np.asarray(X)[tuple(entries.T)]
    coo = (X if isinstance(X, sparse.SparseArray) else sparse.COO.from_scipy_sparse(X)).asformat("coo")
    stored = np.ravel_multi_index(tuple(coo.coords), coo.shape)
    order = np.argsort(stored)
    stored, data = stored[order], coo.data[order]
    wanted = np.ravel_multi_index(tuple(entries.T), coo.shape)
    position = np.searchsorted(stored, wanted)
    hit = position < stored.size
    hit[hit] = stored[position[hit]] == wanted[hit]
    values = np.full(wanted.size, coo.fill_value, dtype=np.float64)
    values[hit] = data[position[hit]]
    return values


def link_prediction_auc(estimator, X, entries):
    """AUC-ROC and AUC-PR of a fitted estimator's predictions at held-out entries.

    Parameters
    ----------
    estimator : fitted estimator with ``predict_entries``
        Fitted with the held-out entries missing (e.g. with a training mask
        from :class:`~sklearn_pltf.model_selection.EntryKFold`).
    X : ndarray, pydata sparse array or scipy.sparse matrix, or array-API array
        The complete data; an entry is a link when its value is non-zero. A
        dense array of another namespace (``array_api_dispatch=True``) is
        read where it lives: only the held-out entries' values, and the
        predictions, come to the host for the AUC.
    entries : array-like of int, shape (n_entries, ndim)
        The held-out entries' coordinates.

    Returns
    -------
    LinkPredictionAUC
        ``roc_auc`` (:func:`sklearn.metrics.roc_auc_score`) and ``pr_auc``
        (:func:`sklearn.metrics.average_precision_score`).

    Raises
    ------
    ValueError
        When the held-out entries are all links or all non-links (no AUC is
        defined), or hold missing values.
    """
    entries = to_numpy(entries)
    truth = entry_values(X, entries)
    if np.isnan(truth).any():
        raise ValueError("Some held-out entries are missing (NaN) in X; they have no label.")
    links = truth != 0
    if links.all() or not links.any():
        raise ValueError(
            "The held-out entries must contain both links (non-zero) and non-links (zero) "
            f"for an AUC; got {int(links.sum())} links among {links.size} entries."
        )
    # Predicted where the fit lives (an array-API fit: on its device), ranked on the host.
    scores = to_numpy(estimator.predict_entries(entries))
    return LinkPredictionAUC(float(roc_auc_score(links, scores)),
                             float(average_precision_score(links, scores)))


def link_prediction_scorer(metric="pr_auc"):
    """A scorer ``scorer(estimator, X, entries) -> float`` for one metric of
    :func:`link_prediction_auc` (``"roc_auc"`` or ``"pr_auc"``), for
    :func:`~sklearn_pltf.model_selection.cross_validate_entries`."""
    if metric not in LinkPredictionAUC._fields:
        raise ValueError(f"metric must be one of {LinkPredictionAUC._fields}, got {metric!r}.")

    def scorer(estimator, X, entries):
        return getattr(link_prediction_auc(estimator, X, entries), metric)

    scorer.__name__ = f"link_prediction_{metric}"
    return scorer
