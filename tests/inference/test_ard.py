"""Prior rates learned by the evidence (``prior_rate="auto"``) and automatic
relevance determination (``ard``, ``prune``) for the Poisson–Gamma estimators.

What must hold: the learned rates maximise the bound at the fitted q (so
the bound with them never decreases, step after step); the bound stays below
the exact evidence of the model at the learned rates; ARD switches off the
components the data do not need, and pruning them does not lower the bound
by more than ``tol``; the fit is the same on dense and sparse data; the
learned rates are the ones new samples are folded in with."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import sparse
from sklearn.base import clone
from scipy.special import gammaln
from sklearn.model_selection import GridSearchCV

from sklearn_pltf import PLTF, BayesianNMF, BayesianRESCAL, PoissonCP, TuckerVB
from sklearn_pltf.engine._contract import make_contractor
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.datasets import make_poisson_cp, make_poisson_nmf, make_poisson_tucker
from sklearn_pltf.evidence import exact_log_evidence
from sklearn_pltf.inference import vb
from sklearn_pltf.inference._common import GammaPriors, gamma_priors
from sklearn_pltf.inference._hyperparameters import learned_priors, rate_learning
from sklearn_pltf.engine.model import Model
from sklearn_pltf.model_selection import FullDataSplit

TINY = np.array([[2, 0, 1], [0, 3, 1], [1, 0, 2]])


def _increments(estimator):
    """Each iteration's gain, relative to the bound's size (rounding: 1e-12)."""
    bounds = estimator.lower_bounds_
    return np.diff(bounds) / np.abs(bounds[1:])


@pytest.mark.parametrize("make, settings", [
    (lambda: BayesianNMF(6, ard=True), {}),
    (lambda: BayesianNMF(3, prior_rate="auto"), {}),
    (lambda: PoissonCP(5, ard=True, acceleration=None, max_iter=200), {}),
    (lambda: PoissonCP(5, ard=True, prior_shape=0.5), {"missing": True}),
    (lambda: PoissonCP(5, ard=True, likelihood="bernoulli"), {"binary": True}),
    (lambda: TuckerVB((3, 3, 3), ard=True, max_iter=150), {}),
    (lambda: PLTF("ir,jr,kr->ijk", 5, ard="r", prior_rate="auto"), {"sparse": True}),
])
def test_the_bound_with_learned_rates_never_decreases(make, settings):
    if isinstance(make(), BayesianNMF):
        X, _ = make_poisson_nmf(40, 30, 3, random_state=0)
    else:
        X, _ = make_poisson_cp((15, 12, 10), 3, missing_fraction=0.3 if settings.get("missing")
                               else 0.0, random_state=0)
    if settings.get("binary"):
        X = (X > 0).astype(float)
    if settings.get("sparse"):
        X = sparse.COO.from_numpy(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the short Tucker run need not converge
        estimator = make().set_params(random_state=0).fit(X)
    assert np.all(_increments(estimator) >= -1e-12)
    assert np.isfinite(estimator.log_evidence_)


@pytest.mark.parametrize("prior_shape", [1.0, 2.0])
def test_the_learned_per_factor_rates_bound_stays_below_the_exact_evidence(prior_shape):
    estimator = BayesianNMF(2, prior_rate="auto", prior_shape=prior_shape, tol=1e-8,
                            max_iter=5000, random_state=0).fit(TINY)
    rate_W, rate_H = (float(r.flat[0]) for r in estimator.prior_rate_)
    assert np.all(estimator.prior_rate_[0] == rate_W)  # one rate per factor
    exact = exact_log_evidence(TINY, 2, prior_shape=prior_shape, prior_rate=(rate_W, rate_H))
    assert estimator.log_evidence_ <= exact
    # and the fitted rate is Σ A / Σ E[Z] of the fitted factors
    assert rate_H == pytest.approx(prior_shape * estimator.factors_[1].size
                                   / estimator.factors_[1].sum(), rel=1e-6)


@pytest.mark.parametrize("prior_shape", [1.0, 2.0])
@pytest.mark.slow(minutes=0.2)
def test_the_ard_bound_stays_below_the_exact_evidence_at_the_learned_relevances(prior_shape):
    estimator = BayesianNMF(2, ard=True, prior_shape=prior_shape, tol=1e-8, max_iter=5000,
                            random_state=0).fit(TINY)
    rate_W, rate_H = estimator.prior_rate_
    # one relevance per component, shared by W's column and H's row
    assert np.allclose(rate_W, rate_W[0]) and np.allclose(rate_H.T, rate_W[0])
    assert np.allclose(rate_W[0], prior_shape / estimator.relevance_)
    exact = exact_log_evidence(TINY, 2, prior_shape=prior_shape,
                               prior_rate=(rate_W[0], rate_H[:, 0]))
    assert estimator.log_evidence_ <= exact


def test_the_oracle_with_equal_per_component_rates_is_the_oracle_with_one_rate():
    assert exact_log_evidence(TINY, 2, prior_rate=([0.7, 0.7], [1.3, 1.3])) == pytest.approx(
        exact_log_evidence(TINY, 2, prior_rate=(0.7, 1.3)), rel=1e-12)


def _scaled(priors, model, factor, scale):
    """``priors`` with the rate of every element that ``scale(alpha)`` selects
    (a boolean array of factor α's shape, or None) multiplied by ``factor``."""
    rates, normalizers = list(priors.rate), list(priors.log_normalizer)
    for alpha in model.free:
        chosen = scale(alpha)
        if chosen is None:
            continue
        rates[alpha] = np.where(chosen, priors.rate[alpha] * factor, priors.rate[alpha])
        a = np.broadcast_to(priors.shape[alpha], rates[alpha].shape)
        normalizers[alpha] = float(np.sum(a * np.log(rates[alpha]) - gammaln(a)))
    return GammaPriors(priors.shape, tuple(rates), tuple(normalizers))


@pytest.mark.parametrize("spec, sizes, ard, per_factor", [
    ("ik,kj->ij", 4, "k", False),
    ("ir,jr,kr->ijk", 3, "r", True),
    ("ia,jb,kc,abc->ijk", {"a": 3, "b": 2, "c": 3}, "abc", False),
    ("ia,jb,kc,abc->ijk", {"a": 3, "b": 2, "c": 3}, "ac", True),
])
def test_the_learned_rates_maximise_the_bound(spec, sizes, ard, per_factor):
    """At the learned rates the bound is at its maximum over the rates:
    scaling one relevance (in every factor that carries it) or one factor's
    own rate by 0.9 or 1.1 lowers it."""
    model = Model.parse(spec)
    rng = np.random.default_rng(1)
    shape = (8, 7) if len(model.output) == 2 else (8, 7, 6)
    model = model.bind(shape, sizes)
    X = rng.poisson(2.0, size=shape).astype(float)
    contractor = make_contractor(model, as_observed_tensor(X, None), "poisson")
    priors = gamma_priors(model, 0.7, 1.0)
    learning = rate_learning(model, model.free, ard, per_factor)
    state = vb.init(rng, model, contractor, priors)
    for _ in range(5):
        state, _ = vb.step(state, contractor, learned_priors(learning, state.mean, priors)[0])
    best, _ = learned_priors(learning, state.mean, priors)
    top = vb.bound(state, contractor, best)
    moves = [lambda alpha, own=alpha: np.ones(model.factor_shape(alpha), bool) if alpha == own
             and learning.per_factor[alpha] else None for alpha in model.free]
    for index in ard:
        for value in range(model.sizes[index]):
            def chosen(alpha, index=index, value=value):
                factor = model.factors[alpha]
                if index not in factor:
                    return None
                grid = np.indices(model.factor_shape(alpha))[factor.index(index)]
                return grid == value
            moves.append(chosen)
    assert len(moves) > len(model.free)
    for move in moves:
        for factor in (0.9, 1.1):
            moved = vb.bound(state, contractor, _scaled(best, model, factor, move))
            assert moved < top + 1e-9 * abs(top)


@pytest.mark.parametrize("family", ["nmf", "cp", "tucker"])
@pytest.mark.slow(minutes=0.2)
def test_ard_finds_the_rank_from_twice_it(family):
    if family == "nmf":
        X, _ = make_poisson_nmf(100, 75, 3, random_state=3)
        estimator = BayesianNMF(6, ard=True, random_state=0).fit(X)
        expected = 3
    elif family == "cp":
        X, _ = make_poisson_cp((30, 25, 20), 4, random_state=3)
        estimator = PoissonCP(8, ard=True, random_state=0).fit(X)
        expected = 4
    else:
        X, _ = make_poisson_tucker((30, 25, 20), (2, 3, 2), random_state=0)
        estimator = TuckerVB((4, 4, 4), ard=True, random_state=0).fit(X)
        expected = {"A": 2, "B": 3, "C": 2}
    assert estimator.effective_rank_ == expected
    relevance = (np.concatenate(list(estimator.relevance_.values())) if family == "tucker"
                 else estimator.relevance_)
    kept = np.sort(relevance)[::-1]
    n_kept = sum(expected.values()) if family == "tucker" else expected
    # the components switched off carry next to no prior mass
    assert kept[n_kept - 1] > 50 * kept[n_kept]


def test_pruning_keeps_the_bound_and_gives_the_effective_rank():
    X, _ = make_poisson_nmf(100, 75, 3, random_state=3)
    full = BayesianNMF(6, ard=True, random_state=0).fit(X)
    pruned = BayesianNMF(6, ard=True, prune=True, random_state=0).fit(X)
    assert pruned.effective_rank_ == full.effective_rank_ == 3
    assert pruned.components_.shape == (3, 75)
    assert pruned.relevance_.shape == (3,)
    assert pruned.model_.sizes["k"] == 3
    assert pruned.log_evidence_ >= full.log_evidence_ - full.tol
    W = pruned.transform(X)
    assert W.shape == (100, 3)
    np.testing.assert_allclose(pruned.fit_transform(X), W, rtol=1e-6)
    assert pruned.get_feature_names_out().shape == (3,)
    assert np.isfinite(pruned.score(X[:10]))


def test_pruning_a_tucker_core_index():
    X, _ = make_poisson_tucker((20, 15, 12), (2, 2, 2), random_state=1)
    estimator = TuckerVB((3, 3, 3), ard=True, prune=True, random_state=0).fit(X)
    assert estimator.core_.shape == (2, 2, 2)
    assert estimator.transform(X).shape == (20, 2)
    assert set(estimator.relevance_) == {"A", "B", "C"}
    assert estimator.effective_rank_ == {"A": 2, "B": 2, "C": 2}


def _clustered_relations(n=30, clusters=3, relations=4, seed=0):
    """Counts from RESCAL with each entity in one cluster."""
    rng = np.random.default_rng(seed)
    A = 2.0 * np.eye(clusters)[rng.integers(0, clusters, n)] + 0.05 * rng.random((n, clusters))
    G = 1.5 * rng.gamma(0.5, 1.0, (clusters, clusters, relations))
    return rng.poisson(np.einsum("ia,jb,abk->ijk", A, A, G)).astype(float)


@pytest.mark.parametrize("init", ["random", "auto"])
def test_rescal_ard_finds_the_clusters(init):
    X = _clustered_relations()
    estimator = BayesianRESCAL(6, ard=True, init=init, random_state=0).fit(X)
    assert estimator.effective_rank_ == 3
    assert np.all(_increments(estimator) >= -1e-12)
    relevance = np.sort(estimator.relevance_)[::-1]
    assert relevance[2] > 50 * relevance[3]
    # A's column and G's row and column share the cluster's relevance
    rate_A, _, rate_G = estimator.prior_rate_
    lam = 1.0 / estimator.relevance_
    np.testing.assert_allclose(rate_A, np.broadcast_to(lam, rate_A.shape), rtol=1e-12)
    np.testing.assert_allclose(rate_G[..., 0], np.outer(lam, lam), rtol=1e-12)
    pruned = BayesianRESCAL(6, ard=True, prune=True, init=init, random_state=0).fit(X)
    assert [f.shape for f in pruned.factors_] == [(30, 3), (30, 3), (3, 3, 4)]
    assert pruned.factors_[0] is pruned.factors_[1] or np.array_equal(pruned.factors_[0],
                                                                       pruned.factors_[1])
    assert pruned.log_evidence_ >= estimator.log_evidence_ - estimator.tol
    assert pruned.model_.sizes["a"] == pruned.model_.sizes["b"] == 3


@pytest.mark.parametrize("learned", [
    dict(ard=True), dict(prior_rate="hierarchical"), dict(prior_shape="auto"),
    dict(ard=True, prior_rate="hierarchical", prior_shape="auto")],
    ids=lambda d: "+".join(f"{k}={v}" for k, v in d.items()))
@pytest.mark.slow(minutes=0.1)
def test_one_relation_rescal_learns_its_priors_and_shows_a_s_at_both_positions(learned):
    """RESCAL on one entity x entity matrix (the core without its relation
    axis) learns the priors as on a tensor: the fitted rates have the
    model's factor shapes, A's at both of its positions."""
    X = _clustered_relations(relations=1)[..., 0]
    estimator = BayesianRESCAL(5, random_state=0, **learned).fit(X)
    assert [np.shape(r) for r in estimator.prior_rate_] == [(30, 5), (30, 5), (5, 5)]
    np.testing.assert_array_equal(estimator.prior_rate_[0], estimator.prior_rate_[1])
    assert np.all(_increments(estimator) >= -1e-12)
    if "prior_shape" in learned:
        assert estimator.prior_shape_[0] == estimator.prior_shape_[1]


def test_new_samples_are_folded_in_at_the_learned_rates():
    """transform's fold-in reads the fitted relevances: folding the training
    rows in as a new batch (their order reversed, so not recognised as the
    training data) reproduces the fitted sample factor to the fold-in's
    tolerance, which it would not under the default rate of 1."""
    X, _ = make_poisson_nmf(60, 40, 3, random_state=0)
    X = X * 20  # large counts: learned rates far from 1
    estimator = BayesianNMF(6, ard=True, random_state=0).fit(X)
    fitted = estimator.fit_transform(X)
    folded = estimator.transform(X[::-1])[::-1]
    np.testing.assert_allclose(folded, fitted, rtol=1e-4, atol=1e-4 * np.max(fitted))
    at_rate_one = copy.deepcopy(estimator)
    at_rate_one._rate_learning = None  # folds in under prior_rate=1.0 instead
    assert np.max(np.abs(at_rate_one.transform(X[::-1])[::-1] - folded)) > 1e-3 * np.max(folded)


def test_dense_and_sparse_data_give_the_same_ard_fit():
    X, _ = make_poisson_cp((15, 12, 10), 3, random_state=0)
    dense = PoissonCP(6, ard=True, random_state=0).fit(X)
    sparse_fit = PoissonCP(6, ard=True, random_state=0).fit(sparse.COO.from_numpy(X))
    assert sparse_fit.log_evidence_ == pytest.approx(dense.log_evidence_, rel=1e-9)
    np.testing.assert_allclose(sparse_fit.relevance_, dense.relevance_, rtol=1e-6)


def test_reproducible_picklable_and_clonable():
    X, _ = make_poisson_nmf(40, 30, 2, random_state=0)
    first = BayesianNMF(4, ard=True, prune=True, random_state=5).fit(X)
    second = BayesianNMF(4, ard=True, prune=True, random_state=5).fit(X)
    assert first.log_evidence_ == second.log_evidence_
    np.testing.assert_array_equal(first.relevance_, second.relevance_)
    restored = pickle.loads(pickle.dumps(first))
    np.testing.assert_array_equal(restored.transform(X), first.transform(X))
    assert clone(first).get_params() == first.get_params()


@pytest.mark.parametrize("truth", ["cp", "tucker"])
@pytest.mark.slow(minutes=0.1)
def test_grid_search_over_the_structure_with_ard_picks_the_one_that_drew_the_data(truth):
    """The grid goes on over what ARD leaves: here the structure, each
    candidate finding its own sizes."""
    if truth == "cp":
        X, _ = make_poisson_cp((15, 12, 10), 2, random_state=0)
        expected, sizes = "ir,jr,kr->ijk", 2
    else:
        X, _ = make_poisson_tucker((15, 12, 10), (2, 2, 2), random_state=0)
        expected, sizes = "ia,jb,kc,abc->ijk", {"a": 2, "b": 2, "c": 2}
    search = GridSearchCV(PLTF(n_components=4, ard=True, random_state=0),
                          {"model": ["ir,jr,kr->ijk", "ia,jb,kc,abc->ijk"]},
                          cv=FullDataSplit()).fit(X)
    assert search.best_params_ == {"model": expected}
    assert search.best_estimator_.effective_rank_ == sizes


@pytest.mark.parametrize("estimator, match", [
    (BayesianNMF(3, ard=True, method="em"), "method='vb'"),
    (BayesianNMF(3, prior_rate="auto", method="gibbs"), "method='vb'"),
    (BayesianNMF(3, prune=True), "needs ard=True"),
    (BayesianNMF(3, ard=True, evidence="ais"), "evidence='auto' or 'vb'"),
    (PLTF("ir,jr,kr->ijk", 3, ard="q"), "not latent indices"),
    (BayesianRESCAL(3, ard=True, method="gibbs"), "method='vb'"),
    (PLTF("ia,jb,abk->ijk", 2, tied_factors={1: 0}, ard="k"), "entity clusters"),
])
def test_what_cannot_learn_rates_says_so(estimator, match):
    X = np.random.default_rng(0).poisson(2.0, size=(6, 6, 3)).astype(float)
    if isinstance(estimator, BayesianNMF):
        X = X[:, :, 0]
    before = dict(estimator.__dict__)
    with pytest.raises(ValueError, match=match):
        estimator.fit(X)
    assert estimator.__dict__ == before


def test_ard_on_a_model_without_latent_indices_says_so():
    X = np.random.default_rng(0).poisson(2.0, size=(6, 5)).astype(float)
    with pytest.raises(ValueError, match="no latent index"):
        PLTF("i,j->ij", ard=True).fit(X)


def test_partial_fit_learns_the_rates_on_the_first_batch_and_holds_them():
    X, _ = make_poisson_nmf(120, 30, 2, random_state=0)
    online = BayesianNMF(4, ard=True, random_state=0).partial_fit(X[:60])
    relevance = np.sort(online.relevance_)[::-1]
    assert relevance[1] > 50 * relevance[2]  # the first batch's two components
    held = [r.copy() for r in online.prior_rate_]
    online.partial_fit(X[60:])
    np.testing.assert_array_equal(online.prior_rate_[1], held[1])
    assert online.transform(X[60:]).shape == (60, 4)
    with pytest.raises(ValueError, match="prune=True"):
        BayesianNMF(4, ard=True, prune=True).partial_fit(X[:60])
