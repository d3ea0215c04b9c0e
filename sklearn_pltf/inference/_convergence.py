"""The VB and EM loop: steps (or SQUAREM cycles) until the objective is
within ``tol`` nats of its limit.

**The stopping rule.** A fixed-point iteration that converges linearly at
rate ρ gains :math:`\\Delta_k = B_k - B_{k-1}` per iteration with
:math:`\\Delta_{k+1} \\approx \\rho \\Delta_k`, so what is left to gain after
a block of iterations that gained :math:`G` is about
:math:`G \\rho_b / (1 - \\rho_b)`, :math:`\\rho_b` the ratio of successive
blocks' gains. Accelerated gains come in bursts (a long extrapolation, then
small steps), so the rule reads blocks of eight iterations and three of
them: with :math:`G_0` the last block's gain and :math:`\\rho_b` the larger
of the two ratios :math:`G_0 / G_1` and :math:`G_1 / G_2`, the distance to
the limit is estimated as

.. math::

    G_0 \\max\\left(1, \\frac{\\rho_b}{1 - \\rho_b}\\right),

at least the last block's own gain (the bursts' next one may be as large),
more where the gains shrink slowly; a ratio of 1 or more, where no
contraction shows, counts as :math:`\\rho_b = 1 - 10^{-3}`. The run stops
once the estimate is at most ``tol`` nats, so the returned objective is
then within about ``tol`` nats of the limit of this run, whatever the
data's size (the user guide's "When a fit has converged" holds it against
long runs).

**The check before an accelerated run returns.** Accelerated gains can
fall off from a burst onto a plateau where the iteration crawls (components
slowly trading mass) and leave it later: the blocks then shrink fast while
the gains within the last one have stopped shrinking, and the estimate
above reads convergence. So where it stops a SQUAREM run, three plain
steps are tried from the last state, and the run returns only if they
agree: plain steps that contract at rate :math:`\rho` (estimated as the
larger of :math:`g_2 / g_1` and :math:`g_3 / g_2`, their gains' ratios)
leave :math:`g_3 \rho / (1 - \rho)` to gain, which must be at most
``tol`` too; on a plateau their
gains do not shrink, and the run goes on (checking again a block later).
The trial steps are then dropped (the run goes on from the state it
keeps, which holds whatever the kernel learns along the way:
:class:`~._driver.OptimizerKernel`), so a run's path does not depend on
``tol`` (a run to a smaller ``tol`` extends it); they cost three sweeps per
check. No rule read from the trajectory sees a
plateau the plain steps cannot tell from convergence (a saddle left only
much later, a redundant component giving up its mass): the delete moves
after a convergence (:mod:`._moves`) and restarts (``n_init``) guard
against those.

**Rounding.** Gains within the rounding of the objective are not progress,
and count as none: within 4 ε |B| / √N, the random walk of its N terms'
roundings (:func:`objective_resolution`), or within twice the largest
decrease among the gains the rule reads, since exact coordinate ascent and
SQUAREM's safeguarded cycles never decrease the objective and a decrease is
rounding made visible (up to 4 ε |B|, every term rounded the same way: a
larger fall is not rounding and widens nothing). A float32 fit's bound (its terms over the data
rounded in float32, every sum in float64) moves up and down at its fixed
point, and the rule, reading that as gains that never shrink, would
otherwise never stop. In float64 both are far below any ``tol``. With
``tol=0`` there is no such allowance: the run stops only where the
objective repeats exactly.
"""

from __future__ import annotations

import numpy as np

from ..engine._array_api import namespace_of
from ._acceleration import INITIAL_MAX_LENGTH, squarem_cycle
from ._anderson import AndersonHistory, anderson_iteration

__all__ = ["run_to_convergence", "distance_to_limit", "rounding_allowance", "ACCELERATIONS"]

#: The accelerations a fit can ask for (None: plain coordinate ascent).
ACCELERATIONS = ("squarem", "anderson")

