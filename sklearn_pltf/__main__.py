"""``python -m sklearn_pltf``: choose the structure, rank and prior by the
evidence, then predict held-out entries, on shipped data or your own.

Run with no options, it does this on the shipped Nations tensor (14 countries
x 14 countries x 55 relations, binary; :func:`~sklearn_pltf.datasets.load_nations`)
under the Bernoulli–Poisson likelihood. A country has no relation to itself,
so the diagonal x(i, i, k) is left out: missing in every fit and in no fold,
and all evidences are of the same entries.

1. Fit every candidate structure (CP, Tucker, RESCAL for a square relational
   tensor; NMF for a matrix) at every rank, with each prior shape (0.3, a
   sparse prior, and 1, an Exponential), by variational Bayes with three
   restarts run to a relative change of the bound below 1e-5, and print the
   log evidence (the VB bound) of each. The structure, rank and prior shape
   with the highest are chosen. Each prior's mean is set so that the prior
   mean of every entry of X̂ is the data's mean (rank x mean^3 = mean of X
   for CP). On 0/1 data the probit family competes too: RESCAL with signed
   factors through the probit link (``RESCAL-probit``,
   :class:`~sklearn_pltf.ProbitRESCAL` by VB, its prior shape that of the
   columns' relevances), whose bound is a probability of the same entries.
2. With that model, k-fold cross-validation over the observed entries (zeros
   included, :class:`~sklearn_pltf.model_selection.EntryKFold`): each fold is
   held out as missing, the rest fitted, the held-out entries ranked by their
   posterior probability of a link (the posterior mean for counts); print
   AUC-ROC and AUC-PR per fold and their mean.

With ``--ranks auto`` step 1 fits each structure and prior shape once, at
the top of its rank range, with automatic relevance determination
(``ard=True``): the evidence switches off the components the data do not
need, and the effective rank is printed beside the evidence; step 2 fits
that model, ARD included, on each fold.

``python -m sklearn_pltf --help`` lists the options: the data (a shipped
name, or a ``.npy``/``.npz`` file of your own, NaN marking missing entries),
the structures, ranks (or ``auto``) and prior shapes to compare, the number
of folds, ``--n-jobs``, the seed, and ``--plot FILE`` for the
evidence-against-rank figure (with ``--ranks auto``, the relevances).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from joblib import Parallel, delayed

from typing import Callable, NamedTuple

from . import BayesianNMF, BayesianRESCAL, PoissonCP, ProbitRESCAL, TuckerVB
from .estimators import check_ranks
from ._cli_data import load_data
from .metrics import link_prediction_auc
from .model_selection import EntryKFold

PRIOR_SHAPES = (0.3, 1.0)


class Structure(NamedTuple):
    """A candidate of step 1: its estimator, its default ranks, and how its
    prior is set (``build(rank, prior_shape, ...)`` gives the estimator)."""

    estimator: type
    ranks: range
    build: Callable
    #: Only for 0/1 data (a probit link).
    binary_only: bool = False


def _scaled_gamma_prior(terms):
    """The builder of a Bernoulli–Poisson or Poisson structure whose prior
    mean of each X̂ entry is the data's mean: ``terms(rank, ndim)`` gives
    the number of products summed into an entry and their factors (CP:
    rank and ndim), so each factor's prior mean is (mean / products)^(1 /
    factors)."""
    def build(estimator, X, rank, prior_shape, seed, *, likelihood, mean, n_init, ard):
        products, n_factors = terms(rank, X.ndim)
        factor_mean = (mean / products) ** (1.0 / n_factors)
        if not np.finfo(np.float64).tiny <= factor_mean < np.inf:  # mean / rank^k underflowed
            raise ValueError(
                f"the data's mean, {mean:.3g}, is too small for float64 to scale the prior of "
                f"{estimator.__name__} at rank {rank} to it (each factor's prior mean "
                "underflows); multiply the data by a constant.")
        return estimator(rank, likelihood=likelihood, prior_shape=prior_shape,
                         prior_rate=prior_shape / factor_mean, n_init=n_init, tol=1e-5,
                         random_state=seed, ard=ard)
    return build


def _probit_vb(estimator, X, rank, prior_shape, seed, *, likelihood, mean, n_init, ard):
    """The probit family by VB, whose bound is a probability of the same 0/1
    entries as the Bernoulli–Poisson bound: Φ sets its scale (no prior to
    scale to the mean), and ARD is always on (a relevance per column)."""
    return estimator(rank, method="vb", prior_shape=prior_shape, n_init=n_init,
                     random_state=seed)


#: ``name: Structure`` of the candidates the command compares.
STRUCTURES = {
    "CP": Structure(PoissonCP, range(1, 11), _scaled_gamma_prior(lambda r, d: (r, d))),
    "Tucker": Structure(TuckerVB, range(2, 5), _scaled_gamma_prior(lambda r, d: (r**d, d + 1))),
    # A(i, a) A(j, b) G(a, b, k): three factors, rank² terms.
    "RESCAL": Structure(BayesianRESCAL, range(1, 7), _scaled_gamma_prior(lambda r, d: (r**2, 3))),
    "NMF": Structure(BayesianNMF, range(1, 11), _scaled_gamma_prior(lambda r, d: (r, d))),
    "RESCAL-probit": Structure(ProbitRESCAL, range(1, 7), _probit_vb, binary_only=True),
}


def scaled_prior_model(X, structure, rank, prior_shape, seed, likelihood="bernoulli",
                       mean=None, n_init=3, ard=False):
    """The ``structure`` model at ``rank`` (:data:`STRUCTURES`): for the
    Gamma families, with the prior mean of each X̂ entry at the data's mean
    (``mean``, else ``X.mean()``) and, with ``ard``, a relevance per
    component learned by the evidence."""
    mean = data_mean(X) if mean is None else mean
    check_data_mean(mean)
    spec = STRUCTURES[structure]
    return spec.build(spec.estimator, X, rank, prior_shape, seed, likelihood=likelihood,
                      mean=mean, n_init=n_init, ard=ard)


def data_mean(values):
    """The mean of ``values``, infinite if their sum overflows float64
    (:func:`check_data_mean` refuses it), without a RuntimeWarning."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.mean(values))


