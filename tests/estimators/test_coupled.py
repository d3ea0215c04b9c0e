"""Coupled factorization: several tensors sharing factors, one model, one
evidence (generalised coupled tensor factorisation)."""

import pickle
import warnings

import numpy as np
import pytest
import sparse
from sklearn.base import clone
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV

from sklearn_pltf import PLTF, BayesianRESCAL, CoupledPLTF
from sklearn_pltf.engine._contract import make_contractor
from sklearn_pltf.engine._coupled import CoupledContractor, CoupledModel, bind_models
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference import vb
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.model_selection import FullDataSplit

COUPLED = ("ir,jr->ij", "ir,rf->if")      # the row factor "ir" shared
INDEPENDENT = ("ir,jr->ij", "ks,sf->kf")  # no factor shared


def _draw(seed, coupled=True, shape=(30, 20, 8), rank=3, scale=1.0):
    """A count matrix and an attribute matrix whose rows are the same
    entities (sharing their factor when ``coupled``)."""
    rng = np.random.default_rng(seed)
    A = rng.gamma(1.0, scale, (shape[0], rank))
    B = rng.gamma(1.0, 1.0, (shape[1], rank))
    F = rng.gamma(1.0, 1.0, (rank, shape[2]))
    other = A if coupled else rng.gamma(1.0, scale, (shape[0], rank))
    return rng.poisson(A @ B.T).astype(float), rng.poisson(other @ F).astype(float)


def test_with_no_shared_factor_a_sweep_and_the_bound_are_the_separate_ones():
    """Without a shared factor the coupled model is the separate models side
    by side: from the same factors, one coupled VB sweep gives each tensor's
    own sweep exactly, and the bound is the sum of theirs."""
    X, Y = _draw(0)
    datas = [as_observed_tensor(X), as_observed_tensor(sparse.COO.from_numpy(Y))]
    models = bind_models(INDEPENDENT, [X.shape, Y.shape], 3)
    joint = CoupledModel.from_models(models)
    contractor = CoupledContractor(joint, datas, ["poisson", "poisson"])
    priors = gamma_priors(joint, 1.0, 1.0)
    state = vb.init(np.random.default_rng(0), joint, contractor, priors)
    new, info = vb.step(state, contractor, priors)
    total = 0.0
    for t, (model, data) in enumerate(zip(models, datas)):
        part = make_contractor(model, data)
        local_priors = gamma_priors(model, 1.0, 1.0)
        local = type(state)(*(tuple(field[a] for a in joint.positions[t]) for field in state))
        stepped, local_info = vb.step(local, part, local_priors)
        for a, own in zip(joint.positions[t], stepped.mean):
            np.testing.assert_allclose(new.mean[a], own, rtol=1e-12)
        total += local_info.objective
    assert info.objective == pytest.approx(total, rel=1e-12)


def test_a_shared_factor_sums_the_tensors_pulls():
    """The shared factor's Δ is the sum of each tensor's Δ for it."""
    X, Y = _draw(7)
    datas = [as_observed_tensor(X), as_observed_tensor(Y)]
    models = bind_models(COUPLED, [X.shape, Y.shape], 2)
    joint = CoupledModel.from_models(models)
    contractor = CoupledContractor(joint, datas, ["poisson", "poisson"])
    factors = [np.random.default_rng(a).gamma(1.0, 1.0, joint.factor_shape(a))
               for a in range(joint.n_factors)]
    shared = joint.factors.index("ir")
    expected = sum(make_contractor(m, d).ratio_delta(0, [factors[a] for a in p])
                   for m, d, p in zip(models, datas, joint.positions))
    np.testing.assert_allclose(contractor.ratio_deltas((shared,), factors)[shared], expected)
    np.testing.assert_allclose(
        contractor.masked_delta(shared, factors),
        sum(make_contractor(m, d).masked_delta(0, [factors[a] for a in p])
            for m, d, p in zip(models, datas, joint.positions)))


@pytest.mark.parametrize("method", ["vb", "em"])
def test_the_objective_never_decreases_with_mixed_likelihoods_and_missing_entries(method):
    X, Y = _draw(1)
    links = (X > 0).astype(float)
    links[0, :3] = np.nan  # missing entries in the binary tensor
    est = CoupledPLTF(COUPLED, 3, likelihood=("bernoulli", "poisson"), method=method,
                      acceleration=None, tol=1e-3, max_iter=300, random_state=0,
                      prior_shape=1.0).fit([links, Y])
    steps = np.diff(est.lower_bounds_)
    assert np.all(steps >= -1e-8 * np.abs(est.lower_bounds_[1:])), steps.min()
    assert est.n_iter_ > 20 and est.lower_bounds_[-1] > est.lower_bounds_[0]


def test_dense_and_sparse_tensors_give_the_same_fit():
    X, Y = _draw(2)
    dense = CoupledPLTF(COUPLED, 2, tol=1e-6, random_state=0).fit([X, Y])
    mixed = CoupledPLTF(COUPLED, 2, tol=1e-6, random_state=0).fit(
        [sparse.COO.from_numpy(X), Y])
    assert mixed.log_evidence_ == pytest.approx(dense.log_evidence_, rel=1e-9)
    for a, b in zip(mixed.factors_, dense.factors_):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_the_evidence_prefers_the_model_that_drew_the_data(seed):
    """Coupled data: the coupled model's bound is higher than independent
    factorizations'; independent data: the other way round."""
    for coupled in (True, False):
        tensors = list(_draw(10 + seed, coupled=coupled, shape=(40, 30, 12)))
        bounds = {m: CoupledPLTF(m, 3, n_init=2, random_state=0).fit(tensors).log_evidence_
                  for m in (COUPLED, INDEPENDENT)}
        winner = max(bounds, key=bounds.get)
        assert winner == (COUPLED if coupled else INDEPENDENT), bounds


@pytest.mark.slow(minutes=0.15)
@pytest.mark.parametrize("coupled", [True, False])
def test_on_ten_data_sets_the_evidence_finds_the_structure_and_the_true_rank(coupled):
    """The issue's acceptance: 10 of 10 coupled and 10 of 10 independent
    data sets get the model that drew them and its rank 3 from a grid over
    ranks 2-4 and both structures. The rates average 9 a cell: at 3 a cell
    each matrix alone supports only rank 2 by its own evidence
    (``doc/validation/coupled.py selection``), so the true rank is not what the data say."""
    right_model = right_rank = 0
    for seed in range(10):
        tensors = list(_draw(seed, coupled=coupled, shape=(60, 40, 20), scale=3.0))
        search = GridSearchCV(CoupledPLTF(COUPLED, n_init=3, random_state=0),
                              {"n_components": [2, 3, 4], "models": [COUPLED, INDEPENDENT]},
                              cv=FullDataSplit()).fit(tensors)
        right_model += search.best_params_["models"] == (COUPLED if coupled else INDEPENDENT)
        right_rank += search.best_params_["n_components"] == 3
    assert (right_model, right_rank) == (10, 10)


