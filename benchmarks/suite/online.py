"""``partial_fit`` over 1000-row batches against batch VB, on a sparse count matrix."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import gammaln, xlogy

from . import _workloads as workloads
from ._protocol import Case, Contender
from ._quality import FLOOR

TITLE = "Online VB (`partial_fit`) against batch VB"
ABOUT = ("A sparse 20000 x 5000 count matrix from a rank-20 Poisson NMF (500,000 non-zeros), "
         "5% of its non-zeros and as many zeros held out (masked): "
         "`BayesianNMF(20, prior_shape=0.3)` (HPF's prior shape) fitted in one batch, against "
         "`partial_fit` over 1000-row batches (`total_samples=20000`, the held-out entries "
         "masked in each batch), one pass and five. Quality: every row folded in "
         "(`transform` with the mask), the Poisson log-likelihood per held-out entry of W H "
         "(higher is better). Each over the batch fit's time.")

BATCH = "BayesianNMF.fit (batch VB)"
PRIOR = dict(prior_shape=0.3, prior_rate=1.0)


def _data(shape, rank, nnz):
    import scipy.sparse as sp
    import sparse

    T = workloads.sparse_poisson_cp(shape, rank, nnz, random_state=0)
    X = sp.csr_matrix((T.data, tuple(T.coords)), shape=T.shape)
    rows, cols, values = workloads.held_out_entries(X, 0.05, np.random.default_rng(0))
    held_out = np.vstack([rows, cols])
    mask = sparse.COO(held_out, np.zeros(rows.size, dtype=bool), shape=X.shape,
                      fill_value=True)
    return {"X": X, "mask": mask, "held_out": held_out, "values": values}


def _quality(data, est):
    """The Poisson log-likelihood per held-out entry of W H, every row folded in."""
    W = est.transform(data["X"], mask=data["mask"])
    rows, cols = data["held_out"]
    xhat = np.maximum(np.einsum("nk,kn->n", W[rows], est.components_[:, cols]), FLOOR)
    values = data["values"]
    return {"heldout_loglik_per_entry": float(np.sum(xlogy(values, xhat) - xhat
                                                     - gammaln(values + 1.0)) / values.size)}


def _batch(rank):
    def run(data):
        from sklearn_pltf import BayesianNMF

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = BayesianNMF(rank, random_state=0, **PRIOR).fit(data["X"], mask=data["mask"])
        return {"result": est, "info": {"n_iter": int(est.n_iter_)}}
    return Contender(BATCH, run, ours=True)


def _online(rank, batch_rows, n_passes):
    def run(data):
        from sklearn_pltf import BayesianNMF

        X, mask = data["X"], data["mask"]
        est = BayesianNMF(rank, total_samples=X.shape[0], random_state=0, **PRIOR)
        for _ in range(n_passes):
            for start in range(0, X.shape[0], batch_rows):
                stop = min(start + batch_rows, X.shape[0])
                est.partial_fit(X[start:stop], mask=mask[start:stop])
        return {"result": est, "info": {"n_passes": n_passes}}
    passes = f"{n_passes} pass" + ("es" if n_passes > 1 else "")
    return Contender(f"BayesianNMF.partial_fit, {batch_rows}-row batches, {passes}", run,
                     ours=True)


def cases(quick):
    shape, nnz, batch_rows = ((2000, 500), 5_000, 200) if quick else \
        ((20000, 5000), 500_000, 1000)
    rank = 5 if quick else 20
    return [Case(f"sparse {shape[0]} x {shape[1]}, {nnz:,} non-zeros, rank {rank}",
                 lambda: _data(shape, rank, nnz),
                 [_batch(rank), _online(rank, batch_rows, 1), _online(rank, batch_rows, 5)],
                 quality=_quality, repeats=1 if quick else 3, baseline=BATCH)]
