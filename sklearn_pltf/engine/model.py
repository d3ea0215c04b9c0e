"""Parse and bind PLTF model strings.

A probabilistic latent tensor factorization (PLTF) model is written as an
einsum-like string, for example ``"ik,kj->ij"`` (NMF), ``"ir,jr,kr->ijk"`` (CP),
``"ip,jq,kr,pqr->ijk"`` (Tucker), ``"r,d,dtr->t"`` (deconvolution) or
``"fi,ik,kt->ft"`` (hierarchical NMF). It stands for

.. math::

    \\hat X(v_0) = \\sum_{\\bar v_0} \\prod_\\alpha Z_\\alpha(v_\\alpha),

where :math:`v_0` are the output (observed) indices, :math:`v_\\alpha` the
indices of factor :math:`\\alpha` and :math:`\\bar v_0` every other (latent)
index (Yılmaz, Cemgil & Şimşekli, "Generalised coupled tensor factorisation",
NIPS 2011).

This module is pure string and tuple work: it imports nothing but the standard
library, so every other module can depend on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from numbers import Integral

__all__ = ["Model", "IndexSizes", "check_latent_sizes", "cp_model_string", "mode_letters",
           "tucker_model"]

_MODEL_PATTERN = re.compile(r"^[A-Za-z]+(,[A-Za-z]+)*->[A-Za-z]+$")


class IndexSizes(Mapping):
    """Read-only, hashable ``{index: size}``: a bound model's sizes, so a
    model can key caches (planned contractions) and cannot be changed after
    it is built."""

    __slots__ = ("_sizes", "_hash")

    def __init__(self, sizes):
        self._sizes = dict(sizes)
        self._hash = hash(frozenset(self._sizes.items()))

    def __getitem__(self, index):
        return self._sizes[index]

    def __iter__(self):
        return iter(self._sizes)

    def __len__(self):
        return len(self._sizes)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return repr(self._sizes)

    def __reduce__(self):
        return IndexSizes, (self._sizes,)


@dataclass(frozen=True)
class Model:
    """A PLTF model: its factors' index strings, the observed indices, and sizes.

    Build one with :meth:`Model.parse`; give it sizes with :meth:`Model.bind`.

    Attributes
    ----------
    string : str
        The model string as given (white space removed).
    factors : tuple of str
        Index string of each factor, in model order.
    output : str
        The observed indices, in the order of the data's axes.
    sizes : IndexSizes or None
        Size of every index once bound (``None`` before :meth:`bind`): a
        read-only mapping, so a model is hashable and never changes.
    fixed : frozenset of int
        Positions of the factors that are fixed (given, never updated).
    """

    string: str
    factors: tuple
    output: str
    sizes: IndexSizes | None = None
    fixed: frozenset = frozenset()

    def __post_init__(self):
        if self.sizes is not None and not isinstance(self.sizes, IndexSizes):
            object.__setattr__(self, "sizes", IndexSizes(self.sizes))
        object.__setattr__(self, "factors", tuple(self.factors))
        object.__setattr__(self, "fixed", frozenset(self.fixed))

    # ------------------------------------------------------------------ parse
    @classmethod
    def parse(cls, string):
        """Parse ``"ab,bc->ac"``-style strings.

        Raises
        ------
        ValueError
            For a malformed string, an index repeated inside one factor or in
            the output, or an output index that no factor carries.
        """
        if isinstance(string, Model):
            return string
        if not isinstance(string, str):
            raise TypeError(
                f"The model must be a string such as 'ik,kj->ij', got {type(string).__name__}."
            )
        compact = "".join(string.split())
        if not _MODEL_PATTERN.match(compact):
            raise ValueError(
                f"Malformed model string {string!r}: expected comma-separated factor "
                "indices, '->' and the observed indices, each index a single letter, "
                "e.g. 'ik,kj->ij' or 'ir,jr,kr->ijk'."
            )
        lhs, output = compact.split("->")
        factors = tuple(lhs.split(","))
        if len(factors) < 2:
            raise ValueError(
                f"Model {compact!r} has one factor; a factorization needs at least two "
                "(e.g. 'ik,kj->ij')."
            )
        for position, factor in enumerate(factors):
            repeated = sorted({c for c in factor if factor.count(c) > 1})
            if repeated:
                raise ValueError(
                    f"Model {compact!r}: index {repeated[0]!r} is repeated inside factor "
                    f"{position} ({factor!r}); each index may appear once per factor."
                )
        repeated = sorted({c for c in output if output.count(c) > 1})
        if repeated:
            raise ValueError(
                f"Model {compact!r}: observed index {repeated[0]!r} is repeated in the output."
            )
        carried = set("".join(factors))
        missing = [c for c in output if c not in carried]
        if missing:
            raise ValueError(
                f"Model {compact!r}: observed index {missing[0]!r} is carried by no factor."
            )
        return cls(string=compact, factors=factors, output=output)

    # ----------------------------------------------------------- properties
    @property
    def n_factors(self):
        """Number of factors."""
        return len(self.factors)

    @property
    def indices(self):
        """All indices, observed first (in output order) then latent."""
        return self.output + self.latent

    @property
    def latent(self):
        """Latent indices (summed over), in order of first appearance."""
        seen = []
        for factor in self.factors:
            for c in factor:
                if c not in self.output and c not in seen:
                    seen.append(c)
        return "".join(seen)

    @property
    def free(self):
        """Positions of the factors that inference updates (not fixed)."""
        return tuple(a for a in range(self.n_factors) if a not in self.fixed)

    @property
    def observed_shape(self):
        """Shape of the data tensor (requires a bound model)."""
        self._require_sizes()
        return tuple(self.sizes[c] for c in self.output)

    def factor_shape(self, alpha):
        """Shape of factor ``alpha`` (requires a bound model)."""
        self._require_sizes()
        return tuple(self.sizes[c] for c in self.factors[alpha])

    def sample_factor(self):
        """Position of the sample-mode factor, or ``None`` if there is none.

        The sample-mode factor is the one free factor that carries the first
        observed index (axis 0) and no other observed index, so its rows are
        conditionally independent given the other factors (fold-in works).
        """
        axis0 = self.output[0]
        carriers = [a for a, f in enumerate(self.factors) if axis0 in f]
        if len(carriers) != 1 or carriers[0] in self.fixed:
            return None
        alpha = carriers[0]
        if any(c in self.output for c in self.factors[alpha] if c != axis0):
            return None
        return alpha

    # ------------------------------------------------------------------ bind
    def bind(self, observed_shape, latent_sizes=None, fixed_shapes=None):
        """Return a copy with every index size set.

        Parameters
        ----------
        observed_shape : tuple of int
            Shape of the data; its length must equal the number of observed
            indices.
        latent_sizes : int or dict, default=None
            One int for every latent index whose size no fixed factor sets,
            or a dict ``{index: size}``.
        fixed_shapes : dict, default=None
            ``{position: shape}`` of the fixed factors. Their shapes set the
            sizes of their indices; a conflict with the data or with
            ``latent_sizes`` raises.

        Raises
        ------
        ValueError
            When the data's number of dimensions does not match the model,
            when sizes conflict, when a latent size is missing or < 1.
        """
        observed_shape = tuple(int(s) for s in observed_shape)
        if len(observed_shape) != len(self.output):
            raise ValueError(
                f"Model {self.string!r} describes {len(self.output)}-way data "
                f"(observed indices {self.output!r}) but the data have "
                f"{len(observed_shape)} dimensions (shape {observed_shape})."
            )
        sizes = dict(zip(self.output, observed_shape))
        fixed_shapes = dict(fixed_shapes or {})
        for alpha, shape in sorted(fixed_shapes.items()):
            if not isinstance(alpha, Integral) or not 0 <= alpha < self.n_factors:
                raise ValueError(
                    f"Model {self.string!r} has factors 0..{self.n_factors - 1}; "
                    f"there is no factor {alpha!r} to fix."
                )
            factor = self.factors[alpha]
            shape = tuple(int(s) for s in shape)
            if len(shape) != len(factor):
                raise ValueError(
                    f"Fixed factor {alpha} ({factor!r}) must have {len(factor)} "
                    f"dimensions, got shape {shape}."
                )
            for c, s in zip(factor, shape):
                if sizes.setdefault(c, s) != s:
                    where = "the data" if c in self.output else "another fixed factor"
                    raise ValueError(
                        f"Fixed factor {alpha} ({factor!r}) has shape {shape}: index "
                        f"{c!r} has size {s} there but {sizes[c]} in {where}."
                    )
        check_latent_sizes(latent_sizes, [self])
        for c in self.latent:
            if isinstance(latent_sizes, dict):
                if c in latent_sizes:
                    given = _positive_size(latent_sizes[c], c)
                    if sizes.setdefault(c, given) != given:
                        raise ValueError(
                            f"Latent index {c!r} is given size {given} but a fixed "
                            f"factor sets it to {sizes[c]}."
                        )
            elif latent_sizes is not None and c not in sizes:
                sizes[c] = _positive_size(latent_sizes, c)
            if c not in sizes:
                raise ValueError(
                    f"Model {self.string!r}: no size for latent index {c!r}; give "
                    "n_components as an int or a dict with every latent index."
                )
        return replace(self, sizes=sizes, fixed=frozenset(fixed_shapes))

    def _require_sizes(self):
        if self.sizes is None:
            raise ValueError(f"Model {self.string!r} has no sizes yet; call bind first.")

    def __str__(self):
        return self.string


def check_latent_sizes(n_components, models):
    """Raise unless every key of ``n_components``, where it is a dict
    ``{index: size}``, is a latent index of one of ``models`` (parsed or
    bound :class:`Model`; one for a single tensor).

    The one check of a dict of latent sizes against the model strings, for
    one model (:meth:`Model.bind`) and for several
    (:func:`~sklearn_pltf.engine._coupled.bind_models`): a key no model has
    would otherwise be dropped in silence. The sizes themselves are
    :meth:`Model.bind`'s to check (an int >= 1 each).
    """
    if not isinstance(n_components, dict):
        return
    latent = []
    for model in models:
        latent.extend(c for c in model.latent if c not in latent)
    unknown = sorted((key for key in n_components
                      if not isinstance(key, str) or key not in latent), key=repr)
    if not unknown:
        return
    named = ", ".join(map(repr, unknown))
    observed = {c for model in models for c in model.output}
    hint = ("; its keys are latent index letters" if any(not isinstance(k, str) for k in unknown)
            else "; the data's own indices take their sizes from the data"
            if any(k in observed for k in unknown) else "")
    if len(models) == 1:
        where = f"Model {models[0].string!r} has latent indices {', '.join(latent) or 'none'}"
        tail = "which it has not"
    else:
        strings = ", ".join(repr(m.string) for m in models)
        where = f"The models {strings} have latent indices {', '.join(latent) or 'none'}"
        tail = "which none of them has"
    raise ValueError(f"{where}; n_components names {named}, {tail}{hint}.")


def _positive_size(value, index):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"The size of latent index {index!r} must be an int, got {value!r}.")
    if value < 1:
        raise ValueError(f"The size (rank) of latent index {index!r} must be >= 1, got {value}.")
    return int(value)


def mode_letters(ndim):
    """Index letters for the data's axes ('a', 'b', ...), at most 25 axes."""
    if ndim > 25:
        raise ValueError(f"At most 25-way data are supported, got {ndim} dimensions.")
    return "abcdefghijklmnopqrstuvwxy"[:ndim]


def cp_model_string(ndim):
    """The CP model string of ``ndim``-way data: ``"az,bz,cz->abc"`` for 3."""
    modes = mode_letters(ndim)
    return ",".join(m + "z" for m in modes) + "->" + modes


def tucker_model(ndim, ranks):
    """The Tucker model string of ``ndim``-way data and its core's sizes:
    ``("aA,bB,cC,ABC->abc", {"A": 2, "B": 3, "C": 2})`` for 3 modes and ranks
    (2, 3, 2). ``ranks`` is one int for every mode or one per mode."""
    ranks = (ranks,) * ndim if isinstance(ranks, Integral) else tuple(ranks)
    if len(ranks) != ndim:
        raise ValueError(
            f"n_components has {len(ranks)} ranks but the data have {ndim} modes; "
            "give one rank per mode or a single int."
        )
    modes = mode_letters(ndim)
    core = modes.upper()
    spec = ",".join(m + c for m, c in zip(modes, core)) + "," + core + "->" + modes
    return spec, dict(zip(core, ranks))
