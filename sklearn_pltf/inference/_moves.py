"""Delete moves at convergence: a VB run that stopped with a component the
data do not need tries the fit without it, and keeps that fit where its
bound is higher.

Coordinate ascent on the bound of a model with more components than the
data need stops, or crawls for hundreds of sweeps, where a redundant
component still holds mass: removing it would free its KL cost (many nats)
but every single sweep first loses the fit it gives, so the path to the
better optimum leads through a plateau the stopping rule cannot tell from
convergence (:mod:`._convergence`), or through no path at all. A delete
move (Hughes, Kim & Sudderth 2015; the birth and merge moves of memoized VB,
Hughes & Sudderth 2013, are its kin) proposes the state without one
component and runs VB from there; it is kept only where the bound it
reaches is higher, so the bound a fit returns never falls.

At a convergence the move tries one component: per latent index, the
components in order of increasing mass (:func:`~._relevance.component_masses`)
are read until one whose removal (its elements in every free factor that
carries the index at zero) lowers the bound by more than ``tol`` (a live
one: removing a dead one changes nothing), and of these the one whose
removal costs least is tried, all at the rates learned at the state the run
stopped at. One VB sweep at those rates gives the removed elements the q of
a dead component, and VB runs from there for at most
:data:`TRIAL_ITERATIONS` iterations (the shortest run the stopping rule can
stop), given up once even its largest recent gain in every iteration left
would not take it above the bound it left by ``tol``. It is kept where it
ends above that (and runs on to convergence, where another move is tried),
else dropped, and the run returns the state it stopped at, as it was: a
fit whose components are all needed is the fit it would have been. A kept
move counts as one iteration, its objective the bound it reached (the
dip where it starts is not an iteration of the fit).
"""

from __future__ import annotations

import numpy as np

from ..engine._array_api import to_numpy
from ._convergence import _BLOCK, _N_BLOCKS, run_to_convergence
from ._relevance import component_masses, without_component

__all__ = ["with_delete_moves", "TRIAL_ITERATIONS"]

#: A trial's iterations: the fewest after which the stopping rule can stop.
TRIAL_ITERATIONS = _BLOCK * _N_BLOCKS + 1


def _cheapest_live_removal(kernel, at_rates, state, value, contractor, priors, tol):
    """The state that starts the trial (module docstring), or None where
    every component is dead: of the live component whose removal lowers the
    bound (``value`` at ``state``) least, at the rates learned at ``state``
    (``at_rates``: VB's kernel, whose step and bound read the rates given)."""
    model = contractor.model
    point = kernel.point(state)
    at = kernel.priors_at(state, priors)
    means = [None if mean is None else to_numpy(mean) for mean in point.mean]
    best = None
    for index in model.latent:
        carrying = [alpha for alpha, factor in enumerate(model.factors)
                    if index in factor and at.shape[alpha] is not None]
        if not carrying or model.sizes[index] == 1:
            continue  # the last component is never removed
        for component in np.argsort(component_masses(model, means, index), kind="stable"):
            removed = without_component(model, point, at, carrying, index, component)
            drop = value - at_rates.objective(removed, contractor, at)
            if not np.isfinite(drop):
                continue  # X̂ at zero where a count is observed
            if drop > tol:
                if best is None or drop < best[0]:
                    best = (drop, removed)
                break
    if best is None:
        return None
    # One sweep at the rates of ``state`` gives the removed component the q
    # of a dead one, every moment consistent, before any rate is learned.
    swept, _ = at_rates.step(best[1], contractor, at, with_objective=False)
    return kernel.moved(state, swept, priors)


def _out_of_reach(target, budget):
    """``give_up`` of a trial that must end above ``target`` within
    ``budget`` iterations: True once its bound, rising by the largest gain
    of its last :data:`~._convergence._BLOCK` iterations in each one left,
    would still end below (the gains of a run that converges shrink)."""
    def give_up(values):
        left = budget - len(values)
        if len(values) < _BLOCK or left <= 0 or values[-1] > target:
            return False
        largest = max(np.diff(values[-(_BLOCK + 1):]).max(), 0.0)
        return values[-1] + largest * left < target
    return give_up


def with_delete_moves(kernel, at_rates, state, objectives, converged, contractor, priors,
                      max_iter, tol, report=None, acceleration="squarem"):
    """Delete moves from the end of a run of ``kernel`` (module docstring).

    Parameters
    ----------
    kernel, contractor, priors, tol, report, acceleration
        As :func:`~._convergence.run_to_convergence` took them.
    at_rates : OptimizerKernel
        VB's kernel (:mod:`~sklearn_pltf.inference.vb`): its ``step`` and
        ``objective`` at the rates given, those ``kernel`` learned at
        ``state`` (``kernel`` itself where it learns none).
    state, objectives, converged
        What the run returned.
    max_iter : int
        The run's iterations in all (a kept move counts as one; a trial runs
        at most :data:`TRIAL_ITERATIONS`).

    Returns
    -------
    state, objectives, converged
        As given where no move was kept; else the kept fit's: each kept
        move one more objective (the bound it reached), then those of the
        run it goes on with.
    """
    while converged:
        left = max_iter - len(objectives)
        if left <= 0:
            break
        found = _cheapest_live_removal(kernel, at_rates, state, objectives[-1], contractor, priors,
                                       tol)
        if found is None:
            break
        try:
            budget = min(TRIAL_ITERATIONS, left)
            trial, values, trial_converged = run_to_convergence(
                kernel, found, contractor, priors, budget, tol, acceleration=acceleration,
                give_up=_out_of_reach(objectives[-1] + tol, budget))
        except FloatingPointError:  # a trial that leaves the floats is dropped
            break
        if not values[-1] > objectives[-1] + tol:
            break
        # The kept move is one iteration, its bound the one it reached.
        objectives = objectives + values[-1:]
        state, converged = trial, trial_converged
        if not converged and len(objectives) < max_iter:
            state, more, converged = run_to_convergence(
                kernel, state, contractor, priors, max_iter - len(objectives), tol,
                acceleration=acceleration)
            objectives = objectives + more
        if report is not None:
            report(len(objectives), objectives)
    return state, objectives, converged
