"""Hyperparameters by the evidence: one ARD fit against the grid over ranks.

Run from the repository's root (each part minutes to hours)::

    python doc/validation/ard.py rank        # Poisson NMF and CP: ARD vs the grid
    python doc/validation/ard.py gaussian    # Gaussian CP, 50% missing: GibbsNTF with ARD
    python doc/validation/ard.py links       # Nations, Kinships: RESCAL with ARD, 10 folds

**rank.** 20 data sets per family (true ranks 2–8, in turn): Poisson NMF
100 x 75 and Poisson CP 30 x 25 x 20, factors Gamma(1, 1)
(:func:`~sklearn_pltf.datasets.make_poisson_nmf`, ``make_poisson_cp``). One
fit at twice the true rank with ``ard=True`` (its ``effective_rank_``)
against the grid 1..2K by the VB evidence at the default prior; the seconds
of each, the grid's summed over its fits.

**gaussian.** 20 data sets (true ranks 2–8) of
:func:`~sklearn_pltf.datasets.make_gaussian_ntf` 20 x 15 x 10, noise 0.1,
half the entries missing: ``GibbsNTF(2K, ard=True)`` (2000 warm-up
iterations, 1000 draws, the variances' prior IG(1e-3, 1e-3)) against
``GibbsNTF(K)`` at the true rank without ARD
(its defaults, 500 + 1000); held-out RMSE on the missing entries' values and
the recovered rank.

**links.** The protocol of ``link_prediction_folds.py binary-links``: 10
folds of the off-diagonal entries, the diagonal missing in every fit. Bernoulli–Poisson
RESCAL with ``ard=True`` at a generous size, one fit per fold, no grid
(``LINK_SETTINGS``); Nations, Kinships and UMLS as the package ships them.

Each part writes ``doc/_static/validation/ard_<part>.json``; the Validation
page's :ref:`validation-recorded-ard` and :ref:`validation-recorded-links`
record their numbers.
"""

from _setup import line, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402


def rank_against_grid(n_datasets=20, families=("nmf", "cp")):
    """One ARD fit at 2K against the evidence grid over 1..2K, per data set."""
    from sklearn_pltf import BayesianNMF, PoissonCP
    from sklearn_pltf.datasets import make_poisson_cp, make_poisson_nmf

    summary = {}
    for family in families:
        right_ard = right_grid = 0
        seconds_ard = seconds_grid = 0.0
        for i in range(n_datasets):
            rank = 2 + i % 7
            if family == "nmf":
                X, _ = make_poisson_nmf(100, 75, rank, random_state=100 + i)
                estimator = BayesianNMF
            else:
                X, _ = make_poisson_cp((30, 25, 20), rank, random_state=200 + i)
                estimator = PoissonCP
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                ard = estimator(2 * rank, ard=True, random_state=0).fit(X)
                seconds = time.perf_counter() - start
                start = time.perf_counter()
                evidence = [estimator(k, random_state=0).fit(X).log_evidence_
                            for k in range(1, 2 * rank + 1)]
                grid_seconds = time.perf_counter() - start
            chosen = int(np.argmax(evidence)) + 1
            right_ard += ard.effective_rank_ == rank
            right_grid += chosen == rank
            seconds_ard += seconds
            seconds_grid += grid_seconds
            line(workload="ard-rank", family=family, dataset=i, true_rank=rank,
                 ard_rank=ard.effective_rank_, ard_seconds=round(seconds, 3),
                 ard_iterations=ard.n_iter_, grid_rank=chosen,
                 grid_seconds=round(grid_seconds, 3))
        summary[f"{family}: ARD right"] = f"{right_ard}/{n_datasets}"
        summary[f"{family}: grid right"] = f"{right_grid}/{n_datasets}"
        summary[f"{family}: ARD / grid seconds"] = round(seconds_ard / seconds_grid, 3)
        summary[f"{family}: seconds (ARD, grid)"] = (round(seconds_ard, 1),
                                                     round(seconds_grid, 1))
    return summary


