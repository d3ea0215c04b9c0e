"""The sums over data the Gaussian family needs, for any model string whose
observed indices each belong to one factor (CP, Tucker, NMF, convolutive,
hierarchical, ...): the interface of :class:`~sklearn_pltf.inference._cp_stats.CPStatistics`,
so one Gibbs sweep (:func:`~.sweeps.gibbs_sweep`) serves every structure.

For :math:`\\hat X(v_0) = \\sum_{\\bar v_0} \\prod_\\alpha Z_\\alpha(v_\\alpha)`
each factor is seen as a matrix :math:`F_\\alpha`: a row per value of its
observed indices :math:`o_\\alpha` (one row if it has none, as Tucker's core),
a column per value of its latent indices :math:`c_\\alpha`. X̂ is linear in
each factor, :math:`\\hat x_v = \\sum_c F_\\alpha(o_\\alpha(v), c)\\, D_\\alpha(v, c)`,
with the design :math:`D_\\alpha` the contraction of the other factors
(for CP, the Khatri–Rao product :math:`K_n`). As no other factor carries
:math:`o_\\alpha`, the design does not depend on the row, and the sums a
column's Gaussian conditional reads are those of CP with the Hadamard product
of Grams replaced by the design's Gram over every entry,

.. math::

    G_\\alpha(c, c') = \\sum_{v:\\, o_\\alpha(v) = i} D_\\alpha(v, c) D_\\alpha(v, c')
    = \\sum \\prod_{\\beta \\ne \\alpha} M_\\beta(c_\\beta, c'_\\beta),
    \\qquad M_\\beta = F_\\beta^\\top F_\\beta,

the same for every row i: a contraction of the other factors' Grams in which every latent index
appears twice (unprimed and primed); :math:`\\sum_{\\text{all } v} \\hat x_v^2`
is the same contraction over every factor. The data enter through
:math:`\\sum_O x_v D_\\alpha(v, c)` per row (a contraction of X with the other
factors: dense input in one call, sparse input over its non-zeros) and the
corrections at the missing entries, exactly as for CP.
"""

from __future__ import annotations

from string import ascii_letters

import numpy as np

from ...engine._planner import planner_for
from ...engine.model import Model
from .._cp_stats import GaussianSums

__all__ = ["StringStatistics"]


