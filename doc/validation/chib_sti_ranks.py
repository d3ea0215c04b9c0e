"""Chib's estimate and STI over ranks: on the STI paper's Poisson NMF, and
how often Chib's picks the true rank of the Chib paper's Model II.

Run from the repository's root (hours; each option below is one of the
recorded runs)::

    python doc/validation/chib_sti_ranks.py sti-rank
    python doc/validation/chib_sti_ranks.py sti-rank --rates 1 --sti-steps 16000 --methods sti
    python doc/validation/chib_sti_ranks.py sti-rank --chib-blocks elements --methods chib
    python doc/validation/chib_sti_ranks.py chib-rank

- ``sti-rank``: the STI paper's 100 x 75 Poisson NMF, Exponential(rate)
  factors (rates 5 and 1), data drawn at rank 3: STI (``steps_per_temperature``
  kept steps, ``--sti-chains`` ladders), Chib (row or element blocks, seed
  the rank plus ``--chib-seed-offset``) and AIS at its defaults over ranks
  1..10, with their argmaxes and CPU seconds;
- ``chib-rank``: Model II, 10 x 5 x 8 counts from a rank-3 Poisson CP model,
  Chib's log evidence (element blocks, 2000 draws per run) over ranks 1..6.

``ti_mala_check.py`` checks the rate-1 data's evidence independently.
Writes ``doc/_static/validation/chib_sti_ranks.json``; the Validation
page's :ref:`validation-recorded-chib-sti` records its numbers.
"""

from _setup import chosen_parts, line, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from sklearn_pltf import BayesianNMF  # noqa: E402


def chib_rank(n_datasets):
    """The paper's Model II: 10 x 5 x 8 counts from a rank-3 Poisson CP model
    (Gamma(1, 1) factors); Chib's log evidence (element blocks, 2000 draws per
    run) over ranks 1..6, and how often it is highest at 3."""
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.evidence import chib_log_evidence
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.engine.model import Model

    wins = 0
    for dataset in range(n_datasets):
        rng = np.random.default_rng(100 + dataset)
        truth = [rng.gamma(1.0, 1.0, size=(n, 3)) for n in (10, 5, 8)]
        X = rng.poisson(np.einsum("ir,jr,kr->ijk", *truth)).astype(float)
        evidence = {}
        for rank in range(1, 7):
            model = Model.parse("ir,jr,kr->ijk").bind(X.shape, {"r": rank})
            contractor = make_contractor(model, as_observed_tensor(X))
            priors = gamma_priors(model, 1.0, 1.0)
            estimate = chib_log_evidence(np.random.default_rng(0), model, contractor, priors,
                                         n_draws=2000)
            evidence[rank] = estimate.log_evidence
        best = max(evidence, key=evidence.get)
        wins += best == 3
        line(workload="chib-rank", dataset=dataset, chosen=best, evidence=evidence)
    return {"Chib picks rank 3 of 1..6 on Model II, fraction of datasets": wins / n_datasets}


def poisson_nmf_data(rate, true_rank, seed=0, shape=(100, 75)):
    """Counts from Poisson NMF with Exponential(rate) factors (Gamma shape 1)."""
    rng = np.random.default_rng(seed)
    W = rng.gamma(1.0, 1.0 / rate, size=(shape[0], true_rank))
    H = rng.gamma(1.0, 1.0 / rate, size=(true_rank, shape[1]))
    return rng.poisson(W @ H).astype(float)


