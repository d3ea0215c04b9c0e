"""The data of ``python -m sklearn_pltf``: a shipped tensor by name, or a
user's ``.npy`` / ``.npz`` file, as a dense array and its observed entries."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from .datasets import load_kinships, load_nations, load_umls, off_diagonal_mask

__all__ = ["CommandData", "load_data", "SHIPPED"]

SHIPPED = {"nations": load_nations, "kinships": load_kinships, "umls": load_umls}


class CommandData(NamedTuple):
    """The command's data: ``X`` (dense, 0 at missing entries), ``observed``
    (True where an entry is observed) and a one-line ``summary``."""

    X: np.ndarray
    observed: np.ndarray
    summary: str


def load_data(source, *, key=None, exclude_diagonal=False):
    """The data named by ``source``: a shipped name (its self-relations
    excluded) or the path of a ``.npy`` or ``.npz`` file.

    Raises
    ------
    ValueError
        When the file's array is not numeric, has fewer than 2 axes, holds
        negative or infinite values, or (``.npz``) has several arrays and no
        ``key``; OSError when it cannot be read.
    """
    if source in SHIPPED:
        bunch = SHIPPED[source]()
        X = np.asarray(bunch.data, dtype=np.float64)
        name = f"{source.capitalize()}: {X.shape[0]} x {X.shape[1]} entities x " \
               f"{X.shape[2]} relations"
        exclude_diagonal = True
    else:
        X = _read_array(Path(source), key)
        name = f"{source}: shape {' x '.join(map(str, X.shape))}"
    observed = ~np.isnan(X)
    if exclude_diagonal:
        if X.shape[0] != X.shape[1]:
            raise ValueError(f"--exclude-diagonal needs equal first two axes, got shape {X.shape}.")
        observed &= off_diagonal_mask(X.shape)
    if not observed.any():
        raise ValueError(f"{source}: no entry is observed.")
    X = np.where(observed, X, 0.0)
    values = X[observed]
    if not values.any():
        raise ValueError(f"{source}: every observed entry is zero; there is nothing to "
                         "factorise.")
    where = " off the diagonal" if exclude_diagonal else ""
    summary = (f"{name}, {int(np.count_nonzero(values))} non-zero entries "
               f"({np.count_nonzero(values) / values.size:.1%} of the observed entries{where}), "
               f"{X.size - values.size} missing")
    return CommandData(X, observed, summary)


#: How each file format starts (a .npz file is a zip archive), and what writes it.
_MAGIC = {".npy": b"\x93NUMPY", ".npz": b"PK"}
_SAVER = {".npy": "save", ".npz": "savez"}


def _read_array(path, key):
    if path.suffix not in (".npy", ".npz"):
        raise ValueError(f"--data {path}: give a shipped name ({', '.join(SHIPPED)}) or a .npy "
                         "or .npz file.")
    with open(path, "rb") as file:
        start = file.read(6)
    expected = _MAGIC[path.suffix]
    if not start.startswith(expected):
        raise ValueError(f"{path} is not a NumPy {path.suffix} file (it does not start as one "
                         f"does); save the array with np.{_SAVER[path.suffix]}.")
    loaded = np.load(path, allow_pickle=False)
    if path.suffix == ".npz":
        with loaded:
            names = list(loaded.files)
            if not names:
                raise ValueError(f"{path} holds no array.")
            if "format" in names and "indptr" in names:
                raise ValueError(f"{path} holds a scipy.sparse matrix; the command reads dense "
                                 "arrays (save it with np.save, or fit it from Python).")
            if key is None and len(names) != 1:
                raise ValueError(f"{path} holds the arrays {', '.join(names)}; name one with "
                                 "--key.")
            if key is not None and key not in names:
                raise ValueError(f"{path} has no array {key!r} (it has {', '.join(names)}).")
            loaded = loaded[key or names[0]]
    if not (np.issubdtype(loaded.dtype, np.number) or loaded.dtype == bool) \
            or np.iscomplexobj(loaded):
        raise ValueError(f"{path}: the array must hold real numbers, got dtype {loaded.dtype}.")
    X = np.asarray(loaded, dtype=np.float64)
    if X.ndim < 2:
        raise ValueError(f"{path}: the array must have at least 2 axes, got shape {X.shape}.")
    finite = X[~np.isnan(X)]
    if not np.isfinite(finite).all() or (finite < 0).any():
        raise ValueError(f"{path}: the values must be finite and non-negative (NaN marks a "
                         "missing entry).")
    return X
