"""Normalise user input into one observed-tensor object, with every input check.

Accepted data:

- a dense ``numpy.ndarray`` (``NaN`` marks a missing entry) — the *dense layout*;
- a pydata ``sparse`` array (COO, GCXS, ...) or a ``scipy.sparse`` matrix, whose
  implicit zeros are observed zeros — the *sparse layout*, never densified.

An optional boolean ``mask`` (True = observed) removes more entries. For sparse
data the mask must list the missing entries sparsely: a dense boolean array, or
a pydata sparse boolean array with ``fill_value=True`` (whose stored entries are
the missing ones). The user's arrays are never modified.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, replace
from functools import cached_property

import numba
import numpy as np
import scipy.sparse as sp
import sparse
from scipy.special import gammaln, xlogy

from ._threads import parallel_kernel

__all__ = ["ObservedTensor", "TensorExtent", "as_observed_tensor", "is_sparse_input", "is_dask_array",
           "entry_digest", "combine_digests", "MAX_COUNT"]

#: The largest count a sampler that allocates counts accepts (it holds them as int64).
MAX_COUNT = 2.0**62


def physical_memory():
    """Bytes of physical memory, or None where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def array_bytes(*values):
    """Bytes of the distinct NumPy arrays among ``values`` and inside their
    lists, tuples and dicts (an array listed twice counts once).

    The data objects' ``__sizeof__`` return it: dask sizes what a worker
    holds with ``sys.getsizeof``, and its scheduler weighs moving a task's
    inputs to another worker by those sizes.
    """
    seen, total, pending = set(), 0, list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, np.ndarray):
            if id(value) not in seen:
                seen.add(id(value))
                total += value.nbytes
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())
    return total


class TensorExtent:
    """What follows from ``shape`` and ``n_missing``, for every data object."""

    #: The data are arrays of another namespace than NumPy, where they live
    #: (:class:`~sklearn_pltf.engine._array_data.ArrayAPITensor` says True).
    is_array_api = False

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def n_observed(self):
        return self.size - self.n_missing

    def in_float64(self):
        """The data for a computation that runs in float64 (itself: only an
        :class:`ObservedTensor` keeps float32 values)."""
        return self