def check_data_mean(mean):
    """Raise a ValueError naming the problem unless the data's mean, which
    every prior is scaled to, is a normal positive float64: the mean of
    values too small underflows (to 0: a prior rate of 1/0; or below the
    smallest normal number, where float64 loses its precision), and the sum
    of values too large overflows (a prior rate of 0)."""
    tiny = np.finfo(np.float64).tiny
    if tiny <= mean < np.inf:
        return
    if 0.0 <= mean < tiny:
        raise ValueError(
            f"the mean of the observed entries, {mean:.3g}, underflows float64 (it is below "
            f"its smallest normal number, {tiny:.3g}): the values are too small for the prior "
            "to be scaled to their mean; multiply the data by a constant.")
    raise ValueError(
        f"the mean of the observed entries is {mean} in float64 (their sum overflows): the "
        "values are too large for the prior to be scaled to their mean; divide the data by "
        "a constant.")


def structures_for(X, binary=False):
    """The structures that describe data of ``X``'s shape (RESCAL: relations
    among one set of entities, square in its first two axes; its probit
    family: also 0/1, ``binary``)."""
    names = ["NMF", "CP"] if X.ndim == 2 else ["CP", "Tucker"]
    if X.ndim <= 3 and X.shape[0] == X.shape[1]:
        names += ["RESCAL", "RESCAL-probit"]
    return [n for n in names if binary or not STRUCTURES[n].binary_only]


