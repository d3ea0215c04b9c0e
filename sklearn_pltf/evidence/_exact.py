"""Exact marginal likelihood (evidence) of tiny Poisson--Gamma NMF problems.

The Poisson--Gamma non-negative matrix factorisation model of Cemgil (2009)
writes an ``I x J`` count matrix as a sum of ``K`` latent "source" matrices,

.. math::

    X_{ij} = \\sum_k S_{ikj}, \\qquad
    S_{ikj} \\sim \\mathcal{PO}(W_{ik} H_{kj}), \\qquad
    W_{ik} \\sim \\mathcal{G}(a_W, b_W), \\qquad
    H_{kj} \\sim \\mathcal{G}(a_H, b_H),

with the Gamma distributions in the shape/rate parametrisation
(model string ``"ik,kj->ij"``).  For data small enough that every allocation
``S`` of the counts over the ``K`` components can be listed, the evidence
:math:`\\log p(X)` can be computed to near machine precision by summing over
the allocations with the factors integrated out analytically (up to one
one-dimensional quadrature per component).  The result is a ground truth
against which approximate inference (variational Bayes, Gibbs sampling,
annealed importance sampling, ...) can be checked.

References
----------
.. [1] A. T. Cemgil, "Bayesian inference for nonnegative matrix
   factorisation models", *Computational Intelligence and Neuroscience*,
   vol. 2009, Article ID 785152, 2009. doi:10.1155/2009/785152
"""

import functools
import math
import numbers

import numpy as np
from scipy import integrate, optimize
from scipy.special import expit, gammaln, logsumexp, xlogy

from ._counts import as_count_array, compositions

__all__ = ["exact_log_evidence"]

# Allocations are processed in chunks of this many rows so that memory stays
# bounded (a few tens of MB) even near the default ``max_allocations``.
_CHUNK_SIZE = 1 << 16

# Drop in the log-integrand (in nats) at which the quadrature range is cut.
# The log-integrand is concave in u = log t, so beyond the cut the tail is
# bounded by exp(-_LOG_TAIL_DROP) / |slope| relative to the peak value, far
# below the 1e-8 relative accuracy we aim for.
_LOG_TAIL_DROP = 60.0