@dataclass(frozen=True, eq=False)
class ObservedTensor(TensorExtent):
    """Observed data in one of two layouts.

    Dense layout: ``dense`` holds the values with 0 at missing entries and
    ``mask`` is a boolean array of observed entries (``None``: all observed).

    Sparse layout: ``coords`` (ndim x nnz) and ``values`` are the observed
    non-zeros; every other entry is an observed zero except those listed in
    ``missing`` (ndim x n_missing, or an empty array).
    """

    shape: tuple
    dense: np.ndarray | None = None
    mask: np.ndarray | None = None
    coords: np.ndarray | None = None
    values: np.ndarray | None = None
    missing: np.ndarray | None = None

    @property
    def is_sparse(self):
        """True for the sparse layout."""
        return self.dense is None

    def __sizeof__(self):
        return object.__sizeof__(self) + array_bytes(*vars(self).values())

    #: The data are in this process (a :class:`~sklearn_pltf.engine.distributed.DistributedTensor`
    #: says True).
    is_distributed = False

    @cached_property
    def n_missing(self):
        """Number of missing entries."""
        if self.is_sparse:
            return self.missing.shape[1]
        return 0 if self.mask is None else int(self.size - np.count_nonzero(self.mask))

    @cached_property
    def observed_values(self):
        """The values at observed non-zero entries (any order)."""
        if self.is_sparse:
            return self.values
        return self.dense[self.dense != 0]

    @cached_property
    def nonzero_entries(self):
        """Coordinates (ndim x n, int64) and values of the observed non-zero
        entries, in C order for dense data, in stored order for sparse data."""
        if self.is_sparse:
            nonzero = self.values != 0
            return self.coords[:, nonzero].astype(np.int64), self.values[nonzero]
        coords = np.array(np.nonzero(self.dense), dtype=np.int64).reshape(self.ndim, -1)
        return coords, self.dense[tuple(coords)]

    def value_sum(self, function):
        """Σ ``function(values)`` over the observed values (``function`` maps
        an array of values to an array of terms); distributed data sum it
        chunk by chunk where the chunks live. Float32 values are summed in
        float64, their terms computed in float64 too."""
        return float(np.sum(function(self.observed_values.astype(np.float64, copy=False))))

    def sparse_layout(self):
        """The same data in the sparse layout (itself if already sparse)."""
        if self.is_sparse:
            return self
        coords, values = self.nonzero_entries
        return ObservedTensor(shape=self.shape, coords=coords.astype(np.intp), values=values,
                              missing=self.missing_entries.astype(np.intp))

    @cached_property
    def missing_entries(self):
        """Coordinates (ndim x n) of the missing entries, in C order for
        dense data, as stored for sparse data."""
        if self.is_sparse:
            return self.missing
        if self.mask is None:
            return np.empty((self.ndim, 0), dtype=np.int64)
        return np.array(np.nonzero(~self.mask), dtype=np.int64).reshape(self.ndim, -1)

    @property
    def dtype(self):
        """The values' dtype: float64, or float32 where a float32 array was
        kept for a fit in float32 (:func:`as_observed_tensor`)."""
        return (self.values if self.is_sparse else self.dense).dtype

    def in_float64(self):
        """The same data with float64 values (itself if they are: only dense
        values are kept in float32)."""
        if self.dtype == np.float64:
            return self
        return replace(self, dense=self.dense.astype(np.float64))

    @cached_property
    def _value_sums(self):
        """(Σ x, Σ log Γ(x + 1), Σ x log x − x − log Γ(x + 1)) over the
        observed values; dense data in one compiled pass
        (:func:`dense_value_sums`), without listing the non-zeros."""
        if self.is_sparse:
            return value_sums(self.values)
        return dense_value_sums(self.dense)

    @property
    def total(self):
        """Sum of the observed values."""
        return self._value_sums[0]

    @property
    def log_factorial_total(self):
        """Σ over observed entries of log Γ(X + 1): the constant of the Poisson likelihood."""
        return self._value_sums[1]

    @property
    def saturated_total(self):
        """Σ over observed entries of x log x − x − log Γ(x + 1) (0 at zeros):
        each entry's Poisson log-likelihood at its own rate, summed entry by
        entry (the three sums apart would cancel to a few digits for large
        counts)."""
        return self._value_sums[2]

    @cached_property
    def is_integer(self):
        """True when every observed value is a whole number."""
        v = self.observed_values
        return bool(np.all(v == np.round(v)))

    @cached_property
    def fingerprint(self):
        """A hash of shape, observed non-zeros and missing entries, to recognise
        the same data whatever its container (dense, pydata sparse, scipy.sparse,
        or a Dask array of chunks) or storage order (:func:`entry_digest`)."""
        if not self.is_sparse:
            return combine_digests(self.shape, [dense_digest(self.dense, self.mask)])
        coords, values = self.nonzero_entries
        return combine_digests(self.shape,
                               [entry_digest(self.shape, coords, values, self.missing_entries)])

    def take_samples(self, rows):
        """The data of the samples ``rows`` (increasing positions along axis 0),
        renumbered from 0, in the same layout and entry order."""
        rows = np.asarray(rows, dtype=np.intp)
        shape = (rows.size,) + tuple(self.shape[1:])
        if not self.is_sparse:
            mask = None if self.mask is None else self.mask[rows]
            return ObservedTensor(shape=shape, dense=self.dense[rows], mask=mask)
        position = np.full(self.shape[0], -1, dtype=np.intp)
        position[rows] = np.arange(rows.size)

        def restrict(coords):
            new_rows = position[coords[0]]
            kept = new_rows >= 0
            taken = coords[:, kept]  # a copy: fancy indexing
            taken[0] = new_rows[kept]
            return taken, kept

        coords, kept = restrict(self.coords)
        missing, _ = restrict(self.missing)
        return ObservedTensor(shape=shape, coords=coords, values=self.values[kept], missing=missing)

    def require_integer(self, who="This sampler", remedy="use a variational method"):
        """Raise unless every observed value is a non-negative integer count
        of at most :data:`MAX_COUNT`; the message ends with ``remedy``."""
        if not self.is_integer:
            raise ValueError(
                f"{who} allocates integer counts, but the data contain non-integer "
                f"values; round them or {remedy}."
            )
        largest = float(self.observed_values.max(initial=0.0))
        if largest > MAX_COUNT:
            raise ValueError(
                f"{who} allocates integer counts, and the data hold a count of {largest:.3g}, "
                f"above the {MAX_COUNT:.3g} it can hold; scale the counts down or {remedy}."
            )

    def require_tokens_in_memory(self, who, bytes_per_token, remedy):
        """Raise before allocating unless the tokens (the sum of the counts),
        at ``bytes_per_token`` each, fit in half the physical memory."""
        memory = physical_memory()
        needed = self.total * bytes_per_token
        if memory is not None and needed > memory / 2:
            raise ValueError(
                f"{who} handles each of the data's {self.total:.4g} counts (tokens) on its own "
                f"and would need {needed / 2**30:.3g} GiB for them at once, more than half of "
                f"this machine's {memory / 2**30:.3g} GiB. {remedy}"
            )


