"""Model strings: parsing, binding to data, and the errors users see."""

import pickle

import numpy as np
import pytest

from sklearn_pltf import PLTF, Model


@pytest.mark.parametrize(
    "string, factors, output, latent",
    [
        ("ik,kj->ij", ("ik", "kj"), "ij", "k"),
        ("ir,jr,kr->ijk", ("ir", "jr", "kr"), "ijk", "r"),
        ("ip,jq,kr,pqr->ijk", ("ip", "jq", "kr", "pqr"), "ijk", "pqr"),
        ("r,d,dtr->t", ("r", "d", "dtr"), "t", "rd"),
        ("fi,ik,kt->ft", ("fi", "ik", "kt"), "ft", "ik"),
        (" ik , kj -> ij ", ("ik", "kj"), "ij", "k"),
    ],
)
def test_parse(string, factors, output, latent):
    model = Model.parse(string)
    assert (model.factors, model.output, model.latent) == (factors, output, latent)


@pytest.mark.parametrize(
    "string, message",
    [
        ("ik,kj", "Malformed model string"),
        ("ik,kj->", "Malformed model string"),
        ("i1,kj->ij", "Malformed model string"),
        ("ik,,kj->ij", "Malformed model string"),
        ("ik->i", "one factor"),
        ("iik,kj->ij", "index 'i' is repeated inside factor 0"),
        ("ik,kj->iij", "observed index 'i' is repeated"),
        ("ik,kj->ijl", "observed index 'l' is carried by no factor"),
    ],
)
def test_malformed_strings_raise(string, message):
    with pytest.raises(ValueError, match=message):
        Model.parse(string)


def test_non_string_model_raises_type_error():
    with pytest.raises(TypeError, match="must be a string"):
        Model.parse(3)


def test_bind_sizes_from_data_latent_int_and_fixed_factors():
    model = Model.parse("r,d,dtr->t").bind((30,), 2, {2: (4, 30, 2)})
    assert model.sizes == {"t": 30, "r": 2, "d": 4}
    assert model.fixed == frozenset({2})
    assert model.free == (0, 1)


def test_bind_with_a_dict_per_latent_index():
    model = Model.parse("ip,jq,kr,pqr->ijk").bind((5, 6, 7), {"p": 2, "q": 3, "r": 4})
    assert model.factor_shape(3) == (2, 3, 4)


@pytest.mark.parametrize(
    "shape, sizes, fixed, message",
    [
        ((5, 6, 7), 2, {}, "describes 2-way data .* 3 dimensions"),
        ((5, 6), 0, {}, "must be >= 1"),
        ((5, 6), 2.5, {}, "must be an int"),
        ((5, 6), {"x": 2}, {}, "latent indices k; n_components names 'x', which it has not"),
        ((5, 6), {}, {}, "no size for latent index 'k'"),
        ((5, 6), None, {}, "no size for latent index 'k'"),
        ((5, 6), 2, {0: (4, 2)}, "index 'i' has size 4 there but 5 in the data"),
        ((5, 6), 2, {0: (5, 2, 1)}, "must have 2 dimensions"),
        ((5, 6), {"k": 3}, {0: (5, 2)}, "given size 3 but a fixed factor sets it to 2"),
        ((5, 6), 2, {5: (5, 2)}, "there is no factor 5"),
    ],
)
def test_bind_errors(shape, sizes, fixed, message):
    with pytest.raises(ValueError, match=message):
        Model.parse("ik,kj->ij").bind(shape, sizes, fixed)


def test_estimator_reports_model_data_mismatch():
    X = np.ones((4, 5, 6))
    with pytest.raises(ValueError, match="describes 2-way data"):
        PLTF("ik,kj->ij", 2).fit(X)


def test_estimator_rejects_rank_below_one():
    with pytest.raises(ValueError, match="n_components"):
        PLTF("ik,kj->ij", 0).fit(np.ones((4, 5)))


def test_estimator_reports_fixed_factor_of_wrong_shape():
    with pytest.raises(ValueError, match="Fixed factor 1 .* has shape"):
        PLTF("ik,kj->ij", 2, fixed_factors={"kj": np.ones((2, 4))}).fit(np.ones((4, 5)))


@pytest.mark.parametrize(
    "fixed, message",
    [
        ({"xy": np.ones((2, 5))}, "must name exactly one factor"),
        ({7: np.ones((2, 5))}, "neither a factor position"),
        ({1: -np.ones((2, 5))}, "finite and non-negative"),
    ],
)
def test_estimator_reports_bad_fixed_factors(fixed, message):
    with pytest.raises(ValueError, match=message):
        PLTF("ik,kj->ij", 2, fixed_factors=fixed).fit(np.ones((4, 5)))


def test_sample_factor():
    assert Model.parse("ik,kj->ij").sample_factor() == 0
    assert Model.parse("jq,ip,kr,pqr->ijk").sample_factor() == 1
    # axis 0 ('f') is carried by the fixed dictionary only: no fold-in
    assert Model.parse("fi,ik,kt->ft").bind((3, 4), 2, {0: (3, 5)}).sample_factor() is None
    # a factor carrying two observed indices has no independent rows
    assert Model.parse("ijk,kl->ijl").sample_factor() is None


def test_bound_model_is_immutable_and_hashable():
    """A bound model keys caches (planned contractions): equal models hash
    alike, and its sizes cannot be changed after binding."""
    from sklearn_pltf.engine._planner import planner_for

    model = Model.parse("ik,kj->ij").bind((3, 4), {"k": 2}, {})
    same = Model.parse("ik,kj->ij").bind((3, 4), {"k": 2}, {})
    assert model == same and hash(model) == hash(same)
    assert planner_for(model) is planner_for(same)
    with pytest.raises(TypeError):
        model.sizes["i"] = 5
    assert model.sizes == {"i": 3, "j": 4, "k": 2}
    assert pickle.loads(pickle.dumps(model)) == model
    other = Model.parse("ik,kj->ij").bind((5, 4), {"k": 2}, {})
    assert hash(other) != hash(model) and planner_for(other) is not planner_for(model)
