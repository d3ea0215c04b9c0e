"""Binary relations: the probit Gibbs sweep against the Bernoulli–Poisson one on
Kinships, for CP and for RESCAL, and the probit fits at their default chain
lengths."""

from __future__ import annotations

import time

import numpy as np

from ._protocol import Case, Contender
from .samplers import _chained, _gibbs, _gibbs_problem

TITLE = "Binary relations: the probit sweep against the Bernoulli–Poisson one"
ABOUT = ("Kinships (104 x 104 x 26, 0/1, the diagonal missing as link prediction fits it), CP "
         "of rank 40: seconds per Bernoulli–Poisson block Gibbs sweep (the latent counts of the "
         "ones, their allocation, then each Gamma factor) against a probit Gibbs sweep "
         "(`GibbsNTF(likelihood='probit')`: the latent Gaussian of every entry, then each "
         "signed column under ARD), each chained from the last one's state after an untimed "
         "first; and the whole probit fit `GibbsNTF(40, likelihood='probit', "
         "nonnegative=False, ard=True, evidence=None)` at its default chain lengths (500 "
         "warm-up sweeps, doubled while split R-hat is above 1.05, and 1000 draws). The same "
         "for RESCAL at 40 clusters: the Bernoulli–Poisson block Gibbs sweep of "
         "`BayesianRESCAL(method='gibbs')` (the allocation, each row of A, then G) against "
         "`ProbitRESCAL`'s (the latent Gaussian, every core, then each row of A), and the whole "
         "`ProbitRESCAL(40)` fit at its defaults (1000 warm-up sweeps and 1000 draws, no "
         "evidence).")

BERNOULLI = "Bernoulli–Poisson block Gibbs sweep"


def _kinships(rank):
    """Kinships' 0/1 tensor and its mask (the diagonal missing), and the
    Bernoulli–Poisson CP problem on them."""
    from sklearn_pltf.datasets import load_kinships, off_diagonal_mask

    X = load_kinships().data.astype(float)
    mask = off_diagonal_mask(X.shape)
    return {"tensor": (X, mask), "bernoulli": _gibbs_problem(X, rank, "bernoulli", mask)}


def _probit_sweep(name, rank, n_sweeps):
    """Sweeps of :class:`~sklearn_pltf.inference.gaussian.ProbitLink`, signed factors under ARD."""
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference import gaussian

    rng = np.random.default_rng(0)
    priors = gaussian.GaussianPriors(nonnegative=False, ard=True)

    def prepare(data):
        link = gaussian.ProbitLink(as_observed_tensor(*data["tensor"]))
        return link.initial_state(rng, rank, priors), link

    def step(carried):
        state, link = carried
        return link.sweep(rng, state, priors)[0], link

    return _chained(name, prepare, step, n_sweeps)


def _probit_fit(name, rank):
    """The probit GibbsNTF fit at its default chain lengths, without the evidence."""
    def run(data):
        from sklearn_pltf import GibbsNTF

        X, mask = data["tensor"]
        est = GibbsNTF(rank, likelihood="probit", nonnegative=False, ard=True, evidence=None,
                       random_state=0)
        start = time.perf_counter()
        est.fit(X, mask=mask)
        return {"result": None, "seconds": time.perf_counter() - start,
                "info": {"n_warmup": int(est.n_warmup_), "n_iter": int(est.n_iter_),
                         "effective_rank": int(est.effective_rank_)}}
    return Contender(name, run, ours=True)


def _rescal(rank):
    """Kinships' tensor and mask, and the Bernoulli–Poisson RESCAL Gibbs problem on them."""
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.engine.model import Model
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.inference.relational import _relational as relational

    data = _kinships(rank)
    X, mask = data["tensor"]
    model = Model.parse("ia,jb,abk->ijk").bind(X.shape, {"a": rank, "b": rank}, {})
    data["rescal"] = (relational.relational_data(as_observed_tensor(X, mask), "bernoulli"),
                      gamma_priors(model, 1.0, 1.0))
    return data


def _bernoulli_rescal_sweep(name, rank, n_sweeps):
    from sklearn_pltf.inference.relational import rescal_gibbs

    rng = np.random.default_rng(0)

    def prepare(data):
        relations, priors = data["rescal"]
        return rescal_gibbs.init(rng, relations, priors, rank), relations, priors

    def step(carried):
        state, relations, priors = carried
        return rescal_gibbs.step(rng, state, relations, priors)[0], relations, priors

    return _chained(name, prepare, step, n_sweeps)


def _probit_rescal_sweep(name, rank, n_sweeps):
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference.gaussian.rescal import ProbitRescalModel

    rng = np.random.default_rng(0)

    def prepare(data):
        model = ProbitRescalModel(as_observed_tensor(*data["tensor"]))
        return model.initial_state(rng, rank), model

    def step(carried):
        state, model = carried
        return model.sweep(rng, state)[0], model

    return _chained(name, prepare, step, n_sweeps)


def _probit_rescal_fit(name, rank):
    """ProbitRESCAL at its defaults (no evidence)."""
    def run(data):
        from sklearn_pltf import ProbitRESCAL

        X, mask = data["tensor"]
        est = ProbitRESCAL(rank, random_state=0)
        start = time.perf_counter()
        est.fit(X, mask=mask)
        return {"result": None, "seconds": time.perf_counter() - start,
                "info": {"n_iter": int(est.n_iter_), "rhat": round(float(est.rhat_), 2)}}
    return Contender(name, run, ours=True)


BERNOULLI_RESCAL = "Bernoulli–Poisson RESCAL block Gibbs sweep"


def cases(quick):
    rank = 10 if quick else 40
    n_sweeps = 3 if quick else 20
    repeats = 1 if quick else 3
    return [
        Case(f"Kinships, CP rank {rank}", lambda: _kinships(rank),
             [_gibbs(BERNOULLI, "bernoulli", "gibbs", n_sweeps),
              _probit_sweep("probit Gibbs sweep", rank, n_sweeps)],
             measure="per sweep", repeats=repeats, baseline=BERNOULLI),
        Case(f"Kinships, probit CP rank {rank}, whole fit", lambda: _kinships(rank),
             [_probit_fit("GibbsNTF probit, default lengths", rank)], repeats=1),
        Case(f"Kinships, RESCAL {rank} clusters", lambda: _rescal(rank),
             [_bernoulli_rescal_sweep(BERNOULLI_RESCAL, rank, n_sweeps),
              _probit_rescal_sweep("ProbitRESCAL Gibbs sweep", rank, n_sweeps)],
             measure="per sweep", repeats=repeats, baseline=BERNOULLI_RESCAL),
        Case(f"Kinships, ProbitRESCAL {rank} clusters, whole fit", lambda: _kinships(rank),
             [_probit_rescal_fit("ProbitRESCAL, defaults", rank)], repeats=1),
    ]
