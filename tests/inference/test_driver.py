"""The optimiser driver: one implementation of the VB/EM restarts and loop,
called from one place in the estimators."""

import ast
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_pltf import BayesianNMF, BayesianRESCAL, CoupledPLTF
from sklearn_pltf.engine._contract import make_contractor
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.inference import vb
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.inference._driver import OptimizerProblem, Settings, optimize
from sklearn_pltf.engine.model import Model

PACKAGE = Path(__file__).resolve().parents[2] / "sklearn_pltf"


def _calls(name):
    """(module path, enclosing function) of every call of ``name`` in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if (isinstance(node, ast.Call)
                        and getattr(node.func, "id", getattr(node.func, "attr", None)) == name):
                    found.append((str(path.relative_to(PACKAGE)), function.name))
    return sorted(set(found))


def test_the_loop_runs_only_below_the_estimators():
    outside = [c for c in _calls("run_to_convergence") if not c[0].startswith("inference/")]
    assert not outside, f"the convergence loop is called outside inference/: {outside}"


def test_the_estimators_call_the_driver_from_one_place():
    assert _calls("optimize") == [("estimators/_fitting.py", "fit_by_optimizer")]


def _problem(X, rank=3):
    data = as_observed_tensor(X)
    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": rank})
    priors = gamma_priors(model, 1.0, 1.0)
    return OptimizerProblem(
        vb, make_contractor(model, data, "poisson"), priors,
        start=lambda rng, restart, contractor: vb.init(rng, model, contractor, priors),
        rebuild=lambda: make_contractor(model, data, "poisson"))


def test_the_best_restart_is_kept_and_the_restarts_in_processes_agree():
    X = np.random.default_rng(0).poisson(2.0, (20, 15)).astype(float)
    problem, settings = _problem(X), Settings(max_iter=200, tol=1e-3)
    rngs = np.random.default_rng(1).spawn(3)
    alone = [optimize(problem, [rng], settings).objectives[-1] for rng in rngs]
    best = optimize(problem, np.random.default_rng(1).spawn(3), settings)
    assert best.objectives[-1] == max(alone)
    parallel = optimize(problem, np.random.default_rng(1).spawn(3), settings, n_jobs=2)
    assert parallel.objectives == best.objectives


def test_an_unconverged_run_says_so():
    X = np.random.default_rng(0).poisson(2.0, (20, 15)).astype(float)
    result = optimize(_problem(X), [np.random.default_rng(0)], Settings(max_iter=3, tol=1e-9))
    assert not result.converged and "did not converge in 3 iterations" in result.not_converged
    converged = optimize(_problem(X), [np.random.default_rng(0)], Settings(1000, 0.1))
    assert converged.converged and converged.not_converged is None


@pytest.mark.parametrize("make, data", [
    (lambda: BayesianNMF(2, max_iter=2, tol=1e-9),
     lambda rng: rng.poisson(2.0, (10, 8)).astype(float)),
    (lambda: BayesianRESCAL(2, max_iter=2, tol=1e-9),
     lambda rng: rng.poisson(1.0, (6, 6, 2)).astype(float)),
    (lambda: CoupledPLTF(("ir,jr->ij", "ir,rf->if"), 2, max_iter=2, tol=1e-9),
     lambda rng: [rng.poisson(2.0, (10, 8)).astype(float),
                  rng.poisson(2.0, (10, 4)).astype(float)]),
])
def test_every_optimizer_fit_warns_through_the_driver(make, data):
    with pytest.warns(ConvergenceWarning, match="did not converge in 2 iterations"):
        make().fit(data(np.random.default_rng(0)))


def test_restarts_in_processes_report_in_the_callers_process(capsys):
    X = np.random.default_rng(0).poisson(2.0, (12, 9)).astype(float)
    BayesianNMF(2, n_init=2, n_jobs=2, verbose=1, random_state=0).fit(X)
    out = capsys.readouterr().out
    assert "Initialization 0 (2 of 2)" in out and "Initialization 1 (2 of 2)" in out
