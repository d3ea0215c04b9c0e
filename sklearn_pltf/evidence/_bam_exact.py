"""Exact marginal likelihood of tiny count tensors under the Bayesian Allocation Model.

The Bayesian Allocation Model (BAM) [1]_ draws a Gamma--Poisson number of
tokens, then for each token a component and, given it, one index per mode
from Dirichlet-distributed tables (here the CP / naive-Bayes topology).  With
the conjugate parameters integrated out, :math:`p(X)` is a finite sum over the
allocations of the counts to the components, which
:func:`bam_exact_log_evidence` enumerates exactly.  It is exponential in the
counts: a reference for tiny tensors, e.g. for the SMC estimator of [1]_.

References
----------
.. [1] A. T. Cemgil, M. B. Kurutmaz, S. Yildirim, M. Barsbey and
   U. Simsekli, "Bayesian Allocation Model: Marginal Likelihood-based Model
   Selection for Count Tensors", *IEEE Journal of Selected Topics in Signal
   Processing*, 2020.  An earlier version is arXiv:1903.04478.
"""

import itertools
import math
import numbers
import operator

import numpy as np
from scipy.special import gammaln, logsumexp

from ..inference.allocation._network import allocation_network
from ..engine.model import Model
from ._counts import as_count_array, compositions

__all__ = ["bam_exact_log_evidence"]

# Allocations are scored in chunks of this many rows to bound memory.
_CHUNK_SIZE = 1 << 16


