"""The dense path, the sparse path and a naive loop give the same X̂ and Δ."""

import itertools

import numpy as np
import pytest
import sparse
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_pltf.engine._contract import EntryList, make_contractor
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.engine.model import Model


def naive_xhat(model, factors):
    """X̂ by its definition: a loop over every index configuration."""
    xhat = np.zeros(model.observed_shape)
    indices = model.indices
    for values in itertools.product(*(range(model.sizes[c]) for c in indices)):
        at = dict(zip(indices, values))
        term = np.prod([z[tuple(at[c] for c in f)] for z, f in zip(factors, model.factors)])
        xhat[tuple(at[c] for c in model.output)] += term
    return xhat


def naive_delta(model, factors, alpha, weights):
    """Δ_α(Q) by its definition."""
    delta = np.zeros(model.factor_shape(alpha))
    indices = model.indices
    for values in itertools.product(*(range(model.sizes[c]) for c in indices)):
        at = dict(zip(indices, values))
        term = weights[tuple(at[c] for c in model.output)]
        for a, (z, f) in enumerate(zip(factors, model.factors)):
            if a != alpha:
                term *= z[tuple(at[c] for c in f)]
        delta[tuple(at[c] for c in model.factors[alpha])] += term
    return delta


@st.composite
def models(draw):
    """Random model strings over a few letters: 1-3 observed indices, 2-4 factors."""
    letters = "abcde"
    n_factors = draw(st.integers(2, 4))
    factors = [
        "".join(draw(st.lists(st.sampled_from(letters), min_size=1, max_size=3, unique=True)))
        for _ in range(n_factors)
    ]
    carried = sorted(set("".join(factors)))
    output = "".join(
        draw(st.lists(st.sampled_from(carried), min_size=1, max_size=min(3, len(carried)), unique=True))
    )
    sizes = {c: draw(st.integers(1, 3)) for c in carried}
    model = Model.parse(",".join(factors) + "->" + output)
    return model.bind([sizes[c] for c in output], {c: sizes[c] for c in model.latent})


@settings(max_examples=100, deadline=None)
@given(model=models(), seed=st.integers(0, 2**32 - 1), missing_rate=st.sampled_from([0.0, 0.3, 0.7]))
def test_dense_sparse_and_naive_paths_agree(model, seed, missing_rate):
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, size=model.factor_shape(a)) for a in range(model.n_factors)]
    X = rng.poisson(2.0, size=model.observed_shape).astype(float)
    mask = rng.random(X.shape) >= missing_rate
    mask.flat[0] = True  # at least one observed entry
    dense = make_contractor(model, as_observed_tensor(X, mask))
    sparse_ = make_contractor(model, as_observed_tensor(sparse.COO.from_numpy(X), mask))

    xhat = naive_xhat(model, factors)
    observed_x = np.where(mask, X, 0.0)
    ratio = np.divide(observed_x, xhat, out=np.zeros_like(xhat), where=observed_x > 0)
    expected_loglik = np.sum(observed_x[observed_x > 0] * np.log(xhat[observed_x > 0]))
    for contractor in (dense, sparse_):
        np.testing.assert_allclose(contractor.masked_total(factors), np.sum(mask * xhat), rtol=1e-10)
        np.testing.assert_allclose(contractor.data_loglik(factors), expected_loglik, rtol=1e-10, atol=1e-12)
        for alpha in range(model.n_factors):
            np.testing.assert_allclose(
                contractor.ratio_delta(alpha, factors),
                naive_delta(model, factors, alpha, ratio),
                rtol=1e-10, atol=1e-12,
            )
            np.testing.assert_allclose(
                contractor.masked_delta(alpha, factors),
                naive_delta(model, factors, alpha, mask.astype(float)),
                rtol=1e-10, atol=1e-12,
            )


@settings(max_examples=60, deadline=None)
@given(model=models(), seed=st.integers(0, 2**32 - 1))
def test_numba_and_einsum_entry_engines_agree_with_naive(model, seed):
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, size=model.factor_shape(a)) for a in range(model.n_factors)]
    shape = model.observed_shape
    n = int(rng.integers(1, np.prod(shape) + 1))
    flat = rng.choice(int(np.prod(shape)), size=n, replace=False)
    coords = np.vstack(np.unravel_index(flat, shape))
    weights = rng.random(n)
    x = rng.poisson(2.0, size=n) + 1.0
    xhat = naive_xhat(model, factors)
    weight_tensor = np.zeros(shape)
    weight_tensor[tuple(coords)] = weights
    ratio_tensor = np.zeros(shape)
    ratio_tensor[tuple(coords)] = x / xhat[tuple(coords)]
    for engine in ("numba", "einsum"):
        weighted = EntryList(model, coords, engine=engine, values=weights)
        counts = EntryList(model, coords, engine=engine, values=x)
        np.testing.assert_allclose(weighted.xhat(factors), xhat[tuple(coords)], rtol=1e-10)
        for alpha in range(model.n_factors):
            np.testing.assert_allclose(
                weighted.delta(alpha, factors),
                naive_delta(model, factors, alpha, weight_tensor), rtol=1e-10, atol=1e-12,
            )
            np.testing.assert_allclose(
                counts.delta(alpha, factors, ratio=True),
                naive_delta(model, factors, alpha, ratio_tensor), rtol=1e-10, atol=1e-12,
            )


