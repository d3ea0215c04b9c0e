"""The package's layout rules, read from the source: imports point one way
(model, data, contraction, inference, evidence, estimators, then the tools),
an algorithm imports no other algorithm, scikit-learn enters at the
estimators, optional dependencies are imported inside functions, and no
module or function outgrows what a reader can hold."""

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sklearn_pltf"

#: Each top-level module or subpackage and its layer: a module imports only
#: from its own layer or those below.
LAYERS = {
    "engine": 0,  # its __init__; its modules have their own layers below
    "engine.model": 0, "engine._random": 0, "engine._progress": 0, "engine._threads": 0,
    "engine._array_api": 0, "engine._log": 0,
    "engine._kernels": 1, "engine._data": 1, "engine._elementwise": 1, "engine._array_data": 1,
    "engine._likelihood": 2, "engine._planner": 2,
    "engine._contract": 3, "engine.distributed": 3, "engine._coupled": 3,
    "engine._array_contract": 3, "engine._factor_checks": 3,
    "inference": 4,
    "evidence": 5,
    "estimators": 6,
    "metrics": 7, "model_selection": 7, "plotting": 7, "datasets": 7,
    "__init__": 8, "__main__": 8, "_cli_data": 8,
}
ESTIMATORS = LAYERS["estimators"]
#: pyproject's ``dependencies`` (joblib and threadpoolctl come with scikit-learn too).
CORE_DEPENDENCIES = {"numpy", "scipy", "sklearn", "sparse", "numba", "opt_einsum", "joblib",
                     "threadpoolctl"}
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _dotted(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path, source=None):
    """(absolute module name, imported names, at module level?) of each import
    in ``path`` (or in ``source``, read as if it were at ``path``)."""
    tree = ast.parse(path.read_text() if source is None else source)
    package = _dotted(path) if path.name == "__init__.py" else _dotted(path).rpartition(".")[0]
    top_level = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, (), id(node) in top_level
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            yield module, tuple(alias.name for alias in node.names), id(node) in top_level


def _reached(path, source=None):
    return {t for module, names, _ in _imports(path, source) for t in _own_modules(module, names)}


def _own_modules(module, names):
    """The package modules an import reaches (``from . import gibbs`` names one)."""
    if module == "sklearn_pltf" or module.startswith("sklearn_pltf."):
        for name in names:
            candidate = f"{module}.{name}"
            parts = candidate.split(".")[1:]
            if (PACKAGE.joinpath(*parts).with_suffix(".py").exists()
                    or PACKAGE.joinpath(*parts).is_dir()):
                yield candidate
                continue
            yield module
        if not names:
            yield module


def _layer(dotted):
    parts = dotted.split(".")
    if len(parts) > 2 and parts[1] == "engine":
        return LAYERS[f"engine.{parts[2]}"]
    return LAYERS[parts[1] if len(parts) > 1 else "__init__"]


def _is_algorithm(dotted):
    """A generic algorithm (``inference.vb``) or a model family (``inference.allocation``)."""
    parts = dotted.split(".")
    return len(parts) == 3 and parts[1] == "inference" and not parts[2].startswith("_")


def _family(dotted):
    """The model family (``sklearn_pltf.inference.allocation``) a module belongs to, or None."""
    parts = dotted.split(".")
    if len(parts) > 3 and parts[1] == "inference" and PACKAGE.joinpath("inference", parts[2]).is_dir():
        return ".".join(parts[:3])
    return None


def _params(paths):
    return [pytest.param(path, id=_dotted(path) + (".__init__" if path.name == "__init__.py" else ""))
            for path in paths]


MODULES = _params(_modules())
INFERENCE_MODULES = _params(p for p in _modules() if _dotted(p).startswith("sklearn_pltf.inference."))
OUTSIDE_ESTIMATORS = _params(p for p in _modules() if not _dotted(p).startswith("sklearn_pltf.estimators"))


def test_every_module_has_a_layer():
    unplaced = set()
    for path in _modules():
        parts = _dotted(path).split(".")
        key = ".".join(parts[1:3]) if len(parts) > 2 and parts[1] == "engine" else (
            parts[1] if len(parts) > 1 else "__init__")
        unplaced.add(key)
    unplaced -= set(LAYERS)
    assert not unplaced, f"give these a layer in LAYERS: {sorted(unplaced)}"


@pytest.mark.parametrize("path", MODULES)
def test_imports_point_down(path):
    here = _dotted(path)
    layer = _layer(here)
    upward = sorted(t for t in _reached(path) if t != "sklearn_pltf" and _layer(t) > layer)
    assert not upward, f"{here} imports from higher layers: {upward}"