def bam_exact_log_evidence(
    X, n_components, *, concentration=1.0, rate=None, max_allocations=5_000_000, model=None,
    dirichlet_prior=None, mask=None, max_missing_tokens=200,
):
    """Exact log marginal likelihood of a count tensor under the BAM.

    ``model=None`` is the CP topology, enumerated by the formula below; a
    model string describes any topology ``AllocationSMC`` accepts
    (:func:`_network_log_evidence`).

    With :math:`R` = `n_components`, :math:`a` = `concentration`,
    :math:`b` = `rate` and ``X`` of shape :math:`(I_1, \\dots, I_N)` holding
    :math:`T = \\sum_i X(i)` tokens, the model is

    .. math::

        \\lambda \\sim \\mathcal{G}(a, b), \\quad
        T \\mid \\lambda \\sim \\mathcal{PO}(\\lambda), \\quad
        \\theta_0 \\sim \\mathcal{D}(a/R, \\dots, a/R), \\quad
        \\theta_n(r, :) \\sim \\mathcal{D}\\big(a/(R I_n), \\dots, a/(R I_n)\\big),

    and each token independently draws :math:`r \\sim \\theta_0`, then
    :math:`i_n \\sim \\theta_n(r, :)` for :math:`n = 1, \\dots, N`;
    :math:`X(i_1, \\dots, i_N)` counts the tokens in each cell.  Integrating
    out :math:`\\lambda, \\theta`,
    :math:`p(X) = p(T) \\sum_S p(S \\mid T)` over all allocations
    :math:`S(r, i) \\ge 0` with :math:`\\sum_r S(r, i) = X(i)`, where

    .. math::

        \\log p(T) = \\log\\Gamma(a + T) - \\log\\Gamma(a) - \\log T!
        + a \\log\\frac{b}{b + 1} - T \\log(b + 1),

        p(S \\mid T) = \\frac{T!}{\\prod_{r, i} S(r, i)!}
        \\frac{B(\\alpha_0 + s_0)}{B(\\alpha_0)}
        \\prod_{n=1}^N \\prod_{r=1}^R
        \\frac{B(\\alpha_n + s_n(r, :))}{B(\\alpha_n)},

    with :math:`s_0(r) = \\sum_i S(r, i)`,
    :math:`s_n(r, j) = \\sum_{i: i_n = j} S(r, i)`,
    :math:`\\alpha_0 = (a/R) 1_R`, :math:`\\alpha_n = (a/(R I_n)) 1_{I_n}` and
    :math:`B(v) = \\prod_k \\Gamma(v_k) / \\Gamma(\\sum_k v_k)`.

    Parameters
    ----------
    X : array-like of shape (I_1, ..., I_N)
        Non-negative integer counts with :math:`N \\ge 1` modes (a 1-D vector
        is the model with a single mode).  Floats holding integers are
        accepted.
    n_components : int
        Number of components :math:`R \\ge 1`.
    concentration : float, default=1.0
        :math:`a > 0`, shape of the Gamma prior on the intensity and total
        Dirichlet concentration of every table.
    rate : float, default=None
        :math:`b > 0`, rate of the Gamma prior.  ``None`` means
        :math:`b = a / T` (prior mean equal to the observed total), which is
        undefined, and rejected, for an all-zero ``X``.
    max_allocations : int, default=5_000_000
        Refuse if the number of allocations,
        :math:`\\prod_i \\binom{X(i) + R - 1}{R - 1}`, exceeds this (with a
        model string, R is the number of latent configurations).
    model : str or None, default=None
        A model string; ``n_components`` then sizes its latent indices (an
        int for all or a dict).
    dirichlet_prior : list or None, default=None
        With ``model``: per factor, its table's Dirichlet parameters or None
        (as ``AllocationSMC``'s).
    mask : array-like of bool, default=None
        True where ``X`` is observed: the evidence of the observed entries,
        :math:`\\log \\sum_{X_M} p(X_O, X_M)`, summed over the fillings of the
        unobserved cells by their total U = 0, 1, ... until a total's terms
        are 40 nats below the running sum and falling (``X``'s values there
        are ignored; ``rate=None`` is ``a`` over the observed total).
    max_missing_tokens : int, default=200
        With ``mask``: refuse if the sum has not converged by this total.

    Returns
    -------
    log_evidence : float
        :math:`\\log p(X)`, finite.

    Raises
    ------
    TypeError
        If `n_components` or `max_allocations` is not an integer.
    ValueError
        If ``X`` is not a non-empty array (at least 1-D) of finite,
        non-negative integers, if a hyperparameter is not positive, if
        ``rate`` is None while ``X`` is all zero, or if there are more than
        `max_allocations` allocations.

    Notes
    -----
    Zero cells have a single allocation and are left out.  For each nonzero
    cell all compositions of :math:`X(i)` into :math:`R` parts are listed;
    the allocations are their Cartesian product, walked as a mixed-radix
    counter in chunks, and combined with log-sum-exp.  In log space the
    Beta-function ratios are sums of log rising factorials
    :math:`\\log\\Gamma(\\alpha + s) - \\log\\Gamma(\\alpha)`, which vanish for
    :math:`s = 0`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[2, 0], [0, 1]])
    >>> round(bam_exact_log_evidence(X, 2, rate=1.0), 6)
    -6.64379
    """
    if mask is not None:
        return _log_evidence_of_observed(X, mask, n_components, concentration, rate,
                                         max_allocations, model, dirichlet_prior,
                                         max_missing_tokens)
    X = as_count_array(X)
    max_allocations = _check_int(max_allocations, "max_allocations")
    a = _check_positive(concentration, "concentration")
    if model is not None:
        network = allocation_network(Model.parse(model).bind(X.shape, n_components), a,
                                     dirichlet_prior)
        return _network_log_evidence(X, network, a, rate, max_allocations)
    R = _check_int(n_components, "n_components")
    T = int(X.sum())
    log_p_total = _log_total_prior(a, rate, T)
    cells = np.flatnonzero(X)
    counts = X.ravel()[cells]
    coords = np.unravel_index(cells, X.shape)
    _check_allocation_count(counts, R, max_allocations)
    # For each mode: the positions (among the nonzero cells) of each index used.
    groups = [[np.flatnonzero(c == j) for j in np.unique(c)] for c in coords]

    # log p(S | T) = log T! - sum_{r,i} log S(r, i)!
    #     + sum_r rf(a/R, s0(r)) - rf(a, T)                           (theta0)
    #     + sum_{n,r} [sum_j rf(a/(R I_n), s_n(r, j)) - rf(a/R, s0(r))] (theta_n)
    # with rf the log rising factorial; the theta_n terms use that row
    # theta_n(r, :) has total concentration a/R and total count s0(r).
    chunk_sums = []
    for S, log_factorials in _allocations(counts, R):
        log_p = gammaln(T + 1.0) - log_factorials
        s0 = S.sum(axis=1)
        log_p += (1 - X.ndim) * _log_rising(a / R, s0).sum(axis=1)
        log_p -= _log_rising(a, T)
        for size, mode_groups in zip(X.shape, groups):
            for g in mode_groups:
                log_p += _log_rising(a / (R * size), S[:, g, :].sum(axis=1)).sum(axis=1)
        chunk_sums.append(logsumexp(log_p))
    return float(log_p_total + logsumexp(chunk_sums))


