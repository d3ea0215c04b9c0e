"""How the package's parallel kernels use their threads: they wait
passively, and a forked child runs them serially.

Waiting. numba's OpenMP threading layer (GNU OpenMP) keeps its idle
threads spinning for a while after each parallel region, by default. On
cores that other processes share (a pytest-xdist worker beside another, a
loky worker, a server beside a database), those spinning threads take the
cores the other processes need, and a parallel call waits for cores that
do no work. ``OMP_WAIT_POLICY=PASSIVE`` makes idle threads sleep at once.
The runtime reads the variable once, when it loads, which numba does at the
first parallel kernel launch; so it is set here, at import, unless the user
set it. Set ``OMP_WAIT_POLICY=ACTIVE`` before importing the package to keep
spinning threads (a little faster on a machine with nothing else to do).

OpenBLAS's own threads spin the same way after each matrix product, by
default for 2^28 cycles (longer than a sweep), and so take the
cores the compiled kernels between the products need. ``OPENBLAS_THREAD_TIMEOUT=4``
makes them sleep after 2^4 cycles; OpenBLAS reads it once, when it loads
with numpy, so the package sets it here only if numpy is not loaded yet, and
never over the user's own value.

Small products. BLAS's threads on products of a few hundred rows (a
sampler's factors, a relation's core) cost more to wake and join than they
save, and take the core the compiled kernels between the products need:
code made of such products runs them on one BLAS thread
(:func:`blas_on_one_thread`).

Small arrays. Waking sleeping threads costs more than a loop over a few
thousand entries: below :data:`SERIAL_BELOW` elements in
its largest array argument a kernel runs its serial twin (next paragraph),
whose numbers are the same.

Forking. GNU OpenMP cannot run parallel regions in a child made by
``os.fork()`` once the parent has started its threads (``multiprocessing``'s
default start method on Linux, pre-fork servers, joblib's multiprocessing
backend): numba terminates such a child at its first parallel kernel. Every
parallel kernel of the package is therefore compiled twice
(:func:`parallel_kernel`): a child forked after the parent started OpenMP's
threads runs the serial twin, the same loop body without threads, so it
computes the same numbers (the kernels' results do not depend on the thread
count), on one core. numba's ``tbb`` layer, where installed, and
``workqueue`` are fork-safe and keep their threads in a child.
"""

from __future__ import annotations

import functools
import os
import sys
import types

# Before numba, which loads numpy, whose OpenBLAS reads its settings then.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if "numpy" not in sys.modules:  # else OpenBLAS has read its settings already
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numba  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["parallel_kernel", "blas_on_one_thread", "SERIAL_BELOW"]

#: A kernel whose largest array argument has fewer elements runs serially
#: (module docstring; doc/evidence.rst gives the timings behind the size).
SERIAL_BELOW = 1 << 15

#: Set in a child forked after the parent started GNU OpenMP's threads.
_serial_only = False


def _openmp_threads_started():
    """Whether this process has started numba's OpenMP threads (whose
    GNU runtime a forked child cannot use)."""
    from numba.np.ufunc import parallel

    return bool(parallel._is_initialized) and numba.threading_layer() == "omp"


def _after_fork_in_child():
    global _serial_only
    if _openmp_threads_started():
        _serial_only = True


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _ForkSafeKernel:
    """A ``numba.njit(parallel=True)`` kernel with a serial twin for forked
    children and small arrays (module docstring). The twin is a copy of the function under
    its own qualified name, so numba's on-disk cache keeps the two apart,
    compiled with the same options (``cache``, ``nogil`` and any given to
    :func:`parallel_kernel`, such as ``fastmath``) but ``parallel``."""

    def __init__(self, function, options):
        functools.update_wrapper(self, function)
        self._function = function
        self._options = {"cache": True, "nogil": True, **options}
        self.parallel = numba.njit(parallel=True, **self._options)(function)
        self._serial = None

    @property
    def serial(self):
        if self._serial is None:
            f = self._function
            twin = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__,
                                      f.__closure__)
            twin.__qualname__ = f.__qualname__ + "__serial"
            self._serial = numba.njit(**self._options)(twin)
        return self._serial

    def __call__(self, *args):
        if _serial_only or _largest_array_size(args) < SERIAL_BELOW:
            return self.serial(*args)
        return self.parallel(*args)


def _largest_array_size(args):
    return max((a.size for a in args if isinstance(a, np.ndarray)), default=0)


@functools.cache
def _blas_controller():
    # Built once, at the first call, when scipy's BLAS (numba's np.dot) is
    # loaded beside numpy's: a controller sees the libraries loaded when it
    # is built, and building one costs more than a sweep of small data.
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def blas_on_one_thread():
    """A context in which the BLAS libraries run on one thread (module
    docstring, "Small products"); the thread counts are restored on exit."""
    return _blas_controller().limit(limits=1, user_api="blas")


def parallel_kernel(function=None, **options):
    """Compile ``function`` (its loops over ``numba.prange``) as a parallel
    numba kernel that a forked child, or a call on small arrays, runs
    serially (module docstring).

    Used bare (``@parallel_kernel``) or with numba options that both twins
    share (``@parallel_kernel(fastmath={"reassoc"})``); ``cache`` and
    ``nogil`` default to True, and ``parallel`` is this function's to set.
    Every parallel kernel of the package is built here
    (``tests/engine/test_fork.py`` walks the package to check it)."""
    if "parallel" in options:
        raise TypeError("parallel_kernel sets 'parallel' itself: the kernel is parallel, "
                        "its twin serial")
    if function is None:
        return lambda f: _ForkSafeKernel(f, options)
    return _ForkSafeKernel(function, options)
