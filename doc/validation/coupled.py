"""Coupled factorization: whether the evidence finds the structure that drew
the data, and Kinships' link prediction with and without its attributes.

Run from the repository's root (minutes for the selection, hours for
Kinships)::

    python doc/validation/coupled.py                 # both parts
    python doc/validation/coupled.py selection       # or one
    python doc/validation/coupled.py kinships --structure rescal

- ``selection``: for 10 coupled and 10 independent pairs (a 60 x 40 count
  matrix and a 60 x 20 attribute matrix over the same rows, rank 3, rates
  ``--scale`` times a product of Gamma(1, 1) factors), a grid over the rank
  and the coupled-or-independent model strings by ``GridSearchCV`` with
  ``FullDataSplit``; beside it, the rank each matrix alone gets from its
  own evidence.
- ``kinships``: AUC-PR on Kinships' relations alone and coupled with the
  attributes (CP on both person axes, or RESCAL's tie): 10 folds over the
  entries off the diagonal, and cold start (every relation of one person,
  to and from, held out) for 10 people.

The cost of a coupled sweep against its parts' is the benchmark suite's
(``python benchmarks/run.py coupled``). Writes
``doc/_static/validation/coupled.json``; the Validation page's
:ref:`validation-recorded-coupled` records its numbers.
"""

from _setup import line, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


#: Kinships' relations with the person factor coupled to the attributes, by
#: CP on both person axes (without a tie of the two person factors, each
#: takes the attributes as its own data) and by RESCAL (one person factor,
#: tied).
KINSHIPS_COUPLED = {"cp": (("ir,jr,kr->ijk", "ir,rf->if", "jr,rf->jf"), None),
                    "rescal": (("ia,jb,abk->ijk", "ia,af->if"), {1: 0})}


def _kinships_fit(structure, tensors, masks, rank, mean, coupled):
    """One fit of the relations (``coupled=False``) or of relations and
    attributes, with the choices of ``link_prediction_folds.py binary-links``:
    Bernoulli–Poisson, prior shape 0.3 (CP, 3 restarts) or 0.1 (RESCAL, 1
    restart from EM's mode), each factor's prior mean making the prior mean
    of X̂ the data's."""
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


def kinships(structure="rescal", rank=20, n_splits=10, n_cold=10):
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
        line(study="kinships", protocol=name, structure=structure, rank=rank,
             alone=np.round(scores["alone"], 4).tolist(),
             coupled=np.round(scores["coupled"], 4).tolist(),
             seconds=round(time.perf_counter() - began, 1))
        print(f"Kinships {name}, {structure} rank {rank}: AUC-PR alone "
              f"{np.mean(scores['alone']):.3f} (SD {np.std(scores['alone'], ddof=1):.3f}), "
              f"coupled with the attributes {np.mean(scores['coupled']):.3f} "
              f"(SD {np.std(scores['coupled'], ddof=1):.3f}); coupled higher on "
              f"{sum(c > a for a, c in zip(scores['alone'], scores['coupled']))} of "
              f"{len(tests)}; {time.perf_counter() - began:.0f} s "
              f"(per split alone / coupled: {np.round(scores['alone'], 3).tolist()} / "
              f"{np.round(scores['coupled'], 3).tolist()})", flush=True)


def selection(n_datasets=10, ranks=(1, 2, 3, 4, 5), true_rank=3, shape=(60, 40, 20),
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
        line(study="selection", scale=scale, drawn_coupled=drawn_coupled,
             right_model=int(right_model), right_rank=int(right_rank), ranks_chosen=chosen,
             ranks_alone=alone)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="part",
                        help="selection, kinships (default: both)")
    parser.add_argument("--scale", type=float, nargs="+", default=[1.0, 3.0],
                        help="rate scales of the selection's data")
    parser.add_argument("--structure", nargs="+", default=["rescal", "cp"],
                        choices=("rescal", "cp"), help="Kinships' structures")
    args = parser.parse_args()
    parts = args.parts or ["selection", "kinships"]
    if set(parts) - {"selection", "kinships"}:
        parser.error(f"unknown parts {sorted(set(parts) - {'selection', 'kinships'})}")
    start = time.perf_counter()
    if "selection" in parts:
        for scale in args.scale:
            selection(scale=scale)
    if "kinships" in parts:
        for structure in args.structure:
            kinships(structure)
    write_json("coupled", parts=parts, start=start)


if __name__ == "__main__":
    main()
