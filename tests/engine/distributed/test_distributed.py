"""One fit over a Dask array of sparse chunks on a dask.distributed cluster:
the same numbers as the fit in memory, and the data stay on the workers."""

import warnings

import dask.array as da
import distributed
import numpy as np
import pytest
import sparse

from sklearn_pltf import PLTF, BayesianNMF, BayesianRESCAL, GibbsNTF, PoissonCP
from sklearn_pltf.datasets import make_dask_poisson_cp


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up notices
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def gathered(monkeypatch):
    """Everything the client receives from the cluster, as a list."""
    received = []
    original = distributed.Client._gather

    async def recording(self, *args, **kwargs):
        result = await original(self, *args, **kwargs)
        received.append(result)
        return result

    monkeypatch.setattr(distributed.Client, "_gather", recording)
    return received


def _leaves(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    else:
        yield value


@pytest.mark.slow(minutes=0.4)
def test_vb_on_a_cluster_gives_the_in_memory_fit_and_never_gathers_the_data(client, gathered):
    X, _ = make_dask_poisson_cp((30, 25, 20), 3, n_counts=3000, chunks=(12, 10, 20),
                                random_state=0)
    in_memory = X.compute(scheduler="synchronous")  # the reference, built without the client
    params = dict(n_components=3, n_init=2, max_iter=6, random_state=0)
    reference = PoissonCP(**params).fit(in_memory)
    gathered.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # ConvergenceWarning at 6
        on_cluster = PoissonCP(**params).fit(X)
    np.testing.assert_allclose(on_cluster.lower_bounds_, reference.lower_bounds_, rtol=1e-8)
    for ours, theirs in zip(on_cluster.factors_, reference.factors_):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8)
    assert on_cluster.log_evidence_ == pytest.approx(reference.log_evidence_, rel=1e-10)
    # transform folds new data in on the cluster; score recognises the
    # training data in either container
    np.testing.assert_allclose(on_cluster.transform(X), reference.transform(in_memory),
                               rtol=1e-8)
    assert on_cluster.score(X) == on_cluster.log_evidence_
    assert on_cluster.score(in_memory) == on_cluster.log_evidence_
    # the client received numbers and factor-sized arrays, never a chunk
    largest_factor = max(f.size for f in reference.factors_)
    leaves = list(_leaves(gathered))
    assert leaves, "the fit gathered nothing: the patch missed the client"
    assert not any(isinstance(leaf, (sparse.SparseArray, np.ndarray)) and leaf.size > largest_factor
                   for leaf in leaves)
    assert not any(type(leaf).__name__ == "ObservedTensor" for leaf in leaves)


@pytest.mark.slow(minutes=0.6)
def test_compound_poisson_fits_on_a_cluster_at_each_jump_mean(client):
    """Real values on a cluster give the in-memory fit, at two jump means
    (the workers' compiled kernels read each one's jump rate)."""
    from sklearn_pltf import CompoundPoisson

    rng = np.random.default_rng(0)
    counts = _nmf_counts((24, 18))
    values = np.where(counts > 0, rng.gamma(np.maximum(counts, 1), 0.5), 0.0)
    X = da.from_array(sparse.COO.from_numpy(values), chunks=(12, 9))
    for jump_mean in (0.5, 2.0):
        params = dict(n_components=2, likelihood=CompoundPoisson(jump_mean), max_iter=12, tol=0,
                      random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)  # ConvergenceWarning at 12
            reference = BayesianNMF(**params).fit(values)
            on_cluster = BayesianNMF(**params).fit(X)
        np.testing.assert_allclose(on_cluster.lower_bounds_, reference.lower_bounds_, rtol=1e-8)