def _chib_nmf(X, rank, rate, n_draws, blocks="rows", seed=None):
    """Chib's estimate for Poisson NMF (seed = rank unless given): row blocks
    (one clamped Gibbs run per factor row, 175 runs at every rank) or element
    blocks (175 x rank runs; the better estimator above the data's rank)."""
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.evidence import chib_log_evidence
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.engine.model import Model

    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": rank})
    contractor = make_contractor(model, as_observed_tensor(X))
    priors = gamma_priors(model, 1.0, rate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # label permutations beyond the limit at rank >= 7
        rng = np.random.default_rng(rank if seed is None else seed)
        return chib_log_evidence(rng, model, contractor, priors, n_draws=n_draws, n_warmup=500,
                                 blocks=blocks)


def sti_rank(rates, true_rank, ranks, chib_draws, sti_chains=1, methods=("sti", "chib"),
             sti_steps=1000, chib_blocks="rows", chib_seed_offset=0):
    """The paper's Poisson NMF, 100 x 75, Exponential(rate) priors, data
    drawn at ``true_rank``: STI (estimator defaults but ``sti_steps`` kept
    steps per temperature, ``sti_chains`` independent ladders) and Chib
    (``chib_blocks``, seed = rank + ``chib_seed_offset``) over ``ranks``,
    their curves, argmaxes and total times.
    Times are wall seconds and CPU seconds of this process (threads
    included), the CPU time being the fair one on a machine shared with
    other jobs."""
    summary = {}
    for rate in rates:
        X = poisson_nmf_data(rate, true_rank)
        curves = {m: {} for m in methods}
        cpu = {m: 0.0 for m in methods}
        for rank in ranks:
            fields = {}
            if "sti" in methods:
                start, start_cpu = time.perf_counter(), time.process_time()
                est = BayesianNMF(rank, method="sgld", prior_shape=1.0, prior_rate=rate,
                                  n_init=sti_chains, steps_per_temperature=sti_steps,
                                  random_state=rank).fit(X)
                seconds = time.process_time() - start_cpu
                curves["sti"][rank], cpu["sti"] = est.log_evidence_, cpu["sti"] + seconds
                fields.update(sti=est.log_evidence_, sti_error=est.log_evidence_error_,
                              sti_seconds=time.perf_counter() - start, sti_cpu_seconds=seconds)
            if "chib" in methods:
                start, start_cpu = time.perf_counter(), time.process_time()
                estimate = _chib_nmf(X, rank, rate, chib_draws, chib_blocks, rank + chib_seed_offset)
                seconds = time.process_time() - start_cpu
                curves["chib"][rank], cpu["chib"] = estimate.log_evidence, cpu["chib"] + seconds
                fields.update(chib=estimate.log_evidence, chib_error=estimate.standard_error,
                              chib_seconds=time.perf_counter() - start, chib_cpu_seconds=seconds)
            if "ais" in methods:  # at its defaults, through the estimator (VB fit included)
                start, start_cpu = time.perf_counter(), time.process_time()
                est = BayesianNMF(rank, evidence="ais", prior_shape=1.0, prior_rate=rate,
                                  random_state=rank).fit(X)
                seconds = time.process_time() - start_cpu
                curves["ais"][rank], cpu["ais"] = est.log_evidence_, cpu["ais"] + seconds
                fields.update(ais=est.log_evidence_, ais_error=est.log_evidence_error_,
                              ais_seconds=time.perf_counter() - start, ais_cpu_seconds=seconds)
            line(workload="sti-rank", rate=rate, rank=rank, **fields)
        for method, curve in curves.items():
            summary[f"rate {rate:g}: {method} argmax (truth {true_rank})"] = float(max(curve, key=curve.get))
            summary[f"rate {rate:g}: {method} CPU seconds, ranks {ranks[0]}..{ranks[-1]}"] = cpu[method]
        if {"sti", "chib"} <= set(methods):
            summary[f"rate {rate:g}: STI CPU time / Chib CPU time"] = cpu["sti"] / cpu["chib"]
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="part",
                        help="sti-rank, chib-rank (default: both)")
    parser.add_argument("--chib-datasets", type=int, default=5)
    parser.add_argument("--rates", type=float, nargs="+", default=[5.0, 1.0])
    parser.add_argument("--true-rank", type=int, default=3)
    parser.add_argument("--ranks", type=int, nargs="+", default=list(range(1, 11)))
    parser.add_argument("--chib-draws", type=int, default=2000)
    parser.add_argument("--sti-chains", type=int, default=1,
                        help="independent STI ladders per rank (n_init)")
    parser.add_argument("--methods", nargs="+", choices=["sti", "chib", "ais"],
                        default=["sti", "chib"], help="the estimators of sti-rank")
    parser.add_argument("--chib-blocks", choices=["rows", "elements"], default="rows",
                        help="Chib's blocks in sti-rank")
    parser.add_argument("--chib-seed-offset", type=int, default=0,
                        help="sti-rank: Chib's seed is the rank plus this (10 for the second runs)")
    parser.add_argument("--sti-steps", type=int, default=1000,
                        help="sti-rank: STI's kept steps per temperature (steps_per_temperature)")
    args = parser.parse_args()
    known = ("sti-rank", "chib-rank")
    parts = chosen_parts(parser, args.parts, known)
    start = time.perf_counter()
    summary = {}
    if "sti-rank" in parts:
        summary.update(sti_rank(args.rates, args.true_rank, args.ranks, args.chib_draws,
                                args.sti_chains, args.methods, args.sti_steps, args.chib_blocks,
                                args.chib_seed_offset))
    if "chib-rank" in parts:
        summary.update(chib_rank(args.chib_datasets))
    write_json("chib_sti_ranks", parts=parts, settings=vars(args), summary=summary,
               start=start)


if __name__ == "__main__":
    main()
