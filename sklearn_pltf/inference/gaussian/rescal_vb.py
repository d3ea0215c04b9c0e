"""RESCAL's structure under the probit link: mean-field VB.

The model of :mod:`.rescal` (signed entity factor A with ARD column
variances v, relation cores R_k of variance w, the latent Gaussian z of
Albert & Chib, the diagonal never observed), approximated by

.. math::

    q = \\prod_i \\mathcal N(a_i; \\mu_i, \\Sigma_i)\\;
        \\prod_k \\mathcal N(\\operatorname{vec} R_k; \\operatorname{vec} M_k, \\Sigma_R)\\;
        \\prod_c \\mathcal{IG}(v_c)\\; \\mathcal{IG}(w)\\; \\prod_{v} q(z_v),

q(z) the Gaussian :math:`\\mathcal N(m_v, 1)`, :math:`m = \\mathbb E_q[\\hat x]`,
truncated to the side an observed entry names (Girolami & Rogers, "Variational
Bayesian multinomial probit regression", Neural Computation 2006), and
untruncated at a missing entry off the diagonal. Keeping the missing
entries' z makes the latent tensor complete off the diagonal, so every
relation's core has the same precision and :math:`\\Sigma_R` is one
:math:`r^2 \\times r^2` matrix; the bound stays a lower bound of
:math:`\\log p(X_O)` (z at a missing entry integrates out of the joint),
looser by :math:`\\tfrac12 \\sum_{v \\notin O} \\operatorname{Var}_q \\hat x_v`
than one without them.

With :math:`S_i = \\mathbb E[a_i a_i^\\top]` and
:math:`E[(a, c), (b, d)] = \\sum_k \\mathbb E[R_k(a, c)\\, R_k(b, d)]`,
one coordinate-ascent step updates, in turn,

1. each row's :math:`q(a_i)`, given the others (Gaussian: precision
   :math:`\\sum_{k, j \\ne i} \\mathbb E[R_k S_j R_k^\\top + R_k^\\top S_j R_k]
   + \\operatorname{diag} \\mathbb E[1/v]`, linear term
   :math:`\\sum_{k, j \\ne i} \\mathbb E z_{ijk} M_k \\mu_j + \\mathbb E z_{jik}
   M_k^\\top \\mu_j`), the sum over j held as :math:`\\sum_j S_j` less row i's;
2. every core's :math:`q(R_k)`: precision
   :math:`\\sum_{i \\ne j} S_i \\otimes S_j + I\\, \\mathbb E[1/w]`, the same for
   all k, mean :math:`\\Sigma_R \\operatorname{vec}(\\mu^\\top \\mathbb E Z_k \\mu)`;
3. q(v) and q(w) (inverse Gamma);
4. q(z) from the new m,

and the bound after it, at q(z)'s optimum, is

.. math::

    \\mathcal L = \\sum_{v \\in O} \\log \\Phi(s_v m_v)
        - \\tfrac12 \\sum_{v \\text{ off the diagonal}} \\operatorname{Var}_q \\hat x_v
        + \\mathbb E_q \\log p(A, R \\mid v, w) + H[q(A)] + H[q(R)]
        - \\operatorname{KL}(q(v) \\| p(v)) - \\operatorname{KL}(q(w) \\| p(w)),

never decreasing from step to step. A step costs :math:`O(K n^2 r)` for
the latent tensor, :math:`O(n r^4 + K r^4)` for the rows' and cores'
second moments and :math:`O(r^6)` for :math:`\\Sigma_R`.

The predictive probability of an entry is
:math:`\\Phi(m_v / \\sqrt{1 + \\operatorname{Var}_q \\hat x_v})`, what
:math:`\\mathbb E_q \\Phi(\\hat x_v)` would be if :math:`\\hat x_v` were Gaussian
under q (on the diagonal, where :math:`a_i` meets itself, the variance is
that of two independent copies of :math:`a_i`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack
from scipy.special import digamma, gammaln, ndtr

from . import _probit_kernels
from .rescal import latent_mean

__all__ = ["RescalVBState", "ProbitRescalVB", "predictive_probabilities"]

#: Newton steps of the parameter-expanded rescaling per VB step.
_RESCALE_STEPS = 5


class RescalVBState(NamedTuple):
    """q's parameters: the rows' means (n, r) and covariances (n, r, r), the
    cores' means (K, r, r, relation first) and their shared covariance
    (r², r², over R's elements in row-major order), the inverse-Gamma
    scales of q(v) (r,) and q(w) (their shapes are fixed by the sizes),
    the log determinants of the rows' covariances (n,) and of the cores',
    and q(z): m = E X̂ (K, n, n), E z (K, n, n, 0 on the diagonal), and
    Σ log Φ(s m) over the observed entries."""

    means: np.ndarray
    covariances: np.ndarray
    core_means: np.ndarray
    core_covariance: np.ndarray
    log_dets: np.ndarray
    core_log_det: float
    column_scales: np.ndarray
    core_scale: float
    xhat: np.ndarray
    latent: np.ndarray
    log_cdf: float


class VBInfo(NamedTuple):
    objective: float


class ProbitRescalVB:
    """The VB kernel of the probit RESCAL model (module docstring), on the
    optimiser driver's protocol (:class:`~sklearn_pltf.inference._driver.OptimizerKernel`):
    ``contractor`` is the :class:`~.rescal.ProbitRescalModel`; there are
    no priors to learn (``priors`` is unused).

    Parameters
    ----------
    rank : int
        Columns of A.
    """

    def __init__(self, rank):
        self.rank = int(rank)

    # ------------------------------------------------------------ protocol
    def init(self, rng, model):
        """The Gibbs sampler's random start (A standard normal, R of scale
        1/r) as q's means, with no spread; E[1/v] = E[1/w] = 1."""
        start = model.initial_state(rng, self.rank)
        n, r = start.entities.shape
        v_shape, w_shape = self._shapes(model)
        return self._with_latent(model, RescalVBState(
            start.entities, np.zeros((n, r, r)), start.cores, np.zeros((r * r, r * r)),
            np.zeros(n), 0.0, np.full(r, v_shape), w_shape, None, None, 0.0))

    def step(self, state, model, priors=None, with_objective=True):
        """One coordinate-ascent step (steps 1-4 of the module docstring)."""
        v_shape, w_shape = self._shapes(model)
        means, covariances, log_dets = _update_rows(state, v_shape / state.column_scales)
        seconds = _second_moments(means, covariances)
        core_means, core_covariance, core_log_det = _update_cores(
            seconds, means, state.latent, w_shape / state.core_scale)
        means, covariances, core_means, core_covariance, log_dets, core_log_det = _rescale(
            means, covariances, core_means, core_covariance, log_dets, core_log_det,
            model.prior_scale, v_shape, w_shape)
        seconds = _second_moments(means, covariances)
        b = model.prior_scale
        column_scales = b + 0.5 * np.einsum("icc->c", seconds)
        core_scale = b + 0.5 * (np.sum(core_means**2)
                                + len(core_means) * np.trace(core_covariance))
        state = self._with_latent(model, RescalVBState(
            means, covariances, core_means, core_covariance, log_dets, core_log_det,
            column_scales, float(core_scale), None, None, 0.0))
        return state, VBInfo(self.objective(state, model) if with_objective else np.nan)

    def objective(self, state, model, priors=None):
        """The bound :math:`\\mathcal L` (module docstring) at q(z)'s optimum."""
        n, r = state.means.shape
        n_relations = len(state.core_means)
        v_shape, w_shape = self._shapes(model)
        a, b = model.prior_shape, model.prior_scale
        seconds = _second_moments(state.means, state.covariances)
        pair_moments = _pair_moments(seconds)
        core_moments = _core_moments(state.core_means, state.core_covariance)
        off = ~np.eye(n, dtype=bool)
        variance = np.sum(pair_moments * core_moments) - np.sum(state.xhat[:, off] ** 2)
        # E log p(A | v) + H[q(A)]
        inv_v, log_v = v_shape / state.column_scales, np.log(state.column_scales) - digamma(v_shape)
        rows = (0.5 * np.sum(state.log_dets) + 0.5 * n * r
                - 0.5 * n * np.sum(log_v) - 0.5 * np.sum(inv_v * np.einsum("icc->c", seconds)))
        # E log p(R | w) + H[q(R)]
        inv_w, log_w = w_shape / state.core_scale, np.log(state.core_scale) - digamma(w_shape)
        cores = (0.5 * n_relations * state.core_log_det
                 + 0.5 * n_relations * r * r * (1.0 - log_w)
                 - 0.5 * inv_w * (np.sum(state.core_means**2)
                                  + n_relations * np.trace(state.core_covariance)))
        hyper = -(np.sum(_inverse_gamma_kl(v_shape, state.column_scales, a, b))
                  + _inverse_gamma_kl(w_shape, state.core_scale, a, b))
        return float(state.log_cdf - 0.5 * variance + rows + cores + hyper)

    def point(self, state):
        return state

    def moved(self, state, point, priors=None):
        return point

    def priors_at(self, state, priors):
        return priors

    def advance(self, state, priors=None):
        return None

    # ------------------------------------------------------------ helpers
    def _shapes(self, model):
        """The fixed shapes of q(v_c) and q(w): the prior's plus half the
        elements each variance governs."""
        n_relations = model.signs.shape[0]
        return (model.prior_shape + model.n_entities / 2,
                model.prior_shape + n_relations * self.rank**2 / 2)

    @staticmethod
    def _with_latent(model, state):
        """``state`` with q(z) at its optimum given the means (step 4)."""
        xhat = latent_mean(state.means, state.core_means)
        latent = np.empty(xhat.shape)
        log_cdf = _probit_kernels.latent_expectation(xhat.ravel(), model.signs.ravel(),
                                                     latent.ravel())
        n = xhat.shape[1]
        latent[:, np.arange(n), np.arange(n)] = 0.0  # the diagonal is not in the model
        return state._replace(xhat=xhat, latent=latent, log_cdf=float(log_cdf))