@pytest.mark.slow(minutes=0.1)
def test_ard_on_a_cluster_gives_the_in_memory_relevances_and_pruning(client):
    counts = _nmf_counts((24, 18))
    X = da.from_array(sparse.COO.from_numpy(counts), chunks=(12, 9))
    params = dict(n_components=4, ard=True, prune=True, max_iter=30, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # ConvergenceWarning at 30
        reference = BayesianNMF(**params).fit(counts)
        on_cluster = BayesianNMF(**params).fit(X)
    np.testing.assert_allclose(on_cluster.lower_bounds_, reference.lower_bounds_, rtol=1e-8)
    assert on_cluster.effective_rank_ == reference.effective_rank_
    np.testing.assert_allclose(on_cluster.relevance_, reference.relevance_, rtol=1e-8)
    assert on_cluster.log_evidence_ == pytest.approx(reference.log_evidence_, rel=1e-10)


@pytest.mark.slow(minutes=0.3)
def test_em_with_missing_entries_and_dense_chunks_matches_the_in_memory_fit(client):
    rng = np.random.default_rng(1)
    counts = rng.poisson(2.0, size=(24, 18)).astype(float)
    observed = rng.random(counts.shape) > 0.2
    chunked = da.from_array(sparse.COO.from_numpy(counts), chunks=(8, 9))
    mask = da.from_array(observed, chunks=(12, 6))  # rechunked like X on the cluster
    params = dict(n_components=2, method="em", max_iter=8, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        reference = BayesianNMF(**params).fit(np.where(observed, counts, np.nan))
        sparse_chunks = BayesianNMF(**params).fit(chunked, mask=mask)
        with_nan = np.where(observed, counts, np.nan)
        dense_chunks = BayesianNMF(**params).fit(da.from_array(with_nan, chunks=(8, 9)))
    for fitted in (sparse_chunks, dense_chunks):
        np.testing.assert_allclose(fitted.lower_bounds_, reference.lower_bounds_, rtol=1e-8)
        np.testing.assert_allclose(fitted.components_, reference.components_, rtol=1e-8)


@pytest.mark.slow(minutes=0.2)
def test_blocks_load_when_the_scheduler_lists_no_worker(client, monkeypatch):
    """A worker list read while workers (re)join can be empty: the blocks are
    then submitted without a placement preference, not divided among zero."""
    X, _ = make_dask_poisson_cp((12, 10, 8), 2, n_counts=400, chunks=(6, 5, 8), random_state=0)
    params = dict(n_components=2, max_iter=4, random_state=0)
    reference = PoissonCP(**params).fit(X.compute(scheduler="synchronous"))
    monkeypatch.setattr(type(client), "nthreads", lambda self, *args, **kwargs: {})
    fitted = PoissonCP(**params).fit(X)
    np.testing.assert_allclose(fitted.lower_bounds_, reference.lower_bounds_, rtol=1e-8)


def test_a_bad_chunk_is_reported_from_its_worker(client):
    counts = np.ones((6, 4))
    counts[5, 3] = -1.0
    with pytest.raises(ValueError, match="Negative values"):
        PoissonCP(n_components=1, max_iter=2).fit(da.from_array(counts, chunks=3))


def test_what_needs_the_data_in_one_process_refuses_a_dask_array():
    """Refused before anything is sent to a cluster (none is running here)."""
    X, _ = make_dask_poisson_cp((6, 4, 3), 1, n_counts=50, chunks=3, random_state=0)
    for estimator in (PoissonCP(n_components=1, method="gibbs"), GibbsNTF(n_components=1),
                      PoissonCP(n_components=1, method="sgld"),  # SGLD needs n_blocks
                      PoissonCP(n_components=1, init="svd"), BayesianRESCAL(n_components=1)):
        with pytest.raises(ValueError, match="needs its data in one process"):
            estimator.fit(X)
    with pytest.raises(ValueError, match="mask must be a Dask array"):
        PoissonCP(n_components=1).fit(X, mask=np.ones((6, 4, 3), dtype=bool))


def _nmf_counts(shape=(100, 75), rank=3, rate=5.0, seed=0):
    """Poisson NMF counts with Exponential(rate) factors (``doc/validation/chib_sti_ranks.py``'s data)."""
    rng = np.random.default_rng(seed)
    W = rng.gamma(1.0, 1.0 / rate, size=(shape[0], rank))
    H = rng.gamma(1.0, 1.0 / rate, size=(rank, shape[1]))
    return rng.poisson(W @ H).astype(float)


@pytest.mark.slow(minutes=0.2)
def test_block_sgld_on_a_cluster_takes_the_in_memory_steps(client):
    """Same seed, same parts and noise: the cluster's chain is the in-memory
    one up to the order of sums, over a short STI ladder and the draws."""
    counts = _nmf_counts((24, 18))
    X = da.from_array(sparse.COO.from_numpy(counts), chunks=(10, 10))  # rechunked to the grid
    params = dict(n_components=2, method="sgld", n_blocks=2, n_temperatures=3,
                  steps_per_temperature=10, n_warmup=10, n_draws=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # far too short a ladder to settle
        reference = BayesianNMF(**params).fit(sparse.COO.from_numpy(counts))
        on_cluster = BayesianNMF(**params).fit(X)
    np.testing.assert_allclose(on_cluster.log_likelihoods_, reference.log_likelihoods_, rtol=1e-8)
    np.testing.assert_allclose(on_cluster.components_, reference.components_, rtol=1e-8)
    assert on_cluster.log_evidence_ == pytest.approx(reference.log_evidence_, rel=1e-8)
    assert on_cluster.log_evidence_error_ == pytest.approx(reference.log_evidence_error_, rel=1e-6)


@pytest.mark.slow(minutes=1.3)
def test_block_sgld_sti_on_a_cluster_agrees_with_the_in_process_estimate(client):
    """The cluster's STI estimate on the 100 x 75 NMF (a short ladder: 8
    temperatures of 150 steps, 1970 steps in all) lies within 2 combined
    standard errors of the in-process one from the same seed; in fact it is
    the same chain, its parts and noise drawn alike, so the estimates agree
    to rounding."""
    counts = _nmf_counts()
    X = da.from_array(sparse.COO.from_numpy(counts), chunks=(50, 38))
    params = dict(n_components=3, method="sgld", n_blocks=2, n_temperatures=8,
                  steps_per_temperature=150, n_warmup=80, n_draws=50)
    in_process = BayesianNMF(random_state=0, **params).fit(sparse.COO.from_numpy(counts))
    on_cluster = BayesianNMF(random_state=0, **params).fit(X)
    combined = np.hypot(in_process.log_evidence_error_, on_cluster.log_evidence_error_)
    assert abs(on_cluster.log_evidence_ - in_process.log_evidence_) < 2 * combined
    assert on_cluster.log_evidence_ == pytest.approx(in_process.log_evidence_, rel=1e-8)


@pytest.mark.slow(minutes=0.1)
def test_fixed_factors_on_a_cluster_fit_and_are_checked_as_in_memory(client):
    rng = np.random.default_rng(2)
    H = rng.gamma(2.0, 1.0, size=(2, 10))
    counts = rng.poisson(rng.gamma(1.0, 1.0, size=(12, 2)) @ H).astype(float)
    X = da.from_array(sparse.COO.from_numpy(counts), chunks=(6, 5))
    params = dict(n_components=2, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        reference = PLTF("ik,kj->ij", fixed_factors={1: H}, **params).fit(counts)
        on_cluster = PLTF("ik,kj->ij", fixed_factors={1: H}, **params).fit(X)
    np.testing.assert_allclose(on_cluster.lower_bounds_, reference.lower_bounds_, rtol=1e-8)
    zero_column = H.copy()
    zero_column[:, [3, 7]] = 0.0  # X̂ is zero in columns 3 and 7, where there are counts
    messages = []
    for data in (counts, X):
        with pytest.raises(ValueError, match="zero at") as error:
            PLTF("ik,kj->ij", fixed_factors={1: zero_column}, **params).fit(data)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_a_block_and_its_contractor_tell_dask_what_they_hold():
    """dask sizes what a worker holds with ``sizeof`` and weighs moving a
    task's inputs to another worker by it: a block and its contractor must
    not look as cheap to move as an empty object."""
    from dask.sizeof import sizeof

    from sklearn_pltf.engine._contract import SparseContractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.engine.model import Model

    counts = np.random.default_rng(0).poisson(0.2, size=(30, 20, 10)).astype(float)
    counts[0, 0, 0] = np.nan
    data = as_observed_tensor(sparse.COO.from_numpy(counts, fill_value=0)).sparse_layout()
    arrays = data.coords.nbytes + data.values.nbytes + data.missing.nbytes
    assert arrays <= sizeof(data) <= arrays + 1024
    contractor = SparseContractor(Model.parse("ir,jr,kr->ijk").bind(counts.shape, 2), data)
    # each factor's entries sorted by its rows, on top of the block
    assert sizeof(contractor) > 3 * arrays
