"""What a fitted CP or Tucker model offers users of TensorLy: CP weights
and normalised factors, and the fit as a TensorLy ``CPTensor`` or
``TuckerTensor`` (the ``tensorly`` package, an optional dependency)."""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from ..engine._array_api import namespace_of

__all__ = ["CPResultMixin", "TuckerResultMixin", "CP_ATTRIBUTES", "with_cp_attributes"]

#: The Attributes entries of :class:`CPResultMixin`, for the estimators' docstrings.
CP_ATTRIBUTES = """\
    weights_ : ndarray of shape (n_components,)
        Each component's weight: the product over modes of its column's L1
        norm, so ``X̂ = Σ_r weights_[r] Π_n normalized_factors_[n][:, r]``
        (:meth:`to_tensorly` exports both as a TensorLy ``CPTensor``).
    normalized_factors_ : tuple of ndarray
        ``factors_`` with unit-L1-norm columns."""


def with_cp_attributes(cls):
    """Put :data:`CP_ATTRIBUTES` in place of ``%(cp_attributes)s`` in ``cls.__doc__``."""
    cls.__doc__ = cls.__doc__.replace("%(cp_attributes)s", CP_ATTRIBUTES)
    return cls


def _tensorly(module):
    try:
        return __import__(f"tensorly.{module}", fromlist=["_"])
    except ImportError as error:
        raise ImportError("to_tensorly needs TensorLy: pip install tensorly.") from error


class CPResultMixin:
    """``weights_``, ``normalized_factors_`` and :meth:`to_tensorly` of a
    fitted CP model, whose ``factors_`` hold one (I_n, R) matrix per mode."""

    @property
    def weights_(self):
        """ndarray of shape (n_components,): each component's weight, the
        product over modes of its column's L1 norm, so that
        X̂ = Σ_r weights_[r] Π_n normalized_factors_[n][:, r]. For count
        models, a component's expected total count."""
        check_is_fitted(self)
        xp = namespace_of(self.factors_[0])
        return xp.prod(xp.stack([xp.sum(xp.abs(f), axis=0) for f in self.factors_]), axis=0)

    @property
    def normalized_factors_(self):
        """tuple of ndarray: ``factors_`` with every column scaled to unit L1
        norm (for non-negative factors, a distribution over the mode's
        indices); an all-zero column stays zero."""
        check_is_fitted(self)
        xp = namespace_of(self.factors_[0])
        return tuple(f / xp.where(norms > 0, norms, 1.0)
                     for f in self.factors_ for norms in [xp.sum(xp.abs(f), axis=0)])

    def to_tensorly(self):
        """The fitted factors as a TensorLy ``CPTensor`` (``weights_``,
        ``normalized_factors_``): ``to_tensorly().to_tensor()`` is
        :meth:`reconstruct`'s X̂. The arrays are ``factors_``'s own: for a
        fit of PyTorch or CuPy arrays, set TensorLy's backend to match."""
        return _tensorly("cp_tensor").CPTensor((self.weights_, list(self.normalized_factors_)))


class TuckerResultMixin:
    """:meth:`to_tensorly` of a fitted Tucker model (``factors_``: one
    (I_n, R_n) matrix per mode, then the core)."""

    def to_tensorly(self):
        """The fitted core and factor matrices as a TensorLy ``TuckerTensor``:
        ``to_tensorly().to_tensor()`` is :meth:`reconstruct`'s X̂."""
        check_is_fitted(self)
        return _tensorly("tucker_tensor").TuckerTensor((self.factors_[-1], list(self.factors_[:-1])))