#: The rule reads blocks of this many iterations' gains ...
_BLOCK = 8
#: ... and this many blocks.
_N_BLOCKS = 3
#: The block ratio assumed where the gains do not shrink.
_SLOWEST_RATE = 1.0 - 1e-3
#: Plain steps that confirm an accelerated run's stop.
_CHECK_STEPS = 3
#: Gains within this many standard deviations of the objective's rounding
#: are rounding.
_ROUNDING_DEVIATIONS = 4


def _precision(state):
    """ε of ``state``'s first floating array (of float64 where it holds none)."""
    for field in state:
        arrays = [a for a in (field if isinstance(field, tuple) else (field,))
                  if hasattr(a, "dtype") and hasattr(a, "shape")]
        if arrays and namespace_of(arrays[0]).isdtype(arrays[0].dtype, "real floating"):
            return float(namespace_of(arrays[0]).finfo(arrays[0].dtype).eps)
    return float(np.finfo(np.float64).eps)


def objective_resolution(state, value, n_terms=1):
    """The rounding of an objective of size ``value`` summed over ``n_terms``
    terms, each rounded in ``state``'s precision: ``_ROUNDING_DEVIATIONS``
    times the random walk of their roundings, 4 ε |value| / √n_terms."""
    return _ROUNDING_DEVIATIONS * _precision(state) * abs(value) / np.sqrt(max(n_terms, 1))


def rounding_allowance(state, objectives, contractor, tol):
    """The gain below which the objective's moves are rounding (module
    docstring): the larger of :func:`objective_resolution` and twice
    :func:`largest_decrease`, a decrease counting only up to 4 ε |B| (every
    term rounded the same way; a larger fall is not rounding); none for
    ``tol=0``, which asks for an exact repeat."""
    if tol == 0:
        return 0.0
    coherent = _ROUNDING_DEVIATIONS * _precision(state) * abs(objectives[-1])
    return max(objective_resolution(state, objectives[-1], _n_terms_of(contractor)),
               min(2.0 * largest_decrease(objectives), coherent))


def largest_decrease(objectives):
    """The largest fall of the objective over the gains the rule reads (0
    where it only rose): rounding, where the iteration cannot decrease it."""
    gains = np.diff(objectives[-(_BLOCK * _N_BLOCKS + 1):])
    return float(max(0.0, -gains.min())) if gains.size else 0.0


def _n_terms_of(contractor):
    """How many data terms the objective sums (its observed entries; 1 where
    the contractor does not say, the largest rounding)."""
    return getattr(getattr(contractor, "data", None), "n_observed", 1)


def distance_to_limit(objectives, resolution=0.0):
    """The estimated gap between the last objective and the limit of the
    sequence, in the objective's units (module docstring), gains within
    ``resolution`` counting as none; ``inf`` until ``_N_BLOCKS`` blocks of
    gains are known, 0 once the objective repeats exactly."""
    gains = np.abs(np.diff(objectives[-(_BLOCK * _N_BLOCKS + 1):]))
    if gains.size and gains[-1] == 0.0:
        return 0.0
    if gains.size < _BLOCK * _N_BLOCKS:
        return np.inf
    gains[gains <= resolution] = 0.0
    blocks = gains[::-1].reshape(_N_BLOCKS, _BLOCK).sum(axis=1)  # newest first
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = float(np.max(blocks[:-1] / blocks[1:]))
    if not np.isfinite(rate) or rate >= 1.0:
        rate = _SLOWEST_RATE
    return float(blocks[0] * max(1.0, rate / (1.0 - rate)))


