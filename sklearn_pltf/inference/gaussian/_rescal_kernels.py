"""Compiled loop of probit RESCAL's entity rows (:mod:`.rescal`, step 3).

Serial by design: each row's conditional reads the rows drawn before it, and
the standard normal draws come in from the caller's Generator, so the same
``random_state`` gives the same numbers.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True, nogil=True)
def draw_rows(entities, latent_rows, mixing, contributions, gram, stacked, noise,
              inverse_variances, first, ordinate_row, target):  # pragma: no cover - compiled
    """Draw rows ``first`` to n - 1 of ``entities`` (n x r) in turn, in place.

    Row i's precision is ``gram - contributions[i] + diag(inverse_variances)``
    and its linear term :func:`row_linear`'s; the draw is the mean plus
    ``L⁻ᵀ noise[i]`` (L the precision's Cholesky factor). After each row its
    images R_k a_i and R_kᵀ a_i (``stacked @ a_i``) replace its contribution
    to ``gram``. Returns the log density of ``target`` under row
    ``ordinate_row``'s conditional, evaluated before that row is drawn (0.0
    when ``ordinate_row`` is -1).
    """
    n, rank = entities.shape
    n_images = stacked.shape[0] // rank
    precision = np.empty((rank, rank))
    solved = np.empty(rank)
    row = np.empty(rank)
    log_density = 0.0
    for i in range(first, n):
        for c in range(rank):
            for d in range(rank):
                precision[c, d] = gram[c, d] - contributions[i, c, d]
            precision[c, c] += inverse_variances[c]
        linear = row_linear(latent_rows[i], entities, mixing)
        factor = np.linalg.cholesky(precision)
        # Forward: L y = linear (the mean is L⁻ᵀ y).
        for c in range(rank):
            total = linear[c]
            for d in range(c):
                total -= factor[c, d] * solved[d]
            solved[c] = total / factor[c, c]
        if i == ordinate_row:
            # log N(target | L⁻ᵀ y, (L Lᵀ)⁻¹) = Σ log L_cc - r log(2π)/2 - |Lᵀ target - y|²/2.
            log_density = -0.5 * rank * _LOG_2PI
            for c in range(rank):
                total = -solved[c]
                for d in range(c, rank):
                    total += factor[d, c] * target[d]
                log_density += math.log(factor[c, c]) - 0.5 * total * total
        # Backward: Lᵀ (mean + deviation) = y + noise.
        for c in range(rank):
            solved[c] += noise[i, c]
        for c in range(rank - 1, -1, -1):
            total = solved[c]
            for d in range(c + 1, rank):
                total -= factor[d, c] * row[d]
            row[c] = total / factor[c, c]
        for c in range(rank):
            entities[i, c] = row[c]
        images = np.dot(stacked, row).reshape(n_images, rank)
        update = np.dot(images.T, images)
        for c in range(rank):
            for d in range(rank):
                gram[c, d] += update[c, d] - contributions[i, c, d]
                contributions[i, c, d] = update[c, d]
    return log_density


@numba.njit(cache=True, nogil=True)
def row_linear(latent_row, entities, mixing):  # pragma: no cover - compiled
    """Row i's linear term :math:`\sum_k R_k (Z_k A)_i + R_k^\top (Z_k^\top A)_i`
    from ``latent_row`` (2K x n: z_k(i, ·) for every k, then z_k(·, i)) and
    ``mixing`` (r x 2Kr: :math:`[R_k]_{c,d}` at (c, k r + d), then
    :math:`[R_k]_{d,c}`): two products that read A and the cores, in cache,
    rather than every other row's 2K images."""
    return np.dot(mixing, np.dot(latent_row, entities).ravel())
