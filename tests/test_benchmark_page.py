"""The benchmark page is what its generator writes from the committed results."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _make_page():
    spec = importlib.util.spec_from_file_location("make_page", BENCHMARKS / "make_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_the_generator_s_output_from_the_committed_results():
    page = (BENCHMARKS / "README.md").read_text()
    assert page == _make_page().render(BENCHMARKS / "results"), (
        "benchmarks/README.md is not what benchmarks/make_page.py writes from "
        "benchmarks/results/*.json: run `python benchmarks/make_page.py`.")
    assert len(page.splitlines()) <= 250


def test_every_result_names_its_machine_versions_and_every_timed_run():
    files = sorted((BENCHMARKS / "results").glob("*.json"))
    families = {json.loads(f.read_text())["family"] for f in files}
    assert families == set(_make_page().FAMILY_ORDER)
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