def _plain_step_distance(kernel, state, contractor, priors, value, resolution):
    """The distance to the limit that :data:`_CHECK_STEPS` plain steps from
    ``state`` (objective ``value``) leave, by their gains (module
    docstring; those within ``resolution`` count as none); the steps
    themselves are dropped (the run goes on from ``state``, which holds
    what it goes on with)."""
    values = [value]
    for _ in range(_CHECK_STEPS):
        state, info = kernel.step(state, contractor, priors)
        values.append(float(info.objective))
    gains = np.diff(values)
    if not np.isfinite(values[-1]) or gains[-1] <= resolution:
        return 0.0  # rounding (or a step the loop's own check will refuse next)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = float(np.max(gains[1:] / gains[:-1]))
    if not np.isfinite(rate) or rate >= _SLOWEST_RATE:
        rate = _SLOWEST_RATE
    return float(gains[-1] * rate / (1.0 - rate))


def run_to_convergence(kernel, state, contractor, priors, max_iter, tol, report=None,
                       acceleration="squarem", give_up=None):
    """Iterate ``kernel`` from ``state`` until :func:`distance_to_limit` of its
    objective is at most ``tol``, at most ``max_iter`` iterations.

    Parameters
    ----------
    kernel : OptimizerKernel
        The kernel protocol (:class:`~._driver.OptimizerKernel`):
        ``step(state, contractor, priors, with_objective=True)`` returning
        ``(state, info)`` with ``info.objective`` the objective of the new
        state, ``objective(state, contractor, priors)``, ``point(state)``
        (whose floats' precision sets the rounding allowance),
        ``advance(state, priors)`` (at a convergence, the state of the
        kernel's next stage, or None), and for the accelerations ``moved``
        and ``priors_at``.
    state
        The start: a state of ``kernel``.
    contractor, priors
        What the steps read.
    max_iter : int
        At most this many iterations.
    tol : float
        In the objective's units (nats); 0 stops only where the objective
        repeats exactly.
    report : callable, default=None
        ``report(iteration, objectives)`` after each iteration.
    acceleration : {"squarem", "anderson"} or None, default="squarem"
        None: an iteration is one step (coordinate ascent). ``"squarem"``:
        the first iteration is one step, each later one a SQUAREM cycle
        (:mod:`._acceleration`, three steps). ``"anderson"``: each later
        one a step and Anderson's secant step from the last few
        (:mod:`._anderson`; NumPy arrays only).
    give_up : callable, default=None
        ``give_up(objectives)`` after each iteration: True ends the run
        there, not converged (a trial that cannot reach what it must).

    Returns
    -------
    state
        The last state of ``kernel`` (``kernel.point(state)``: VB's or EM's).
    objectives : list of float
        ``objectives[i]``: the objective after iteration ``i + 1``; never
        decreasing (up to rounding, for coordinate ascent).
    converged : bool
    """
    objectives = []
    max_length = INITIAL_MAX_LENGTH
    history = AndersonHistory()
    next_check = 1  # after a check that disagrees, the next waits a block
    for iteration in range(1, max_iter + 1):
        if acceleration is None or iteration == 1:
            state, info = kernel.step(state, contractor, priors)
            value = float(info.objective)
        elif acceleration == "anderson":
            state, value = anderson_iteration(kernel, state, objectives[-1], contractor, priors,
                                              history)
        else:
            state, value, max_length = squarem_cycle(kernel, state, objectives[-1], contractor,
                                                     priors, max_length)
        objectives.append(value)
        if not np.isfinite(value):
            raise FloatingPointError(
                f"The objective became {value} at iteration {iteration}; check "
                "the priors and the scale of the data (no evidence is returned)."
            )
        if report is not None:
            report(iteration, objectives)
        if give_up is not None and give_up(objectives):
            return state, objectives, False
        resolution = rounding_allowance(kernel.point(state), objectives, contractor, tol)
        if distance_to_limit(objectives, resolution) <= tol:
            if acceleration is not None:
                if iteration < next_check:
                    continue
                if _plain_step_distance(kernel, state, contractor, priors,
                                        objectives[-1], resolution) > tol:
                    next_check = iteration + _BLOCK
                    continue
            # A kernel with stages goes on to the next (its objective may
            # only rise at the switch); converged at the last, the run stops.
            following = kernel.advance(state, priors)
            if following is None:
                return state, objectives, True
            state = following
    return state, objectives, False
