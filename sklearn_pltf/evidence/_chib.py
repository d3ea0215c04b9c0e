"""Chib's estimate of log p(X) from block Gibbs runs (Chib 1995; Şimşekli &
Cemgil, MLSP 2012, eqs. 19–28).

For any point Z* of the factors,

.. math::

    \\log p(X) = \\log p(X \\mid Z^*) + \\sum_\\alpha \\log p(Z^*_\\alpha)
        - \\sum_\\alpha \\log p(Z^*_\\alpha \\mid X, Z^*_{<\\alpha}).

The chain rule runs over blocks smaller than a factor: every element of every
free factor on its own (``blocks="elements"``, the default), except a row
(a slice along the factor's first observed axis, or for a factor with none,
such as the mixing matrix between a held dictionary and a free factor, along
its first axis that a held factor or an earlier block carries) where latent
indices are first met, or every row (``blocks="rows"``).
Each block's ordinate is a Rao–Blackwellised average over a *clamped* Gibbs
run, in which every earlier block stays at Z* and everything else (the
allocation S included) is sampled:

.. math::

    \\hat p(Z^*_b \\mid X, Z^*_{<b}) = \\frac1T \\sum_t
        \\mathcal G\\big(Z^*_b;\\, A + \\textstyle\\sum_{\\bar v_\\alpha} S^{(t)},\\,
        R + \\Delta_\\alpha(M)(Z^{(t)}_{-\\alpha})\\big)\\Big|_b.

Whole-factor blocks (the paper's) average products of Gamma densities over a
whole factor; when the factor's marginal is much wider than its conditional
(CP's scaling freedom) the average is ruled by rare draws, its logarithm is
biased low and the evidence comes out too high, increasingly so with the
rank. Row blocks shrink the effect but keep it at ranks above the data's;
single elements remove it, at the price of one clamped run per element
instead of per row (the user guide says how far row blocks scatter).

Each ordinate is the log of a Monte Carlo mean, which is biased low by about
half its squared relative standard error, so the evidence comes out too high
by about half the estimate's squared standard error. The ordinates are
corrected for it (:func:`~._log_mean.log_mean_exp`).

Label switching (Neal 1999). Permuting a latent index across every factor
leaves the model unchanged, so the posterior has one mode per permutation and
a chain that stays in one of them over-estimates an ordinate by the number of
modes. For each block, the ordinate is averaged over the permutations of the
latent indices that the block carries and no clamped element or held factor
does (in practice: the first block of the first factor)
(Berkhof, van Mechelen & Gelman 2003): right whether the chain switches
labels or not. Beyond ``max_label_permutations`` it takes the identity alone
and divides by their number, which assumes the chain does not switch.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import NamedTuple

import numpy as np

from ..engine._progress import progress_or_none
from ..inference import gibbs
from ..inference._gamma import log_gamma_density
from ._log_mean import ORDINATE_ERROR_LIMIT, log_mean_exp, warn_if_ordinates_unreliable

__all__ = ["ChibEstimate", "chib_log_evidence", "draws_until_precise"]


def max_draws_or_default(max_draws, n_draws):
    """The most draws a clamped run keeps: ``max_draws``, never fewer than
    ``n_draws`` (None: ``n_draws`` exactly)."""
    return n_draws if max_draws is None else max(int(max_draws), n_draws)


def draws_until_precise(advance, ordinates, n_draws, max_draws):
    """Run a clamped run's kept draws in blocks until its ordinates are precise.

    The rule for every clamped run of Chib's estimators (Chib 1995): after
    ``n_draws`` kept draws, while any of the run's ordinates has a relative
    Monte Carlo error (batch means, :func:`~._log_mean.log_mean_exp`) above
    :data:`~._log_mean.ORDINATE_ERROR_LIMIT`, the run goes on by another
    ``n_draws`` (the last block cut to fit), until ``max_draws`` draws are
    kept. An ordinate still above the limit then makes the estimate warn
    (:func:`~._log_mean.warn_if_ordinates_unreliable`).

    Parameters
    ----------
    advance : callable
        ``advance(n)`` runs ``n`` more kept sweeps of the run.
    ordinates : callable
        ``ordinates()`` gives ``[(log ordinate, relative error), ...]`` over
        every draw kept so far.
    n_draws, max_draws : int
        The first block and the most draws kept.

    Returns
    -------
    estimates : list of (float, float)
        ``ordinates()`` at the end.
    n_kept : int
        The draws kept.
    """
    advance(n_draws)
    kept, estimates = n_draws, ordinates()
    while kept < max_draws and not all(error <= ORDINATE_ERROR_LIMIT for _, error in estimates):
        more = min(n_draws, max_draws - kept)
        advance(more)
        kept, estimates = kept + more, ordinates()
    return estimates, kept


def report_extended(verbose, kept, n_draws):
    """With ``verbose``, a line saying how many clamped runs went past
    ``n_draws`` kept draws (``kept``: each run's), and how far."""
    kept = np.asarray(kept)
    longer = int(np.count_nonzero(kept > n_draws))
    if verbose and longer:
        print(f"Chib's clamped runs: {longer} of {kept.size} ran past {n_draws} draws (relative "
              f"error of an ordinate above {ORDINATE_ERROR_LIMIT}), the longest to "
              f"{int(kept.max())}.", flush=True)


class ChibEstimate(NamedTuple):
    """The terms of Chib's identity: one log ordinate per block of the chain
    rule (see ``blocks``, in order); ``point`` is Z*, the draw
    of highest log p(X, Z)."""

    log_evidence: float
    log_likelihood: float
    log_prior: float
    log_ordinates: tuple
    point: tuple
    #: Monte Carlo standard error of ``log_evidence``: each ordinate's by batch
    #: means over its run (delta method on the log), combined as independent.
    #: The ordinates are already corrected for the bias of a log of a mean.
    standard_error: float = float("nan")


def chib_log_evidence(rng, model, contractor, priors, given=None, *, sweep=gibbs.block_sweep,
                      n_draws=5000, n_warmup=500, max_label_permutations=720, point=None,
                      blocks="elements", verbose=0, max_draws=None):
    """Chib's estimate of log p(X) for a Poisson–Gamma PLTF model.

    Parameters
    ----------
    rng : numpy.random.Generator
    model : Model
        A bound model.
    contractor : DenseContractor or SparseContractor
        For the data (whole counts).
    priors : GammaPriors
        Priors of the free factors; ``None`` marks held ones.
    given : dict, default=None
        ``{position: array}`` for every held factor.
    sweep : callable, default=gibbs.block_sweep
        The sampler's sweep (a member of :data:`gibbs.SWEEPS`), used for the
        run that finds Z* and for every clamped run.
    n_draws, n_warmup : int
        Draws kept and discarded in the run that finds Z* and in each clamped
        run (one per block).
    max_label_permutations : int
        Most permutations a block's ordinate is averaged over (module docstring).
    point : tuple of ndarray, default=None
        Z*, every factor in model order (held ones as given). By default, the
        draw of highest log p(X, Z) in a run of ``n_warmup + n_draws`` sweeps.

    blocks : {"elements", "rows"}, default="elements"
        ``"rows"``: each free factor cut along its first observed axis.
        ``"elements"``: every element on its own (one clamped run per
        element), except the first row of a factor that carries latent
        indices no earlier block does, where their label permutations are
        averaged (module docstring: why).
    verbose : int, default=0
        At 1 or more, progress lines over the clamped runs with the time left.
    max_draws : int, default=None
        Each clamped run keeps ``n_draws`` draws, then goes on in blocks of
        ``n_draws`` while an ordinate's relative Monte Carlo error is above
        0.5, up to ``max_draws`` (:func:`draws_until_precise`). None:
        ``n_draws`` exactly.

    Returns
    -------
    ChibEstimate
    """
    given = dict(given or {})
    max_draws = max_draws_or_default(max_draws, n_draws)
    free = priors.free
    if point is None:
        point = gibbs.run_chain(rng, model, contractor, priors, given, sweep, n_warmup=n_warmup,
                                n_draws=n_draws, keep_draws=False, verbose=verbose,
                                label="Chib's point: Gibbs chain").best
    log_prior = gibbs.log_prior(point, priors)
    log_likelihood = gibbs.log_likelihood(gibbs.GibbsState(point), contractor)
    clamped = {a: np.zeros(point[a].shape, dtype=bool) for a in free}
    ordinates, variances, kept = [], [], []
    chain_rule = list(_blocks(model, point, free, blocks == "elements"))
    progress = progress_or_none(verbose, "Chib's clamped runs", len(chain_rule), unit="blocks")
    for alpha, block in chain_rule:
        (ordinate, error), n_kept = _log_ordinate(
            rng, model, contractor, priors, point, alpha, block, clamped, sweep, n_draws, n_warmup,
            max_label_permutations, max_draws)
        ordinates.append(ordinate)
        variances.append(error**2)
        kept.append(n_kept)
        clamped[alpha][block] = True
        if progress is not None:
            progress()
    report_extended(verbose, kept, n_draws)
    warn_if_ordinates_unreliable(np.sqrt(variances), "lengthen the clamped runs (n_draws)")
    log_evidence = log_likelihood + log_prior - sum(ordinates)
    return ChibEstimate(float(log_evidence), float(log_likelihood), float(log_prior),
                        tuple(ordinates), point, float(np.sqrt(np.sum(variances))))


def _blocks(model, point, free, elementwise=False):
    """The blocks of the chain rule, in order: each free factor cut along its
    first observed axis (one slice per index value); a factor with no
    observed axis along its first axis whose index a held factor or an
    earlier block carries (its labels are told apart already), else whole.
    Small blocks keep each ordinate's average over few densities, where one
    over a whole factor is dominated by rare draws.

    ``elementwise`` splits every such block into its elements, except a
    factor's first block while it carries a latent index that no earlier
    block or held factor does: that block is where the label permutations
    of the index are averaged (:func:`_label_permutations`), so it must hold
    the index whole.
    """
    pinned = set().union(*(model.factors[a] for a in range(model.n_factors) if a not in free))
    for alpha in free:
        own = model.factors[alpha]
        axes = [own.index(c) for c in own if c in model.output]
        if not axes:  # e.g. a mixing matrix between a held dictionary and a free factor
            axes = [own.index(c) for c in own if c in pinned]
        slices = [(slice(None),) * len(own)]
        if axes:
            slices = [
                tuple(index if ax == axes[0] else slice(None) for ax in range(len(own)))
                for index in range(point[alpha].shape[axes[0]])
            ]
        for block in slices:
            unpinned = set(own) - set(model.output) - pinned
            if not elementwise or unpinned:
                pinned |= set(own)
                yield alpha, block
                continue
            sub_shape = point[alpha][block].shape
            for element in np.ndindex(*sub_shape):
                parts = iter(element)
                yield alpha, tuple(next(parts) if isinstance(b, slice) else b for b in block)


def _log_ordinate(rng, model, contractor, priors, point, alpha, block, clamped, sweep, n_draws,
                  n_warmup, max_label_permutations, max_draws):
    """log p̂(Z*_α[block] | X, the clamped elements at Z*) and its standard
    error, from a Gibbs run in
    which the ``clamped`` elements stay at Z* and every other element is drawn
    (elements of a factor are independent given S and the other factors, so
    drawing a whole factor and restoring its clamped elements is exact); it
    keeps ``n_draws`` draws, or more up to ``max_draws``
    (:func:`draws_until_precise`). Returns the pair and the draws kept."""
    sampled = tuple(a for a in priors.free if not clamped[a].all())
    points, log_group_size = _label_permutations(model, priors, point, alpha, block, clamped,
                                                 max_label_permutations)
    points = np.stack(points)  # (permutations, *block shape)
    factors = list(point)  # start in Z*'s labelling
    per_draw = []

    def advance(n_sweeps, keep=True):
        for _ in range(n_sweeps):
            # Each conditional comes with the allocation (S, or its margin)
            # that the sweep drew given the current factors: with them, a
            # draw from the posterior given the clamped elements.
            for a, shape, rate in sweep(rng, factors, contractor, priors, sampled):
                if a == alpha and keep:
                    per_draw.append(_log_summed_density(points, shape[block], rate[block]))
                new = rng.standard_gamma(shape) / rate
                new[clamped[a]] = point[a][clamped[a]]
                factors[a] = new

    def ordinates():
        log_mean, error = log_mean_exp(per_draw)
        return [(log_mean - log_group_size, error)]

    advance(n_warmup, keep=False)
    estimates, kept = draws_until_precise(advance, ordinates, n_draws,
                                          max_draws)
    return estimates[0], kept


def _log_summed_density(points, shape, rate):
    """log Σ_p Gamma(points[p]; shape, rate), each point's density a product
    over its elements. This runs once per draw of every clamped run, so the
    points are a stack in one pass, and the log-sum-exp is plain numpy
    (scipy's costs more than the rest of the call at these sizes)."""
    per_point = log_gamma_density(points, shape, rate, axis=tuple(range(1, points.ndim)))
    top = per_point.max()
    return float(top + np.log(np.sum(np.exp(per_point - top))))


def _label_permutations(model, priors, point, alpha, block, clamped, limit):
    """Z*_α[block] under every permutation of the latent indices that it
    carries and no clamped element or held factor does, and log of how many
    there are. Past ``limit``, Z*_α[block] alone with the same log count (the
    chain is then assumed not to switch labels)."""
    held = [a for a in range(model.n_factors) if priors.shape[a] is None or clamped[a].any()]
    taken = set().union(*(model.factors[a] for a in held))
    own = model.factors[alpha]
    kept_axes = [ax for ax, b in enumerate(block) if isinstance(b, slice)]  # axes of the slice
    values = point[alpha][block]
    axes = [kept_axes.index(own.index(c)) for c in own
            if c not in model.output and c not in taken]
    sizes = [values.shape[ax] for ax in axes]
    group_size = math.prod(math.factorial(n) for n in sizes)
    if group_size > limit:
        warnings.warn(
            f"Factor {alpha} ({own!r}) has {group_size} label permutations, more than "
            f"max_label_permutations={limit}: Chib's ordinate assumes the chain stays in one mode.",
            stacklevel=3,
        )
        return [values], math.log(group_size)
    points = []
    for orders in itertools.product(*(itertools.permutations(range(n)) for n in sizes)):
        z = values
        for ax, order in zip(axes, orders):
            z = np.take(z, order, axis=ax)
        points.append(z)
    return points, math.log(len(points))