def default_structures(X, binary=False):
    """The structures compared unless ``--models`` names others: NMF for a
    matrix; CP, Tucker and (if square) RESCAL, by the Bernoulli–Poisson and
    (0/1 data) the probit family, for a tensor."""
    return ["NMF"] if X.ndim == 2 else structures_for(X, binary)


def _fit_one(X, mask, structure, rank, shape, settings):
    """The evidence of one fit, its seconds, and with ARD its relevances and
    effective rank."""
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a slowly converging restart still gives a bound
        fitted = scaled_prior_model(X, structure, rank, shape, **settings).fit(X, mask=mask)
    return (fitted.log_evidence_, time.perf_counter() - tic,
            (getattr(fitted, "relevance_", None), getattr(fitted, "effective_rank_", None)))


def _effective(effective_rank):
    """An ARD fit's effective rank as printed (Tucker: one per core index)."""
    if isinstance(effective_rank, dict):
        return "x".join(str(r) for r in effective_rank.values())
    return str(effective_rank)


def _time_left(done, total, elapsed):
    return f"~{elapsed / done * (total - done):.0f} s left" if done < total else "done"


def select_model(X, mask, candidates, prior_shapes, settings, n_jobs=None, relevances=None):
    """Step 1: the log evidence of every (structure, rank, prior shape),
    printed as each fit ends; returns ``{(structure, rank, shape): evidence}``.
    With ARD (``settings["ard"]``) each line also gives the effective rank,
    and ``relevances`` (a dict) receives each fit's relevances."""
    ard = settings.get("ard", False)
    print(f"{'model':>13}  {'rank':>4}  {'shape':>5}  {'log evidence':>13}  {'seconds':>7}"
          + ("  kept" if ard else ""))
    jobs = [(structure, rank, shape) for structure, rank in candidates for shape in prior_shapes]
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_fit_one)(X, mask, *job, settings) for job in jobs)
    evidence, start = {}, time.perf_counter()
    for done, (job, (value, seconds, (relevance, kept))) in enumerate(zip(jobs, results), 1):
        evidence[job] = value
        if relevances is not None and relevance is not None:
            relevances[job] = (relevance, kept)
        structure, rank, shape = job
        kept = f"  {_effective(kept):>4}" if ard else ""
        print(f"{structure:>13}  {rank:>4}  {shape:>5}  {value:>13.1f}  {seconds:>7.2f}{kept}"
              f"   ({_time_left(done, len(jobs), time.perf_counter() - start)})", flush=True)
    return evidence


def _score_fold(X, train, test, model, settings):
    tic = time.perf_counter()
    estimator = scaled_prior_model(X, *model, **settings)  # each fold its own estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, mask=train)
    return link_prediction_auc(estimator, X, test), time.perf_counter() - tic


def entry_folds(X, mask, n_splits, seed):
    """The ``(train, test)`` splits of step 2, or a ValueError saying why
    they cannot be scored: a test fold without a link or a non-link has no
    AUC."""
    values = X[mask]
    if n_splits > values.size:
        raise ValueError(f"--folds {n_splits}: there are only {values.size} observed entries.")
    folds = list(EntryKFold(n_splits, random_state=seed).split(X, mask=mask))
    n_links = int(np.count_nonzero(values))
    for train, test in folds:
        links = np.count_nonzero(X[tuple(np.asarray(test).T)])
        if links == 0 or links == len(test):
            raise ValueError(
                f"--folds {n_splits}: a held-out fold would hold no "
                f"{'link' if links == 0 else 'non-link'}, which an AUC needs; the data have "
                f"{n_links} links and {values.size - n_links} non-links among the observed "
                "entries. Use fewer folds.")
    return folds