def _log_evidence_of_observed(X, mask, n_components, concentration, rate, max_allocations,
                              model, dirichlet_prior, max_missing_tokens):
    """log Σ_{X_M} p(X_O, X_M), each term the full data's exact evidence at
    one rate b (the default a / T_O)."""
    mask = np.asarray(mask, dtype=bool)
    X = np.asarray(X, dtype=np.float64)
    if mask.shape != X.shape:
        raise ValueError(f"mask must have X's shape {X.shape}, got {mask.shape}.")
    observed = as_count_array(np.where(mask, X, 0.0))
    a = _check_positive(concentration, "concentration")
    if rate is None:
        if observed.sum() == 0:
            raise ValueError("The observed entries are all zero, so the default rate = "
                             "concentration / total is undefined; rate must be given")
        rate = a / observed.sum()
    missing = np.flatnonzero(~mask)
    if missing.size == 0:
        return bam_exact_log_evidence(observed, n_components, concentration=a, rate=rate,
                                      max_allocations=max_allocations, model=model,
                                      dirichlet_prior=dirichlet_prior)
    running, previous = -np.inf, np.inf
    for total in range(_check_int(max_missing_tokens, "max_missing_tokens") + 1):
        terms = []
        for filling in compositions(total, missing.size):
            filled = observed.copy()
            filled.flat[missing] = filling
            terms.append(bam_exact_log_evidence(
                filled, n_components, concentration=a, rate=rate,
                max_allocations=max_allocations, model=model, dirichlet_prior=dirichlet_prior))
        block = float(logsumexp(terms))
        running = float(np.logaddexp(running, block))
        if block < previous and block < running - 40.0:
            return running
        previous = block
    raise ValueError(f"The sum over the unobserved cells' counts has not converged by a total of "
                     f"{max_missing_tokens}; raise max_missing_tokens or give a larger rate.")


def _log_total_prior(a, rate, T):
    """log p(T) under λ ~ Gamma(a, b), T ~ Poisson(λ); ``rate=None`` is
    b = a / T."""
    if rate is None:
        if T == 0:
            raise ValueError(
                "X is all zero, so the default rate = concentration / X.sum() "
                "is undefined; rate must be given"
            )
        b = a / T
    else:
        b = _check_positive(rate, "rate")
    return (gammaln(a + T) - gammaln(a) - gammaln(T + 1.0)
            - a * math.log1p(1.0 / b) - T * math.log1p(b))


