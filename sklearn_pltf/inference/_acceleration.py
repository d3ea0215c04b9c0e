"""SQUAREM for the whole-model VB and EM steps, with a monotone safeguard.

A VB or EM sweep is a fixed-point map :math:`\\theta \\leftarrow F(\\theta)`
of the free factors' parameters, and plain iteration of it converges
linearly, slowly where components trade mass (NMF-like problems). SQUAREM
(Varadhan & Roland 2008, scheme S3) extrapolates from two plain steps: with
:math:`r = F(\\theta) - \\theta` and :math:`v = F(F(\\theta)) - 2F(\\theta) +
\\theta`, the step length :math:`s = -\\lVert r \\rVert / \\lVert v \\rVert`,
clipped to :math:`[-s_{\\max}, -1]`, gives

.. math::

    \\theta' = \\theta - 2 s r + s^2 v,

and one plain step from :math:`\\theta'` ends the cycle (:math:`s = -1`
gives three plain steps). The coordinates are logs, so extrapolation keeps
every parameter positive: VB's Gamma shapes and scales, projected back onto
what a step can produce (shape at least the prior shape, scale at most one
over the prior rate), and EM's point estimates. No element moves further
than a factor of :math:`e^2` from :math:`F(F(\\theta))`.

**Safeguard.** The cycle's result is kept only if its objective (VB's bound,
EM's log joint) is finite and at least that of :math:`\\theta`, up to
:data:`_TIE` ε times its size (the two then differ by rounding only); otherwise
the cycle returns :math:`F(F(\\theta))`, two plain steps, whose objective
is at least that of :math:`\\theta` since each step is coordinate ascent. So
the objective never decreases from cycle to cycle beyond its rounding. The
allowance matters where the iteration drifts along a direction in which the
objective is flat: there a strict comparison is decided by rounding, which
differs between routes to the same numbers (NumPy and another array
namespace, dense and sparse), and a refusal in one and not the other sends
their paths apart (:math:`s_{\\max}` changes with it). :math:`s_{\\max}` starts
at 1 and is multiplied by 4 each time an extrapolation of that length is
kept, divided by 4 when one is refused (the adaptive scheme of Varadhan &
Roland's reference implementation, ``mstep = 4``).

Tied positions (one array at several positions of the state, as RESCAL's
entity factor) are one set of coordinates.

A kernel whose state also holds learned priors
(:class:`~._hyperparameters.LearnedState`) is extrapolated in its point
(``point``, :class:`~._driver.OptimizerKernel`), projected with the priors
learned at :math:`F(F(\\theta))`, and the step from there searches its
priors on from those; a refused cycle returns :math:`F(F(\\theta))` as it
is, so the run goes on as if the extrapolation had not been tried.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine._array_api import namespace_of, to_numpy
from ._gamma import gamma_moments
from ._states import EMState, VBState

__all__ = ["squarem_cycle", "INITIAL_MAX_LENGTH"]

#: s_max at the start of a run (1: the first cycle is three plain steps).
INITIAL_MAX_LENGTH = 1.0
#: Factor by which s_max grows after a kept extrapolation of that length and
#: shrinks after a refused one.
_LENGTH_FACTOR = 4.0
#: An extrapolation whose objective is at most this many ε |value| below
#: the start's is kept (module docstring).
_TIE = 16.0
#: s_max never grows beyond this: far beyond where the map is linear, an
#: extrapolation only costs its cycle.
_LONGEST = 4.0**6
#: No element moves by more than this in its log-coordinate from where two
#: plain steps took it (a factor of e^2): an extrapolation far along a
#: direction where the map is not linear can reach values whose objective
#: the floats no longer resolve (sums of huge terms that cancel).
_LARGEST_LOG_MOVE = 2.0


def _free_positions(state, priors):
    """Each free factor's first position, and the positions tied to it
    (holding the same array). Held factors (no prior: fixed, or held during
    a fold-in) are not coordinates, unless tied to a free one."""
    arrays = state.shape if isinstance(state, VBState) else state.factors
    groups = {}
    for alpha, array in enumerate(arrays):
        first = next((beta for beta in groups if arrays[beta] is array), None)
        if first is not None:
            groups[first].append(alpha)
        elif array is not None and priors.shape[alpha] is not None:
            groups[alpha] = [alpha]
    return groups


def _coordinates(state, groups):
    """The log-coordinates of the free factors, one array (or two, VB's shape
    and scale) per group of tied positions."""
    with np.errstate(divide="ignore"):
        if isinstance(state, VBState):
            return [_log(field[alpha]) for alpha in groups for field in (state.shape, state.scale)]
        return [_log(state.factors[alpha]) for alpha in groups]


def _log(array):
    return namespace_of(array).log(array)


def _from_coordinates(template, coordinates, groups, priors, fallback):
    """``template`` with its free factors at ``coordinates``, projected onto
    what a step can produce; elements whose extrapolation is not finite
    take ``fallback``'s values."""
    values = iter(coordinates)
    if isinstance(template, VBState):
        columns = [list(field) for field in template]
        for alpha, positions in groups.items():
            xp = namespace_of(fallback.shape[alpha])
            shape = _finite_or(xp.exp(next(values)), fallback.shape[alpha])
            scale = _finite_or(xp.exp(next(values)), fallback.scale[alpha])
            shape = xp.maximum(shape, _prior(priors.shape, positions))
            scale = xp.minimum(scale, 1.0 / _prior(priors.rate, positions))
            for beta in positions:
                for field, value in zip(columns, (shape, scale) + gamma_moments(shape, scale)):
                    field[beta] = value
        return VBState(*(tuple(field) for field in columns))
    factors = list(template.factors)
    for alpha, positions in groups.items():
        value = _finite_or(namespace_of(fallback.factors[alpha]).exp(next(values)),
                           fallback.factors[alpha])
        for beta in positions:
            factors[beta] = value
    return EMState(tuple(factors))


