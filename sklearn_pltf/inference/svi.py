"""Stochastic variational inference for Poisson–Gamma PLTF over minibatches of samples.

With the samples (axis 0) conditionally independent given the other
factors, a minibatch ``b`` of ``|b|`` of ``N`` samples gives a noisy but
unbiased view of the whole data set: its sample-mode factor is inferred
with the others held (the fold-in), and the Gamma parameters each global
factor α would have if the data were ``N / |b|`` copies of the batch,

.. math::

    \\hat C_\\alpha = A_\\alpha + \\tfrac{N}{|b|} L_\\alpha \\circ
        \\Delta^L_\\alpha(M \\circ X_b / \\hat X_L), \\qquad
    \\hat R_\\alpha = R_\\alpha + \\tfrac{N}{|b|} \\Delta^E_\\alpha(M),

are blended into the current ones in the natural parameters (shape and
rate) with the Robbins–Monro weight :math:`\\rho_t = (\\tau_0 + t)^{-\\kappa}`,
:math:`\\kappa \\in (0.5, 1]` (Hoffman, Blei, Wang & Paisley 2013, eqs. 25
and 35; as scikit-learn's online LDA):

.. math::

    C_\\alpha \\leftarrow (1 - \\rho_t) C_\\alpha + \\rho_t \\hat C_\\alpha, \\qquad
    1 / D_\\alpha \\leftarrow (1 - \\rho_t) / D_\\alpha + \\rho_t \\hat R_\\alpha.

Every global factor's target is computed from the same state, then all
are blended: one step per batch.
"""

from __future__ import annotations

from ._gamma import gamma_moments
from ._states import VBState

__all__ = ["learning_rate", "global_step"]


def learning_rate(step, learning_offset, learning_decay):
    """ρ_t = (τ₀ + t)^(−κ) for step ``t`` (counted from 1)."""
    return float((learning_offset + step) ** -learning_decay)


def global_step(state, contractor, priors, global_factors, scale, rho):
    """Blend each global factor's q towards its batch target (module docstring).

    Parameters
    ----------
    state : VBState
        Every factor's q over the batch, its sample-mode factor already
        inferred with the others held.
    contractor : DenseContractor or SparseContractor
        Over the batch.
    priors : GammaPriors
        Of the batch's model.
    global_factors : tuple of int
        The positions updated (the free factors other than the sample mode's).
    scale : float
        N / |b|: the samples the batch stands for, per batch sample.
    rho : float
        The step's weight, in (0, 1].

    Returns
    -------
    VBState
        ``state`` with the global factors' shapes, scales and moments replaced.
    """
    fields = [list(field) for field in state]
    for alpha in global_factors:
        target_shape = priors.shape[alpha] + scale * state.geometric[alpha] * contractor.ratio_delta(
            alpha, state.geometric)
        target_rate = priors.rate[alpha] + scale * contractor.masked_delta(alpha, state.mean)
        shape = (1.0 - rho) * state.shape[alpha] + rho * target_shape
        scale_alpha = 1.0 / ((1.0 - rho) / state.scale[alpha] + rho * target_rate)
        for field, value in zip(fields, (shape, scale_alpha) + gamma_moments(shape, scale_alpha)):
            field[alpha] = value
    return VBState(*(tuple(field) for field in fields))
