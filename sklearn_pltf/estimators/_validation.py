"""Checks of what a user gives the estimators: their parameters beyond
scikit-learn's constraints, and the data (and their mask), each failing with
a message that names the problem (what is given about a model's factors and
entries: :mod:`sklearn_pltf.engine._factor_checks`)."""

from __future__ import annotations

from numbers import Integral

import numpy as np
import sparse
from sklearn.utils._param_validation import (Hidden, Interval, InvalidParameterError,
                                             make_constraint)
from sklearn import get_config
from sklearn.utils.validation import validate_data

from ..engine._array_api import array_namespace_of_input
from ..engine._array_data import as_array_api_tensor
from ..engine._data import as_observed_tensor, is_dask_array
from ..engine.distributed import as_distributed_tensor
from ._fitting import set_fitted

__all__ = ["check_parameters", "check_ranks", "MAX_RANK", "validate_tensor", "input_namespace"]


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
                    distributed=False, chunks=None, keep_float32=False):
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
    With ``keep_float32``, a dense float32 NumPy array stays float32 (for a
    fit in float32); all other input becomes float64.
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
            estimator, X, reset=reset, accept_sparse=("csr", "csc", "coo"),
            dtype=(np.float64, np.float32) if keep_float32 else np.float64,
            ensure_all_finite="allow-nan", allow_nd=True, ensure_2d=min_ndim >= 2,
        )
    return as_observed_tensor(X, mask, allow_negative=allow_negative, keep_float32=keep_float32)


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


