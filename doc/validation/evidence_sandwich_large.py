"""The evidence estimators against a bidirectional Monte Carlo sandwich on
data too large for the exact evidence.

Run from the repository's root (hours per data set with Chib's estimate;
``--methods`` chooses the estimators)::

    python doc/validation/evidence_sandwich_large.py
    python doc/validation/evidence_sandwich_large.py --cases model2 --methods vb ais sti

Data simulated from the model's prior, so the factors that drew them are an
exact posterior sample at the generating rank. There, bidirectional Monte
Carlo (Grosse, Ghahramani & Adams 2015) brackets log p(X): forward AIS is a
stochastic lower bound, reverse AIS from the generating factors a stochastic
upper one. At other ranks there is no exact posterior sample, and the
reference is forward AIS at the sandwich's settings (a lower bound only).

Each estimator runs through its estimator at default settings, with its CPU
seconds: the VB bound (``method="vb"``), AIS (``method="gibbs"``, whose
default evidence it is on dense data), STI (``method="sgld"``) and Chib
(``method="gibbs", evidence="chib"``; one clamped run per factor element, so
hours per dataset on the 100 x 75 matrices: pass ``--sandwich-methods`` to
choose). The Gaussian NTF case (``GibbsNTF`` at its default priors, data
drawn from that prior) has AIS and Chib only, and its sandwich is Gaussian
AIS forward and reverse. The exact evidence of small data is
``evidence_sandwich.py``'s.

Writes ``doc/_static/validation/evidence_sandwich_large.json``; the
Validation page's :ref:`validation-recorded-sandwich` records its numbers.
"""

from _setup import line, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from sklearn_pltf import BayesianNMF, GibbsNTF, PoissonCP  # noqa: E402
from sklearn_pltf.engine._data import as_observed_tensor  # noqa: E402
from sklearn_pltf.engine.model import Model  # noqa: E402
from sklearn_pltf.evidence import (  # noqa: E402
    ais_log_evidence,
    gaussian_ais_log_evidence,
    gaussian_reverse_ais_log_evidence,
    reverse_ais_log_evidence,
)
from sklearn_pltf.evidence._ais import posterior_start  # noqa: E402
from sklearn_pltf.inference import gaussian  # noqa: E402
from sklearn_pltf.inference._common import gamma_priors  # noqa: E402

#: name: (model string, shape, generating rank, prior rate, estimator)
CASES = {
    "nmf-rate5": ("ik,kj->ij", (100, 75), 3, 5.0, BayesianNMF),  # the STI paper's
    "nmf-rate1": ("ik,kj->ij", (100, 75), 3, 1.0, BayesianNMF),
    "model2": ("ir,jr,kr->ijk", (10, 5, 8), 3, 1.0, PoissonCP),  # the Chib paper's Model II
    # Gaussian NTF at GibbsNTF's default priors (no prior rate: a Gaussian model)
    "gaussian-ntf": ("ir,jr,kr->ijk", (20, 15, 10), 3, None, GibbsNTF),
}

METHODS = {
    "vb": dict(method="vb"),
    "ais": dict(method="gibbs"),
    "sti": dict(method="sgld"),
    "chib": dict(method="gibbs", evidence="chib"),
}
#: GibbsNTF's estimators (it has no VB and no SGLD)
GAUSSIAN_METHODS = {"ais": dict(evidence="ais"), "chib": dict(evidence="chib")}


def simulate(case, seed):
    """Data drawn from ``case``'s model at its generating rank (counts from
    Gamma(1, rate) factors; Gaussian NTF from its prior), and the factors
    that drew them."""
    spec, shape, rank, rate, _ = CASES[case]
    if rate is None:
        rng = np.random.default_rng(seed)
        truth = gaussian.sample_prior(rng, shape, rank, GibbsNTF()._priors())
        xhat = np.einsum(spec, *truth.factors)
        return xhat + rng.normal(0.0, np.sqrt(truth.noise_variance), shape), list(truth.factors)
    model = Model.parse(spec).bind(shape, {c: rank for c in _latent(spec)})
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, 1.0 / rate, size=model.factor_shape(a))
               for a in range(model.n_factors)]
    xhat = np.einsum(spec, *factors)
    return rng.poisson(xhat).astype(float), factors


def _latent(spec):
    inputs, output = spec.split("->")
    return sorted(set(inputs.replace(",", "")) - set(output))


def reference(case, X, rank, seed, n_temperatures, exact_sample=None):
    """Forward AIS at ``n_temperatures`` (and reverse AIS from
    ``exact_sample`` when given), both from a Gamma fit to a Gibbs run's
    posterior marginals. Returns ``(lower, upper or None, cpu seconds)``."""
    spec, _, _, rate, estimator = CASES[case]
    if rate is None:
        return _gaussian_reference(X, rank, seed, n_temperatures, exact_sample)
    start_cpu = time.process_time()
    model = Model.parse(spec).bind(X.shape, {c: rank for c in _latent(spec)})
    priors = gamma_priors(model, 1.0, rate)
    data = as_observed_tensor(X)
    chain = estimator(rank, method="gibbs", evidence=None, prior_rate=rate, n_draws=2000,
                      random_state=seed).fit(X)
    start = posterior_start(model, [d.mean(axis=(0, 1)) for d in chain.draws_],
                            [np.exp(np.log(d).mean(axis=(0, 1))) for d in chain.draws_])
    rng = np.random.default_rng(seed)
    lower = ais_log_evidence(rng, model, data, priors, start=start,
                             n_temperatures=n_temperatures)
    upper = None
    if exact_sample is not None:
        upper = reverse_ais_log_evidence(rng, model, data, priors, dict(enumerate(exact_sample)),
                                         start=start, n_temperatures=n_temperatures)
    return lower, upper, time.process_time() - start_cpu