@pytest.mark.parametrize("path", INFERENCE_MODULES)
def test_algorithms_import_no_other_algorithm(path):
    """An inference module (an algorithm or a helper they share) imports no
    algorithm but itself; the helpers (``_chains``, ``_gamma``, ...) are
    shared. A model family's modules (``inference/<family>/``) may use the
    generic algorithms (a family's kernel composes VB's or EM's), and each
    other, but no other family, and no generic module imports a family."""
    here = _dotted(path)
    family = _family(here)
    if family is None:
        others = sorted(t for t in _reached(path) if _is_algorithm(t) and t != here)
    else:
        others = sorted(t for t in _reached(path) if _is_algorithm(t) and t != family
                        and PACKAGE.joinpath(*t.split(".")[1:]).is_dir())
    assert not others, f"{here} imports the algorithms {others}"


@pytest.mark.parametrize("path", MODULES)
def test_scikit_learn_enters_at_the_estimators(path):
    here = _dotted(path)
    layer = _layer(here)
    sklearn_imports = [m for m, _, _ in _imports(path) if m == "sklearn" or m.startswith("sklearn.")]
    if layer < ESTIMATORS:
        assert not sklearn_imports, f"{here} is below the estimators but imports {sklearn_imports}"
    if not here.startswith("sklearn_pltf.estimators"):
        assert "sklearn.base" not in sklearn_imports, f"only estimators/ imports sklearn.base ({here})"


@pytest.mark.parametrize("path", OUTSIDE_ESTIMATORS)
def test_tools_reach_estimators_through_public_names(path):
    here = _dotted(path)
    private = [m for m, _, _ in _imports(path) if m.startswith("sklearn_pltf.estimators._")]
    assert not private, f"{here} imports private estimator modules {private}"


@pytest.mark.parametrize("path", MODULES)
def test_optional_dependencies_are_imported_inside_functions(path):
    stdlib = sys.stdlib_module_names | {"__future__"}
    outside = sorted({
        m.split(".")[0] for m, _, top_level in _imports(path)
        if top_level and m.split(".")[0] not in stdlib | CORE_DEPENDENCIES | {"sklearn_pltf"}
    })
    assert not outside, f"{_dotted(path)} imports optional packages at module level: {outside}"


@pytest.mark.parametrize("path", MODULES)
def test_modules_and_functions_stay_readable(path):
    source = path.read_text()
    assert source.count("\n") <= MAX_MODULE_LINES, f"{path.name}: split it"
    long = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1:
            body = body[1:]  # the docstring does not count
        if node.end_lineno - body[0].lineno + 1 > MAX_FUNCTION_LINES:
            long.append(node.name)
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_rules_catch_a_violation():
    """The readers see an upward import, an algorithm importing another and a
    module-level optional import planted in an inference module's source."""
    path = PACKAGE / "inference" / "vb.py"
    source = path.read_text() + "\nfrom ..estimators import _base\nfrom . import gibbs\nimport matplotlib\n"
    reached = _reached(path, source)
    assert "sklearn_pltf.estimators._base" in reached
    assert max(_layer(t) for t in reached) > _layer("sklearn_pltf.inference.vb")
    assert "sklearn_pltf.inference.gibbs" in reached and _is_algorithm("sklearn_pltf.inference.gibbs")
    assert ("matplotlib", (), True) in set(_imports(path, source))


# The tests' layout: ``tests/`` mirrors the package, so the tests of
# ``sklearn_pltf/engine/_contract.py`` are under ``tests/engine/``; tests of the
# top-level modules and of the project as a whole are in ``tests/`` itself.
# Test modules share code through ``tests/_helpers.py``, never through each other.
TESTS = Path(__file__).resolve().parent


def _test_modules(tests=TESTS):
    return sorted(tests.rglob("test_*.py"))


def _misplaced(paths, tests=TESTS):
    """The test modules whose folder below ``tests/`` is no package folder below
    ``sklearn_pltf/`` (``tests/`` itself mirrors the package's top)."""
    return [str(p.relative_to(tests)) for p in paths
            if not PACKAGE.joinpath(*p.parent.relative_to(tests).parts, "__init__.py").is_file()]


