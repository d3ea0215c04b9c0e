"""Rank search on a dask.distributed cluster through joblib's dask backend;
a Dask array with no cluster to fit it on."""

import warnings

import dask.array as da
import distributed
import joblib
import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from sklearn_pltf import PoissonCP
from sklearn_pltf.datasets import make_poisson_cp
from sklearn_pltf.model_selection import FullDataSplit



@pytest.mark.slow(minutes=0.25)
def test_grid_search_on_a_local_cluster_matches_the_serial_run():
    X, _ = make_poisson_cp((15, 12, 10), 3, random_state=0)
    grid = {"n_components": [1, 2, 3, 4, 5]}
    estimator = PoissonCP(n_init=2, random_state=0)
    serial = GridSearchCV(estimator, grid, cv=FullDataSplit()).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up notices
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            with distributed.get_task_stream(client) as stream, joblib.parallel_backend("dask"):
                on_cluster = GridSearchCV(estimator, grid, cv=FullDataSplit(), n_jobs=-1).fit(X)
            workers = set(client.nthreads())  # asked of the scheduler, not a cache
    # the fits ran as tasks on the cluster's two worker processes
    assert len(workers) == 2
    assert len(stream.data) >= len(grid["n_components"])
    assert {task["worker"] for task in stream.data} <= workers
    assert on_cluster.best_params_ == serial.best_params_ == {"n_components": 3}
    # each rank is fitted from the same seed in a worker process: the same
    # evidence as the serial run (up to the last bits of BLAS products)
    np.testing.assert_allclose(on_cluster.cv_results_["mean_test_score"],
                               serial.cv_results_["mean_test_score"], rtol=1e-10)


def test_a_dask_array_without_a_client_says_how_to_start_one():
    with pytest.raises(ValueError, match="no client is active"):
        PoissonCP(n_components=1).fit(da.ones((4, 3, 2), chunks=2))
