"""A child made by ``os.fork()`` after a parallel fit fits too (GNU OpenMP,
numba's usual threading layer on Linux, cannot run parallel regions in such
a child: the package's kernels run serially there), and every parallel
kernel of the package has the serial twin that makes it so."""

import ast
import importlib
import os
import pathlib
import pkgutil

import numba
import numpy as np
import pytest
import sparse

import sklearn_pltf
from sklearn_pltf import PLTF, BayesianNMF, PoissonCP
from sklearn_pltf.engine._threads import _ForkSafeKernel, parallel_kernel

fork_only = pytest.mark.skipif(not hasattr(os, "fork"), reason="the platform has no fork()")


def _in_a_forked_child(compute):
    """``compute()`` (a float64 array) in a child made by ``os.fork()``, its
    numbers sent back through a pipe; the child must exit normally."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            os.close(read)
            child = np.ascontiguousarray(compute(), dtype=np.float64)
            os.write(write, child.tobytes())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    received = b""
    while chunk := os.read(read, 1 << 16):
        received += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert not os.WIFSIGNALED(status), f"the child was killed by signal {os.WTERMSIG(status)}"
    assert os.WEXITSTATUS(status) == 0
    return np.frombuffer(received)


def _fit_all(dense, coo):
    """Factors of fits that run every kind of parallel kernel: dense
    element-wise passes, sparse entry kernels, the Gamma moments and bound."""
    nmf = BayesianNMF(2, random_state=0).fit(dense)
    cp = PoissonCP(3, random_state=0).fit(coo)
    return np.concatenate([np.ravel(f) for f in (*nmf.factors_, *cp.factors_,
                                                  [nmf.log_evidence_, cp.log_evidence_])])


@fork_only
@pytest.mark.usefixtures("kernels_in_parallel_at_any_size")
def test_a_forked_child_fits_and_gets_the_parent_numbers():
    rng = np.random.default_rng(0)
    dense = rng.poisson(2.0, (30, 12)).astype(float)
    coo = sparse.COO.from_numpy(rng.poisson(1.0, (8, 7, 6)))
    parent = _fit_all(dense, coo)  # starts the parallel runtime's threads
    child = _in_a_forked_child(lambda: _fit_all(dense, coo))
    np.testing.assert_array_equal(child, parent)


def _fit_two_factor_models(dense, coo, entries):
    """Fits and predictions of models of two factors that share their latent
    index, which the pair kernels serve (``pair_xhat``, ``pair_delta``):
    sparse NMF, a dense NMF's ``predict_entries``, and ``"ir,jr->ij"``."""
    sparse_nmf = BayesianNMF(2, random_state=0).fit(coo)
    dense_nmf = BayesianNMF(2, random_state=0).fit(dense)
    pltf = PLTF("ir,jr->ij", 2, random_state=0).fit(coo)
    return np.concatenate([np.ravel(f) for f in (
        *sparse_nmf.factors_, [sparse_nmf.log_evidence_], sparse_nmf.predict_entries(entries),
        dense_nmf.predict_entries(entries),
        *pltf.factors_, [pltf.log_evidence_], pltf.predict_entries(entries))])


@fork_only
@pytest.mark.usefixtures("kernels_in_parallel_at_any_size")
def test_a_forked_child_fits_and_predicts_two_factor_models():
    rng = np.random.default_rng(1)
    dense = rng.poisson(1.5, (25, 10)).astype(float)
    coo = sparse.COO.from_numpy(rng.poisson(0.7, (25, 10)))
    entries = np.stack([rng.integers(0, 25, 40), rng.integers(0, 10, 40)], axis=1)
    parent = _fit_two_factor_models(dense, coo, entries)  # starts the runtime's threads
    child = _in_a_forked_child(lambda: _fit_two_factor_models(dense, coo, entries))
    np.testing.assert_array_equal(child, parent)


def test_the_serial_twins_below_the_size_give_the_parallel_twins_numbers(monkeypatch):
    """Small arrays run the serial twin (``SERIAL_BELOW``): the same numbers."""
    from sklearn_pltf.engine import _threads

    rng = np.random.default_rng(2)
    dense = rng.poisson(2.0, (30, 12)).astype(float)
    coo = sparse.COO.from_numpy(rng.poisson(1.0, (8, 7, 6)))
    serial = _fit_all(dense, coo)
    monkeypatch.setattr(_threads, "SERIAL_BELOW", 0)
    np.testing.assert_array_equal(_fit_all(dense, coo), serial)


def _fill(out):  # pragma: no cover - compiled
    for i in numba.prange(out.size):
        out[i] = i


