"""Compiled loop of probit RESCAL's entity rows (:mod:`.rescal`, step 3).

Serial by design: each row's conditional reads the rows drawn before it, and
the standard normal draws come in from the caller's Generator, so the same
``random_state`` gives the same numbers.

A row needs the cores twice: for its linear term before it is drawn, and
for its images :math:`R_k a_i, R_k^\\top a_i` after. :func:`core_pass` does
both in one read of the cores (the images of row i with the linear term of
row i + 1): at a few dozen relations and components the cores outgrow the
core's cache, and reading them is what a row costs.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def core_pass(cores, row, projected, images, linear):  # pragma: no cover - compiled
    r"""One read of the cores R (K x r x r) for two rows' needs.

    Writes the images of ``row`` into ``images`` (2K x r: :math:`R_k a`, then
    :math:`R_k^\top a`) and, into ``linear``, the linear term
    :math:`\sum_k R_k y_k + R_k^\top y_{K+k}` of the row whose ``projected``
    (2K x r) holds :math:`y_k = (Z_k A)_i` and :math:`y_{K+k} = (Z_k^\top A)_i`.
    (Sums are reassociated, so the last bits depend on the CPU's vector width.)
    """
    n_relations, rank = cores.shape[0], cores.shape[1]
    linear[:] = 0.0
    for k in range(n_relations):
        transposed = images[n_relations + k]
        transposed[:] = 0.0
        for c in range(rank):
            image, incoming = 0.0, 0.0
            weight, incoming_weight = row[c], projected[n_relations + k, c]
            for d in range(rank):
                value = cores[k, c, d]
                image += value * row[d]
                incoming += value * projected[k, d]
                transposed[d] += value * weight
                linear[d] += value * incoming_weight
            images[k, c] = image
            linear[c] += incoming


@numba.njit(cache=True, nogil=True)
def draw_rows(entities, latent_rows, cores, contributions, gram, noise, inverse_variances,
              first, ordinate_row, target):  # pragma: no cover - compiled
    """Draw rows ``first`` to n - 1 of ``entities`` (n x r) in turn, in place.

    Row i's precision is ``gram - contributions[i] + diag(inverse_variances)``
    and its linear term :func:`core_pass`'s, from ``latent_rows[i]`` (2K x n:
    z_k(i, ·) for every k, then z_k(·, i)) times A; the draw is the mean plus
    ``L⁻ᵀ noise[i]`` (L the precision's Cholesky factor). After each row its
    images replace its contribution to ``gram``. Returns the log density of
    ``target`` under row ``ordinate_row``'s conditional, evaluated before
    that row is drawn (0.0 when ``ordinate_row`` is -1).
    """
    n, rank = entities.shape
    precision = np.empty((rank, rank))
    solved = np.empty(rank)
    row = np.zeros(rank)
    images = np.empty((2 * cores.shape[0], rank))
    linear = np.empty(rank)
    log_density = 0.0
    if first < n:  # the first row's linear term (the images of a zero row are discarded)
        core_pass(cores, row, np.dot(latent_rows[first], entities), images, linear)
    for i in range(first, n):
        for c in range(rank):
            for d in range(rank):
                precision[c, d] = gram[c, d] - contributions[i, c, d]
            precision[c, c] += inverse_variances[c]
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
        # Row i's images, and row i + 1's linear term, now that A has row i
        # (after the last row there is none to project).
        projected = (np.dot(latent_rows[i + 1], entities) if i + 1 < n
                     else np.zeros((images.shape[0], rank)))
        core_pass(cores, row, projected, images, linear)
        update = np.dot(images.T, images)
        for c in range(rank):
            for d in range(rank):
                gram[c, d] += update[c, d] - contributions[i, c, d]
                contributions[i, c, d] = update[c, d]
    return log_density
