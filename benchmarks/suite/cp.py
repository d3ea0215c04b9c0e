"""Poisson CP: PoissonCP against TensorLy (dense) and pyttb's CP-APR (sparse)."""

from __future__ import annotations

from . import _workloads as workloads
from ._contenders import (ours_per_sweep, ours_whole_fit, pyttb_cp_apr,
                          tensorly_nn_parafac)
from ._protocol import Case
from ._quality import cp_loglik_per_entry

TITLE = "Poisson CP against TensorLy and pyttb"
ABOUT = ("PoissonCP (VB at its defaults) against TensorLy's `non_negative_parafac` "
         "(Frobenius loss, its defaults: SVD start, `n_iter_max=100`, `tol=1e-6`) on a dense "
         "tensor, and per sweep against pyttb's `cp_apr` (Poisson, multiplicative updates, "
         "per outer iteration of 10 inner updates per mode) on a sparse one, whose whole fit "
         "to its own stopping rule takes far longer than the suite's budget; quality: the "
         "Poisson log-likelihood per entry at each fit's mean.")


def _quality(X, result):
    if hasattr(result, "factors_"):
        return {"loglik_per_entry": cp_loglik_per_entry(X, result.factors_)}
    weights, factors = result
    return {"loglik_per_entry": cp_loglik_per_entry(X, factors, weights)}


def cases(quick):
    from sklearn_pltf import PoissonCP

    size, rank = (40, 5) if quick else (200, 20)
    shape, nnz, sparse_rank = ((200, 200, 200), 20_000, 5) if quick else \
        ((1000, 1000, 1000), 1_000_000, 10)
    repeats = 1 if quick else 2
    dense = f"dense {size} x {size} x {size}, rank {rank}"
    sparse = f"sparse {' x '.join(map(str, shape))}, {nnz:,} non-zeros, rank {sparse_rank}"
    return [
        Case(dense, lambda: workloads.dense_poisson_cp(size, rank),
             [ours_whole_fit(PoissonCP, rank), tensorly_nn_parafac(rank)],
             quality=_quality, repeats=repeats),
        Case(dense, lambda: workloads.dense_poisson_cp(size, rank),
             [ours_per_sweep(PoissonCP, rank, 3 if quick else 10),
              tensorly_nn_parafac(rank, n_iter_max=3 if quick else 10)],
             measure="per sweep", repeats=repeats),
        Case(sparse, lambda: workloads.sparse_poisson_cp(shape, sparse_rank, nnz, random_state=0),
             [ours_whole_fit(PoissonCP, sparse_rank)], quality=_quality, repeats=repeats,
             notes="no peer fits this tensor to its own stopping rule within the budget"),
        Case(sparse, lambda: workloads.sparse_poisson_cp(shape, sparse_rank, nnz, random_state=0),
             [ours_per_sweep(PoissonCP, sparse_rank, 3 if quick else 10),
              pyttb_cp_apr(sparse_rank, n_outer=1 if quick else 2)],
             measure="per sweep", repeats=repeats,
             notes="pyttb: per outer iteration (10 inner multiplicative updates per mode)"),
    ]
