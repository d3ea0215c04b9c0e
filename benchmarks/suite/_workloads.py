"""Synthetic and real count data for the benchmarks.

Every synthetic builder takes a ``random_state`` that seeds
:func:`numpy.random.default_rng`, so a workload is reproducible from its
arguments alone.  Only numpy, scipy and pydata ``sparse`` are needed, except
for :func:`oslo_city_bike`, which reads the data file shipped inside the
``tensorly-viz`` wheel.
"""

import numpy as np
import sparse
from scipy.optimize import brentq


def dense_poisson_nmf(n_rows=2000, n_cols=1000, rank=20, random_state=0, mean=2.5):
    """Draw a dense count matrix from a Poisson NMF model with gamma factors.

    ``W`` (``n_rows x rank``) and ``H`` (``rank x n_cols``) have independent
    Gamma(shape=0.5, scale=sqrt(mean / rank) / 0.5) entries, so that
    ``E[(W H)_ij] = mean`` whatever the rank, and ``X_ij ~ Poisson((W H)_ij)``.

    Parameters
    ----------
    n_rows, n_cols : int
        Shape of the matrix.
    rank : int
        Number of latent components.
    random_state : int, numpy.random.Generator or None
        Seed for :func:`numpy.random.default_rng`.
    mean : float, default=2.5
        The mean count.

    Returns
    -------
    X : ndarray of shape (n_rows, n_cols), dtype float64
        Integer-valued counts with mean about ``mean``.
    """
    rng = np.random.default_rng(random_state)
    shape_param = 0.5
    scale = np.sqrt(mean / rank) / shape_param
    W = rng.gamma(shape_param, scale, size=(n_rows, rank))
    H = rng.gamma(shape_param, scale, size=(rank, n_cols))
    return rng.poisson(W @ H).astype(np.float64)


def dense_poisson_cp(size=200, rank=20, random_state=0):
    """Draw a dense size x size x size count tensor from a Poisson CP model.

    The factors have independent Gamma(shape=0.5, scale=1) entries and the
    rate is their CP product divided by ``rank`` (a mean of 1/8 an entry,
    about 11% of the entries non-zero at the defaults).

    Returns
    -------
    X : ndarray of shape (size, size, size), dtype float64
    """
    rng = np.random.default_rng(random_state)
    A, B, C = (rng.gamma(0.5, 1.0, (size, rank)) for _ in range(3))
    return rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C) / rank).astype(np.float64)


def _sample_cells(rng, n_tokens, weights, factors):
    """Draw ``n_tokens`` cells of a CP model, one token at a time.

    Parameters
    ----------
    rng : numpy.random.Generator
        Random generator.
    n_tokens : int
        Number of tokens (unit counts) to place.
    weights : ndarray of shape (rank,)
        Component probabilities, summing to one.
    factors : list of ndarray of shape (n_k, rank)
        Factor matrices whose columns each sum to one.

    Returns
    -------
    coords : ndarray of shape (n_modes, n_tokens), dtype int64
        Coordinates of the tokens, grouped by component.
    """
    per_component = rng.multinomial(n_tokens, weights)
    coords = np.empty((len(factors), n_tokens), dtype=np.int64)
    start = 0
    for r, count in enumerate(per_component):
        for k, factor in enumerate(factors):
            coords[k, start:start + count] = rng.choice(
                factor.shape[0], size=count, p=factor[:, r])
        start += count
    return coords