def exact_log_evidence(
    X,
    n_components=None,
    *,
    prior_shape=1.0,
    prior_rate=1.0,
    fixed_factors=None,
    max_allocations=5_000_000,
):
    """Exact log marginal likelihood of Poisson--Gamma NMF by enumeration.

    Computes :math:`\\log p(X)` for the model ``"ik,kj->ij"`` of Cemgil
    (2009) [1]_, :math:`X_{ij} = \\sum_k S_{ikj}`,
    :math:`S_{ikj} \\sim \\mathcal{PO}(W_{ik} H_{kj})`,
    :math:`W_{ik} \\sim \\mathcal{G}(a_W, b_W)`,
    :math:`H_{kj} \\sim \\mathcal{G}(a_H, b_H)` (shape/rate), by summing over
    every allocation ``S`` of every count :math:`X_{ij}` into ``K``
    non-negative parts, with the random factor(s) integrated out.  Either
    factor (or both) may instead be held fixed at a given value.

    This is exponential in the counts and meant for tiny data only, e.g. as a
    reference value in tests of approximate inference.

    Several count matrices over the same rows give the coupled model that
    shares ``W`` (generalised coupled factorisation, ``CoupledPLTF`` with
    ``("ik,kj->ij", "ik,kf->if", ...)``), each matrix with its own column
    factor under the prior of ``H``: given ``W`` the matrices are
    independent Poisson with rates ``W H_t``, which is the model of their
    side-by-side concatenation with ``H = [H_1, H_2, ...]``, so its evidence
    is that of the concatenation.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_columns), or a list of them
        Non-negative integer counts, fully observed.  A floating point array
        holding integer values is accepted.  A list or tuple of matrices with
        the same number of rows (each itself 2-D; a nested list of numbers
        is one matrix): their coupled evidence (above), with
        ``n_columns`` the sum of their columns for a fixed ``H``.
    n_components : int, default=None
        Number of components ``K >= 1``.  May be omitted when a fixed factor
        determines it; if both are given they must agree.
    prior_shape : float or sequence of two floats, default=1.0
        Gamma shape :math:`a` of the prior on ``W`` and ``H``.  A scalar is
        used for both factors, a pair is read as ``(a_W, a_H)``.  The entry
        belonging to a fixed factor is ignored.
    prior_rate : float or sequence of two floats, default=1.0
        Gamma rate :math:`b` (inverse scale), as for `prior_shape`:
        ``(b_W, b_H)``. Each of the two may also be an array of
        ``n_components`` rates, one per component (column of ``W``, row of
        ``H``): the priors of automatic relevance determination, which
        still factorise over the components.
    fixed_factors : dict, default=None
        Factors held fixed instead of integrated out: ``{0: W}`` with ``W`` of
        shape ``(n_rows, K)``, ``{1: H}`` with ``H`` of shape
        ``(K, n_columns)``, or both.  Entries must be non-negative.  With both
        factors fixed the result is the Poisson log-likelihood of ``X`` under
        the rate matrix ``W @ H`` (by the superposition property of Poisson
        variables), which the enumeration reproduces.
    max_allocations : int, default=5_000_000
        Refuse (``ValueError``) if the number of allocations,
        :math:`\\prod_{ij} \\binom{X_{ij} + K - 1}{K - 1}`, exceeds this.

    Returns
    -------
    log_evidence : float
        :math:`\\log p(X)` (``-inf`` if ``X`` is impossible, e.g. a positive
        count whose rate is zero under fixed factors).

    Raises
    ------
    ValueError
        If ``X`` is not a non-empty 2-D array of finite non-negative integers,
        if the priors, ``n_components`` or a fixed factor are invalid, or if
        there are more than `max_allocations` allocations.

    Notes
    -----
    Because the priors factorise over components, so does the joint:
    :math:`p(X) = \\sum_S \\prod_k p(S_{:k:})`, the sum running over the
    allocations with :math:`\\sum_k S_{ikj} = X_{ij}`.  For one component
    (index :math:`k` dropped, :math:`w = W_{:k}`, :math:`h = H_{k:}`) write
    :math:`r_i = \\sum_j S_{ij}`, :math:`c_j = \\sum_i S_{ij}`,
    :math:`s = \\sum_{ij} S_{ij}`.  Then

    .. math::

        \\prod_{ij} \\mathcal{PO}(S_{ij}; w_i h_j)
        = \\frac{\\prod_i w_i^{r_i} \\prod_j h_j^{c_j}}{\\prod_{ij} S_{ij}!}
          \\exp\\Big(-\\sum_i w_i \\sum_j h_j\\Big).

    *Both factors fixed*: this expression itself.

    *W fixed, H random*: each :math:`h_j` sees a Gamma integral,

    .. math::

        \\log p(S) = \\sum_i r_i \\log w_i - \\sum_{ij} \\log S_{ij}!
        + \\sum_j \\Big[a_H \\log b_H - \\log\\Gamma(a_H)
        + \\log\\Gamma(a_H + c_j) - (a_H + c_j) \\log\\big(b_H + \\sum_i w_i\\big)
        \\Big],

    and symmetrically for ``H`` fixed and ``W`` random.

    *Both random*: integrating :math:`w_i` gives
    :math:`b_W^{a_W} \\Gamma(a_W + r_i) / (\\Gamma(a_W) (b_W + t)^{a_W + r_i})`
    with :math:`t = \\sum_j h_j`.  Substituting :math:`h_j = t \\pi_j`
    (:math:`\\pi` on the simplex, Jacobian :math:`t^{J-1}`) turns the
    :math:`\\pi` integral into a Dirichlet normaliser, leaving

    .. math::

        \\log p(S) = I \\big[a_W \\log b_W - \\log\\Gamma(a_W)\\big]
        + J \\big[a_H \\log b_H - \\log\\Gamma(a_H)\\big]
        + \\sum_i \\log\\Gamma(a_W + r_i) + \\sum_j \\log\\Gamma(a_H + c_j)
        - \\log\\Gamma(s + J a_H) - \\sum_{ij} \\log S_{ij}! + \\log T(r),

        T(r) = \\int_0^\\infty t^{s + J a_H - 1} e^{-b_H t}
               \\prod_i (b_W + t)^{-(a_W + r_i)} \\, dt .

    :math:`T` is evaluated with :func:`scipy.integrate.quad` after the
    substitution :math:`t = e^u`, which makes the log-integrand concave; its
    maximum is factored out and the range is cut where the integrand has
    dropped by :math:`e^{-60}`, giving a relative accuracy of about
    :math:`10^{-12}`.  :math:`T` depends on the allocation only through the
    multiset of row sums, so it is computed once per distinct sorted row-sum
    vector (and memoised across calls).

    The evidence is the log-sum-exp over allocations of
    :math:`\\sum_k \\log p(S_{:k:})`.  Zero counts have a single allocation
    and are left out of the enumeration.

    References
    ----------
    .. [1] A. T. Cemgil, "Bayesian inference for nonnegative matrix
       factorisation models", *Computational Intelligence and Neuroscience*,
       vol. 2009, Article ID 785152, 2009. doi:10.1155/2009/785152

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf.evidence import exact_log_evidence
    >>> X = np.array([[1, 0], [2, 1]])
    >>> round(exact_log_evidence(X, n_components=2), 6)
    -5.748528
    """
    X = _coupled_counts(X) if _is_matrix_list(X) else as_count_array(X, ndim=2)
    n_rows, n_columns = X.shape
    fixed_W, fixed_H = _validate_fixed_factors(fixed_factors, n_rows, n_columns)
    n_components = _resolve_n_components(n_components, fixed_W, fixed_H)
    shape_W, shape_H = _as_factor_pair(prior_shape, "prior_shape")
    rate_W, rate_H = _per_component_rates(prior_rate, n_components)
    if (
        isinstance(max_allocations, bool)
        or not isinstance(max_allocations, numbers.Integral)
        or max_allocations < 1
    ):
        raise ValueError(
            f"max_allocations must be a positive integer, got {max_allocations!r}"
        )

    entry_rows, entry_columns = np.nonzero(X)
    entry_counts = X[entry_rows, entry_columns]
    n_allocations = _count_allocations(entry_counts, n_components)
    if n_allocations > max_allocations:
        raise ValueError(
            f"X has {n_allocations} allocations over {n_components} components, "
            f"more than max_allocations={max_allocations}; exact enumeration "
            "is only feasible for tiny data"
        )

    component_log_terms = [
        _make_component_log_term(
            fixed_W,
            fixed_H,
            shape_W=shape_W,
            rate_W=float(rate_W[k]),
            shape_H=shape_H,
            rate_H=float(rate_H[k]),
            n_rows=n_rows,
            n_columns=n_columns,
        )
        for k in range(n_components)
    ]

    # Per nonzero entry: all its compositions into K parts, and the
    # log-factorial term sum_k log S_ikj! of each composition.
    entry_compositions = [compositions(int(n), n_components) for n in entry_counts]
    entry_log_factorials = [gammaln(c + 1.0).sum(axis=1) for c in entry_compositions]
    grid_shape = tuple(len(c) for c in entry_compositions)

    chunk_log_sums = []
    for start in range(0, n_allocations, _CHUNK_SIZE):
        flat = np.arange(start, min(start + _CHUNK_SIZE, n_allocations))
        # One composition index per entry: the allocation set is the
        # Cartesian product of the per-entry composition sets.
        choice = np.unravel_index(flat, grid_shape) if grid_shape else ()
        log_joint = np.zeros(len(flat))
        for idx, log_fact in zip(choice, entry_log_factorials):
            log_joint -= log_fact[idx]
        for k in range(n_components):
            row_sums, column_sums = _component_margins(
                choice,
                entry_compositions,
                entry_rows,
                entry_columns,
                k,
                n_rows,
                n_columns,
                len(flat),
            )
            log_joint += component_log_terms[k](k, row_sums, column_sums)
        chunk_log_sums.append(logsumexp(log_joint))
    return float(logsumexp(np.asarray(chunk_log_sums)))