def test_a_kernel_runs_its_serial_twin_below_the_size_and_threads_from_it(monkeypatch):
    from sklearn_pltf.engine._threads import SERIAL_BELOW

    kernel, ran = parallel_kernel(_fill), []
    monkeypatch.setattr(kernel, "_serial", lambda out: ran.append(("serial", out.size)))
    monkeypatch.setattr(kernel, "parallel", lambda out: ran.append(("parallel", out.size)))
    kernel(np.empty(SERIAL_BELOW - 1))
    kernel(np.empty((2, SERIAL_BELOW // 2)))
    assert ran == [("serial", SERIAL_BELOW - 1), ("parallel", SERIAL_BELOW)]


# ------------------------------------------------------------------ every parallel kernel
_PACKAGE_ROOT = pathlib.Path(sklearn_pltf.__file__).parent
_MECHANISM = _PACKAGE_ROOT / "engine" / "_threads.py"  # the one place a parallel dispatcher is built
_NUMBA_DECORATORS = {"jit", "njit", "generated_jit", "vectorize", "guvectorize", "cfunc",
                     "stencil"}


def _package_modules():
    """Every module of the package, imported (``__main__`` is the command line)."""
    modules = [sklearn_pltf]
    for info in pkgutil.walk_packages(sklearn_pltf.__path__, "sklearn_pltf."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        modules.append(importlib.import_module(info.name))
    return modules


def _package_objects(module):
    """The module's attributes and those of the classes it defines, with
    static and class methods unwrapped."""
    for value in list(vars(module).values()):
        yield value
        if isinstance(value, type) and value.__module__ == module.__name__:
            for member in vars(value).values():
                yield getattr(member, "__func__", member)


def _ours(dispatcher):
    return getattr(dispatcher.py_func, "__module__", "").startswith("sklearn_pltf")


def _compiled_parallel(module_list):
    """Numba dispatchers of the package compiled with ``parallel=True``,
    bare or inside a :func:`parallel_kernel`, and the latter."""
    bare, kernels = {}, {}
    for module in module_list:
        for value in _package_objects(module):
            if isinstance(value, _ForkSafeKernel):
                kernels[id(value)] = value
            elif (isinstance(value, numba.core.dispatcher.Dispatcher) and _ours(value)
                  and value.targetoptions.get("parallel")):
                bare[id(value)] = value
    return list(bare.values()), list(kernels.values())


def _parallel_decorations_in_source():
    """``file:line`` of every numba decorator or call in the package's source
    that asks for a parallel target, outside :mod:`sklearn_pltf.engine._threads`."""
    found = []
    for path in sorted(_PACKAGE_ROOT.rglob("*.py")):
        if path == _MECHANISM:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Call):
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                node.func, "id", None)
            if callee not in _NUMBA_DECORATORS:
                continue
            for keyword in node.keywords:
                asks = (keyword.arg == "parallel"
                        and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value))
                asks |= (keyword.arg == "target" and isinstance(keyword.value, ast.Constant)
                         and keyword.value.value == "parallel")
                if asks:
                    found.append(f"{path.relative_to(_PACKAGE_ROOT.parent)}:{node.lineno}")
    return found


def test_every_parallel_kernel_has_a_serial_twin():
    """Found by walking the package, not listed: a parallel numba kernel is
    built only through :func:`parallel_kernel`, whose serial twin (same code,
    same options but ``parallel``) a forked child runs."""
    bare, kernels = _compiled_parallel(_package_modules())
    assert not bare, ("parallel numba kernels without a serial twin (use "
                      "sklearn_pltf.engine._threads.parallel_kernel): "
                      + ", ".join(f"{d.py_func.__module__}.{d.py_func.__qualname__}" for d in bare))
    assert not _parallel_decorations_in_source(), (
        "parallel numba targets built outside sklearn_pltf.engine._threads.parallel_kernel: "
        + ", ".join(_parallel_decorations_in_source()))
    assert kernels, "the walk found no parallel kernel at all"
    for kernel in kernels:
        parallel, serial = kernel.parallel, kernel.serial
        name = f"{kernel.__module__}.{kernel.__qualname__}"
        assert parallel.targetoptions.get("parallel"), name
        assert not serial.targetoptions.get("parallel"), name
        assert serial.py_func.__code__ is parallel.py_func.__code__, name
        assert serial.py_func.__qualname__ != parallel.py_func.__qualname__, name  # own cache
        options = {k: v for k, v in parallel.targetoptions.items() if k != "parallel"}
        assert serial.targetoptions == options, name


def test_the_walk_sees_a_parallel_kernel_without_its_twin():
    """The check above fails for a kernel that skips :func:`parallel_kernel`."""
    import types

    module = types.ModuleType("sklearn_pltf._bare_kernel")

    def kernel(out):  # pragma: no cover - compiled
        for i in numba.prange(out.size):
            out[i] = i

    kernel.__module__ = module.__name__
    module.bare = numba.njit(parallel=True)(kernel)
    module.twinned = parallel_kernel(kernel)
    bare, kernels = _compiled_parallel([module])
    assert bare == [module.bare]
    assert kernels == [module.twinned]


def test_blas_on_one_thread_sets_one_thread_and_restores_the_counts():
    from threadpoolctl import threadpool_info, threadpool_limits

    from sklearn_pltf.engine._threads import blas_on_one_thread

    def blas_threads():
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    with threadpool_limits(limits=2, user_api="blas"):  # whatever the workers were given
        before = blas_threads()
        assert before and set(before) == {2}  # numpy's BLAS at least
        with blas_on_one_thread():
            assert set(blas_threads()) == {1}
        assert blas_threads() == before
