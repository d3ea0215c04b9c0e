"""The per-iteration timing every benchmark of an inference loop uses."""

from __future__ import annotations

import time

import numpy as np


def seconds_per_iteration(estimator, X, n_iter):
    """Seconds per iteration of ``estimator``'s inference loop on ``X``.

    Times ``n_iter`` joint updates of every factor and the bound, as peers'
    per-iteration figures count them: input validation and planning, and the
    final fold-in of the sample-mode factor that ``fit`` adds (which with
    ``tol=0`` would itself run ``max_iter`` times), are left out. The kernels
    are loaded by a first untimed iteration.
    """
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.inference import em, vb
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.inference._driver import OptimizerProblem, Settings, optimize
    from sklearn_pltf.engine.model import Model

    data = estimator._observed(X, None, reset=True)
    spec, sizes, fixed = estimator._model_spec(len(data.shape))
    model = Model.parse(spec).bind(data.shape, sizes, {a: f.shape for a, f in fixed.items()})
    priors = gamma_priors(model, estimator.prior_shape, estimator.prior_rate)
    given = {a: (f, f) for a, f in fixed.items()}
    kernel = {"vb": vb, "em": em}[estimator.method]
    seconds = {}
    for iterations in (1, 1, n_iter + 1):
        start = time.perf_counter()
        problem = OptimizerProblem(
            kernel, make_contractor(model, data, estimator.likelihood), priors,
            start=lambda rng, _, contractor: kernel.init(rng, model, contractor, priors, given))
        optimize(problem, [np.random.default_rng(0)],
                 Settings(iterations, 0.0, estimator.acceleration))
        seconds[iterations] = time.perf_counter() - start
    return (seconds[n_iter + 1] - seconds[1]) / n_iter