# Odd 64-bit constants of the splitmix64 finaliser (Steele, Lea & Flood 2014)
# and two lane seeds: each entry is hashed to two 64-bit words.
_MIX_1, _MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_LANES = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))


def _mix(z):
    """The splitmix64 finaliser on uint64 arrays (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


def _multiset_hash(flat, words):
    """Σ over entries of a 64-bit hash of (flat index, word), per lane,
    modulo 2**64: a sum does not depend on the entries' order, and sums of
    disjoint parts add up to the whole's."""
    flat, words = flat.astype(np.uint64), words.astype(np.uint64)
    with np.errstate(over="ignore"):
        return tuple(int(np.sum(_mix(_mix(flat + lane) ^ words), dtype=np.uint64))
                     for lane in _LANES)


def entry_digest(shape, coords, values, missing):
    """The order-free digest of some observed non-zeros (``coords``,
    ``values``) and missing entries (``missing``) of a tensor of ``shape``:
    counts and per-lane hash sums, which add over disjoint parts (the chunks
    of a distributed tensor) to the whole's."""
    def flat(entries):
        if entries.shape[1] == 0:
            return np.empty(0, dtype=np.int64)
        return np.ravel_multi_index(tuple(entries), shape).astype(np.int64)

    value_bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    no_value = np.zeros(missing.shape[1], dtype=np.uint64)
    return ((coords.shape[1],) + _multiset_hash(flat(coords), value_bits)
            + (missing.shape[1],) + _multiset_hash(flat(missing), no_value))


# Entries per chunk of the compiled passes over dense data.
_DENSE_CHUNK = 1 << 16


@numba.njit(cache=True, nogil=True, inline="always")
def _mix_one(z):  # pragma: no cover - compiled
    """:func:`_mix` of one uint64."""
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


@parallel_kernel
def _dense_digest_sums(values, bits, observed, masked, lanes, out):  # pragma: no cover - compiled
    """Per chunk of the C-order entries: the count and lane hashes of the
    observed non-zeros (columns 0, 1..L) and of the missing entries
    (columns L+1, L+2..2L+1), as :func:`entry_digest` sums them."""
    n_lanes = lanes.size
    for c in numba.prange(out.shape[0]):
        for i in range(c * _DENSE_CHUNK, min((c + 1) * _DENSE_CHUNK, values.size)):
            missing = masked and not observed[i]
            if not missing and values[i] == 0.0:
                continue
            base = n_lanes + 1 if missing else 0
            word = np.uint64(0) if missing else bits[i]
            out[c, base] += np.uint64(1)
            for lane in range(n_lanes):
                out[c, base + 1 + lane] += _mix_one(_mix_one(np.uint64(i) + lanes[lane]) ^ word)


