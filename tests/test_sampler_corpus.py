"""The same draws and evidence before and after a restructuring.

A fixed corpus of sampler fits, each on tiny data with short fixed chains
(two chains, every draw kept) from a fixed seed, covers every sampler the
estimators reach: Poisson–Gamma Gibbs and SADA with Chib's evidence (dense,
scipy sparse and thinned, Bernoulli, missing entries, CP), SGLD with STI
(exact gradient and minibatches), the Gaussian family's Gibbs and HMC
(non-negative, signed, ARD with missing entries) with Chib's evidence, an
``n_warmup="auto"`` fit of each family that runs its chains again, the
allocation model's SMC (CP with and without missing entries, Tucker without
moves) and VB, RESCAL's tied Gibbs and SADA, and coupled Gibbs and SADA
(one likelihood, and Bernoulli beside Poisson). AIS is left out: even at
its defaults on this data it takes seconds.

What it records of a fit: for every kept draw array, posterior mean and
log-likelihood trace, its shape, the exact (correctly rounded, so
order-independent) sum and sum of squares of its entries and a few of
them; and the evidence, its standard error, the warm-up, R-hat and the
family's other fitted scalars. They were recorded in
``tests/data/sampler_corpus.json`` by this file's ``--write`` before the
estimator layer was restructured, one corpus per build of the compiled
kernels (the native AVX-512 one and the AVX2 one ``.ci/run`` tests; see
:func:`build`), and must be met bit for bit: the same seed gives the same
draws and the same evidence.

Regenerate (only when a change is *meant* to change the draws, and say so
in the commit), once natively and once with the AVX2 settings of
``.ci/run``: ``python tests/test_sampler_corpus.py --write``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from sklearn.exceptions import ConvergenceWarning

from sklearn_pltf import (AllocationSMC, BayesianNMF, BayesianRESCAL, CoupledPLTF, GibbsNTF,
                          PoissonCP)

RECORD = Path(__file__).parent / "data" / "sampler_corpus.json"
#: Short fixed chains: two of them, every draw kept.
CHAINS = dict(n_warmup=20, n_draws=30, n_init=2, keep_draws=True, random_state=0)
#: STI's ladder, short.
STI = dict(n_temperatures=4, steps_per_temperature=20)
#: Flat (C-order) positions of the entries recorded of each array.
N_ENTRIES = 6
#: The scalar attributes recorded where a fit has them.
SCALARS = ("log_evidence_", "log_evidence_error_", "n_warmup_", "n_iter_", "rhat_",
           "noise_variance_", "acceptance_rate_", "step_size_", "n_resampled_", "converged_")


def _counts(shape, rank=2, seed=0, scale=1.0):
    """Poisson counts of a random non-negative CP model of ``rank``."""
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, scale, (n, rank)) for n in shape]
    letters = "ijkl"[:len(shape)]
    mean = np.einsum(",".join(f"{c}r" for c in letters) + "->" + letters, *factors)
    return rng.poisson(mean).astype(float)


def _binary(shape, seed=0):
    return (_counts(shape, seed=seed, scale=0.7) > 0).astype(float)


def _reals(shape, seed=0):
    """A non-negative CP model of rank 2 plus Gaussian noise (some entries negative)."""
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(2.0, 1.0, (n, 2)) for n in shape]
    letters = "ijkl"[:len(shape)]
    mean = np.einsum(",".join(f"{c}r" for c in letters) + "->" + letters, *factors)
    return mean + rng.normal(0.0, 0.5, mean.shape)


def _with_missing(X, fraction=0.15, seed=1):
    X = X.copy()
    X[np.random.default_rng(seed).random(X.shape) < fraction] = np.nan
    return X


def _array(a):
    """What changes if any entry of ``a`` changes: its shape, the exact
    (correctly rounded, order-independent) sum and sum of squares of its
    entries, and a few of them, as Python floats (JSON round-trips them)."""
    a = np.asarray(a, dtype=np.float64)
    flat = np.ravel(a, order="C")
    positions = np.unique(np.linspace(0, flat.size - 1, N_ENTRIES).astype(int)) if flat.size else []
    return {"shape": list(a.shape), "sum": math.fsum(flat.tolist()),
            "sum_of_squares": math.fsum((flat * flat).tolist()),
            "entries": [float(flat[p]) for p in positions]}


def _scalar(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return None if value is None else float(value)


def _summary(est):
    """What the corpus records of a sampler fit."""
    out = {"factors": [_array(f) for f in est.factors_]}
    if getattr(est, "draws_", None) is not None:
        out["draws"] = [None if d is None else _array(d) for d in est.draws_]
    for name in ("log_likelihoods_", "lower_bounds_"):
        if hasattr(est, name):
            out[name.rstrip("_")] = _array(getattr(est, name))
    for name in SCALARS:
        if hasattr(est, name):
            out[name.rstrip("_")] = _scalar(getattr(est, name))
    return out


# --------------------------------------------------------- Poisson–Gamma
def _nmf_gibbs_chib():
    return _summary(BayesianNMF(2, method="gibbs", evidence="chib", **CHAINS)
                    .fit(_counts((8, 6))))


def _nmf_sada_chib():
    return _summary(BayesianNMF(2, method="sada", evidence="chib", **CHAINS)
                    .fit(_counts((8, 6))))


def _nmf_gibbs_sparse_thinned():
    X = scipy.sparse.csr_matrix(_counts((8, 6), seed=1))
    return _summary(BayesianNMF(2, method="gibbs", evidence="chib", thin=2, **CHAINS).fit(X))


def _nmf_gibbs_bernoulli():
    return _summary(BayesianNMF(2, method="gibbs", likelihood="bernoulli", evidence="chib",
                                **CHAINS).fit(_binary((8, 6), seed=2)))


def _nmf_gibbs_missing():
    return _summary(BayesianNMF(2, method="gibbs", evidence="chib", **CHAINS)
                    .fit(_with_missing(_counts((8, 6), seed=3))))


def _nmf_sgld_sti():
    return _summary(BayesianNMF(2, method="sgld", evidence="sti", **STI, **CHAINS)
                    .fit(_counts((8, 6))))


def _nmf_sgld_minibatch_sti():
    return _summary(BayesianNMF(2, method="sgld", evidence="sti", batch_size=8, **STI, **CHAINS)
                    .fit(_counts((8, 6))))


def _nmf_gibbs_auto_warmup():
    """``n_warmup="auto"``: the chains run again, from the same seeds, with
    the warm-up doubled while they have not mixed."""
    fit = BayesianNMF(2, method="gibbs", evidence=None, n_warmup="auto", n_draws=20, n_init=2,
                      random_state=0).fit(_counts((8, 6)))
    assert fit.n_warmup_ > 500, "the corpus means this fit to run its chains again"
    return _summary(fit)


def _cp_gibbs_chib():
    return _summary(PoissonCP(2, method="gibbs", evidence="chib", **CHAINS)
                    .fit(_counts((5, 4, 3), seed=4)))


# --------------------------------------------------------------- Gaussian
def _gaussian_gibbs_chib():
    return _summary(GibbsNTF(2, method="gibbs", evidence="chib", **CHAINS)
                    .fit(_reals((6, 5))))


def _gaussian_signed_gibbs_chib():
    return _summary(GibbsNTF(2, nonnegative=False, method="gibbs", evidence="chib", **CHAINS)
                    .fit(_reals((5, 4, 3), seed=1)))


def _gaussian_ard_gibbs_chib():
    return _summary(GibbsNTF(3, ard=True, method="gibbs", evidence="chib", **CHAINS)
                    .fit(_with_missing(_reals((6, 4), seed=2))))


def _gaussian_hmc_chib():
    return _summary(GibbsNTF(2, method="hmc", evidence="chib", n_leapfrog=5, **CHAINS)
                    .fit(_reals((6, 5))))


def _gaussian_gibbs_auto_warmup():
    fit = GibbsNTF(2, method="gibbs", evidence=None, n_warmup="auto", n_draws=20, n_init=2,
                   random_state=3).fit(_reals((8, 6)))
    assert fit.n_warmup_ > 500, "the corpus means this fit to run its chains again"
    return _summary(fit)


def _gaussian_signed_hmc():
    return _summary(GibbsNTF(2, nonnegative=False, method="hmc", evidence=None, n_leapfrog=5,
                             **CHAINS).fit(_reals((8, 6), seed=3)))


# ------------------------------------------------------------- allocation
SMC = dict(n_particles=60, n_moves=5, n_islands=3, random_state=0)


def _allocation_smc():
    return _summary(AllocationSMC(2, **SMC).fit(_counts((6, 5, 4))))


def _allocation_smc_missing():
    return _summary(AllocationSMC(2, **SMC).fit(_with_missing(_counts((6, 5, 4), seed=5))))


def _allocation_smc_tucker_no_moves():
    return _summary(AllocationSMC({"p": 2, "q": 2}, model="ip,jq,pq->ij", n_particles=60,
                                  n_moves=0, n_islands=3, random_state=0)
                    .fit(_counts((6, 5), seed=6)))


def _allocation_vb():
    return _summary(AllocationSMC(2, method="vb", max_iter=20, tol=0.0, random_state=0)
                    .fit(_counts((6, 5, 4))))


# ------------------------------------------------------- tied and coupled
def _rescal_bernoulli_gibbs_chib():
    return _summary(BayesianRESCAL(2, likelihood="bernoulli", method="gibbs", evidence="chib",
                                   **CHAINS).fit(_binary((7, 7, 2), seed=6)))


def _rescal_poisson_sada_chib():
    return _summary(BayesianRESCAL(2, method="sada", evidence="chib", **CHAINS)
                    .fit(_counts((7, 7, 2), seed=7)))


def _coupled_gibbs_chib():
    X, Y = _counts((8, 6), seed=4), _counts((8, 4), seed=5)
    return _summary(CoupledPLTF(("ir,jr->ij", "ir,rf->if"), 2, method="gibbs", evidence="chib",
                                **CHAINS).fit([X, Y]))


def _coupled_sada_mixed_likelihoods():
    X, Y = _binary((6, 5), seed=8), _counts((6, 3), seed=9)
    return _summary(CoupledPLTF(("ir,jr->ij", "ir,rf->if"), 2, likelihood=("bernoulli", "poisson"),
                                method="sada", evidence="chib", **CHAINS).fit([X, Y]))


CORPUS = {f.__name__.lstrip("_"): f for f in (
    _nmf_gibbs_chib, _nmf_sada_chib, _nmf_gibbs_sparse_thinned, _nmf_gibbs_bernoulli,
    _nmf_gibbs_missing, _nmf_sgld_sti, _nmf_sgld_minibatch_sti, _nmf_gibbs_auto_warmup,
    _cp_gibbs_chib, _gaussian_gibbs_chib, _gaussian_signed_gibbs_chib, _gaussian_ard_gibbs_chib,
    _gaussian_gibbs_auto_warmup,
    _gaussian_hmc_chib, _gaussian_signed_hmc, _allocation_smc, _allocation_smc_missing,
    _allocation_smc_tucker_no_moves, _allocation_vb, _rescal_bernoulli_gibbs_chib,
    _rescal_poisson_sada_chib, _coupled_gibbs_chib, _coupled_sada_mixed_likelihoods)}


def _run(name):
    with warnings.catch_warnings():
        # Short chains do not mix, and Chib's ordinates are noisy: they warn.
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return CORPUS[name]()


def _assert_same(got, recorded, where):
    """Exactly equal: the same keys, and every number bit for bit (NaN equals NaN)."""
    if isinstance(recorded, dict):
        assert isinstance(got, dict) and got.keys() == recorded.keys(), where
        for key in recorded:
            _assert_same(got[key], recorded[key], f"{where}.{key}")
    elif isinstance(recorded, list):
        assert isinstance(got, list) and len(got) == len(recorded), where
        for k, (g, r) in enumerate(zip(got, recorded)):
            _assert_same(g, r, f"{where}[{k}]")
    elif recorded is None or isinstance(recorded, (bool, int)):
        assert got == recorded and type(got) is type(recorded), (where, got, recorded)
    else:
        np.testing.assert_array_equal(got, recorded, err_msg=where, strict=True)


def build():
    """The compiled kernels the draws come from: numba's CPU target, NumPy's
    SIMD paths in use and OpenBLAS's core type. Kernels built for another
    CPU round differently, and a sampler's draws then part ways, so the
    record holds one corpus per build (``--write`` adds this one's)."""
    import llvmlite.binding
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    cpu = os.environ.get("NUMBA_CPU_NAME") or llvmlite.binding.get_host_cpu_name()
    simd = ",".join(sorted(f for f in __cpu_dispatch__ if __cpu_features__.get(f)))
    return f"numba={cpu};numpy={simd};openblas={os.environ.get('OPENBLAS_CORETYPE', 'auto')}"


def _record():
    """This build's recorded corpus; a skip naming the build where there is
    none (the record was made on the project's machines, natively and with
    the kernels built for AVX2, as ``.ci/run`` runs them)."""
    records = json.loads(RECORD.read_text())
    if build() not in records:
        pytest.skip(f"no sampler corpus recorded for this build ({build()}); record one at a "
                    "commit before the change: python tests/test_sampler_corpus.py --write")
    return records[build()]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_corpus_gives_its_recorded_draws(name):
    _assert_same(_run(name), _record()[name], name)


def test_the_same_seed_gives_the_same_draws_on_any_build():
    """What the record stands for, on a build it was not made on too: a fit
    repeated from its seed gives the same draws and evidence, bit for bit."""
    for name in ("nmf_gibbs_chib", "nmf_sgld_sti", "gaussian_hmc_chib", "allocation_smc",
                 "coupled_gibbs_chib"):
        first = _run(name)
        _assert_same(_run(name), json.loads(json.dumps(first)), name)


def test_the_corpus_covers_every_fit_it_names():
    """Each build's record has one entry per corpus fit, no stale ones, and
    the record holds the native AVX-512 build's and the AVX2 build's."""
    records = json.loads(RECORD.read_text())
    assert len(records) >= 2
    for corpus in records.values():
        assert sorted(corpus) == sorted(CORPUS)


def test_the_comparison_sees_the_last_bit():
    """A summary one ulp off, or an entry the record lacks, fails."""
    recorded = {"sum": 1.0, "shape": [2], "entries": [0.5, float("nan")]}
    _assert_same(json.loads(json.dumps(recorded)), recorded, "round trip")
    with pytest.raises(AssertionError):
        _assert_same({**recorded, "sum": np.nextafter(1.0, 2.0)}, recorded, "ulp")
    with pytest.raises(AssertionError):
        _assert_same({"sum": 1.0, "shape": [2]}, recorded, "missing key")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.parent.mkdir(exist_ok=True)
    records = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    records[build()] = {name: _run(name) for name in sorted(CORPUS)}
    RECORD.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORD} for {build()}")
