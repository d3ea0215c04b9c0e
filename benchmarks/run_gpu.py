"""The array-API engine on a GPU: correctness against the NumPy engine and
timings against plain PyTorch implementations of the same updates.

The benchmark suite's GPU entry point (``benchmarks/run.py`` runs the CPU
families). Usage, from the repository root on a machine with PyTorch (and a
CUDA GPU)::

    python benchmarks/run_gpu.py                 # cuda, full sizes (NMF 20000 x 10000, CP 300^3)
    python benchmarks/run_gpu.py --small --device cpu   # the same script, small, on the CPU

A full-size run appends its lines to ``benchmarks/results/gpu.jsonl`` (a
``--small`` run only prints them, unless ``--output`` names a file), each
with the run's number (one more than the file's last) and the code it ran
(the commit, ``--code`` to describe local changes); ``--note TEXT`` adds a
line of text to the run. ``python benchmarks/make_page.py`` writes the
benchmark page's GPU section from that file.

It sets ``SCIPY_ARRAY_API=1`` before scipy is imported, as scikit-learn's
``array_api_dispatch`` requires. It prints one JSON line per measurement:

- ``machine``: the device, PyTorch, the CPU cores, numpy, scikit-learn and
  the date;
- ``check``: small fits (NMF by VB and EM, CP, Tucker, missing entries,
  Bernoulli–Poisson), run to ``tol=1e-7`` nats, on the device against the
  NumPy engine: the bound's relative difference (target 1e-8 in float64);
- ``iteration``: seconds per VB step of Poisson NMF (20000 x 10000, rank 50)
  and of Poisson CP (300³, rank 20) by the package on the device, with and
  without its bound, against a plain PyTorch implementation of the same
  updates (digamma, X / X̂, the contractions, the Gamma shapes and rates),
  in float64 and float32: 10 chained steps (each from the last one's state,
  as in a fit), medians of ``--repeats`` after a warm-up;
- ``cpu-iteration``: the NumPy engine's step on the same NMF problem on this
  machine's cores (``--skip-cpu`` leaves it out);
- ``fit``: a whole ``BayesianNMF(50).fit`` at the defaults (SQUAREM, the
  bound to ``tol``, the final fold-in) in float64 and in float32, its
  iterations and bound; ``--profile FILE`` writes PyTorch's profile of the
  float64 fit (operators by device time) to FILE.
"""

from __future__ import annotations

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
import torch  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_pltf import PLTF, BayesianNMF, PoissonCP, TuckerVB  # noqa: E402
from sklearn_pltf.engine._array_data import as_array_api_tensor  # noqa: E402
from sklearn_pltf.engine._contract import make_contractor  # noqa: E402
from sklearn_pltf.engine._data import as_observed_tensor  # noqa: E402
from sklearn_pltf.inference import vb  # noqa: E402
from sklearn_pltf.inference._common import gamma_priors, priors_for  # noqa: E402
from sklearn_pltf.engine.model import Model  # noqa: E402


RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "gpu.jsonl"
_OUTPUT = []  # files the lines also go to (``--output``)
_RUN = {}  # the run's number and code, on every line


def _line(**fields):
    text = json.dumps({**fields, **_RUN})
    print(text, flush=True)
    for path in _OUTPUT:
        with open(path, "a") as handle:
            handle.write(text + "\n")


def _next_run(path):
    """One more than the last run recorded in ``path`` (1 for a new file)."""
    if not os.path.exists(path):
        return 1
    with open(path) as handle:
        return 1 + max((json.loads(line).get("run", 0) for line in handle if line.strip()),
                       default=0)


def _commit():
    """The checkout's short commit, and whether the package has local changes."""
    root = pathlib.Path(__file__).resolve().parents[1]

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--", "sklearn_pltf")
    return git("rev-parse", "--short", "HEAD") + (" + local changes" if dirty else "")


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_seconds(fn, device, repeats):
    fn()  # warm-up: kernels loaded, plans made, caches filled
    _sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ------------------------------------------------------------------ correctness
