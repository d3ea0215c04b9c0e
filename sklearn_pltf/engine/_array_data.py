"""Dense data of another array namespace (PyTorch, CuPy, ...), checked and
kept where they live: the array-API counterpart of :class:`~sklearn_pltf.engine._data.ObservedTensor`
in its dense layout.

Every check and summary is a reduction on the data's device; only scalars
come back to the host.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ._array_api import as_namespace, device_of, float64_sum, gammaln, xlogy
from ._data import TensorExtent

__all__ = ["ArrayAPITensor", "as_array_api_tensor"]


class ArrayAPITensor(TensorExtent):
    """Dense observed data in an array namespace ``xp``.

    ``dense`` holds the values (floating, the input's precision) with 0 at
    missing entries, ``mask`` the observed entries as a Boolean array, or
    None when all are observed. Both are the package's own arrays, never
    the caller's.
    """

    is_sparse = False
    is_distributed = False
    is_array_api = True

    def __init__(self, dense, mask, xp):
        self.dense, self.mask, self.xp = dense, mask, xp
        self.shape = tuple(int(n) for n in dense.shape)

    @property
    def device(self):
        return device_of(self.dense)

    @property
    def dtype(self):
        return self.dense.dtype

    @cached_property
    def n_missing(self):
        if self.mask is None:
            return 0
        return self.size - int(self.xp.count_nonzero(self.mask))

    @cached_property
    def _value_sums(self):
        """(Σ x, Σ log Γ(x + 1), Σ x log x − x − log Γ(x + 1)) over the
        observed entries (0 at zeros and at the missing ones, held at 0)."""
        x = self.dense
        log_factorials = gammaln(x + 1.0)
        return (float64_sum(x), float64_sum(log_factorials),
                float64_sum(xlogy(x, x) - x - log_factorials))

    @property
    def total(self):
        """Sum of the observed values."""
        return self._value_sums[0]

    @property
    def log_factorial_total(self):
        """Σ log Γ(X + 1) over the observed entries."""
        return self._value_sums[1]

    @property
    def saturated_total(self):
        """Σ x log x − x − log Γ(x + 1) over the observed entries."""
        return self._value_sums[2]

    @cached_property
    def is_integer(self):
        return bool(self.xp.all(self.dense == self.xp.round(self.dense)))

    def value_sum(self, function):
        """Σ ``function(values)`` over the observed non-zero values
        (``function`` maps an array to an array of terms, in this namespace)."""
        xp = self.xp
        nonzero = self.dense != 0
        terms = function(xp.where(nonzero, self.dense, xp.ones_like(self.dense)))
        terms = xp.astype(terms, self.dtype) if terms.dtype == xp.bool else terms
        return float64_sum(xp.where(nonzero, terms, xp.zeros_like(terms)))

    @cached_property
    def fingerprint(self):
        """Shape, dtype and weighted sums of the values and of the missing
        entries, each weight a fixed function of the entry's position:
        different data give different sums except by coincidence."""
        xp = self.xp
        flat = xp.reshape(self.dense, (-1,))
        position = xp.arange(self.size, dtype=self.dtype, device=self.device)
        weights = xp.cos(position * 0.7390851332 + 0.5)
        sums = [xp.sum(flat), xp.sum(flat * flat), xp.sum(flat * weights)]
        if self.mask is not None:
            missing = xp.astype(xp.logical_not(xp.reshape(self.mask, (-1,))), self.dtype)
            sums += [xp.sum(missing), xp.sum(missing * weights)]
        return ("array-api", self.shape, str(self.dtype)) + tuple(float(s) for s in sums)

    def take_samples(self, rows):
        """The data of the samples ``rows`` (positions along axis 0, on the host)."""
        xp = self.xp
        index = xp.asarray(np.asarray(rows, dtype=np.int64), device=self.device)
        mask = None if self.mask is None else xp.take(self.mask, index, axis=0)
        return ArrayAPITensor(xp.take(self.dense, index, axis=0), mask, xp)


def as_array_api_tensor(X, mask, xp, allow_negative=False):
    """Check ``X`` (an ``xp`` array; NaN marks missing entries) and ``mask``
    (True where observed; any array-like of the data's shape) into an
    :class:`ArrayAPITensor` on ``X``'s device.

    Integer and Boolean data become ``xp.float64``; floating data keep their
    precision. The messages are those of the NumPy path.
    """
    if xp.isdtype(X.dtype, "complex floating") or not xp.isdtype(
            X.dtype, ("real floating", "integral", "bool")):
        raise ValueError(f"The data must be real numbers, got dtype {X.dtype}.")
    if X.ndim == 0 or any(int(n) == 0 for n in X.shape):
        raise ValueError(f"The data are empty (shape {tuple(X.shape)}); need at least one entry.")
    device = device_of(X)
    given = X
    if not xp.isdtype(X.dtype, "real floating"):
        X = xp.astype(X, xp.float64)
    missing = xp.isnan(X)
    if bool(xp.any(xp.isinf(X))):
        raise ValueError("The data contain infinite values; use NaN to mark missing entries.")
    observed = xp.logical_not(missing)
    if mask is not None:
        observed = xp.logical_and(observed, _mask_on(mask, X, xp, device))
    all_observed = bool(xp.all(observed))
    dense = X if all_observed else xp.where(observed, X, xp.zeros_like(X))
    if not allow_negative and bool(xp.any(dense < 0)):
        smallest = float(xp.min(dense))
        raise ValueError("Negative values in data: a Poisson model needs non-negative counts "
                         f"(smallest value {smallest:g}).")
    dense = xp.asarray(dense, copy=True) if dense is given else dense  # never the caller's array
    data = ArrayAPITensor(dense, None if all_observed else observed, xp)
    if data.n_observed == 0:
        raise ValueError("All entries of the data are missing; there is nothing to fit.")
    return data


def _mask_on(mask, X, xp, device):
    """The mask as a Boolean ``xp`` array on ``device``, checked like the NumPy path's."""
    mask = as_namespace(mask, xp, device)
    if tuple(mask.shape) != tuple(X.shape):
        raise ValueError(f"The mask has shape {tuple(mask.shape)} but the data have shape "
                         f"{tuple(X.shape)}.")
    if mask.dtype != xp.bool:
        if not bool(xp.all((mask == 0) | (mask == 1))):
            raise ValueError("The mask must be boolean (True = observed) or contain only 0 and 1.")
        mask = mask != 0
    return mask
