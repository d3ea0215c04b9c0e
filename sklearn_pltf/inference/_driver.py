"""The optimiser driver: restarts of a VB or EM kernel to convergence, the
best one kept.

Every VB and EM fit of the Poisson–Gamma estimators runs here: the named
estimators, PLTF, RESCAL's tie, coupled tensors and the first batch of
``partial_fit`` (the allocation model's VB, one run from one start, runs the
same loop, :func:`~._convergence.run_to_convergence`, directly). An
estimator builds an :class:`OptimizerProblem`,
calls :func:`optimize` and sets its attributes from the
:class:`OptimizerResult`; what follows the loop (learned rates held, the
final fold-in) reads the result, never the estimator.

**The kernel protocol** (:class:`OptimizerKernel`; VB, EM, their
learned-rates wrapper, RESCAL's and coupled RESCAL's kernels, the
allocation model's VB). Every kernel has all of it, so the loop and the
accelerators call it without asking what a kernel has; and a kernel is
pure: what it learns along a run (learned priors, where their next search
starts, its stage) is in the state its step returns, never in the kernel,
so a step tried and dropped leaves no trace.

- ``init(...) -> state``, a start (the arguments are the kernel's own);
- ``step(state, contractor, priors, with_objective=True) -> (state, info)``,
  a map of the state, with ``info.objective`` the objective of the new
  state (VB's bound, EM's log joint; it never decreases from step to
  step; ``with_objective=False`` may skip it);
- ``objective(state, contractor, priors) -> float``;
- ``point(state)``: the VB or EM state (:class:`~._states.VBState`,
  :class:`~._states.EMState`) that the accelerators extrapolate and the
  fit reads (``state`` itself for a kernel that learns nothing);
- ``moved(state, point, priors) -> state``: the state at ``point`` (an
  extrapolation from ``state``), going on with what ``state`` learned;
- ``priors_at(state, priors) -> priors``: the priors a step from
  ``state`` reads (``priors`` where nothing is learned), onto which an
  extrapolation is projected;
- ``advance(state, priors) -> state or None``: at a convergence, the state
  of the kernel's next stage (learned shapes after a first convergence at
  the given ones), or None where there is none and the run stops.

:func:`optimize` returns the ``point`` of the best restart's last state.
A problem's ``start(rng, restart, contractor) -> state`` says where each
restart begins. The samplers have the other driver,
:func:`~._chains.drive_chain` (state, ``step(rng, state) -> (state, info)``,
``info.log_likelihood``).
"""

from __future__ import annotations

import time
from typing import Callable, NamedTuple, Protocol, runtime_checkable

from joblib import Parallel, delayed

from ._convergence import distance_to_limit, rounding_allowance, run_to_convergence
from ._moves import with_delete_moves

__all__ = ["OptimizerKernel", "OptimizerProblem", "OptimizerResult", "Settings", "optimize"]


@runtime_checkable
class OptimizerKernel(Protocol):
    """The declared interface of a VB or EM kernel (a module such as
    :mod:`~sklearn_pltf.inference.vb`, or an object): everything the
    driver, the loop and the accelerators call (module docstring). Its
    state holds whatever the kernel learns along a run
    (:class:`~._hyperparameters.LearnedState`), so that calling it twice on
    one state gives one answer."""

    def init(self, *args, **kwargs):
        """A start (the arguments are the kernel's own)."""

    def step(self, state, contractor, priors, with_objective=True):
        """One sweep: ``(state, info)``, ``info.objective`` the new state's."""

    def objective(self, state, contractor, priors):
        """The objective (VB's bound, EM's log joint) at ``state``."""

    def point(self, state):
        """The VB or EM state of ``state``: what is extrapolated and read."""

    def moved(self, state, point, priors):
        """The state at ``point``, going on with what ``state`` learned."""

    def priors_at(self, state, priors):
        """The priors a step from ``state`` reads."""

    def advance(self, state, priors):
        """At a convergence, the next stage's state; None where none."""


class OptimizerProblem(NamedTuple):
    """What a VB or EM fit runs: a kernel, what its steps read, and where
    each restart starts.

    ``contractor`` serves every restart run in this process. Restarts in
    other processes (``n_jobs``) build their own with ``rebuild()`` where
    given (a contractor holds compiled plans that are cheaper to rebuild
    than to ship), else receive ``contractor`` pickled.
    """

    kernel: object
    contractor: object
    priors: object
    start: Callable  # (rng, restart, contractor) -> state
    rebuild: Callable | None = None
    #: Where VB tries delete moves at convergence (:mod:`._moves`; a model of
    #: one tensor without a tie): VB's kernel, whose step and bound the
    #: moves read at the rates ``kernel`` learned; None: no moves.
    delete_moves: object = None