def check_against_numpy(device):
    rng = np.random.default_rng(0)
    rates = rng.gamma(1.0, 2.0, (200, 5)) @ rng.gamma(1.0, 1.0, (5, 120))
    counts = rng.poisson(rates).astype(float)
    tensor = rng.poisson(np.einsum("ir,jr,kr->ijk", *(rng.gamma(1.0, 1.0, (n, 3))
                                                      for n in (30, 25, 20)))).astype(float)
    missing = counts.copy()
    missing[rng.random(counts.shape) < 0.2] = np.nan
    # Run to a tight tolerance: at the default one (0.1 nats) the two engines'
    # rounding can end the runs an iteration apart, up to 0.1 nats from each other.
    tight = dict(tol=1e-7, max_iter=20000, random_state=0)
    em = dict(method="em", prior_shape=1.0, **tight)
    cases = [("nmf-vb", BayesianNMF(5, **tight), counts),
             ("nmf-em", BayesianNMF(5, **em), counts),
             ("nmf-missing", BayesianNMF(5, **tight), missing),
             ("cp-vb", PoissonCP(3, **tight), tensor),
             ("tucker-vb", TuckerVB((2, 3, 2), **tight), tensor),
             ("pltf-em", PLTF("ir,jr,kr->ijk", 3, **em), tensor),
             ("bernoulli", BayesianNMF(5, likelihood="bernoulli", **tight),
              (counts > 1).astype(float))]
    for name, estimator, X in cases:
        reference = sklearn.clone(estimator).fit(X)
        with sklearn.config_context(array_api_dispatch=True):
            fitted = sklearn.clone(estimator).fit(torch.asarray(X, device=device))
            W = fitted.transform(torch.asarray(X[:10], device=device))
        relative = abs(fitted.lower_bound_ - reference.lower_bound_) / abs(reference.lower_bound_)
        _line(kind="check", case=name, device=str(fitted.factors_[0].device),
              bound=fitted.lower_bound_, numpy_bound=reference.lower_bound_,
              relative_difference=relative, within_1e_8=bool(relative <= 1e-8),
              transform_max_relative=float(np.max(np.abs(W.cpu().numpy() - reference.transform(
                  X[:10])) / np.maximum(reference.transform(X[:10]), 1e-300))))


# ------------------------------------------------------------- plain PyTorch VB
def _gamma_means(shape, scale):
    return shape * scale, torch.exp(torch.special.digamma(shape)) * scale


def plain_nmf_step(X, state, a=1.0, b=1.0):
    """Cemgil (2009) VB for Poisson NMF, X ≈ W H: one sweep, as the package's."""
    cw, dw, ch, dh = state
    ew, lw = _gamma_means(cw, dw)
    eh, lh = _gamma_means(ch, dh)
    ratio = X / (lw @ lh)
    cw_new = a + lw * (ratio @ lh.T)
    ch_new = a + lh * (lw.T @ ratio)
    dw_new = 1.0 / (b + eh.sum(dim=1)[None, :])
    ew_new = cw_new * dw_new
    dh_new = 1.0 / (b + ew_new.sum(dim=0)[:, None])
    return cw_new, dw_new, ch_new, dh_new


def plain_cp_step(X, state, a=1.0, b=1.0):
    """The same for Poisson CP, X ≈ Σ_r A_ir B_jr C_kr (MTTKRPs by einsum)."""
    shapes, scales = list(state[0]), list(state[1])
    means = [_gamma_means(c, d) for c, d in zip(shapes, scales)]
    geometric = [m[1] for m in means]
    ratio = X / torch.einsum("ir,jr,kr->ijk", *geometric)
    pulls = [torch.einsum("ijk,jr,kr->ir", ratio, geometric[1], geometric[2]),
             torch.einsum("ijk,ir,kr->jr", ratio, geometric[0], geometric[2]),
             torch.einsum("ijk,ir,jr->kr", ratio, geometric[0], geometric[1])]
    expected = [m[0] for m in means]
    for n in range(3):
        shapes[n] = a + geometric[n] * pulls[n]
        others = [expected[m].sum(dim=0) for m in range(3) if m != n]
        scales[n] = 1.0 / (b + others[0] * others[1])[None, :]
        expected[n] = shapes[n] * scales[n]
    return shapes, scales


# ------------------------------------------------------------------- timings
def _poisson_data(shape_of_factors, subscripts, device, dtype, seed=0):
    generator = torch.Generator(device=device).manual_seed(seed)
    factors = [torch.empty(s, device=device, dtype=torch.float64).exponential_(generator=generator)
               for s in shape_of_factors]
    rate = torch.einsum(subscripts, *factors) / shape_of_factors[0][1]
    return torch.poisson(rate, generator=generator).to(dtype)