def test_grid_search_over_ranks_and_coupling_by_the_evidence():
    X, Y = _draw(3, shape=(40, 30, 12))
    search = GridSearchCV(CoupledPLTF(COUPLED, random_state=0),
                          {"n_components": [1, 3], "models": [COUPLED, INDEPENDENT]},
                          cv=FullDataSplit()).fit([X, Y])
    assert search.best_params_["models"] == COUPLED
    assert search.best_estimator_.score([X, Y]) == search.best_score_


def test_cold_start_an_entity_without_links_gets_its_factor_from_its_attributes():
    """Rows 0-3 of the binary relation are all missing; their attributes
    are observed. The coupled model ranks their links better than the
    relation alone can (which knows only the columns' popularity)."""
    rng = np.random.default_rng(0)
    A, B = rng.gamma(0.5, 1.0, (40, 3)), rng.gamma(0.5, 1.0, (30, 3))
    F = rng.gamma(0.5, 2.0, (3, 15))
    X, Y = (rng.poisson(A @ B.T) > 0).astype(float), rng.poisson(A @ F).astype(float)
    mask = np.ones(X.shape, dtype=bool)
    mask[:4] = False
    cold = np.argwhere(~mask)
    coupled = CoupledPLTF(COUPLED, 3, likelihood=("bernoulli", "poisson"),
                          random_state=0).fit([X, Y], mask=[mask, None])
    alone = PLTF(COUPLED[0], 3, likelihood="bernoulli", random_state=0).fit(X, mask=mask)
    truth = X[tuple(cold.T)]
    assert (roc_auc_score(truth, coupled.predict_entries(cold))
            > roc_auc_score(truth, alone.predict_entries(cold)) + 0.05)


def test_predictions_per_tensor_and_reproducibility():
    X, Y = _draw(4)
    links = (X > 0).astype(float)
    est = CoupledPLTF(COUPLED, 2, likelihood=("bernoulli", "poisson"), random_state=0)
    est.fit([links, Y])
    p = est.predict_entries([[0, 1], [2, 3]])
    assert np.all((p > 0) & (p < 1))  # link probabilities
    counts = est.predict_entries([[0, 1], [5, 7]], tensor=1)
    assert counts.shape == (2,) and np.all(counts > 0)
    again = clone(est).fit([links, Y])
    np.testing.assert_array_equal(again.predict_entries([[0, 1], [2, 3]]), p)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict_entries([[0, 1], [2, 3]]), p)
    assert restored.score([links, Y]) == est.log_evidence_


@pytest.mark.parametrize("models, X, mask, message", [
    (COUPLED, "one", None, "of 2 tensors, one per model string"),
    (COUPLED, "three", None, "of 2 tensors, one per model string"),
    (COUPLED, "pair", [None], "mask must be None or a sequence of 2"),
    (("ir,jr->ij", "jr,rf->jf"), "pair", None, "Index 'j' has size"),
    ("ir,jr->ij", "pair", None, "'models' parameter"),
    (COUPLED, "dict", None, "sequence \\(a list or tuple\\) of 2 tensors"),
    (COUPLED, "dask", None, "pass each Dask array computed"),
])
def test_bad_input_is_a_clear_error(models, X, mask, message):
    tensors = _draw(5)
    given = {"one": tensors[0], "three": list(tensors) * 2, "pair": list(tensors),
             "dict": dict(zip("ab", tensors))}.get(X)
    if X == "dask":
        import dask.array as da  # in the test extra
        given = [da.from_array(tensors[0], chunks=(10, 10)), tensors[1]]
    if X == "three":
        given = given[:3]
    with pytest.raises(ValueError, match=message):
        CoupledPLTF(models, 2).fit(given, mask=mask)


def test_a_new_tensor_has_no_score():
    X, Y = _draw(6)
    est = CoupledPLTF(COUPLED, 2, random_state=0).fit([X, Y])
    with pytest.raises(ValueError, match="scores the tensors it was fitted to"):
        est.score([X + 1, Y])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert est.score([X.copy(), sparse.COO.from_numpy(Y)]) == est.log_evidence_


def _exact_rank_one_coupled(X, Y, a, b):
    """log p(X, Y) of ``("ir,rj->ij", "ir,rf->if")`` at rank 1, every factor
    element Gamma(a, rate b), exactly (up to one 1-D quadrature).

    With h and f integrated out given w, each depends on w through t = Σ_i w_i
    only: ∫ Π_i Po(x_ij | w_i h_j) G(h_j) dh_j = Π_i w_i^{x_ij} / x_ij! ·
    b^a Γ(a + x_.j) / (Γ(a) (b + t)^{a + x_.j}), and the same for f. Writing
    w = t π with π on the simplex, ∫ Π_i w_i^{c_i - 1} e^{-b w_i} g(t) dw =
    Π_i Γ(c_i) / Γ(C) ∫ t^{C - 1} e^{-b t} g(t) dt, c_i = a + x_i. + y_i.,
    C = Σ c_i, g(t) = (b + t)^{-D}, D = Σ_j (a + x_.j) + Σ_f (a + y_.f).
    """
    from scipy import integrate
    from scipy.special import gammaln

    c = a + X.sum(axis=1) + Y.sum(axis=1)
    C = c.sum()
    D = np.sum(a + X.sum(axis=0)) + np.sum(a + Y.sum(axis=0))
    n_prior = X.shape[0] + X.shape[1] + Y.shape[1]

    def log_integrand(u):  # t = e^u
        return C * u - b * np.exp(u) - D * np.log(b + np.exp(u))

    peak = max(log_integrand(u) for u in np.linspace(-30, 30, 6001))
    value, _ = integrate.quad(lambda u: np.exp(log_integrand(u) - peak), -30, 30, limit=500,
                              epsabs=0, epsrel=1e-12)
    return (-gammaln(X + 1).sum() - gammaln(Y + 1).sum()
            + n_prior * (a * np.log(b) - gammaln(a))
            + gammaln(a + X.sum(axis=0)).sum() + gammaln(a + Y.sum(axis=0)).sum()
            + gammaln(c).sum() - gammaln(C) + peak + np.log(value))


def test_the_coupled_oracle_meets_the_package_s_exact_evidence():
    """Two oracles agree: the rank-1 closed form above, and the package's
    exact_log_evidence of coupled matrices (their concatenation); with an
    attribute matrix of no columns both are the evidence of X alone, and an
    all-zero attribute column, evidence against large w, lowers it."""
    from sklearn_pltf.evidence import exact_log_evidence

    X = np.array([[2.0, 0.0, 1.0], [1.0, 3.0, 0.0]])
    Y = np.array([[1.0, 0.0], [2.0, 1.0]])
    alone = exact_log_evidence(X, 1, prior_shape=1.5, prior_rate=2.0)
    assert _exact_rank_one_coupled(X, np.zeros((2, 0)), 1.5, 2.0) == pytest.approx(alone, abs=1e-6)
    assert _exact_rank_one_coupled(X, np.zeros((2, 1)), 1.5, 2.0) < alone
    assert exact_log_evidence([X, Y], 1, prior_shape=1.5, prior_rate=2.0) == pytest.approx(
        _exact_rank_one_coupled(X, Y, 1.5, 2.0), abs=1e-8)


