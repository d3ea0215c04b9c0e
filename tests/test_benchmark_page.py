"""The benchmark page is what its generator writes from the committed results."""

import ast
import copy
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _benchmark_module(name):
    """``benchmarks/<name>.py``, loaded from its path (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _make_page():
    return _benchmark_module("make_page")


def test_the_page_is_the_generator_s_output_from_the_committed_results():
    page = (BENCHMARKS / "README.md").read_text()
    assert page == _make_page().render(BENCHMARKS / "results"), (
        "benchmarks/README.md is not what benchmarks/make_page.py writes from "
        "benchmarks/results/*.json: run `python benchmarks/make_page.py`.")
    # 250, the relations family (CP and RESCAL: 22 lines), the AVX2 build's rows (17),
    # the rows of ours stopped at the peer's quality and their description (12), the
    # float32 family, its AVX2 build's rows included (22), the NMF on counts of mean 20 with
    # its AVX2 rows (11) and a second machine's lines (2)
    assert len(page.splitlines()) <= 336


def _module_names(path):
    """The names a module's source assigns or defines at its top level."""
    tree = ast.parse(path.read_text())
    return ({t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
             if isinstance(t, ast.Name)}
            | {node.name for node in tree.body if isinstance(node, ast.FunctionDef)})


def test_the_page_has_every_family_of_the_suite_measured_or_not():
    """``FAMILY_ORDER`` is the suite's ``FAMILIES``; each family module has
    ``TITLE``, ``ABOUT`` and ``cases``; a family without a results file is
    on the page as not yet measured, from its module's title and text."""
    make_page = _make_page()
    init = ast.parse((BENCHMARKS / "suite" / "__init__.py").read_text())
    families = next(ast.literal_eval(node.value) for node in init.body
                    if isinstance(node, ast.Assign) and node.targets[0].id == "FAMILIES")
    assert sorted(make_page.FAMILY_ORDER) == sorted(families)
    for family in families:
        assert {"TITLE", "ABOUT", "cases"} <= _module_names(BENCHMARKS / "suite" / f"{family}.py")
    page = (BENCHMARKS / "README.md").read_text()
    for family in make_page.unmeasured(make_page.load(BENCHMARKS / "results")):
        title, _ = make_page.family_text(family)
        assert f"- **{title}** (`{family}`)" in page, family


def test_only_the_suite_s_entry_points_write_numbers():
    """The older study scripts are gone: each became a family of the suite
    or a study in ``doc/validation/``."""
    scripts = sorted(p.name for p in BENCHMARKS.glob("*.py"))
    assert scripts == ["make_page.py", "run.py", "run_gpu.py"]


def test_a_comparison_among_our_own_contenders_is_given_over_its_baseline(tmp_path):
    """A case with a ``baseline`` shows each contender's median over the
    baseline's, in one table for the run of such cases."""
    record = json.loads((BENCHMARKS / "results" / "scaling.json").read_text())
    record = {**copy.deepcopy(record), "family": "threads", "title": "Threads"}
    case = record["cases"][0]
    for contender, seconds in zip(case["contenders"], ([2.0], [1.0])):
        contender["seconds"] = seconds
    case["baseline"] = case["contenders"][0]["name"]
    record["cases"] = [case]
    (tmp_path / "threads.json").write_text(json.dumps(record))
    page = _make_page().render(tmp_path)
    assert "| case | contender | seconds | / baseline | run | peak MiB |" in page
    assert f"| {case['contenders'][0]['name']} | 2 s | baseline |" in page
    assert f"| {case['contenders'][1]['name']} | 1 s | 0.50 |" in page
    assert "## Not yet measured" in page and "(`threads`)" not in page


def test_every_result_names_its_machine_versions_and_every_timed_run():
    files = sorted((BENCHMARKS / "results").glob("*.json"))
    families = {json.loads(f.read_text())["family"] for f in files}
    assert families <= set(_make_page().FAMILY_ORDER)
    for path in files:
        record = json.loads(path.read_text())
        env = record["environment"]
        assert not record["quick"], path
        for key in ("cpu", "cores", "memory_gib", "python", "numpy", "scikit-learn", "blas",
                    "commit", "date", "protocol"):
            assert env[key], (path, key)
        assert all(value is None for value in env["openblas_env"].values()), path
        for case in record["cases"]:
            for contender in case["contenders"]:
                assert len(contender["seconds"]) == case["repeats"] >= 1, (path, case["name"])
                assert contender["warmup_seconds"] is not None


def test_the_target_s_environment_replaces_the_pins_and_the_cpu_variables():
    """``run.py --target``: native drops the OpenBLAS pins and any CPU target
    (OpenBLAS's and numba's own choice); avx2 pins the three libraries to
    AVX2, NumPy only where the CPU has AVX-512 to switch off."""
    run = _benchmark_module("run")
    environ = {"PATH": "/bin", "OPENBLAS_CORETYPE": "Zen", "OPENBLAS_L2_SIZE": "1",
               "NUMBA_CPU_NAME": "skylake-avx512"}
    assert run.target_environment(environ, "native", True) == {"PATH": "/bin"}
    avx2 = run.target_environment(environ, "avx2", True)
    assert avx2 == {"PATH": "/bin", "NUMBA_CPU_NAME": "haswell", "OPENBLAS_CORETYPE": "Haswell",
                    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
    assert "NPY_DISABLE_CPU_FEATURES" not in run.target_environment(environ, "avx2", False)
    assert environ["OPENBLAS_CORETYPE"] == "Zen"  # the caller's environment is left alone


def _suite_protocol():
    spec = importlib.util.spec_from_file_location("bench_suite_protocol",
                                                  BENCHMARKS / "suite" / "_protocol.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_time_to_a_peer_s_quality_is_the_fewest_iterations_that_reach_it():
    """Doubling, then bisection: the fewest iterations whose quality reaches
    the target (higher or lower better), in a number of fits logarithmic in
    the whole fit's; None where the whole fit does not reach it."""
    protocol = _suite_protocol()
    calls = []

    def stopped_after(data, n_iter):  # quality rises with the iterations, then levels
        calls.append(n_iter)
        return {"result": min(n_iter, 100) / 100}

    def quality(data, result):
        return {"loglik_per_entry": -1.0 + result}

    for target, expected in ((-0.63, 37), (-0.99, 1), (0.0, 100)):
        calls.clear()
        n_iter, seconds, reached = protocol.time_to_quality(stopped_after, quality, None, target,
                                                            160)
        assert (n_iter, round(reached, 9)) == (expected, round(-1.0 + expected / 100, 9))
        assert seconds >= 0 and len(calls) <= 2 * 8 + 2 and calls[-1] == expected
    assert protocol.time_to_quality(stopped_after, quality, None, 0.5, 160) is None

    def kl(data, result):
        return {"generalised_kl": 1.0 - result}

    assert protocol.time_to_quality(stopped_after, kl, None, 0.5, 160, False)[0] == 50
