"""The states and step reports that the variational and EM algorithms
share: the Poisson–Gamma PLTF ones (:mod:`.vb`, :mod:`.em`) and RESCAL's
(:mod:`.relational.rescal`), whose estimators read them the same way; and
the part of the kernel protocol (:class:`~._driver.OptimizerKernel`) that
is the same for every kernel that learns none of its priors."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["INITIAL_SHAPE", "VBState", "VBInfo", "EMState", "EMInfo", "point", "moved",
           "priors_at", "advance"]

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


# The kernel protocol's members for a kernel that learns none of its priors
# (:class:`~._driver.OptimizerKernel`): its state is its point.
def point(state):
    """``state`` itself: the kernel keeps nothing beside its point."""
    return state


def moved(state, point, priors):
    """``point`` itself: nothing of ``state`` goes on with it."""
    return point


def priors_at(state, priors):
    """``priors``: a step reads them as given."""
    return priors


def advance(state, priors):
    """None: the kernel has one stage."""
    return None
