"""Every gallery example runs to the end (so examples cannot rot).

The default tier runs each example at the small settings it takes when
``SKLEARN_PLTF_QUICK_EXAMPLES`` is set (hidden from the rendered gallery
between ``sphinx_gallery_start_ignore`` and ``sphinx_gallery_end_ignore``);
the slow tier and the documentation build run them as the gallery shows them.
"""

import pathlib
import re
import runpy
import warnings

import matplotlib
import pytest

matplotlib.use("Agg")

EXAMPLES = sorted((pathlib.Path(__file__).parents[1] / "examples").glob("plot_*.py"))
QUICK = "SKLEARN_PLTF_QUICK_EXAMPLES"


def _printed(path, capsys):
    """What the example prints when run as a script."""
    runpy.run_path(str(path), run_name="__main__")
    return capsys.readouterr().out


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_at_small_settings(path, capsys, monkeypatch):
    monkeypatch.setenv(QUICK, "1")
    assert _printed(path, capsys)  # each example reports what it found


@pytest.mark.slow(minutes=1.4)  # the longest, plot_kinships_attributes
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_at_full_settings(path, capsys, monkeypatch):
    monkeypatch.delenv(QUICK, raising=False)
    assert _printed(path, capsys)  # each example reports what it found


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_has_small_settings_hidden_from_the_gallery(path):
    """The default tier's budget holds only if each example shrinks itself."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find("# sphinx_gallery_start_ignore"), text.find("# sphinx_gallery_end_ignore")
    assert 0 < start < text.find(QUICK) < end


@pytest.mark.slow(minutes=0.2)
def test_the_landing_page_snippet_finds_the_rank_it_says(capsys):
    """The documentation's front-page example runs as printed and finds the
    rank its comment promises."""
    text = (pathlib.Path(__file__).parents[1] / "doc" / "index.rst").read_text(encoding="utf-8")
    block = re.search(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", text).group(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile("\n".join(line[3:] for line in block.splitlines()), "index.rst", "exec"), {})
    assert "{'n_components': 4}" in capsys.readouterr().out


@pytest.mark.slow(minutes=0.6)
def test_the_large_data_cluster_example_runs_and_matches_the_in_memory_fit(capsys):
    """The "Large data" page's LocalCluster example runs as printed, and its
    numbers are those of the same fit in memory, as its comment says."""
    from sklearn_pltf import PoissonCP

    text = (pathlib.Path(__file__).parents[1] / "doc" / "large_data.rst").read_text(encoding="utf-8")
    block = re.search(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", text).group(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        namespace = {"__name__": "__main__"}
        exec(compile("\n".join(line[3:] for line in block.splitlines()), "large_data.rst", "exec"),
             namespace)
        in_memory = PoissonCP(n_components=5, random_state=0).fit(
            namespace["X"].compute(scheduler="synchronous"))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"{in_memory.n_iter_} {round(in_memory.log_evidence_)}"
    assert printed[1] == "(10, 5)"