def dense_digest(dense, mask=None):
    """:func:`entry_digest` of dense data (zeros at missing entries, ``mask``
    True where observed, None if all are) in one parallel pass, without
    listing the non-zeros."""
    values = np.ravel(np.asarray(dense, dtype=np.float64))  # C order: the flat index
    masked = mask is not None
    observed = np.ravel(mask) if masked else np.ones(1, dtype=bool)
    lanes = np.array(_LANES, dtype=np.uint64)
    out = np.zeros((-(-values.size // _DENSE_CHUNK), 2 * lanes.size + 2), dtype=np.uint64)
    _dense_digest_sums(values, values.view(np.uint64), observed, masked, lanes, out)
    with np.errstate(over="ignore"):
        totals = out.sum(axis=0, dtype=np.uint64)
    return tuple(int(t) for t in totals)


def value_sums(values):
    """(Σ x, Σ log Γ(x + 1), Σ x log x − x − log Γ(x + 1)) of an array of
    values (x log x is 0 at 0)."""
    values = np.asarray(values, dtype=np.float64)
    log_factorials = gammaln(values + 1.0)
    return (float(values.sum()), float(log_factorials.sum()),
            float(np.sum(xlogy(values, values) - values - log_factorials)))


#: Whole numbers below this take log Γ(k + 1) and the saturated term from a
#: table (counts are mostly small): scipy's own values, looked up instead of
#: computed.
_TABLE_SIZE = 4096
_TABLE = np.arange(_TABLE_SIZE, dtype=np.float64)
_LOG_FACTORIALS = gammaln(_TABLE + 1.0)
_SATURATED = xlogy(_TABLE, _TABLE) - _TABLE - _LOG_FACTORIALS


def dense_value_sums(dense):
    """:func:`value_sums` of dense data (zeros at missing entries), in one
    parallel pass over fixed chunks (the sums do not depend on the thread
    count)."""
    values = np.ravel(dense if dense.dtype == np.float32 else np.asarray(dense, dtype=np.float64))
    out = np.zeros((-(-values.size // _DENSE_CHUNK), 3))
    _dense_value_sums(values, _LOG_FACTORIALS, _SATURATED, out)
    return tuple(float(column) for column in out.sum(axis=0))


@parallel_kernel
def _dense_value_sums(values, log_factorials, saturated, out):  # pragma: no cover - compiled
    """Per chunk of the entries: Σ x, Σ log Γ(x + 1) and Σ x log x − x −
    log Γ(x + 1), the whole numbers below the tables' size looked up in them."""
    size = log_factorials.size
    for c in numba.prange(out.shape[0]):
        total, log_factorial, at_own_rate = 0.0, 0.0, 0.0
        for i in range(c * _DENSE_CHUNK, min((c + 1) * _DENSE_CHUNK, values.size)):
            x = np.float64(values[i])  # float32 data's terms in float64 too
            if x == 0.0:
                continue
            total += x
            if 0.0 < x < size and x == math.floor(x):
                log_factorial += log_factorials[int(x)]
                at_own_rate += saturated[int(x)]
            else:
                term = math.lgamma(x + 1.0)
                log_factorial += term
                at_own_rate += x * math.log(x) - x - term if x > 0.0 else np.nan
        out[c, 0], out[c, 1], out[c, 2] = total, log_factorial, at_own_rate


def combine_digests(shape, digests):
    """The fingerprint (hex) of a tensor of ``shape`` from the
    :func:`entry_digest` of each of its disjoint parts."""
    total = [sum(column) % 2**64 for column in zip(*digests)]
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((tuple(int(n) for n in shape), total)).encode())
    return h.hexdigest()


def is_dask_array(X):
    """True for a ``dask.array.Array`` (checked without importing Dask)."""
    return type(X).__module__.startswith("dask.array") and hasattr(X, "chunks")


def is_sparse_input(X):
    """True for pydata sparse arrays and scipy.sparse matrices/arrays."""
    return isinstance(X, sparse.SparseArray) or sp.issparse(X)


def as_observed_tensor(X, mask=None, allow_negative=False, require_observed=True,
                       keep_float32=False):
    """Validate ``X`` (and ``mask``) into an :class:`ObservedTensor`.

    Parameters
    ----------
    X : ndarray, pydata sparse array or scipy.sparse matrix
        Non-negative data (any real values with ``allow_negative``). ``NaN``
        marks missing entries.
    mask : array-like of bool, default=None
        True where the entry is observed. See the module docstring for the
        forms accepted with sparse data.
    allow_negative : bool, default=False
        Accept negative values (a Gaussian likelihood; Poisson models need
        non-negative data).
    require_observed : bool, default=True
        Raise if every entry is missing (a chunk of distributed data may be).
    keep_float32 : bool, default=False
        Keep a dense float32 array's values in float32 (for a fit that runs
        in float32); every other input becomes float64.

    Raises
    ------
    ValueError
        For non-numeric or complex data, empty data, negative or infinite
        values, a mask of the wrong shape, or data with every entry missing.
    """
    if is_sparse_input(X):
        coords, values, shape = _sparse_parts(X, allow_negative)
        coords, values, nan_coords = _split_nan(coords, values)
        missing = _missing_coords(mask, shape, nan_coords)
        coords, values = _drop_entries(coords, values, missing, shape)
        data = ObservedTensor(shape=shape, coords=coords, values=values, missing=missing)
    else:
        dense, observed = _dense_parts(X, allow_negative, keep_float32)
        if mask is not None:
            given = _dense_mask(mask, dense.shape)
            observed = given if observed is None else observed & given
        if observed is None or observed.all():
            # A copy in C order: the fit never aliases the user's array.
            data = ObservedTensor(shape=dense.shape, dense=np.array(dense, order="C"), mask=None)
        else:
            data = ObservedTensor(shape=dense.shape, dense=np.where(observed, dense, 0.0),
                                  mask=observed)
    if require_observed and data.n_observed == 0:
        raise ValueError("All entries of the data are missing; there is nothing to fit.")
    return data


# ----------------------------------------------------------------- dense input
def _dense_parts(X, allow_negative=False, keep_float32=False):
    try:
        array = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"The data could not be read as a numeric array: {exc}") from exc
    _check_dtype(array.dtype)
    if array.ndim == 0 or array.size == 0:
        raise ValueError(f"The data are empty (shape {array.shape}); need at least one entry.")
    if not (keep_float32 and array.dtype == np.float32):
        array = array.astype(np.float64, copy=False)
    n_missing, n_infinite, smallest = _scan_values(np.ravel(array))
    if n_infinite:
        raise ValueError("The data contain infinite values; use NaN to mark missing entries.")
    if not allow_negative and smallest < 0:
        raise ValueError(
            "Negative values in data: a Poisson model needs non-negative counts "
            f"(smallest value {smallest:g})."
        )
    return array, (~np.isnan(array) if n_missing else None)


def _scan_values(values):
    """(NaNs, infinities, the smallest other value) of a flat float array,
    in one parallel pass."""
    n_chunks = -(-values.size // _DENSE_CHUNK)
    counts, smallest = np.zeros((n_chunks, 2), dtype=np.int64), np.full(n_chunks, np.inf)
    _scan_chunks(values, counts, smallest)
    return int(counts[:, 0].sum()), int(counts[:, 1].sum()), float(smallest.min())


@parallel_kernel
def _scan_chunks(values, counts, smallest):  # pragma: no cover - compiled
    for c in numba.prange(smallest.size):
        low = np.inf
        for i in range(c * _DENSE_CHUNK, min((c + 1) * _DENSE_CHUNK, values.size)):
            v = values[i]
            if np.isnan(v):
                counts[c, 0] += 1
            elif np.isinf(v):
                counts[c, 1] += 1
            elif v < low:
                low = v
        smallest[c] = low


def _dense_mask(mask, shape):
    if is_sparse_input(mask):
        mask = mask.todense() if isinstance(mask, sparse.SparseArray) else mask.toarray()
    mask = np.asarray(mask)
    if mask.shape != tuple(shape):
        raise ValueError(f"The mask has shape {mask.shape} but the data have shape {tuple(shape)}.")
    if mask.dtype != bool:
        if not np.isin(mask, (0, 1)).all():
            raise ValueError("The mask must be boolean (True = observed) or contain only 0 and 1.")
        mask = mask.astype(bool)
    return mask.copy()


# ---------------------------------------------------------------- sparse input
def _sparse_parts(X, allow_negative=False):
    if sp.issparse(X):
        coo = sp.coo_matrix(X, copy=True)
        coo.sum_duplicates()
        coords = np.vstack([coo.row, coo.col]).astype(np.intp)
        values, shape = coo.data, coo.shape
    else:
        if X.fill_value != 0:
            raise ValueError(
                f"Sparse data must have fill value 0 (implicit zeros are observed zeros), "
                f"got fill value {X.fill_value!r}; mark missing entries with a mask."
            )
        coo = X if isinstance(X, sparse.COO) else X.tocoo()
        coords, values, shape = coo.coords.astype(np.intp), coo.data, coo.shape
    _check_dtype(values.dtype)
    shape = tuple(int(s) for s in shape)
    if len(shape) == 0 or 0 in shape:
        raise ValueError(f"The data are empty (shape {shape}); need at least one entry.")
    values = values.astype(np.float64)  # a copy: never alias the user's buffer
    _check_values(values[~np.isnan(values)], allow_negative)
    return _canonical(coords, values, shape)


def _canonical(coords, values, shape):
    """Sorted, duplicate-free coordinates (duplicates summed), explicit zeros dropped."""
    flat = np.ravel_multi_index(tuple(coords), shape)
    if flat.size > 1 and not np.all(np.diff(flat) > 0):
        flat, inverse = np.unique(flat, return_inverse=True)
        values = np.bincount(inverse, weights=values, minlength=flat.size)
        coords = np.vstack(np.unravel_index(flat, shape)).astype(np.intp)
    keep = values != 0
    return coords[:, keep], values[keep], shape


def _split_nan(coords, values):
    nan = np.isnan(values)
    return coords[:, ~nan], values[~nan], coords[:, nan]


def _missing_coords(mask, shape, nan_coords):
    """Coordinates of the missing entries, as (ndim x n) sorted and unique."""
    if mask is None:
        missing = nan_coords
    elif isinstance(mask, sparse.SparseArray):
        if mask.shape != shape:
            raise ValueError(f"The mask has shape {mask.shape} but the data have shape {shape}.")
        if mask.fill_value != True:  # noqa: E712 - numpy bools
            raise ValueError(
                "A sparse mask for sparse data must have fill_value=True and store the "
                "missing entries as False; a mask that lists only the observed entries "
                "would make every other entry missing, which the sparse layout does not "
                "represent. Pass the missing entries instead."
            )
        coo = mask.tocoo() if not isinstance(mask, sparse.COO) else mask
        missing = np.hstack([coo.coords[:, ~coo.data.astype(bool)].astype(np.intp), nan_coords])
    elif sp.issparse(mask):
        raise ValueError(
            "A scipy.sparse mask cannot mark missing entries of sparse data (its implicit "
            "entries would all be missing); pass a dense boolean mask or a pydata sparse "
            "mask with fill_value=True."
        )
    else:
        dense_mask = _dense_mask(mask, shape)
        missing = np.hstack([np.vstack(np.nonzero(~dense_mask)).astype(np.intp), nan_coords])
    if missing.shape[1] == 0:
        return np.empty((len(shape), 0), dtype=np.intp)
    flat = np.unique(np.ravel_multi_index(tuple(missing), shape))
    return np.vstack(np.unravel_index(flat, shape)).astype(np.intp)


def _drop_entries(coords, values, missing, shape):
    """Remove observed non-zeros that the mask marks missing."""
    if missing.shape[1] == 0 or coords.shape[1] == 0:
        return coords, values
    hidden = np.isin(
        np.ravel_multi_index(tuple(coords), shape), np.ravel_multi_index(tuple(missing), shape)
    )
    return coords[:, ~hidden], values[~hidden]


# --------------------------------------------------------------------- checks
def _check_dtype(dtype):
    if dtype == bool:
        return
    if not np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"The data must be real numbers, got dtype {dtype}.")


def _check_values(finite_candidates, allow_negative=False):
    if np.isinf(finite_candidates).any():
        raise ValueError("The data contain infinite values; use NaN to mark missing entries.")
    if not allow_negative and (finite_candidates < 0).any():
        raise ValueError(
            "Negative values in data: a Poisson model needs non-negative counts "
            f"(smallest value {finite_candidates.min():g})."
        )
