"""Large sparse Poisson CP tensors as Dask arrays, drawn chunk by chunk where
each chunk is computed: the whole tensor is never in one process."""

from __future__ import annotations

import numpy as np
import sparse

from ..engine._random import as_generator

__all__ = ["make_dask_poisson_cp"]


def _chunk_counts(columns, weights, entropy, block_info=None):
    """One chunk of the tensor: the counts of a Poisson CP model restricted
    to the chunk's ranges, drawn by superposition (module docstring of
    :func:`make_dask_poisson_cp`)."""
    info = block_info[None]
    location, ranges = info["chunk-location"], info["array-location"]
    shape = tuple(stop - start for start, stop in ranges)
    rng = np.random.default_rng([entropy, *location])
    parts = [np.asarray(c[start:stop]) for c, (start, stop) in zip(columns, ranges)]
    masses = [p.sum(axis=0) for p in parts]  # each mode's share of each component here
    coords = []
    for r in range(weights.size):
        n = rng.poisson(weights[r] * np.prod([m[r] for m in masses]))
        if n:
            coords.append(np.vstack([rng.choice(p.shape[0], size=n, p=p[:, r] / m[r])
                                     for p, m in zip(parts, masses)]))
    if not coords:
        return sparse.COO(np.empty((len(shape), 0), dtype=np.int64), np.empty(0), shape=shape)
    coords = np.hstack(coords)
    return sparse.COO(coords, np.ones(coords.shape[1]), shape=shape, has_duplicates=True)


def make_dask_poisson_cp(shape, n_components, *, n_counts, chunks, random_state=None):
    """A sparse Poisson CP count tensor as a Dask array of pydata ``sparse``
    chunks, each drawn where it is computed.

    The model is :math:`X \\sim \\text{Poisson}(\\sum_r \\lambda_r a_r \\circ
    b_r \\circ \\cdots)` with each factor column a point of the simplex
    (normalised Gamma(1, 1) draws) and :math:`\\lambda \\sim n_{\\text{counts}}
    \\, \\text{Dirichlet}(1)`, so the expected total count is ``n_counts``. A
    chunk's counts are drawn by superposition: component ``r`` puts
    Poisson(λ_r Π_m a_r^(m)(chunk)) tokens in the chunk, each at indices
    drawn from the columns restricted to the chunk's ranges. Chunks are
    independent (seeded by their location), so the tensor is the same however
    it is computed, and each chunk costs what its counts cost.

    Parameters
    ----------
    shape : tuple of int
    n_components : int
    n_counts : float
        Expected total count (the non-zeros are about as many where the
        tensor is sparse).
    chunks : int or tuple
        Dask chunk sizes.
    random_state : int, numpy.random.Generator or None, default=None

    Returns
    -------
    X : dask.array.Array
        Chunks of ``sparse.COO`` counts (float64).
    factors : list of ndarray
        The generating CP factors (the weights in the first), whose
        contraction is the mean tensor.

    Examples
    --------
    >>> from sklearn_pltf.datasets import make_dask_poisson_cp
    >>> X, factors = make_dask_poisson_cp((40, 30, 20), 3, n_counts=2000, chunks=20,
    ...                                   random_state=0)
    >>> X.numblocks, [f.shape for f in factors]
    ((2, 2, 1), [(40, 3), (30, 3), (20, 3)])
    """
    import dask.array as da

    rng = as_generator(random_state)
    columns = [rng.standard_gamma(1.0, size=(n, n_components)) for n in shape]
    columns = [c / c.sum(axis=0) for c in columns]
    weights = float(n_counts) * rng.dirichlet(np.ones(n_components))
    entropy = int(rng.integers(2**63))
    chunks = da.core.normalize_chunks(chunks, shape)
    meta = sparse.COO.from_numpy(np.zeros((0,) * len(shape)))
    X = da.map_blocks(_chunk_counts, columns, weights, entropy, chunks=chunks,
                      dtype=np.float64, meta=meta)
    factors = [columns[0] * weights] + columns[1:]
    return X, factors
