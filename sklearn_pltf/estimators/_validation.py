"""Checks of what a user gives the estimators: their parameters beyond
scikit-learn's constraints, the data (and their mask), entry indices, fixed
factors against the data, and given starting factors, each failing with a
message that names the problem."""

from __future__ import annotations

from numbers import Integral

import numpy as np
import sparse
from sklearn.utils._param_validation import (Hidden, Interval, InvalidParameterError,
                                             make_constraint)
from sklearn import get_config
from sklearn.utils.validation import validate_data

from ..engine._array_api import array_namespace_of_input, to_numpy
from ..engine._array_data import as_array_api_tensor
from ..engine._contract import EntryList, full_xhat
from ..engine._data import as_observed_tensor, is_dask_array
from ..engine.distributed import as_distributed_tensor, unreachable_nonzeros
from ._fitting import set_fitted

__all__ = ["check_parameters", "check_ranks", "MAX_RANK",
           "validate_tensor", "input_namespace", "check_entry_indices",
           "check_fixed_factors_reach_the_data",
           "given_start", "real_factor_copy", "factor_position", "tied_positions",
           "by_factor_position"]


#: The largest rank (size of a latent index) a factor can have: a factor is
#: a float64 array with at least one row of that many values, whose bytes
#: must be addressable (NumPy's limit on an array's size).
MAX_RANK = int(np.iinfo(np.intp).max) // np.dtype(np.float64).itemsize


def check_parameters(estimator):
    """What scikit-learn's constraints (``_parameter_constraints``) let
    through but no fit can take, refused for every estimator (the base's
    ``_validate_params`` calls it after them): a bool where the table
    declares an integer (:func:`_refuse_bools_as_integers`), and ranks no
    factor can hold (:func:`check_ranks`)."""
    params = estimator.get_params(deep=False)
    _refuse_bools_as_integers(estimator._parameter_constraints, params,
                              type(estimator).__name__)
    if "n_components" in params:
        check_ranks(params["n_components"])


def _is_integer_constraint(constraint):
    """Whether an entry of a constraint table declares an integer:
    ``Integral`` (or ``int``) itself, or an ``Interval`` over ``Integral``."""
    if isinstance(constraint, Hidden):
        constraint = constraint.constraint
    return (constraint is Integral or constraint is int
            or isinstance(constraint, Interval) and constraint.type is Integral)


def _refuse_bools_as_integers(constraints, params, caller):
    """An InvalidParameterError for the first parameter that holds a bool
    where its constraints declare an integer and no other option of them
    (``"boolean"``, ``"verbose"``, ...) takes a bool: scikit-learn's
    ``Interval(Integral, ...)`` accepts True and False, bool being an
    Integral, so ``n_warmup=True`` would run as 1."""
    for name, value in params.items():
        table = constraints.get(name)
        if (not isinstance(value, bool) or not isinstance(table, list)
                or not any(_is_integer_constraint(c) for c in table)):
            continue
        if any(make_constraint(c).is_satisfied_by(value) for c in table
               if not _is_integer_constraint(c)):
            continue
        shown = [c for c in map(make_constraint, table) if not c.hidden]
        described = (str(shown[0]) if len(shown) == 1 else
                     f"{', '.join(map(str, shown[:-1]))} or {shown[-1]}")
        raise InvalidParameterError(
            f"The {name!r} parameter of {caller} must be {described}, not a bool. "
            f"Got {value!r} instead.")


def check_ranks(n_components, name="n_components"):
    """Raise a ValueError naming ``name`` and :data:`MAX_RANK` unless every
    rank in ``n_components`` (an int, a tuple or list of ints as TuckerVB
    takes, or a dict ``{index: int}``) is at most :data:`MAX_RANK`; other
    values are the constraints' and the model's to check.

    The one check of a rank's size for every estimator, and for the
    command line's ``--ranks`` (``name``): a larger rank cannot size an
    array, and was refused from deep inside the fit with a message about
    ``prior_shape``."""
    if isinstance(n_components, dict):
        ranks = [(f"{name}[{key!r}]", value) for key, value in n_components.items()]
    elif isinstance(n_components, (tuple, list)):
        ranks = [(f"{name}[{i}]", value) for i, value in enumerate(n_components)]
    else:
        ranks = [(name, n_components)]
    for where, value in ranks:
        if isinstance(value, Integral) and not isinstance(value, bool) and value > MAX_RANK:
            raise ValueError(
                f"{where}={value} is more than the largest rank a factor can have, "
                f"{MAX_RANK} (2^{MAX_RANK.bit_length()} - 1): a factor holds at least one row "
                "of that many float64 values, whose bytes must be addressable.")