def _chained(step, state, n_steps):
    """``n_steps`` steps, each from the last one's state (a cached X̂ of the
    same factors is then never reused by mistake); seconds per step."""

    def run():
        current = state
        for _ in range(n_steps):
            current = step(current)
        return current

    return run


def _package_iterations(X, model_string, sizes, n_steps):
    """Chained VB steps of the package, without and with the bound."""
    data = as_array_api_tensor(X, None, __import__("array_api_compat").array_namespace(X))
    model = Model.parse(model_string).bind(data.shape, sizes, {})
    contractor = make_contractor(model, data)
    priors = priors_for(gamma_priors(model, 1.0, 1.0), data)
    state = vb.init(np.random.default_rng(0), model, contractor, priors)
    return [_chained(lambda s, objective=objective: vb.step(s, contractor, priors, objective)[0],
                     state, n_steps) for objective in (False, True)]


def _time_against_plain(problem, X, state, plain_step, model_string, sizes, device, repeats,
                        n_steps):
    """Seconds per step of ``plain_step`` and of the package's VB (without and
    with its bound) on ``X``; one JSON line. Returns the package's with the bound."""
    plain = _median_seconds(_chained(lambda s: plain_step(X, s), state, n_steps),
                            device, repeats) / n_steps
    update, with_bound = _package_iterations(X, model_string, sizes, n_steps)
    ours = _median_seconds(update, device, repeats) / n_steps
    ours_bound = _median_seconds(with_bound, device, repeats) / n_steps
    _line(kind="iteration", problem=problem, dtype=str(X.dtype), repeats=repeats,
          plain_torch_s=plain,
          package_update_s=ours, package_with_bound_s=ours_bound,
          ratio_update=ours / plain, ratio_with_bound=ours_bound / plain)
    return ours_bound


def _time_nmf(rows, columns, rank, device, dtype, repeats, n_steps):
    X = _poisson_data([(rows, rank), (rank, columns)], "ik,kj->ij", device, dtype)
    state = tuple(torch.ones(s, device=device, dtype=dtype)
                  for s in ((rows, rank), (rows, rank), (rank, columns), (rank, columns)))
    return _time_against_plain(f"nmf {rows}x{columns} rank {rank}", X, state, plain_nmf_step,
                               "ik,kj->ij", {"k": rank}, device, repeats, n_steps)


def _time_cp(side, rank, device, dtype, repeats, n_steps):
    X = _poisson_data([(side, rank)] * 3, "ir,jr,kr->ijk", device, dtype)
    state = ([torch.ones(side, rank, device=device, dtype=dtype)] * 3,
             [torch.ones(side, rank, device=device, dtype=dtype)] * 3)
    return _time_against_plain(f"cp {side}^3 rank {rank}", X, state, plain_cp_step,
                               "ir,jr,kr->ijk", {"r": rank}, device, repeats, n_steps)


def sizes(small):
    """The NMF problem's shape and rank, and the CP problem's side and rank."""
    return ((2000, 1000), 20, 60, 5) if small else ((20000, 10000), 50, 300, 20)


def time_iterations(device, repeats, small, n_steps=10):
    """The ``iteration`` lines; returns the package's float64 NMF step (with
    its bound) in seconds."""
    (rows, columns), rank, side, cp_rank = sizes(small)
    nmf_float64 = None
    for dtype in (torch.float64, torch.float32):
        seconds = _time_nmf(rows, columns, rank, device, dtype, repeats, n_steps)
        nmf_float64 = seconds if dtype == torch.float64 else nmf_float64
        _time_cp(side, cp_rank, device, dtype, repeats, n_steps)
    return nmf_float64


