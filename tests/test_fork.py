"""A child made by ``os.fork()`` after a parallel fit fits too (GNU OpenMP,
numba's usual threading layer on Linux, cannot run parallel regions in such
a child: the package's kernels run serially there)."""

import os

import numpy as np
import pytest
import sparse

from sklearn_pltf import BayesianNMF, PoissonCP

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the platform has no fork()")


def _fit_all(dense, coo):
    """Factors of fits that run every kind of parallel kernel: dense
    element-wise passes, sparse entry kernels, the Gamma moments and bound."""
    nmf = BayesianNMF(2, random_state=0).fit(dense)
    cp = PoissonCP(3, random_state=0).fit(coo)
    return np.concatenate([np.ravel(f) for f in (*nmf.factors_, *cp.factors_,
                                                  [nmf.log_evidence_, cp.log_evidence_])])


def test_a_forked_child_fits_and_gets_the_parent_numbers():
    rng = np.random.default_rng(0)
    dense = rng.poisson(2.0, (30, 12)).astype(float)
    coo = sparse.COO.from_numpy(rng.poisson(1.0, (8, 7, 6)))
    parent = _fit_all(dense, coo)  # starts the parallel runtime's threads
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            os.close(read)
            child = _fit_all(dense, coo)
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
    np.testing.assert_array_equal(np.frombuffer(received), parent)
