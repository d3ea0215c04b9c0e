"""PLTF(tied_factors=...): a factor at two positions (estimators/_tied.py)."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from _helpers import BINARY, _rescal_data

from sklearn_pltf import PLTF, BayesianRESCAL


def _quiet(estimator, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: R-hat warnings
        return estimator.fit(X)


@pytest.mark.parametrize("method", ["vb", "em", "gibbs", "sada"])
def test_tied_pltf_is_bayesian_rescal(method):
    X = _rescal_data(np.random.default_rng(0), 10, 3, 2, "bernoulli")
    settings = dict(likelihood="bernoulli", method=method, max_iter=100, n_draws=50, n_warmup=20,
                    random_state=0)
    named = _quiet(BayesianRESCAL(2, **settings), X)
    general = _quiet(PLTF("ia,jb,abk->ijk", 2, tied_factors={1: 0}, **settings), X)
    for a, b in zip(general.factors_, named.factors_):
        np.testing.assert_array_equal(a, b)
    assert general.score(X) == named.score(X)
    np.testing.assert_array_equal(general.transform(X), named.transform(X))
    entries = np.argwhere(np.ones(X.shape))[::3]
    np.testing.assert_array_equal(general.predict_entries(entries), named.predict_entries(entries))


@pytest.mark.parametrize("method", ["vb", "gibbs"])
def test_letters_factor_order_and_core_axes_are_the_users(method):
    """"jy,yxk,ix->ijk" with factor 0 tied to factor 2 is the canonical
    model with the core's entity axes swapped: the same fit, each factor
    returned in the user's layout."""
    X = _rescal_data(np.random.default_rng(1), 9, 2, 2, "poisson")
    settings = dict(method=method, n_draws=50, n_warmup=20, random_state=0)
    canonical = _quiet(PLTF("ia,jb,abk->ijk", 2, tied_factors={1: 0}, **settings), X)
    other = _quiet(PLTF("jy,yxk,ix->ijk", 2, tied_factors={"jy": "ix"}, **settings), X)
    assert other.score(X) == canonical.score(X)
    np.testing.assert_array_equal(other.factors_[2], canonical.factors_[0])
    np.testing.assert_array_equal(other.factors_[0], canonical.factors_[0])
    np.testing.assert_array_equal(other.factors_[1], canonical.factors_[2].transpose(1, 0, 2))
    np.testing.assert_allclose(other.inverse_transform(other.transform(X)),
                               np.einsum("ia,jb,abk->ijk", *canonical.factors_), rtol=1e-12)
    if method == "gibbs":
        np.testing.assert_array_equal(other.draws_[1], canonical.draws_[2].transpose(0, 1, 3, 2, 4))


def test_one_relation_matrix():
    est = PLTF("ia,jb,ab->ij", 1, tied_factors={1: 0}, likelihood="bernoulli",
               random_state=0).fit(BINARY)
    named = BayesianRESCAL(1, likelihood="bernoulli", random_state=0).fit(BINARY)
    assert est.score(BINARY) == named.score(BINARY)
    assert est.factors_[2].shape == (1, 1)


@pytest.mark.parametrize("model, tied, n_components, message", [
    ("ir,jr,kr->ijk", {1: 0}, 2, "RESCAL structure"),
    ("ia,jb,abk->ijk", {2: 0}, 2, "RESCAL structure"),
    ("ia,jb,abk->ijk", {1: 0, 2: 0}, 2, "2 ties"),
    ("ka,jb,abi->ijk", {1: 0}, 2, "RESCAL structure"),  # entities not the first two axes
    ("ia,jb,abk->ijk", {1: 0}, {"a": 2, "b": 3}, "index sizes must agree"),
    ("ia,jb,abk->ijk", {1: "kb"}, 2, "not exactly one factor"),
    ("ia,jb,abk->ijk", {5: 0}, 2, "neither a factor position"),
])
def test_unsupported_or_inconsistent_ties_raise(model, tied, n_components, message):
    X = _rescal_data(np.random.default_rng(2), 6, 2, 2, "poisson")
    with pytest.raises(ValueError, match=message):
        PLTF(model, n_components, tied_factors=tied).fit(X)


@pytest.mark.parametrize("settings, message", [
    (dict(method="gibbs", evidence="ais"), "not built for a model with a tied factor"),
    (dict(method="vb", evidence="sti"), "needs method='sgld'"),
])
def test_methods_not_built_for_a_tie_raise(settings, message):
    X = _rescal_data(np.random.default_rng(3), 6, 2, 2, "poisson")
    with pytest.raises(ValueError, match=message):
        PLTF("ia,jb,abk->ijk", 2, tied_factors={1: 0}, **settings).fit(X)


def test_non_square_data_and_new_data_raise():
    X = _rescal_data(np.random.default_rng(4), 6, 2, 2, "poisson")
    est = PLTF("ia,jb,abk->ijk", 2, tied_factors={1: 0}, random_state=0)
    with pytest.raises(ValueError, match="first two axes the same size"):
        clone(est).fit(np.ones((6, 5, 2)))
    est.fit(X)
    other = X.copy()
    other[0, 1, 0] += 1
    with pytest.raises(ValueError, match="training data only"):
        est.score(other)


def test_pickles_clones_and_reproduces():
    X = _rescal_data(np.random.default_rng(5), 8, 2, 2, "bernoulli")
    est = PLTF("ia,jb,abk->ijk", 2, tied_factors={1: 0}, likelihood="bernoulli",
               random_state=0).fit(X)
    restored = pickle.loads(pickle.dumps(est))
    assert restored.score(X) == est.score(X)
    refit = clone(est).fit(X)
    assert refit.get_params()["tied_factors"] == {1: 0}
    np.testing.assert_array_equal(refit.factors_[0], est.factors_[0])


@pytest.mark.parametrize("tied, message", [
    ({1: 7}, "tied_factors value 7 is neither a factor position 0..2"),
    ({1: True}, "tied_factors value True is neither a factor position"),
    ({"xy": 0}, "tied_factors key 'xy' must name exactly one factor"),
    ({1: 0, "jb": "ia"}, r"tied_factors gives factor 1 \('jb'\) twice"),
])
def test_tied_factors_keys_and_values_are_both_checked(tied, message):
    """Keys and values are factors, by position or index string; each tied
    factor is given once (two spellings of one key once collapsed in silence)."""
    X = _rescal_data(np.random.default_rng(2), 6, 2, 2, "poisson")
    with pytest.raises(ValueError, match=message):
        PLTF("ia,jb,abk->ijk", 2, tied_factors=tied).fit(X)
