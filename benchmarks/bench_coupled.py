"""(z) A coupled fit's sweep against its parts' sweeps alone.

A user x item x context count tensor (``"ur,ir,cr->uic"``) coupled with item
features (``"ir,rf->if"``), dense and sparse: the seconds of ``n_sweeps``
plain VB sweeps (each with its bound) of the coupled model, against the sum
of the same sweeps of each tensor's own model, on prepared states, median of
``repeats`` in one process (the kernels compiled first).
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import sparse

from sklearn_pltf._contract import make_contractor
from sklearn_pltf._coupled import CoupledContractor, CoupledModel, bind_models
from sklearn_pltf._data import as_observed_tensor
from sklearn_pltf.inference import vb
from sklearn_pltf.inference._common import gamma_priors

MODELS = ("ur,ir,cr->uic", "ir,rf->if")


def _tensors(shape=(400, 300, 30), n_features=80, rank=10, seed=0):
    rng = np.random.default_rng(seed)
    U, I, C = (rng.gamma(0.5, 1.0, (n, rank)) for n in shape)
    F = rng.gamma(0.5, 1.0, (rank, n_features))
    X = rng.poisson(np.einsum("ur,ir,cr->uic", U, I, C) / rank ** 2).astype(float)
    return X, rng.poisson(I @ F / rank).astype(float)


def _sweeps_seconds(kernel_state, contractor, priors, n_sweeps):
    state = kernel_state
    start = time.perf_counter()
    for _ in range(n_sweeps):
        state, _ = vb.step(state, contractor, priors)
    return time.perf_counter() - start


def bench_coupled(repeats=3, n_sweeps=20, rank=10):
    for layout in ("dense", "sparse"):
        X, Y = _tensors(rank=rank)
        tensors = [X, Y] if layout == "dense" else [sparse.COO.from_numpy(X), Y]
        datas = [as_observed_tensor(T) for T in tensors]
        models = bind_models(MODELS, [d.shape for d in datas], rank)
        joint = CoupledModel.from_models(models)
        coupled = CoupledContractor(joint, datas, ["poisson", "poisson"])
        problems = [(joint, coupled)] + [(m, make_contractor(m, d)) for m, d in zip(models, datas)]
        prepared = []
        for model, contractor in problems:
            priors = gamma_priors(model, 1.0, 1.0)
            state, _ = vb.step(vb.init(np.random.default_rng(0), model, contractor, priors),
                               contractor, priors)  # compiled, and X-hat's buffers made
            prepared.append((state, contractor, priors))
        times = [[_sweeps_seconds(*p, n_sweeps) for p in prepared] for _ in range(repeats)]
        whole = statistics.median(t[0] for t in times)
        parts = statistics.median(t[1] + t[2] for t in times)
        print(f"{layout:6s} coupled {whole / n_sweeps * 1e3:.1f} ms a sweep, parts alone "
              f"{parts / n_sweeps * 1e3:.1f} ms: ratio {whole / parts:.2f}", flush=True)


if __name__ == "__main__":
    bench_coupled()
