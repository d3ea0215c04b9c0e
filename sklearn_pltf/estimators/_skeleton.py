"""What every estimator of the package shares: the scikit-learn skeleton of
``fit``, ``fit_transform``, ``transform`` and ``score`` around a subclass's
model and algorithm.

The skeleton validates ``X`` once per call, turns ``random_state`` into one
:class:`numpy.random.Generator` per fit (subclasses spawn it into restarts, chains
and evidence runs), clears the previous fit's attributes, leaves the
estimator as it was when a fit raises, fingerprints the training data so that
``score`` returns the evidence for it, and lets ``fit_transform`` reuse what
``fit`` computed. A subclass supplies:

- ``_observed(X, mask, reset)``: the checks of its data model, returning an
  :class:`~sklearn_pltf.engine._data.ObservedTensor`;
- ``_fit_data(data, rng)``: the fit itself, returning the fitted
  attributes (:func:`set_fitted` sets them when it is done);
- ``_transform_data(data)``: the sample-mode factor of validated new data;
- ``_predictive_score(data)``: the score of new samples;
- ``_stale_attributes``: fitted attributes that only some fits set, removed
  before each fit so that none survives from an earlier one.
"""

from __future__ import annotations

import functools
from abc import ABCMeta, abstractmethod

import numpy as np
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                          _fit_context)
from sklearn.utils.validation import check_is_fitted

from ..engine._array_api import array_api_refusal
from ..engine._contract import full_xhat
from ..engine._random import as_generator
from ._fitting import set_fitted
from ._validation import check_parameters

__all__ = ["BaseFactorization", "restore_on_failure", "unmasked_fingerprint",
           "is_training_data_without_its_mask"]


