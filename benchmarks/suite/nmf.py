"""Poisson NMF: BayesianNMF against scikit-learn's KL NMF, dense and sparse."""

from __future__ import annotations

import scipy.sparse as sp

from . import _workloads as workloads
from ._contenders import ours_per_sweep, ours_whole_fit, sklearn_kl_nmf
from ._protocol import Case
from ._quality import nmf_quality

TITLE = "Poisson NMF against scikit-learn"
ABOUT = ("BayesianNMF (VB, its defaults: SQUAREM cycles of three sweeps to `tol=0.1` nats, "
         "then the fold-in of W) against scikit-learn's `NMF(beta_loss='kullback-leibler', "
         "solver='mu')` at its defaults (NNDSVDa start, `max_iter=200`, `tol=1e-4`); quality: "
         "the Poisson log-likelihood per entry at each fit's mean W H. Per sweep: one "
         "update of every factor (ours: plain VB with the bound) against one "
         "scikit-learn iteration.")

_QUALITY = nmf_quality("loglik_per_entry")


def _sparse(quick):
    shape, nnz = ((2000, 500), 5_000) if quick else ((20000, 5000), 500_000)
    T = workloads.sparse_poisson_cp(shape, 20, nnz, random_state=0)
    return sp.csr_matrix((T.data, tuple(T.coords)), shape=T.shape)


def cases(quick):
    from sklearn_pltf import BayesianNMF

    rank = 5 if quick else 20
    dense = (300, 200) if quick else (2000, 1000)
    n_sweeps = 5 if quick else 30
    dense_name = f"dense {dense[0]} x {dense[1]}, rank {rank}"
    sparse_name = ("sparse 2000 x 500" if quick else "sparse 20000 x 5000") + f", rank {rank}"
    return [
        Case(dense_name, lambda: workloads.dense_poisson_nmf(*dense, rank=rank),
             [ours_whole_fit(BayesianNMF, rank), sklearn_kl_nmf(rank)],
             quality=_QUALITY, repeats=1 if quick else 3),
        # Larger counts: more sweeps to the converged evidence (issue 67's workload).
        Case(f"{dense_name}, counts of mean 20",
             lambda: workloads.dense_poisson_nmf(*dense, rank=rank, mean=20.0),
             [ours_whole_fit(BayesianNMF, rank), sklearn_kl_nmf(rank)],
             quality=_QUALITY, repeats=1 if quick else 3),
        Case(sparse_name, lambda: _sparse(quick),
             [ours_whole_fit(BayesianNMF, rank), sklearn_kl_nmf(rank)],
             quality=_QUALITY, repeats=1 if quick else 3),
        Case(dense_name, lambda: workloads.dense_poisson_nmf(*dense, rank=rank),
             [ours_per_sweep(BayesianNMF, rank, n_sweeps),
              sklearn_kl_nmf(rank, max_iter=n_sweeps)],
             measure="per sweep", repeats=1 if quick else 3),
        Case(sparse_name, lambda: _sparse(quick),
             [ours_per_sweep(BayesianNMF, rank, n_sweeps),
              sklearn_kl_nmf(rank, max_iter=n_sweeps)],
             measure="per sweep", repeats=1 if quick else 3),
    ]