def cross_validate(X, mask, model, settings, n_splits, n_jobs=None, folds=None):
    """Step 2: AUC-ROC and AUC-PR on each of ``n_splits`` folds of the
    observed entries of ``model`` (structure, rank, prior shape), printed as
    each fold ends (``folds``: :func:`entry_folds`, if already made)."""
    print(f"{'fold':>6}  {'held out':>8}  {'AUC-ROC':>7}  {'AUC-PR':>7}  {'seconds':>7}")
    if folds is None:
        folds = entry_folds(X, mask, n_splits, settings["seed"])
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_score_fold)(X, train, test, model, settings) for train, test in folds)
    scores, start = [], time.perf_counter()
    for fold, ((_, test), (auc, seconds)) in enumerate(zip(folds, results), 1):
        scores.append(auc)
        print(f"{fold:>6}  {len(test):>8}  {auc.roc_auc:>7.3f}  {auc.pr_auc:>7.3f}  "
              f"{seconds:>7.2f}   ({_time_left(fold, len(folds), time.perf_counter() - start)})",
              flush=True)
    return np.array(scores)


def plot_relevances(evidence, relevances, path):
    """Save each ARD fit's relevances, sorted, a bar chart per fit, its
    evidence in the title."""
    from .plotting import _pyplot

    plt = _pyplot()
    fig, axes = plt.subplots(1, len(relevances), figsize=(3.2 * len(relevances), 3.2),
                             squeeze=False)
    best = max(evidence, key=evidence.get)
    for ax, (job, (relevance, _)) in zip(axes[0], relevances.items()):
        values = (np.concatenate(list(relevance.values())) if isinstance(relevance, dict)
                  else relevance)
        ax.bar(np.arange(values.size), np.sort(values)[::-1],
               color="C1" if job == best else "C0")
        ax.set_title(f"{job[0]}, shape {job[2]}\nlog evidence {evidence[job]:.1f}",
                     fontsize="small")
        ax.set_xlabel("component (sorted)")
    axes[0][0].set_ylabel("relevance (prior mean)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_evidence_by_rank(evidence, path):
    """Save the evidence against the rank, a curve per structure and prior shape."""
    from .plotting import _pyplot, plot_evidence

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    best = max(evidence, key=evidence.get)
    for structure, shape in dict.fromkeys((s, a) for s, _, a in evidence):
        ranks = [r for s, r, a in evidence if (s, a) == (structure, shape)]
        values = [evidence[structure, r, shape] for r in ranks]
        plot_evidence(ranks, values, ax=ax, label=f"{structure}, prior shape {shape}",
                      mark_best=(structure, shape) == best[::2])
    ax.set_xticks(sorted({r for _, r, _ in evidence}))
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize="small")
    ax.set_title(f"Chosen: {best[0]}, rank {best[1]}, prior shape {best[2]}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_pltf",
        description="Choose a factorization's structure, rank and prior by the log evidence, "
                    "then predict held-out entries by k-fold cross-validation.",
        epilog="Example: python -m sklearn_pltf --data counts.npz --models CP,Tucker "
               "--ranks 1-6 --folds 5 --n-jobs 2 --plot evidence.png")
    parser.add_argument("--data", default="nations", metavar="NAME|FILE",
                        help="'nations', 'kinships' or 'umls' (shipped, binary relations), or a .npy "
                             "or .npz file of non-negative counts or 0/1 links with at least "
                             "2 axes; NaN marks a missing entry (default: nations)")
    parser.add_argument("--key", help="the array's name inside a .npz file holding several")
    parser.add_argument("--exclude-diagonal", action="store_true",
                        help="treat the entries x(i, i, ...) as missing (self-relations); "
                             "always on for the shipped relational data")
    parser.add_argument("--models", help="comma-separated structures among CP, Tucker, RESCAL, "
                                         "NMF (default: those that fit the data's shape)")
    parser.add_argument("--ranks", type=_ranks, metavar="RANKS",
                        help="ranks to compare, as 1-10 or 2,4,8 (default: CP and NMF 1-10, "
                             "Tucker 2-4, RESCAL 1-6), or auto: one fit per structure at the "
                             "top of its range, with automatic relevance determination")
    parser.add_argument("--prior-shapes", type=_floats, default=PRIOR_SHAPES, metavar="SHAPES",
                        help="comma-separated Gamma prior shapes to compare (default: 0.3,1)")
    parser.add_argument("--likelihood", choices=("auto", "bernoulli", "poisson"), default="auto",
                        help="auto: bernoulli for 0/1 data, else poisson")
    parser.add_argument("--restarts", type=_positive_int, default=3,
                        help="VB restarts per fit (default: 3)")
    parser.add_argument("--folds", type=_non_negative_int, default=10,
                        help="folds of the link prediction; 0 skips it (default: 10)")
    parser.add_argument("--n-jobs", type=_n_jobs, default=None,
                        help="fits run in parallel (joblib; -1: every core)")
    parser.add_argument("--seed", type=_seed, default=0,
                        help="random seed, 0 to 2**32 - 1 (default: 0)")
    parser.add_argument("--plot", metavar="FILE",
                        help="save the evidence-against-rank figure to FILE (needs matplotlib)")
    return parser


