"""The samplers' cost: a sweep of block Gibbs and SADA, an SGLD step, a
GibbsNTF sweep and HMC iteration, and AllocationSMC against the tensor's size."""

from __future__ import annotations

import time

import numpy as np

from . import _workloads as workloads
from ._protocol import Case, Contender

TITLE = "The samplers' cost"
ABOUT = ("Seconds per step of the package's samplers, each against the first row of its case "
         "(all ours; each step chained from the last one's state after an untimed first): a "
         "block Gibbs sweep (the allocation of every count, then each factor) and a SADA sweep "
         "on the sparse 1000 x 1000 x 1000 Poisson CP tensor of rank 10 (10^6 non-zeros); "
         "block Gibbs at 2·10^5 non-zeros on a 100³ and a 1000³ tensor (spread-out factors, "
         "Dirichlet(1) columns, so both hold about as many counts); an SGLD step at batches of "
         "10³ to 10⁵ non-zeros, and at 10⁴ on 2·10^5 non-zeros; GibbsNTF's Gibbs sweep and "
         "HMC iteration (20 leapfrog steps) on 100 x 100 x 100 Gaussian CP data of rank 10; and "
         "AllocationSMC at T = 1000 tokens, rank 10, 500 particles, on a 4³ and a 64³ tensor: "
         "the SMC evidence alone (`run_smc`), the whole fit at its defaults (moves after each "
         "resampling) and a VB fit.")


def _chained(name, prepare, step, n_steps, ours=True):
    """A contender: ``prepare(data)`` gives a state, ``step(state)`` the next
    one; seconds per step of ``n_steps`` chained steps after an untimed one."""
    def run(data):
        state = step(prepare(data))
        start = time.perf_counter()
        for _ in range(n_steps):
            state = step(state)
        return {"result": None, "seconds": (time.perf_counter() - start) / n_steps,
                "info": {"n_steps": n_steps}}
    return Contender(name, run, ours=ours)


# ----------------------------------------------------------------- block Gibbs
def _gibbs_problem(X, rank, likelihood="poisson", mask=None):
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.engine.model import Model
    from sklearn_pltf.inference._common import gamma_priors

    data = as_observed_tensor(X, mask)
    model = Model.parse("ir,jr,kr->ijk").bind(data.shape, {"r": rank})
    contractor = make_contractor(model, data, likelihood)
    priors = gamma_priors(model, 1.0, 1.0)
    return model, contractor, priors


def _gibbs(name, key, method, n_sweeps):
    """Sweeps of ``method`` ("gibbs" or "sada") on the problem ``data[key]``."""
    from sklearn_pltf.inference import gibbs

    rng = np.random.default_rng(0)

    def prepare(data):
        model, contractor, priors = data[key]
        return gibbs.init(rng, model, contractor, priors), contractor, priors

    def step(carried):
        state, contractor, priors = carried
        state, _ = gibbs.step(rng, state, contractor, priors, gibbs.SWEEPS[method])
        return state, contractor, priors

    return _chained(name, prepare, step, n_sweeps)


# ------------------------------------------------------------------------ SGLD
def _sgld(name, key, batch_size, n_steps):
    from sklearn_pltf.inference import sgld

    rng = np.random.default_rng(0)

    def prepare(data):
        model, contractor, priors = data[key]
        target = sgld.PoissonTarget(model, contractor, priors, batch_size=batch_size)
        state = sgld.init(rng, target, 1.0)
        return state._replace(anchor=target.anchor(state.params)), target

    def step(carried):
        state, target = carried
        state, _ = sgld.step(rng, state, target, 1.0, 0.01, target.draw_batch(rng))
        return state, target

    return _chained(name, prepare, step, n_steps)


# -------------------------------------------------------------------- GibbsNTF
def _gaussian_cp(shape, rank, noise_ratio=0.3, seed=0):
    """Non-negative CP (Exponential(1) factors) plus Gaussian noise of
    ``noise_ratio`` times X̂'s standard deviation."""
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference._cp_stats import CPStatistics

    rng = np.random.default_rng(seed)
    factors = [rng.standard_exponential((n, rank)) for n in shape]
    xhat = np.einsum("ir,jr,kr->ijk", *factors)
    X = xhat + rng.normal(0.0, noise_ratio * xhat.std(), shape)
    return CPStatistics(as_observed_tensor(X, allow_negative=True)), rank


def _ntf(name, move, n_steps):
    """``move`` "gibbs" (a sweep) or "hmc" (20 leapfrog steps of 0.01)."""
    from sklearn_pltf.inference import gaussian

    rng = np.random.default_rng(0)
    priors = gaussian.GaussianPriors()

    def prepare(data):
        stats, rank = data
        return gaussian.init(rng, stats, rank, priors), stats

    def step(carried):
        state, stats = carried
        if move == "gibbs":
            state, _ = gaussian.gibbs_sweep(rng, state, stats, priors)
        else:
            state, _ = gaussian.hmc_step(rng, state, stats, priors, 0.01, 20)
        return state, stats

    return _chained(name, prepare, step, n_steps)