def _second_moments(means, covariances):
    """:math:`S_i = \\mu_i \\mu_i^\\top + \\Sigma_i`, (n, r, r)."""
    return covariances + means[:, :, None] * means[:, None, :]


def _core_moments(core_means, core_covariance):
    """:math:`\\sum_k \\mathbb E[R_k(a, c) R_k(b, d)]` as an (r², r²) matrix
    over R's elements in row-major order."""
    flat = core_means.reshape(len(core_means), -1)
    return flat.T @ flat + len(core_means) * core_covariance


def _pair_moments(seconds):
    """:math:`\\sum_{i \\ne j} \\mathbb E[(a_i \\otimes a_j)(a_i \\otimes a_j)^\\top]`
    at [(a, c), (b, d)] (= :math:`S_i(a, b) S_j(c, d)` summed), (r², r²)."""
    n, r, _ = seconds.shape
    total = seconds.sum(0)
    flat = seconds.reshape(n, -1)
    pairs = np.multiply.outer(total, total) - (flat.T @ flat).reshape(r, r, r, r)
    return pairs.transpose(0, 2, 1, 3).reshape(r * r, r * r)


def _update_rows(state, inverse_variances):
    """Each row's q(a_i) given the others', in turn (step 1): means,
    covariances and their log determinants."""
    means, covariances, log_dets = state.means.copy(), state.covariances.copy(), np.empty(len(state.means))
    n, r = means.shape
    cores = state.core_means
    # T(X) = Σ_k E[R_k X R_kᵀ] + E[R_kᵀ X R_k] as one (r², r²) matrix on vec(X):
    # E[R X Rᵀ](a, b) = Σ_cd E[R(a, c) R(b, d)] X(c, d), E[Rᵀ X R](c, d) = Σ_ab the same X(a, b).
    moments = _core_moments(cores, state.core_covariance).reshape(r, r, r, r)  # [a, c, b, d]
    operator = (moments.transpose(0, 2, 1, 3).reshape(r * r, r * r)
                + moments.transpose(1, 3, 0, 2).reshape(r * r, r * r))
    seconds = _second_moments(means, covariances)
    total = seconds.sum(0)
    outgoing = np.ascontiguousarray(state.latent.transpose(1, 0, 2))  # (i, k, j): E z_k(i, j)
    incoming = np.ascontiguousarray(state.latent.transpose(2, 0, 1))  # (i, k, j): E z_k(j, i)
    prior = np.diag(inverse_variances)
    for i in range(n):
        others = total - seconds[i]
        precision = (operator @ others.ravel()).reshape(r, r) + prior
        precision = 0.5 * (precision + precision.T)
        linear = (np.einsum("kab,kb->a", cores, outgoing[i] @ means)
                  + np.einsum("kba,kb->a", cores, incoming[i] @ means))
        covariances[i], log_dets[i] = _inverse(precision)
        means[i] = covariances[i] @ linear
        seconds[i] = covariances[i] + np.outer(means[i], means[i])
        total = others + seconds[i]
    return means, covariances, log_dets


