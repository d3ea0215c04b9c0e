"""Coupled factorization: a coupled VB sweep against its parts' sweeps alone."""

from __future__ import annotations

import time

import numpy as np

from ._protocol import Case, Contender

TITLE = "Coupled factorization: a sweep against its parts'"
ABOUT = ("One plain VB sweep (each with its bound, on prepared states) of a coupled model "
         "against the sum of its parts' sweeps, each tensor fitted by its own model: a "
         "user x item x context count tensor, 400 x 300 x 30 (`'ur,ir,cr->uic'`), coupled "
         "with 300 x 80 item features (`'ir,rf->if'`) at rank 10, the tensor dense and sparse; "
         "and Kinships' relations with its attributes under RESCAL's tie "
         "(`CoupledPLTF(('ia,jb,abk->ijk', 'ia,af->if'), 20, tied_factors={1: 0}, "
         "likelihood='bernoulli')`) against RESCAL's sweep of the relations plus the attribute "
         "model's. Each over the parts' time.")

MODELS = ("ur,ir,cr->uic", "ir,rf->if")
PARTS = "the parts alone"


def _tensors(shape, n_features, rank, seed=0):
    rng = np.random.default_rng(seed)
    U, I, C = (rng.gamma(0.5, 1.0, (n, rank)) for n in shape)
    F = rng.gamma(0.5, 1.0, (rank, n_features))
    X = rng.poisson(np.einsum("ur,ir,cr->uic", U, I, C) / rank ** 2).astype(float)
    return X, rng.poisson(I @ F / rank).astype(float)


def _prepared(shape, n_features, rank, layout):
    """``[(state, step)]`` of the coupled model, then of each part: a VB
    state after one sweep (kernels compiled, X̂'s buffers made)."""
    import sparse

    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._coupled import CoupledContractor, CoupledModel, bind_models
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference import vb
    from sklearn_pltf.inference._common import gamma_priors

    X, Y = _tensors(shape, n_features, rank)
    tensors = [X, Y] if layout == "dense" else [sparse.COO.from_numpy(X), Y]
    datas = [as_observed_tensor(T) for T in tensors]
    models = bind_models(MODELS, [d.shape for d in datas], rank)
    joint = CoupledModel.from_models(models)
    coupled = CoupledContractor(joint, datas, ["poisson", "poisson"])
    problems = [(joint, coupled)] + [(m, make_contractor(m, d)) for m, d in zip(models, datas)]
    prepared = []
    for model, contractor in problems:
        priors = gamma_priors(model, 1.0, 1.0)
        state, _ = vb.step(vb.init(np.random.default_rng(0), model, contractor, priors),
                           contractor, priors)

        def step(contractor=contractor, priors=priors, state=state):
            vb.step(state, contractor, priors)
        prepared.append(step)
    return prepared


def _kinships_prepared(rank):
    """The same for Kinships with its attributes under RESCAL's tie: the
    coupled step, then RESCAL's step of the relations and the attribute
    model's step."""
    from sklearn_pltf import CoupledPLTF
    from sklearn_pltf.datasets import load_kinships_attributes
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._coupled import CoupledModel, bind_models
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference import vb
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.inference.relational import coupled as rescal_coupled
    from sklearn_pltf.inference.relational import rescal

    kinships = load_kinships_attributes()
    X, Y = kinships.data.astype(float), kinships.attributes.astype(float)
    strings = ("ia,jb,abk->ijk", "ia,af->if")
    datas = [as_observed_tensor(X), as_observed_tensor(Y)]
    models = bind_models(strings, [d.shape for d in datas], rank)
    joint = CoupledModel.from_models(models)
    priors = gamma_priors(joint, 1.0, 1.0)
    est = CoupledPLTF(strings, rank, tied_factors={1: 0}, likelihood="bernoulli")
    data = est._tied_data(models, joint, datas, ["bernoulli", "bernoulli"], (1.0, 1.0))
    state = rescal_coupled.vb_init(np.random.default_rng(0), data, priors, rank)
    state, _ = rescal_coupled.vb_step(state, data, priors)
    side = make_contractor(models[1], datas[1], "bernoulli")
    side_priors = gamma_priors(models[1], 1.0, 1.0)
    side_state, _ = vb.step(vb.init(np.random.default_rng(0), models[1], side, side_priors),
                            side, side_priors)
    relational_priors = rescal_coupled.rescal_priors(priors)
    return [lambda: rescal_coupled.vb_step(state, data, priors),
            lambda: rescal.vb_step(rescal_coupled.rescal_part(state), data.relational,
                                   relational_priors),
            lambda: vb.step(side_state, side, side_priors)]


def _sweeps(name, parts, n_sweeps):
    """A contender: ``n_sweeps`` sweeps of each step ``parts`` picks from the
    prepared steps, summed; seconds per sweep."""
    def run(steps):
        start = time.perf_counter()
        for _ in range(n_sweeps):
            for i in parts:
                steps[i]()
        return {"result": None, "seconds": (time.perf_counter() - start) / n_sweeps,
                "info": {"n_sweeps": n_sweeps}}
    return Contender(name, run, ours=True)


def cases(quick):
    shape, n_features, rank = ((40, 30, 10), 20, 5) if quick else ((400, 300, 30), 80, 10)
    n_sweeps = 3 if quick else 20
    repeats = 1 if quick else 3
    kinships_rank = 5 if quick else 20
    sizes = f"{' x '.join(map(str, shape))} with {shape[1]} x {n_features} features, rank {rank}"
    return [
        *(Case(f"{layout} {sizes}",
               lambda layout=layout: _prepared(shape, n_features, rank, layout),
               [_sweeps("coupled", [0], n_sweeps), _sweeps(PARTS, [1, 2], n_sweeps)],
               measure="per sweep", repeats=repeats, baseline=PARTS)
          for layout in ("dense", "sparse")),
        Case(f"Kinships with its attributes, RESCAL's tie, rank {kinships_rank}",
             lambda: _kinships_prepared(kinships_rank),
             [_sweeps("coupled", [0], n_sweeps), _sweeps(PARTS, [1, 2], n_sweeps)],
             measure="per sweep", repeats=repeats, baseline=PARTS),
    ]
