"""Thread scaling: one VB sweep (a call) at 1, 2, 4, ... threads, up to every core.

Each thread count runs in a fresh process with numba's and BLAS's threads
set to it (``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``), and times
:func:`sklearn_pltf.inference.vb.step` (every factor updated once, and the
bound) on a prepared state, median of ``repeats`` after one warm-up sweep,
under each of numba's threading layers asked for (``NUMBA_THREADING_LAYER``:
``omp``, the usual one on Linux, and ``workqueue``, numba's own, which a
forked child could use with its threads; ``tbb`` where installed).
Workloads: a sparse 1000^3 Poisson CP tensor at rank 10 (10^6 non-zeros),
and a dense Poisson NMF 20000 x 10000 of rank 50 (2·10^8 entries; about
8 GB in all at its peak). ``ceiling`` times what the machine itself
allows: ``math.lgamma`` of 2·10^6 values in a numba ``prange`` loop, no
memory traffic to speak of and no sum, so its speed-up is the most any
kernel can get from the threads (a virtual machine's cores may share
physical ones).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

_SWEEP = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
import workloads
from sklearn_pltf.engine._contract import make_contractor
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference import vb
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.engine.model import Model

kind, repeats = {kind!r}, {repeats}
if kind == "ceiling":
    import math, numba

    @numba.njit(parallel=True)
    def lgammas(values, out):
        for i in numba.prange(values.size):
            out[i] = math.lgamma(values[i])

    values = np.random.default_rng(0).gamma(2.0, 10.0, 2_000_000)
    out = np.empty_like(values)
    lgammas(values, out)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        lgammas(values, out)
        times.append(time.perf_counter() - start)
    print(json.dumps(times))
    sys.exit()
if kind == "sparse":
    X = workloads.sparse_poisson_cp((1000, 1000, 1000), 10, 1_000_000, random_state=0)
    model = Model.parse("ir,jr,kr->ijk").bind(X.shape, {{"r": 10}})
else:
    X = workloads.dense_poisson_nmf(20000, 10000, 50, random_state=0)
    model = Model.parse("ik,kj->ij").bind(X.shape, {{"k": 50}})
data = as_observed_tensor(X)
del X
contractor = make_contractor(model, data)
priors = gamma_priors(model, 1.0, 1.0)
state = vb.init(np.random.default_rng(0), model, contractor, priors)
state, _ = vb.step(state, contractor, priors)
times = []
for _ in range(repeats):
    start = time.perf_counter()
    state, _ = vb.step(state, contractor, priors)
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def _sweep_seconds(kind, threads, repeats, layer="omp"):
    env = dict(os.environ, NUMBA_THREADING_LAYER=layer)
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "MKL_NUM_THREADS"):
        env[name] = str(threads)
    bench = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", _SWEEP.format(bench=bench, kind=kind,
                                                              repeats=repeats)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return statistics.median(json.loads(out.strip().splitlines()[-1]))


def bench_threads(repeats=3, kinds=("ceiling", "sparse", "dense"), layers=("omp",)):
    counts, n = [], 1
    while n < os.cpu_count():
        counts.append(n)
        n *= 2
    counts.append(os.cpu_count())
    for kind in kinds:
        for layer in layers:
            base = None
            for threads in counts:
                seconds = _sweep_seconds(kind, threads, repeats, layer)
                base = base or seconds
                print(f"{kind:7s} {layer:9s} threads {threads:3d}: {seconds:.3f} s a call, "
                      f"speed-up {base / seconds:.2f}", flush=True)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kinds", nargs="*", default=["ceiling", "sparse", "dense"])
    parser.add_argument("--layers", nargs="+", default=["omp"],
                        help="numba threading layers to compare, e.g. omp workqueue")
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    bench_threads(arguments.repeats, arguments.kinds, arguments.layers)
