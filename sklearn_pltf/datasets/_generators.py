"""Synthetic data drawn from the package's models, with their parameters.

Each generator takes a ``random_state`` (None, an int or a numpy generator)
and returns ``(X, parameters)``: the data and what generated them, so a fit
can be compared with the truth.
"""

from __future__ import annotations

import numpy as np

from ..engine._contract import full_xhat
from ..engine._random import as_generator
from ..inference.allocation import sample_bam
from ..engine.model import Model, cp_model_string, tucker_model

__all__ = [
    "make_pltf", "make_poisson_nmf", "make_poisson_cp", "make_poisson_tucker",
    "make_gaussian_ntf", "make_bam",
]


def _with_missing(rng, X, missing_fraction):
    """``X`` as floats with a ``missing_fraction`` of its entries set to NaN
    (chosen uniformly at random), or ``X`` itself when nothing is missing."""
    if not 0.0 <= missing_fraction < 1.0:
        raise ValueError(f"missing_fraction must be in [0, 1), got {missing_fraction}.")
    if missing_fraction == 0.0:
        return X
    X = X.astype(np.float64)
    X[rng.random(X.shape) < missing_fraction] = np.nan
    return X


def make_pltf(model, shape, n_components, *, prior_shape=1.0, prior_rate=1.0,
              missing_fraction=0.0, random_state=None):
    """Counts from the Poisson–Gamma PLTF model ``model`` (any model string).

    Every factor entry is drawn from ``Gamma(prior_shape, rate=prior_rate)``,
    then ``X ~ Poisson(X̂)`` with ``X̂`` the model's contraction of the
    factors (Yılmaz, Cemgil & Şimşekli 2011).

    Parameters
    ----------
    model : str
        A model string such as ``"ir,jr,kr->ijk"``.
    shape : tuple of int
        Shape of the data (the sizes of the observed indices).
    n_components : int or dict
        Size of every latent index, or ``{index: size}``.
    prior_shape, prior_rate : float, default=1.0
        The factors' Gamma prior.
    missing_fraction : float, default=0.0
        Fraction of entries set to NaN (missing), at random; with any, ``X``
        is float.
    random_state : int, numpy.random.Generator or None, default=None

    Returns
    -------
    X : ndarray of shape ``shape``
        Counts (int64), or floats with NaN at missing entries.
    factors : list of ndarray
        The factors, in the order of the model string.

    Examples
    --------
    >>> from sklearn_pltf.datasets import make_pltf
    >>> X, factors = make_pltf("fi,ik,kt->ft", (20, 30), {"i": 4, "k": 3}, random_state=0)
    >>> X.shape, [f.shape for f in factors]
    ((20, 30), [(20, 4), (4, 3), (3, 30)])
    """
    rng = as_generator(random_state)
    bound = Model.parse(model).bind(shape, n_components)
    scale = 1.0 / float(prior_rate)
    factors = [rng.gamma(prior_shape, scale, size=bound.factor_shape(alpha))
               for alpha in range(bound.n_factors)]
    X = rng.poisson(full_xhat(bound, factors))
    return _with_missing(rng, X, missing_fraction), factors


def make_poisson_nmf(n_samples=100, n_features=75, n_components=3, *, prior_shape=1.0,
                     prior_rate=1.0, missing_fraction=0.0, random_state=None):
    """Counts from Poisson NMF, ``X ~ Poisson(W H)``, with Gamma factors.

    The data of the SGLD/STI paper's Poisson NMF experiment (Şimşekli et al.
    2016) are ``make_poisson_nmf(100, 75, 3, prior_rate=5.0)`` (exponential
    factors of rate 5). See :func:`make_pltf` for the parameters.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    factors : list of ndarray
        ``[W (n_samples, n_components), H (n_components, n_features)]``.
    """
    return make_pltf("ik,kj->ij", (n_samples, n_features), n_components,
                     prior_shape=prior_shape, prior_rate=prior_rate,
                     missing_fraction=missing_fraction, random_state=random_state)