class StringStatistics(GaussianSums):
    """Data-side sums for the Gaussian family on a bound model string.

    Parameters
    ----------
    data : ObservedTensor
    model : Model
        Bound to the data's shape, no fixed factors; each observed index
        carried by exactly one factor.

    Attributes
    ----------
    shape, ndim : the data's
    n_factors : int
    n_observed : int
    sum_of_squares : float
    """

    #: The samplers these sums serve (HMC's gradient is written for CP's).
    samplers = ("gibbs",)

    def __init__(self, data, model):
        model = Model.parse(model)
        check_string_model(model)
        self.model = model
        self.shape, self.ndim = tuple(data.shape), data.ndim
        self.n_factors = model.n_factors
        self.n_observed = data.n_observed
        sizes, output = model.sizes, model.output
        # Each factor's letters, observed first: its matrix's rows, then columns.
        self._rows = [[c for c in f if c in output] for f in model.factors]
        self._cols = [[c for c in f if c not in output] for f in model.factors]
        self._tensor_shapes = [tuple(sizes[c] for c in r + c_) for r, c_ in zip(self._rows, self._cols)]
        self._shapes = [(int(np.prod([sizes[c] for c in r], dtype=np.int64)),
                         int(np.prod([sizes[c] for c in c_], dtype=np.int64)))
                        for r, c_ in zip(self._rows, self._cols)]
        unused = iter(c for c in ascii_letters if c not in model.indices)
        self._primed = {c: next(unused) for c in model.latent}
        self._entry = next(unused)  # the subscript of a list of entries
        self._sizes = dict(sizes) | {self._primed[c]: sizes[c] for c in model.latent}
        self._planner = planner_for(model)  # each contraction planned once per model
        if data.is_sparse:
            self._dense = None
            self._coords, self._values = np.asarray(data.coords, np.intp), np.asarray(data.values)
            missing = data.missing if data.missing is not None else np.empty((self.ndim, 0))
        else:
            self._dense = data.dense  # 0 at the missing entries
            missing = (np.empty((self.ndim, 0)) if data.mask is None
                       else np.vstack(np.nonzero(~data.mask)))
        self._missing = np.asarray(missing, dtype=np.intp).reshape(self.ndim, -1)
        self.n_missing = self._missing.shape[1]
        source = self._dense if self._dense is not None else self._values
        self.sum_of_squares = float(np.sum(np.square(source)))
        self._missing_rows = [self._row_index(a, self._missing) for a in range(self.n_factors)]
        self._select_missing = ([self._selector(a, rows) for a, rows in enumerate(self._missing_rows)]
                                if self.n_missing else None)
        self._select = ([self._selector(a, self._row_index(a, self._coords))
                         for a in range(self.n_factors)] if self._dense is None else None)

    # ------------------------------------------------------------------ layout
    def factor_shapes(self, rank=None):
        """Each factor's matrix shape (rows, columns); the model sets them
        (``rank`` is :class:`CPStatistics`' and unused here)."""
        return list(self._shapes)

    def column_labels(self, rank=None):
        """Each factor's columns as latent index values, ``{index: value}`` (C order)."""
        return [[dict(zip(cols, values)) for values in np.ndindex(*(self.model.sizes[c] for c in cols))]
                for cols in self._cols]

    def n_terms(self, rank=None):
        """The number of products summed into each X̂ entry: the product of
        the latent sizes."""
        return int(np.prod([self.model.sizes[c] for c in self.model.latent], dtype=np.int64))

    def factor_tensor(self, alpha, matrix):
        """Factor ``alpha``'s matrix (any leading axes, e.g. chains and draws)
        as a tensor in the model string's index order."""
        matrix = np.asarray(matrix)
        lead = matrix.shape[:-2]
        letters = self._rows[alpha] + self._cols[alpha]
        order = [len(lead) + letters.index(c) for c in self.model.factors[alpha]]
        return np.transpose(np.reshape(matrix, lead + self._tensor_shapes[alpha]),
                            list(range(len(lead))) + order)

    def factor_matrix(self, alpha, tensor):
        """The inverse of :meth:`factor_tensor`."""
        tensor = np.asarray(tensor)
        lead = tensor.shape[:tensor.ndim - len(self.model.factors[alpha])]
        letters = self._rows[alpha] + self._cols[alpha]
        order = [len(lead) + self.model.factors[alpha].index(c) for c in letters]
        return np.reshape(np.transpose(tensor, list(range(len(lead))) + order),
                          lead + self._shapes[alpha])

    def _tensor(self, alpha, matrix):
        """The matrix as a tensor over rows-then-columns letters (no copy)."""
        return np.reshape(matrix, self._tensor_shapes[alpha])

    def _row_index(self, alpha, coords):
        """Each listed entry's row of factor ``alpha`` (0 for a factor without rows)."""
        rows = self._rows[alpha]
        if not rows:
            return np.zeros(coords.shape[1], dtype=np.intp)
        axes = [self.model.output.index(c) for c in rows]
        return np.ravel_multi_index(tuple(coords[a] for a in axes),
                                    tuple(self.shape[a] for a in axes)).astype(np.intp)

    def _letters(self, alpha):
        """The subscript of factor ``alpha``'s tensor: observed indices, then latent."""
        return "".join(self._rows[alpha]) + self._columns(alpha)

    # ------------------------------------------------------------- building blocks
    def design_gram(self, grams, skip):
        """:math:`G_\\alpha` for ``skip = α`` (columns x columns)."""
        value = self._gram_contraction(grams, skip)
        return np.reshape(value, (self._shapes[skip][1],) * 2)

    def xhat_square_sum(self, grams):
        """:math:`\\sum_{\\text{all } v} \\hat x_v^2`: the same contraction over every factor."""
        return float(self._gram_contraction(grams, None))

    def _gram_contraction(self, grams, skip):
        """Every factor's Gram but ``skip``'s, each latent index unprimed and
        primed, contracted to ``skip``'s latent indices and their copies."""
        operands, subscripts = [], []
        for beta, gram in enumerate(grams):
            if beta != skip:
                cols = [self.model.sizes[c] for c in self._cols[beta]]
                operands.append(np.reshape(gram, cols + cols))
                subscripts.append(self._columns(beta) + self._columns(beta, primed=True))
        out = "" if skip is None else self._columns(skip) + self._columns(skip, primed=True)
        return self._contract(operands, subscripts, out)

    def _n_rows(self, alpha):
        return self._shapes[alpha][0]

    def _columns(self, alpha, primed=False):
        """The subscript of factor ``alpha``'s latent indices (primed: their copies)."""
        return "".join(self._primed[c] if primed else c for c in self._cols[alpha])

    def _contract(self, operands, subscripts, out):
        """einsum into ``out``; an output index no operand carries (a latent
        index of the factor no other factor carries) makes the result
        constant along it: a vector of ones joins the operands."""
        for c in out:
            if not any(c in s for s in subscripts):
                operands, subscripts = operands + [np.ones(self._sizes[c])], subscripts + [c]
        return self._planner.contract(",".join(subscripts) + "->" + out, *operands)

    def mttkrp(self, alpha, factors):
        """:math:`\\sum_O x_v D_\\alpha(v, c)` per row of factor ``alpha`` (rows x columns)."""
        if self._dense is not None:
            operands = [self._dense] + [self._tensor(b, f) for b, f in enumerate(factors) if b != alpha]
            subscripts = [self.model.output] + [self._letters(b) for b in range(self.n_factors)
                                                if b != alpha]
            value = self._contract(operands, subscripts, self._letters(alpha))
            return np.reshape(value, self._shapes[alpha])
        if not self._values.size:
            return np.zeros(self._shapes[alpha])
        design = self._design_at(alpha, factors, self._coords)
        return np.asarray(self._select[alpha] @ (self._values[:, None] * design))

    def _gathered(self, beta, factor, coords):
        """Factor ``beta`` at the listed entries: (entries, its columns...) and its subscript."""
        if not self._rows[beta]:
            return self._tensor(beta, factor), "".join(self._cols[beta])
        taken = np.reshape(factor, (self._shapes[beta][0],) + self._tensor_shapes[beta][len(self._rows[beta]):])
        return taken[self._row_index(beta, coords)], self._entry + "".join(self._cols[beta])

    def _design_at(self, alpha, factors, coords):
        """:math:`D_\\alpha(v, \\cdot)` at the listed entries (entries x columns)."""
        pairs = [self._gathered(b, f, coords) for b, f in enumerate(factors) if b != alpha]
        operands, subscripts = [p[0] for p in pairs], [p[1] for p in pairs]
        out = self._entry + "".join(self._cols[alpha])
        if self._entry not in "".join(subscripts):
            operands, subscripts = operands + [np.ones(coords.shape[1])], subscripts + [self._entry]
        value = self._contract(operands, subscripts, out)
        return np.reshape(value, (coords.shape[1], self._shapes[alpha][1]))

    def missing_rows(self, alpha, factors):
        """:math:`D_\\alpha` at the missing entries (n_missing x columns), or None."""
        if not self.n_missing:
            return None
        return self._design_at(alpha, factors, self._missing)

    def entries_xhat(self, factors, coords):
        """X̂ at the listed entries (``coords``: ndim x n)."""
        coords = np.asarray(coords, dtype=np.intp).reshape(self.ndim, -1)
        design = self._design_at(0, factors, coords)
        rows = np.reshape(factors[0], self._shapes[0])[self._row_index(0, coords)]
        return np.sum(design * rows, axis=1)

    def missing_row_index(self, alpha):
        """Each missing entry's row of factor ``alpha``."""
        return self._missing_rows[alpha]

    def dense_xhat(self, factors):
        """The whole X̂, the data's shape."""
        operands = [self._tensor(b, f) for b, f in enumerate(factors)]
        subscripts = [self._letters(b) for b in range(self.n_factors)]
        return self._contract(operands, subscripts, self.model.output)



def check_string_model(model):
    """A ValueError naming the problem unless the Gaussian family's sweep
    can take ``model``: bound, no fixed factor, every observed index carried
    by exactly one factor (else the design depends on the factor's own rows)."""
    if model.sizes is None:
        raise ValueError(f"Model {model.string!r} has no sizes yet; call bind first.")
    if model.fixed:
        raise ValueError(f"Model {model.string!r}: the Gaussian family does not take fixed "
                         "factors yet.")
    shared = [c for c in model.output if sum(c in f for f in model.factors) != 1]
    if shared:
        raise ValueError(
            f"Model {model.string!r}: the Gaussian family needs each observed index in exactly "
            f"one factor; {', '.join(repr(c) for c in shared)} is in "
            f"{sum(shared[0] in f for f in model.factors)} (a tied or shared factor, as RESCAL's, "
            "is not supported on a model string yet).")
