"""How the package's parallel kernels wait for work: passively.

numba's OpenMP threading layer (GNU OpenMP) keeps its idle threads spinning
for a while after each parallel region, by default. On cores that other
processes share (a pytest-xdist worker beside another, a loky worker, a
server beside a database), those spinning threads take the cores the other
processes need, and a parallel call waits for cores that do no work.
``OMP_WAIT_POLICY=PASSIVE`` makes idle threads sleep at once. The runtime
reads the variable once, when it loads, which numba does at the first
parallel kernel launch; so it is set here, at import, unless the user set it.
Set ``OMP_WAIT_POLICY=ACTIVE`` before importing the package to keep spinning
threads (the timings in ``benchmarks/README.md`` compare both).
"""

from __future__ import annotations

import os

__all__: list = []

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
