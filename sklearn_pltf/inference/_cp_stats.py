"""The sums over data a Gaussian CP (PARAFAC) model needs, without a dense X̂.

For :math:`\\hat X = [\\![A_1, \\dots, A_N]\\!]` (rank R) and the observed
entries O, every Gibbs conditional, gradient and likelihood reads three kinds
of sums (Schmidt & Mohamed 2009, §3.3):

- the MTTKRP :math:`\\Pi_n = X_{(n)} K_n`, with
  :math:`K_n = \\odot_{m \\ne n} A_m` the Khatri–Rao product of the other
  factors: over the observed non-zeros only (missing entries hold 0);
- the Gram identity :math:`\\sum_{\\text{all } v} \\hat X_{v} K_n(v, r) =
  (A_n G_n)(\\cdot, r)` with :math:`G_n = \\ast_{m \\ne n} A_m^\\top A_m`
  (Hadamard product of Gram matrices): over every entry at the cost of the
  factors;
- corrections over the listed missing entries, which the Gram identity counted
  but the likelihood excludes: :math:`\\hat X_v` and :math:`K_n(v, \\cdot)` there.

So a sweep costs O(nnz·R·N + n_missing·R·N + Σ I_n R²), the cost of the
non-zeros and the missing entries; sparse input is never densified, and dense
input without missing entries takes its MTTKRP as one BLAS-backed contraction.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["CPStatistics", "GaussianSums", "cp_dense"]


def cp_dense(factors):
    """The dense CP tensor :math:`\\sum_r \\prod_n A_n(\\cdot, r)`: mode 0
    times the Khatri–Rao product of the others (one BLAS product)."""
    product = factors[1]
    for f in factors[2:]:
        product = (product[:, None, :] * f[None, :, :]).reshape(-1, f.shape[1])
    return (factors[0] @ product.T).reshape(tuple(f.shape[0] for f in factors))


class GaussianSums:
    """What the Gaussian family's sums share whatever the structure
    (:class:`CPStatistics`, :class:`~.gaussian._string_stats.StringStatistics`):
    the factors' Grams, the scatter over the missing entries and the sum of
    squared errors. A subclass gives ``_n_rows(n)`` (factor n's rows),
    ``_select_missing``, ``_missing``, ``entries_xhat`` and
    ``xhat_square_sum(grams)`` (:math:`\\sum_{\\text{all } v} \\hat x_v^2`)."""

    def _selector(self, n, rows):
        """Factor n's rows x entries, a one where the entry lies in the row:
        scatter-adds as sparse products."""
        return sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))),
                             shape=(self._n_rows(n), rows.size))

    @staticmethod
    def grams(factors):
        """:math:`A_m^\\top A_m` for every factor (matrix)."""
        return [f.T @ f for f in factors]

    def missing_xhat(self, factors):
        """:math:`\\hat X` at the missing entries (or an empty array)."""
        return self.entries_xhat(factors, self._missing) if self.n_missing else np.zeros(0)

    def scatter_missing(self, n, values):
        """Σ over missing entries in each row of factor n of ``values`` (entries x k)."""
        return np.asarray(self._select_missing[n] @ values)

    def sum_of_squared_errors(self, factors, grams=None, mttkrp=None, mode=0, missing_xhat=None):
        """:math:`\\sum_O (x - \\hat x)^2 = \\sum x^2 - 2 \\sum x \\hat x + \\sum \\hat x^2`:
        :math:`\\sum_O x \\hat x = \\langle A_n, \\Pi_n \\rangle` for any factor n, and
        :math:`\\sum_O \\hat x^2` is the all-entry Gram sum minus the missing entries'.
        What a caller already holds saves work: the Grams, ``mode``'s MTTKRP
        ``mttkrp``, and X̂ at the missing entries."""
        grams = self.grams(factors) if grams is None else grams
        mttkrp = self.mttkrp(mode, factors) if mttkrp is None else mttkrp
        cross = float(np.sum(factors[mode] * mttkrp))
        squares = self.xhat_square_sum(grams)
        if self.n_missing:
            missing_xhat = self.missing_xhat(factors) if missing_xhat is None else missing_xhat
            squares -= float(np.sum(missing_xhat**2))
        return max(self.sum_of_squares - 2.0 * cross + squares, 0.0)


class CPStatistics(GaussianSums):
    """Data-side sums for a CP model on an :class:`~sklearn_pltf.engine._data.ObservedTensor`.

    Attributes
    ----------
    shape : tuple
    n_observed : int
        Observed entries (zeros included).
    sum_of_squares : float
        :math:`\\sum_O x^2`.
    """

    #: The samplers these sums serve: HMC's gradient reads masked_gradient_terms.
    samplers = ("gibbs", "hmc")

    def __init__(self, data):
        self.shape, self.ndim = tuple(data.shape), data.ndim
        self.n_factors = self.ndim  # a factor per mode
        self.n_observed = data.n_observed
        if data.is_sparse:
            self._dense, coords, values, missing = None, data.coords, data.values, data.missing
        else:
            self._dense = data.dense if data.mask is None else None
            if data.mask is None:
                coords, values = np.empty((self.ndim, 0), dtype=np.intp), np.empty(0)
                missing = np.empty((self.ndim, 0), dtype=np.intp)
            else:  # the dense data's non-zeros, and where the mask is False
                coords = np.vstack(np.nonzero(data.dense)).astype(np.intp)
                values = data.dense[tuple(coords)]
                missing = np.vstack(np.nonzero(~data.mask)).astype(np.intp)
        self._coords, self._values, self._missing = coords, values, missing
        self.n_missing = missing.shape[1]
        source = self._dense if self._dense is not None else values
        self.sum_of_squares = float(np.sum(np.square(source)))
        # Row selection matrices (I_n x entries): scatter-adds as sparse products.
        self._select = [self._selector(n, coords[n]) for n in range(self.ndim)] if values.size else None
        self._select_missing = ([self._selector(n, missing[n]) for n in range(self.ndim)]
                                if self.n_missing else None)
        # Dense data: each mode's unfolding X_(n) (I_n x the other sizes, in order), once.
        self._unfolded = None if self._dense is None else [
            np.ascontiguousarray(np.moveaxis(self._dense, n, 0)).reshape(self.shape[n], -1)
            for n in range(self.ndim)
        ]

    def factor_shapes(self, rank):
        """Each mode's factor shape at rank ``rank``: (I_n, R)."""
        return [(size, rank) for size in self.shape]

    @staticmethod
    def factor_tensor(n, matrix):
        """A factor matrix as the model's tensor: the same array for CP."""
        return matrix

    @staticmethod
    def factor_matrix(n, tensor):
        """The inverse of :meth:`factor_tensor`."""
        return tensor

    def column_labels(self, rank):
        """Each factor's columns as latent index values: column r is component r."""
        return [[{"r": r} for r in range(rank)] for _ in self.shape]

    @staticmethod
    def n_terms(rank):
        """The number of products summed into each X̂ entry: R."""
        return rank

    # ------------------------------------------------------------- building blocks
    @staticmethod
    def khatri_rao_rows(factors, coords, skip=None):
        """:math:`\\prod_{m \\ne \\text{skip}} A_m(v_m, :)` at each listed entry (entries x R)."""
        rows = None
        for m, factor in enumerate(factors):
            if m == skip:
                continue
            taken = factor[coords[m]]
            rows = taken if rows is None else rows * taken
        return rows

    @staticmethod
    def hadamard_gram(grams, skip=None):
        """:math:`G_n = \\ast_{m \\ne n} A_m^\\top A_m` (all modes if ``skip`` is None)."""
        result = None
        for m, g in enumerate(grams):
            if m != skip:
                result = g.copy() if result is None else result * g
        return result

    def design_gram(self, grams, skip):
        """What the Gaussian family's sweep reads as the design's Gram: the
        Hadamard product of the other modes' Grams (:meth:`hadamard_gram`)."""
        return self.hadamard_gram(grams, skip=skip)

    def xhat_square_sum(self, grams):
        """:math:`\\sum_{\\text{all } v} \\hat x_v^2`: the sum of every mode's Grams' Hadamard product."""
        return float(np.sum(self.hadamard_gram(grams)))

    def _n_rows(self, n):
        return self.shape[n]

    def dense_xhat(self, factors):
        """The whole X̂, the data's shape (one BLAS product)."""
        return cp_dense(factors)

    def entries_xhat(self, factors, coords):
        """X̂ at the listed entries (``coords``: ndim x n)."""
        return np.sum(self.khatri_rao_rows(factors, np.asarray(coords, dtype=np.intp)), axis=1)

    def mttkrp(self, n, factors):
        """:math:`X_{(n)} K_n` over the observed entries (I_n x R)."""
        if self._dense is not None:
            return self._dense_mttkrp(n, factors)
        if self._values.size == 0:
            return np.zeros((self.shape[n], factors[0].shape[1]))
        rows = self.khatri_rao_rows(factors, self._coords, skip=n)
        return np.asarray(self._select[n] @ (self._values[:, None] * rows))

    def _dense_mttkrp(self, n, factors):
        """X_(n) times the Khatri–Rao product of the other factors (in the
        unfolding's row order, the last mode fastest): one BLAS product."""
        others = [f for m, f in enumerate(factors) if m != n]
        product = others[0]
        for f in others[1:]:
            product = (product[:, None, :] * f[None, :, :]).reshape(-1, f.shape[1])
        return self._unfolded[n] @ product

    def missing_rows(self, n, factors):
        """:math:`K_n(v, :)` at the missing entries (n_missing x R), or None."""
        if not self.n_missing:
            return None
        return self.khatri_rao_rows(factors, self._missing, skip=n)

    def missing_row_index(self, n):
        """Each missing entry's index along mode n."""
        return self._missing[n]

    # ------------------------------------------------------------------ the model
    def masked_gradient_terms(self, n, factors, grams=None, with_mttkrp=False):
        """:math:`\\sum_O (x_v - \\hat x_v) K_n(v, :)` summed per index of mode n:
        the log-likelihood's gradient in :math:`A_n` times :math:`\\sigma^2`
        (and the MTTKRP on the way, with ``with_mttkrp``)."""
        grams = self.grams(factors) if grams is None else grams
        mttkrp = self.mttkrp(n, factors)
        result = mttkrp - factors[n] @ self.hadamard_gram(grams, skip=n)
        if self.n_missing:
            others = self.missing_rows(n, factors)
            xhat = np.sum(others * factors[n][self._missing[n]], axis=1)
            result += self.scatter_missing(n, xhat[:, None] * others)
        return (result, mttkrp) if with_mttkrp else result

