"""A fair neighbour: parallel kernel calls beside one other busy process.

Each contender runs its call in a fresh process (OpenMP reads its wait
policy once, when numba's threads start), with numba's OpenMP threads
waiting passively (``OMP_WAIT_POLICY=PASSIVE``, the package's default) or
spinning (``ACTIVE``, OpenMP's own default), on an idle machine or beside a
process that keeps a core busy: a pure-Python loop, or another process of
the package calling its parallel kernels in a loop with short pauses (as a
second pytest-xdist worker or a loky worker does). The process reports the
median seconds of the call, after one untimed call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from ._protocol import Case, Contender

TITLE = "Beside a busy neighbour"
ABOUT = ("The median seconds of a parallel call, each in a fresh process, with numba's OpenMP "
         "threads waiting passively (`OMP_WAIT_POLICY=PASSIVE`, the package's default) or "
         "spinning (`ACTIVE`), on an idle machine and beside one other process that keeps a "
         "core busy (a Python loop, or the package's kernels called in a loop with short "
         "pauses): `predict_entries` of 1,000 entries of a Bernoulli–Poisson RESCAL fit on "
         "Nations (its draws run a parallel kernel), the Gamma moments of 2^18 elements (one "
         "parallel kernel) and one VB sweep of a sparse CP fit (10^5 non-zeros, rank 10: the "
         "entry kernels). Each over the idle time with passive threads; the aim is at most 3 "
         "beside a neighbour.")

#: What each call's process runs: its setup, then ``CALL`` timed.
CALLS = {
    "predict_entries": (
        "from sklearn_pltf import BayesianRESCAL\n"
        "from sklearn_pltf.datasets import load_nations\n"
        "X = load_nations().data.astype(float)\n"
        "rescal = BayesianRESCAL(3, likelihood='bernoulli', random_state=0).fit(X)\n"
        "entries = np.argwhere(np.ones(X.shape, bool))[:1000]\n"
        "CALL = lambda: rescal.predict_entries(entries)\n"),
    "gamma_moments": (
        "from sklearn_pltf.inference._gamma import gamma_moments\n"
        "shape = np.full(1 << 18, 3.0); scale = np.full(1 << 18, 0.5)\n"
        "CALL = lambda: gamma_moments(shape, scale)\n"),
    "cp_sweep": (
        "import sparse\n"
        "from sklearn_pltf import PoissonCP\n"
        "rng = np.random.default_rng(0)\n"
        "coords = rng.integers(0, 100, size=(3, 100_000))\n"
        "T = sparse.COO(coords, rng.integers(1, 4, 100_000).astype(float), "
        "shape=(100, 100, 100))\n"
        "cp = PoissonCP(10, max_iter=1, tol=0, random_state=0)\n"
        "CALL = lambda: cp.fit(T)\n"),
}

_TIMED = r"""
import json, time, warnings
import numpy as np
warnings.simplefilter("ignore")
{setup}
CALL()
times = []
for _ in range({n_calls}):
    start = time.perf_counter(); CALL(); times.append(time.perf_counter() - start)
print(json.dumps(float(np.median(times))))
"""

#: The neighbours.
NEIGHBOURS = {
    "idle": None,
    "beside a Python loop": "while True: pass",
    "beside the package's kernels": (
        "import time, numpy as np\n"
        "from sklearn_pltf.inference._gamma import gamma_moments\n"
        "shape, scale = np.full(1 << 18, 3.0), np.full(1 << 18, 0.5)\n"
        "while True:\n"
        "    for _ in range(20): gamma_moments(shape, scale)\n"
        "    time.sleep(0.001)\n"),
}


def _contender(call, policy, neighbour, n_calls):
    def run(_):
        env = dict(os.environ, OMP_WAIT_POLICY=policy)
        source = NEIGHBOURS[neighbour]
        busy = None if source is None else subprocess.Popen([sys.executable, "-c", source],
                                                             env=env)
        try:
            time.sleep(0.5)
            out = subprocess.run(
                [sys.executable, "-c", _TIMED.format(setup=CALLS[call], n_calls=n_calls)],
                env=env, check=True, capture_output=True, text=True).stdout
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        return {"result": None, "seconds": json.loads(out.strip().splitlines()[-1])}
    return Contender(f"{policy}, {neighbour}", run, ours=True)


#: The cases' names on the page.
LABELS = {"predict_entries": "RESCAL's predict_entries, 1,000 entries",
          "gamma_moments": "Gamma moments of 2^18 elements",
          "cp_sweep": "a VB sweep of sparse CP, 10^5 non-zeros, rank 10"}


def cases(quick):
    n_calls = {"predict_entries": 50, "gamma_moments": 50, "cp_sweep": 5}
    return [Case(LABELS[call], lambda: None,
                 [_contender(call, policy, neighbour, 3 if quick else n_calls[call])
                  for policy in ("PASSIVE", "ACTIVE") for neighbour in NEIGHBOURS],
                 measure="per call", repeats=1 if quick else 3, baseline="PASSIVE, idle")
            for call in CALLS]
