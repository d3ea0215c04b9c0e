"""Every gallery example runs to the end (so examples cannot rot).

The default tier runs each example at the small settings it takes when
``SKLEARN_PLTF_QUICK_EXAMPLES`` is set (hidden from the rendered gallery
between ``sphinx_gallery_start_ignore`` and ``sphinx_gallery_end_ignore``).
The documentation build runs them all as the gallery shows them; so do the
slow tier (``-m slow``), for the examples whose full run takes at most a
minute and a half, and the gallery tier (``-m gallery``) for the longer ones,
which would take ``.ci/run`` past its budget.
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
# Minutes of a full run beside another worker (.ci/run's slow tier, 2 cores),
# for the examples over a minute and a half: the gallery tier runs these.
GALLERY_TIER_MINUTES = {
    "plot_kinships_attributes": 3.3,
    "plot_sti_vs_chib": 2.9,
    "plot_chib_cp_rank": 2.5,
    "plot_hierarchical_nmf": 2.3,
    "plot_gaussian_ntf_heldout": 2.1,
    "plot_deconvolution": 1.7,
}


# Minutes of a small-settings run, for the examples whose small run takes
# over three seconds and whose full run is the slow tier's: there the full
# run covers what the small one checks, so the small one runs beside it.
SLOW_TIER_SMALL_RUN_MINUTES = {
    "plot_rank_selection": 0.1,
    "plot_bam_tucker": 0.07,
    "plot_link_prediction_vb_em": 0.06,
}


def _small_run(path):
    """The example as a parameter, in the default tier unless its small run
    is long and the slow tier runs it in full (above)."""
    minutes = SLOW_TIER_SMALL_RUN_MINUTES.get(path.stem)
    marks = () if minutes is None else pytest.mark.slow(minutes=minutes)
    return pytest.param(path, marks=marks, id=path.stem)


def _full_run(path):
    """The example as a parameter, marked with the tier that runs it in full."""
    minutes = GALLERY_TIER_MINUTES.get(path.stem)
    mark = pytest.mark.slow(minutes=0.8) if minutes is None else pytest.mark.gallery(minutes=minutes)
    return pytest.param(path, marks=mark, id=path.stem)


def _printed(path, capsys):
    """What the example prints when run as a script."""
    runpy.run_path(str(path), run_name="__main__")
    return capsys.readouterr().out


def test_there_are_examples():
    assert EXAMPLES


def test_the_gallery_tier_names_examples_that_exist():
    assert set(GALLERY_TIER_MINUTES) <= {path.stem for path in EXAMPLES}


def test_only_examples_run_in_full_by_the_slow_tier_have_their_small_run_there():
    stems = {path.stem for path in EXAMPLES}
    assert set(SLOW_TIER_SMALL_RUN_MINUTES) <= stems - set(GALLERY_TIER_MINUTES)


@pytest.mark.parametrize("path", [_small_run(path) for path in EXAMPLES])
def test_example_runs_at_small_settings(path, capsys, monkeypatch):
    monkeypatch.setenv(QUICK, "1")
    assert _printed(path, capsys)  # each example reports what it found


@pytest.mark.parametrize("path", [_full_run(path) for path in EXAMPLES])
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
