"""The fold-in: one factor inferred for new samples, every other factor held.

Samples are conditionally independent given the held factors, so each is
treated on its own, as scikit-learn's LDA treats each document in its E-step:
every sample starts from the same values and stops updating once its own
entries change by less than ``tol`` relative to its largest entry. A sample's
result so depends on its data alone, not on the other samples in the batch or
their order. Once half of the samples still updating have stopped, the rest go
on with a contractor over their own entries only: the same numbers, at a cost
that follows the samples still moving.

The update is any optimiser's ``step(state, contractor, priors,
with_objective=False)`` (:mod:`~sklearn_pltf.inference.vb`,
:mod:`~sklearn_pltf.inference.em`), passed in, so this helper imports no
algorithm. With every other factor held, a step is a fixed-point map
:math:`F` of the free factor's coordinates :math:`\\theta` (VB's Gamma
shapes: the optimiser's ``free_parameter``), and a linearly convergent
one. For an optimiser that names its coordinates, each cycle accelerates
it by SQUAREM (Varadhan & Roland
2008, scheme S3), per sample: with :math:`r = F(\\theta) - \\theta` and
:math:`v = F(F(\\theta)) - 2F(\\theta) + \\theta` over the sample's
coordinates, the step length :math:`s = -\\lVert r \\rVert / \\lVert v \\rVert`
(at most -1; -1 gives :math:`F(F(\\theta))`) extrapolates to
:math:`\\theta' = \\theta - 2 s r + s^2 v`, projected onto the coordinates'
domain (``with_free_parameter``), and one plain step from there ends the
cycle. Its change is what the stopping rule reads, so a sample stops only
where a plain step moves it by less than ``tol``: near the fixed point of
:math:`F` itself, wherever the extrapolation went; a sample whose
extrapolated point moves more under that step than the second plain step
moved keeps the plain steps. EM names no coordinates and takes plain
steps: under a prior shape of one its factors reach zero, which a
multiplicative update cannot leave once an extrapolation lands there.
"""

from __future__ import annotations

import numpy as np

from ..engine._array_api import device_of, namespace_of, to_numpy

__all__ = ["fold_in", "with_factor"]


def _take(array, rows, axis):
    """``array``'s slices ``rows`` (host positions) along ``axis``."""
    if isinstance(array, np.ndarray):
        return np.take(array, rows, axis=axis)
    xp = namespace_of(array)
    return xp.take(array, xp.asarray(rows, device=device_of(array)), axis=axis)


def with_factor(state, alpha, source, combine):
    """``state`` with every field's entry for factor α set to
    ``combine(source's entry, state's entry)``; the other factors untouched."""
    return type(state)(*(
        tuple(combine(from_source[alpha], own[alpha]) if a == alpha else own[a]
              for a in range(len(own)))
        for from_source, own in zip(source, state)
    ))


def _put_samples(state, sub_state, alpha, axis, rows):
    """``state`` with factor α's entries for samples ``rows`` (along ``axis``)
    taken from ``sub_state``, which holds just those samples."""

    def placed(part, whole):
        if not isinstance(whole, np.ndarray):  # no in-place writes in the array API
            return _placed_by_where(part, whole, axis, rows)
        whole = whole.copy()
        index = [slice(None)] * whole.ndim
        index[axis] = rows
        whole[tuple(index)] = part
        return whole

    return with_factor(state, alpha, sub_state, placed)


def _placed_by_where(part, whole, axis, rows):
    """``whole`` with its slices ``rows`` along ``axis`` replaced by ``part``,
    for arrays of any namespace."""
    xp = namespace_of(whole)
    source = np.zeros(whole.shape[axis], dtype=np.int64)
    source[rows] = np.arange(len(rows))
    spread = xp.take(part, xp.asarray(source, device=device_of(whole)), axis=axis)
    return _where_host(_along(np.isin(np.arange(whole.shape[axis]), rows), axis, whole.ndim),
                       spread, whole)


def _along(vector, axis, ndim):
    """A host vector reshaped to lie along ``axis`` of an ``ndim``-array."""
    return vector.reshape(tuple(-1 if a == axis else 1 for a in range(ndim)))


def _where_host(condition, a, b):
    """``where(condition, a, b)`` for a host Boolean ``condition`` and arrays
    of any namespace."""
    if isinstance(a, np.ndarray):
        return np.where(condition, a, b)
    xp = namespace_of(a)
    return xp.where(xp.asarray(condition, device=device_of(a)), a, b)


#: The longest SQUAREM step length: far beyond where the map is linear, an
#: extrapolation only costs the cycle.
MAX_STEP_LENGTH = 100.0