# --------------------------------------------------------------- AllocationSMC
def _allocation_data(sizes, rank):
    """Per side: the BAM's T = 1000 tokens at rank 5 (``a = 10``) as a pydata
    sparse tensor, and the urn data ``run_smc`` takes at ``rank``."""
    import sparse

    from sklearn_pltf.inference import allocation
    from sklearn_pltf.inference.allocation import sample_bam

    out = {}
    for side in sizes:
        X, _ = sample_bam(np.random.default_rng(0), (side,) * 3, 5, concentration=10.0,
                          n_tokens=1000)
        coords = np.array(np.nonzero(X))
        out[side] = (sparse.COO.from_numpy(X),
                     allocation.allocation_data(coords, X[tuple(coords)], X.shape, rank, 10.0))
    return out


def _allocation(side, kind, rank, n_particles):
    """One run of ``kind`` ("evidence", "fit" or "vb") on the tensor of
    ``side``³ cells; its seed moves on at every call."""
    from sklearn_pltf import AllocationSMC
    from sklearn_pltf.inference import allocation

    seeds = iter(range(10**6))

    def run(data):
        X, urn = data[side]
        seed = next(seeds)
        if kind == "evidence":
            allocation.run_smc(np.random.default_rng(seed), urn, n_particles=n_particles)
            return {"result": None}
        params = dict(method="vb") if kind == "vb" else dict(n_particles=n_particles)
        est = AllocationSMC(rank, concentration=10.0, random_state=seed, **params).fit(X)
        info = {} if kind == "vb" else {"resamplings": int(est.n_resampled_)}
        return {"result": None, "info": info}
    return Contender(_cube(side), run, ours=True)


def _cube(n):
    return f"{n} x {n} x {n}"


def cases(quick):
    n_sweeps, n_steps = (2, 5) if quick else (10, 50)
    shape, nnz, small = ((100, 100, 100), 20_000, 4_000) if quick else \
        ((1000, 1000, 1000), 1_000_000, 200_000)
    sides = (100, 1000) if not quick else (20, 100)
    batches = (100, 1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    ntf_shape = (30, 30, 30) if quick else (100, 100, 100)
    rank = 10
    repeats = 1 if quick else 3
    big = f"{nnz:,} non-zeros"

    def cube():
        return {"big": _gibbs_problem(workloads.sparse_poisson_cp(shape, rank, nnz,
                                                                   random_state=0), rank)}

    def equal_nonzeros():
        return {n: _gibbs_problem(workloads.sparse_poisson_cp(
            (n, n, n), rank, small, concentration=1.0, random_state=0), rank) for n in sides}

    def sgld_data():
        return {"big": cube()["big"],
                "small": _gibbs_problem(workloads.sparse_poisson_cp(shape, rank, small,
                                                                    random_state=0), rank)}

    allocation_sides, particles = (4, 16 if quick else 64), 100 if quick else 500
    allocation = [Case(f"AllocationSMC, T = 1000, rank 10, {particles} particles: {label}",
                       lambda: _allocation_data(allocation_sides, rank),
                       [_allocation(side, kind, rank, particles) for side in allocation_sides],
                       repeats=1 if quick else 10, baseline=_cube(4))
                  for kind, label in (("evidence", "the SMC evidence"),
                                      ("fit", "whole fit at the defaults"),
                                      ("vb", "VB fit"))]
    return [
        Case(f"sparse {' x '.join(map(str, shape))}, {big}, rank {rank}", cube,
             [_gibbs("block Gibbs", "big", "gibbs", n_sweeps),
              _gibbs("SADA", "big", "sada", n_sweeps)],
             measure="per sweep", repeats=repeats, baseline="block Gibbs"),
        Case(f"block Gibbs at {small:,} non-zeros, rank {rank}", equal_nonzeros,
             [_gibbs(_cube(n), n, "gibbs", n_sweeps) for n in sides],
             measure="per sweep", repeats=repeats, baseline=_cube(sides[0])),
        Case(f"SGLD on {big}, rank {rank}", sgld_data,
             [_sgld(f"batch {b:,}", "big", b, n_steps) for b in batches]
             + [_sgld(f"batch {batches[1]:,}, {small:,} non-zeros", "small", batches[1], n_steps)],
             measure="per step", repeats=repeats, baseline=f"batch {batches[0]:,}"),
        Case(f"GibbsNTF, {' x '.join(map(str, ntf_shape))}, rank {rank}",
             lambda: _gaussian_cp(ntf_shape, rank),
             [_ntf("Gibbs sweep", "gibbs", n_sweeps), _ntf("HMC iteration", "hmc", n_sweeps)],
             measure="per step", repeats=repeats, baseline="Gibbs sweep"),
        *allocation,
    ]