def validate_tensor(estimator, X, mask, *, reset, min_ndim=2, allow_negative=False,
                    distributed=False, chunks=None):
    """Validate ``X`` (and ``mask``) for ``estimator`` into an :class:`ObservedTensor`.

    Dense arrays and scipy.sparse matrices go through scikit-learn's
    ``validate_data`` (its messages, ``n_features_in_``); a pydata sparse
    array is checked here, since ``validate_data`` would densify it. With
    ``distributed``, a Dask array is persisted on the active cluster as a
    :class:`~sklearn_pltf.engine.distributed.DistributedTensor` (checked chunk by
    chunk on the workers), rechunked first to ``chunks(shape)`` if given;
    without ``distributed``, it is refused rather than gathered. With
    ``array_api_dispatch=True``, an array of another namespace (PyTorch,
    CuPy, ...) becomes an :class:`~sklearn_pltf.engine._array_data.ArrayAPITensor`
    where it lives, if ``estimator._array_api_refusal()`` is None; else
    that message is raised (a TypeError), rather than a silent copy to NumPy.
    """
    xp = input_namespace(X)
    if xp is not None:
        refusal = estimator._array_api_refusal()
        if refusal is not None:
            raise TypeError(refusal)
        _check_n_features(estimator, X, reset, min_ndim)
        if reset:
            estimator.__dict__.pop("feature_names_in_", None)
        return as_array_api_tensor(X, mask, xp, allow_negative=allow_negative)
    if is_dask_array(X):
        if not distributed:
            raise ValueError(
                f"{type(estimator).__name__} with these parameters needs its data in one "
                "process; a Dask array is fitted on its cluster by BayesianNMF, PoissonCP, "
                "TuckerVB and PLTF (untied) with method='vb' or 'em' and an init other than "
                "'svd', or method='sgld' with n_blocks. Pass X.compute() if the data fit in "
                "memory.")
        _check_n_features(estimator, X, reset, min_ndim)
        if chunks is not None:
            X = X.rechunk(chunks(X.shape))
        return as_distributed_tensor(X, mask, allow_negative=allow_negative)
    if isinstance(X, sparse.SparseArray):
        _check_n_features(estimator, X, reset, min_ndim)
    else:
        X = validate_data(
            estimator, X, reset=reset, accept_sparse=("csr", "csc", "coo"), dtype=np.float64,
            ensure_all_finite="allow-nan", allow_nd=True, ensure_2d=min_ndim >= 2,
        )
    return as_observed_tensor(X, mask, allow_negative=allow_negative)


def input_namespace(X):
    """The array namespace ``X`` is fitted in, or None for the NumPy engine:
    not None only with scikit-learn's ``array_api_dispatch=True`` and a dense
    array of another library than NumPy."""
    if isinstance(X, np.ndarray) or not get_config()["array_api_dispatch"]:
        return None
    return array_namespace_of_input(X)


def _check_n_features(estimator, X, reset, min_ndim):
    """``validate_data``'s dimension and ``n_features_in_`` checks, for arrays
    it would densify (pydata sparse, Dask)."""
    if X.ndim < min_ndim:
        raise ValueError(f"Expected a {min_ndim}-D or larger array, got {X.ndim}-D.")
    if reset:
        set_fitted(estimator, {"n_features_in_": X.shape[1] if X.ndim > 1 else 1})
    elif X.ndim > 1 and X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )


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
    if input_namespace(value) is not None:  # a factor of another namespace: small
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
