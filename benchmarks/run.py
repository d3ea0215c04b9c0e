"""Run the benchmark suite and write its results.

    python benchmarks/run.py            # every family at full size (results/*.json)
    python benchmarks/run.py --quick    # every family at small sizes (results/quick/)
    python benchmarks/run.py cp oslo    # some families

Each family (``suite/<family>.py``) writes one JSON file: the machine, the
versions, the BLAS and its kernel, the commit and the date, and for every
case each contender's timed runs (all of them), warm-up, peak memory,
quality and iteration counts. ``python benchmarks/make_page.py`` then
writes ``benchmarks/README.md`` from ``results/*.json`` (and the GPU's
``results/gpu.jsonl``, from ``python benchmarks/run_gpu.py`` on a machine
with a GPU).

OpenBLAS picks its kernel for the processor unless ``OPENBLAS_CORETYPE`` or
``OPENBLAS_L2_SIZE`` pin it; a user's machine pins nothing, so this command
runs itself again without them (tests and CI keep them).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PINS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _without_blas_pins():
    """Re-execute this command without the OpenBLAS pins, before numpy loads."""
    if any(name in os.environ for name in PINS):
        env = {k: v for k, v in os.environ.items() if k not in PINS}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def main(argv=None):
    _without_blas_pins()
    sys.path.insert(0, HERE)
    from suite import FAMILIES
    from suite._protocol import environment, run_case

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", metavar="family",
                        help=f"families to run, of {', '.join(FAMILIES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.families) - set(FAMILIES))
    if unknown:
        parser.error(f"unknown families {unknown}; choose from {', '.join(FAMILIES)}")
    out_dir = os.path.join(HERE, "results", "quick" if args.quick else "")
    os.makedirs(out_dir, exist_ok=True)
    started = time.perf_counter()
    for family in args.families or FAMILIES:
        module = importlib.import_module(f"suite.{family}")
        print(f"{family}: {module.TITLE}", flush=True)
        cases = [run_case(case, log=lambda line: print(line, flush=True))
                 for case in module.cases(args.quick)]
        record = {"family": family, "title": module.TITLE, "about": module.ABOUT,
                  "quick": args.quick, "environment": environment(), "cases": cases}
        path = os.path.join(out_dir, f"{family}.json")
        with open(path, "w") as out:
            json.dump(record, out, indent=1)
            out.write("\n")
        print(f"  -> {os.path.relpath(path, os.path.dirname(HERE))}", flush=True)
    print(f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
