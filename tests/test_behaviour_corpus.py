"""The same numbers before and after a restructuring.

A fixed corpus of fits, each a fixed number of plain sweeps
(``acceleration=None, tol=0``) from a fixed seed, covers every route the
optimiser takes: NMF, CP, Tucker, PLTF with missing entries, EM,
Bernoulli–Poisson, compound Poisson, RESCAL's tie, learned rates, ARD,
coupled tensors (shared and tied factors), scipy and pydata sparse input,
``partial_fit`` and the fold-in of ``transform``/``score``. Its bounds were
recorded in ``tests/data/behaviour_corpus.json`` by this file's ``--write``
before the estimator layer was restructured; they must be met to 1e-9
relative.

Regenerate (only when a change is *meant* to change the numbers, and say so
in the commit): ``python tests/test_behaviour_corpus.py --write``.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
import sparse
from sklearn.exceptions import ConvergenceWarning

from sklearn_pltf import (PLTF, BayesianNMF, BayesianRESCAL, CoupledPLTF, PoissonCP,
                          TuckerVB)
from sklearn_pltf.engine._likelihood import CompoundPoisson

RECORD = Path(__file__).parent / "data" / "behaviour_corpus.json"
SWEEPS = 12
PLAIN = dict(acceleration=None, tol=0.0, max_iter=SWEEPS, random_state=0)


def _counts(shape, rank=2, seed=0, scale=1.0):
    """Poisson counts of a random non-negative CP model of ``rank``."""
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, scale, (n, rank)) for n in shape]
    letters = "ijkl"[:len(shape)]
    mean = np.einsum(",".join(f"{c}r" for c in letters) + "->" + letters, *factors)
    return rng.poisson(mean).astype(float)


def _binary(shape, seed=0):
    return (_counts(shape, seed=seed, scale=0.7) > 0).astype(float)


def _with_missing(X, fraction=0.15, seed=1):
    X = X.copy()
    X[np.random.default_rng(seed).random(X.shape) < fraction] = np.nan
    return X


def _reals(shape, seed=0):
    rng = np.random.default_rng(seed)
    counts = _counts(shape, seed=seed)
    return np.where(counts > 0, rng.gamma(np.maximum(counts, 1.0), 1.0), 0.0)


def _summary(est, X_new=None, mask_new=None):
    """What the corpus records of a fit: its bounds, and the fold-in bound of
    new samples where the model has a sample-mode factor."""
    out = {"lower_bounds": [float(b) for b in np.asarray(est.lower_bounds_)],
           "lower_bound": float(est.lower_bound_),
           "factor_sums": [float(np.sum(f)) for f in est.factors_]}
    if X_new is not None:
        out["score_new"] = float(est.score(X_new, mask=mask_new) if mask_new is not None
                                 else est.score(X_new))
        out["transform_sum"] = float(np.sum(est.transform(X_new)))
    return out


def _nmf():
    X = _counts((30, 20))
    return _summary(BayesianNMF(3, **PLAIN).fit(X[:24]), X[24:])


def _nmf_em():
    X = _counts((30, 20))
    return _summary(BayesianNMF(3, method="em", prior_shape=1.5, **PLAIN).fit(X[:24]), X[24:])


def _nmf_bernoulli():
    X = _binary((30, 20))
    return _summary(BayesianNMF(3, likelihood="bernoulli", **PLAIN).fit(X[:24]), X[24:])


def _nmf_compound_poisson():
    X = _reals((30, 20))
    return _summary(BayesianNMF(3, likelihood=CompoundPoisson(0.5), **PLAIN).fit(X[:24]),
                    X[24:])


def _nmf_learned_rates():
    X = _counts((30, 20))
    return _summary(BayesianNMF(3, prior_rate="auto", **PLAIN).fit(X[:24]), X[24:])


def _nmf_ard():
    X = _counts((30, 20))
    return _summary(BayesianNMF(4, ard=True, **PLAIN).fit(X[:24]), X[24:])


def _nmf_scipy_sparse():
    X = _counts((30, 20))
    return _summary(BayesianNMF(3, **PLAIN).fit(scipy.sparse.csr_matrix(X[:24])),
                    scipy.sparse.csr_matrix(X[24:]))


def _cp():
    X = _counts((12, 10, 8))
    return _summary(PoissonCP(3, **PLAIN).fit(X[:10]), X[10:])


def _cp_pydata_sparse_masked():
    X = _counts((12, 10, 8))
    mask = np.random.default_rng(2).random(X.shape) > 0.1
    return _summary(PoissonCP(3, **PLAIN).fit(sparse.COO.from_numpy(X), mask=mask))


def _cp_ard():
    X = _counts((12, 10, 8))
    return _summary(PoissonCP(4, ard=True, **PLAIN).fit(X))


def _tucker():
    X = _counts((10, 9, 8))
    return _summary(TuckerVB((2, 3, 2), **PLAIN).fit(X[:8]), X[8:])


def _pltf_missing():
    X = _with_missing(_counts((12, 10, 8)))
    return _summary(PLTF("ir,jr,kr->ijk", {"r": 3}, **PLAIN).fit(X[:10]), X[10:])


def _pltf_fixed_factor():
    X = _counts((10, 12))
    fixed = np.random.default_rng(3).gamma(1.0, size=(10, 3))
    return _summary(PLTF("fi,ik,kt->ft", {"i": 3, "k": 2}, fixed_factors={0: fixed},
                         **PLAIN).fit(X))


def _rescal():
    X = _counts((9, 9, 3))
    return _summary(BayesianRESCAL(2, **PLAIN).fit(X))


def _rescal_bernoulli_sparse():
    X = _binary((9, 9, 3))
    return _summary(BayesianRESCAL(2, likelihood="bernoulli", **PLAIN)
                    .fit(sparse.COO.from_numpy(X)))


def _coupled_shared():
    X, Y = _counts((15, 10), seed=4), _counts((15, 6), seed=5)
    return _summary(CoupledPLTF(("ir,jr->ij", "ir,rf->if"), 2, **PLAIN).fit([X, Y]))


def _coupled_tied():
    X, Y = _binary((8, 8, 2), seed=6), _counts((8, 5), seed=7)
    return _summary(CoupledPLTF(("ia,jb,abk->ijk", "ia,af->if"), 2, tied_factors={1: 0},
                                likelihood=("bernoulli", "poisson"), **PLAIN).fit([X, Y]))


def _partial_fit():
    X = _counts((40, 15))
    est = BayesianNMF(3, random_state=0, max_iter=SWEEPS)
    bounds = []
    for start in range(0, 40, 10):
        est.partial_fit(X[start:start + 10])
        bounds.append(float(est.score(X[start:start + 10])))
    return {"scores": bounds, "factor_sums": [float(np.sum(f)) for f in est.factors_]}


CORPUS = {f.__name__.lstrip("_"): f for f in (
    _nmf, _nmf_em, _nmf_bernoulli, _nmf_compound_poisson, _nmf_learned_rates, _nmf_ard,
    _nmf_scipy_sparse, _cp, _cp_pydata_sparse_masked, _cp_ard, _tucker, _pltf_missing,
    _pltf_fixed_factor, _rescal, _rescal_bernoulli_sparse, _coupled_shared, _coupled_tied,
    _partial_fit)}


def _run(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return CORPUS[name]()


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_corpus_gives_its_recorded_numbers(name):
    recorded = json.loads(RECORD.read_text())[name]
    got = _run(name)
    assert got.keys() == recorded.keys()
    for key, value in recorded.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-9, atol=0, err_msg=key)


def test_the_corpus_covers_every_route_it_names():
    """The record has one entry per corpus fit, no stale ones."""
    assert sorted(json.loads(RECORD.read_text())) == sorted(CORPUS)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps({name: _run(name) for name in sorted(CORPUS)}, indent=1) + "\n")
    print(f"wrote {RECORD}")
