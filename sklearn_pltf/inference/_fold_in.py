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
algorithm.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fold_in", "with_factor"]


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
        whole = whole.copy()
        index = [slice(None)] * whole.ndim
        index[axis] = rows
        whole[tuple(index)] = part
        return whole

    return with_factor(state, alpha, sub_state, placed)


def fold_in(kernel, state, contractor, priors, alpha, axis, subproblem, *, tol, max_iter):
    """Update factor ``alpha`` of ``state`` (its samples along ``axis``) by
    ``kernel.step``, each sample until its own relative change is below
    ``tol``, at most ``max_iter`` steps.

    Parameters
    ----------
    kernel : module
        The optimiser whose ``step`` updates the free factor.
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
        largest entry.
    max_iter : int
        At most this many steps.

    Returns
    -------
    state : state of ``kernel``
    """
    others = tuple(a for a in range(state.mean[alpha].ndim) if a != axis)
    rows = np.arange(state.mean[alpha].shape[axis])  # the samples in the current problem
    sub_state, sub_contractor, sub_priors = state, contractor, priors
    active = np.ones(rows.size, dtype=bool)
    for _ in range(max_iter):
        new, _ = kernel.step(sub_state, sub_contractor, sub_priors, with_objective=False)
        old_mean, new_mean = sub_state.mean[alpha], new.mean[alpha]
        # Change relative to the sample's largest entry: entries near zero
        # (common under sparse priors) would never settle relative to themselves.
        change = np.max(np.abs(new_mean - old_mean), axis=others) / np.maximum(
            np.max(old_mean, axis=others), 1e-300
        )
        keep = np.expand_dims(active, others)
        sub_state = with_factor(sub_state, alpha, new, lambda updated, old: np.where(keep, updated, old))
        active &= change > tol
        if not active.any():
            break
        if 2 * np.count_nonzero(active) <= active.size:
            state = _put_samples(state, sub_state, alpha, axis, rows)
            local = np.flatnonzero(active)
            rows = rows[local]
            sub_contractor, sub_priors = subproblem(rows)
            sub_state = with_factor(
                sub_state, alpha, sub_state, lambda value, _: np.take(value, local, axis=axis)
            )
            active = np.ones(rows.size, dtype=bool)
    return _put_samples(state, sub_state, alpha, axis, rows)
