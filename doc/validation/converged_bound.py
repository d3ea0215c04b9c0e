"""The bound a fit returns at the defaults against the bound's limit.

Run from the repository's root (the plain runs to the limit take tens of
minutes)::

    python doc/validation/converged_bound.py
    python doc/validation/converged_bound.py "dense NMF"     # the workloads whose label starts so

The benchmark suite's workloads (``benchmarks/suite/_workloads.py``):
``BayesianNMF(20)`` on a dense 2000 x 1000 and a sparse 20000 x 5000 count
matrix, and ``PoissonCP(10)`` on the sparse 1000 x 1000 x 1000 tensor of
10^6 non-zeros, each at its defaults (SQUAREM, ``tol=0.1`` nats), against
the same fit continued (``tol=1e-9``) until the bound repeats or all but
stops, and a plain coordinate-ascent run (``acceleration=None``) from the
same start until its estimated distance is below 10^-3 nats (its gain per
iteration then is too). Each fit runs in a fresh process. How long these
fits take against the peers' is the benchmark suite's (``python
benchmarks/run.py nmf cp``).

Writes ``doc/_static/validation/converged_bound.json``; the Validation
page's :ref:`validation-recorded-fits` records its numbers.
"""

from _setup import line, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import functools  # noqa: E402
import multiprocessing  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from suite._workloads import dense_poisson_nmf, sparse_poisson_cp  # noqa: E402


def _fit(kind, X, **params):
    """One fit of ``BayesianNMF(20)`` (``kind`` "nmf") or ``PoissonCP(10)``:
    its seconds, iterations, bound and whether it converged."""
    from sklearn_pltf import BayesianNMF, PoissonCP

    est = BayesianNMF(20, random_state=0, **params) if kind == "nmf" else \
        PoissonCP(10, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        est.fit(X)
        seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 2), "iterations": int(est.n_iter_),
            "bound": float(est.lower_bound_), "converged": bool(est.converged_)}


def _in_fresh_process(fn, *args):
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def workloads():
    """label: (kind, data)."""
    T = sparse_poisson_cp((20000, 5000), 20, 500_000, random_state=0)
    return {
        "dense NMF 2000 x 1000, rank 20": ("nmf", dense_poisson_nmf(2000, 1000, 20,
                                                                    random_state=0)),
        "sparse NMF 20000 x 5000 (0.5%), rank 20": (
            "nmf", sp.csr_matrix((T.data, tuple(T.coords)), shape=T.shape)),
        "sparse CP 1000^3 (10^6 non-zeros), rank 10": (
            "cp", sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="the starts of the workload labels to run")
    args = parser.parse_args()
    start = time.perf_counter()
    summary = {}
    for label, (kind, X) in workloads().items():
        if args.only and not label.startswith(tuple(args.only)):
            continue
        default = _in_fresh_process(functools.partial(_fit, kind), X)
        # tol=1e-9, not 0: the loop stops where the bound repeats (or gains 1e-9
        # nats over 24 iterations), and the final fold-in, which stops each sample
        # at min(tol, 1e-6) relative, would run max_iter steps at 0.
        continued = _in_fresh_process(functools.partial(_fit, kind, tol=1e-9,
                                                        max_iter=100_000), X)
        plain = _in_fresh_process(functools.partial(_fit, kind, tol=1e-3, acceleration=None,
                                                    max_iter=100_000), X)
        line(workload=label, default=default, continued_to_1e_9=continued,
             plain_to_1e_3=plain)
        summary[label] = {"continued - default (nats)": continued["bound"] - default["bound"],
                          "plain - default (nats)": plain["bound"] - default["bound"]}
        print(label, summary[label], flush=True)
    write_json("converged_bound", summary=summary,
               start=start)


if __name__ == "__main__":
    main()