# --------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------


def _is_matrix_list(X):
    """True for a list or tuple of matrices (a nested list of numbers is one matrix)."""
    return isinstance(X, (list, tuple)) and (
        len(X) == 0 or all(np.ndim(m) == 2 for m in X))


def _coupled_counts(matrices):
    """Count matrices over the same rows, side by side (the coupled model's
    equivalent single matrix; :func:`exact_log_evidence`)."""
    if not matrices:
        raise ValueError("X is an empty list; pass one count matrix or several.")
    matrices = [as_count_array(m, ndim=2) for m in matrices]
    rows = {m.shape[0] for m in matrices}
    if len(rows) != 1:
        raise ValueError(
            "Coupled count matrices share their row factor W, so they need the same "
            f"number of rows; got {[m.shape[0] for m in matrices]}."
        )
    return np.hstack(matrices)


def _validate_fixed_factors(fixed_factors, n_rows, n_columns):
    """Return ``(W, H)`` from `fixed_factors`, ``None`` for a random factor."""
    if fixed_factors is None:
        return None, None
    if not isinstance(fixed_factors, dict):
        raise ValueError(
            "fixed_factors must be None or a dict {0: W} / {1: H}, "
            f"got {type(fixed_factors).__name__}"
        )
    unknown = set(fixed_factors) - {0, 1}
    if unknown:
        raise ValueError(
            f"fixed_factors keys must be 0 (W) or 1 (H), got {sorted(map(repr, unknown))}"
        )
    W = H = None
    if 0 in fixed_factors:
        W = _validate_fixed_array(fixed_factors[0], "W (fixed_factors[0])")
        if W.shape[0] != n_rows:
            raise ValueError(
                f"fixed factor W (fixed_factors[0]) must have shape (n_rows={n_rows}, K), "
                f"got {W.shape}"
            )
    if 1 in fixed_factors:
        H = _validate_fixed_array(fixed_factors[1], "H (fixed_factors[1])")
        if H.shape[1] != n_columns:
            raise ValueError(
                f"fixed factor H (fixed_factors[1]) must have shape (K, n_columns={n_columns}), "
                f"got {H.shape}"
            )
    if W is not None and H is not None and W.shape[1] != H.shape[0]:
        raise ValueError(
            f"fixed factors W {W.shape} and H {H.shape} disagree on the number "
            "of components"
        )
    return W, H


