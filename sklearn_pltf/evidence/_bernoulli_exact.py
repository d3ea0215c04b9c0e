"""Exact evidence of tiny binary matrices under Bernoulli–Poisson NMF.

The model (``BayesianNMF(likelihood="bernoulli")``) is

.. math::

    x_{ij} = 1[n_{ij} > 0], \\quad n_{ij} \\sim \\mathcal{PO}\\Big(\\sum_k W_{ik} H_{kj}\\Big),
    \\quad W_{ik} \\sim \\mathcal{G}(a_W, b_W), \\quad H_{kj} \\sim \\mathcal{G}(a_H, b_H).

Expanding :math:`\\prod_{\\text{ones}} (1 - e^{-\\hat X})` by inclusion–exclusion,

.. math::

    p(X) = \\sum_{S \\subseteq \\text{ones}} (-1)^{|S|}\\,
        E\\Big[\\exp\\Big(-\\sum_{(i,j) \\in T_S} \\hat X_{ij}\\Big)\\Big],
    \\qquad T_S = \\text{observed zeros} \\cup S,

and since the components are independent a priori each expectation is
:math:`\\varphi(T_S)^K` with :math:`\\varphi(T) = E[\\exp(-\\sum_{(i,j) \\in T}
w_i h_j)]` for one component. Integrating :math:`w` in closed form,

.. math::

    \\varphi(T) = E_h\\Big[\\prod_i \\big(1 + \\textstyle\\sum_{j \\in T_i} h_j / b_W\\big)^{-a_W}\\Big],

an integral over the :math:`J` elements of one column of ``H`` (the matrix is
transposed first when it has fewer rows than columns). It is taken by the
exp-sinh (double exponential) trapezoidal rule, whose error falls
exponentially with the number of nodes for such analytic integrands
(Takahasi & Mori 1974). Missing entries are in neither set. The cost is
:math:`2^{\\text{ones}}` terms of a :math:`J`-dimensional quadrature: tiny data
only, as a reference for tests.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import gammaln, logsumexp

from ._exact import _as_factor_pair

__all__ = ["bernoulli_exact_log_evidence"]

# At most this many observed ones (2^ones terms) and this many quadrature
# dimensions (the smaller side of the matrix).
_MAX_ONES = 16
_MAX_DIMENSIONS = 3


def bernoulli_exact_log_evidence(X, n_components, *, prior_shape=1.0, prior_rate=1.0, step=1 / 12):
    """Exact log p(X) of a tiny binary matrix under Bernoulli–Poisson NMF.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_columns)
        0/1 values; NaN marks a missing entry. ``min(n_rows, n_columns)``
        must be at most 3 and the number of ones at most 16.
    n_components : int
        Rank ``K >= 1``.
    prior_shape, prior_rate : float or pair of floats, default=1.0
        Gamma shape and rate of ``W`` and ``H`` (a pair: ``(W, H)``).
    step : float, default=1/12
        Step of the exp-sinh trapezoidal rule; halving it changes the result
        by far less than 1e-10 relative at the defaults (a test checks this).

    Returns
    -------
    float
        log p(X).

    Raises
    ------
    ValueError
        For values other than 0, 1 or NaN, or data too large to enumerate.
    """
    X = np.array(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got {X.ndim}-D.")
    observed = ~np.isnan(X)
    if np.any((X[observed] != 0) & (X[observed] != 1)):
        raise ValueError("X must hold 0, 1 or NaN (missing).")
    if not isinstance(n_components, (int, np.integer)) or n_components < 1:
        raise ValueError(f"n_components must be an int >= 1, got {n_components!r}.")
    shape_W, shape_H = _as_factor_pair(prior_shape, "prior_shape")
    rate_W, rate_H = _as_factor_pair(prior_rate, "prior_rate")
    if X.shape[0] < X.shape[1]:  # integrate over the shorter side's factor
        X, observed = X.T, observed.T
        (shape_W, rate_W), (shape_H, rate_H) = (shape_H, rate_H), (shape_W, rate_W)
    if X.shape[1] > _MAX_DIMENSIONS:
        raise ValueError(
            f"X of shape {X.shape}: the quadrature runs over min(n_rows, n_columns) "
            f"dimensions, at most {_MAX_DIMENSIONS}."
        )
    ones = np.argwhere(observed & (X == 1))
    if len(ones) > _MAX_ONES:
        raise ValueError(f"X has {len(ones)} ones; at most {_MAX_ONES} (2^ones terms).")
    zeros = observed & (X == 0)
    h, log_weight = _gamma_quadrature(shape_H, rate_H, step, X.shape[1])
    log_terms, signs = [], []
    for size in range(len(ones) + 1):
        for subset in itertools.combinations(range(len(ones)), size):
            T = zeros.copy()
            for s in subset:
                T[tuple(ones[s])] = True
            log_phi = _log_phi(T, h, log_weight, shape_W, rate_W)
            log_terms.append(n_components * log_phi)
            signs.append(-1.0 if size % 2 else 1.0)
    value, sign = logsumexp(log_terms, b=signs, return_sign=True)
    if sign <= 0:
        raise FloatingPointError("The inclusion–exclusion sum is not positive: lower `step`.")
    return float(value)


def _gamma_quadrature(shape, rate, step, n_dims):
    """Nodes (n_nodes**n_dims, n_dims) and log weights of the exp-sinh rule
    for E[f(h)], h_j iid Gamma(shape, rate): h = exp(π/2 sinh t)."""
    t = np.arange(-5.0, 5.0 + step / 2, step)
    u = 0.5 * math.pi * np.sinh(t)
    log_h = u
    h = np.exp(np.clip(log_h, -700, 700))
    # log[Gamma density(h) · dh/dt · step]: dh/dt = h · π/2 cosh t.
    log_w = (shape * math.log(rate) - gammaln(shape) + shape * log_h - rate * h
             + np.log(0.5 * math.pi * np.cosh(t)) + math.log(step))
    keep = np.isfinite(log_w) & (log_w > -745.0)
    h, log_w = h[keep], log_w[keep]
    grid = np.stack(np.meshgrid(*([h] * n_dims), indexing="ij"), axis=-1).reshape(-1, n_dims)
    log_weight = sum(np.meshgrid(*([log_w] * n_dims), indexing="ij")).ravel()
    return grid, log_weight


def _log_phi(T, h, log_weight, shape_W, rate_W):
    """log φ(T) = log E_h[Π_i (1 + Σ_{j ∈ T_i} h_j / b_W)^(−a_W)]."""
    exponent = np.zeros(h.shape[0])
    for row in T:
        if row.any():
            exponent -= shape_W * np.log1p(h[:, row].sum(axis=1) / rate_W)
    return float(logsumexp(log_weight + exponent))
