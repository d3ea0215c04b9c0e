"""GridSearchCV picks the rank by the evidence (FullDataSplit) or by K-fold
predictive evidence."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sparse
from sklearn.model_selection import GridSearchCV

from sklearn_pltf import PLTF, BayesianNMF, PoissonCP, TuckerVB
from sklearn_pltf.model_selection import FullDataSplit


def poisson_cp(shape, rank, seed):
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, 1.0, size=(n, rank)) for n in shape]
    subscripts = ",".join(c + "z" for c in "abcd"[: len(shape)]) + "->" + "abcd"[: len(shape)]
    return rng.poisson(np.einsum(subscripts, *factors)).astype(float)


def poisson_tucker(shape, ranks, seed, core_scale):
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, 1.0, size=(n, r)) for n, r in zip(shape, ranks)]
    core = rng.gamma(1.0, core_scale, size=ranks)
    return rng.poisson(np.einsum("ap,bq,cr,pqr->abc", *factors, core)).astype(float)


def search(estimator, grid, X, cv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GridSearchCV(estimator, {"n_components": grid}, cv=cv).fit(X)


def test_full_data_split():
    split = FullDataSplit()
    (train, test), = split.split(np.zeros((5, 2)))
    assert split.get_n_splits() == 1
    np.testing.assert_array_equal(train, np.arange(5))
    np.testing.assert_array_equal(test, np.arange(5))


# One layout in the quick tier; the other two run the same search (slow tier).
@pytest.mark.parametrize("layout", [
    "dense",
    pytest.param("pydata", marks=pytest.mark.slow(minutes=0.4)),
    pytest.param("scipy", marks=pytest.mark.slow(minutes=0.3)),
])
def test_grid_search_picks_the_nmf_rank_by_evidence(layout):
    X = poisson_cp((200, 100), 4, seed=0)
    X = {"dense": X, "pydata": sparse.COO.from_numpy(X), "scipy": sp.csr_matrix(X)}[layout]
    # One start per rank: rank 4 leads its nearest rival by 461 nats, with
    # three starts by 452.
    result = search(BayesianNMF(random_state=0), list(range(1, 9)), X, FullDataSplit())
    assert result.best_params_["n_components"] == 4
    # the score of the chosen model is its log evidence
    assert result.best_score_ == result.best_estimator_.log_evidence_


@pytest.mark.slow(minutes=0.15)
def test_grid_search_picks_the_cp_rank_by_evidence():
    X = poisson_cp((40, 30, 20), 3, seed=1)
    result = search(PoissonCP(n_init=3, random_state=0), list(range(1, 7)), X, FullDataSplit())
    assert result.best_params_["n_components"] == 3


@pytest.mark.slow(minutes=1)
def test_grid_search_picks_the_tucker_core_by_evidence():
    """Core (2, 3, 4) and every neighbour one rank away in one mode.

    The core is drawn with scale 5 (mean count about 120): at scale 1 (mean
    count about 24) the fourth mode-3 component of this draw is too weak for the
    evidence to support it, and the converged bound prefers (2, 3, 3) by 47
    nats; at scale 5 it prefers (2, 3, 4) by 116 nats over the nearest rival.
    """
    X = poisson_tucker((30, 30, 30), (2, 3, 4), seed=2, core_scale=5.0)
    grid = [(2, 3, 4), (1, 3, 4), (3, 3, 4), (2, 2, 4), (2, 4, 4), (2, 3, 3), (2, 3, 5)]
    result = search(TuckerVB(n_init=3, max_iter=3000, random_state=0), grid, X, FullDataSplit())
    assert result.best_params_["n_components"] == (2, 3, 4)


@pytest.mark.parametrize(
    "estimator, X, grid, truth",
    [
        (BayesianNMF(n_init=3, random_state=0), poisson_cp((200, 100), 4, seed=0), range(1, 9), 4),
        (PoissonCP(n_init=3, random_state=0), poisson_cp((40, 30, 20), 3, seed=1), range(1, 7), 3),
    ],
    ids=["nmf", "cp"],
)
@pytest.mark.slow(minutes=0.4)
def test_predictive_evidence_picks_the_rank_or_a_neighbour(estimator, X, grid, truth):
    result = search(estimator, list(grid), X, 3)
    chosen = result.best_params_["n_components"]
    print(f"{type(estimator).__name__}: 3-fold predictive evidence chose {chosen} (true {truth})")
    assert abs(chosen - truth) <= 1


@pytest.mark.slow(minutes=2)
def test_predictive_evidence_picks_the_tucker_core_or_a_neighbour():
    """3-fold predictive evidence over a grid that reaches two and more steps
    from the core (2, 3, 4), on the data of the FullDataSplit test."""
    X = poisson_tucker((30, 30, 30), (2, 3, 4), seed=2, core_scale=5.0)
    grid = [(2, 3, 4), (1, 3, 4), (2, 3, 3), (2, 3, 5), (1, 2, 3), (2, 2, 2), (3, 4, 5), (2, 3, 6), (4, 3, 4)]
    result = search(TuckerVB(n_init=3, max_iter=3000, random_state=0), grid, X, 3)
    chosen = result.best_params_["n_components"]
    print(f"TuckerVB: 3-fold predictive evidence chose {chosen} (true (2, 3, 4))")
    assert sum(abs(c - t) for c, t in zip(chosen, (2, 3, 4))) <= 1


CP_STRING, TUCKER_STRING = "ir,jr,kr->ijk", "ip,jq,kr,pqr->ijk"
RESCAL_STRING, RESCAL_TIE = "ia,jb,abk->ijk", {1: 0}


def _memberships(rng, n):
    """Each of n rows in one of three clusters (1.0), the others at 0.05."""
    member = np.full((n, 3), 0.05)
    member[np.arange(n), rng.integers(0, 3, n)] = 1.0
    return member


def binary_relations(structure, shape, seed):
    """Binary data drawn from the Bernoulli–Poisson model of one structure:
    CP at rank 3 (Gamma(0.5) factors, a quarter of the entries links);
    Tucker with a 3 x 3 x 3 core of strong (3.0) and absent (0.02) blocks
    over three clusters per mode, which CP needs many components for; or
    RESCAL, the same clusters on both entity axes and such a block core per
    relation. The diagonal x(i, i, k) is missing (NaN), as RESCAL does not
    model it, so that every structure's evidence is of the same entries."""
    rng = np.random.default_rng(seed)
    if structure == CP_STRING:
        factors = [rng.gamma(0.5, 1.0, (n, 3)) for n in shape]
        xhat = np.einsum("ir,jr,kr->ijk", *factors)
        xhat *= 0.3 / xhat.mean()
    elif structure == TUCKER_STRING:
        core = np.where(rng.random((3, 3, 3)) < 0.35, 3.0, 0.02)
        xhat = np.einsum("ip,jq,kr,pqr->ijk", *(_memberships(rng, n) for n in shape), core)
    else:
        entities = _memberships(rng, shape[0])
        core = np.where(rng.random((3, 3, shape[2])) < 0.35, 3.0, 0.02)
        xhat = np.einsum("ia,jb,abk->ijk", entities, entities, core)
    X = (rng.poisson(xhat) > 0).astype(float)
    X[np.arange(shape[0]), np.arange(shape[1])] = np.nan
    return X


@pytest.mark.slow(minutes=1.5)
@pytest.mark.parametrize("structure", [CP_STRING, TUCKER_STRING, RESCAL_STRING],
                         ids=["cp", "tucker", "rescal"])
def test_grid_search_picks_the_structure_and_rank_by_evidence(structure):
    """One GridSearchCV over model strings (RESCAL's with its tied factor)
    and ranks, under the Bernoulli–Poisson likelihood: on data drawn from
    each structure at rank 3 the evidence picks that structure and rank."""
    X = binary_relations(structure, (30, 30, 20), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = GridSearchCV(
            PLTF(likelihood="bernoulli", n_init=2, random_state=0),
            [{"model": [CP_STRING, TUCKER_STRING], "n_components": [2, 3, 4]},
             {"model": [RESCAL_STRING], "tied_factors": [RESCAL_TIE], "n_components": [2, 3, 4]}],
            cv=FullDataSplit(),
        ).fit(X)
    expected = {"model": structure, "n_components": 3}
    if structure == RESCAL_STRING:
        expected["tied_factors"] = RESCAL_TIE
    scores = dict(zip(map(str, result.cv_results_["params"]), result.cv_results_["mean_test_score"]))
    assert result.best_params_ == expected, scores
