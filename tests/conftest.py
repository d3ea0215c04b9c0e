import os
import sys
from pathlib import Path

# scikit-learn's array API dispatch (tests/engine/test_array_api.py) needs
# scipy's own array API support, which scipy reads once, when first imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

# Test modules in every folder import the shared helpers as ``from _helpers import ...``.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pytest  # noqa: E402


def pytest_configure(config):
    """Each pytest-xdist worker keeps to its share of the cores.

    Both tiers run on several worker processes. numba's parallel kernels and
    BLAS start one thread per core in every process, so two workers on two
    cores would run four busy threads, and each kernel's threads would wait
    on each other. The kernels' sums are split into a fixed set of blocks,
    so results do not depend on the thread count.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None:
        return
    import numba
    from threadpoolctl import threadpool_limits

    share = max(1, (os.cpu_count() or 1) // int(workers))
    numba.set_num_threads(min(share, numba.config.NUMBA_NUM_THREADS))
    threadpool_limits(share)  # not a context: holds for the worker's life


@pytest.hookimpl(trylast=True)  # after -m has deselected: the tests that run
def pytest_collection_modifyitems(config, items):
    """Longest tests first on every worker: ``@pytest.mark.slow(minutes=m)``
    (or ``gallery(minutes=m)``) gives a test's measured time. pytest-xdist's ``--dist worksteal`` gives
    each worker a contiguous part of the list, and a worker out of work
    takes from the end of another's: where tests are timed (the slow tier)
    they are dealt out in turn (the longest to the first worker's part, the
    next to the second's, ...), so each part starts with its share of the
    longest and ends with short ones.
    Started last, a long test would finish long after the rest; started
    first, it runs beside them."""
    def minutes(item):
        marker = item.get_closest_marker("slow") or item.get_closest_marker("gallery")
        return marker.kwargs.get("minutes", 0) if marker is not None else 0

    items.sort(key=minutes, reverse=True)  # stable: the rest keep their order
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers > 1 and any(minutes(item) > 0 for item in items):
        # The first workers' parts are the shorter ones where the count does
        # not divide (xdist sends len // workers left to each in turn).
        items[:] = [item for turn in reversed(range(workers)) for item in items[turn::workers]]


@pytest.fixture
def kernels_in_parallel_at_any_size(monkeypatch):
    """Every parallel kernel runs its parallel twin, however small its
    arrays (below ``SERIAL_BELOW`` elements it runs its serial one), for the
    tests that compare thread counts or fork after the threads started."""
    from sklearn_pltf.engine import _threads

    monkeypatch.setattr(_threads, "SERIAL_BELOW", 0)


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
