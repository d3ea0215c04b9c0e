"""A fair neighbour: parallel kernel calls beside one other busy process.

Each case runs in a fresh process, with numba's OpenMP threads waiting
passively (the package's default, ``OMP_WAIT_POLICY=PASSIVE``) or spinning
(``ACTIVE``, OpenMP's own default), on an idle machine and beside one
process that keeps a core busy. Reported: the median seconds of a call, and
the ratio busy / idle per wait policy (the target is at most 3).

Cases: ``predict_entries`` of a fitted Bernoulli–Poisson RESCAL on Nations
(1,000 entries; its draws run a parallel kernel), the Gamma moments of
2^18 elements (one parallel kernel), and one VB sweep of a sparse CP fit
(10^5 non-zeros, rank 10: the entry kernels).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

_CASE = r"""
import json, sys, time, warnings
import numpy as np
import sparse
warnings.simplefilter("ignore")
from sklearn_pltf import BayesianRESCAL, PoissonCP
from sklearn_pltf.datasets import load_nations
from sklearn_pltf.inference._gamma import gamma_moments

def median_seconds(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter(); fn(); times.append(time.perf_counter() - start)
    return float(np.median(times))

X = load_nations().data.astype(float)
rescal = BayesianRESCAL(3, likelihood="bernoulli", random_state=0).fit(X)
entries = np.argwhere(np.ones(X.shape, bool))[:1000]
shape = np.full(1 << 18, 3.0); scale = np.full(1 << 18, 0.5)
rng = np.random.default_rng(0)
coords = rng.integers(0, 100, size=(3, 100_000))
T = sparse.COO(coords, rng.integers(1, 4, 100_000).astype(float), shape=(100, 100, 100))
cp = PoissonCP(10, max_iter=1, tol=0, random_state=0)
cp.fit(T)
print(json.dumps({
    "predict_entries": median_seconds(lambda: rescal.predict_entries(entries), 50),
    "gamma_moments": median_seconds(lambda: gamma_moments(shape, scale), 50),
    "cp_sweep": median_seconds(lambda: cp.fit(T), 5),
}))
"""


#: The neighbours: a pure-Python loop on one core, and another process of
#: the package calling its parallel kernels in a loop, with short pauses
#: (as a second pytest-xdist worker or a loky worker does).
NEIGHBOURS = {
    "python loop": "while True: pass",
    "package kernels": (
        "import time, numpy as np\n"
        "from sklearn_pltf.inference._gamma import gamma_moments\n"
        "shape, scale = np.full(1 << 18, 3.0), np.full(1 << 18, 0.5)\n"
        "while True:\n"
        "    for _ in range(20): gamma_moments(shape, scale)\n"
        "    time.sleep(0.001)\n"),
}


def _run(policy, neighbour):
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    neighbour = (None if neighbour is None else
                 subprocess.Popen([sys.executable, "-c", NEIGHBOURS[neighbour]], env=env))
    try:
        time.sleep(0.5)
        out = subprocess.run([sys.executable, "-c", _CASE], env=env, check=True,
                             capture_output=True, text=True).stdout
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    return json.loads(out.strip().splitlines()[-1])


def bench_neighbour():
    rows = {}
    for policy in ("PASSIVE", "ACTIVE"):
        idle = _run(policy, None)
        for neighbour in NEIGHBOURS:
            busy = _run(policy, neighbour)
            for case in idle:
                rows[policy, neighbour, case] = (idle[case], busy[case])
    print(f"{'wait policy':12s} {'neighbour':16s} {'call':16s} {'idle s':>10s} {'busy s':>10s} "
          f"{'busy/idle':>10s}")
    for (policy, neighbour, case), (idle, busy) in rows.items():
        print(f"{policy:12s} {neighbour:16s} {case:16s} {idle:10.5f} {busy:10.5f} "
              f"{busy / idle:10.2f}")
    return rows


if __name__ == "__main__":
    bench_neighbour()
