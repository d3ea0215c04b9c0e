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
from sklearn_pltf.inference import em, vb
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.inference._driver import OptimizerKernel, OptimizerProblem, Settings, optimize
from sklearn_pltf.inference._hyperparameters import (LearnedRatesKernel, LearnedState,
                                                     NewEntityRatesKernel, rate_learning)
from sklearn_pltf.inference.allocation.vb import _AllocationVBKernel
from sklearn_pltf.inference.relational import coupled as rescal_coupled
from sklearn_pltf.inference.relational import rescal
from sklearn_pltf.inference.relational.structure import rescal_learning
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


#: The kernel protocol's members (:class:`OptimizerKernel`).
PROTOCOL = ("init", "step", "objective", "point", "moved", "priors_at", "advance")


def _shipped_kernels():
    """Every kernel the loop, the driver or the accelerators are given."""
    model = Model.parse("ik,kj->ij").bind((6, 5), {"k": 2})
    learning = rate_learning(model, model.free, "k", False, True, True)
    tied = rescal_learning(True, False, hierarchical=True)
    return {
        "vb": vb, "em": em,
        "learned rates": LearnedRatesKernel(vb, learning),
        "learned rates, held": LearnedRatesKernel(vb, learning).holding(),
        "RESCAL's learned rates": LearnedRatesKernel(rescal.KERNELS["vb"], tied),
        "new entities' rates": NewEntityRatesKernel(vb, 0, 0),
        **{f"RESCAL's {name}": kernel for name, kernel in rescal.KERNELS.items()},
        **{f"coupled RESCAL's {name}": kernel for name, kernel in rescal_coupled.KERNELS.items()},
        "allocation VB": _AllocationVBKernel,
    }


def test_every_shipped_kernel_has_the_whole_protocol():
    assert set(PROTOCOL) == {name for name in vars(OptimizerKernel)
                             if not name.startswith("_")}
    for name, kernel in _shipped_kernels().items():
        assert isinstance(kernel, OptimizerKernel), name
        missing = [m for m in PROTOCOL if not callable(getattr(kernel, m, None))]
        assert not missing, f"{name} lacks {missing}"


@pytest.mark.parametrize("module", ["_convergence.py", "_acceleration.py", "_anderson.py",
                                    "_driver.py"])
def test_the_loop_and_the_accelerators_probe_a_kernel_for_nothing(module):
    source = (PACKAGE / "inference" / module).read_text()
    for probe in ("getattr(kernel", "hasattr(kernel", "getattr(problem.kernel",
                  "hasattr(problem.kernel"):
        assert probe not in source, f"{module} asks a kernel what it has: {probe}"


def _learned_start(learn_shape=True):
    """A start of VB with hierarchical rates, ARD (and learned shapes), and
    what its steps read."""
    X = np.random.default_rng(0).poisson(2.0, (12, 9)).astype(float)
    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": 3})
    priors = gamma_priors(model, 1.0, 1.0)
    contractor = make_contractor(model, as_observed_tensor(X), "poisson")
    kernel = LearnedRatesKernel(vb, rate_learning(model, model.free, "k", False, True,
                                                  learn_shape))
    return kernel, kernel.init(np.random.default_rng(1), model, contractor, priors), \
        contractor, priors


def _same(a, b):
    """Whether two states (nested tuples, dicts and arrays) hold the same values."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def test_a_learned_rates_kernel_is_pure():
    """Its state holds the learned priors, their search and the stage: steps
    tried from a state and dropped do not change what a step from it gives."""
    kernel, state, contractor, priors = _learned_start()
    for _ in range(3):
        state, _ = kernel.step(state, contractor, priors)
    assert isinstance(state, LearnedState) and kernel.point(state) is state.point
    first, info = kernel.step(state, contractor, priors)
    tried = state
    for _ in range(3):
        tried, _ = kernel.step(tried, contractor, priors)
    again, again_info = kernel.step(state, contractor, priors)
    assert _same(again, first) and again_info.objective == info.objective
    assert kernel.objective(state, contractor, priors) == kernel.objective(state, contractor,
                                                                           priors)


def test_the_stage_is_in_the_state():
    """Learned shapes wait for a first convergence: ``advance`` gives the
    state that learns them, then None; the held kernel starts there."""
    kernel, start, contractor, priors = _learned_start()
    state, _ = kernel.step(start, contractor, priors)
    assert not state.shapes_learned
    advanced = kernel.advance(state, priors)
    assert advanced.shapes_learned and advanced.point is state.point
    assert kernel.advance(advanced, priors) is None
    assert kernel.holding().priors_at(start, priors) is not None
    held, _ = kernel.holding().step(start, contractor, priors)
    assert held.shapes_learned
    plain, _, _, _ = _learned_start(learn_shape=False)
    assert plain.advance(plain.step(start, contractor, priors)[0], priors) is None


def test_the_driver_returns_the_point_of_a_learned_rates_run():
    kernel, start, contractor, priors = _learned_start()
    problem = OptimizerProblem(kernel, contractor, priors,
                               start=lambda rng, restart, contractor: start)
    result = optimize(problem, [np.random.default_rng(0)], Settings(max_iter=50, tol=1e-3))
    assert isinstance(result.state, vb.VBState)