def _update_cores(seconds, means, latent, inverse_variance):
    """Every core's q(R_k) given q(A) and q(z) (step 2): one covariance for
    all relations (and its log determinant)."""
    r = means.shape[1]
    precision = _pair_moments(seconds) + inverse_variance * np.eye(r * r)
    covariance, log_det = _inverse(precision)
    linear = (means.T @ latent @ means).reshape(len(latent), -1)  # vec(μᵀ E Z_k μ)
    return (linear @ covariance).reshape(-1, r, r), covariance, log_det


def _inverse(precision):
    """The inverse of a symmetric positive-definite matrix (one Cholesky
    factorisation, LAPACK's potrf and potri), symmetric, and its log
    determinant."""
    factor, info = lapack.dpotrf(precision, lower=True)
    if info != 0:
        raise np.linalg.LinAlgError(f"A precision of q is not positive definite (potrf {info}).")
    inverse, info = lapack.dpotri(factor, lower=True)
    lower = np.tril(inverse)
    return lower + np.tril(inverse, -1).T, -2.0 * float(np.sum(np.log(np.diag(factor))))


def _rescale(means, covariances, core_means, core_covariance, log_dets, core_log_det,
             prior_scale, v_shape, w_shape):
    """A parameter-expanded step (Qi & Jaakkola, "Parameter expanded
    variational Bayesian methods", NIPS 2006): column a of A scaled by
    :math:`c_a` and :math:`R_k(a, b)` by :math:`1 / (c_a c_b)` leave every
    :math:`\\hat x` and so the likelihood's terms as they are; with q(v)
    and q(w) at their optimum after it, the bound changes by

    .. math::

        g(\\ell) = (n - 2 K r) \\textstyle\\sum_a \\ell_a
            - \\alpha_v \\sum_a \\log(\\beta + \\tfrac12 T_a e^{2 \\ell_a})
            - \\alpha_w \\log(\\beta + \\tfrac12 \\sum_{ab} U_{ab} e^{-2 \\ell_a - 2 \\ell_b}),

    :math:`\\ell = \\log c`, :math:`T_a = \\sum_i \\mathbb E a_{ia}^2`,
    :math:`U_{ab} = \\sum_k \\mathbb E R_k(a, b)^2`, :math:`\\alpha_v, \\alpha_w`
    the shapes of q(v) and q(w). Maximised by Newton's method on ℓ, each
    step kept only where g rises, so the bound never falls. It moves along
    the direction coordinate ascent crawls (the scale A and R trade),
    which otherwise takes thousands of steps."""
    n, r = means.shape
    n_relations = len(core_means)
    column_mass = np.einsum("icc->c", covariances) + np.sum(means**2, axis=0)
    core_mass = (np.sum(core_means**2, axis=0)
                 + n_relations * np.diag(core_covariance).reshape(r, r))

    def gain(log_scale):
        spread = core_mass * np.exp(-2.0 * (log_scale[:, None] + log_scale[None, :]))
        return ((n - 2 * n_relations * r) * log_scale.sum()
                - v_shape * np.sum(np.log(prior_scale + 0.5 * column_mass * np.exp(2 * log_scale)))
                - w_shape * np.log(prior_scale + 0.5 * spread.sum()))

    log_scale, value = np.zeros(r), gain(np.zeros(r))
    for _ in range(_RESCALE_STEPS):
        grown = column_mass * np.exp(2 * log_scale)
        spread = core_mass * np.exp(-2.0 * (log_scale[:, None] + log_scale[None, :]))
        denominator = prior_scale + 0.5 * spread.sum()
        by_column = spread.sum(0) + spread.sum(1)  # ∂(Σ s)/∂ℓ_a = -2 by_column_a
        v_term = grown / (prior_scale + 0.5 * grown)
        gradient = (n - 2 * n_relations * r) - v_shape * v_term + w_shape * by_column / denominator
        # v's terms are separable; w's: ∂by_column_a/∂ℓ_c = -2 (δ_ac by_column_a + s_ac + s_ca).
        by_column_change = -2.0 * (np.diag(by_column) + spread + spread.T)
        hessian = (-v_shape * np.diag(2 * v_term * prior_scale / (prior_scale + 0.5 * grown))
                   + w_shape * (by_column_change / denominator
                                + np.outer(by_column, by_column) / denominator**2))
        try:
            direction = -np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(direction)) or gradient @ direction <= 0:
            direction = gradient / max(1.0, np.abs(gradient).max())
        length = 1.0
        while length > 1e-4:
            trial = log_scale + length * direction
            trial_value = gain(trial)
            if trial_value > value:
                break
            length *= 0.5
        else:
            break
        gained, log_scale, value = trial_value - value, trial, trial_value
        if gained < 1e-10:
            break
    scale = np.exp(log_scale)
    pair = 1.0 / np.outer(scale, scale)
    means = means * scale
    covariances = covariances * np.outer(scale, scale)
    core_means = core_means * pair
    core_covariance = core_covariance * np.outer(pair.ravel(), pair.ravel())
    return (means, covariances, core_means, core_covariance, log_dets + 2 * log_scale.sum(),
            core_log_det - 4 * r * log_scale.sum())


