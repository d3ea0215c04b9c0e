"""STI against the analytic evidence of the Gaussian additive model,
run through ``bench.py sti-analytic``.

The model of Şimşekli et al. (ICASSP 2016), whose evidence at every rank is
analytic (``tests/_helpers.py``): data drawn at each true rank, STI
at ranks 1..10 with 12,000 kept steps per temperature. Reported per rank: the
estimate, its standard error and its distance to the exact log evidence; per
dataset: the largest distance and whether the argmax matches wherever the
exact best beats the runner-up by over 1 nat. The slow test tier runs the
first dataset (true rank 3); the others live here for their time.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from _helpers import GaussianAdditiveTarget, draw_data, log_evidence  # noqa: E402

from sklearn_pltf.evidence import sti_log_evidence  # noqa: E402

RANKS = range(1, 11)


def bench_sti_analytic(true_ranks=(3, 5, 7), n_steps=12_000):
    summary = {}
    for true_rank in true_ranks:
        x = draw_data(np.random.default_rng(true_rank), true_rank)
        distances, estimates, exact = [], [], []
        for rank in RANKS:
            start = time.process_time()
            result = sti_log_evidence(np.random.default_rng(100 * true_rank + rank),
                                      GaussianAdditiveTarget(x, rank),
                                      n_steps=n_steps, n_warmup=500)
            seconds = time.process_time() - start
            truth = log_evidence(x, rank)
            exact.append(truth)
            estimates.append(result.log_evidence)
            distances.append(result.log_evidence - truth)
            print(json.dumps({"workload": "sti-analytic", "true_rank": true_rank, "rank": rank,
                              "exact": round(truth, 3), "sti": round(result.log_evidence, 3),
                              "se": round(float(result.standard_error), 3),
                              "difference": round(distances[-1], 3),
                              "cpu_seconds": round(seconds, 1)}), flush=True)
        best, runner_up = np.sort(exact)[::-1][:2]
        argmax_agrees = best - runner_up <= 1.0 or np.argmax(estimates) == np.argmax(exact)
        summary[f"true rank {true_rank}: largest |STI - exact| (nats, target < 1)"] = float(
            np.max(np.abs(distances)))
        summary[f"true rank {true_rank}: argmax agrees where clear (1 = yes)"] = float(argmax_agrees)
    return summary
