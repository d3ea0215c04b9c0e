"""STI against the analytic evidence of the Gaussian additive model.

Run from the repository's root::

    python doc/validation/sti_analytic.py
    python doc/validation/sti_analytic.py --long    # true ranks 3, 5, 7 at 12,000 steps (hours)

The Gaussian additive model of Şimşekli et al. (ICASSP 2016),
x_n ~ N(θ_1 + ... + θ_R, σx²) with θ_r ~ N(μ, σθ²), has an analytic log
evidence at every rank R (the model and its SGLD target are the test
suite's, ``tests/_helpers.py``). 5000 points drawn at R = 3 (seed 3);
:func:`sklearn_pltf.evidence.sti_log_evidence` at ranks 1..10 with its
default ladder (40 temperatures) and 500 warm-up steps per temperature,
(a) with its default self-tuned length (``n_steps="auto"``: standard error
aimed at 1 nat) and (b) with 3000 kept steps per temperature; each estimate
against the exact value.

Writes ``doc/_static/validation/sti_analytic.png`` and ``sti_analytic.json``.

``--long``: data drawn at true ranks 3, 5 and 7 (seed the true rank), STI at
ranks 1..10 with 12,000 kept steps per temperature, each estimate against
the exact value, the largest distance per data set and whether the argmax
agrees wherever the exact best beats the runner-up by over 1 nat (the slow
test tier runs the true rank 3, ``tests/evidence/test_sti.py``). Writes
``sti_analytic_long.json``; the Validation page's
:ref:`validation-recorded-sti-analytic` records its numbers.
"""

from _setup import OUT, line, save_figure, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from _helpers import GaussianAdditiveTarget, draw_data, log_evidence  # noqa: E402

from sklearn_pltf.evidence import sti_log_evidence  # noqa: E402

TRUE_RANK = 3
RANKS = list(range(1, 11))
SETTINGS = {"self-tuned (default)": "auto", "3000 steps per temperature": 3000}


def plot(result, path):
    exact = np.array(result["exact"])
    top = exact.max()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    axes[0].plot(RANKS, exact - top, "k-", lw=1.5, label="exact")
    for (label, rows), offset, color, marker in zip(result["sti"].items(), (-0.12, 0.12),
                                                    ("C0", "C1"), ("o", "s")):
        estimate = np.array([r["estimate"] for r in rows])
        error = 2 * np.array([r["standard_error"] for r in rows])
        name = f"STI, {label}, ± 2 se"
        axes[0].errorbar(np.array(RANKS) + offset, estimate - top, yerr=error, fmt=marker,
                         color=color, capsize=2, ms=4, label=name)
        axes[1].errorbar(np.array(RANKS) + offset, estimate - exact, yerr=error, fmt=marker,
                         color=color, capsize=2, ms=4, label=name)
    for ax in axes:
        ax.axvline(TRUE_RANK, color="C3", ls="--", lw=1, label=f"true rank {TRUE_RANK}")
        ax.set_xticks(RANKS)
        ax.set_xlabel("rank R")
    axes[0].set_ylabel("log evidence − its exact maximum (nats)")
    axes[0].set_title("Gaussian additive model, 5000 points", fontsize=10)
    axes[0].legend(fontsize=8, loc="lower center")
    axes[1].axhline(0, color="k", lw=1)
    axes[1].set_ylabel("STI − exact log evidence (nats)")
    axes[1].set_title("The error, against its reported standard error", fontsize=10)
    axes[1].legend(fontsize=8, loc="lower right")
    save_figure(fig, path)


def long_study(true_ranks=(3, 5, 7), n_steps=12_000):
    """Every rank's estimate at ``n_steps`` kept steps per temperature on
    data drawn at each of ``true_ranks``."""
    summary = {}
    for true_rank in true_ranks:
        x = draw_data(np.random.default_rng(true_rank), true_rank)
        distances, estimates, exact = [], [], []
        for rank in RANKS:
            t0 = time.process_time()
            result = sti_log_evidence(np.random.default_rng(100 * true_rank + rank),
                                      GaussianAdditiveTarget(x, rank), n_steps=n_steps,
                                      n_warmup=500)
            exact.append(float(log_evidence(x, rank)))
            estimates.append(float(result.log_evidence))
            distances.append(estimates[-1] - exact[-1])
            line(true_rank=true_rank, rank=rank, exact=round(exact[-1], 3),
                 sti=round(estimates[-1], 3), se=round(float(result.standard_error), 3),
                 difference=round(distances[-1], 3),
                 cpu_seconds=round(time.process_time() - t0, 1))
        best, runner_up = np.sort(exact)[::-1][:2]
        summary[f"true rank {true_rank}"] = {
            "max_abs_difference": round(float(np.max(np.abs(distances))), 3),
            "argmax_agrees_where_clear": bool(best - runner_up <= 1.0
                                              or np.argmax(estimates) == np.argmax(exact))}
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true",
                        help="true ranks 3, 5 and 7 at 12,000 kept steps per temperature")
    if parser.parse_args().long:
        start = time.perf_counter()
        summary = long_study()
        print(json.dumps(summary, indent=1))
        write_json("sti_analytic_long", n_steps=12_000, summary=summary,
                   start=start)
        return
    start = time.perf_counter()
    x = draw_data(np.random.default_rng(TRUE_RANK), TRUE_RANK)
    exact = [float(log_evidence(x, rank)) for rank in RANKS]
    sti = {}
    for label, n_steps in SETTINGS.items():
        rows = []
        for rank in RANKS:
            t0 = time.process_time()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                estimate = sti_log_evidence(np.random.default_rng(100 * TRUE_RANK + rank),
                                            GaussianAdditiveTarget(x, rank), n_steps=n_steps,
                                            n_warmup=500)
            rows.append({"rank": rank, "estimate": round(float(estimate.log_evidence), 3),
                         "standard_error": round(float(estimate.standard_error), 3),
                         "difference": round(float(estimate.log_evidence) - exact[rank - 1], 3),
                         "cpu_seconds": round(time.process_time() - t0, 1),
                         "warnings": sorted({str(w.message)[:120] for w in caught})})
            print(label, rows[-1], flush=True)
        sti[label] = rows
    result = {"true_rank": TRUE_RANK, "n_points": int(x.size), "ranks": RANKS,
              "exact": [round(e, 3) for e in exact], "sti": sti}
    result["summary"] = {
        label: {"max_abs_difference": max(abs(r["difference"]) for r in rows),
                "within_2_se": sum(abs(r["difference"]) <= 2 * r["standard_error"] for r in rows),
                "argmax": RANKS[int(np.argmax([r["estimate"] for r in rows]))],
                "cpu_seconds": round(sum(r["cpu_seconds"] for r in rows), 1)}
        for label, rows in sti.items()}
    result["summary"]["exact_argmax"] = RANKS[int(np.argmax(exact))]
    plot(result, OUT / "sti_analytic.png")
    seconds = time.perf_counter() - start
    result["wall_seconds"] = round(seconds, 1)
    with open(OUT / "sti_analytic.json", "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["summary"], indent=1))
    print(f"wall time {seconds:.1f} s")


if __name__ == "__main__":
    main()