def _inverse_gamma_kl(shape, scale, prior_shape, prior_scale):
    """KL(IG(shape, scale) || IG(prior_shape, prior_scale)), that of the
    Gammas of the precisions."""
    return ((shape - prior_shape) * digamma(shape) - gammaln(shape) + gammaln(prior_shape)
            + prior_shape * (np.log(scale) - np.log(prior_scale))
            + shape * (prior_scale - scale) / scale)


def predictive_probabilities(state):
    """:math:`\\Phi(m / \\sqrt{1 + \\operatorname{Var}_q \\hat x})` for every
    entry (K, n, n, relation first), with
    :math:`\\mathbb E_q \\hat x_{ijk}^2 = \\sum S_i(a, b) S_j(c, d)\\, \\mathbb E[R_k(a, c) R_k(b, d)]`;
    on the diagonal the mean is :math:`\\langle M_k, S_i \\rangle` and the
    variance that of two independent copies of :math:`a_i`."""
    means, cores = state.means, state.core_means
    n, r = means.shape
    seconds = _second_moments(means, state.covariances)
    flat = seconds.reshape(n, -1)
    # Σ_cd Σ_R[(a, c), (b, d)] S_j(c, d), for every j: (n, r, r)
    spread = np.einsum("acbd,jcd->jab", state.core_covariance.reshape(r, r, r, r), seconds)
    probabilities = np.empty(state.xhat.shape)
    diagonal = np.arange(n)
    for k, core in enumerate(cores):
        images = core @ seconds @ core.T + spread              # E_R[R S_j Rᵀ], (n, r, r)
        second = flat @ images.reshape(n, -1).T                # ⟨S_i, E_R[R S_j Rᵀ]⟩
        mean = state.xhat[k].copy()
        mean[diagonal, diagonal] = np.einsum("ac,iac->i", core, seconds)
        variance = np.maximum(second - state.xhat[k] ** 2, 0.0)
        probabilities[k] = ndtr(mean / np.sqrt(1.0 + variance))
    return probabilities

