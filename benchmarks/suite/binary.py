"""Binary data: a Bernoulli–Poisson fit against a Poisson fit of the same 0/1 tensor."""

from __future__ import annotations

import dataclasses

import numpy as np

from . import _workloads as workloads
from ._contenders import ours_per_sweep, ours_whole_fit
from ._protocol import Case

TITLE = "Binary data: Bernoulli–Poisson against Poisson"
ABOUT = ("The sparse 1000 x 1000 x 1000 Poisson CP tensor of rank 10 (10^6 non-zeros) made "
         "binary (10^6 ones): `PoissonCP(10, likelihood='bernoulli')` against "
         "`PoissonCP(10)` (the ones read as counts) on the same tensor, per plain VB sweep "
         "(the bound included) and for the whole fit at the defaults; each over the Poisson "
         "fit's time.")

POISSON = "PoissonCP, Poisson"
BERNOULLI = "PoissonCP, Bernoulli–Poisson"


def _binary(shape, nnz, rank):
    import sparse

    X = workloads.sparse_poisson_cp(shape, rank, nnz, random_state=0)
    return sparse.COO(X.coords, np.ones(X.nnz), shape=X.shape)


def _named(contender, name):
    return dataclasses.replace(contender, name=name)


def cases(quick):
    from sklearn_pltf import PoissonCP

    shape, nnz, rank = ((100, 100, 100), 20_000, 5) if quick else \
        ((1000, 1000, 1000), 1_000_000, 10)
    n_sweeps = 3 if quick else 10
    repeats = 1 if quick else 3
    name = f"binary {' x '.join(map(str, shape))}, {nnz:,} ones, rank {rank}"
    return [
        Case(name, lambda: _binary(shape, nnz, rank),
             [_named(ours_per_sweep(PoissonCP, rank, n_sweeps), POISSON),
              _named(ours_per_sweep(PoissonCP, rank, n_sweeps, likelihood="bernoulli"),
                     BERNOULLI)],
             measure="per sweep", repeats=repeats, baseline=POISSON),
        Case(name, lambda: _binary(shape, nnz, rank),
             [_named(ours_whole_fit(PoissonCP, rank), POISSON),
              _named(ours_whole_fit(PoissonCP, rank, likelihood="bernoulli"), BERNOULLI)],
             repeats=1 if quick else 2, baseline=POISSON),
    ]
