"""``partial_fit`` over 1000-row minibatches against batch VB, on a sparse count matrix.

A sparse 20000 x 5000 count matrix from a rank-20 Poisson NMF (500,000
non-zeros), with 5% of its non-zeros and as many zeros held out (masked).
Batch VB fits the matrix (``BayesianNMF(20, prior_shape=0.3)``, HPF's prior
shape); online VB passes over it in 1000-row batches with ``partial_fit``,
the held-out entries masked in each batch. Both are scored the same way: every training row is
folded in (``transform`` with the mask) and the held-out entries get the
Poisson log-likelihood of ``W H`` there, per entry. Peak memory above the
input's is measured in fresh processes, for the whole batch fit and for the
online passes.
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np

#: HPF's prior shape, and the rate the evidence prefers to HPF's 0.3.
_PRIOR = dict(prior_shape=0.3, prior_rate=1.0)


def _line(**fields):
    print(json.dumps(fields, default=float), flush=True)


def _workload():
    import scipy.sparse as sp
    import sparse

    import workloads

    T = workloads.sparse_poisson_cp((20000, 5000), 20, 500_000, random_state=0)
    X = sp.csr_matrix((T.data, tuple(T.coords)), shape=T.shape)
    rows, cols, values = workloads.held_out_entries(X, 0.05, np.random.default_rng(0))
    held_out = np.vstack([rows, cols])
    mask = sparse.COO(held_out, np.zeros(rows.size, dtype=bool), shape=X.shape,
                      fill_value=True)
    return X, mask, held_out, values


def _held_out_loglik(est, X, mask, held_out, values):
    import peers

    W = est.transform(X, mask=mask)
    xhat = np.einsum("nk,kn->n", W[held_out[0]], est.components_[:, held_out[1]])
    return peers.poisson_loglik(values, np.maximum(xhat, 1e-10)) / values.size


def _batch_fit(X, mask):
    from sklearn_pltf import BayesianNMF

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BayesianNMF(20, random_state=0, **_PRIOR).fit(X, mask=mask)


def _online_passes(X, mask, batch_rows, n_passes, report=None):
    from sklearn_pltf import BayesianNMF

    est = BayesianNMF(20, total_samples=X.shape[0], random_state=0, **_PRIOR)
    for n_pass in range(1, n_passes + 1):
        for start in range(0, X.shape[0], batch_rows):
            stop = min(start + batch_rows, X.shape[0])
            est.partial_fit(X[start:stop], mask=mask[start:stop])
        if report is not None:
            report(n_pass, est)
    return est


def _batch_memory(X, mask):
    _batch_fit(X, mask)


def _online_memory(X, mask, batch_rows, n_passes):
    _online_passes(X, mask, batch_rows, n_passes)


def bench_online(batch_rows=1000, n_passes=5):
    """The comparison; returns the summary figures."""
    import peers

    X, mask, held_out, values = _workload()
    _line(workload="online", nnz=X.nnz, held_out=values.size, batch_rows=batch_rows)
    start = time.perf_counter()
    batch = _batch_fit(X, mask)
    batch_seconds = time.perf_counter() - start
    reference = _held_out_loglik(batch, X, mask, held_out, values)
    _line(workload="online", what="batch VB", seconds=batch_seconds, iterations=batch.n_iter_,
          heldout_loglik=reference)
    per_pass = {}
    start = time.perf_counter()

    def report(n_pass, est):
        per_pass[n_pass] = _held_out_loglik(est, X, mask, held_out, values)
        _line(workload="online", what="online VB", passes=n_pass,
              seconds=time.perf_counter() - start, heldout_loglik=per_pass[n_pass],
              minus_batch=per_pass[n_pass] - reference)

    _online_passes(X, mask, batch_rows, n_passes, report)
    _, batch_mib = peers.measure_peak_memory(_batch_memory, X, mask)
    _, online_mib = peers.measure_peak_memory(_online_memory, X, mask, batch_rows, 1)
    _line(workload="online", what="peak memory above the input, MiB", batch_fit=batch_mib,
          online_one_pass=online_mib)
    return {
        f"held-out loglik/entry, online after {n_passes} passes - batch VB":
            per_pass[n_passes] - reference,
        "held-out loglik/entry, online after 1 pass - batch VB": per_pass[1] - reference,
        "peak memory, online pass / batch fit": online_mib / batch_mib,
    }
