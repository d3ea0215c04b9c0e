"""Coupled factorization: a coupled fit's sweep against its parts' sweeps
alone, and Kinships' link prediction with and without its attributes.

A user x item x context count tensor (``"ur,ir,cr->uic"``) coupled with item
features (``"ir,rf->if"``), dense and sparse: the seconds of ``n_sweeps``
plain VB sweeps (each with its bound) of the coupled model, against the sum
of the same sweeps of each tensor's own model, on prepared states, median of
``repeats`` in one process (the kernels compiled first).
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import sparse

from sklearn_pltf.engine._contract import make_contractor
from sklearn_pltf.engine._coupled import CoupledContractor, CoupledModel, bind_models
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference import vb
from sklearn_pltf.inference._common import gamma_priors

MODELS = ("ur,ir,cr->uic", "ir,rf->if")


def _tensors(shape=(400, 300, 30), n_features=80, rank=10, seed=0):
    rng = np.random.default_rng(seed)
    U, I, C = (rng.gamma(0.5, 1.0, (n, rank)) for n in shape)
    F = rng.gamma(0.5, 1.0, (rank, n_features))
    X = rng.poisson(np.einsum("ur,ir,cr->uic", U, I, C) / rank ** 2).astype(float)
    return X, rng.poisson(I @ F / rank).astype(float)


def _sweeps_seconds(kernel_state, contractor, priors, n_sweeps):
    state = kernel_state
    start = time.perf_counter()
    for _ in range(n_sweeps):
        state, _ = vb.step(state, contractor, priors)
    return time.perf_counter() - start


def bench_coupled(repeats=3, n_sweeps=20, rank=10):
    for layout in ("dense", "sparse"):
        X, Y = _tensors(rank=rank)
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
                               contractor, priors)  # compiled, and X-hat's buffers made
            prepared.append((state, contractor, priors))
        times = [[_sweeps_seconds(*p, n_sweeps) for p in prepared] for _ in range(repeats)]
        whole = statistics.median(t[0] for t in times)
        parts = statistics.median(t[1] + t[2] for t in times)
        print(f"{layout:6s} coupled {whole / n_sweeps * 1e3:.1f} ms a sweep, parts alone "
              f"{parts / n_sweeps * 1e3:.1f} ms: ratio {whole / parts:.2f}", flush=True)


def bench_coupled_tied(repeats=3, n_sweeps=10, rank=20):
    """A coupled RESCAL sweep (relations and attributes sharing the tied
    person factor, ``CoupledPLTF(..., tied_factors={1: 0})``) against
    RESCAL's sweep of the relations and the attribute model's own sweep,
    on Kinships with its attributes, Bernoulli–Poisson."""
    from sklearn_pltf import CoupledPLTF
    from sklearn_pltf.datasets import load_kinships_attributes
    from sklearn_pltf.inference.relational import coupled as _rescal_coupled
    from sklearn_pltf.inference.relational import rescal

    kinships = load_kinships_attributes()
    X, Y = kinships.data.astype(float), kinships.attributes.astype(float)
    models_strings = KINSHIPS_COUPLED["rescal"][0]
    datas = [as_observed_tensor(X), as_observed_tensor(Y)]
    models = bind_models(models_strings, [d.shape for d in datas], rank)
    joint = CoupledModel.from_models(models)
    priors = gamma_priors(joint, 1.0, 1.0)
    est = CoupledPLTF(models_strings, rank, tied_factors={1: 0}, likelihood="bernoulli")
    data = est._tied_data(models, joint, datas, ["bernoulli", "bernoulli"], (1.0, 1.0))
    state = _rescal_coupled.vb_init(np.random.default_rng(0), data, priors, rank)
    state, _ = _rescal_coupled.vb_step(state, data, priors)  # compiled
    side = make_contractor(models[1], datas[1], "bernoulli")
    side_priors = gamma_priors(models[1], 1.0, 1.0)
    side_state, _ = vb.step(vb.init(np.random.default_rng(0), models[1], side, side_priors),
                            side, side_priors)
    relational_priors = _rescal_coupled.rescal_priors(priors)

    def run(step):
        start = time.perf_counter()
        for _ in range(n_sweeps):
            step()
        return (time.perf_counter() - start) / n_sweeps

    times = []
    for _ in range(repeats):
        whole = run(lambda: _rescal_coupled.vb_step(state, data, priors))
        relations = run(lambda: rescal.vb_step(_rescal_coupled.rescal_part(state),
                                               data.relational, relational_priors))
        attributes = run(lambda: vb.step(side_state, side, side_priors))
        times.append((whole, relations + attributes))
    whole = statistics.median(t[0] for t in times)
    parts = statistics.median(t[1] for t in times)
    print(f"Kinships RESCAL rank {rank} with attributes: coupled {whole * 1e3:.1f} ms a sweep, "
          f"parts alone {parts * 1e3:.1f} ms: ratio {whole / parts:.2f}", flush=True)


#: Kinships' relations with the person factor coupled to the attributes, by
#: CP on both person axes (without a tie of the two person factors, each
#: takes the attributes as its own data) and by RESCAL (one person factor,
#: tied).
KINSHIPS_COUPLED = {"cp": (("ir,jr,kr->ijk", "ir,rf->if", "jr,rf->jf"), None),
                    "rescal": (("ia,jb,abk->ijk", "ia,af->if"), {1: 0})}


def _kinships_fit(structure, tensors, masks, rank, mean, coupled):
    """One fit of the relations (``coupled=False``) or of relations and
    attributes, with the choices of ``bench.py binary-links``: Bernoulli–Poisson,
    prior shape 0.3 (CP, 3 restarts) or 0.1 (RESCAL, 1 restart from EM's
    mode), each factor's prior mean making the prior mean of X̂ the data's."""
    from sklearn_pltf import BayesianRESCAL, CoupledPLTF

    models, tied = KINSHIPS_COUPLED[structure]
    shape, n_init, terms = (0.1, 1, rank ** 2) if structure == "rescal" else (0.3, 3, rank)
    rate = shape / (mean / terms) ** (1 / 3)  # X-hat: `terms` products of three factors
    if coupled:
        return CoupledPLTF(models, rank, likelihood="bernoulli", prior_shape=shape,
                           prior_rate=rate, n_init=n_init, random_state=0,
                           tied_factors=tied).fit(tensors, mask=masks)
    if structure == "rescal":
        return BayesianRESCAL(rank, likelihood="bernoulli", prior_shape=shape, prior_rate=rate,
                              n_init=n_init, random_state=0).fit(
                                  np.where(masks[0], tensors[0], np.nan))
    return CoupledPLTF(models[:1], rank, likelihood="bernoulli", prior_shape=shape,
                       prior_rate=rate, n_init=n_init, random_state=0).fit(tensors[:1],
                                                                           mask=masks[:1])


def bench_kinships(structure="rescal", rank=20, n_splits=10, n_cold=10):
    """AUC-PR on Kinships' relations alone and coupled with the attributes
    (``structure`` "cp" or "rescal"): 10 folds over the entries off the
    diagonal, and cold start (every relation of one person, to and from,
    held out) for ``n_cold`` people drawn with seed 0."""
    import warnings

    from sklearn.metrics import average_precision_score

    from sklearn_pltf.datasets import load_kinships_attributes, off_diagonal_mask
    from sklearn_pltf.model_selection import EntryKFold

    kinships = load_kinships_attributes()
    X, Y = kinships.data.astype(float), kinships.attributes.astype(float)
    observed = off_diagonal_mask(X.shape)
    mean = float(X[observed].mean())
    people = np.random.default_rng(0).choice(X.shape[0], n_cold, replace=False)
    protocols = {"10-fold": [test for _, test in
                             EntryKFold(n_splits, random_state=0).split(X, mask=observed)]}
    protocols["cold start"] = [np.argwhere(observed & ((np.arange(X.shape[0]) == p)[:, None, None]
                                                       | (np.arange(X.shape[1]) == p)[None, :, None]))
                               for p in people]
    tensors = [X] + [Y] * (len(KINSHIPS_COUPLED[structure][0]) - 1)
    for name, tests in protocols.items():
        scores = {"alone": [], "coupled": []}
        began = time.perf_counter()
        for test in tests:
            train = observed.copy()
            train[tuple(test.T)] = False
            truth = X[tuple(test.T)]
            masks = [train] + [None] * (len(tensors) - 1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for kind in scores:
                    fitted = _kinships_fit(structure, tensors, masks, rank, mean,
                                           coupled=kind == "coupled")
                    scores[kind].append(average_precision_score(truth,
                                                                fitted.predict_entries(test)))
        print(f"Kinships {name}, {structure} rank {rank}: AUC-PR alone "
              f"{np.mean(scores['alone']):.3f} (SD {np.std(scores['alone'], ddof=1):.3f}), "
              f"coupled with the attributes {np.mean(scores['coupled']):.3f} "
              f"(SD {np.std(scores['coupled'], ddof=1):.3f}); coupled higher on "
              f"{sum(c > a for a, c in zip(scores['alone'], scores['coupled']))} of "
              f"{len(tests)}; {time.perf_counter() - began:.0f} s "
              f"(per split alone / coupled: {np.round(scores['alone'], 3).tolist()} / "
              f"{np.round(scores['coupled'], 3).tolist()})", flush=True)


def bench_selection(n_datasets=10, ranks=(1, 2, 3, 4, 5), true_rank=3, shape=(60, 40, 20),
                    scale=1.0):
    """How often the evidence picks the model that drew the data: for
    ``n_datasets`` coupled and as many independent pairs (a count matrix
    and an attribute matrix over the same rows, rates ``scale`` times a
    product of Gamma(1, 1) factors), a grid over the rank and
    coupled-or-independent model strings by ``GridSearchCV`` with
    ``FullDataSplit``; beside it, the rank each matrix alone gets from the
    evidence of its own rank grid (what the independent model can find)."""
    import warnings

    from sklearn.model_selection import GridSearchCV

    from sklearn_pltf import CoupledPLTF
    from sklearn_pltf.model_selection import FullDataSplit

    coupled, independent = ("ir,jr->ij", "ir,rf->if"), ("ir,jr->ij", "ks,sf->kf")
    for drawn_coupled in (True, False):
        right_model = right_rank = 0
        chosen, alone = [], []
        for seed in range(n_datasets):
            rng = np.random.default_rng(seed)
            A = rng.gamma(1.0, 1.0, (shape[0], true_rank))
            B = rng.gamma(1.0, 1.0, (shape[1], true_rank))
            F = rng.gamma(1.0, 1.0, (true_rank, shape[2]))
            other = A if drawn_coupled else rng.gamma(1.0, 1.0, (shape[0], true_rank))
            tensors = [rng.poisson(scale * A @ B.T).astype(float),
                       rng.poisson(scale * other @ F).astype(float)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                search = GridSearchCV(CoupledPLTF(coupled, n_init=3, random_state=0),
                                      {"n_components": list(ranks),
                                       "models": [coupled, independent]},
                                      cv=FullDataSplit()).fit(tensors)
            right_model += search.best_params_["models"] == (coupled if drawn_coupled
                                                            else independent)
            right_rank += search.best_params_["n_components"] == true_rank
            chosen.append(search.best_params_["n_components"])
            alone.append(tuple(_rank_alone(tensor, string, ranks)
                               for tensor, string in zip(tensors, independent)))
        print(f"scale {scale}, drawn {'coupled' if drawn_coupled else 'independent'}: the "
              f"evidence chose the right model on {right_model} of {n_datasets}, the true rank "
              f"{true_rank} on {right_rank} of {n_datasets} (ranks chosen: {chosen}; each "
              f"matrix alone: {alone})", flush=True)


def _rank_alone(tensor, string, ranks):
    """The rank the evidence picks for one matrix fitted alone."""
    from sklearn_pltf import PLTF

    evidences = [PLTF(string, rank, n_init=3, random_state=0).fit(tensor).log_evidence_
                 for rank in ranks]
    return ranks[int(np.argmax(evidences))]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Coupled factorization benchmarks.")
    parser.add_argument("part", nargs="?", default="all",
                        choices=("all", "cost", "selection", "kinships"))
    parser.add_argument("--scale", type=float, nargs="+", default=[1.0, 3.0],
                        help="rate scales of the selection benchmark's data")
    parser.add_argument("--structure", nargs="+", default=["rescal", "cp"],
                        choices=("rescal", "cp"), help="Kinships' structures")
    args = parser.parse_args()
    if args.part in ("all", "cost"):
        bench_coupled()
        bench_coupled_tied()
    if args.part in ("all", "selection"):
        for scale in args.scale:
            bench_selection(scale=scale)
    if args.part in ("all", "kinships"):
        for structure in args.structure:
            bench_kinships(structure)
