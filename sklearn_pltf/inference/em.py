"""EM (MAP) for Poisson–Gamma PLTF: the multiplicative fixed point.

One step takes the E-step (the expected allocation of the counts) at the
current factors, then updates the free factors in turn:

.. math::

    Z_\\alpha \\leftarrow \\frac{A_\\alpha - 1 + Z_\\alpha \\circ
        \\Delta_\\alpha(M \\circ X / \\hat X)}{R_\\alpha + \\Delta_\\alpha(M)},

the numerator's factors and X̂ at the step's start, the denominator's at
their current values: the EM update for the latent allocation tensor
(Cemgil 2009, §3), its M-step taken factor by factor (ECM). With
``A = 1`` and ``R → 0`` it is the KL multiplicative update of Lee & Seung.
Each update maximises the expected complete-data log posterior, so the log
joint density below never decreases:

.. math::

    J = \\sum M [X \\log \\hat X - \\hat X - \\log\\Gamma(X+1)]
      + \\sum_\\alpha \\sum [(A-1) \\log Z - R Z + A \\log R - \\log\\Gamma(A)].

For binary data under the Bernoulli–Poisson likelihood the E-step takes
the expected latent count of each one, :math:`X / \\hat X` becomes
:math:`1 / (1 - e^{-\\hat X})`, and the log joint's
:math:`X \\log \\hat X - \\log\\Gamma(X+1)` becomes :math:`\\log(e^{\\hat X} - 1)`
(:mod:`sklearn_pltf.engine._likelihood`).

The posterior mode exists only for shapes ``A >= 1`` (for ``A < 1`` the
density is unbounded at zero), which :func:`check_priors` enforces.
"""

from __future__ import annotations

import numpy as np

from ..engine import _array_api
from ..engine._array_api import namespace_of
from ._common import initial_factors
from ._states import EMInfo, EMState, advance, moved, point, priors_at

__all__ = ["EMState", "EMInfo", "init", "state_from_means", "step", "log_joint", "objective",
           "check_priors", "point", "moved", "priors_at", "advance"]


def check_priors(priors):
    """Raise unless every free factor's prior shape is >= 1 (the mode exists)."""
    for alpha in priors.free:
        shape = priors.shape[alpha]
        if bool(namespace_of(shape).any(shape < 1.0)):
            raise ValueError(
                "EM finds the posterior mode, which does not exist when a prior shape "
                f"is < 1 (factor {alpha}); use prior_shape >= 1 or method='vb'."
            )


def init(rng, model, contractor, priors, given=None, start=None):
    """Initial free factors: ``start`` ({position: value}) where given, else random.

    ``given`` is ``{position: (value, value)}`` for held factors, the same form
    as for :func:`sklearn_pltf.inference.vb.init` (EM reads the first).
    """
    check_priors(priors)
    given = dict(given or {})
    held = {a: value for a, (value, _) in given.items()}
    return state_from_means(initial_factors(rng, model, contractor, held, priors.free, start),
                            priors, given)


def state_from_means(means, priors, given):
    """The state at ``means`` (held factors from ``given``, as in :func:`init`)."""
    return EMState(
        tuple(given[a][0] if priors.shape[a] is None else m for a, m in enumerate(means))
    )


def step(state, contractor, priors, with_objective=True):
    """One sweep of EM updates over the free factors: the E-step (the
    expected allocation of the counts) once at the current factors, then a
    conditional maximisation of each factor in turn given the others'
    current values (ECM; Meng & Rubin 1993), so the log joint never decreases.

    ``with_objective=False`` skips the log joint (a fold-in does not need it).
    """
    factors = list(state.factors)
    pulls = contractor.ratio_deltas(priors.free, state.factors)  # the E-step, once
    for alpha in priors.free:
        numerator = priors.shape[alpha] - 1.0 + state.factors[alpha] * pulls[alpha]
        denominator = priors.rate[alpha] + contractor.masked_delta(alpha, factors)
        factors[alpha] = _positive_part(numerator) / denominator
    new = EMState(tuple(factors))
    return new, EMInfo(objective=log_joint(new, contractor, priors) if with_objective else None)


def log_joint(state, contractor, priors):
    """log p(X, Z) at the current factors (module docstring)."""
    factors = state.factors
    # masked_total first: a dense contractor's X̂ of these factors serves it,
    # and data_loglik then uses that array for its terms (of float64 data;
    # float32 data's bound takes a float64 X̂ for each).
    value = -contractor.masked_total(factors) + contractor.data_loglik(factors)
    value += contractor.log_base_measure
    for alpha in priors.free:
        a, r, z = priors.shape[alpha], priors.rate[alpha], factors[alpha]
        value += (_array_api.float64_sum(_array_api.xlogy(a - 1.0, z) - r * z)
                  + priors.log_normalizer[alpha])
    return value


def _positive_part(x):
    """max(x, 0), element-wise, in ``x``'s namespace."""
    if isinstance(x, np.ndarray):
        return np.maximum(x, 0.0)
    return namespace_of(x).clip(x, min=0.0)


#: The objective the convergence loop reads (:mod:`._convergence`). The
#: protocol's other members (:class:`~._driver.OptimizerKernel`), ``point``,
#: ``moved``, ``priors_at`` and ``advance``, are :mod:`._states`' (nothing
#: learned: a state is its point).
objective = log_joint
