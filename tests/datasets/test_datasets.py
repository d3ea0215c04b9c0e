"""Shipped relational tensors and the synthetic-data generators."""

import numpy as np
import pytest
import sparse

from sklearn_pltf.engine._contract import full_xhat
from sklearn_pltf.datasets import (
    load_kinships,
    load_nations,
    load_umls,
    make_bam,
    make_gaussian_ntf,
    make_pltf,
    make_poisson_cp,
    make_poisson_nmf,
    make_poisson_tucker,
)
from sklearn_pltf.engine.model import Model


@pytest.mark.parametrize("load, shape, ones", [(load_nations, (14, 14, 55), 1992),
                                               (load_kinships, (104, 104, 25), 10686),
                                               (load_umls, (135, 135, 46), 6529)])
def test_relational_tensors(load, shape, ones):
    dense, coo = load(), load(as_sparse=True)
    assert dense.data.shape == shape and isinstance(dense.data, np.ndarray)
    assert set(np.unique(dense.data)) == {0, 1} and int(dense.data.sum()) == ones
    assert isinstance(coo.data, sparse.COO) and coo.data.nnz == ones
    np.testing.assert_array_equal(coo.data.todense(), dense.data)
    assert len(dense.entities) == shape[0] and len(dense.relations) == shape[2]
    assert "PyKEEN" in dense.DESCR and f"{ones} ones" in dense.DESCR.replace(",", "")
    entities, relations = dense.data.sum(axis=(1, 2)) + dense.data.sum(axis=(0, 2)), dense.data.sum(axis=(0, 1))
    assert entities.min() > 0 and relations.min() > 0  # every name indexes some triple
    assert not np.einsum("iik->", dense.data)  # no self-relations: off_diagonal_mask drops nothing


def test_nations_names_are_in_index_order():
    nations = load_nations()
    usa, uk = nations.entities.index("usa"), nations.entities.index("uk")
    embassy = nations.relations.index("embassy")
    assert nations.data[usa, uk, embassy] == 1


def test_umls_names_are_in_index_order():
    umls = load_umls()
    drug, disease = (umls.entities.index(name) for name in
                     ("pharmacologic_substance", "disease_or_syndrome"))
    assert umls.data[drug, disease, umls.relations.index("treats")] == 1


GENERATORS = [
    (make_poisson_nmf, dict(n_samples=12, n_features=9, n_components=2)),
    (make_poisson_cp, dict(shape=(7, 6, 5), n_components=3)),
    (make_poisson_tucker, dict(shape=(7, 6, 5), n_components=(2, 3, 2))),
    (make_gaussian_ntf, dict(shape=(7, 6, 5), n_components=3)),
    (make_bam, dict(shape=(7, 6, 5), n_components=3, n_tokens=80)),
]


@pytest.mark.parametrize("make, kwargs", GENERATORS)
def test_generators_are_reproducible(make, kwargs):
    X1, _ = make(**kwargs, random_state=3)
    X2, _ = make(**kwargs, random_state=3)
    X3, _ = make(**kwargs, random_state=4)
    np.testing.assert_array_equal(X1, X2)
    assert not np.array_equal(X1, X3)


@pytest.mark.parametrize("make, kwargs", GENERATORS[:4])
def test_missing_fraction_marks_nan(make, kwargs):
    X, _ = make(**kwargs, missing_fraction=0.3, random_state=0)
    # 5% of the entries per ~100 entries is > 3 binomial SDs (sqrt(.21/n) <= 0.05)
    assert abs(np.isnan(X).mean() - 0.3) < 0.15
    complete, _ = make(**kwargs, random_state=0)
    assert not np.isnan(complete).any()
    with pytest.raises(ValueError, match="missing_fraction"):
        make(**kwargs, missing_fraction=1.0)


def test_make_pltf_draws_poisson_around_the_model():
    X, factors = make_pltf("ir,jr,kr->ijk", (30, 20, 10), 2, prior_rate=2.0, random_state=0)
    model = Model.parse("ir,jr,kr->ijk").bind((30, 20, 10), 2)
    mean = full_xhat(model, factors)
    # the total of independent Poissons is Poisson(sum of means): within 5 SD
    assert abs(X.sum() - mean.sum()) < 5 * np.sqrt(mean.sum())
    assert X.dtype == np.int64 and [f.shape for f in factors] == [(30, 2), (20, 2), (10, 2)]
    # the factors' prior Gamma(1, rate 2) has mean 0.5: 1200 entries, SD 0.5/sqrt(1200)
    assert abs(np.concatenate([f.ravel() for f in factors]).mean() - 0.5) < 5 * 0.5 / np.sqrt(120)


def test_make_poisson_tucker_returns_the_core_last():
    X, factors = make_poisson_tucker((6, 5, 4), (2, 3, 2), random_state=0)
    assert [f.shape for f in factors] == [(6, 2), (5, 3), (4, 2), (2, 3, 2)]
    with pytest.raises(ValueError, match="ranks"):
        make_poisson_tucker((6, 5, 4), (2, 3))


def test_make_gaussian_ntf_noise_level():
    X, factors = make_gaussian_ntf((30, 20, 10), 2, noise_std=0.3, random_state=0)
    residual = X - np.einsum("ir,jr,kr->ijk", *factors)
    # the sample SD of 6000 normals has relative SD 1/sqrt(2 * 6000) ~ 0.9%
    assert abs(residual.std() / 0.3 - 1) < 0.05
    assert all((f >= 0).all() for f in factors)
    with pytest.raises(ValueError, match="noise_std"):
        make_gaussian_ntf(noise_std=-1.0)


def test_make_bam_has_its_tokens():
    X, (T, theta0, thetas) = make_bam((5, 4, 3), 2, n_tokens=200, random_state=0)
    assert int(X.sum()) == T == 200
    np.testing.assert_allclose(theta0.sum(), 1.0)
    assert [t.shape for t in thetas] == [(2, 5), (2, 4), (2, 3)]
    with pytest.raises(ValueError, match="n_components"):
        make_bam(n_components=0)


def test_kinships_with_attributes_loads_as_documented():
    from sklearn_pltf.datasets import load_kinships_attributes

    kinships = load_kinships_attributes()
    assert kinships.data.shape == (104, 104, 26) and int(kinships.data.sum()) == 10790
    assert kinships.attributes.shape == (104, len(kinships.attribute_names))
    # one code per categorical column, so each person has one value per column
    n_columns = len({name.split(" = ")[0] for name in kinships.attribute_names})
    assert set(kinships.attributes.sum(axis=1)) == {n_columns}
    assert kinships.codes.shape == (104, 14)
