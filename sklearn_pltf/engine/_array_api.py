"""Arrays from other libraries (PyTorch, CuPy, array-api-strict) through the
Python array API standard, as scikit-learn does it.

With ``sklearn.set_config(array_api_dispatch=True)`` (which scikit-learn
allows only with ``SCIPY_ARRAY_API=1`` set, so :mod:`scipy.special` accepts
such arrays too), dense data given as an array of another namespace are
fitted where they live: the data, the factors and every data-sized
intermediate stay in that namespace and on its device. NumPy arrays always
take the NumPy engine (compiled kernels, float64).

The namespace and device of an array come from ``array-api-compat`` (the
``array-api`` extra). Only what is the size of the factors, or of a sample
axis, ever crosses to the host: random starting values, a fold-in's
per-sample progress, the factors for the Bernoulli predictive's draws.
"""

from __future__ import annotations

import numpy as np
import scipy.special

__all__ = ["array_namespace_of_input", "namespace_of", "device_of", "to_numpy", "like",
           "as_namespace", "moveaxis", "digamma", "gammaln", "xlogy", "array_api_refusal"]


def _compat():
    try:
        import array_api_compat
    except ImportError:
        raise ImportError(
            "Array-API input (PyTorch, CuPy, ...) needs the array-api-compat package: "
            "pip install 'sklearn-pltf[array-api]'.") from None
    return array_api_compat


def _is_foreign_array(X):
    """Whether ``X`` is an array of another library than NumPy, by its
    ``__array_namespace__`` or, for libraries that array-api-compat wraps
    (PyTorch, CuPy, JAX), by the module of its type."""
    if isinstance(X, (np.ndarray, np.generic)):
        return False
    return (hasattr(X, "__array_namespace__")
            or type(X).__module__.split(".")[0] in ("torch", "cupy", "jax", "jaxlib"))


def array_namespace_of_input(X):
    """The namespace of ``X`` when it is a dense array of another library than
    NumPy, else None (pydata sparse and Dask arrays, though array API
    objects, have engines of their own)."""
    if not _is_foreign_array(X) or type(X).__module__.split(".")[0] in ("sparse", "dask"):
        return None
    compat = _compat()
    if (not compat.is_array_api_obj(X) or compat.is_numpy_array(X) or compat.is_dask_array(X)
            or compat.is_pydata_sparse_array(X)):
        return None
    if compat.is_torch_array(X) and X.layout != _torch_strided():
        raise TypeError("Sparse PyTorch tensors are not supported; pass a dense tensor, or a "
                        "scipy.sparse or pydata sparse array on the CPU.")
    return compat.array_namespace(X)


def _torch_strided():
    import torch

    return torch.strided


def namespace_of(array):
    """The namespace of ``array``: :mod:`numpy` itself for NumPy arrays (and
    scalars), so the NumPy engine's calls stay plain NumPy calls."""
    if isinstance(array, (np.ndarray, np.generic, float, int)):
        return np
    return _compat().array_namespace(array)


def device_of(array):
    """The device ``array`` lives on."""
    return _compat().device(array)


def to_numpy(array):
    """A NumPy copy or view of ``array``, on the host: only for arrays the
    size of the factors, never of the data."""
    if not _is_foreign_array(array):
        return np.asarray(array)  # NumPy arrays, lists and scalars
    compat = _compat()
    if compat.is_cupy_array(array):
        return array.get()
    if compat.is_torch_array(array):
        return array.detach().cpu().numpy()
    xp = compat.array_namespace(array)
    if xp.__name__ == "array_api_strict":  # NumPy underneath, on any of its devices
        return np.asarray(xp.asarray(array, device=xp.Device("CPU_DEVICE")))
    return np.from_dlpack(array)


def as_namespace(array, xp, device, dtype=None):
    """``array`` (an array of ``xp`` or of NumPy, or a nested sequence) as an
    ``xp`` array of ``dtype`` (None: its own) on ``device``. It may share
    memory with an ``xp`` input: callers only read it."""
    if _is_foreign_array(array) and namespace_of(array) is xp:
        return xp.asarray(array, dtype=dtype, device=device)
    return xp.asarray(np.asarray(array), dtype=dtype, device=device)


def like(array, template):
    """``array`` in ``template``'s namespace, dtype and device (unchanged if
    ``template`` is a NumPy array)."""
    if isinstance(template, np.ndarray):
        return array
    return as_namespace(array, namespace_of(template), device_of(template), template.dtype)


def moveaxis(array, source, destination):
    """``array`` with axis ``source`` moved to ``destination`` (a view where
    the namespace gives one): :func:`numpy.moveaxis`, which the standard
    spells as ``permute_dims`` (NumPy 1.x has no ``permute_dims``)."""
    if isinstance(array, np.ndarray):
        return np.moveaxis(array, source, destination)
    order = [axis for axis in range(array.ndim) if axis != source]
    order.insert(destination, source)
    return namespace_of(array).permute_dims(array, tuple(order))


def float64_sum(array):
    """Σ over every element of an array of any namespace, as a Python float,
    accumulated in float64 whatever the array's precision: a float32 sum
    keeps float32's digits of a total that grows with the data, and on a
    large tensor its last one is worth more than the stopping rule's
    ``tol``."""
    if isinstance(array, np.ndarray):
        return float(np.sum(array, dtype=np.float64))
    xp = namespace_of(array)
    return float(xp.sum(array, dtype=xp.float64))


def digamma(x):
    """ψ(x) of an array of any namespace (scipy.special dispatches on it)."""
    return _special(scipy.special.digamma, x)


def gammaln(x):
    """log Γ(x) of an array of any namespace (scipy.special dispatches on it)."""
    return _special(scipy.special.gammaln, x)


def xlogy(x, y):
    """x log y, 0 where x = 0, for arrays of one namespace."""
    return _special(scipy.special.xlogy, x, y)


def _special(function, *arrays):
    """``function(*arrays)``; array-api-strict's devices other than the CPU's,
    which scipy cannot read, through NumPy (they are NumPy underneath)."""
    x = arrays[-1]
    xp = namespace_of(x)
    if xp.__name__ == "array_api_strict" and device_of(x) != xp.Device("CPU_DEVICE"):
        return xp.asarray(function(*map(to_numpy, arrays)), device=device_of(x))
    return function(*arrays)


def array_api_refusal(who, remedy="Pass a NumPy array (for a PyTorch tensor, "
                                       "X.cpu().numpy()) to fit it on the CPU."):
    """The message refusing array-API input where the package has only a
    NumPy engine: ``who`` names the estimator and what it was asked for."""
    return (f"{who} runs on NumPy arrays only; array-API input (PyTorch, CuPy, ...) is fitted "
            "where it lives by VB and EM (method='vb' or 'em') of BayesianNMF, PoissonCP, "
            "TuckerVB and PLTF without a tied factor, with likelihood='poisson' or "
            f"'bernoulli', fixed prior rates and init='random' or given factors. {remedy}")