def _allocations(counts, n_parts):
    """Every allocation of the cells' counts to ``n_parts`` parts, in chunks:
    ``S`` (chunk, cells, parts) and Σ log S! per row. Each cell's
    compositions are listed; the allocations are their Cartesian product,
    walked as a mixed-radix counter."""
    comps = [compositions(int(x), n_parts) for x in counts]
    log_facts = [gammaln(c + 1.0).sum(axis=1) for c in comps]
    radix = [len(c) for c in comps]
    strides = [1, *itertools.accumulate(radix[:-1], operator.mul)]
    n_allocations = math.prod(radix)  # 1 if there are no cells
    for start in range(0, n_allocations, _CHUNK_SIZE):
        flat = np.arange(start, min(start + _CHUNK_SIZE, n_allocations))
        S = np.zeros((len(flat), len(counts), n_parts), dtype=np.int64)
        log_factorials = np.zeros(len(flat))
        for c in range(len(counts)):
            choice = (flat // strides[c]) % radix[c]
            S[:, c, :] = comps[c][choice]
            log_factorials += log_facts[c][choice]
        yield S, log_factorials


def _network_log_evidence(X, network, a, rate, max_allocations):
    """log p(X) for any network of Dirichlet tables.

    An allocation S(i, h) >= 0, Σ_h S(i, h) = X(i), splits each non-zero
    cell's tokens over the latent configurations h. Its table counts are
    n = Σ_{i, h} S(i, h) [cells touched by (i, h)] in the urn's layout, and

    .. math::

        \\log p(S \\mid T) = \\log T! - \\sum_{i, h} \\log S(i, h)!
        + \\sum_c s_c \\big(\\log\\Gamma(\\alpha_c + n_c) - \\log\\Gamma(\\alpha_c)\\big),

    with s_c = +1 on a table's family cells and -1 on its parent cells (the
    Dirichlet-multinomial of every table row).
    """
    T = int(X.sum())
    log_p_total = _log_total_prior(a, rate, T)
    cells = np.flatnonzero(X)
    counts = X.ravel()[cells]
    coords = np.array(np.unravel_index(cells, X.shape)).T
    H = network.n_configurations
    _check_allocation_count(counts, H, max_allocations)
    # touches[(i, h), c]: how often cell i under configuration h counts in layout cell c.
    positions = network.slot_offsets(coords)[:, None, :] + network.latent_offsets[None]
    rows = np.repeat(np.arange(cells.size * H), positions.shape[-1])
    touches = np.zeros((cells.size * H, network.n_cells))
    np.add.at(touches, (rows, positions.reshape(-1)), 1.0)
    signs = network.cell_signs()
    chunk_sums = []
    for S, log_factorials in _allocations(counts, H):
        n = S.reshape(S.shape[0], -1) @ touches
        log_p = (gammaln(T + 1.0) - log_factorials
                 + (gammaln(network.alpha + n) - gammaln(network.alpha)) @ signs)
        chunk_sums.append(logsumexp(log_p))
    return float(log_p_total + logsumexp(chunk_sums))


def _log_rising(alpha, s):
    """log Gamma(alpha + s) - log Gamma(alpha), the log rising factorial."""
    return gammaln(alpha + s) - gammaln(alpha)


def _check_int(value, name):
    """Return `value` as an int >= 1 (TypeError if not an integer)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def _check_positive(value, name):
    """Return `value` as a finite float > 0, or raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)


def _check_allocation_count(counts, R, max_allocations):
    """Raise if prod_i C(X(i) + R - 1, R - 1) exceeds `max_allocations`."""
    # Log space first, so a huge count is never built as a Python integer.
    log_n = float(np.sum(gammaln(counts + R) - gammaln(counts + 1.0) - gammaln(R)))
    if log_n > math.log(max_allocations) + 1.0:
        n = f"about 10^{log_n / math.log(10):.1f}"
    else:
        n = math.prod(math.comb(int(x) + R - 1, R - 1) for x in counts)
        if n <= max_allocations:
            return
    raise ValueError(
        f"X has {n} allocations over {R} components, more than "
        f"max_allocations={max_allocations}; exact enumeration is only "
        "feasible for tiny tensors"
    )