def _squarem_cycle(kernel, state, contractor, priors, alpha, others):
    """One SQUAREM cycle of factor α (module docstring): three steps.
    Returns the new state and each sample's change in its last, plain step."""
    first, _ = kernel.step(state, contractor, priors, with_objective=False)
    second, _ = kernel.step(first, contractor, priors, with_objective=False)
    theta, theta_first = kernel.free_parameter(state, alpha), kernel.free_parameter(first, alpha)
    r = theta_first - theta
    v = kernel.free_parameter(second, alpha) - theta_first - r
    xp = namespace_of(r)
    r_norm = xp.sqrt(xp.sum(r * r, axis=others, keepdims=True))
    v_norm = xp.sqrt(xp.sum(v * v, axis=others, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        length = xp.where(v_norm > 0, -r_norm / v_norm, -1.0)
    length = xp.clip(length, -MAX_STEP_LENGTH, -1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        start = kernel.with_free_parameter(state, alpha, theta - 2 * length * r + length**2 * v,
                                           priors)
        new, _ = kernel.step(start, contractor, priors, with_objective=False)
    plain_change = _change(first.mean[alpha], second.mean[alpha], others)
    change = _change(start.mean[alpha], new.mean[alpha], others)
    # Safeguard: a sample whose extrapolation moves more under a plain step
    # than two plain steps did (or is not finite) keeps the plain steps.
    worse = ~(change <= plain_change)
    if np.any(worse):
        ndim = first.mean[alpha].ndim
        plain = _along(worse, next(a for a in range(ndim) if a not in others), ndim)
        new = with_factor(new, alpha, second,
                          lambda from_plain, own: _where_host(plain, from_plain, own))
        change = np.where(worse, plain_change, change)
    return new, change


def _change(old, new, others):
    """Each sample's largest change relative to its largest entry (a host
    vector): entries near zero (common under sparse priors) would never
    settle relative to themselves."""
    xp = namespace_of(old)
    largest = xp.clip(xp.max(old, axis=others), 1e-300, None)
    change = xp.max(xp.abs(new - old), axis=others) / largest
    return to_numpy(change).reshape(-1)


def _plain_step(kernel, state, contractor, priors, alpha, others):
    """One step of factor α, and each sample's change."""
    new, _ = kernel.step(state, contractor, priors, with_objective=False)
    return new, _change(state.mean[alpha], new.mean[alpha], others)


def fold_in(kernel, state, contractor, priors, alpha, axis, subproblem, *, tol, max_iter):
    """Update factor ``alpha`` of ``state`` (its samples along ``axis``) by
    ``kernel.step``, in SQUAREM cycles if ``kernel`` names its coordinates,
    each sample until its own relative change in a plain step is below
    ``tol``, at most ``max_iter`` steps.

    Parameters
    ----------
    kernel : module
        The optimiser whose ``step`` updates the free factor; if it has
        ``free_parameter`` and ``with_free_parameter`` (its coordinates),
        the steps are accelerated.
    state : state of ``kernel``
        The start; only ``alpha`` is free in ``priors``.
    contractor, priors
        For all the samples.
    alpha, axis : int
        The factor's position, and its sample axis.
    subproblem : callable
        ``subproblem(rows) -> (contractor, priors)`` for the samples ``rows``
        alone.
    tol : float
        A sample stops when no entry changes by more than ``tol`` times its
        largest entry in the plain step that ends a cycle.
    max_iter : int
        At most this many steps (three a cycle; at least one).

    Returns
    -------
    state : state of ``kernel``
    """
    others = tuple(a for a in range(state.mean[alpha].ndim) if a != axis)
    rows = np.arange(state.mean[alpha].shape[axis])  # the samples in the current problem
    sub_state, sub_contractor, sub_priors = state, contractor, priors
    active = np.ones(rows.size, dtype=bool)
    accelerated = hasattr(kernel, "free_parameter")
    # A cycle is three steps: below that budget, plain steps keep max_iter's promise.
    advance, cost = (_squarem_cycle, 3) if accelerated and max_iter >= 3 else (_plain_step, 1)
    for _ in range(max(max_iter // cost, 1)):
        new, change = advance(kernel, sub_state, sub_contractor, sub_priors, alpha, others)
        keep = _along(active, axis, len(others) + 1)
        sub_state = with_factor(sub_state, alpha, new,
                                lambda updated, old: _where_host(keep, updated, old))
        active &= change > tol
        if not active.any():
            break
        if 2 * np.count_nonzero(active) <= active.size:
            state = _put_samples(state, sub_state, alpha, axis, rows)
            local = np.flatnonzero(active)
            rows = rows[local]
            sub_contractor, sub_priors = subproblem(rows)
            sub_state = with_factor(sub_state, alpha, sub_state,
                                    lambda value, _: _take(value, local, axis))
            active = np.ones(rows.size, dtype=bool)
    return _put_samples(state, sub_state, alpha, axis, rows)
