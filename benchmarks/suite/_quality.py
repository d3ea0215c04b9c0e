"""The quality a fit reached, measured the same way for ours and the peers'.

The Poisson log-likelihood per entry of the data under a fitted mean X̂,
(1 / N) Σ_e [x_e log x̂_e − x̂_e − log Γ(x_e + 1)] over all N entries, needs
X̂ only at the non-zeros and its total, so sparse data stay sparse. A
Frobenius fit may put exact zeros where x > 0: X̂ is floored at 1e-10 there.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, xlogy

FLOOR = 1e-10


def _coords_and_values(X):
    if sp.issparse(X):
        coo = X.tocoo()
        return np.vstack([coo.row, coo.col]), coo.data
    if hasattr(X, "coords"):  # pydata sparse
        return X.coords, X.data
    coords = np.nonzero(X)
    return np.vstack(coords), X[coords]


def cp_loglik_per_entry(X, factors, weights=None):
    """Poisson log-likelihood per entry of ``X`` at the CP mean of ``factors``
    (one (I_n, R) matrix per mode, ``weights`` per component)."""
    factors = [np.asarray(f, dtype=float) for f in factors]
    w = np.ones(factors[0].shape[1]) if weights is None else np.asarray(weights, dtype=float)
    coords, values = _coords_and_values(X)
    rows = w * np.prod([f[c] for f, c in zip(factors, coords)], axis=0)
    xhat = np.maximum(rows.sum(axis=1), FLOOR)
    total = float(np.sum(w * np.prod([f.sum(axis=0) for f in factors], axis=0)))
    n_entries = float(np.prod([f.shape[0] for f in factors]))
    return float(np.sum(xlogy(values, xhat) - gammaln(values + 1.0)) - total) / n_entries


#: Rows of a dense matrix at a time, so a large one's X̂ is never whole.
BLOCK_ROWS = 1000


def _dense_blocks(X, W, H):
    """``(x, x̂)`` over blocks of rows of the dense matrix ``X``, X̂ = W H."""
    W, H = np.asarray(W, dtype=float), np.asarray(H, dtype=float)
    for start in range(0, X.shape[0], BLOCK_ROWS):
        rows = slice(start, start + BLOCK_ROWS)
        yield np.asarray(X[rows], dtype=float), np.maximum(W[rows] @ H, FLOOR)


def nmf_loglik_per_entry(X, W, H):
    """Poisson log-likelihood per entry of the matrix ``X`` at X̂ = W H."""
    if sp.issparse(X) or hasattr(X, "coords"):
        return cp_loglik_per_entry(X, [W, np.asarray(H).T])
    total = sum(float(np.sum(xlogy(x, xhat) - xhat - gammaln(x + 1.0)))
                for x, xhat in _dense_blocks(X, W, H))
    return total / float(np.prod(X.shape))


def nmf_generalised_kl(X, W, H):
    """Σ x log(x / x̂) − x + x̂ over every entry of ``X``, X̂ = W H (dense)."""
    values = X.toarray() if sp.issparse(X) else np.asarray(X)
    return sum(float(np.sum(xlogy(x, x / xhat) - x + xhat))
               for x, xhat in _dense_blocks(values, W, H))


#: The measures :func:`nmf_quality` can report, by the name the page reads.
NMF_MEASURES = {"generalised_kl": nmf_generalised_kl, "loglik_per_entry": nmf_loglik_per_entry}


def nmf_quality(*names):
    """A case's ``quality(X, result)`` for NMF fits, ours (an estimator) or a
    peer's (``(W, H)``): the :data:`NMF_MEASURES` named, in that order."""
    def quality(X, result):
        W, H = result.factors_ if hasattr(result, "factors_") else result
        return {name: NMF_MEASURES[name](X, W, H) for name in names}
    return quality
