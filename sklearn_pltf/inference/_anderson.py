"""Anderson acceleration of the whole-model VB and EM steps, with restarts
and a monotone safeguard.

A sweep is a fixed-point map :math:`x \\leftarrow G(x)` of the free
factors' log-coordinates (:mod:`._acceleration`). Anderson's method (type
II; Walker & Ni, SIAM J. Numer. Anal. 2011) keeps the last ``m`` iterates'
differences :math:`\\Delta X` and residual differences :math:`\\Delta F`,
:math:`f = G(x) - x`, and moves to

.. math::

    x' = G(x) - (\\Delta X + \\Delta F)\\, \\gamma, \\qquad
    \\gamma = \\arg\\min_\\gamma \\lVert f - \\Delta F \\gamma \\rVert^2
              + \\lambda \\lVert \\gamma \\rVert^2,

a secant method of one sweep per iteration. As in DAAREM (Henderson &
Varadhan, JCGS 2019) the least squares are damped (:math:`\\lambda`, a
small fraction of :math:`\\lVert \\Delta F \\rVert^2`), the history
restarts after ``m`` iterations and after a refused step, and a step is
kept only if the objective at :math:`x'` is at least the last one;
otherwise the iteration returns :math:`G(x)`, whose objective is at least
the last since a sweep is coordinate ascent. No element moves further than
a factor of :math:`e^2` from :math:`G(x)`.
"""

from __future__ import annotations

import numpy as np

from ._acceleration import _LARGEST_LOG_MOVE, _coordinates, _free_positions, _from_coordinates

__all__ = ["AndersonHistory", "anderson_iteration"]

#: Iterates kept (and the length of a run of steps between restarts).
MEMORY = 10
#: λ as a fraction of the mean squared column norm of ΔF.
_DAMPING = 1e-8


class AndersonHistory:
    """The iterates and residuals of the current run (:func:`anderson_iteration`)."""

    def __init__(self, memory=MEMORY):
        self.memory, self.points, self.residuals = memory, [], []

    def clear(self):
        self.points, self.residuals = [], []

    def push(self, point, residual):
        if len(self.points) > self.memory:  # a run of m steps ends: restart
            self.clear()
        self.points.append(point)
        self.residuals.append(residual)

    def mixing(self):
        """``(ΔX + ΔF) γ``, or None before two iterates."""
        if len(self.points) < 2:
            return None
        dx = np.diff(np.stack(self.points, axis=1), axis=1)
        df = np.diff(np.stack(self.residuals, axis=1), axis=1)
        gram = df.T @ df
        damping = _DAMPING * np.trace(gram) / gram.shape[0]
        try:
            gamma = np.linalg.solve(gram + damping * np.eye(gram.shape[0]),
                                    df.T @ self.residuals[-1])
        except np.linalg.LinAlgError:
            return None
        return (dx + df) @ gamma


def _flat(parts):
    return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts])


def _finite(values):
    """``values`` with the non-finite ones (EM's zeros: log 0) at 0, for the
    least squares."""
    return np.where(np.isfinite(values), values, 0.0)


def _unflat(values, like):
    parts, start = [], 0
    for part in like:
        parts.append(values[start:start + part.size].reshape(part.shape))
        start += part.size
    return parts


def anderson_iteration(kernel, state, value, contractor, priors, history):
    """One Anderson-accelerated iteration of ``kernel.step`` from ``state``
    (module docstring): one sweep, and the secant step if it raises the
    objective. Returns ``(state, objective)``, the objective at least
    ``value``; ``history`` (:class:`AndersonHistory`) carries the run. As
    SQUAREM (:func:`~._acceleration.squarem_cycle`), it extrapolates the
    kernel's ``point``, and a refused step returns the sweep's state as it is."""
    plain, _ = kernel.step(state, contractor, priors, with_objective=False)
    at_start, at_plain = kernel.point(state), kernel.point(plain)
    groups = _free_positions(at_start, priors)
    start = _coordinates(at_start, groups)
    mapped = _coordinates(at_plain, groups)
    if not all(isinstance(part, np.ndarray) for part in mapped):
        raise ValueError("acceleration='anderson' runs on NumPy arrays: its least squares "
                         "are on the host. Use acceleration='squarem' for arrays on a device.")
    x, gx = _finite(_flat(start)), _flat(mapped)
    history.push(x, _finite(gx) - x)
    mixing = history.mixing()
    if mixing is not None:
        # A coordinate G(x) leaves non-finite (an EM zero) stays so: the
        # state then takes G(x)'s value there (_from_coordinates).
        secant = gx + np.clip(-mixing, -_LARGEST_LOG_MOVE, _LARGEST_LOG_MOVE)
        # A kernel that learns its rates projects onto those learned at G(x),
        # and searches them at the secant point from there.
        candidate = kernel.moved(plain, _from_coordinates(
            at_start, _unflat(secant, mapped), groups, kernel.priors_at(plain, priors),
            fallback=at_plain), priors)
        candidate_value = float(kernel.objective(candidate, contractor, priors))
        if np.isfinite(candidate_value) and candidate_value >= value:
            return candidate, candidate_value
        history.clear()
    return plain, float(kernel.objective(plain, contractor, priors))
