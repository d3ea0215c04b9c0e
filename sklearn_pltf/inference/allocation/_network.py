"""A BAM model string read as a Bayesian network of Dirichlet tables, and
the flat layout in which the urn counts its tokens.

The Bayesian Allocation Model (Cemgil, Kurutmaz, Yıldırım, Barsbey &
Şimşekli 2020) draws each token's indices, observed and latent, from a
Bayesian network whose conditional tables are Dirichlet distributed. A model
string names the tables' families; this module decides which indices of each
factor are its children:

- a factor holding observed indices has those as its children and its latent
  indices as its parents, ``θ(i | p)``;
- a factor holding only latent indices (a Tucker core, ``pqr``) is a root: a
  joint Dirichlet over all of them, ``θ(p, q, r)``;
- the latent indices that no such factor holds get one implicit root, a
  joint Dirichlet over them (CP's ``θ0(r)``).

A string qualifies when every index is then the child of exactly one table:
each observed index lies in exactly one factor, and no two latent-only
factors share an index. The others (an observed index in two factors, a
chain of latent factors such as ``"ip,pq,qr,jr->ij"``) are refused by
:func:`allocation_network`.

Under the scalar prior each table's Dirichlet parameter is
``a / Π (sizes of its family)``, the BDeu prior of equivalent sample size
``a`` (Heckerman, Geiger & Chickering 1995): every table's parameters are
the marginals of one uniform Dirichlet over all the indices, as the paper's
``α(r, i₁..i_N)``. Arrays can replace any written table's parameters.

The urn's state per particle is one flat vector of counts: for every table
its counts over its family (``n_f(children, parents)``) and over its parents
(``n_f(parents)``; one cell counting every token for a root). A token in
observed cell ``v`` with latent configuration ``h`` touches one cell of each
segment, at ``start + v · visible_strides + latent_offsets[h]`` (columns
``2f`` and ``2f + 1`` for table f's two segments), and its predictive
probability is

.. math::

    \\sum_h \\prod_f \\frac{n_f(c_f(v, h)) + \\alpha_f(c_f(v, h))}
    {n_f(\\mathrm{pa}_f(v, h)) + \\alpha_f(\\mathrm{pa}_f(v, h))}.
"""

from __future__ import annotations

from numbers import Real
from typing import NamedTuple

import numpy as np

__all__ = ["ConditionalTable", "AllocationNetwork", "allocation_network", "SMALLEST_ALPHA"]

#: The smallest Dirichlet parameter a table takes: the smallest normal
#: float64. Below it a parameter keeps only a few significant bits.
SMALLEST_ALPHA = float(np.finfo(np.float64).tiny)


class ConditionalTable(NamedTuple):
    """One Dirichlet table ``θ(children | parents)``.

    ``family`` lists its indices in the factor's written order (the implicit
    root's in the model's latent order); ``alpha`` has the family's shape.
    ``position`` is the written factor, or None for the implicit root.
    """

    family: str
    children: str
    parents: str
    alpha: np.ndarray
    position: int | None

    @property
    def child_axes(self):
        return tuple(a for a, c in enumerate(self.family) if c in self.children)

    def parent_alpha(self):
        """α summed over the children, shaped as the parents (in family order)."""
        return self.alpha.sum(axis=self.child_axes)