def time_cpu_iteration(shape, rank):
    """The NumPy engine's VB step (its bound included) on this machine's cores."""
    X = _poisson_data([(shape[0], rank), (rank, shape[1])], "ik,kj->ij", torch.device("cpu"),
                      torch.float64).numpy()
    data = as_observed_tensor(X)
    model = Model.parse("ik,kj->ij").bind(data.shape, {"k": rank}, {})
    contractor = make_contractor(model, data)
    priors = gamma_priors(model, 1.0, 1.0)
    state = vb.init(np.random.default_rng(0), model, contractor, priors)
    # Warm-up (numba kernels, plans, layouts); the timed step then starts where
    # it ended, with the X̂ its bound left, as every step of a fit does.
    state, _ = vb.step(state, contractor, priors)
    start = time.perf_counter()
    vb.step(state, contractor, priors)
    seconds = time.perf_counter() - start
    _line(kind="cpu-iteration", problem=f"nmf {shape[0]}x{shape[1]} rank {rank}",
          cores=os.cpu_count(), seconds=seconds)
    return seconds


def time_whole_fit(device, shape, rank, profile=None):
    """Whole ``BayesianNMF(rank).fit`` at the defaults, in float64 and float32
    (the float32 bound's relative difference from the float64 one printed);
    with ``profile``, the float64 fit again under PyTorch's profiler, its
    operators by device time written to that file."""
    X = _poisson_data([(shape[0], rank), (rank, shape[1])], "ik,kj->ij", device, torch.float64)
    bounds = {}
    for dtype in (torch.float64, torch.float32):
        given = X.to(dtype)
        with sklearn.config_context(array_api_dispatch=True):
            with warnings.catch_warnings():  # the warm-up stops before convergence on purpose
                warnings.simplefilter("ignore", ConvergenceWarning)
                BayesianNMF(rank, random_state=1, max_iter=3).fit(given[:200])  # another shape
            _sync(device)
            start = time.perf_counter()
            fitted = BayesianNMF(rank, random_state=0).fit(given)
            _sync(device)
        seconds = time.perf_counter() - start
        bounds[dtype] = fitted.lower_bound_
        _line(kind="fit", problem=f"BayesianNMF({rank}).fit on {shape[0]}x{shape[1]}",
              dtype=str(dtype), seconds=seconds, n_iter=fitted.n_iter_,
              converged=bool(fitted.converged_), bound=fitted.lower_bound_,
              relative_to_float64=abs(fitted.lower_bound_ - bounds[torch.float64])
              / abs(bounds[torch.float64]))
        del given, fitted
    if profile is not None:
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as profiler

        activities = [ProfilerActivity.CPU] + (
            [ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with sklearn.config_context(array_api_dispatch=True), profiler(activities=activities) as run:
            BayesianNMF(rank, random_state=0).fit(X)
            _sync(device)
        sort = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
        with open(profile, "w") as handle:
            handle.write(run.key_averages().table(sort_by=sort, row_limit=40) + "\n")
            handle.write(run.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="small sizes, for a quick run")
    parser.add_argument("--skip-cpu", action="store_true", help="leave out the NumPy engine's step")
    parser.add_argument("--output", help="append the JSON lines to this file (default: "
                        "benchmarks/results/gpu.jsonl at full size, none with --small)")
    parser.add_argument("--code", help="what code ran, for the page (default: the commit)")
    parser.add_argument("--note", action="append", default=[],
                        help="a line of text recorded with the run (repeatable)")
    parser.add_argument("--profile", help="profile the whole float64 fit into this file")
    parser.add_argument("--parts", nargs="+", default=["check", "iteration", "fit"],
                        choices=["check", "iteration", "fit"], help="what to run (default: all)")
    args = parser.parse_args()
    output = args.output or (None if args.small else str(RESULTS))
    if output:
        _OUTPUT.append(output)
        _RUN.update(run=_next_run(output), code=args.code or _commit())
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    _line(kind="machine", device=name, torch=torch.__version__, cpu_count=os.cpu_count(),
          date=time.strftime("%Y-%m-%d"), numpy=np.__version__,
          **{"scikit-learn": sklearn.__version__})
    shape_rank = sizes(args.small)[:2]
    if "check" in args.parts:
        check_against_numpy(device)
    if "iteration" in args.parts:
        on_device = time_iterations(device, args.repeats, args.small)
        if not args.skip_cpu:
            cpu = time_cpu_iteration(*shape_rank)
            _line(kind="speed-up", problem="nmf float64, step with bound",
                  cpu_over_device=cpu / on_device)
    if "fit" in args.parts:
        time_whole_fit(device, *shape_rank, args.profile)
    for text in args.note:
        _line(kind="note", text=text)


if __name__ == "__main__":
    main()
