import numpy as np
import pytest


def pytest_collection_modifyitems(config, items):
    """Longest tests first: ``@pytest.mark.slow(minutes=m)`` gives a test's
    measured time, and the slow tier runs on two pytest-xdist processes
    (``--dist worksteal``), which split the list in order and then take
    from each other's queues. Started last, the longest test would finish
    long after the rest; started first, it runs beside them."""
    def minutes(item):
        marker = item.get_closest_marker("slow")
        return marker.kwargs.get("minutes", 0) if marker is not None else 0

    items.sort(key=minutes, reverse=True)  # stable: the rest keep their order


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