def main(argv=None, *, candidates=None):
    """Run the command with arguments ``argv`` (default: the command line).
    ``candidates``, a list of ``(structure, rank)``, replaces ``--models``
    and ``--ranks``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        data = load_data(args.data, key=args.key, exclude_diagonal=args.exclude_diagonal)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(str(exc))
    X, observed = data.X, data.observed
    binary = bool(np.isin(X[observed], (0, 1)).all())
    likelihood = args.likelihood if args.likelihood != "auto" else (
        "bernoulli" if binary else "poisson")
    if likelihood == "bernoulli" and not binary:
        parser.error("--likelihood bernoulli needs 0/1 data; these hold other values.")
    if candidates is None:
        # The probit family is compared with the Bernoulli–Poisson one on 0/1 data.
        candidates = _candidates(parser, args, X, likelihood == "bernoulli")
    settings = dict(seed=args.seed, likelihood=likelihood, mean=data_mean(X[observed]),
                    n_init=args.restarts, ard=args.ranks == "auto")
    # Everything that can be refused is refused before the first fit: first
    # every prior scaled to the data's mean (data too small or too large for it).
    for structure, rank in candidates:
        for shape in args.prior_shapes:
            try:
                scaled_prior_model(X, structure, rank, shape, **settings)
            except ValueError as exc:
                parser.error(f"--data {args.data}: {exc}")
    folds = None
    if args.folds:
        try:
            folds = entry_folds(X, observed, args.folds, args.seed)
        except ValueError as exc:
            parser.error(str(exc))
    if args.plot:
        _check_plot_path(parser, args.plot)
    try:
        return _run(args, X, observed, candidates, settings, likelihood, folds, data, start)
    except (FloatingPointError, ValueError) as exc:  # a fit refused the data or the priors
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1


def _run(args, X, observed, candidates, settings, likelihood, folds, data, start):
    """Steps 1 and 2 on checked arguments (:func:`main`)."""
    print(data.summary)
    what = "rank by relevance (ARD)" if settings["ard"] else "rank"
    probit = any(STRUCTURES[name].binary_only for name, _ in candidates)
    print(f"Step 1: structure, {what} and prior shape by the log evidence (variational bound,\n"
          f"        {likelihood} likelihood{' or the probit link' if probit else ''}, "
          f"{args.restarts} restarts, Gamma priors scaled to the data's mean)")
    relevances = {}
    evidence = select_model(X, observed, candidates, args.prior_shapes, settings, args.n_jobs,
                            relevances)
    structure, rank, shape = max(evidence, key=evidence.get)
    if settings["ard"]:
        print(f"Chosen by the evidence: {structure} with ARD from rank {rank} "
              f"(kept {_effective(relevances[structure, rank, shape][1])}), prior shape {shape}")
    else:
        print(f"Chosen by the evidence: {structure}, rank {rank}, prior shape {shape}")
    if args.plot:
        if settings["ard"]:
            plot_relevances(evidence, relevances, args.plot)
            print(f"Relevances saved to {args.plot}")
        else:
            plot_evidence_by_rank(evidence, args.plot)
            print(f"Evidence against rank saved to {args.plot}")
    if args.folds:
        print(f"Step 2: {args.folds}-fold link prediction over the observed entries with that "
              "model")
        roc, pr = cross_validate(X, observed, (structure, rank, shape), settings, args.folds,
                                 args.n_jobs, folds).T
        share = float((X[observed] != 0).mean())
        print(f"Mean over the folds: AUC-ROC {roc.mean():.3f} (SD {roc.std(ddof=1):.3f}), "
              f"AUC-PR {pr.mean():.3f} (SD {pr.std(ddof=1):.3f}); links are "
              f"{share:.1%} of the entries, the AUC-PR of a random ranking")
    print(f"Done in {time.perf_counter() - start:.1f} s")
    return 0


def _candidates(parser, args, X, binary):
    names = default_structures(X, binary)
    if args.models:
        by_lower = {name.lower(): name for name in STRUCTURES}
        wanted = [m.strip().lower() for m in args.models.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in by_lower]
        if unknown:
            parser.error(f"--models: unknown {', '.join(unknown)}; choose among "
                         f"{', '.join(STRUCTURES)}.")
        names = [by_lower[m] for m in wanted]
        misfit = [n for n in names if n not in structures_for(X, binary)]
        if misfit:
            parser.error(f"--models: {', '.join(misfit)} does not describe these data (shape "
                         f"{X.shape}{'' if binary else ', not 0/1 under the Bernoulli likelihood'}"
                         f"); these do: {', '.join(structures_for(X, binary))}.")
    if args.ranks == "auto":  # one ARD fit per structure, at the top of its range
        return [(name, max(STRUCTURES[name].ranks)) for name in names]
    return [(name, rank) for name in names
            for rank in (args.ranks or STRUCTURES[name].ranks)]


def _ranks(text):
    if text.strip().lower() == "auto":
        return "auto"
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-"))
            ranks = [low, high] if low <= high else []  # listed once checked
        else:
            ranks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a range like 1-10 or a list like 2,4,8")
    if not ranks:
        raise argparse.ArgumentTypeError(f"{text!r} is an empty range: write it low-high")
    if min(ranks) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: ranks must be positive integers")
    try:  # the estimators' own limit, named as --ranks
        check_ranks(max(ranks), name="--ranks")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return list(range(low, high + 1)) if "-" in text else ranks


def _floats(text):
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers")
    if not values or not all(np.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: prior shapes must be positive and finite")
    return values


def _seed(text):
    value = int(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{text!r}: a seed is an integer from 0 to 2**32 - 1")
    return value


def _n_jobs(text):
    value = int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 fits in parallel means nothing: give a positive "
                                         "number, or -1 for every core")
    return value


def _check_plot_path(parser, path):
    """Refuse ``--plot FILE`` before any fit if it cannot be written."""
    from pathlib import Path

    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        parser.error("--plot needs matplotlib: pip install 'sklearn-pltf[plot]'.")
    target = Path(path)
    if not target.parent.is_dir():
        parser.error(f"--plot {path}: the folder {target.parent} does not exist.")
    formats = FigureCanvasBase.get_supported_filetypes()
    if target.suffix.lstrip(".").lower() not in formats:
        parser.error(f"--plot {path}: name a file ending in one of "
                     f"{', '.join('.' + f for f in sorted(formats))}.")


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return value


def _non_negative_int(text):
    value = int(text)
    if value < 0 or value == 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 (no link prediction) or 2 or more")
    return value


if __name__ == "__main__":
    sys.exit(main())
