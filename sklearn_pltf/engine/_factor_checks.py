"""Checks of what a user gives about a bound model's factors and entries:
entry indices inside the data, fixed factors that can reach every observed
non-zero, factors named by position or index string (``init``,
``fixed_factors``, ``tied_factors``), and given factor values, each failing
with a message that names the problem."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from ._array_api import array_namespace_of_input, to_numpy
from ._contract import EntryList, full_xhat
from .distributed import unreachable_nonzeros

__all__ = ["check_entry_indices", "check_fixed_factors_reach_the_data", "factor_position",
           "by_factor_position", "tied_positions", "given_start", "real_factor_copy",
           "fixed_factor_copies"]


def check_entry_indices(indices, shape):
    """``indices`` as an (n_entries, n_dims) integer array of entries inside
    ``shape``, or a ValueError saying what is wrong."""
    coords = np.asarray(indices)
    if coords.ndim != 2 or coords.shape[1] != len(shape):
        raise ValueError(f"indices must have shape (n_entries, {len(shape)}), got {coords.shape}.")
    if not np.issubdtype(coords.dtype, np.integer):
        raise ValueError("indices must be integers.")
    if (coords < 0).any() or (coords >= np.asarray(shape)).any():
        raise ValueError(f"indices fall outside the fitted data's shape {shape}.")
    return coords


def check_fixed_factors_reach_the_data(model, data, fixed):
    """Raise unless X̂ can be positive at every observed non-zero entry.

    Whatever the free factors' (positive) values, X̂ is zero exactly where
    every latent configuration meets a zero of a fixed factor, so X̂ with
    the free factors at one shows where: a count there has probability zero
    under the model.
    """
    if not fixed:
        return
    factors = [fixed[a] if a in fixed else np.ones(model.factor_shape(a))
               for a in range(model.n_factors)]
    if data.is_array_api:
        n_unreachable, first = _unreachable_on_device(model, data, factors)
    else:
        if data.is_distributed:
            unreachable = unreachable_nonzeros(model, data, factors)
        else:
            coords, _ = data.nonzero_entries
            unreachable = coords[:, EntryList(model, coords).xhat(factors) <= 0]
        n_unreachable = unreachable.shape[1]
        first = tuple(int(c) for c in unreachable[:, 0]) if n_unreachable else None
    if n_unreachable:
        raise ValueError(
            f"The fixed factors make the model's mean X̂ zero at {n_unreachable} "
            f"observed non-zero entries (the first at {first}), where the data then have "
            "probability zero. Give the fixed factors positive values there, or mark those "
            "entries missing."
        )


def _unreachable_on_device(model, data, factors):
    """For array-API data: how many observed non-zeros X̂ of ``factors``
    cannot reach, and the first in C order (None if none), counted on the
    device."""
    xp = data.xp
    bad = xp.reshape((full_xhat(model, factors) <= 0) & (data.dense != 0), (-1,))
    n_bad = int(xp.count_nonzero(bad))
    if not n_bad:
        return 0, None
    first = np.unravel_index(int(xp.argmax(xp.astype(bad, xp.int8))), data.shape)
    return n_bad, tuple(int(c) for c in first)


def factor_position(model, key, name, role="key"):
    """The position of the factor ``key`` names in parameter ``name``: a
    position, or a factor's index string (``role``: what ``key`` is in
    ``name``, for the message: a dict's ``"key"`` or ``"value"``)."""
    if isinstance(key, str):
        matches = [a for a, f in enumerate(model.factors) if f == key]
        if len(matches) != 1:
            raise ValueError(
                f"{name} {role} {key!r} must name exactly one factor of {model.string!r} "
                f"(factors: {', '.join(model.factors)}); {key!r} is not exactly one factor's "
                "index string."
            )
        return matches[0]
    if isinstance(key, bool) or not isinstance(key, Integral) or not 0 <= key < model.n_factors:
        raise ValueError(
            f"{name} {role} {key!r} is neither a factor position 0..{model.n_factors - 1} "
            "nor a factor's index string."
        )
    return int(key)