def _validate_fixed_array(value, name):
    """Check one fixed factor: a finite, non-negative 2-D float array."""
    value = np.asarray(value)
    if value.dtype.kind not in "biuf":
        raise ValueError(f"fixed factor {name} must be numeric, got dtype {value.dtype}")
    value = value.astype(np.float64)
    if value.ndim != 2 or value.size == 0:
        raise ValueError(
            f"fixed factor {name} must be a non-empty 2-D array, got shape {value.shape}"
        )
    if not np.all(np.isfinite(value)):
        raise ValueError(f"fixed factor {name} contains NaN or infinite values")
    if np.any(value < 0):
        raise ValueError(f"fixed factor {name} contains negative values")
    return value


def _resolve_n_components(n_components, fixed_W, fixed_H):
    """Return K from the argument and/or the fixed factors, checking agreement."""
    implied = None
    if fixed_W is not None:
        implied = fixed_W.shape[1]
    elif fixed_H is not None:
        implied = fixed_H.shape[0]
    if n_components is None:
        if implied is None:
            raise ValueError(
                "n_components is required when no factor is fixed"
            )
        return implied
    if isinstance(n_components, bool) or not isinstance(n_components, numbers.Integral):
        raise ValueError(f"n_components must be an integer, got {n_components!r}")
    if n_components < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}")
    if implied is not None and implied != n_components:
        raise ValueError(
            f"n_components={n_components} disagrees with the fixed factor, "
            f"which has {implied} components"
        )
    return int(n_components)


