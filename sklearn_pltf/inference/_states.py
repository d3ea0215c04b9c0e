"""The states and step reports that the variational and EM algorithms
share: the Poisson–Gamma PLTF ones (:mod:`.vb`, :mod:`.em`) and RESCAL's
(:mod:`.relational.rescal`), whose estimators read them the same way."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["INITIAL_SHAPE", "VBState", "VBInfo", "EMState", "EMInfo"]

# q starts as a Gamma of this shape around the initial means: concentrated
# enough that L is close to E, loose enough to move in the first step.
INITIAL_SHAPE = 10.0


class VBState(NamedTuple):
    """Variational parameters and the moments they imply. ``shape[α]``,
    ``scale[α]`` and ``digamma[α]`` are None for held factors."""

    shape: tuple
    scale: tuple
    mean: tuple
    geometric: tuple
    digamma: tuple  # ψ(shape), kept for the bound


class VBInfo(NamedTuple):
    """What one step reports: its ``objective``, the variational bound of the
    state it returns (None when the step was asked not to compute it)."""

    objective: float


class EMState(NamedTuple):
    """Current point estimate of every factor (held factors included)."""

    factors: tuple

    @property
    def mean(self):
        """The point estimate, under the name the estimators read for every kernel."""
        return self.factors

    geometric = mean


class EMInfo(NamedTuple):
    """What one step reports: its ``objective``, the log joint density of the
    state it returns (None when the step was asked not to compute it)."""

    objective: float