def _prior(parameters, positions):
    """The prior parameter of a group of tied positions (the first one given)."""
    return next(parameters[beta] for beta in positions if parameters[beta] is not None)


def _finite_or(value, fallback):
    """``value`` where positive and finite, else ``fallback`` (an extrapolation
    through a zero, or beyond the floats). A selection on the device: asking
    the host whether every element is good would wait for the device."""
    xp = namespace_of(value)
    return xp.where(xp.isfinite(value) & (value > 0), value, fallback)


def squarem_cycle(kernel, state, value, contractor, priors, max_length):
    """One SQUAREM cycle of ``kernel.step`` from ``state`` (module docstring).

    Parameters
    ----------
    kernel : OptimizerKernel
        Its ``step`` is the map and its ``objective`` VB's bound or EM's log
        joint; the cycle extrapolates the states' ``point`` and steps on
        from the state ``moved`` there (:class:`~._driver.OptimizerKernel`).
    state : state of ``kernel``
        Its point a VBState or EMState.
    value : float
        The objective at ``state``.
    contractor, priors
        What the steps read.
    max_length : float
        The longest step length :math:`s_{\\max}` allowed now.

    Returns
    -------
    state : state of ``kernel``
        The cycle's result: a refused extrapolation returns the second plain
        step's state, which goes on from its own learned priors.
    value : float
        Its objective, at least ``value``.
    max_length : float
        :math:`s_{\\max}` for the next cycle.
    """
    first, _ = kernel.step(state, contractor, priors, with_objective=False)
    second, _ = kernel.step(first, contractor, priors, with_objective=False)
    points = [kernel.point(s) for s in (state, first, second)]
    groups = _free_positions(points[0], priors)
    theta, theta_first, theta_second = (_coordinates(p, groups) for p in points)
    with np.errstate(invalid="ignore"):  # EM's zeros: -inf - (-inf)
        r = [b - a for a, b in zip(theta, theta_first)]
        v = [c - 2 * b + a for a, b, c in zip(theta, theta_first, theta_second)]
    r_norm, v_norm = _norms(r, v)
    length = -r_norm / v_norm if v_norm > 0 and np.isfinite(v_norm) else -1.0
    length = float(np.clip(length, -max_length, -1.0))
    with np.errstate(invalid="ignore", over="ignore"):
        extrapolated = [
            second_t + namespace_of(t).clip(t - 2 * length * dr + length**2 * dv - second_t,
                                            -_LARGEST_LOG_MOVE, _LARGEST_LOG_MOVE)
            for t, dr, dv, second_t in zip(theta, r, v, theta_second)]
    # A kernel that learns its rates projects onto those learned at F(F(θ)),
    # and the step from the extrapolation searches them from there.
    start = _from_coordinates(points[0], extrapolated, groups, kernel.priors_at(second, priors),
                              fallback=points[2])
    new, info = kernel.step(kernel.moved(second, start, priors), contractor, priors,
                            with_objective=True)
    new_value = float(info.objective)
    if np.isfinite(new_value) and new_value >= value - _TIE * np.finfo(np.float64).eps * abs(value):
        if length <= -max_length:
            max_length = min(max_length * _LENGTH_FACTOR, _LONGEST)
        return new, new_value, max_length
    max_length = max(INITIAL_MAX_LENGTH, max_length / _LENGTH_FACTOR)
    return second, float(kernel.objective(second, contractor, priors)), max_length


def _norms(*groups):
    """The Euclidean norm of each group of arrays over all their coordinates,
    skipping those that are not finite (a factor element at zero under EM has
    log -inf there). Arrays on a device send their sums of squares to the
    host together, in one transfer: each transfer waits for the device."""
    sums = [_sum_of_squares(part) for parts in groups for part in parts]
    if sums and not isinstance(sums[0], np.generic):
        sums = to_numpy(namespace_of(sums[0]).stack(sums))
    values = iter(float(total) for total in sums)
    return [math.sqrt(sum(next(values) for _ in parts)) for parts in groups]


def _sum_of_squares(part):
    """Σ part² over the finite elements: a NumPy scalar, or a 0-d array of
    ``part``'s namespace, left on its device."""
    if not isinstance(part, np.ndarray):
        xp = namespace_of(part)
        return xp.sum(xp.square(xp.where(xp.isfinite(part), part, 0.0)))
    finite = np.isfinite(part)
    return np.sum(np.square(part[finite] if not finite.all() else part))
