"""Chib's estimate of log p(X) for Gaussian non-negative PARAFAC (Chib 1995),
from the column-wise Gibbs sampler of :mod:`sklearn_pltf.inference.gaussian`.

At a point θ* = (A*, σ²*), the draw of highest log joint in a Gibbs run,

.. math::

    \\log p(X) = \\log p(X \\mid A^*, \\sigma^{2*}) + \\sum_n \\log p(A_n^*)
        + \\log p(\\sigma^{2*}) - \\log p(\\sigma^{2*} \\mid X)
        - \\sum_b \\log p(A^*_b \\mid X, \\sigma^{2*}, A^*_{<b}),

with each column's (μ, v) integrated out of the prior in closed form, and the
hyper-parameters left free (sampled) in every run. The chain rule runs over
σ² first, then the blocks b: by default every element on its own, mode 0
row by row and the other modes column by column (``blocks="columns"``:
whole columns). Every ordinate is a Rao–Blackwellised
average, over a Gibbs run with the earlier blocks clamped at θ*, of the
block's conditional density at θ* — rectified Gaussians and an inverse
Gamma, all in closed form.

Small blocks: a column's conditional, given the other modes, is far
narrower than its marginal (CP's scaling freedom trades a column's scale
against the same component's columns in the other modes), so an average of
its density over a run is ruled by rare draws and its logarithm comes out
low: the evidence too high, increasingly with the rank (user guide,
Gaussian NTF section). One element at a time keeps each
average over a one-dimensional density. Short runs are noisier than their
reported standard error: compare ranks with ``n_draws`` of 500 or more.

Labels (Neal 1999): permuting the components leaves the model unchanged, so
the posterior has R! symmetric modes. The first row of mode 0 holds one
element of every component: the ordinate of element (0, r) is averaged over
every slot r' ≥ r, :math:`\\frac{1}{R - r} \\sum_{r'} p(A_0(0, r') =
A_0^*(0, r) \\mid \\cdot)`, right whether or not the chain switches labels
(Berkhof, van Mechelen & Gelman 2003), since labels r.. are exchangeable
while nothing of theirs is clamped. Once that row is clamped the labels are
told apart by its values; two components with nearly equal first-row
values would leave up to log 2 nats of symmetry unaccounted for.

Signs (signed factors, ``GaussianPriors(nonnegative=False)``): flipping a
component's column in two modes leaves the model unchanged too, so the
posterior has :math:`2^{(N-1)R}` sign modes as well. While the last mode's
column r is unclamped, flipping column (n, r) of an earlier mode together
with it is a symmetry of everything still free, so the conditional density
of that column's first clamped element is symmetric about 0: its ordinate is
averaged over :math:`\\pm A^*`, again right whether or not the chain flips
signs. Once that element is clamped, its sign tells the modes apart.

Each log ordinate is corrected for the low bias of a log of a Monte Carlo
mean (:func:`~._log_mean.log_mean_exp`), as in :mod:`._chib`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine._progress import progress_or_none
from ..inference import gaussian
from ..inference._log_average import log_average_exp
from ._chib import draws_until_precise, max_draws_or_default, report_extended
from ._log_mean import log_mean_exp, warn_if_ordinates_unreliable

__all__ = ["GaussianChibEstimate", "gaussian_chib_log_evidence"]


class GaussianChibEstimate(NamedTuple):
    """The terms of Chib's identity (module docstring) and a Monte Carlo
    standard error (each ordinate's by batch means, combined as independent)."""

    log_evidence: float
    log_likelihood: float
    log_prior: float
    log_ordinates: tuple
    point: gaussian.GaussianState
    standard_error: float


def gaussian_chib_log_evidence(rng, stats, rank, priors, *, n_draws=1000, n_warmup=200,
                               point=None, blocks="elements", verbose=0, max_draws=None):
    """Chib's estimate of log p(X) for Gaussian NTF of rank ``rank``.

    Parameters
    ----------
    rng : numpy.random.Generator
    stats : CPStatistics or a likelihood of :mod:`sklearn_pltf.inference.gaussian.links`
        The data (a ``CPStatistics`` is Gaussian noise). Under a likelihood
        without σ² (probit), σ²'s ordinate and prior drop out, and its
        latent variables are drawn afresh in every sweep of every run.
    rank : int
    priors : GaussianPriors
    n_draws, n_warmup : int
        Sweeps kept and discarded in the run that finds θ* and in each clamped run.
    point : GaussianState, default=None
        θ*; by default the kept draw of highest log p(X, A, σ²) in a Gibbs run.
    blocks : {"elements", "columns"}, default="elements"
        Every element on its own (one clamped run each), or whole columns
        (far cheaper, but biased upwards above the data's rank).
    verbose : int, default=0
        At 1 or more, progress lines over the clamped runs with the time left.
    max_draws : int, default=None
        Each clamped run goes on past ``n_draws`` in blocks of ``n_draws``
        while its ordinate's relative Monte Carlo error is above 0.5, up to
        ``max_draws`` draws (:func:`~._chib.draws_until_precise`); None:
        ``n_draws`` exactly.

    Returns
    -------
    GaussianChibEstimate
    """
    likelihood = gaussian.likelihood_of(stats)
    if point is None:
        point = gaussian.run_chain(rng, likelihood, rank, priors, n_warmup=n_warmup,
                                   n_draws=n_draws, keep_draws=False, verbose=verbose).best
    factors = point.factors
    log_likelihood = likelihood.log_likelihood(factors, point.noise_variance)
    log_prior = gaussian.log_factors_prior(factors, priors)
    if likelihood.learns_noise:
        log_prior += gaussian.log_noise_prior(point.noise_variance, priors)

    max_draws = max_draws_or_default(max_draws, n_draws)
    ordinates, variances, kept = [], [], []

    def run(clamped, clamp_noise, visit, per_draw):
        (log_mean, error), n_kept = _clamped_run(rng, point, likelihood, priors, clamped,
                                                 clamp_noise, visit, per_draw, n_warmup, n_draws,
                                                 max_draws)
        ordinates.append(log_mean)
        variances.append(error**2)
        kept.append(n_kept)

    # σ² first, nothing clamped.
    values = []

    def noise_visit(n, *conditional):
        if n == "noise":
            values.append(gaussian.log_inverse_gamma_density(point.noise_variance, *conditional))

    if likelihood.learns_noise:
        run({}, False, noise_visit, lambda: values)

    clamped = {}
    structure = likelihood.structure
    shapes = structure.factor_shapes(rank)
    chain_rule = list(_blocks(shapes, blocks))
    symmetries = _Symmetries(structure.column_labels(rank), signed=not priors.nonnegative)
    progress = progress_or_none(verbose, "Chib's clamped runs",
                                len(chain_rule) + likelihood.learns_noise, unit="blocks")
    if progress is not None and likelihood.learns_noise:
        progress()  # σ²'s run
    for n, r, element in chain_rule:
        slots, signs = symmetries.slots(n, r), symmetries.signs(n, r)
        values = []

        def visit(m, s, location=None, scale=None, n=n, r=r, slots=slots, element=element,
                  signs=signs, values=values):
            if m != n or s not in slots:
                return
            # A whole column (under each slot's conditional), or one element.
            at = slice(None) if element is None else element
            per_sign = [np.sum(gaussian.log_element_density(sign * factors[n][at, r], location[at],
                                                            scale[at], priors)) for sign in signs]
            values.append(log_average_exp(per_sign))

        def per_draw(values=values, slots=slots):
            # One value per slot per kept sweep: average over the slots.
            per_slot = np.asarray(values, dtype=np.float64).reshape(-1, len(slots))
            return log_average_exp(per_slot, axis=1)

        run(clamped, True, visit, per_draw)
        symmetries.clamp(n, r)
        if element is None:
            clamped[(n, r)] = True
        else:
            keep = clamped.get((n, r), np.zeros(shapes[n][0], dtype=bool)).copy()
            keep[element] = True
            clamped[(n, r)] = True if keep.all() else keep
        if progress is not None:
            progress()
    report_extended(verbose, kept, n_draws)
    warn_if_ordinates_unreliable(np.sqrt(variances), "lengthen the clamped runs (n_draws)")
    log_evidence = log_likelihood + log_prior - sum(ordinates)
    return GaussianChibEstimate(float(log_evidence), float(log_likelihood), float(log_prior),
                                tuple(ordinates), point, float(np.sqrt(np.sum(variances))))


def _blocks(shapes, blocks):
    """(factor, column, element or None) in chain-rule order, for factor
    matrices of ``shapes`` (rows, columns): with ``"elements"``, factor 0
    row by row (its first row holds one element of every column: where the
    labels are averaged), then the other factors column by column; with
    ``"columns"``, whole columns."""
    if blocks == "columns":
        for n, (_, columns) in enumerate(shapes):
            for r in range(columns):
                yield n, r, None
        return
    for i in range(shapes[0][0]):
        for r in range(shapes[0][1]):
            yield 0, r, i
    for n in range(1, len(shapes)):
        for r in range(shapes[n][1]):
            for i in range(shapes[n][0]):
                yield n, r, i


class _Symmetries:
    """The labels and signs still free as the chain rule clamps blocks (module
    docstring), for factors whose columns carry latent index values
    (``labels``: per factor, per column, ``{index: value}``; CP: ``{"r": r}``).

    A value l of latent index L is *pinned* once a block of a column with
    L = l is clamped: until then the values of L not pinned are exchangeable
    (permuted in every factor at once), so a block's ordinate is averaged
    over the columns of its row that a permutation of the unpinned values
    takes it to (:meth:`slots`). With signed factors, negating the slice
    L = l of two factors leaves X̂ unchanged; while the block's factor has
    nothing of that slice clamped and another factor carrying L has nothing
    of it clamped either, the block's conditional is symmetric about 0
    (:meth:`signs`). Negating two whole factors is such a move too (every
    factor carries the empty index), which a factor with no latent index needs.
    """

    def __init__(self, labels, signed):
        self.labels = [[dict(column, **{"": 0}) for column in factor] for factor in labels]
        self.signed = signed
        self.pinned = {}  # index -> the values pinned
        self.clamped_slices = set()  # (factor, index, value) with a clamped block

    def slots(self, n, r):
        """The columns of factor n a permutation of the unpinned values takes column r to."""
        own = self.labels[n][r]

        def reachable(other):
            pinned = [self.pinned.get(index, set()) for index in own]
            return all(other[index] == value if value in done else other[index] not in done
                       for (index, value), done in zip(own.items(), pinned))

        return tuple(s for s, other in enumerate(self.labels[n]) if reachable(other))

    def signs(self, n, r):
        """(1, -1) where the block's conditional is symmetric about 0, else (1,)."""
        if not self.signed:
            return (1.0,)
        for index, value in self.labels[n][r].items():
            if (n, index, value) in self.clamped_slices:
                continue
            if any(m != n and index in factor[0] and (m, index, value) not in self.clamped_slices
                   for m, factor in enumerate(self.labels)):
                return (1.0, -1.0)
        return (1.0,)

    def clamp(self, n, r):
        for index, value in self.labels[n][r].items():
            self.pinned.setdefault(index, set()).add(value)
            self.clamped_slices.add((n, index, value))


def _clamped_run(rng, point, likelihood, priors, clamped, clamp_noise, visit, per_draw, n_warmup,
                 n_draws, max_draws):
    """Gibbs (the ``likelihood``'s sweep) from θ* with the ``clamped`` columns
    or elements (as :func:`~sklearn_pltf.inference.gaussian.gibbs_sweep` takes them) and σ²
    (if ``clamp_noise``) kept at θ*; ``visit`` sees every conditional of the
    sweeps after the warm-up, and ``per_draw()`` gives the log densities of
    every draw kept so far. Returns the ordinate and its relative error, and
    the draws kept (:func:`~._chib.draws_until_precise`)."""
    state = point

    def advance(n_sweeps, keep=True):
        nonlocal state
        for _ in range(n_sweeps):
            state, _ = likelihood.sweep(rng, state, priors, clamped=clamped,
                                        clamp_noise=clamp_noise, visit=visit if keep else None)

    advance(n_warmup, keep=False)
    (estimate,), n_kept = draws_until_precise(advance, lambda: [log_mean_exp(per_draw())],
                                              n_draws, max_draws)
    return estimate, n_kept