def by_factor_position(model, given, name):
    """``{position: (key, value)}`` of a dict ``given`` keyed by factor
    positions or index strings (:func:`factor_position`), each factor given
    once; ``{}`` for None."""
    out = {}
    for key, value in (given or {}).items():
        position = factor_position(model, key, name)
        if position in out:
            raise ValueError(
                f"{name} gives factor {position} ({model.factors[position]!r}) twice; "
                "give each factor once.")
        out[position] = (key, value)
    return out


def tied_positions(model, tied_factors):
    """``{position: source position}`` from ``tied_factors``, a dict whose
    keys (the tied factors) and values (the factors they are) are each a
    position or an index string of a factor of ``model`` (parsed or bound),
    each tied factor given once; ``{}`` for None.

    The one check of ``tied_factors`` for every estimator that takes it
    (:class:`~sklearn_pltf.PLTF`, :class:`~sklearn_pltf.CoupledPLTF`, whose
    first model holds the tie); whether the tie is a supported structure is
    :func:`~sklearn_pltf.inference.relational.structure.tied_structure`'s to say.
    """
    return {position: factor_position(model, source, "tied_factors", role="value")
            for position, (_, source) in by_factor_position(model, tied_factors,
                                                            "tied_factors").items()}


def given_start(model, init):
    """``{position: array}`` from ``init`` given as ``{position or index
    string: array}`` or a sequence with an array (or None) per factor; each
    array finite, positive and of its free factor's shape (a copy)."""
    items = (init.items() if isinstance(init, dict) else enumerate(init))
    if not isinstance(init, dict) and len(init) != model.n_factors:
        raise ValueError(f"init as a sequence needs one entry per factor of {model.string!r} "
                         f"({model.n_factors}), got {len(init)}.")
    start = {}
    for key, value in items:
        if value is None:
            continue
        position = factor_position(model, key, "init")
        if position in model.fixed:
            raise ValueError(f"init gives factor {position} ({model.factors[position]!r}), "
                             "which is fixed; give only free factors.")
        if position in start:
            raise ValueError(f"init gives factor {position} ({model.factors[position]!r}) "
                             "twice; give each factor once.")
        array = real_factor_copy(value, f"init for factor {key!r}")
        if array.shape != model.factor_shape(position):
            raise ValueError(
                f"init for factor {position} ({model.factors[position]!r}) has shape "
                f"{array.shape}; the model needs {model.factor_shape(position)}.")
        if not np.all(np.isfinite(array)) or np.any(array <= 0):
            raise ValueError(f"init for factor {position} must be finite and > 0 (a factor "
                             "started at zero stays there).")
        start[position] = array
    return start


def real_factor_copy(value, what):
    """``value`` (array-like, or a sparse array: a factor is small) as a new
    dense float64 array, or a ValueError naming ``what`` unless it is a
    regular array of real numbers (or booleans)."""
    if array_namespace_of_input(value) is not None:  # a factor of another namespace: small
        value = to_numpy(value)
    elif hasattr(value, "toarray"):  # scipy.sparse
        value = value.toarray()
    elif hasattr(value, "todense"):  # pydata sparse, which refuses np.asarray
        value = value.todense()
    try:
        given = np.asarray(value)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"{what} is not a regular array of numbers: {exc}") from None
    if np.iscomplexobj(given) or not (np.issubdtype(given.dtype, np.number)
                                      or given.dtype == bool):
        raise ValueError(f"{what} must be real numbers, got dtype {given.dtype}.")
    return np.array(given, dtype=np.float64, copy=True)


def fixed_factor_copies(model, fixed_factors):
    """``{position: float array}`` from keys given as positions or index
    strings; each array a copy, so the fit never shares memory with the user's."""
    fixed = {}
    for position, (key, value) in by_factor_position(model, fixed_factors,
                                                     "fixed_factors").items():
        array = real_factor_copy(value, f"Fixed factor {key!r}")
        if not np.all(np.isfinite(array)) or (array < 0).any():
            raise ValueError(f"Fixed factor {key!r} must be finite and non-negative.")
        fixed[position] = array
    return fixed