def test_entry_list_chunks_agree_with_one_pass(rng):
    """Chunked gathers and scatter-adds give the same result as a single chunk."""
    model = Model.parse("ip,jq,kr,pqr->ijk").bind((7, 6, 5), {"p": 2, "q": 3, "r": 2})
    factors = [rng.gamma(1.0, size=model.factor_shape(a)) for a in range(4)]
    coords = np.vstack(np.unravel_index(rng.choice(7 * 6 * 5, 150, replace=False), (7, 6, 5)))
    weights = rng.random(150)
    whole = EntryList(model, coords, engine="einsum", values=weights)
    chunked = EntryList(model, coords, engine="einsum", values=weights)
    chunked.chunk = 16
    np.testing.assert_allclose(chunked.xhat(factors), whole.xhat(factors), rtol=1e-12)
    for alpha in range(4):
        np.testing.assert_allclose(
            chunked.delta(alpha, factors), whole.delta(alpha, factors), rtol=1e-12
        )
        np.testing.assert_allclose(
            chunked.delta(alpha, factors, ratio=True),
            whole.delta(alpha, factors, ratio=True),
            rtol=1e-12,
        )


@pytest.mark.parametrize(
    "spec, sizes, pair",
    [
        ("ik,kj->ij", {"k": 4}, True),  # NMF
        ("ik,jk->ij", {"k": 4}, True),
        ("ijk,kl->ijl", {"k": 3}, True),  # a factor with two observed indices
        ("ikl,jkl->ij", {"k": 2, "l": 3}, True),  # two latent indices, same order
        ("ikl,jlk->ij", {"k": 2, "l": 3}, False),  # ... in another order: general kernel
        ("ik,jk,lk->ijl", {"k": 3}, False),  # three factors: general kernel
    ],
)
def test_pair_kernels_agree_with_naive(spec, sizes, pair, rng):
    """Two factors sharing the latent block take the vectorised pair kernels,
    which agree with the definitions (and so with the general kernels)."""
    n_out = len(spec.split("->")[1])
    model = Model.parse(spec).bind((7, 6, 5)[:n_out], sizes)
    shape = model.observed_shape
    factors = [rng.gamma(1.0, size=model.factor_shape(a)) for a in range(model.n_factors)]
    n = int(np.prod(shape)) // 2
    coords = np.vstack(np.unravel_index(rng.choice(int(np.prod(shape)), n, replace=False), shape))
    x = rng.poisson(2.0, size=n) + 1.0
    entries = EntryList(model, coords, values=x)
    assert entries._pair is pair
    xhat = naive_xhat(model, factors)
    ratio = np.zeros(shape)
    ratio[tuple(coords)] = x / xhat[tuple(coords)]
    counts = np.zeros(shape)
    counts[tuple(coords)] = x
    np.testing.assert_allclose(entries.xhat(factors), xhat[tuple(coords)], rtol=1e-12)
    for alpha in range(model.n_factors):
        np.testing.assert_allclose(
            entries.delta(alpha, factors, ratio=True), naive_delta(model, factors, alpha, ratio),
            rtol=1e-12,
        )
        np.testing.assert_allclose(
            entries.delta(alpha, factors), naive_delta(model, factors, alpha, counts), rtol=1e-12
        )


@pytest.mark.parametrize("missing", [False, True], ids=["observed", "missing"])
def test_dense_calls_in_any_order_give_the_same_numbers(missing, rng):
    """The dense contractor takes the ratio with the bound's log terms and
    then holds the terms in X̂'s array: whatever the order of the calls, and
    with other factors between them, each returns what a fresh one does."""
    model = Model.parse("ik,kj->ij").bind((30, 20), {"k": 3})
    X = rng.poisson(3.0, size=(30, 20)).astype(float)
    data = as_observed_tensor(X, rng.random(X.shape) >= 0.2 if missing else None)
    first, second = ([rng.gamma(1.0, size=model.factor_shape(a)) for a in range(2)]
                     for _ in range(2))

    def fresh(call, factors):
        return call(make_contractor(model, data), factors)

    calls = {
        "loglik": lambda c, f: c.data_loglik(f),
        "total": lambda c, f: c.masked_total(f),
        "pulls": lambda c, f: c.ratio_deltas((0, 1), f),
    }
    expected = {(name, i): fresh(call, f) for name, call in calls.items()
                for i, f in enumerate((first, second))}
    contractor = make_contractor(model, data)
    for name, i in [("loglik", 0), ("total", 0), ("pulls", 0), ("loglik", 1), ("pulls", 0),
                    ("total", 1), ("pulls", 1), ("loglik", 1), ("total", 1), ("loglik", 0)]:
        got = calls[name](contractor, (first, second)[i])
        want = expected[name, i]
        if name == "pulls":
            for alpha in (0, 1):
                np.testing.assert_array_equal(got[alpha], want[alpha])
        else:
            assert got == want, (name, i)