def make_poisson_cp(shape=(30, 25, 20), n_components=4, *, prior_shape=1.0, prior_rate=1.0,
                    missing_fraction=0.0, random_state=None):
    """Counts from Poisson CP, ``X(i, j, k) ~ Poisson(Σ_r A_ir B_jr C_kr)``.

    Any number of modes (``len(shape)``). See :func:`make_pltf`.

    Returns
    -------
    X : ndarray of shape ``shape``
    factors : list of ndarray
        One ``(shape[n], n_components)`` matrix per mode.

    Examples
    --------
    >>> from sklearn_pltf.datasets import make_poisson_cp
    >>> X, factors = make_poisson_cp((10, 8, 6), 2, missing_fraction=0.2, random_state=0)
    >>> X.shape, len(factors), bool(np.isnan(X).any())
    ((10, 8, 6), 3, True)
    """
    return make_pltf(cp_model_string(len(shape)), shape, n_components, prior_shape=prior_shape,
                     prior_rate=prior_rate, missing_fraction=missing_fraction,
                     random_state=random_state)


def make_poisson_tucker(shape=(30, 25, 20), n_components=3, *, prior_shape=1.0,
                        prior_rate=1.0, missing_fraction=0.0, random_state=None):
    """Counts from Poisson Tucker, ``X ~ Poisson(Σ_pqr A_ip B_jq C_kr G_pqr)``.

    ``n_components`` is one core size for every mode or a tuple, one per mode.
    See :func:`make_pltf`.

    Returns
    -------
    X : ndarray of shape ``shape``
    factors : list of ndarray
        One matrix per mode, then the core.
    """
    model, sizes = tucker_model(len(shape), n_components)
    return make_pltf(model, shape, sizes, prior_shape=prior_shape,
                     prior_rate=prior_rate, missing_fraction=missing_fraction,
                     random_state=random_state)


def make_gaussian_ntf(shape=(20, 15, 10), n_components=3, *, noise_std=0.1,
                      missing_fraction=0.0, random_state=None):
    """Real data from Gaussian non-negative CP (the model of ``GibbsNTF``).

    ``X = Σ_r A_r ∘ B_r ∘ C_r + ε`` with half-normal factors (the rectified
    normal prior at location 0 and variance 1; Schmidt, Winther & Hansen 2009)
    and ``ε ~ N(0, noise_std²)``.

    Returns
    -------
    X : ndarray of shape ``shape``
        Floats (NaN at missing entries).
    factors : list of ndarray
        One ``(shape[n], n_components)`` matrix per mode.

    Examples
    --------
    >>> from sklearn_pltf.datasets import make_gaussian_ntf
    >>> X, factors = make_gaussian_ntf((6, 5, 4), 2, noise_std=0.5, random_state=0)
    >>> X.shape, factors[0].shape
    ((6, 5, 4), (6, 2))
    """
    if noise_std < 0:
        raise ValueError(f"noise_std must be >= 0, got {noise_std}.")
    rng = as_generator(random_state)
    factors = [np.abs(rng.standard_normal((size, n_components))) for size in shape]
    model = Model.parse(cp_model_string(len(shape))).bind(shape, n_components)
    X = full_xhat(model, factors)
    X = X + noise_std * rng.standard_normal(X.shape)
    return _with_missing(rng, X, missing_fraction), factors


def make_bam(shape=(20, 25, 30), n_components=5, *, concentration=10.0, n_tokens=1000,
             random_state=None):
    """Counts from the Bayesian Allocation Model (the model of ``AllocationSMC``).

    ``n_tokens`` tokens (or ``T ~ Poisson(λ)``, ``λ ~ Gamma(a, 1)`` when
    None), each in component ``r ~ θ0`` and then in cell
    ``(i, j, ...) ~ Π_n θn(r, :)``, with Dirichlet priors ``θ0 ~ Dir(a/R)``
    and ``θn(r, :) ~ Dir(a/(R I_n))`` (Cemgil, Kurutmaz, Yıldırım, Barsbey &
    Şimşekli 2019). The defaults are the data on which the user guide
    measures ``AllocationSMC``'s choice of rank.

    Returns
    -------
    X : ndarray of int64, shape ``shape``
    parameters : tuple
        ``(T, θ0 (R,), [θn (R, I_n) for each mode])``.

    Examples
    --------
    >>> from sklearn_pltf.datasets import make_bam
    >>> X, (T, theta0, thetas) = make_bam((5, 4, 3), 2, n_tokens=50, random_state=0)
    >>> int(X.sum()), theta0.shape
    (50, (2,))
    """
    if n_components < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}.")
    rng = as_generator(random_state)
    return sample_bam(rng, tuple(shape), n_components, concentration=concentration,
                      n_tokens=n_tokens)
