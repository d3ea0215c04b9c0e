"""A deterministic start for any model string from the data's leading
singular vectors: non-negative double SVD with zeros filled (NNDSVDa;
Boutsidis & Gallopoulos 2008), one mode at a time as in a higher-order SVD
(De Lathauwer, De Moor & Vandewalle 2000)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from ..engine._planner import planner_for

__all__ = ["svd_start"]


def svd_start(model, data, free, given=None):
    """Starting values of the free factors of ``model`` for ``data``.

    A free factor that carries one observed index (axis n) and one latent
    index l starts from the leading |l| left singular vectors of the mode-n
    unfolding of the data (missing entries as zeros): each vector's sign
    chosen so that its positive part is the larger, the positive part kept,
    its zeros filled with its mean (so multiplicative updates can move
    them), the column weighted by its singular value's share. Every other
    free factor (a Tucker core, a factor over several latent indices)
    starts at ones. One common scale then makes the mean of X̂ over all
    entries the mean of the observed values.

    Parameters
    ----------
    model : Model
        A bound model.
    data : ObservedTensor
    free : tuple of int
        Positions of the free factors.
    given : dict, default=None
        ``{position: array}`` of the held (fixed) factors.

    Returns
    -------
    start : dict
        ``{position: array}`` for every free factor.

    Raises
    ------
    ValueError
        If every observed entry is zero: the data have no singular vectors.
    """
    if data.total == 0:
        raise ValueError("init='svd' starts from the data's leading singular vectors, and "
                         "every observed entry is zero, so there are none; use init='random'.")
    carriers = {}
    for alpha in free:
        observed = [c for c in model.factors[alpha] if c in model.output]
        latent = [c for c in model.factors[alpha] if c not in model.output]
        if len(observed) == 1 and len(latent) == 1:
            carriers.setdefault(latent[0], []).append(alpha)
    start = {}
    for alpha in free:
        own = model.factors[alpha]
        latent = [c for c in own if c not in model.output]
        if len(latent) != 1 or alpha not in carriers.get(latent[0], ()):
            start[alpha] = np.ones(model.factor_shape(alpha))
            continue
        axis = model.output.index(next(c for c in own if c in model.output))
        columns = _nonnegative_singular_vectors(data, axis, model.sizes[latent[0]],
                                                len(carriers[latent[0]]))
        start[alpha] = columns if own.index(latent[0]) == 1 else columns.T
    factors = [dict(given or {}).get(a, start.get(a)) for a in range(model.n_factors)]
    mean_model = planner_for(model).all_observed_total(factors) / data.size
    mean_data = data.total / max(data.n_observed, 1)
    if mean_model <= 0 or mean_data <= 0:
        return start
    scale = (mean_data / mean_model) ** (1.0 / len(free))
    return {a: scale * value for a, value in start.items()}


def _unfolding(data, axis):
    """The mode-``axis`` unfolding (I_axis, product of the other sizes),
    missing entries as zeros; scipy.sparse for sparse data."""
    if not data.is_sparse:  # in float64 whatever the data's precision
        return np.moveaxis(data.dense, axis, 0).reshape(data.shape[axis], -1).astype(
            np.float64, copy=False)
    others = [n for n in range(data.ndim) if n != axis]
    other_shape = tuple(data.shape[n] for n in others)
    columns = (np.ravel_multi_index(tuple(data.coords[others]), other_shape) if others
               else np.zeros(data.values.size, dtype=np.int64))
    return sp.csr_matrix((data.values, (data.coords[axis], columns)),
                         shape=(data.shape[axis], int(np.prod(other_shape))))


def _nonnegative_singular_vectors(data, axis, rank, n_carriers):
    """(I_axis, rank): the NNDSVDa columns of the mode-``axis`` unfolding,
    each weighted by its singular value to the power 1 / ``n_carriers`` (the
    factors sharing the latent index share the weight)."""
    unfolding = _unfolding(data, axis)
    size = data.shape[axis]
    k = min(rank, min(unfolding.shape))
    if k < min(unfolding.shape) - 1:
        # ARPACK from a fixed start vector: the same vectors on every call.
        u, s, _ = svds(unfolding.astype(np.float64), k=k, v0=np.ones(min(unfolding.shape)))
        order = np.argsort(s)[::-1]
        u, s = u[:, order], s[order]
    else:
        dense = unfolding.toarray() if sp.issparse(unfolding) else unfolding
        u, s, _ = np.linalg.svd(dense, full_matrices=False)
        u, s = u[:, :k], s[:k]
    positive = np.where(np.linalg.norm(np.maximum(u, 0), axis=0)
                        >= np.linalg.norm(np.maximum(-u, 0), axis=0), 1.0, -1.0)
    columns = np.maximum(u * positive, 0.0)
    fill = columns.mean(axis=0, keepdims=True)
    columns = np.where(columns > 0, columns, np.where(fill > 0, fill, 1.0 / size))
    weights = (np.maximum(s, 0) / max(s[0], np.finfo(float).tiny)) ** (1.0 / n_carriers)
    columns = columns * np.maximum(weights, 1e-3)
    if k < rank:  # more components than the unfolding has vectors: mean columns
        columns = np.hstack([columns, np.full((size, rank - k), columns.mean())])
    return columns