def restore_on_failure(fit):
    """Decorate ``fit`` so that a fit that raises leaves the estimator as it
    was: its attributes (a fitted state included) are put back."""

    @functools.wraps(fit)
    def guarded_fit(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    return guarded_fit


class BaseFactorization(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator,
                        metaclass=ABCMeta):
    """Base class of every estimator in the package (not for direct use)."""

    #: Fitted attributes that only some fits set (see the module docstring).
    _stale_attributes: tuple = ()

    def _validate_params(self):
        """scikit-learn's check of ``_parameter_constraints``, then what it
        lets through but no fit can take (:func:`._validation.check_parameters`:
        a bool for an integer, a rank no array can hold); ``fit``,
        ``fit_transform`` and ``partial_fit`` run it first."""
        super()._validate_params()
        check_parameters(self)

    @_fit_context(prefer_skip_nested_validation=True)
    @restore_on_failure
    def fit(self, X, y=None, mask=None):
        """Fit the model to ``X`` and estimate its evidence.

        Parameters
        ----------
        X : ndarray, pydata sparse array, scipy.sparse matrix or Dask array
            The data, axis 0 the samples; NaN marks missing entries of a
            dense array. A Dask array (chunks of pydata sparse arrays) is
            fitted on its dask.distributed cluster by the estimators and
            methods that support it (the "Large data" guide). With
            scikit-learn's ``array_api_dispatch=True``, a dense PyTorch or
            CuPy array is fitted on its device by the estimators and methods
            that support it (the "GPU" guide); the fitted arrays are then of
            its namespace and device.
        y : None
            Ignored.
        mask : array-like of bool, default=None
            True where an entry is observed (for sparse input, whose missing
            entries cannot be NaN; a Boolean Dask array for a Dask array).

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        FloatingPointError
            If the evidence estimate is not finite or impossible for the
            data; the message says what to change. A fit that raises leaves
            the estimator as it was.
        """
        self._fit(X, mask)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    @restore_on_failure
    def fit_transform(self, X, y=None, mask=None):
        """Fit to ``X`` and return its sample-mode factor: ``fit(X).transform(X)``
        with ``X`` validated once and what ``fit`` computed reused.

        Returns
        -------
        W : ndarray of shape (n_samples, n_components)
        """
        data = self._fit(X, mask)
        return _in_precision_of(self._fitted_transform(data), data)

    def transform(self, X, mask=None):
        """The posterior mean of the sample-mode factor for the samples in
        ``X``, every other factor held at its posterior (fold-in), each sample
        on its own. For the training data (recognised by the fingerprint taken
        at fit), the factor the fit ended with, as :meth:`fit_transform`
        returns.

        Returns
        -------
        W : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        data = self._observed_like_fit(X, mask, "transform")
        if self._is_training_data(data):
            return _in_precision_of(self._fitted_transform(data), data)
        return _in_precision_of(self._transform_data(data), data)

    def score(self, X, y=None, mask=None):
        """Log evidence of ``X`` (higher is better): ``log_evidence_`` when
        ``X`` is the training data (recognised by a fingerprint taken at
        fit), else the predictive score of the new samples with their factor
        folded in.

        The training data are recognised with the mask the fit was given, or
        without any: ``score(X)`` of the ``X`` fitted with ``mask=m`` is the
        evidence of that fit, the entries ``m`` hid staying missing (as
        ``GridSearchCV(..., cv=FullDataSplit()).fit(X, mask=m)`` needs, which
        passes ``mask`` to ``fit`` only, unless scikit-learn's metadata
        routing sends it to ``score`` too: ``set_score_request(mask=True)``).
        To score every entry of such an ``X`` as new samples, pass an
        all-True mask."""
        check_is_fitted(self)
        data = self._observed_like_fit(X, mask, "score")
        if self._is_training_data(data) or self._is_training_data_without_its_mask(data, mask):
            return self._training_score()
        self._check_sample_shape(data)
        return float(self._predictive_score(data))

    def reconstruct(self):
        """X̂, the model's mean of every entry of the training data's shape,
        at the fitted factors (``factors_``): dense, so memory follows the
        data's full size.

        Returns
        -------
        X_hat : ndarray of the training data's shape
        """
        check_is_fitted(self)
        return full_xhat(self.model_, list(self.factors_))

    # ------------------------------------------------------------ for subclasses
    def _fit(self, X, mask):
        """Validate ``X``, fit, fingerprint the data; returns the validated data."""
        data = self._observed(X, mask, reset=True)
        attributes = self._fit_data(data, as_generator(self.random_state))
        set_fitted(self, {
            **attributes, "_data_namespace": _namespace_and_device(data),
            "_fingerprint": data.fingerprint,
            "_unmasked_fingerprint": None if data.is_distributed else unmasked_fingerprint(
                data.fingerprint, mask,
                lambda: self._observed(X, None, reset=False).fingerprint)},
            stale=self._stale_attributes)
        return data

    def _observed_like_fit(self, X, mask, method):
        """``X`` (and ``mask``) validated for ``method``, or a ValueError unless
        they are arrays of the namespace and device the fit's were."""
        data = self._observed(X, mask, reset=False)
        given, fitted = _namespace_and_device(data), getattr(self, "_data_namespace", None)
        if given != fitted:
            raise ValueError(
                f"Inputs passed to {type(self).__name__}.{method}() must use the same namespace "
                "and the same device as those passed to fit(): "
                f"{given or 'NumPy'} here, {fitted or 'NumPy'} at fit.")
        return data

    @abstractmethod
    def _observed(self, X, mask, reset):
        """``X`` (and ``mask``) checked into an ``ObservedTensor``."""

    @abstractmethod
    def _fit_data(self, data, rng):
        """Fit to validated ``data`` with the generator ``rng``; returns the
        fitted attributes, ``{name: value}``."""

    @abstractmethod
    def _transform_data(self, data):
        """:meth:`transform` of validated data."""

    @abstractmethod
    def _predictive_score(self, data):
        """:meth:`score` of validated new samples."""

    def _fitted_transform(self, data):
        """:meth:`transform` of the training data right after the fit (a
        subclass returns what its fit already computed)."""
        return self._transform_data(data)

    def _sample_factor(self, model=None):
        """Position of the sample-mode factor of ``model`` (default: the
        fitted one), which :meth:`transform` returns; a ValueError if the
        model has none."""
        model = self.model_ if model is None else model
        alpha = model.sample_factor()
        if alpha is None:
            raise ValueError(
                f"Model {model.string!r} has no sample-mode factor (one free factor "
                "carrying axis 0 and no other observed index), so new samples cannot be "
                "folded in."
            )
        return alpha

    @property
    def _n_features_out(self):
        """Columns of :meth:`transform`'s output: the sample-mode factor's
        latent sizes multiplied (``get_feature_names_out`` names them)."""
        model = self.model_
        own = model.factors[self._sample_factor()]
        return int(np.prod([model.sizes[c] for c in own if c != model.output[0]]))

    def _training_data(self, X, mask):
        """``X`` (and ``mask``) validated, or a ValueError unless they are the
        training data."""
        data = self._observed(X, mask, reset=False)
        if not self._is_training_data(data):
            raise ValueError("X (with mask) must be the data the estimator was fitted to.")
        return data

    def _default_factor_names(self):
        """A name per factor in model order (ArviZ variables, plot titles):
        ``Z<position>_<indices>`` unless the estimator knows better."""
        return [f"Z{a}_{f}" for a, f in enumerate(self.model_.factors)]

    def _index_coords(self):
        """``{index letter: labels}``: the training data's feature names
        (``feature_names_in_``, from a DataFrame) label axis 1's index."""
        names = getattr(self, "feature_names_in_", None)
        return {} if names is None else {self.model_.output[1]: list(names)}

    def _is_training_data(self, data):
        return data.fingerprint == self._fingerprint

    def _is_training_data_without_its_mask(self, data, mask):
        """Whether ``data``, given with no ``mask``, are the training data
        fitted with a mask that hid some of their entries (:meth:`score`)."""
        return is_training_data_without_its_mask(
            getattr(self, "_unmasked_fingerprint", None), getattr(self, "_fingerprint", None),
            data.fingerprint, mask)

    def _check_sample_shape(self, data):
        expected = self.model_.observed_shape[1:]
        if data.shape[1:] != expected:
            raise ValueError(
                f"X has shape {data.shape}; the estimator was fitted to data of shape "
                f"(n_samples, {', '.join(map(str, expected))})."
            )

    def _training_score(self):
        """The score of the training data: its evidence, else the objective
        the fit reached (EM's log joint)."""
        if hasattr(self, "log_evidence_"):
            return float(self.log_evidence_)
        if hasattr(self, "lower_bound_"):
            return float(self.lower_bound_)
        raise ValueError(
            "This fit has no evidence of its training data (evidence=None); refit with "
            "evidence='auto'."
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.three_d_array = self._accepts_tensors()
        return tags

    def _array_api_refusal(self):
        """None where this estimator, with its parameters, fits an array of
        another namespace (``array_api_dispatch=True``) where it lives; else
        the message refusing it."""
        return array_api_refusal(type(self).__name__)

    def _accepts_tensors(self):
        """Whether data with more than two dimensions are accepted."""
        return True


def _in_precision_of(W, data):
    """``W`` in float32 for data kept in float32 (a fit in float32 returns
    float32, as scikit-learn's NMF does); else as it is."""
    if isinstance(W, np.ndarray) and getattr(data, "dtype", None) == np.float32:
        return W.astype(np.float32)
    return W


def unmasked_fingerprint(fingerprint, mask, fingerprint_without_mask):
    """What recognises training data given without the ``mask`` they were
    fitted with: the pair (their ``fingerprint``, the fingerprint of the
    same ``X`` checked without a mask, from ``fingerprint_without_mask()``),
    or None when there was no mask, it hid nothing, or ``X`` alone is not
    valid data (then scoring it alone raises that error).

    ``GridSearchCV(..., cv=FullDataSplit()).fit(X, mask=m)`` passes ``m`` to
    ``fit`` only and scores ``X`` alone: without this, ``score`` would take
    ``X`` with the hidden entries observed for new samples and return their
    predictive score, not the evidence."""
    if mask is None:
        return None
    try:
        alone = fingerprint_without_mask()
    except (ValueError, TypeError):
        return None
    return None if alone == fingerprint else (fingerprint, alone)


def is_training_data_without_its_mask(pair, fingerprint, given, mask):
    """Whether data of fingerprint ``given``, passed with ``mask`` (None:
    no mask), are training data of ``fingerprint`` given without the mask
    they were fitted with (``pair``: :func:`unmasked_fingerprint` at fit; it
    stands only while the fit's ``fingerprint`` does)."""
    return mask is None and pair is not None and pair == (fingerprint, given)


def _namespace_and_device(data):
    """(namespace name, device) of array-API data; None for the NumPy engine's."""
    if not data.is_array_api:
        return None
    return data.xp.__name__, str(data.device)