def sparse_poisson_cp(shape=(1000, 1000, 1000), rank=10, target_nnz=1_000_000,
                      concentration=0.05, random_state=0, return_model=False):
    """Draw a sparse count tensor from a Poisson CP model, never densifying.

    The model is ``X ~ Poisson(s * sum_r w_r a_r o b_r o c_r ...)`` with
    component weights ``w ~ Dirichlet(1)`` and each factor column drawn from
    ``Dirichlet(concentration)`` (small values concentrate the mass on a few
    indices, so some cells get counts above one).  Because every column and
    ``w`` sum to one, the total count is ``T ~ Poisson(s)``; the ``T`` tokens
    are split among components by a multinomial on ``w`` and each token's index
    in each mode is drawn from that component's factor column.  Duplicate
    cells are then summed.

    The total mass ``s`` is chosen so that the *expected* number of distinct
    nonzero cells, ``sum_c 1 - exp(-s mu_c)`` with ``mu`` the normalised
    intensity, equals ``target_nnz``.  That sum over all cells is estimated
    without enumerating them by importance sampling: with cells ``c`` drawn
    from ``mu`` itself, ``E[(1 - exp(-s mu_c)) / mu_c]`` is the sum, and it is
    solved for ``s`` with :func:`scipy.optimize.brentq`.

    Parameters
    ----------
    shape : tuple of int
        Shape of the tensor.
    rank : int
        Number of CP components.
    target_nnz : int
        Desired number of distinct nonzero cells (met in expectation, up to
        the importance-sampling error, typically well under 1%).
    concentration : float
        Dirichlet parameter of the factor columns.  At the defaults, 0.05
        gives 1.6 tokens per nonzero, a largest count of 175 (for
        ``random_state=0``) and a few empty slices per mode; 0.2 and above
        give almost only ones.
    random_state : int, numpy.random.Generator or None
        Seed for :func:`numpy.random.default_rng`.
    return_model : bool, default=False
        Also return the generating intensity, to score predictions against
        the truth.

    Returns
    -------
    X : sparse.COO, dtype float64
        Counts, with sorted coordinates and no duplicates.  Use ``X.nnz`` and
        ``X.data.max()`` to report the realised size and largest count.
    intensity : callable, only with ``return_model=True``
        ``intensity(coords)`` (ndim x n) is the Poisson mean at those cells.
    """
    rng = np.random.default_rng(random_state)
    weights = rng.dirichlet(np.ones(rank))
    factors = [rng.dirichlet(np.full(n, concentration), size=rank).T
               for n in shape]

    probe = _sample_cells(rng, 200_000, weights, factors)
    mu = np.ones((probe.shape[1], rank)) * weights
    for k, factor in enumerate(factors):
        mu *= factor[probe[k]]
    mu = mu.sum(axis=1)

    def excess_nnz(mass):
        return np.mean(-np.expm1(-mass * mu) / mu) - target_nnz

    mass = brentq(excess_nnz, target_nnz, 1e4 * target_nnz, rtol=1e-6)

    coords = _sample_cells(rng, rng.poisson(mass), weights, factors)
    cells, counts = np.unique(np.ravel_multi_index(tuple(coords), shape),
                              return_counts=True)
    X = sparse.COO(np.stack(np.unravel_index(cells, shape)),
                   counts.astype(np.float64), shape=shape,
                   has_duplicates=False, sorted=True)
    if not return_model:
        return X

    def intensity(at):
        terms = np.ones((np.shape(at)[1], rank)) * weights
        for k, factor in enumerate(factors):
            terms *= factor[at[k]]
        return mass * terms.sum(axis=1)

    return X, intensity


def oslo_city_bike():
    """Load the Oslo city-bike trip counts shipped with tensorly-viz.

    The array has shape ``(270, 2, 12, 7, 24)`` with axes *end station*,
    *year* (2020, 2021), *month* (1-12), *day of week* and *hour of day*
    (local Oslo time).  Entry ``[s, y, m, d, h]`` counts the trips that ended
    at station ``s`` during hour ``h`` on weekday ``d`` of month ``m`` of year
    ``y``, summed over all such days, so it is a true count tensor
    (integer-valued float64, about 3.1 million trips, 48% of cells nonzero,
    maximum 292).  The weekday follows pandas' ``dayofweek`` (0 = Monday) in
    tensorly-viz's build code, although its docstring example reads 1 as
    Monday.  The file holds no NaN: tensorly-viz replaced cells without trips
    by 0 when it built the file, so zeros mix sampled zeros with periods
    without service or data (all of January and February 2020 is 0, and
    stations opened or closed during the two years have zero stretches).

    The file ``tlviz/datasets/oslo_bike.nc4`` (netCDF-3, read by xarray with
    scipy) is part of the ``tensorly-viz`` wheel, so no network is needed.

    Returns
    -------
    X : ndarray of shape (270, 2, 12, 7, 24), dtype float64
        The trip counts.  Station names, latitudes and longitudes are in the
        coordinates of ``tlviz.data.load_oslo_city_bike()``.
    """
    from tlviz.data import load_oslo_city_bike

    return np.asarray(load_oslo_city_bike().values, dtype=np.float64)


def held_out_entries(X, fraction, rng):
    """``fraction`` of the non-zeros and as many zeros, as (rows, cols, values)."""
    nz_rows, nz_cols = X.nonzero()
    pick = rng.choice(nz_rows.size, int(fraction * nz_rows.size), replace=False)
    occupied = set(zip(nz_rows.tolist(), nz_cols.tolist()))
    zeros = []
    while len(zeros) < pick.size:
        r, c = int(rng.integers(X.shape[0])), int(rng.integers(X.shape[1]))
        if (r, c) not in occupied:
            zeros.append((r, c))
            occupied.add((r, c))
    rows = np.concatenate([nz_rows[pick], [r for r, _ in zeros]])
    cols = np.concatenate([nz_cols[pick], [c for _, c in zeros]])
    return rows, cols, np.asarray(X[rows, cols]).ravel()