class OptimizerResult(NamedTuple):
    """The best restart: its last state's point (VB's or EM's state), its
    objective after every iteration, whether the stopping rule was met, and
    what to tell the user where it was not (None where it was)."""

    state: object
    objectives: list
    converged: bool
    not_converged: str | None = None


class Settings(NamedTuple):
    """The loop's settings, from the estimator's parameters."""

    max_iter: int
    tol: float
    acceleration: str | None = "squarem"
    verbose: int = 0
    verbose_interval: int = 10


def _reporter(settings, restart):
    """``report(iteration, objectives)`` printing every ``verbose_interval``-th
    iteration with ``verbose >= 2``; None when silent."""
    if settings.verbose < 2:
        return None
    start = time.perf_counter()

    def report(iteration, objectives):
        if iteration % settings.verbose_interval == 0:
            change = objectives[-1] - objectives[-2] if len(objectives) > 1 else float("nan")
            print(f"  Iteration {iteration}\t time lapse {time.perf_counter() - start:.5f}s"
                  f"\t objective {objectives[-1]:.6g}\t change {change:.5g}", flush=True)

    return report


def _run_restart(problem, rng, restart, settings, contractor=None):
    """One restart from ``problem.start`` to convergence (contractor: this
    process's, or None to build or receive one): the last state's point, the
    objectives and whether it converged."""
    if contractor is None:
        contractor = problem.contractor if problem.rebuild is None else problem.rebuild()
    kernel = problem.kernel
    report = _reporter(settings, restart)
    state, objectives, converged = run_to_convergence(
        kernel, problem.start(rng, restart, contractor), contractor, problem.priors,
        settings.max_iter, settings.tol, report, acceleration=settings.acceleration)
    if problem.delete_moves is not None:
        state, objectives, converged = with_delete_moves(
            kernel, problem.delete_moves, state, objectives, converged, contractor, problem.priors,
            settings.max_iter, settings.tol, report, acceleration=settings.acceleration)
    return kernel.point(state), objectives, converged


def optimize(problem, rngs, settings, *, n_jobs=1):
    """Run ``problem`` from one restart per generator of ``rngs`` and keep
    the one of highest final objective.

    Parameters
    ----------
    problem : OptimizerProblem
    rngs : sequence of numpy.random.Generator
        One per restart (spawned by the caller, so that a restart's numbers
        depend on its place only).
    settings : Settings
        ``max_iter`` and ``tol`` (nats to the limit, :mod:`._convergence`),
        ``acceleration``, and ``verbose``: 1 prints each restart's start
        and end with the time left, 2 also every ``verbose_interval``-th
        iteration's objective.
    n_jobs : int or None, default=1
        Restarts in parallel through joblib (1: in this process, sharing
        ``problem.contractor``).

    Returns
    -------
    OptimizerResult
        Of the best restart; its ``not_converged`` is the message the
        estimator warns with (scikit-learn's ``ConvergenceWarning``; this
        layer does not import scikit-learn) where it did not converge.
    """
    n_init = len(rngs)
    began = time.perf_counter()

    def summary(restart, done, objectives):
        elapsed = time.perf_counter() - began
        print(f"Initialization {restart} ({done} of {n_init}): {len(objectives)} "
              f"iterations, objective {objectives[-1]:.6g}, {elapsed:.2f} s so far; "
              f"~{elapsed / done * (n_init - done):.0f} s left", flush=True)

    if n_jobs == 1:
        results = []
        for restart, rng in enumerate(rngs):
            if settings.verbose:
                print(f"Initialization {restart}", flush=True)
            results.append(_run_restart(problem, rng, restart, settings, problem.contractor))
            if settings.verbose:
                summary(restart, restart + 1, results[-1][1])
    else:
        # Each process builds (or receives) its own contractor. What a run
        # prints per iteration (verbose >= 2) is printed where it runs; the
        # starts and the summaries here, in the caller's process.
        if settings.verbose:
            print(f"Initializations 0 to {n_init - 1} in {n_jobs} processes", flush=True)
        shipped = problem._replace(contractor=None) if problem.rebuild else problem
        results = Parallel(n_jobs=n_jobs)(
            delayed(_run_restart)(shipped, rng, restart, settings)
            for restart, rng in enumerate(rngs))
        if settings.verbose:
            for restart, (_, objectives, _) in enumerate(results):
                summary(restart, n_init, objectives)
    state, objectives, converged = max(results, key=lambda result: result[1][-1])
    resolution = rounding_allowance(state, objectives, problem.contractor, settings.tol)
    message = None if converged else (
        f"Best of {n_init} initialisation(s) did not converge in {settings.max_iter} "
        f"iterations (its bound's estimated distance to its limit is "
        f"{distance_to_limit(objectives, resolution):.3g} nats, tol={settings.tol:g}); increase "
        "max_iter, relax tol or check the data.")
    return OptimizerResult(state, objectives, converged, message)
