"""The input check shared by the exact (enumeration) evidence functions."""

import numpy as np

__all__ = ["as_count_array"]


def as_count_array(X, ndim=None):
    """``X`` as an int64 array of non-negative whole counts, or a ValueError
    naming the problem; ``ndim`` requires that many dimensions (else at
    least one)."""
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must be a numeric array, got dtype {X.dtype}")
    if ndim is not None and X.ndim != ndim:
        raise ValueError(f"X must be a {ndim}-D array, got {X.ndim} dimension(s)")
    if X.ndim < 1 or X.size == 0:
        raise ValueError(f"X must be a non-empty array (not empty, at least 1-D), got shape {X.shape}")
    X = X.astype(np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    if np.any(X < 0):
        raise ValueError("X contains negative values; counts must be >= 0")
    if np.any(X != np.round(X)):
        raise ValueError("X contains non-integer values; counts must be integers")
    return X.astype(np.int64)
