"""What every validation script sets up before numpy loads: one core (so
the wall times compare), matplotlib's Agg backend, and ``OUT``, the folder
its figure and numbers go to (created), and :func:`save_figure`; for a
study that reports as it goes, :func:`line` and :func:`write_json`. Import
it first."""

import json
import os
import pathlib
import time

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

OUT = pathlib.Path(__file__).resolve().parents[1] / "_static" / "validation"
OUT.mkdir(parents=True, exist_ok=True)


def save_figure(fig, path):
    """Write ``fig`` to ``path`` at the page's resolution and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


#: The measurements :func:`line` printed, for :func:`write_json`.
LINES = []


def line(**fields):
    """Print one measurement as a JSON line and keep it for :func:`write_json`."""
    LINES.append(fields)
    print(json.dumps(fields, default=float), flush=True)


def write_json(name, start=None, **result):
    """Write ``OUT / <name>.json``: ``result`` (a summary, the settings), the
    wall seconds since ``start`` (a ``time.perf_counter()``), if given, and
    every :func:`line` so far; a ``summary`` dict is printed too, a row each."""
    for key, value in result.get("summary", {}).items():
        print(f"  {key:60s} {value:8.3f}")
    if start is not None:
        result["wall_seconds"] = round(time.perf_counter() - start, 1)
    with open(OUT / f"{name}.json", "w") as f:
        json.dump({**result, "lines": LINES}, f, indent=1, default=float)
        f.write("\n")


def chosen_parts(parser, parts, known):
    """The parts of a study to run: ``parts`` as given on the command line
    (all of ``known`` when none), or the parser's error naming the unknown."""
    parts = parts or list(known)
    if set(parts) - set(known):
        parser.error(f"unknown parts {sorted(set(parts) - set(known))}")
    return parts
