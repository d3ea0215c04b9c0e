"""The stopping rule keeps its promise on a corpus of fits: the returned
bound is within ``tol`` nats of the limit of its own run."""

import numpy as np
import pytest
import sparse
from _helpers import over_ranked_counts

from sklearn_pltf import BayesianNMF, BayesianRESCAL, CoupledPLTF, PoissonCP, TuckerVB

TOL = 0.1
LIMIT_TOL = 1e-7


def _corpus():
    """(name, estimator factory, data): NMF, CP, Tucker, RESCAL and coupled
    fits of ranks 1-10 on small and mid-sized counts, dense and sparse."""
    cases = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        for rank in (1, 3, 6, 10):
            W, H = rng.gamma(1.0, 1.0, (60, rank)), rng.gamma(1.0, 1.0, (rank, 40))
            X = rng.poisson(W @ H / max(rank, 2)).astype(float)
            cases.append((f"nmf{rank}-{seed}", lambda r=rank, **kw: BayesianNMF(r, **kw), X))
        for rank in (2, 5):
            A, B, C = (rng.gamma(1.0, 1.0, (n, rank)) for n in (30, 20, 15))
            X = rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C) / rank).astype(float)
            cases.append((f"cp{rank}-{seed}", lambda r=rank, **kw: PoissonCP(r, **kw), X))
            cases.append((f"cp{rank}-{seed}-sparse", lambda r=rank, **kw: PoissonCP(r, **kw),
                          sparse.COO.from_numpy(X)))
        X = rng.poisson(2.0, (20, 15, 10)).astype(float)
        cases.append((f"tucker-{seed}", lambda **kw: TuckerVB((2, 2, 2), **kw), X))
        A, G = rng.gamma(1.0, 1.0, (20, 3)), rng.gamma(1.0, 1.0, (3, 3, 4))
        X = rng.poisson(np.einsum("ia,jb,abk->ijk", A, A, G) / 3).astype(float)
        # init="random": RESCAL's default start runs EM to its own tol first.
        cases.append((f"rescal-{seed}", lambda **kw: BayesianRESCAL(3, init="random", **kw), X))
        A, B, F = (rng.gamma(1.0, 1.0, shape) for shape in ((40, 3), (30, 3), (3, 8)))
        tensors = [rng.poisson(A @ B.T).astype(float), rng.poisson(A @ F).astype(float)]
        cases.append((f"coupled-{seed}", lambda **kw: CoupledPLTF(
            ("ir,jr->ij", "ir,rf->if"), n_components=3, **kw), tensors))
    return cases


def _gap(make, X, seed):
    short = make(random_state=seed, tol=TOL).fit(X)
    long = make(random_state=seed, tol=LIMIT_TOL, max_iter=20_000).fit(X)
    # The run to the smaller tol follows the same path until the short run
    # stops (the rule's check leaves it unchanged; a delete move kept there
    # goes on elsewhere), so its last bound is the limit of this run.
    same = min(short.lower_bounds_.size, long.lower_bounds_.size)
    parted = np.flatnonzero(long.lower_bounds_[:same] != short.lower_bounds_[:same])
    assert parted.size == 0 or parted[0] >= 25, parted[0]  # no run stops sooner
    return float(long.lower_bounds_[-1] - short.lower_bounds_[-1])


@pytest.mark.slow(minutes=3)
def test_the_bound_is_within_tol_of_its_limit_on_95_percent_of_the_corpus():
    gaps = {name: _gap(make, X, seed) for seed, (name, make, X) in enumerate(_corpus())}
    short = {name: round(g, 3) for name, g in gaps.items() if g > TOL}
    assert len(short) <= 0.05 * len(gaps), short
    assert max(gaps.values()) <= 10 * TOL, short


def _over_ranked_corpus():
    """(name, estimator factory, data): NMF at ranks r+1 and r+3 on counts of
    rank r = 1-3 (fixed and learned prior rates) and CP at ranks 3 and 5 on
    rank-2 tensors: the fits where a redundant component's plateau stops a
    run short (the user guide's "When a fit has converged")."""
    cases = []
    for seed in range(6):
        data = over_ranked_counts(seed)
        for r in (1, 2, 3):
            for k in (r + 1, r + 3):
                for rate in ({}, {"prior_rate": "auto"}):
                    cases.append((f"nmf{r}-{k}-{bool(rate)}-{seed}", seed, data[r],
                                  lambda k=k, rate=rate, **kw: BayesianNMF(k, **rate, **kw)))
        for k in (3, 5):
            cases.append((f"cp2-{k}-{seed}", seed, data["cp"],
                          lambda k=k, **kw: PoissonCP(k, **kw)))
    return cases


@pytest.mark.slow(minutes=1)
def test_over_ranked_fits_leave_a_redundant_components_plateau():
    """With the delete moves at convergence, none of the 84 ends more than a
    nat below the limit of its own run, and at most 5% more than ``tol``
    (without them, 7 stopped 8.4-29.4 nats short when measured)."""
    gaps = {}
    for name, seed, X, make in _over_ranked_corpus():
        fitted = make(random_state=seed, tol=TOL).fit(X)
        long = make(random_state=seed, tol=LIMIT_TOL, max_iter=20_000).fit(X)
        gaps[name] = long.lower_bound_ - fitted.lower_bound_
    short = {name: round(g, 3) for name, g in gaps.items() if g > TOL}
    assert len(gaps) == 84 and len(short) <= 0.05 * len(gaps), short
    assert max(gaps.values()) <= 10 * TOL, short