def test_the_exact_coupled_evidence_refuses_matrices_of_different_rows():
    from sklearn_pltf.evidence import exact_log_evidence

    with pytest.raises(ValueError, match="same number of rows"):
        exact_log_evidence([np.ones((2, 2)), np.ones((3, 1))], 1)
    with pytest.raises(ValueError, match="empty list"):
        exact_log_evidence([], 1)


@pytest.mark.parametrize("seed", range(3))
def test_the_bound_lies_below_the_exact_coupled_evidence(seed):
    rng = np.random.default_rng(seed)
    w = rng.gamma(1.5, 1 / 2.0, 4)
    X = rng.poisson(np.outer(w, rng.gamma(1.5, 1 / 2.0, 3))).astype(float)
    Y = rng.poisson(np.outer(w, rng.gamma(1.5, 1 / 2.0, 2))).astype(float)
    exact = _exact_rank_one_coupled(X, Y, 1.5, 2.0)
    est = CoupledPLTF(("ir,rj->ij", "ir,rf->if"), 1, prior_shape=1.5, prior_rate=2.0,
                      tol=1e-9, random_state=0).fit([X, Y])
    assert est.log_evidence_ <= exact
    assert est.log_evidence_ > exact - 2.0  # a rank-1 bound is tight to within nats


@pytest.mark.parametrize("seed", range(2))
def test_at_rank_two_the_bound_lies_below_the_exact_coupled_evidence(seed):
    """Rank 2, where the bound also pays for q's factorisation over the
    components: still below the exact evidence (the package's oracle)."""
    from sklearn_pltf.evidence import exact_log_evidence

    rng = np.random.default_rng(seed)
    W = rng.gamma(1.0, 0.5, (3, 2))
    X = rng.poisson(W @ rng.gamma(1.0, 0.5, (2, 2))).astype(float)
    Y = rng.poisson(W @ rng.gamma(1.0, 0.5, (2, 2))).astype(float)
    exact = exact_log_evidence([X, Y], 2)
    est = CoupledPLTF(("ir,rj->ij", "ir,rf->if"), 2, tol=1e-9, n_init=3,
                      random_state=0).fit([X, Y])
    assert est.log_evidence_ <= exact
    assert est.log_evidence_ > exact - 5.0


def test_verbose_reports_each_restart_and_the_time_left(capsys):
    X, Y = _draw(8)
    CoupledPLTF(COUPLED, 2, n_init=2, verbose=2, random_state=0).fit([X, Y])
    out = capsys.readouterr().out
    assert "Initialization 0 (1 of 2)" in out and "Initialization 1 (2 of 2)" in out
    assert "s left" in out and "Iteration" in out


# ------------------------------------------------- the RESCAL tie, coupled
TIED = ("ia,jb,abk->ijk", "ia,af->if")


def _draw_relational(seed, n=20, rank=2, n_relations=3, n_attributes=5, binary=True, scale=1.0):
    """Relations among n entities (RESCAL) and their attributes, sharing A."""
    rng = np.random.default_rng(seed)
    A = rng.gamma(1.0, scale, (n, rank))
    core = rng.gamma(1.0, 1.0, (rank, rank, n_relations))
    counts = rng.poisson(np.einsum("ia,jb,abk->ijk", A, A, core)).astype(float)
    attributes = rng.poisson(A @ rng.gamma(1.0, 1.0 / scale, (rank, n_attributes))).astype(float)
    return ((counts > 0).astype(float) if binary else counts), attributes


@pytest.mark.parametrize("method", ["vb", "em"])
def test_tied_the_objective_never_decreases_with_mixed_likelihoods_and_missing_entries(method):
    X, Y = _draw_relational(0)
    X[0, 1:4, 0] = np.nan
    Y[2, :2] = np.nan
    est = CoupledPLTF(TIED, 2, tied_factors={1: 0}, likelihood=("bernoulli", "poisson"),
                      method=method, acceleration=None, prior_shape=1.0, tol=1e-4, max_iter=300,
                      random_state=0).fit([X, Y])
    steps = np.diff(est.lower_bounds_)
    assert np.all(steps >= -1e-9 * np.abs(est.lower_bounds_[1:])), steps.min()
    assert est.lower_bounds_[-1] > est.lower_bounds_[0] and est.n_iter_ > 10
    A, A_again, core, F = est.factors_
    np.testing.assert_array_equal(A, A_again)
    assert core.shape == (2, 2, 3) and F.shape == (2, 5)


