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
3. a parameter-expanded move (:func:`_transform`): :math:`A \\to A Q`,
   :math:`R_k \\to Q^{-1} R_k Q^{-\\top}` at the Q that most raises the
   bound, which leaves X̂ as it is; coordinate ascent alone crawls along
   these directions;
4. q(v) and q(w) (inverse Gamma);
5. q(z) from the new m,

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

import functools
from typing import NamedTuple

import numpy as np
from scipy import optimize
from scipy.linalg import lapack
from scipy.special import digamma, gammaln, ndtr

from .._gamma import gamma_bound_term
from . import _probit_kernels
from .rescal import latent_mean

__all__ = ["RescalVBState", "ProbitRescalVB", "predictive_probabilities"]

#: L-BFGS iterations of the parameter-expanded transform per VB step.
_TRANSFORM_STEPS = 30


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
    """What a step reports: the bound at its new state."""

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
        """One step (steps 1-5 of the module docstring)."""
        v_shape, w_shape = self._shapes(model)
        means, covariances, log_dets = _update_rows(state, v_shape / state.column_scales)
        seconds = _second_moments(means, covariances)
        core_means, core_covariance, core_log_det = _update_cores(
            seconds, means, state.latent, w_shape / state.core_scale)
        means, covariances, core_means, core_covariance, log_dets, core_log_det = _transform(
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
        inv_v = v_shape / state.column_scales
        log_v = np.log(state.column_scales) - digamma(v_shape)
        rows = (0.5 * np.sum(state.log_dets) + 0.5 * n * r
                - 0.5 * n * np.sum(log_v) - 0.5 * np.sum(inv_v * np.einsum("icc->c", seconds)))
        # E log p(R | w) + H[q(R)]
        inv_w, log_w = w_shape / state.core_scale, np.log(state.core_scale) - digamma(w_shape)
        cores = (0.5 * n_relations * state.core_log_det
                 + 0.5 * n_relations * r * r * (1.0 - log_w)
                 - 0.5 * inv_w * (np.sum(state.core_means**2)
                                  + n_relations * np.trace(state.core_covariance)))
        # -KL(q(v) || p(v)) - KL(q(w) || p(w)), those of the precisions 1/v, 1/w: Gammas
        scales = np.append(state.column_scales, state.core_scale)
        shapes = np.append(np.full(r, v_shape), w_shape)
        hyper = gamma_bound_term(np.full(r + 1, a), np.full(r + 1, b), shapes, 1.0 / scales,
                                 digamma(shapes), (r + 1) * (a * np.log(b) - gammaln(a)))
        return float(state.log_cdf - 0.5 * variance + rows + cores + hyper)

    def point(self, state):
        return state

    def moved(self, state, point, priors=None):
        return point

    def priors_at(self, state, priors):
        return priors

    def advance(self, state, priors=None):
        return None

    def column_variances(self, state, model):
        """E_q[v_c] for each column (scale / (shape - 1)); where q(v)'s shape
        is at most 1 and that mean is infinite, 1 / E_q[1/v_c] instead."""
        v_shape = self._shapes(model)[0]
        return state.column_scales / (v_shape - 1.0 if v_shape > 1.0 else v_shape)

    # ------------------------------------------------------------ helpers
    def _shapes(self, model):
        """The fixed shapes of q(v_c) and q(w): the prior's plus half the
        elements each variance governs."""
        n_relations = model.signs.shape[0]
        return (model.prior_shape + model.n_entities / 2,
                model.prior_shape + n_relations * self.rank**2 / 2)

    @staticmethod
    def _with_latent(model, state):
        """``state`` with q(z) at its optimum given the means (step 5)."""
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
    means, covariances = state.means.copy(), state.covariances.copy()
    log_dets = np.empty(len(means))
    n, r = means.shape
    cores = state.core_means
    # T(X) = Σ_k E[R_k X R_kᵀ] + E[R_kᵀ X R_k] as one (r², r²) matrix on vec(X):
    # E[R X Rᵀ](a, b) = Σ_cd E[R(a, c) R(b, d)] X(c, d);
    # E[Rᵀ X R](c, d) = Σ_ab the same times X(a, b).
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


def _transform(means, covariances, core_means, core_covariance, log_dets, core_log_det,
               prior_scale, v_shape, w_shape):
    """A parameter-expanded step (Qi & Jaakkola, "Parameter expanded
    variational Bayesian methods", NIPS 2006): for any invertible Q,
    :math:`A \\to A Q` and :math:`R_k \\to P R_k P^\\top`, :math:`P = Q^{-1}`,
    leave every :math:`\\hat x` and so the likelihood's terms as they are
    (q is carried along: :math:`\\mu_i \\to Q^\\top \\mu_i`,
    :math:`\\Sigma_i \\to Q^\\top \\Sigma_i Q`,
    :math:`\\Sigma_R \\to (P \\otimes P) \\Sigma_R (P \\otimes P)^\\top`). With
    q(v) and q(w) at their optimum after it, the bound changes by

    .. math::

        g(Q) = (n - 2 K r) \\log |\\det Q|
            - \\alpha_v \\sum_c \\log\\big(\\beta + \\tfrac12 (Q^\\top T Q)_{cc}\\big)
            - \\alpha_w \\log\\big(\\beta + \\tfrac12 W(P^\\top P)\\big),

    :math:`T = \\sum_i S_i`, :math:`W(G) = \\sum_{abcd} E[(a, c), (b, d)]\\, G_{ab} G_{cd}`
    (the expected :math:`\\sum_k \\lVert P R_k P^\\top \\rVert_F^2`),
    :math:`\\alpha_v, \\alpha_w` the shapes of q(v) and q(w). Maximised from
    Q = I by L-BFGS with its gradient, and kept only where g rises, so the
    bound never falls. Coordinate ascent alone crawls along these
    directions (A and R trading scale and rotation at a fixed X̂)."""
    n, r = means.shape
    n_relations = len(core_means)
    totals = covariances.sum(0) + means.T @ means
    moments = _core_moments(core_means, core_covariance).reshape(r, r, r, r)  # [a, c, b, d]
    weight = n - 2 * n_relations * r
    objective = functools.partial(_transform_gain, totals=totals, moments=moments, weight=weight,
                                  prior_scale=prior_scale, v_shape=v_shape, w_shape=w_shape)
    start = np.eye(r).ravel()
    at_start, _ = objective(start)
    with np.errstate(all="ignore"):
        found = optimize.minimize(objective, start, jac=True, method="L-BFGS-B",
                                  options={"maxiter": _TRANSFORM_STEPS})
    if not np.isfinite(found.fun) or found.fun >= at_start:
        return means, covariances, core_means, core_covariance, log_dets, core_log_det
    transform = found.x.reshape(r, r)
    inverse = np.linalg.inv(transform)
    log_det = np.linalg.slogdet(transform)[1]
    # (P ⊗ P) Σ_R (P ⊗ P)ᵀ, one index of Σ_R's [a, c, b, d] at a time: O(r⁵), not O(r⁶)
    moved = np.einsum("ia,jc,kb,ld,acbd->ijkl", inverse, inverse, inverse, inverse,
                      core_covariance.reshape(r, r, r, r), optimize=True).reshape(r * r, r * r)
    return (means @ transform, transform.T @ covariances @ transform,
            inverse @ core_means @ inverse.T, 0.5 * (moved + moved.T),
            log_dets + 2 * log_det, core_log_det - 4 * r * log_det)


def _transform_gain(flat, totals, moments, weight, prior_scale, v_shape, w_shape):
    """-g(Q) of :func:`_transform` and its gradient in Q (flattened); +inf
    where det Q <= 0 (the search starts at I and stays on its side)."""
    r = totals.shape[0]
    transform = flat.reshape(r, r)
    sign, log_det = np.linalg.slogdet(transform)
    if sign <= 0:
        return np.inf, np.zeros_like(flat)
    inverse = np.linalg.inv(transform)
    gram = inverse.T @ inverse
    spread = totals @ transform
    column = prior_scale + 0.5 * np.einsum("ac,ac->c", transform, spread)
    # ∂W/∂G(a, b) = Σ_cd (E[a, c, b, d] + E[c, a, d, b]) G(c, d)
    slope = (np.einsum("acbd,cd->ab", moments, gram) + np.einsum("cadb,cd->ab", moments, gram))
    core = prior_scale + 0.25 * np.sum(slope * gram)  # W is quadratic in G: W = ½ ⟨∂W/∂G, G⟩
    value = weight * log_det - v_shape * np.sum(np.log(column)) - w_shape * np.log(core)
    through_p = inverse @ (slope + slope.T)                     # ∂W/∂P
    gradient = (weight * inverse.T - v_shape * spread / column
                + w_shape / (2 * core) * (inverse.T @ through_p @ inverse.T))  # -∂W/∂Q = PᵀYPᵀ
    return -value, -gradient.ravel()


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

