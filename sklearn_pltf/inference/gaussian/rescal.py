"""RESCAL's structure in the Gaussian family, under the probit link: block Gibbs.

Binary relations ``X`` (entity x entity x relation) with

.. math::

    P(x_{ijk} = 1 \\mid A, R) = \\Phi(\\hat x_{ijk}), \\qquad
    \\hat x_{ijk} = a_i^\\top R_k\\, a_j,

signed entity factors :math:`a_i \\sim \\mathcal N(0, \\operatorname{diag} v)`
with a relevance :math:`v_c \\sim \\mathcal{IG}` per column (ARD), and relation
cores :math:`R_k(c, d) \\sim \\mathcal N(0, w)`, :math:`w \\sim \\mathcal{IG}`:
RESCAL's structure (Nickel, Tresp & Kriegel, ICML 2011) with the latent
Gaussian of Albert & Chib (JASA 1993), :math:`z_{ijk} \\sim \\mathcal N(\\hat
x_{ijk}, 1)`, :math:`x_{ijk} = [z_{ijk} > 0]`. The diagonal
:math:`x_{iik}` is never observed, as in :class:`~sklearn_pltf.BayesianRESCAL`.

One sweep:

1. z given (A, R): the Gaussian truncated to the side each observed x names,
   untruncated at missing entries and on the diagonal, so z is complete;
2. every :math:`R_k` given (A, z, w): with z complete, the precision of
   :math:`\\operatorname{vec} R_k` is :math:`A^\\top A \\otimes A^\\top A + I/w`,
   the same for every relation, diagonal in the basis of
   :math:`A^\\top A = U S U^\\top`: :math:`\\tilde R_k = U^\\top R_k U` has
   independent elements of precision :math:`s_c s_d + 1/w` and mean
   :math:`(U^\\top A^\\top z_k A U)_{cd} / (s_c s_d + 1/w)`;
3. each row :math:`a_i` given the other rows, R and z off the diagonal
   (z's diagonal, where :math:`a_i` would meet itself, summed out: a
   partially collapsed step, valid because the diagonal is drawn afresh in
   step 1 before step 2 reads it; van Dyk & Park, JASA 2008): a Gaussian of
   precision :math:`\\sum_{j \\ne i, k} R_k a_j a_j^\\top R_k^\\top +
   R_k^\\top a_j a_j^\\top R_k + \\operatorname{diag}(1/v)`, kept up to date
   by a rank-two change per row;
4. v given A and w given R (inverse Gamma).

A sweep costs :math:`O(n^2 K r)` for z's products and :math:`O(n K (n + r) r)`
for the rows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import solve_triangular

from ...engine._data import ObservedTensor
from ...engine._threads import blas_on_one_thread
from .._chains import ChainProblem, ChainSettings, drive_chain
from .._log_average import log_average_exp
from . import _probit_kernels, _rescal_kernels
from ._model import log_inverse_gamma_density
from .links import binary_signs

__all__ = ["RescalState", "RescalClamp", "RescalInfo", "ProbitRescalModel", "RescalChain",
           "run_rescal_chain", "latent_mean"]


class RescalState(NamedTuple):
    """The entity factor A (n x r), the relation cores R (K x r x r, relation
    first), each column's variance v (r,), the cores' variance w, and
    :math:`\\hat X_k = A R_k A^\\top` (K x n x n), which the next sweep's
    latent draw and the predictions read."""

    entities: np.ndarray
    cores: np.ndarray
    column_variances: np.ndarray
    core_variance: float
    xhat: np.ndarray


class ProbitRescalModel:
    """Binary entity x entity x relation data under the probit RESCAL model
    (module docstring), with its Gibbs sweep.

    Parameters
    ----------
    data : ObservedTensor
        Values 0 or 1 at the observed entries, shape (n, n, K) or (n, n).
    prior_shape, prior_scale : float, default=1.0
        The inverse-Gamma prior of every column variance and of the cores'
        variance.
    """

    def __init__(self, data: ObservedTensor, prior_shape=1.0, prior_scale=1.0):
        if data.ndim not in (2, 3) or data.shape[0] != data.shape[1]:
            raise ValueError("RESCAL needs an entity x entity x relation tensor (or an entity "
                             f"x entity matrix); got shape {tuple(data.shape)}.")
        self.shape = tuple(data.shape)
        n = self.shape[0]
        n_relations = self.shape[2] if data.ndim == 3 else 1
        signs = binary_signs(data).reshape(n, n, n_relations)
        #: +1 at an observed one, -1 at an observed zero, 0 where missing or
        #: on the diagonal; relation first, (K, n, n).
        self.signs = np.ascontiguousarray(signs.transpose(2, 0, 1))
        self.signs[:, np.arange(n), np.arange(n)] = 0.0
        self.prior_shape, self.prior_scale = float(prior_shape), float(prior_scale)

    @property
    def n_entities(self):
        return self.signs.shape[1]

    def initial_state(self, rng, rank):
        """A random start: A standard normal, R of scale 1/r (X̂ of unit
        scale), unit variances."""
        n, n_relations = self.n_entities, self.signs.shape[0]
        entities = rng.standard_normal((n, rank))
        cores = rng.standard_normal((n_relations, rank, rank)) / rank
        return RescalState(entities, cores, np.ones(rank), 1.0, latent_mean(entities, cores))

    def draw_latent(self, rng, xhat):
        """z given X̂ (step 1)."""
        latent = np.empty(xhat.shape)
        _probit_kernels.draw_latent(rng, xhat.ravel(), self.signs.ravel(), latent.ravel())
        return latent

    def sweep(self, rng, state, clamp=None):
        """One Gibbs sweep (steps 1-4 of the module docstring).

        ``clamp`` (a :class:`RescalClamp`, for Chib's clamped runs) holds the
        leading rows of A, and leading elements of the next row, at their
        values in ``state``, and names the block whose conditional density
        at ``clamp.point`` the sweep evaluates. Returns the new state and a
        :class:`RescalInfo`. Its products (n x r factors, r x r cores) run
        on one BLAS thread (:func:`~sklearn_pltf.engine._threads.blas_on_one_thread`).
        """
        with blas_on_one_thread():
            return self._sweep(rng, state, clamp or RescalClamp())

    def _sweep(self, rng, state, clamp):
        point = clamp.point
        latent = self.draw_latent(rng, state.xhat)
        cores, log_ordinate = draw_cores(
            rng, state.entities, latent, state.core_variance,
            target=point.cores[clamp.relations] if clamp.ordinate == "core" else None,
            at=clamp.relations)
        cores[:clamp.relations] = state.cores[:clamp.relations]  # held
        entities = state.entities.copy()
        row_ordinate = draw_entity_rows(
            rng, entities, cores, latent, state.column_variances, held_rows=clamp.rows,
            held_elements=clamp.elements, ordinate=clamp.ordinate,
            target=None if point is None or clamp.rows >= len(entities)
            else point.entities[clamp.rows])
        (v_shape, v_scale), (w_shape, w_scale) = self._hyper_conditionals(entities, cores)
        column_variances = 1.0 / rng.gamma(v_shape, 1.0 / v_scale)
        core_variance = 1.0 / rng.gamma(w_shape, 1.0 / w_scale)
        state = RescalState(entities, cores, column_variances, float(core_variance),
                            latent_mean(entities, cores))
        probabilities = np.empty(state.xhat.shape)
        log_likelihood = _probit_kernels.binary_log_likelihood(
            state.xhat.ravel(), self.signs.ravel(), probabilities.ravel())
        return state, RescalInfo(log_likelihood,
                                 log_ordinate if row_ordinate is None else row_ordinate,
                                 probabilities)

    def log_prior(self, state):
        """:math:`\\log p(A \\mid v) + \\log p(v) + \\log p(R \\mid w) + \\log p(w)`."""
        a, b = self.prior_shape, self.prior_scale
        entities, cores, v, w = state.entities, state.cores, state.column_variances, state.core_variance
        return float(np.sum(_log_normal(entities, v)) + np.sum(log_inverse_gamma_density(v, a, b))
                     + np.sum(_log_normal(cores, w)) + log_inverse_gamma_density(w, a, b))

    def log_hyper_ordinate(self, state):
        """:math:`\\log p(v \\mid A) + \\log p(w \\mid R)` at ``state``: the
        last ordinate of Chib's chain rule, in closed form."""
        (v_shape, v_scale), (w_shape, w_scale) = self._hyper_conditionals(state.entities,
                                                                          state.cores)
        return float(np.sum(log_inverse_gamma_density(state.column_variances, v_shape, v_scale))
                     + log_inverse_gamma_density(state.core_variance, w_shape, w_scale))

    def _hyper_conditionals(self, entities, cores):
        """The inverse-Gamma (shape, scale) of v given A (per column) and of
        w given R (step 4)."""
        a, b = self.prior_shape, self.prior_scale
        return ((a + entities.shape[0] / 2, b + 0.5 * (entities**2).sum(0)),
                (a + cores.size / 2, b + 0.5 * (cores**2).sum()))

    def log_likelihood(self, state):
        """:math:`\\sum_{v \\in O} \\log \\Phi(s_v \\hat x_v)` over the observed entries."""
        return float(_probit_kernels.binary_log_likelihood(state.xhat.ravel(), self.signs.ravel()))

    def in_data_order(self, relation_first):
        """A (K, n, n) array in the data's axis order, (n, n, K) or (n, n)."""
        return relation_first.transpose(1, 2, 0).reshape(self.shape)


class RescalClamp(NamedTuple):
    """What a sweep of Chib's clamped runs holds and evaluates: the first
    ``rows`` rows of A, the first ``elements`` elements of row ``rows`` and
    the first ``relations`` cores stay as they are; ``ordinate`` names the
    conditional evaluated at ``point`` (a :class:`RescalState`, θ*):
    ``"element"``, that of row ``rows``'s first free element, averaged over
    the free columns' labels and signs; ``"row"``, that of row ``rows``;
    ``"core"``, that of core ``relations``; None, none."""

    rows: int = 0
    elements: int = 0
    relations: int = 0
    ordinate: str | None = None
    point: RescalState | None = None


class RescalInfo(NamedTuple):
    """log p(X | A, R) after a sweep, the log conditional density its
    :class:`RescalClamp` asked for (None if none), and Φ(x̂) of every entry
    (relation first), from the same pass as the log-likelihood."""

    log_likelihood: float
    log_ordinate: float | None = None
    probabilities: np.ndarray | None = None


def _log_normal(x, variance):
    return -0.5 * (np.log(2 * np.pi * variance) + x**2 / variance)


def latent_mean(entities, cores):
    """X̂ relation first: :math:`\\hat X_k = A R_k A^\\top`, (K, n, n)."""
    return np.ascontiguousarray(entities @ cores @ entities.T)


def draw_cores(rng, entities, latent, core_variance, target=None, at=0):
    """Every :math:`R_k` given A, the complete latent tensor (K, n, n) and w
    (step 2): independent Gaussians in the eigenbasis of :math:`A^\\top A`,
    independent over the relations. Returns the draw and the log density of
    ``target`` (r, r) under core ``at``'s conditional (None without a target)."""
    eigenvalues, basis = np.linalg.eigh(entities.T @ entities)
    eigenvalues = np.maximum(eigenvalues, 0.0)
    rotated = entities @ basis
    projected = rotated.T @ latent @ rotated
    precision = eigenvalues[:, None] * eigenvalues[None, :] + 1.0 / core_variance
    mean = projected / precision
    log_density = None
    if target is not None:  # the basis is orthogonal: no Jacobian
        log_density = float(np.sum(_log_normal(basis.T @ target @ basis - mean[at],
                                               1.0 / precision)))
    draw = mean + rng.standard_normal(projected.shape) / np.sqrt(precision)
    return basis @ draw @ basis.T, log_density


def draw_entity_rows(rng, entities, cores, latent, column_variances, *, held_rows=0,
                     held_elements=0, ordinate=None, target=None):
    """Each row of A in turn given the others, R and z off the diagonal
    (step 3), in place (:func:`~._rescal_kernels.draw_rows`); ``latent``'s
    diagonal is overwritten with zeros. Rows before ``held_rows`` are held,
    and the first ``held_elements`` elements of row ``held_rows`` (its other
    elements drawn from their conditional given those). Returns the log
    conditional density of ``target`` that ``ordinate`` names (see
    :class:`RescalClamp`), or None."""
    n, rank = entities.shape
    noise = rng.standard_normal((n, rank))  # drawn always: one stream whatever is held
    if held_rows >= n:  # every row held (Chib's runs for the cores)
        return None
    latent[:, np.arange(n), np.arange(n)] = 0.0  # the diagonal is summed out
    # Row i's z_k(i, j), then its z_k(j, i), for every k: (n, 2K, n).
    latent_rows = np.concatenate([latent.transpose(1, 0, 2), latent.transpose(2, 0, 1)], axis=1)
    cores = np.ascontiguousarray(cores)
    contributions = _outer_sums(_images(entities, cores))                   # (n, r, r)
    gram = contributions.sum(0)
    inverse_variances = 1.0 / column_variances
    first, value = held_rows, None
    if held_elements or ordinate == "element":
        row = first
        precision = gram - contributions[row] + np.diag(inverse_variances)
        linear, images = np.empty(rank), np.empty((2 * len(cores), rank))
        _rescal_kernels.core_pass(cores, entities[row], latent_rows[row] @ entities, images,
                                  linear)
        value = _draw_partial_row(entities[row], precision, linear, held_elements, noise[row],
                                  target if ordinate == "element" else None)
        update = _outer_sums(_images(entities[row:row + 1], cores))[0]
        gram += update - contributions[row]
        contributions[row] = update
        first += 1
    ordinate_row = held_rows if ordinate == "row" else -1
    log_density = _rescal_kernels.draw_rows(
        entities, latent_rows, cores, contributions, gram, noise, inverse_variances,
        first, ordinate_row,
        np.zeros(rank) if target is None else np.asarray(target, dtype=np.float64))
    return float(log_density) if ordinate == "row" else value


def _images(rows, cores):
    """R_k a_j then R_kᵀ a_j for every relation k and row a_j of ``rows``: (2K, m, r)."""
    return np.ascontiguousarray(np.concatenate([rows @ cores.transpose(0, 2, 1), rows @ cores]))


def _outer_sums(images):
    """Σ over the 2K images of each row of their outer products: (m, r, r)."""
    by_row = images.transpose(1, 0, 2)
    return np.ascontiguousarray(np.matmul(by_row.transpose(0, 2, 1), by_row))


def _draw_partial_row(row, precision, linear, n_held, noise, target):
    """Draw ``row[n_held:]`` given ``row[:n_held]`` from the row's Gaussian
    conditional (precision P, linear term h): the free block f has precision
    :math:`P_{ff}` and mean :math:`P_{ff}^{-1}(h_f - P_{fc}\\, a_c)`. With a
    ``target`` row, returns the log density of ``target[n_held]`` as the
    first free element, averaged over the free columns and both signs (the
    labels and signs the clamped elements have not yet fixed), else None."""
    held, free = slice(0, n_held), slice(n_held, None)
    block = precision[free, free]
    factor = np.linalg.cholesky(block)
    mean = np.linalg.solve(block, linear[free] - precision[free, held] @ row[held])
    value = None
    if target is not None:
        variances = np.diag(np.linalg.inv(block))
        value = target[n_held]
        per_slot = np.concatenate([_log_normal(value - mean, variances),
                                   _log_normal(-value - mean, variances)])
        value = log_average_exp(per_slot)
    row[free] = mean + solve_triangular(factor, noise[free], lower=True, trans="T")
    return value

class RescalChain(NamedTuple):
    """One chain's output: posterior means of A and R, the mean of
    :math:`\\Phi(\\hat x)` over the kept draws (the posterior predictive
    probability of every entry, in the data's axis order), log p(X | A, R)
    after every sweep (warm-up included), the kept state of highest log
    joint p(X, A, R, v, w), and the posterior mean of each column's
    variance v_c."""

    mean_entities: np.ndarray
    mean_cores: np.ndarray
    probabilities: np.ndarray
    log_likelihoods: np.ndarray
    best: RescalState
    mean_column_variances: np.ndarray


def run_rescal_chain(rng, model, rank, *, n_warmup=1000, n_draws=1000, verbose=0,
                     label="probit RESCAL chain"):
    """One Gibbs chain of ``model`` (:class:`ProbitRescalModel`) from a random
    start, on the samplers' driver
    (:func:`~sklearn_pltf.inference._chains.drive_chain`)."""
    chain = drive_chain(rng, ChainProblem(
        model.initial_state(rng, rank), model.sweep, (0, 1), log_prior=model.log_prior,
        factors_of=lambda state: (state.entities, state.cores), log_summaries=False,
        collect=lambda state, info: (info.probabilities, state.column_variances)),
        ChainSettings(n_warmup, n_draws, 1, False, verbose, label, "sweeps"))
    return RescalChain(chain.mean[0], chain.mean[1], model.in_data_order(chain.collected[0]),
                       chain.log_likelihoods, chain.best_state, chain.collected[1])
