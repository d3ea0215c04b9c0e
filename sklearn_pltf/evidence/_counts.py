"""The input check and the enumeration shared by the exact evidence functions."""

import numpy as np

__all__ = ["as_count_array", "compositions"]


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


def compositions(n, n_parts):
    """All compositions of ``n`` into ``n_parts`` non-negative parts.

    Returns an int64 array of shape ``(C(n + n_parts - 1, n_parts - 1),
    n_parts)``.  Built one part at a time: every partial composition with
    ``m`` still unassigned is expanded into ``m + 1`` rows taking ``0..m``,
    and the last part takes whatever remains.
    """
    parts = np.zeros((1, 0), dtype=np.int64)
    remaining = np.array([n], dtype=np.int64)
    for _ in range(n_parts - 1):
        n_children = remaining + 1
        parent = np.repeat(np.arange(len(parts)), n_children)
        # Position of each child within its parent's block = the value taken.
        block_start = np.repeat(np.cumsum(n_children) - n_children, n_children)
        value = np.arange(n_children.sum()) - block_start
        parts = np.column_stack([parts[parent], value])
        remaining = remaining[parent] - value
    return np.column_stack([parts, remaining])
