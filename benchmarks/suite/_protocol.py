"""What every benchmark of the suite is, and how the runner times it.

A workload family is a module of :mod:`suite` with ``TITLE``, ``ABOUT`` (a
sentence for the page) and ``cases(quick)``, a list of :class:`Case`. A case
makes its data once (``setup``) and names its contenders, ours and the
peers'; the runner (``benchmarks/run.py``) times them all in one process:
first a warm-up run of each (compiled kernels loaded, allocator pools
primed, so neither side pays for first-run page faults the other escapes),
then ``repeats`` rounds that run every contender once each, in turn. Every
timed run is kept. The first timed run of each contender also gives its
peak memory (the resident set's high-water mark above the level before the
call) and its quality (computed outside the timing).

A whole fit of ours also gives the time it took to reach each peer's
quality (:func:`time_to_quality`): the same fit stopped after the fewest
iterations whose result is at least as good as the peer's, timed once
after the rounds; the whole fit's own time is the time to its converged
evidence.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable

#: How the runner times a case, for the page.
PROTOCOL = ("All contenders run in one process, alternated: a warm-up run of each "
            "(untimed), then every repeat runs each contender once, in turn. OpenBLAS "
            "chooses its own kernel (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset "
            "for the run).")


@dataclass
class Contender:
    """One implementation run on a case's data.

    ``run(data)`` does the measured work and returns a dict: ``result`` (what
    ``quality`` reads, not stored), ``info`` (iterations and the like, stored)
    and, for a per-sweep measure, ``seconds`` (the per-sweep time it measured
    itself, which replaces the wall time of the call).
    """

    name: str
    run: Callable
    ours: bool = False
    #: ``stopped_after(data, n_iter)``: the same fit stopped after ``n_iter``
    #: iterations (ours, for :func:`time_to_quality`), the output as ``run``'s.
    stopped_after: Callable | None = None


@dataclass
class Case:
    """A workload: its data, its contenders and what is measured.

    ``measure`` is ``"whole fit"`` (the wall time of ``fit`` at the
    contender's defaults, to its own stopping rule) or ``"per sweep"`` (one
    update of every factor, or the peer's iteration). ``quality(data,
    result)`` returns ``{name: value}`` for the page (e.g. the Poisson
    log-likelihood per entry of the fitted mean)."""

    name: str
    setup: Callable
    contenders: list
    measure: str = "whole fit"
    quality: Callable | None = None
    repeats: int = 3
    size: float | None = None  # for a family's figure of time against size
    notes: str = ""
    params: dict = field(default_factory=dict)
    #: Data for the warm-up runs when the case's own is too large to fit
    #: twice (imports and compiled kernels are what a warm-up primes; arrays
    #: of this size are mapped afresh at every call, warm or not).
    warmup_setup: Callable | None = None
    #: For a comparison among our own settings (thread counts, samplers, batch
    #: sizes), the contender every other is compared to: the page gives each
    #: contender's median over this one's in place of ours / peer.
    baseline: str | None = None
    #: Called with the data once the repeats are done (a cluster to close).
    teardown: Callable | None = None


def status_kib(name):
    """Read one ``kB`` field (e.g. ``VmRSS``) of ``/proc/self/status``."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise KeyError(name)


def timed(contender, data, peak=False):
    """Run ``contender`` on ``data``: ``(seconds, output, peak MiB or None)``."""
    baseline = None
    if peak:
        with open("/proc/self/clear_refs", "w") as clear_refs:  # VmHWM := VmRSS
            clear_refs.write("5")
        baseline = status_kib("VmRSS")
    start = time.perf_counter()
    output = contender.run(data)
    seconds = time.perf_counter() - start
    peak_mib = (status_kib("VmHWM") - baseline) / 1024 if peak else None
    return output.get("seconds", seconds), output, peak_mib


def run_case(case, log=print):
    """Warm-up, then ``case.repeats`` alternated rounds; the case's record."""
    data = case.setup()
    warmup_data = data if case.warmup_setup is None else case.warmup_setup()
    records = {c.name: {"name": c.name, "ours": c.ours, "seconds": [], "warmup_seconds": None,
                        "peak_mib": None, "quality": {}, "info": {}} for c in case.contenders}
    for contender in case.contenders:
        seconds, _, _ = timed(contender, warmup_data)
        records[contender.name]["warmup_seconds"] = seconds
    del warmup_data
    for round_ in range(case.repeats):
        for contender in case.contenders:
            record = records[contender.name]
            seconds, output, peak_mib = timed(contender, data, peak=round_ == 0)
            record["seconds"].append(seconds)
            log(f"  {case.name} | {contender.name}: {seconds:.4g} s {output.get('info', {})}")
            if round_ == 0:
                record["peak_mib"] = peak_mib
                record["info"] = output.get("info", {})
                if case.quality is not None:
                    record["quality"] = case.quality(data, output["result"])
    if case.measure == "whole fit" and case.quality is not None:
        _times_to_peer_quality(case, data, records, log)
    if case.teardown is not None:
        case.teardown(data)
    return {"name": case.name, "measure": case.measure, "repeats": case.repeats,
            "size": case.size, "notes": case.notes, "params": case.params,
            "baseline": case.baseline, "contenders": list(records.values())}


