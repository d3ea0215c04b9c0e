"""Run the benchmark suite and write its results.

    python benchmarks/run.py            # every family at full size (results/*.json)
    python benchmarks/run.py --quick    # every family at small sizes (results/quick/)
    python benchmarks/run.py cp oslo    # some families
    python benchmarks/run.py --target avx2 nmf   # kernels built for AVX2 (results/avx2/)

Each family (``suite/<family>.py``) writes one JSON file: the machine, the
versions, the BLAS and its kernel, the commit and the date, and for every
case each contender's timed runs (all of them), warm-up, peak memory,
quality and iteration counts. ``python benchmarks/make_page.py`` then
writes ``benchmarks/README.md`` from ``results/*.json`` (and the GPU's
``results/gpu.jsonl``, from ``python benchmarks/run_gpu.py`` on a machine
with a GPU).

OpenBLAS picks its kernel for the processor unless ``OPENBLAS_CORETYPE`` or
``OPENBLAS_L2_SIZE`` pin it; a user's machine pins nothing, so this command
runs itself again without them (tests and CI keep them). ``--target avx2``
runs it instead with every compiled kernel built for a CPU with AVX2 and no
AVX-512, as ``.ci/run`` builds the tests (numba's Haswell target, OpenBLAS's
Haswell kernels, NumPy without its AVX-512 paths), so one machine measures
both; the target is recorded in each results file.
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
#: ``target: variables`` of the compiled code's CPU target (``--target``);
#: NumPy's AVX-512 paths are switched off only where the CPU has them.
TARGETS = {
    "native": {},
    "avx2": {"NUMBA_CPU_NAME": "haswell", "OPENBLAS_CORETYPE": "Haswell"},
}
AVX512_NUMPY = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
TARGET_VARIABLES = (*PINS, "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NPY_DISABLE_CPU_FEATURES")


def target_environment(environ, target, has_avx512):
    """``environ`` with the OpenBLAS pins and every CPU-target variable
    replaced by ``target``'s (:data:`TARGETS`)."""
    env = {k: v for k, v in environ.items() if k not in TARGET_VARIABLES}
    env.update(TARGETS[target])
    if target == "avx2" and has_avx512:
        env.update(AVX512_NUMPY)
    return env


def _has_avx512():
    try:
        with open("/proc/cpuinfo") as info:
            return "avx512f" in info.read()
    except OSError:
        return False


def _run_for_target(target):
    """Re-execute this command with ``target``'s environment, before numpy
    loads, unless it runs with it already."""
    env = target_environment(os.environ, target, _has_avx512())
    if env != dict(os.environ):
        env["SKLEARN_PLTF_BENCHMARK_TARGET"] = target  # read back by the results' environment
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", metavar="family",
                        help="families to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--target", choices=TARGETS, default="native",
                        help="the CPU the compiled kernels are built for (default: this one)")
    args = parser.parse_args(argv)
    _run_for_target(args.target)
    sys.path.insert(0, HERE)
    from suite import FAMILIES
    from suite._protocol import environment, run_case

    unknown = sorted(set(args.families) - set(FAMILIES))
    if unknown:
        parser.error(f"unknown families {unknown}; choose from {', '.join(FAMILIES)}")
    out_dir = os.path.join(HERE, "results", "quick" if args.quick else "",
                           "" if args.target == "native" else args.target)
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
