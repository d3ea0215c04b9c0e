"""Time against size: one sweep of dense Poisson NMF at growing sizes."""

from __future__ import annotations

from . import _workloads as workloads
from ._contenders import ours_per_sweep, sklearn_kl_nmf
from ._protocol import Case

TITLE = "Time against size"
ABOUT = ("One VB sweep of BayesianNMF (rank 20; the bound included) against one iteration of "
         "scikit-learn's KL NMF on dense n x n/2 counts, n from 250 to 4000: both grow with "
         "the entries (n²/2); a sweep's fixed costs weigh most on the smallest data.")


def cases(quick):
    from sklearn_pltf import BayesianNMF

    sizes = (100, 200) if quick else (250, 500, 1000, 2000, 4000)
    rank, n_sweeps = (5, 3) if quick else (20, 10)
    return [Case(f"{n} x {n // 2}, rank {rank}",
                 lambda n=n: workloads.dense_poisson_nmf(n, n // 2, rank=rank),
                 [ours_per_sweep(BayesianNMF, rank, n_sweeps),
                  sklearn_kl_nmf(rank, max_iter=n_sweeps)],
                 measure="per sweep", repeats=1 if quick else 3, size=n * (n // 2))
            for n in sizes]