class AllocationNetwork(NamedTuple):
    """The tables of a bound model and their flat layout.

    Attributes
    ----------
    model : Model
        The bound model string.
    tables : tuple of ConditionalTable
        One per written factor, in order, then the implicit root if any.
    carrier : int
        The written factor whose reported values carry λ and the implicit
        root, so that the written factors alone reconstruct ``E[X]``.
    starts : ndarray of shape (2F,)
        Where each table's family segment (even columns) and parent segment
        (odd columns) start.
    visible_strides : ndarray of shape (N, 2F)
        Each observed index's stride in every segment (0 where absent).
    latent_offsets : ndarray of shape (H, 2F)
        Every latent configuration's offset in every segment; configurations
        in C order over ``model.latent``.
    alpha : ndarray of shape (L,)
        The Dirichlet parameters laid out as the counts.
    """

    model: object
    tables: tuple
    carrier: int
    starts: np.ndarray
    visible_strides: np.ndarray
    latent_offsets: np.ndarray
    alpha: np.ndarray

    @property
    def n_cells(self):
        """Length L of a particle's count vector."""
        return self.alpha.size

    @property
    def n_configurations(self):
        """H, the number of latent configurations."""
        return self.latent_offsets.shape[0]

    @property
    def latent_shape(self):
        return tuple(self.model.sizes[c] for c in self.model.latent)

    @property
    def implicit_root(self):
        """The implicit root table, or None."""
        last = self.tables[-1]
        return last if last.position is None else None

    def cell_signs(self):
        """+1 on every table's family cells, -1 on its parent cells: a
        Dirichlet-multinomial's log normaliser is Σ_c s_c log Γ(α_c + n_c)
        up to the prior's."""
        lengths = np.diff(np.append(self.starts, self.n_cells))
        return np.repeat(np.tile([1.0, -1.0], lengths.size // 2), lengths)

    def segment(self, counts, f, parents=False):
        """Table f's counts (``counts[..., L]``) over its family, or over its
        parents, shaped ``counts.shape[:-1] + table shape``."""
        table = self.tables[f]
        sizes = self.model.sizes
        indices = table.parents if parents else table.family
        shape = tuple(sizes[c] for c in indices)
        start = self.starts[2 * f + int(parents)]
        return counts[..., start:start + int(np.prod(shape, dtype=np.int64))].reshape(
            counts.shape[:-1] + shape)

    def slot_offsets(self, coords):
        """Each token's segment offsets from its observed indices: ``coords``
        (tokens, N) -> (tokens, 2F)."""
        return self.starts + np.asarray(coords, dtype=np.int64) @ self.visible_strides


def allocation_network(model, concentration, dirichlet_prior=None):
    """The Bayesian network of a bound BAM model (see the module's docstring).

    Parameters
    ----------
    model : Model
        Bound (every index sized), without fixed factors.
    concentration : float
        ``a``: each table's Dirichlet parameter is ``a / Π (family sizes)``
        unless ``dirichlet_prior`` gives it.
    dirichlet_prior : sequence of (array-like or None), default=None
        One entry per written factor: its table's Dirichlet parameters in the
        factor's index order and shape (positive, finite), or None for the
        scalar shorthand.

    Raises
    ------
    ValueError
        When the string is not a Bayesian network of this kind, or a prior
        array has the wrong shape or a non-positive entry.
    """
    if model.fixed:
        raise ValueError("The Bayesian Allocation Model has no fixed factors.")
    output, latent, sizes = model.output, model.latent, model.sizes
    for c in output:
        holders = [f for f in model.factors if c in f]
        if len(holders) > 1:
            raise ValueError(
                f"Model {model.string!r}: observed index {c!r} lies in factors "
                f"{', '.join(map(repr, holders))}. The Bayesian Allocation Model reads each "
                "factor as a Dirichlet table whose children are its observed indices, so each "
                "observed index must lie in exactly one factor."
            )
    latent_only = [a for a, f in enumerate(model.factors) if not set(f) & set(output)]
    claimed = {}
    for a in latent_only:
        for c in model.factors[a]:
            if c in claimed:
                raise ValueError(
                    f"Model {model.string!r}: factors {model.factors[claimed[c]]!r} and "
                    f"{model.factors[a]!r} hold only latent indices and share {c!r}. Each such "
                    "factor is a root of the Bayesian network, a joint Dirichlet over its "
                    "indices, so no latent index may lie in two of them; merge them into one "
                    "factor (e.g. 'pqr' for 'pq,qr')."
                )
            claimed[c] = a
    root_indices = "".join(c for c in latent if c not in claimed)
    carrier = None
    if root_indices:
        holders = [a for a, f in enumerate(model.factors) if set(root_indices) <= set(f)]
        if not holders:
            raise ValueError(
                f"Model {model.string!r}: latent indices {root_indices!r} lie in no factor "
                "holding only latent indices, so they share one implicit root table, but no "
                "factor holds all of them to report it. Add their joint as a factor, e.g. "
                f"'{model.string.split('->')[0]},{root_indices}->{output}'."
            )
        carrier = holders[0]
    prior = _prior_arrays(model, dirichlet_prior)

    tables = []
    for a, family in enumerate(model.factors):
        children = family if a in latent_only else "".join(c for c in family if c in output)
        parents = "".join(c for c in family if c not in children)
        shape = tuple(sizes[c] for c in family)
        alpha = prior[a] if prior[a] is not None else np.full(shape, concentration / np.prod(shape))
        tables.append(ConditionalTable(family, children, parents, alpha, a))
    if root_indices:
        shape = tuple(sizes[c] for c in root_indices)
        tables.append(ConditionalTable(root_indices, root_indices, "",
                                       np.full(shape, concentration / np.prod(shape)), None))
    if carrier is None:
        carrier = [t.position for t in tables if not t.parents][-1]
    _check_normal(model, tables, concentration, prior)
    return _laid_out(model, tuple(tables), carrier)


def _check_normal(model, tables, concentration, prior):
    """Refuse Dirichlet parameters below the smallest normal float64,
    :data:`SMALLEST_ALPHA`: there they keep only a few significant bits, then
    reach 0, where ``log(n + α)`` and the digammas of VB are infinite and the
    urn's first token has no probability."""
    for a, given in enumerate(prior):
        if given is not None and given.min() < SMALLEST_ALPHA:
            raise ValueError(
                f"dirichlet_prior[{a}] has an entry of {given.min():.3g}, below "
                f"{SMALLEST_ALPHA:.3g}, the smallest normal float64: the urn's probabilities "
                "and the variational bound's digammas lose their precision there. Use entries "
                f"of at least {SMALLEST_ALPHA:.3g}.")
    shorthand = [t for t in tables if t.position is None or prior[t.position] is None]
    if not shorthand:
        return
    largest = max(shorthand, key=lambda t: t.alpha.size)
    if concentration / largest.alpha.size < SMALLEST_ALPHA:
        raise ValueError(
            f"concentration={concentration:.3g} gives table {largest.family!r} Dirichlet "
            f"parameters of {concentration:.3g} / {largest.alpha.size} cells = "
            f"{concentration / largest.alpha.size:.3g}, below {SMALLEST_ALPHA:.3g}, the smallest "
            "normal float64: the urn's probabilities and the variational bound's digammas "
            f"lose their precision there. The smallest concentration model {model.string!r} "
            f"takes at these sizes is {SMALLEST_ALPHA * largest.alpha.size:.3g}.")


def _prior_arrays(model, dirichlet_prior):
    """Checked float arrays (or None) per written factor."""
    if dirichlet_prior is None:
        return [None] * model.n_factors
    if isinstance(dirichlet_prior, (Real, np.ndarray)) or len(dirichlet_prior) != model.n_factors:
        raise ValueError(
            f"dirichlet_prior must list one entry (an array or None) per factor of "
            f"{model.string!r}, {model.n_factors} in all."
        )
    arrays = []
    for a, given in enumerate(dirichlet_prior):
        if given is None:
            arrays.append(None)
            continue
        shape = model.factor_shape(a)
        array = np.array(given, dtype=np.float64)  # a copy: the user's array is never aliased
        if array.shape != shape:
            raise ValueError(
                f"dirichlet_prior[{a}] must have the shape of factor {model.factors[a]!r}, "
                f"{shape}, got {array.shape}."
            )
        if not np.all(np.isfinite(array)) or np.any(array <= 0):
            raise ValueError(
                f"dirichlet_prior[{a}] must be positive and finite (Dirichlet parameters)."
            )
        arrays.append(array)
    return arrays


def _strides(indices, sizes):
    """C-order strides of an array over ``indices``, keyed by index."""
    strides, step = {}, 1
    for c in reversed(indices):
        strides[c] = step
        step *= sizes[c]
    return strides, step


def _laid_out(model, tables, carrier):
    sizes = model.sizes
    n_slots = 2 * len(tables)
    starts = np.zeros(n_slots, dtype=np.int64)
    visible = np.zeros((len(model.output), n_slots), dtype=np.int64)
    latent = model.latent
    latent_shape = tuple(sizes[c] for c in latent)
    configurations = np.indices(latent_shape).reshape(len(latent), -1).T  # (H, n_latent)
    latent_offsets = np.zeros((configurations.shape[0], n_slots), dtype=np.int64)
    alpha, position = [], 0
    for f, table in enumerate(tables):
        for slot, (indices, values) in enumerate(
                [(table.family, table.alpha), (table.parents, table.parent_alpha())]):
            column = 2 * f + slot
            strides, length = _strides(indices, sizes)
            starts[column] = position
            for n, c in enumerate(model.output):
                visible[n, column] = strides.get(c, 0)
            for m, c in enumerate(latent):
                latent_offsets[:, column] += configurations[:, m] * strides.get(c, 0)
            alpha.append(np.ravel(values))
            position += length
    return AllocationNetwork(model, tables, carrier, starts, visible, latent_offsets,
                             np.concatenate(alpha))