def _as_factor_pair(value, name):
    """Read a prior hyperparameter as ``(value_for_W, value_for_H)``."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a positive number or a pair, got {value!r}") from exc
    if array.ndim == 0:
        array = np.repeat(array, 2)
    if array.shape != (2,):
        raise ValueError(
            f"{name} must be a scalar or a sequence of length 2 (W, H), got {value!r}"
        )
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(array[0]), float(array[1])


def _per_component_rates(value, n_components):
    """``prior_rate`` as two arrays of ``n_components`` rates (W's, H's):
    from a scalar, a pair of scalars, or a pair whose entries are scalars
    or arrays of one rate per component."""
    if np.ndim(value) == 0 or (np.ndim(value) == 1 and len(value) == 2
                               and all(np.ndim(v) == 0 for v in value)):
        return tuple(np.full(n_components, v) for v in _as_factor_pair(value, "prior_rate"))
    if len(value) != 2:
        raise ValueError(f"prior_rate must be a scalar or a pair (W, H), got {value!r}")
    rates = []
    for part in value:
        array = np.broadcast_to(np.asarray(part, dtype=np.float64), (n_components,))
        if not np.all(np.isfinite(array)) or np.any(array <= 0):
            raise ValueError(f"prior_rate must be finite and > 0, got {value!r}")
        rates.append(np.array(array))
    return tuple(rates)


# --------------------------------------------------------------------------
# Enumeration
# --------------------------------------------------------------------------


def _count_allocations(entry_counts, n_components):
    """Exact number of allocations, prod_e C(n_e + K - 1, K - 1)."""
    # Python integers: the product can overflow int64 long before we refuse.
    total = 1
    for n in entry_counts:
        total *= math.comb(int(n) + n_components - 1, n_components - 1)
    return total


def _component_margins(
    choice, entry_compositions, entry_rows, entry_columns, k, n_rows, n_columns, size
):
    """Row and column sums of component ``k`` for a chunk of allocations."""
    row_sums = np.zeros((size, n_rows), dtype=np.int64)
    column_sums = np.zeros((size, n_columns), dtype=np.int64)
    for idx, comps, i, j in zip(choice, entry_compositions, entry_rows, entry_columns):
        part = comps[idx, k]
        row_sums[:, i] += part
        column_sums[:, j] += part
    return row_sums, column_sums


# --------------------------------------------------------------------------
# Per-component log p(S_{:k:}) (log-factorials excluded)
# --------------------------------------------------------------------------


def _make_component_log_term(
    fixed_W, fixed_H, *, shape_W, rate_W, shape_H, rate_H, n_rows, n_columns
):
    """Return ``f(k, row_sums, column_sums) -> log p(S_{:k:}) + sum log S!``.

    The four cases (which factors are fixed) differ only in how the factors
    are integrated out; all depend on the allocation through the component's
    row sums ``r`` (n, I) and column sums ``c`` (n, J).
    """
    if fixed_W is not None and fixed_H is not None:

        def both_fixed(k, r, c):
            w, h = fixed_W[:, k], fixed_H[k, :]
            return xlogy(r, w).sum(axis=1) + xlogy(c, h).sum(axis=1) - w.sum() * h.sum()

        return both_fixed

    if fixed_W is not None:

        def W_fixed(k, r, c):
            return _log_gamma_poisson_fixed_other(
                fixed_W[:, k], r, c, shape_H, rate_H
            )

        return W_fixed

    if fixed_H is not None:

        def H_fixed(k, r, c):
            # Same as W_fixed with the roles of rows and columns swapped.
            return _log_gamma_poisson_fixed_other(
                fixed_H[k, :], c, r, shape_W, rate_W
            )

        return H_fixed

    log_prior_normalisers = n_rows * (shape_W * np.log(rate_W) - gammaln(shape_W)) + (
        n_columns * (shape_H * np.log(rate_H) - gammaln(shape_H))
    )

    def both_random(k, r, c):
        total = r.sum(axis=1)
        log_T = _log_t_integral_per_allocation(
            r, shape_W=shape_W, rate_W=rate_W, shape_H=shape_H, rate_H=rate_H,
            n_columns=n_columns,
        )
        return (
            log_prior_normalisers
            + gammaln(shape_W + r).sum(axis=1)
            + gammaln(shape_H + c).sum(axis=1)
            - gammaln(total + n_columns * shape_H)
            + log_T
        )

    return both_random


def _log_gamma_poisson_fixed_other(fixed, fixed_side_sums, random_side_sums, shape, rate):
    """Component log term when one factor is fixed and the other Gamma-distributed.

    ``fixed`` is the fixed factor's column/row for this component, paired with
    the allocation margins on its side (``fixed_side_sums``); each random
    entry is integrated against its Gamma(shape, rate) prior in closed form.
    """
    exposure = fixed.sum()
    log_likelihood_fixed = xlogy(fixed_side_sums, fixed).sum(axis=1)
    log_gamma_integrals = (
        shape * np.log(rate)
        - gammaln(shape)
        + gammaln(shape + random_side_sums)
        - (shape + random_side_sums) * np.log(rate + exposure)
    )
    return log_likelihood_fixed + log_gamma_integrals.sum(axis=1)


def _log_t_integral_per_allocation(r, *, shape_W, rate_W, shape_H, rate_H, n_columns):
    """log T(r) for each row of ``r``, one quadrature per distinct multiset.

    T is symmetric in the row sums, so rows are sorted before taking the
    unique set; that makes allocations that merely permute the rows share
    one quadrature.
    """
    sorted_rows = np.sort(r, axis=1)
    unique_rows, inverse = np.unique(sorted_rows, axis=0, return_inverse=True)
    values = np.array(
        [
            _cached_log_t_integral(
                tuple(int(v) for v in row), shape_W, rate_W, shape_H, rate_H, n_columns
            )
            for row in unique_rows
        ]
    )
    return values[inverse.reshape(-1)]


@functools.lru_cache(maxsize=65536)
def _cached_log_t_integral(sorted_row_sums, shape_W, rate_W, shape_H, rate_H, n_columns):
    """Memoised :func:`_log_t_integral` keyed on the hashable model inputs."""
    row_sums = np.asarray(sorted_row_sums, dtype=np.float64)
    return _log_t_integral(
        power=row_sums.sum() + n_columns * shape_H,
        decay=rate_H,
        offset=rate_W,
        exponents=shape_W + row_sums,
    )


def _log_t_integral(power, decay, offset, exponents):
    """log of T = int_0^inf t^(power-1) e^(-decay t) prod_i (offset + t)^(-exponents_i) dt.

    With ``t = e^u`` the log-integrand is

        g(u) = power u - decay e^u - sum_i exponents_i log(offset + e^u),

    which is strictly concave (g'' < 0), so it has a single peak u*.  We find
    u* by root-finding on the monotone g', cut the range where g has dropped
    by ``_LOG_TAIL_DROP`` nats on each side, and integrate exp(g - g(u*)) with
    quad (peak passed as a breakpoint).  Factoring out g(u*) keeps the
    integrand in [0, 1] whatever the magnitude of T.
    """
    log_offset = np.log(offset)

    def log_integrand(u):
        return power * u - decay * np.exp(u) - np.sum(exponents * np.logaddexp(log_offset, u))

    def slope(u):
        # d/du log(offset + e^u) = sigmoid(u - log offset)
        return power - decay * np.exp(u) - np.sum(exponents * expit(u - log_offset))

    # g' -> power > 0 as u -> -inf and -> -inf as u -> +inf.
    peak = optimize.brentq(slope, *_bracket_sign_change(slope, 0.0), xtol=1e-14, rtol=1e-14)
    log_peak = log_integrand(peak)

    def below_cut(u):
        return log_integrand(u) - (log_peak - _LOG_TAIL_DROP)

    lower = optimize.brentq(below_cut, *_bracket_sign_change(below_cut, peak, direction=-1))
    upper = optimize.brentq(below_cut, *_bracket_sign_change(below_cut, peak, direction=+1))

    value, _ = integrate.quad(
        lambda u: np.exp(log_integrand(u) - log_peak),
        lower,
        upper,
        points=[peak],
        epsabs=0.0,
        epsrel=1e-12,
        limit=200,
    )
    return log_peak + np.log(value)


def _bracket_sign_change(func, start, direction=None):
    """Return ``lo < hi`` such that `func` changes sign on ``[lo, hi]``.

    With ``direction=None``, `func` is decreasing and the bracket around
    `start` has ``func(lo) > 0 > func(hi)``.  With ``direction=-1`` (``+1``)
    `func` is positive at `start` and the search goes left (right) only,
    doubling the step until `func` is no longer positive; `start` is then
    one end of the bracket.
    """
    step = 1.0
    if direction is None:
        lo, hi = start - step, start + step
        while func(lo) <= 0:
            step *= 2.0
            lo = start - step
        step = 1.0
        while func(hi) >= 0:
            step *= 2.0
            hi = start + step
        return lo, hi
    while func(start + direction * step) > 0:
        step *= 2.0
    end = start + direction * step
    return (end, start) if direction < 0 else (start, end)