def _gaussian_reference(X, rank, seed, n_temperatures, exact_sample):
    """:func:`reference` for Gaussian NTF: forward (and reverse) Gaussian AIS
    from a Gamma fit to a 2000-draw chain's factor marginals."""
    start_cpu = time.process_time()
    chain = GibbsNTF(rank, evidence=None, n_draws=2000, random_state=seed).fit(X)
    draws = [d[0] for d in chain.draws_]
    start = posterior_start(chain.model_, [d.mean(axis=0) for d in draws],
                            [np.exp(np.log(d).mean(axis=0)) for d in draws])
    data, priors = as_observed_tensor(X, allow_negative=True), chain._priors()
    rng = np.random.default_rng(seed)
    lower = gaussian_ais_log_evidence(rng, data, rank, priors, start,
                                      n_temperatures=n_temperatures)
    upper = None
    if exact_sample is not None:
        upper = gaussian_reverse_ais_log_evidence(rng, data, rank, priors, exact_sample, start,
                                                  n_temperatures=n_temperatures)
    return lower, upper, time.process_time() - start_cpu


def methods_of(case, methods):
    """The requested ``methods`` that ``case``'s estimator has."""
    return [m for m in methods if CASES[case][3] is not None or m in GAUSSIAN_METHODS]


def run_estimator(case, X, rank, method, seed):
    """``(log evidence, standard error or None, cpu seconds)`` of one default fit."""
    _, _, _, rate, estimator = CASES[case]
    start_cpu = time.process_time()
    if rate is None:
        est = estimator(rank, random_state=seed, **GAUSSIAN_METHODS[method]).fit(X)
        return est.log_evidence_, est.log_evidence_error_, time.process_time() - start_cpu
    est = estimator(rank, prior_rate=rate, random_state=seed, **METHODS[method]).fit(X)
    return est.log_evidence_, getattr(est, "log_evidence_error_", None), \
        time.process_time() - start_cpu


def sandwich(cases, n_datasets, methods, n_temperatures, extra_ranks=3,
                            first_dataset=0):
    """For each case and dataset (seeds ``1000 + first_dataset`` on), fitted
    ranks 1 .. truth + ``extra_ranks``:
    the reference, each estimator at its defaults, their distances from the
    reference and CPU seconds; the summary counts how often each
    estimator's argmax over ranks is the reference's."""
    summary, requested = {}, methods
    for case in cases:
        methods = methods_of(case, requested)
        truth = CASES[case][2]
        ranks = range(1, truth + extra_ranks + 1)
        agree = {m: 0 for m in methods}
        seconds = {m: 0.0 for m in ("reference", *methods)}
        for dataset in range(first_dataset, first_dataset + n_datasets):
            X, factors = simulate(case, seed=1000 + dataset)
            curves = {m: {} for m in ("reference", *methods)}
            for rank in ranks:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    lower, upper, cpu = reference(case, X, rank, rank, n_temperatures,
                                                  factors if rank == truth else None)
                    fields = dict(case=case, dataset=dataset, rank=rank,
                                  counts=X.sum(), lower=lower.log_evidence,
                                  lower_error=lower.standard_error,
                                  upper=None if upper is None else upper.log_evidence,
                                  upper_error=None if upper is None else upper.standard_error,
                                  reference_cpu=cpu)
                    curves["reference"][rank] = lower.log_evidence
                    seconds["reference"] += cpu
                    for method in methods:
                        value, error, cpu = run_estimator(case, X, rank, method, rank)
                        curves[method][rank] = value
                        seconds[method] += cpu
                        fields.update({method: value, f"{method}_error": error,
                                       f"{method}_minus_lower": value - lower.log_evidence,
                                       f"{method}_cpu": cpu})
                fields["warnings"] = sorted({str(w.message)[:60] for w in caught})
                line(**fields)
            best = max(curves["reference"], key=curves["reference"].get)
            for method in methods:
                agree[method] += max(curves[method], key=curves[method].get) == best
            line(case=case, dataset=dataset, argmax={
                m: max(c, key=c.get) for m, c in curves.items()})
        for method in methods:
            summary[f"{case}: {method} argmax = reference's, fraction"] = agree[method] / n_datasets
        for method, total in seconds.items():
            summary[f"{case}: {method} CPU s per dataset"] = total / n_datasets
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--datasets", type=int, default=3)
    parser.add_argument("--first-dataset", type=int, default=0,
                        help="the first dataset's index (seed 1000 + index)")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS),
                        default=["vb", "ais", "sti", "chib"])
    parser.add_argument("--temperatures", type=int, default=4000,
                        help="rungs of the reference's forward and reverse AIS")
    args = parser.parse_args()
    start = time.perf_counter()
    summary = sandwich(args.cases, args.datasets, args.methods, args.temperatures,
                       first_dataset=args.first_dataset)
    write_json("evidence_sandwich_large", summary=summary,
               start=start)


if __name__ == "__main__":
    main()
