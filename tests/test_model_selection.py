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


@pytest.mark.slow(minutes=1.5)
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


@pytest.mark.slow(minutes=3.5)
def test_predictive_evidence_picks_the_tucker_core_or_a_neighbour():
    """3-fold predictive evidence over a grid that reaches two and more steps
    from the core (2, 3, 4), below and above, on the data of the
    FullDataSplit test."""
    X = poisson_tucker((30, 30, 30), (2, 3, 4), seed=2, core_scale=5.0)
    grid = [(2, 3, 4), (1, 3, 4), (2, 3, 3), (2, 3, 5), (1, 2, 3), (2, 2, 2), (4, 3, 4)]
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


def _masked_cases():
    """(estimator, X, mask) of one tensor, of a coupled pair and of RESCAL's
    relations, each with a fifth of the target's entries hidden by the mask
    (their values kept in X, as EntryKFold's training masks leave them)."""
    from sklearn_pltf import BayesianRESCAL, CoupledPLTF

    rng = np.random.default_rng(0)
    X = rng.poisson(rng.gamma(1.0, 2.0, (20, 2)) @ rng.gamma(1.0, 1.0, (2, 12))).astype(float)
    mask = rng.random(X.shape) > 0.2
    Y = rng.poisson(2.0, (12, 5)).astype(float)
    R = (rng.random((8, 8, 3)) < 0.3).astype(float)
    relations_mask = rng.random(R.shape) > 0.2
    return {
        "nmf": (BayesianNMF(random_state=0), X, mask),
        "coupled": (CoupledPLTF(("ir,jr->ij", "jr,rf->jf"), random_state=0), [X, Y],
                    [mask, None]),
        "rescal": (BayesianRESCAL(likelihood="bernoulli", random_state=0), R, relations_mask),
    }


MASKED = _masked_cases()


@pytest.mark.parametrize("routing", [False, True], ids=["mask-to-fit-only", "metadata-routing"])
@pytest.mark.parametrize("name", list(MASKED))
def test_grid_search_with_a_mask_ranks_by_the_evidence(name, routing):
    """GridSearchCV(cv=FullDataSplit()).fit(X, mask=m) passes m to fit only
    (without metadata routing): score(X) must still be the evidence of the
    fit, not the fold-in score of X with the hidden entries observed, nor
    NaN (a refused score) for every candidate."""
    import sklearn
    from sklearn.base import clone

    estimator, X, mask = MASKED[name]
    grid = [1, 2, 3]
    evidence = [clone(estimator).set_params(n_components=k).fit(X, mask=mask).log_evidence_
                for k in grid]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sklearn.config_context(enable_metadata_routing=routing):
            if routing:
                estimator = clone(estimator).set_fit_request(mask=True).set_score_request(
                    mask=True)
            search = GridSearchCV(estimator, {"n_components": grid}, cv=FullDataSplit())
            search.fit(X, mask=mask)
    assert not [w for w in caught if "Scoring failed" in str(w.message)]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], evidence, rtol=1e-12)
    assert search.best_params_["n_components"] == grid[int(np.argmax(evidence))]
    assert search.best_score_ == pytest.approx(search.best_estimator_.log_evidence_, rel=1e-12)


def test_metadata_routing_needs_the_mask_requested_for_score_too():
    import sklearn
    from sklearn.base import clone
    from sklearn.exceptions import UnsetMetadataPassedError

    estimator, X, mask = MASKED["nmf"]
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(clone(estimator).set_fit_request(mask=True),
                              {"n_components": [1, 2]}, cv=FullDataSplit())
        with pytest.raises(UnsetMetadataPassedError, match=r"set_score_request"):
            search.fit(X, mask=mask)


@pytest.mark.parametrize("name", list(MASKED))
def test_the_training_data_without_their_mask_score_their_evidence(name):
    """score(X) of the X fitted with mask=m is the evidence; X with every
    entry observed (an all-True mask), or other data, is not the training
    data."""
    from sklearn.base import clone

    estimator, X, mask = MASKED[name]
    fitted = clone(estimator).set_params(n_components=2).fit(X, mask=mask)
    assert fitted.score(X) == fitted.score(X, mask=mask) == fitted.log_evidence_
    every = ([np.ones(np.shape(t), dtype=bool) for t in X] if isinstance(X, list)
             else np.ones(X.shape, dtype=bool))
    other = [X[0] + 1.0, X[1]] if isinstance(X, list) else (X == 0).astype(float)
    if name == "nmf":  # new samples: their fold-in score
        assert fitted.score(X, mask=every) != fitted.log_evidence_
        assert fitted.score(other) != fitted.log_evidence_
    else:  # these score their training data only
        for data, data_mask in [(X, every), (other, None)]:
            with pytest.raises(ValueError, match="only"):
                fitted.score(data, mask=data_mask)
    # a fit without a mask does not recognise data it was not given
    refitted = clone(fitted).fit([np.where(mask[0], X[0], 0.0), X[1]] if isinstance(X, list)
                                 else np.where(mask, X, 0.0))
    if name == "nmf":
        assert refitted.score(X) != refitted.log_evidence_
    else:
        with pytest.raises(ValueError, match="only"):
            refitted.score(X)


def test_a_coupled_mask_of_nones_is_no_mask():
    """mask=[None, None] for a coupled fit's tensors says no tensor has a
    mask: the training tensors fitted with masks score their evidence."""
    from sklearn.base import clone

    estimator, X, mask = MASKED["coupled"]
    fitted = clone(estimator).set_params(n_components=2).fit(X, mask=mask)
    assert fitted.score(X, mask=[None, None]) == fitted.log_evidence_