def _imported_test_modules(source):
    """The test modules (``test_*``) an import in ``source`` names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0].startswith("test_")]
        elif isinstance(node, ast.ImportFrom):
            if node.module and node.module.split(".")[0].startswith("test_"):
                found.append(node.module)
            elif not node.module or node.level:
                found += [a.name for a in node.names if a.name.startswith("test_")]
    return found


def test_test_modules_live_in_the_folders_that_mirror_the_package():
    modules = _test_modules()
    assert len(modules) > 50, f"the walk of {TESTS} found only {len(modules)} test modules"
    misplaced = _misplaced(modules)
    assert not misplaced, ("move these under the tests/ folder that mirrors the package folder "
                           f"they test: {misplaced}")
    # pytest imports them by basename ("prepend" mode, no __init__.py): one module per name
    names = [p.name for p in modules]
    assert sorted(set(names)) == sorted(names), f"test module names repeat: {names}"
    assert not list(TESTS.rglob("__init__.py")), "tests/ holds no packages"


def test_no_test_module_imports_another():
    importing = {str(p.relative_to(TESTS)): _imported_test_modules(p.read_text())
                 for p in sorted(TESTS.rglob("*.py"))}
    importing = {path: names for path, names in importing.items() if names}
    assert not importing, f"move what they share into tests/_helpers.py: {importing}"


def test_the_test_layout_rules_catch_a_violation():
    """A test module in a folder the package does not have, or in a data folder,
    is flagged, one in a mirrored subpackage is not; so is an import of a test
    module, in any form."""
    planted = [TESTS / "models" / "test_x.py", TESTS / "datasets" / "data" / "test_y.py",
               TESTS / "inference" / "relational" / "test_z.py", TESTS / "test_w.py"]
    assert _misplaced(planted) == [str(Path("models", "test_x.py")),
                                   str(Path("datasets", "data", "test_y.py"))]
    source = ("import test_rescal\nfrom test_gaussian import _cp\n"
              "def f():\n    from . import test_sti\n    from _helpers import BINARY\n")
    assert _imported_test_modules(source) == ["test_rescal", "test_gaussian", "test_sti"]


# ------------------------------------------------------ the estimator layer
ESTIMATOR_MODULES = sorted((PACKAGE / "estimators").glob("*.py"))
#: The one module of the estimator layer that sets fitted attributes.
SETTER = "_fitting.py"


def _fitted_attribute_writes(source):
    """Line numbers where ``source`` assigns an attribute whose name ends in
    ``_`` (a fitted attribute, not a dunder) or calls ``setattr``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [node.lineno for t in targets for sub in ast.walk(t)
                      if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)
                      and sub.attr.endswith("_") and not sub.attr.endswith("__")]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "setattr"):
            found.append(node.lineno)
    return found


def test_fitted_attributes_are_set_in_one_module():
    """A fit's steps return what they found and one function
    (``estimators._fitting.set_fitted``) sets it when the fit is done:
    nothing writes a fitted attribute in the middle of a fit."""
    writes = {path.name: _fitted_attribute_writes(path.read_text())
              for path in ESTIMATOR_MODULES}
    elsewhere = {name: lines for name, lines in writes.items() if lines and name != SETTER}
    assert not elsewhere, elsewhere
    assert writes[SETTER], "the setter itself is found"


def test_the_structure_of_a_fit_is_chosen_once():
    """No ``tie is None`` switches: the base chooses the fit's structure
    (one tensor, a tie) once, and calls it."""
    pattern = re.compile(r"\btie is (not )?None\b")
    found = [f"{path.name}:{n}" for path in ESTIMATOR_MODULES
             for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, found


def test_the_estimator_layer_rules_catch_a_violation():
    assert _fitted_attribute_writes("def f(est):\n    est.n_iter_ = 3\n    est.tol = 1\n") == [2]
    assert _fitted_attribute_writes("setattr(est, 'x_', 1)\nest.__doc__ = ''\n") == [1]


def _parallel_calls(path):
    """The functions of ``path`` that run work in parallel (call joblib's ``Parallel``)."""
    return sorted({func.name for func in ast.walk(ast.parse(path.read_text()))
                   if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for node in ast.walk(func)
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                   and node.func.id == "Parallel"})


def test_one_function_spawns_runs_and_pools_chains():
    """Every sampler's chains (Poisson, RESCAL, SGLD, coupled and the Gaussian
    family's) run on ``inference._chains.run_chains``; the optimiser's
    restarts on ``inference._driver.optimize``: nothing else in the fit's
    layers runs work in parallel."""
    found = {str(path.relative_to(PACKAGE)): _parallel_calls(path)
             for folder in ("engine", "inference", "evidence", "estimators")
             for path in sorted((PACKAGE / folder).rglob("*.py"))}
    found = {path: funcs for path, funcs in found.items() if funcs}
    assert found == {str(Path("inference", "_chains.py")): ["run_chains"],
                     str(Path("inference", "_driver.py")): ["optimize"]}, found
