"""Bayesian non-negative PARAFAC with Gaussian noise (Schmidt & Mohamed,
"Probabilistic non-negative tensor factorisation using Markov chain Monte
Carlo", EUSIPCO 2009): the model, a column-wise Gibbs sampler and HMC.

The model, for an N-way tensor with observed entries O and rank R:

.. math::

    x_v \\mid A, \\sigma^2 \\sim \\mathcal N\\Big(\\sum_r \\prod_n A_n(v_n, r),\\;
        \\sigma^2\\Big),\\ v \\in O, \\qquad
    \\sigma^2 \\sim \\mathcal{IG}(k, \\theta),

    A_n(i, r) \\mid \\mu_{nr}, v_{nr} \\sim \\mathcal R(\\mu_{nr}, v_{nr})
        \\text{ (the Gaussian truncated to } [0, \\infty)\\text{)},

    p(\\mu_{nr}, v_{nr}) = \\frac{1}{C_{I_n}}\\, \\Phi\\big(\\mu/\\sqrt v\\big)^{I_n}\\,
        \\mathcal N(\\mu \\mid 0, v / s)\\, \\mathcal{IG}(v \\mid a_0, b_0).

With ``GaussianPriors(ard=True)`` (automatic relevance determination; Zhao,
Zhang & Cichocki, TPAMI 2015) every column has location 0 and one variance
:math:`v_r \\sim \\mathcal{IG}(a_0, b_0)` per component r, shared by every
mode: :math:`A_n(i, r) \\sim \\mathcal R(0, v_r)` (half-normal), or
:math:`\\mathcal N(0, v_r)` if signed, so a component the data do not need
has its variance shrink in every mode at once. Given the factors,
:math:`v_r \\sim \\mathcal{IG}(a_0 + N_r / 2, b_0 + S_r / 2)` with
:math:`N_r = \\sum_n I_n` and :math:`S_r = \\sum_n \\sum_i A_n(i, r)^2`
(the half-normal's normaliser does not depend on v), and
:func:`log_factors_prior` integrates v out in closed form.

With ``GaussianPriors(nonnegative=False)`` the elements are plain Gaussians
given (μ, v), of either sign — Bayesian CP (Xiong et al., "Temporal
collaborative filtering with Bayesian probabilistic tensor factorization",
SDM 2010) — and the hyper-prior is the plain Normal–inverse-Gamma
(:math:`C_I = 1`): the same conditionals, drawn without truncation, and HMC
moves A itself.

Each column (n, r) has its own location and scale. The hyper-prior carries the
power of :math:`\\Phi(\\mu/\\sqrt v)` that cancels the truncated Gaussian's
normaliser over the column's :math:`I_n` elements — Schmidt & Mohamed's
device — so that given the column, (μ, v) is Normal–inverse-Gamma: v
inverse-Gamma, μ given v Gaussian, drawn jointly. Its constant
:math:`C_I = \\mathbb E_{u \\sim \\mathcal N(0, 1/s)}[\\Phi(u)^I]` does not
depend on v (substitute :math:`u = \\mu/\\sqrt v`): a one-dimensional
integral (:func:`log_hyper_normalizer`). Integrating (μ, v) out gives each
column's marginal prior in closed form (:func:`log_factor_prior`), which is
what the evidence needs.

Given everything else, the elements of one column are independent rectified
Gaussians: with the column's data precision :math:`P_i` and linear term
:math:`L_i` (from the MTTKRP and Gram identities, :mod:`._cp_stats`),

.. math::

    A_n(i, r) \\mid \\cdot \\sim \\mathcal R\\Big(
        \\frac{L_i/\\sigma^2 + \\mu/v}{P_i/\\sigma^2 + 1/v},\\;
        \\frac{1}{P_i/\\sigma^2 + 1/v}\\Big),

    \\sigma^2 \\mid \\cdot \\sim \\mathcal{IG}\\big(k + |O|/2,\\;
        \\theta + \\tfrac12 \\textstyle\\sum_O (x - \\hat x)^2\\big).

:func:`gibbs_sweep` draws, mode by mode, the hyper-parameters of every
column, then the columns one at a time, then the noise. :func:`hmc_step`
moves all factors jointly by Hamiltonian Monte Carlo on
:math:`\\phi = \\log A` (the Jacobian adds :math:`\\sum \\phi` to the log
density), then draws the hyper-parameters and the noise as Gibbs does.

Binary data take the probit link instead of the Gaussian noise,
:math:`P(x_v = 1) = \\Phi(\\hat x_v)`, through the latent Gaussian of Albert &
Chib (1993): every sweep draws the latent tensor given X̂, then runs the
sweep above on it with σ² = 1 (:class:`ProbitLink`).

The family is a folder: :mod:`._model` (priors, states, the column
hyper-parameters, densities and prior draws), :mod:`._string_stats` (the
sums the sweep reads for any model string whose observed indices each
belong to one factor; CP's are :mod:`.._cp_stats`), :mod:`.sweeps` (the Gibbs
sweep and the fold-in), :mod:`.links` (the likelihoods: Gaussian noise and
the probit link, one interface), :mod:`.hmc` (HMC and its step size) and
:mod:`.chains` (one chain on the samplers' driver, and the pooling of
several); this module gathers their public names.
"""

from ._model import (GaussianInfo, GaussianPriors, GaussianState, ard_members, column_log_evidence,
                     component_energy_shares, draw_hyper, init, log_element_density,
                     log_factor_prior, log_factors_prior, log_hyper_normalizer,
                     log_inverse_gamma_density, log_likelihood,
                     log_noise_prior, sample_column_prior, sample_elements, sample_prior,
                     sample_standardised_location)
from .chains import GaussianChain, pool_chains, run_chain
from .links import LIKELIHOODS, GaussianNoise, ProbitLink, ard_groups, cp_dense, likelihood_of
from .hmc import AdaptiveHMC, DualAveraging, hmc_step, log_joint
from .sweeps import column_conditional, fold_in, gibbs_sweep

__all__ = [
    "GaussianPriors", "GaussianState", "GaussianInfo", "init", "gibbs_sweep", "hmc_step",
    "log_likelihood", "log_factor_prior", "log_factors_prior", "draw_hyper",
    "component_energy_shares", "column_log_evidence", "log_noise_prior",
    "log_hyper_normalizer", "log_inverse_gamma_density", "sample_standardised_location", "sample_column_prior",
    "sample_prior", "sample_elements", "log_element_density", "column_conditional", "log_joint",
    "fold_in", "run_chain", "pool_chains", "GaussianChain",
    "DualAveraging", "AdaptiveHMC", "GaussianNoise", "ProbitLink", "LIKELIHOODS",
    "likelihood_of", "cp_dense", "ard_groups", "ard_members",
]
