"""Chib's estimate of the evidence of probit RESCAL
(:mod:`sklearn_pltf.inference.gaussian.rescal`), with its latent Gaussian.

Chib's identity (JASA 1995) at a point θ* = (A*, R*, v*, w*), the kept draw
of highest log joint of a Gibbs run:

.. math::

    \\log p(X) = \\log p(X \\mid A^*, R^*) + \\log p(\\theta^*)
    - \\log p(\\theta^* \\mid X),

the likelihood the exact :math:`\\prod \\Phi(\\pm \\hat x^*)` (the latent z
summed out), and the posterior ordinate by the chain rule,

.. math::

    p(\\theta^* \\mid X) = \\prod_{c} p(a^*_{1c} \\mid X, a^*_{1,<c})
    \\prod_{i > 1} p(a^*_i \\mid X, a^*_{<i})
    \\prod_k p(R^*_k \\mid X, A^*, R^*_{<k})\\; p(v^* \\mid A^*)\\, p(w^* \\mid R^*),

each factor but the last two (closed-form inverse Gammas) the average of its
Gaussian conditional over a Gibbs run from θ* with the earlier blocks held
(Rao–Blackwellised; the latent z drawn in every sweep). The posterior is
invariant under a signed permutation of A's columns (with R's rows and
columns), so a chain that stays in one of its symmetric modes would count
that mode's density as the whole posterior's: the first row's elements are
therefore taken one at a time, each ordinate averaged over the columns and
signs that the elements held so far leave free (the posterior's marginal of
an element is that average of one mode's marginals), after which the labels
are fixed and whole rows follow.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine._progress import progress_or_none
from ..inference.gaussian.rescal import RescalClamp, run_rescal_chain
from ._log_mean import log_mean_exp, warn_if_ordinates_unreliable

__all__ = ["ProbitRESCALChibEstimate", "probit_rescal_chib_log_evidence"]


class ProbitRESCALChibEstimate(NamedTuple):
    """The terms of Chib's identity (module docstring), the point θ*, and
    a Monte Carlo standard error (each ordinate's by batch means, combined
    as independent)."""

    log_evidence: float
    log_likelihood: float
    log_prior: float
    log_ordinates: tuple
    point: object
    standard_error: float


def probit_rescal_chib_log_evidence(rng, model, rank, *, n_draws=1000, n_warmup=200,
                                    point=None, verbose=0):
    """Chib's estimate of log p(X) for probit RESCAL of ``rank`` columns.

    Parameters
    ----------
    rng : numpy.random.Generator
    model : ProbitRescalModel
    rank : int
    n_draws, n_warmup : int
        Sweeps kept and discarded in the run that finds θ* and in each of
        the ``rank + n - 1 + K`` clamped runs (n entities, K relations).
    point : RescalState, default=None
        θ*; by default the kept draw of highest log joint in a Gibbs run.
    verbose : int, default=0
        At 1 or more, progress lines over the clamped runs with the time left.

    Returns
    -------
    ProbitRESCALChibEstimate
    """
    if point is None:
        point = run_rescal_chain(rng, model, rank, n_warmup=n_warmup, n_draws=n_draws,
                                 verbose=verbose).best
    n = point.entities.shape[0]
    n_relations = point.cores.shape[0]
    stages = ([RescalClamp(0, c, 0, "element", point) for c in range(rank)]
              + [RescalClamp(i, 0, 0, "row", point) for i in range(1, n)]
              + [RescalClamp(n, 0, k, "core", point) for k in range(n_relations)])
    progress = progress_or_none(verbose, "Chib's clamped runs", len(stages), unit="blocks")
    ordinates, errors = [], []
    for clamp in stages:
        state, values = point, []
        for t in range(n_warmup + n_draws):
            state, info = model.sweep(rng, state, clamp)
            if t >= n_warmup:
                values.append(info.log_ordinate)
        estimate, error = log_mean_exp(values)
        ordinates.append(estimate)
        errors.append(error)
        if progress is not None:
            progress()
    ordinates.append(model.log_hyper_ordinate(point))
    warn_if_ordinates_unreliable(errors, "lengthen the clamped runs (n_draws)")
    log_likelihood, log_prior = model.log_likelihood(point), model.log_prior(point)
    return ProbitRESCALChibEstimate(
        float(log_likelihood + log_prior - sum(ordinates)), float(log_likelihood),
        float(log_prior), tuple(ordinates), point, float(np.sqrt(np.sum(np.square(errors)))))