def gaussian_ard(n_datasets=20, nonnegative=True, ard_warmup=2000, ard_draws=1000,
                   ard_hyper=1e-3):
    """GibbsNTF with ARD at 2K against GibbsNTF at the true rank, held-out RMSE."""
    from sklearn_pltf import GibbsNTF
    from sklearn_pltf.datasets import make_gaussian_ntf

    right, wins, ratios = 0, 0, []
    seconds_ard = seconds_true = 0.0
    for i in range(n_datasets):
        rank = 2 + i % 7
        X, _ = make_gaussian_ntf((20, 15, 10), rank, noise_std=0.1, missing_fraction=0.5,
                                 random_state=300 + i)
        full, _ = make_gaussian_ntf((20, 15, 10), rank, noise_std=0.1, random_state=300 + i)
        held_out = np.argwhere(np.isnan(X))
        truth = full[tuple(held_out.T)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            ard = GibbsNTF(2 * rank, ard=True, nonnegative=nonnegative, evidence=None,
                           n_warmup=ard_warmup, n_draws=ard_draws, hyper_shape=ard_hyper,
                           hyper_scale=ard_hyper, random_state=0).fit(X)
            seconds = time.perf_counter() - start
            start = time.perf_counter()
            plain = GibbsNTF(rank, nonnegative=nonnegative, evidence=None,
                             random_state=0).fit(X)
            plain_seconds = time.perf_counter() - start
        rmse_ard, rmse_plain = (float(np.sqrt(np.mean((est.predict_entries(held_out) - truth)
                                                      ** 2))) for est in (ard, plain))
        right += ard.effective_rank_ == rank
        wins += rmse_ard <= rmse_plain
        ratios.append(rmse_ard / rmse_plain)
        seconds_ard += seconds
        seconds_true += plain_seconds
        line(workload="ard-gaussian", nonnegative=nonnegative, dataset=i, true_rank=rank,
             ard_rank=ard.effective_rank_, rmse_ard=round(rmse_ard, 5),
             rmse_true_rank=round(rmse_plain, 5), ard_seconds=round(seconds, 2),
             true_rank_seconds=round(plain_seconds, 2))
    label = "non-negative" if nonnegative else "signed"
    return {f"Gaussian {label}: ARD rank right": f"{right}/{n_datasets}",
            f"Gaussian {label}: ARD RMSE <= true rank's": f"{wins}/{n_datasets}",
            f"Gaussian {label}: RMSE ratio ARD / true rank (median, max)":
                (round(float(np.median(ratios)), 4), round(float(np.max(ratios)), 4)),
            f"Gaussian {label}: seconds (ARD, true rank)": (round(seconds_ard, 1),
                                                            round(seconds_true, 1))}


#: One fit per fold: its size (generous), start and prior shape per data set.
#: The shapes are those the evidence grid of ``link_prediction_folds.py binary-links`` chose
#: on its folds (Nations 0.3 or 0.1, Kinships 0.1 on every fold);
#: ``--prior-shape`` sets one for all.
LINK_SETTINGS = {"nations": dict(n_components=10, init="random", prior_shape=0.3),
                 "kinships": dict(n_components=40, init="auto", prior_shape=0.1),
                 "umls": dict(n_components=30, init="auto", prior_shape=0.3)}


def rescal_links(datasets=("nations", "kinships"), prior_shape=None, n_splits=10):
    """10-fold AUC of Bernoulli–Poisson RESCAL with ARD, one fit per fold."""
    from sklearn_pltf import BayesianRESCAL
    from sklearn_pltf.datasets import load_kinships, load_nations, load_umls, off_diagonal_mask
    from sklearn_pltf.metrics import link_prediction_auc
    from sklearn_pltf.model_selection import EntryKFold

    summary = {}
    for name in datasets:
        X = {"nations": load_nations, "kinships": load_kinships,
             "umls": load_umls}[name]().data.astype(float)
        settings = dict(LINK_SETTINGS[name])
        if prior_shape is not None:
            settings["prior_shape"] = prior_shape
        folds = EntryKFold(n_splits, random_state=0).split(X, mask=off_diagonal_mask(X.shape))
        scores, ranks = [], []
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for train, test in folds:
                est = BayesianRESCAL(likelihood="bernoulli", ard=True, random_state=0,
                                     **settings).fit(X, mask=train)
                scores.append(link_prediction_auc(est, X, test))
                ranks.append(est.effective_rank_)
        roc, pr = np.array(scores).T
        line(workload="ard-links", dataset=name, **settings, roc_auc=round(roc.mean(), 4),
             pr_auc=round(pr.mean(), 4), pr_auc_sd=round(pr.std(ddof=1), 4),
             effective_ranks=ranks, seconds=round(time.perf_counter() - start, 1))
        summary[f"{name} RESCAL ARD: AUC-ROC / AUC-PR"] = (round(roc.mean(), 3),
                                                           round(pr.mean(), 3))
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["rank", "gaussian", "links"])
    parser.add_argument("--datasets", type=int, default=20)
    parser.add_argument("--signed", action="store_true", help="gaussian: signed factors")
    parser.add_argument("--links", nargs="+", default=["nations", "kinships"],
                        choices=["nations", "kinships", "umls"])
    parser.add_argument("--prior-shape", type=float, default=None,
                        help="links: one prior shape for every data set")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.part == "rank":
        summary = rank_against_grid(args.datasets)
    elif args.part == "gaussian":
        summary = gaussian_ard(args.datasets, nonnegative=not args.signed)
    else:
        summary = rescal_links(args.links, args.prior_shape)
    for key, value in summary.items():
        print(f"{key}: {value}")
    write_json(f"ard_{args.part}", summary=summary,
               start=start)


if __name__ == "__main__":
    main()