def test_tied_a_sweep_is_rescal_s_and_the_side_model_s_when_nothing_is_shared():
    """With a side tensor that does not hold the entity factor, one coupled
    sweep from a state is RESCAL's sweep of (A, A, G) and the side model's
    own VB sweep, and the bound is the sum of theirs."""
    from sklearn_pltf.inference.relational import coupled as rescal_coupled
    from sklearn_pltf.inference.relational import rescal

    X, Y = _draw_relational(1, binary=False)
    est = CoupledPLTF(("ia,jb,abk->ijk", "us,sf->uf"), 2, tied_factors={1: 0}, max_iter=3,
                      random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit([X, Y])
    models = bind_models(("ia,jb,abk->ijk", "us,sf->uf"), [X.shape, Y.shape], 2)
    model = CoupledModel.from_models(models)
    priors = gamma_priors(model, 1.0, 1.0)
    data = est._tied_data(models, model, [as_observed_tensor(X), as_observed_tensor(Y)],
                          ["poisson", "poisson"], (1.0, 1.0))
    state = est._state
    new, info = rescal_coupled.vb_step(state, data, priors)
    rescal_new, rescal_info = rescal.vb_step(rescal_coupled.rescal_part(state), data.relational,
                                             rescal_coupled.rescal_priors(priors))
    alone = vb.step(rescal_coupled.side_state(state, data), data.side,
                    rescal_coupled.side_priors(priors, data))
    for field, expected in zip(new, rescal_new):
        for got, want in zip(field[:3], expected):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    for field, expected in zip(new, alone[0]):
        for got, want in zip(field[3:], expected):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    assert info.objective == pytest.approx(rescal_info.objective + alone[1].objective, rel=1e-12)


_TINY_RELATIONS = np.array([[[0.0], [2.0], [1.0]], [[1.0], [0.0], [0.0]], [[3.0], [1.0], [0.0]]])
_TINY_ATTRIBUTES = np.array([[1.0, 0.0], [0.0, 2.0], [2.0, 1.0]])


def _tiny_tied_log_evidence(rates=(1.0, 1.0, 1.0)):
    """log p(X, Y) of the tiny tied model (three entities, one cluster, one
    relation, two attributes; Gamma(1, rate) priors of A, G and the
    attribute factor) by importance sampling from the prior: 2 million
    draws, and the standard error from 20 batches."""
    from scipy.special import gammaln, logsumexp

    X, Y = _TINY_RELATIONS, _TINY_ATTRIBUTES
    off = ~np.eye(3, dtype=bool)[..., None]
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(20):
        A = rng.gamma(1.0, 1.0 / rates[0], (100_000, 3))
        g = rng.gamma(1.0, 1.0 / rates[1], 100_000)
        w = rng.gamma(1.0, 1.0 / rates[2], (100_000, 2))
        values = A[:, :, None] * A[:, None, :] * g[:, None, None]
        attr = A[:, :, None] * w[:, None, :]
        log_lik = (np.where(off[None, ..., 0], X[None, ..., 0] * np.log(values) - values, 0.0)
                   .sum(axis=(1, 2)) - gammaln(X[off] + 1).sum()
                   + (Y * np.log(attr) - attr).sum(axis=(1, 2)) - gammaln(Y + 1).sum())
        batches.append(logsumexp(log_lik) - np.log(len(log_lik)))
    return logsumexp(batches) - np.log(len(batches)), np.std(batches, ddof=1) / np.sqrt(20)


def test_tied_the_bound_lies_below_an_importance_sampling_evidence():
    """The VB bound lies below log p(X, Y), by less than a rank-1 bound's
    few nats."""
    estimate, error = _tiny_tied_log_evidence()
    est = CoupledPLTF(TIED, 1, tied_factors={1: 0}, tol=1e-9, max_iter=5000,
                      random_state=0).fit([_TINY_RELATIONS, _TINY_ATTRIBUTES])
    assert est.log_evidence_ <= estimate + 4 * error
    assert est.log_evidence_ > estimate - 3.0


def test_tied_the_bound_at_learned_rates_lies_below_the_evidence_there():
    """With a rate per factor learned, the bound at the learned rates lies
    below log p(X, Y | rates) there (importance sampling from that prior)."""
    est = CoupledPLTF(TIED, 1, tied_factors={1: 0}, prior_rate="auto", tol=1e-9,
                      max_iter=5000, random_state=0).fit([_TINY_RELATIONS, _TINY_ATTRIBUTES])
    rates = [float(np.unique(est.prior_rate_[alpha])[0]) for alpha in (0, 2, 3)]
    assert all(np.unique(est.prior_rate_[alpha]).size == 1 for alpha in (0, 2, 3))
    assert not np.allclose(rates, 1.0)  # learned: not the start's
    estimate, error = _tiny_tied_log_evidence(rates)
    assert est.log_evidence_ <= estimate + 4 * error
    assert est.log_evidence_ > estimate - 3.0


@pytest.mark.parametrize("seed", range(3, 8))
def test_tied_cold_start_an_entity_without_relations_gets_its_factor_from_its_attributes(seed):
    """Every relation to and from entities 0-2 is missing; their attributes
    are observed. Coupled, their links rank better than RESCAL alone can
    (where nothing but the prior and the other entities speak for them)."""
    X, Y = _draw_relational(seed, n=40, rank=3, n_attributes=30, scale=0.3)
    held = np.zeros(X.shape, dtype=bool)
    held[:3], held[:, :3] = True, True
    held[np.arange(40), np.arange(40)] = False
    train = np.where(held, np.nan, X)
    coupled = CoupledPLTF(TIED, 3, tied_factors={1: 0}, likelihood=("bernoulli", "poisson"),
                          random_state=0).fit([train, Y])
    alone = BayesianRESCAL(3, likelihood="bernoulli", random_state=0).fit(train)
    test = np.argwhere(held)
    truth = X[held]
    assert roc_auc_score(truth, coupled.predict_entries(test)) > \
        roc_auc_score(truth, alone.predict_entries(test))


def test_tied_grid_search_picks_the_rank_by_the_evidence():
    X, Y = _draw_relational(4, n=30, rank=2, binary=False)
    search = GridSearchCV(CoupledPLTF(TIED, tied_factors={1: 0}, random_state=0),
                          {"n_components": [1, 2]}, cv=FullDataSplit()).fit([X, Y])
    assert search.best_params_["n_components"] == 2
    assert search.best_estimator_.score([X, Y]) == search.best_score_


@pytest.mark.parametrize("models, tied, tensors, message", [
    (("ia,jb,abk->ijk",), {1: 0}, 1, "needs at least one more tensor"),
    (("ai,jb,abk->ijk", "ia,af->if"), {1: 0}, 2, "write the first model as the RESCAL"),
    (("ia,jb,abk->ijk", "ia,jb,ab->ij"), {1: 0}, 2, "holds the tied entity factor twice"),
    (("ia,jb,bak->ijk", "ia,af->if"), {1: 0}, 2, "write the first model as the RESCAL"),
])
def test_tied_unsupported_forms_are_clear_errors(models, tied, tensors, message):
    X, Y = _draw_relational(5, n=6)
    data = [X, Y if models[-1].endswith("->if") else X[..., 0]][:tensors]
    with pytest.raises(ValueError, match=message):
        CoupledPLTF(models, 2, tied_factors=tied).fit(data)


def test_cross_validate_entries_folds_the_first_tensor_and_uses_the_others_whole():
    """The folds cut the target only: each fold's scores are those of a fit
    with that fold's entries of the first tensor missing and the attributes
    whole, predicted on the first tensor."""
    from sklearn_pltf.metrics import link_prediction_auc
    from sklearn_pltf.model_selection import EntryKFold, cross_validate_entries

    X, Y = _draw(7)
    links = (X > 0).astype(float)
    est = CoupledPLTF(COUPLED, 3, likelihood=("bernoulli", "poisson"), random_state=0)
    cv = EntryKFold(3, random_state=0)
    scores = cross_validate_entries(est, [links, Y], cv=cv)
    for fold, (train, test) in enumerate(cv.split(links)):
        fitted = clone(est).fit([links, Y], mask=[train, None])
        expected = link_prediction_auc(fitted, links, test)
        assert scores["test_pr_auc"][fold] == pytest.approx(expected.pr_auc, rel=1e-12)
        assert scores["test_roc_auc"][fold] == pytest.approx(expected.roc_auc, rel=1e-12)
    with pytest.raises(ValueError, match="a list of 2 masks"):
        cross_validate_entries(est, [links, Y], cv=cv, mask=[None])


def test_a_tensor_of_weight_two_is_that_tensor_given_twice():
    """Weight 2 on the attributes is the attributes listed twice (both
    copies holding the same factors, so the joint model's positions are the
    same): from one state, one VB sweep and its bound are the same; and a
    weighted fit reports no evidence, its score the weighted bound."""
    X, Y = _draw(8)
    datas = [as_observed_tensor(X), as_observed_tensor(Y)]
    models = bind_models(COUPLED, [X.shape, Y.shape], 3)
    joint = CoupledModel.from_models(models)
    weighted = CoupledContractor(joint, datas, ["poisson"] * 2, weights=(1.0, 2.0))
    models_twice = bind_models(COUPLED + ("ir,rf->if",), [X.shape, Y.shape, Y.shape], 3)
    joint_twice = CoupledModel.from_models(models_twice)
    assert joint_twice.factors == joint.factors
    twice = CoupledContractor(joint_twice, datas + [datas[1]], ["poisson"] * 3)
    priors = gamma_priors(joint, 1.0, 1.0)
    state = vb.init(np.random.default_rng(0), joint, weighted, priors)
    new, info = vb.step(state, weighted, priors)
    new_twice, info_twice = vb.step(state, twice, priors)
    assert info.objective == pytest.approx(info_twice.objective, rel=1e-12)
    for field, field_twice in zip(new, new_twice):
        for a, b in zip(field, field_twice):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    fitted = CoupledPLTF(COUPLED, 3, tensor_weights=(1.0, 2.0), random_state=0).fit([X, Y])
    assert not hasattr(fitted, "log_evidence_")  # a tempered bound is no evidence
    assert fitted.score([X, Y]) == fitted.lower_bound_


def test_weights_of_one_are_the_unweighted_fit_and_half_weights_stay_monotone():
    X, Y = _draw(9)
    plain = CoupledPLTF(COUPLED, 2, random_state=0).fit([X, Y])
    ones = CoupledPLTF(COUPLED, 2, tensor_weights=[1, 1], random_state=0).fit([X, Y])
    assert ones.log_evidence_ == plain.log_evidence_
    half = CoupledPLTF(COUPLED, 2, tensor_weights=[1.0, 0.5], acceleration=None, tol=1e-4,
                       max_iter=300, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        half.fit([X, Y])
    steps = np.diff(half.lower_bounds_)
    assert np.all(steps >= -1e-9 * np.abs(half.lower_bounds_[1:]))


@pytest.mark.parametrize("weights, message", [
    ((1.0,), "2 positive numbers"), ((1.0, 0.0), "2 positive numbers"),
    ((1.0, np.inf), "2 positive numbers"), ((1.0, -1.0), "2 positive numbers"),
])
def test_bad_weights_are_clear_errors(weights, message):
    X, Y = _draw(10)
    with pytest.raises(ValueError, match=message):
        CoupledPLTF(COUPLED, 2, tensor_weights=weights).fit([X, Y])


def test_tied_weights_apply_to_the_side_tensors_only():
    from sklearn_pltf.inference.relational import coupled as rescal_coupled

    X, Y = _draw_relational(11, binary=False)
    with pytest.raises(ValueError, match="relations' weight"):
        CoupledPLTF(TIED, 2, tied_factors={1: 0}, tensor_weights=(2.0, 1.0)).fit([X, Y])
    est = CoupledPLTF(TIED, 2, tied_factors={1: 0}, tensor_weights=(1.0, 2.0), max_iter=3,
                      random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit([X, Y])
    datas = [as_observed_tensor(X), as_observed_tensor(Y)]
    models = bind_models(TIED, [X.shape, Y.shape], 2)
    joint = CoupledModel.from_models(models)
    priors = gamma_priors(joint, 1.0, 1.0)
    weighted = est._tied_data(models, joint, datas, ["poisson"] * 2, (1.0, 2.0))
    models_twice = bind_models(TIED + ("ia,af->if",), [X.shape, Y.shape, Y.shape], 2)
    twice = est._tied_data(models_twice, CoupledModel.from_models(models_twice),
                           datas + [datas[1]], ["poisson"] * 3, (1.0,) * 3)
    new, info = rescal_coupled.vb_step(est._state, weighted, priors)
    new_twice, info_twice = rescal_coupled.vb_step(est._state, twice, priors)
    assert info.objective == pytest.approx(info_twice.objective, rel=1e-12)
    for field, field_twice in zip(new, new_twice):
        for a, b in zip(field, field_twice):
            np.testing.assert_allclose(a, b, rtol=1e-12)


# ------------------------------------------- parameters checked as PLTF's are
@pytest.mark.parametrize("tied, message", [
    ({1: 5}, "tied_factors value 5 is neither a factor position 0..2"),
    ({5: 0}, "tied_factors key 5 is neither a factor position 0..2"),
    ({"jb": "xx"}, "tied_factors value 'xx' must name exactly one factor"),
    ({1: 0, "jb": "ia"}, r"tied_factors gives factor 1 \('jb'\) twice"),
])
def test_tied_factors_get_pltf_s_check(tied, message):
    """One check of tied_factors for both estimators: the same dict gets the
    same message from PLTF and CoupledPLTF (once an IndexError here)."""
    X, Y = _draw_relational(12, n=6)
    for fit in (lambda: PLTF(TIED[0], 2, tied_factors=tied).fit(X),
                lambda: CoupledPLTF(TIED, 2, tied_factors=tied).fit([X, Y])):
        with pytest.raises(ValueError, match=message):
            fit()


def test_tied_factors_by_index_string_are_the_tie_by_position():
    """{'jb': 'ia'} names the same tie as {1: 0} (it was a TypeError)."""
    X, Y = _draw_relational(13, n=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_string = CoupledPLTF(TIED, 2, tied_factors={"jb": "ia"}, max_iter=20,
                                random_state=0).fit([X, Y])
        by_position = CoupledPLTF(TIED, 2, tied_factors={1: 0}, max_iter=20,
                                  random_state=0).fit([X, Y])
    np.testing.assert_array_equal(by_string.lower_bounds_, by_position.lower_bounds_)
    for a, b in zip(by_string.factors_, by_position.factors_):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_components, message", [
    ({"r": 2, "z": 3}, "latent indices r; n_components names 'z', which none of them has"),
    ({0: 2}, "n_components names 0, which none of them has; its keys are latent index letters"),
    ({"r": 2, "i": 3}, "n_components names 'i', which none of them has"),  # observed
    ({"r": 0}, "must be >= 1"),
    ({"r": 2.0}, "must be an int"),
])
def test_n_components_keys_no_model_has_are_refused(n_components, message):
    """A key no model has was dropped in silence ({0: 2}: a TypeError)."""
    X, Y = _draw(14, shape=(8, 6, 4))
    with pytest.raises(ValueError, match=message):
        CoupledPLTF(COUPLED, n_components).fit([X, Y])
    with pytest.raises(ValueError, match=message):
        bind_models(COUPLED, [X.shape, Y.shape], n_components)


def test_n_components_keys_of_any_model_are_taken():
    """Each key need be latent in one model only, and sizes that model alone."""
    X, Y = _draw(15, shape=(8, 6, 4), coupled=False)
    est = CoupledPLTF(INDEPENDENT, {"r": 2, "s": 3}, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit([X, Y])
    assert [m.sizes["r" if "r" in m.latent else "s"] for m in est.models_] == [2, 3]


def test_one_model_gets_pltf_s_n_components_message():
    X = _draw(16, shape=(8, 6, 4))[0]
    messages = []
    for fit in (lambda: PLTF("ir,jr->ij", {"r": 2, "z": 3}).fit(X),
                lambda: CoupledPLTF(("ir,jr->ij",), {"r": 2, "z": 3}).fit([X])):
        with pytest.raises(ValueError) as error:
            fit()
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    assert "Model 'ir,jr->ij' has latent indices r; n_components names 'z', which it has not" \
        in messages[0]


@pytest.mark.parametrize("weights, error, message", [
    ({0: 1.0, 1: 1.0}, ValueError, "tensor_weights must be None or a sequence .* got a dict"),
    ({1.0, 2.0}, ValueError, "got a set"),
    (np.array(1.0), ValueError, "got a ndarray"),
    ((1.0, 1.0, 1.0), ValueError, "2 positive numbers, one per model string .*; got 3"),
    ((1.0, np.nan), ValueError, "2 positive numbers .*weight 1 is nan"),
    ((1.0, -np.inf), ValueError, "2 positive numbers .*weight 1 is -inf"),
    (("a", 1.0), TypeError, "weight 0 is 'a', not a real number"),
    ((1.0, None), TypeError, "weight 1 is None, not a real number"),
    ((True, True), TypeError, "weight 0 is True, not a real number"),
    ([[1.0], [1.0]], TypeError, r"weight 0 is \[1.0\], not a real number"),
])
def test_bad_weights_of_any_kind_are_clear_errors(weights, error, message):
    X, Y = _draw(17, shape=(8, 6, 4))
    with pytest.raises(error, match=message):
        CoupledPLTF(COUPLED, 2, tensor_weights=weights).fit([X, Y])


def test_weights_as_an_array_are_the_weights_as_a_tuple():
    X, Y = _draw(18, shape=(8, 6, 4))
    fits = []
    for weights in [(1.0, 2.0), np.array([1, 2]), [np.float32(1.0), np.int64(2)]]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(CoupledPLTF(COUPLED, 2, tensor_weights=weights, max_iter=5,
                                    random_state=0).fit([X, Y]))
    for other in fits[1:]:
        np.testing.assert_array_equal(other.lower_bounds_, fits[0].lower_bounds_)


@pytest.mark.parametrize("params, mask, message", [
    (dict(likelihood=("poisson",)), None,
     "likelihood given per tensor must be a sequence .* of 2 likelihoods.*; got 1"),
    (dict(likelihood=["poisson", "bernoulli", "poisson"]), None, "of 2 likelihoods.*; got 3"),
    (dict(), {0: None, 1: None}, "mask must be None or a sequence of 2 masks .* got a dict"),
    (dict(), [None, None, None], "mask must be None or a sequence of 2 masks.*; got 3"),
])
def test_per_tensor_sequences_of_the_wrong_kind_or_length_are_clear_errors(params, mask, message):
    X, Y = _draw(19, shape=(8, 6, 4))
    with pytest.raises(ValueError, match=message):
        CoupledPLTF(COUPLED, 2, **params).fit([X, Y], mask=mask)


@pytest.mark.parametrize("models, kind", [(dict.fromkeys(COUPLED), "dict"), (set(COUPLED), "set")])
def test_models_without_an_order_are_refused(models, kind):
    """A dict's keys or a set were taken as the models, in an order the
    tensors need not have."""
    X, Y = _draw(20, shape=(8, 6, 4))
    with pytest.raises(ValueError, match=f"got a {kind}, which has no such order"):
        CoupledPLTF(models, 2).fit([X, Y])


# ------------------------------------------------- learned priors and ARD

#: Every kind of learned prior, alone and together.
LEARNED = pytest.mark.parametrize("learned", [
    dict(ard=True),
    dict(ard="factor"),
    dict(prior_rate="hierarchical"),
    dict(prior_rate="auto", prior_shape="auto"),
    dict(prior_rate="hierarchical", prior_shape="auto", ard=True),
    dict(prior_rate="hierarchical", prior_shape="auto", ard="factor"),
], ids=lambda d: "+".join(f"{k}={v}" for k, v in d.items()))


@LEARNED
@pytest.mark.slow(minutes=0.1)
def test_learned_priors_keep_the_coupled_bound_monotone(learned):
    X, Y = _draw(0)
    Y[np.random.default_rng(1).random(Y.shape) < 0.2] = np.nan
    est = CoupledPLTF(COUPLED, 5, random_state=0, **learned).fit([sparse.COO.from_numpy(X), Y])
    steps = np.diff(est.lower_bounds_) / np.abs(est.lower_bounds_[1:])
    assert np.all(steps >= -1e-12)
    assert np.isfinite(est.log_evidence_) and est.log_evidence_ == est.lower_bound_
    assert len(est.prior_rate_) == len(est.factor_indices_)
    if learned.get("prior_rate") == "hierarchical":  # a rate per entity of the shared rows
        rates = est.prior_rate_[0]  # E[β_i] (times the relevance's inverse under ARD)
        per_row = rates / rates[:1]
        np.testing.assert_allclose(per_row, per_row[:, :1] * np.ones_like(rates), rtol=1e-12)
        assert np.ptp(per_row[:, 0]) > 0


def test_coupled_ard_finds_the_number_of_components_the_tensors_need_together():
    found = []
    for seed in range(5):
        X, Y = _draw(seed, rank=3, scale=2.0)
        est = CoupledPLTF(COUPLED, 8, ard=True, random_state=0).fit([X, Y])
        found.append(est.effective_rank_)
        assert est.relevance_.shape == (8,)
    assert found.count(3) >= 4, found


def test_coupled_learned_priors_need_vb():
    X, Y = _draw(0)
    with pytest.raises(ValueError, match="method='vb'"):
        CoupledPLTF(COUPLED, 2, method="em", ard=True).fit([X, Y])
    relations = (np.random.default_rng(0).random((6, 6, 2)) < 0.3).astype(float)
    with pytest.raises(ValueError, match="method='vb'"):
        CoupledPLTF(TIED, 2, tied_factors={1: 0}, method="em",
                    prior_rate="hierarchical").fit([relations, np.ones((6, 3))])


@LEARNED
@pytest.mark.slow(minutes=0.4)
def test_tied_learned_priors_keep_the_bound_monotone(learned):
    """RESCAL's tie with attributes: the bound at the learned priors never
    falls, with mixed likelihoods and missing entries; A's two positions
    show one prior."""
    X, Y = _draw_relational(0, n=15, rank=2)
    X[0, 1:4, 0] = np.nan
    Y[2, :2] = np.nan
    est = CoupledPLTF(TIED, 4, tied_factors={1: 0}, likelihood=("bernoulli", "poisson"),
                      random_state=0, **learned).fit([X, Y])
    steps = np.diff(est.lower_bounds_) / np.abs(est.lower_bounds_[1:])
    assert np.all(steps >= -1e-12), steps.min()
    assert np.isfinite(est.log_evidence_) and est.log_evidence_ == est.lower_bound_
    np.testing.assert_array_equal(est.prior_rate_[0], est.prior_rate_[1])
    A, A_again, core, F = est.factors_
    np.testing.assert_array_equal(A, A_again)
    if learned.get("ard") is True:
        assert est.relevance_.shape == (4,)
    elif learned.get("ard") == "factor":  # A's, the core's and the attributes' own
        assert {k: v.shape for k, v in est.relevance_.items()} == {
            "ia": (4,), "abk": (4,), "af": (4,)}


@pytest.mark.slow(minutes=0.3)
def test_tied_ard_finds_the_number_of_clusters_relations_and_attributes_need():
    found = []
    for seed in range(5):
        X, Y = _draw_relational(seed, n=30, rank=2, n_attributes=10)
        est = CoupledPLTF(TIED, 6, tied_factors={1: 0}, likelihood=("bernoulli", "poisson"),
                          ard=True, random_state=0).fit([X, Y])
        found.append(est.effective_rank_)
    assert found.count(2) >= 4, found


@pytest.mark.slow(minutes=0.2)
def test_tied_ard_switches_off_a_cluster_in_a_and_in_the_attribute_factor_alike():
    """A cluster's relevance sets the rate of A's column, of G's row and
    column and of the attribute factor's row: a cluster switched off has
    no mass in any of them."""
    X, Y = _draw_relational(1, n=30, rank=2, n_attributes=10)
    est = CoupledPLTF(TIED, 6, tied_factors={1: 0}, likelihood=("bernoulli", "poisson"),
                      ard=True, random_state=0).fit([X, Y])
    A, _, core, F = est.factors_
    off = est.relevance_ < 1e-2 * est.relevance_.max()
    assert off.sum() == 6 - est.effective_rank_
    assert A[:, off].sum() < 1e-2 * A.sum()
    assert F[off].sum() < 1e-2 * F.sum()
    assert core[off].sum() + core[:, off].sum() < 1e-2 * core.sum()


def _shared_and_private(seed, n_rows=100):
    """Counts X (rows x 30) and Y (rows x 25) over the same rows, from six
    components: 0 and 1 in both, 2 and 3 in X only, 4 and 5 in Y only."""
    rng = np.random.default_rng(seed)
    A = rng.gamma(1.0, 1.0, (n_rows, 6))
    B, C = rng.gamma(1.0, 1.0, (6, 30)), rng.gamma(1.0, 1.0, (6, 25))
    B[[4, 5]], C[[2, 3]] = 0.0, 0.0
    return rng.poisson(A @ B).astype(float), rng.poisson(A @ C).astype(float)


def _finds_shared_and_private(seed, n_components=6, **params):
    X, Y = _shared_and_private(seed)
    est = CoupledPLTF(("ir,rj->ij", "ir,rf->if"), n_components, random_state=0,
                      **params).fit([X, Y])
    kinds = sorted(tuple(bool(v) for v in column) for column in est.components_by_tensor([X, Y]).T)
    return kinds == sorted([(True, True)] * 2 + [(True, False)] * 2 + [(False, True)] * 2
                           + [(False, False)] * (n_components - 6))


@pytest.mark.slow(minutes=0.05)
def test_on_ten_data_sets_the_bound_tells_shared_from_private_on_nine():
    assert sum(_finds_shared_and_private(seed, n_init=3) for seed in range(10)) >= 9


@pytest.mark.slow(minutes=0.1)
def test_a_relevance_per_factor_tells_shared_from_private_where_one_per_component_cannot():
    """At a generous 8 components, ARD with a relevance per component and
    factor switches a private component off in the other tensor's own
    factor; one relevance per component, shared by every factor, merges
    private components into shared ones."""
    by_factor = sum(_finds_shared_and_private(seed, 8, ard="factor") for seed in range(10))
    shared = sum(_finds_shared_and_private(seed, 8, ard=True) for seed in range(10))
    assert by_factor >= 6 and by_factor >= shared + 3, (by_factor, shared)


@pytest.mark.parametrize("models, tied", [
    (("ia,jb,abk->ijk", "ia,af->if"), None),
    (("ia,jb,abk->ijk", "ic,acf->if"), {1: 0}),
])
def test_a_relevance_per_factor_over_two_indices_of_one_factor_is_refused(models, tied):
    """A core's own relevances over two of its indices only set its rates
    through their product: not identified, so a clear error (the tied
    core's two cluster indices are one, and pass)."""
    rng = np.random.default_rng(0)
    relations = (rng.random((8, 8, 3)) < 0.3).astype(float)
    side = rng.poisson(1.0, (8, 5)).astype(float)
    with pytest.raises(ValueError, match="carries the latent indices"):
        CoupledPLTF(models, 3, ard="factor", tied_factors=tied).fit([relations, side])


def test_a_relevance_per_factor_is_each_factor_s_own_maximiser():
    """``relevance_`` is ``{factor: 1 / λ}``; at the fitted means each
    factor's λ_r is the closed form Σ a / Σ a E[Z(·, r)] of its own
    column (no other factor in it)."""
    X, Y = _shared_and_private(0, n_rows=40)
    est = CoupledPLTF(("ir,rj->ij", "ir,rf->if"), 8, ard="factor", random_state=0).fit([X, Y])
    assert set(est.relevance_) == {"ir", "rj", "rf"}
    for alpha, factor in enumerate(est.factor_indices_):
        axis = factor.index("r")
        summed = tuple(i for i in range(2) if i != axis)
        lam = (est.factors_[alpha].shape[1 - axis]
               / np.sum(est._state.mean[alpha], axis=summed))
        np.testing.assert_allclose(est.relevance_[factor], 1.0 / lam, rtol=1e-10)
    assert est.effective_rank_ <= 8


def test_components_by_tensor_reads_the_training_tensors_and_the_bound_only():
    X, Y = _shared_and_private(0)
    est = CoupledPLTF(("ir,rj->ij", "ir,rf->if"), 6, random_state=0).fit([X, Y])
    with pytest.raises(ValueError, match="fitted to only"):
        est.components_by_tensor([X, Y + 1])
    hierarchical = clone(est).set_params(prior_rate="hierarchical").fit([X, Y])
    with pytest.raises(ValueError, match="hierarchical"):
        hierarchical.components_by_tensor([X, Y])


def test_a_tensor_needs_no_component_of_an_index_it_does_not_carry():
    X, Y = _draw(0, coupled=False)
    est = CoupledPLTF(INDEPENDENT, 2, random_state=0).fit([X, Y])
    found = est.components_by_tensor([X, Y])
    assert set(found) == {"r", "s"}
    assert not found["r"][1].any() and not found["s"][0].any()
    assert found["r"][0].all() and found["s"][1].all()  # each tensor needs its own two


# ------------------------------------------------------------------ samplers
def test_the_coupled_entries_add_each_tensor_s_allocation_onto_a_shared_factor(rng):
    """Gibbs over coupled tensors: one run of uniforms, tensor after tensor;
    the shared factor's allocation sum is the sum of each tensor's, a
    private factor's its own tensor's."""
    X, Y = _draw(3, shape=(6, 5, 4), rank=2)
    datas = [as_observed_tensor(T) for T in (X, Y)]
    models = bind_models(COUPLED, [d.shape for d in datas], 2)
    joint = CoupledModel.from_models(models)
    coupled = CoupledContractor(joint, datas, ["poisson", "poisson"])
    factors = [rng.gamma(1.0, size=joint.factor_shape(a)) for a in range(joint.n_factors)]
    entries = coupled.nonzeros
    uniforms = rng.random(entries.n_tokens)
    sums = entries.allocation_sums((0, 1, 2), factors, uniforms)
    first, second = (make_contractor(m, d).nonzeros for m, d in zip(models, datas))
    n_first = first.n_tokens
    own = first.allocation_sums((0, 1), factors[:2], uniforms[:n_first])
    side = second.allocation_sums((0, 1), [factors[0], factors[2]], uniforms[n_first:])
    np.testing.assert_array_equal(sums[0], own[0] + side[0])
    np.testing.assert_array_equal(sums[1], own[1])
    np.testing.assert_array_equal(sums[2], side[1])
    assert (sums[0].sum(), sums[1].sum(), sums[2].sum()) == (X.sum() + Y.sum(), X.sum(), Y.sum())
    np.testing.assert_array_equal(entries.values, np.concatenate([first.values, second.values]))


# Tiny count matrices over the same two rows: the exact coupled evidence
# (exact_log_evidence of a list) is their concatenation's.
_TINY_PAIRS = [
    (("ik,kj->ij", "ik,kf->if"), [[[2, 0, 1], [0, 3, 1]], [[1, 0], [2, 1]]], 1, "gibbs"),
    (("ik,kj->ij", "ik,kf->if"), [[[1, 0, 2], [0, 2, 0]], [[0, 1], [1, 0]]], 2, "gibbs"),
    (("ik,kj->ij", "ik,kf->if", "ik,kg->ig"), [[[2, 1], [0, 1]], [[1], [2]], [[0, 1], [1, 1]]],
     1, "sada"),
]


@pytest.mark.slow(minutes=0.25)
@pytest.mark.parametrize("models, tensors, n_components, method", _TINY_PAIRS)
def test_a_coupled_sampler_s_evidence_meets_the_exact_evidence(models, tensors, n_components,
                                                                method):
    """Chib's estimate from coupled Gibbs (or SADA) chains at the defaults,
    within 0.25 nats of the exact evidence of the coupled model."""
    from sklearn_pltf.evidence import exact_log_evidence

    tensors = [np.asarray(T, dtype=float) for T in tensors]
    est = CoupledPLTF(models, n_components, method=method, random_state=0).fit(tensors)
    exact = exact_log_evidence(tensors, n_components)
    assert abs(est.log_evidence_ - exact) < 0.25, (est.log_evidence_, exact)
    assert est.score(tensors) == est.log_evidence_ and est.log_evidence_error_ > 0
    assert est.draws_[0].shape[:2] == (1, est.n_iter_ - est.n_warmup_)
    assert est.rhat_ < 1.05 and not hasattr(est, "lower_bound_")


def test_a_coupled_sampler_fit_is_reproducible_and_predicts_from_its_draws():
    X, Y = _draw(7, shape=(8, 6, 4), rank=2)
    make = lambda: CoupledPLTF(COUPLED, 2, method="gibbs", n_warmup=50, n_draws=40,  # noqa: E731
                               evidence=None, random_state=3)
    first, second = make().fit([X, Y]), make().fit([X, Y])
    for a, b in zip(first.draws_, second.draws_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(first.factors_[0], first.draws_[0].mean(axis=(0, 1)))
    coords = np.array([[0, 1], [2, 3]])
    prediction = first.predict_entries(coords)
    np.testing.assert_array_equal(prediction, second.predict_entries(coords))
    pooled = [d.reshape((-1,) + d.shape[2:]) for d in first.draws_]
    by_draw = np.mean([np.einsum("ir,jr->ij", A, B)[coords[:, 0], coords[:, 1]]
                       for A, B in zip(pooled[0], pooled[1])], axis=0)
    assert np.allclose(prediction, by_draw, rtol=0.2)  # 256 of the 40 draws, evenly spaced
    with pytest.raises(ValueError, match="has no evidence to score"):
        first.score([X, Y])
    restored = pickle.loads(pickle.dumps(first))
    np.testing.assert_array_equal(restored.predict_entries(coords), prediction)


@pytest.mark.parametrize("params, message", [
    ({"method": "gibbs", "tied_factors": {1: 0}}, "built without tied_factors"),
    ({"method": "gibbs", "tensor_weights": (1.0, 2.0)}, "tensor_weights other than 1"),
    ({"method": "sada", "ard": True}, "need method='vb'"),
    ({"method": "gibbs", "evidence": "vb"}, "evidence='vb' is the variational bound"),
    ({"method": "vb", "evidence": "chib"}, "evidence='chib' is estimated from Gibbs runs"),
])
def test_sampler_settings_it_cannot_take_are_clear_errors(params, message):
    tensors = list(_draw(8, shape=(8, 6, 4), rank=2))
    models = COUPLED
    if "tied_factors" in params:  # relations among the 8 rows' entities, and their attributes
        models = ("ia,jb,abk->ijk", "ia,af->if")
        tensors = [np.random.default_rng(0).poisson(1.0, (8, 8, 2)).astype(float), tensors[1]]
    with pytest.raises(ValueError, match=message):
        CoupledPLTF(models, 2, **params).fit(tensors)


def test_gibbs_refuses_non_integer_counts():
    X, Y = _draw(9, shape=(8, 6, 4), rank=2)
    with pytest.raises(ValueError, match="allocates integer counts"):
        CoupledPLTF(COUPLED, 2, method="gibbs").fit([X, Y + 0.5])


@pytest.mark.slow(minutes=2.3)
@pytest.mark.parametrize("coupled", [True, False])
def test_grid_search_by_chib_s_evidence_tells_coupled_from_independent(coupled):
    """GridSearchCV over the coupled and the independent strings, scored by
    coupled Gibbs chains' Chib estimates at the defaults, picks the
    structure that drew the data on each of 2 synthetic pairs (8 entities;
    each fit about 35 s, Chib's clamped runs most of it; a third pair,
    seed 22, also right, is left out of CI for its time)."""
    right = 0
    for seed in range(2):
        tensors = list(_draw(20 + seed, coupled=coupled, shape=(8, 5, 4), rank=2, scale=3.0))
        search = GridSearchCV(CoupledPLTF(COUPLED, 2, method="gibbs", random_state=0),
                              {"models": [COUPLED, INDEPENDENT]}, cv=FullDataSplit())
        search.fit(tensors)
        right += search.best_params_["models"] == (COUPLED if coupled else INDEPENDENT)
    assert right == 2
