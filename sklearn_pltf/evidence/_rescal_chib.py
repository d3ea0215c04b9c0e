"""Chib's estimate of log p(X) for the RESCAL model, whose entity factor
serves both entity axes (Chib 1995; the sampler of
:mod:`sklearn_pltf.inference.relational.rescal_gibbs`).

At a point (A*, G*),

.. math::

    \\log p(X) = \\log p(X \\mid A^*, G^*) + \\log p(A^*) + \\log p(G^*)
        - \\log p(A^* \\mid X) - \\log p(G^* \\mid A^*, X),

with p(A* | X) by the chain rule over blocks, as in :mod:`._chib`: the first
row of A whole, its ordinate averaged over the permutations of the cluster
labels (a permutation of A's columns with the same one of both axes of G
leaves the model unchanged), then every other element of A on its own. Each
block's ordinate is a Rao–Blackwellised average, over a clamped run (the
earlier blocks held at the point, everything else drawn), of the Gamma
conditional the sampler draws that block from: given the allocation and the
other rows, the elements of a row are independent. Given A*, the relations'
slices G(·, ·, k) are independent a posteriori, so
:math:`p(G^* \\mid A^*, X) = \\prod_k p(G^*(\\cdot, \\cdot, k) \\mid A^*, X)`,
each factor an average from one further run with all of A clamped.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ..engine._progress import progress_or_none
from ..inference.relational import _relational, rescal_gibbs
from ..inference._gamma import log_gamma_density
from ._chib import (ChibEstimate, _log_summed_density, draws_until_precise, max_draws_or_default,
                    report_extended)
from ._log_mean import log_mean_exp, warn_if_ordinates_unreliable

__all__ = ["rescal_chib_log_evidence"]


def rescal_chib_log_evidence(rng, data, priors, point, *, method="gibbs", n_draws=2000,
                             n_warmup=500, max_label_permutations=720, verbose=0,
                             max_draws=None):
    """Chib's estimate of log p(X) for the Poisson–Gamma RESCAL model.

    Parameters
    ----------
    rng : numpy.random.Generator
    data : RelationalData
        From :func:`~sklearn_pltf.inference.relational._relational.relational_data`.
    priors : GammaPriors
        With G's as (R, R, K).
    point : tuple of ndarray
        (A*, A*, G*), G* as (R, R, K): usually the draw of highest
        log p(X, A, G) of the sampler's chains.
    method : {"gibbs", "sada"}
        The sweep of every clamped run.
    n_draws, n_warmup : int
        Sweeps kept and discarded in each clamped run (one per block:
        (I − 1) R + 2 runs).
    max_label_permutations : int
        Most permutations the first block's ordinate is averaged over; past
        it, the identity alone (the chain is then assumed not to switch labels).
    verbose : int
        At 1 or more, progress lines over the clamped runs with the time left.
    max_draws : int, default=None
        Each clamped run goes on past ``n_draws`` in blocks of ``n_draws``
        while one of its ordinates has a relative Monte Carlo error above
        0.5, up to ``max_draws`` draws
        (:func:`~sklearn_pltf.evidence._chib.draws_until_precise`); None:
        ``n_draws`` exactly.

    Returns
    -------
    ChibEstimate
        ``log_ordinates`` in chain-rule order: the first row of A, the other
        elements of A row by row, then one per relation for G.
    """
    entity, core = point[0], point[2]
    n, r = entity.shape
    log_likelihood = _relational.log_likelihood(data, entity, core)
    log_prior = rescal_gibbs.log_prior(point, priors)
    entity_mask = np.zeros((n, r), dtype=bool)
    core_mask = np.zeros(core.shape, dtype=bool)
    labels, log_group_size = _label_permutations(r, max_label_permutations)
    first_row = entity[0][np.array(labels)]  # (permutations, R)
    blocks = [None] + [(i, a) for i in range(1, n) for a in range(r)] + ["core"]
    progress = progress_or_none(verbose, "Chib's clamped runs", len(blocks), unit="blocks")
    max_draws = max_draws_or_default(max_draws, n_draws)
    ordinates, errors, kept = [], [], []
    for block in blocks:
        clamped = (entity_mask, entity, core_mask, core)
        per_block, n_kept = _clamped_run(rng, data, priors, point, method, clamped, block,
                                         first_row, n_warmup, n_draws, max_draws)
        for ordinate, error in per_block:
            ordinates.append(ordinate - (log_group_size if block is None else 0.0))
            errors.append(error)
        kept.append(n_kept)
        if block is None:
            entity_mask[0] = True
        elif block != "core":
            entity_mask[block] = True
        if progress is not None:
            progress()
    report_extended(verbose, kept, n_draws)
    warn_if_ordinates_unreliable(errors, "lengthen the clamped runs (n_draws)")
    log_evidence = log_likelihood + log_prior - sum(ordinates)
    return ChibEstimate(float(log_evidence), float(log_likelihood), float(log_prior),
                        tuple(ordinates), point, float(np.sqrt(np.sum(np.square(errors)))))


def _clamped_run(rng, data, priors, point, method, clamped, block, first_row, n_warmup, n_draws,
                 max_draws):
    """One clamped run from the point: the log ordinates of ``block`` (None:
    the first row of A, averaged over ``first_row``'s label permutations;
    ``"core"``: one per relation; else one element of A) with their relative
    errors, and the draws kept (:func:`~._chib.draws_until_precise`)."""
    entity, core = point[0], point[2]
    state = rescal_gibbs.RescalGibbsState(point)
    per_draw = []

    def advance(n_sweeps, keep=True):
        nonlocal state
        for _ in range(n_sweeps):
            state, conditional = rescal_gibbs.sweep(rng, state, data, priors, method, clamped)
            if not keep:
                continue
            if block is None:
                per_draw.append(_log_summed_density(first_row, conditional.entity_shape[0],
                                                    conditional.entity_rate[0]))
            elif block == "core":
                per_draw.append(log_gamma_density(core, conditional.core_shape,
                                                  conditional.core_rate, axis=(0, 1)))
            else:
                per_draw.append(log_gamma_density(entity[block], conditional.entity_shape[block],
                                                  conditional.entity_rate[block]))

    def ordinates():
        per_ordinate = np.array(per_draw).reshape(len(per_draw), -1).T  # relations' for G
        return [log_mean_exp(values) for values in per_ordinate]

    advance(n_warmup, keep=False)
    return draws_until_precise(advance, ordinates, n_draws, max_draws)


def _label_permutations(r, limit):
    """The permutations of r cluster labels, and log r!; past ``limit``
    permutations the identity alone (with the same log r!)."""
    log_group_size = math.lgamma(r + 1)
    if math.factorial(r) > limit:
        warnings.warn(
            f"{math.factorial(r)} label permutations of {r} clusters, more than "
            f"max_label_permutations={limit}: Chib's ordinate assumes the chain stays in one mode.",
            stacklevel=3)
        return [tuple(range(r))], log_group_size
    return list(itertools.permutations(range(r))), log_group_size