#: Whether a larger value of each quality is better.
HIGHER_IS_BETTER = {"loglik_per_entry": True, "heldout_loglik_per_entry": True,
                    "generalised_kl": False}


def time_to_quality(stopped_after, quality, data, target, n_iter, higher_is_better=True,
                    whole_fit_value=None):
    """The fewest iterations after which ``stopped_after(data, k)``'s result
    reaches ``target`` (by ``quality``'s first value), searched by doubling
    from 1 and then bisection up to ``n_iter`` (the whole fit's, whose
    quality ``whole_fit_value`` is run for when not given), and the seconds
    of one run stopped there; None where even ``n_iter`` does not reach it.
    Returns ``(n_iter, seconds, quality reached)``."""
    def meets(value):
        return value >= target if higher_is_better else value <= target

    def reached(k):
        value = next(iter(quality(data, stopped_after(data, k)["result"]).values()))
        return meets(value), value

    if whole_fit_value is None:
        good, value = reached(n_iter)
    else:
        good, value = meets(whole_fit_value), whole_fit_value
    if not good:
        return None
    low, high, best = 0, n_iter, value  # low fails (0: nothing run), high succeeds
    k = 1
    while k < high:
        good, value = reached(k)
        if good:
            high, best = k, value
            break
        low, k = k, 2 * k
    while high - low > 1:
        middle = (low + high) // 2
        good, value = reached(middle)
        if good:
            high, best = middle, value
        else:
            low = middle
    start = time.perf_counter()
    stopped_after(data, high)
    return high, time.perf_counter() - start, best


def _times_to_peer_quality(case, data, records, log):
    """For ours, per peer of a whole-fit case: :func:`time_to_quality` of the
    peer's quality, into the record's ``to_peer_quality``."""
    ours = next((c for c in case.contenders if c.ours and c.stopped_after), None)
    if ours is None:
        return
    record = records[ours.name]
    for peer in (c for c in case.contenders if not c.ours):
        name, target = next(iter(records[peer.name]["quality"].items()))
        found = time_to_quality(ours.stopped_after, case.quality, data, target,
                                record["info"]["n_iter"], HIGHER_IS_BETTER[name],
                                whole_fit_value=record["quality"][name])
        entry = {"peer": peer.name, "target": target, "n_iter": None, "seconds": None,
                 "quality": None}
        if found is not None:
            entry.update(zip(("n_iter", "seconds", "quality"), found))
        record.setdefault("to_peer_quality", []).append(entry)
        log(f"  {case.name} | {ours.name} to {peer.name}'s quality: {entry}")


def numba_cpu_name():
    """The CPU numba compiles the kernels for: ``NUMBA_CPU_NAME`` or the host's."""
    from numba.core import config
    from llvmlite import binding

    return config.CPU_NAME or binding.get_host_cpu_name()


def environment():
    """The machine, the versions and the BLAS this process runs with."""
    import numpy
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    import sklearn_pltf

    def version(module):
        try:
            return __import__(module).__version__
        except ImportError:
            return None

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    mem_kib = next(int(line.split()[1]) for line in open("/proc/meminfo")
                   if line.startswith("MemTotal"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", root, "status", "--porcelain", "--",
                                 "sklearn_pltf"], capture_output=True, text=True).stdout)
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(), "numpy": numpy.__version__,
        "scipy": scipy.__version__, "scikit-learn": sklearn.__version__,
        "sklearn_pltf": sklearn_pltf.__version__, "numba": version("numba"),
        "tensorly": version("tensorly"), "pyttb": version("pyttb"),
        "blas": [{key: lib.get(key) for key in ("internal_api", "version", "architecture",
                                                  "num_threads", "filepath")}
                 for lib in threadpool_info() if lib.get("user_api") == "blas"],
        "openblas_env": {name: os.environ.get(name)
                         for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
        "target": os.environ.get("SKLEARN_PLTF_BENCHMARK_TARGET", "native"),
        "numba_cpu": numba_cpu_name(),
        "commit": commit + ("+local changes" if dirty else ""),
        "date": time.strftime("%Y-%m-%d"),
        "protocol": PROTOCOL,
    }
