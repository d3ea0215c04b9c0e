"""The posterior predictive at listed entries, for link prediction.

Under the Poisson likelihood the predictive mean of an entry is E[X̂], which
for factors independent a posteriori (VB's q, and the plug-in the samplers and
EM keep) is X̂ at the factors' means: one contraction. Under the
Bernoulli–Poisson likelihood it is P(X = 1) = E[1 − e^{−X̂}], which is not a
function of the means (Jensen's inequality puts the plug-in 1 − e^{−X̂(E Z)}
above it); it is averaged over draws of the factors from the fitted posterior.
"""

from __future__ import annotations

import numpy as np

from ..engine._contract import EntryList
from ..engine._likelihood import get_likelihood
from ._gamma import gamma_from_moments

__all__ = ["N_PREDICTIVE_DRAWS", "predictive_at_entries"]

#: Draws of the factors that a Bernoulli–Poisson predictive averages over:
#: its Monte Carlo standard error is at most 0.5 / sqrt(256) ≈ 0.03, and far
#: less where the posterior pins X̂ down. All entries share the draws, so their
#: ranking (and an AUC) carries less noise than that.
N_PREDICTIVE_DRAWS = 256


def predictive_at_entries(model, state, coords, likelihood, *, method, draws=None, seed=0,
                          tied=None):
    """The posterior predictive mean at entries ``coords`` (n_dims, n_entries).

    Parameters
    ----------
    model : Model
        The fitted, bound model.
    state : VBState or EMState
        The fitted state (means, geometric means, and for VB q's Gamma
        shape and scale).
    coords : ndarray of shape (n_dims, n_entries)
    likelihood : {"poisson", "bernoulli"}
    method : str
        The fit's method: ``"em"`` averages over nothing (the mode is a point).
    draws : tuple of ndarray or None, default=None
        A sampler's kept draws, per factor ``(n_chains, n_draws, ...)`` (None
        for fixed factors); used instead of a Gamma fit when given.
    seed : int, default=0
        Seeds the draws of the factors (the fit stores one, so a fitted
        estimator predicts the same numbers every time).
    tied : dict or None, default=None
        ``{position: source position}``: factors that are another factor
        (RESCAL's second entity factor), given that factor's draw.

    Returns
    -------
    ndarray of shape (n_entries,)
        E[X̂] (Poisson), jump_mean · E[X̂] (compound Poisson) or P(X = 1)
        (Bernoulli–Poisson).
    """
    likelihood = get_likelihood(likelihood)
    entries = EntryList(model, coords)
    if likelihood.mean_is_linear or method == "em":
        return likelihood.predictive(entries.xhat(state.mean)[None])
    total = np.zeros(entries.n_entries)
    tied = dict(tied or {})
    for factors in _posterior_draws(np.random.default_rng(seed), model, state, draws, tied):
        total += likelihood.predictive(entries.xhat(factors)[None])
    return total / N_PREDICTIVE_DRAWS


def _posterior_draws(rng, model, state, draws, tied):
    """``N_PREDICTIVE_DRAWS`` draws of every factor: from a sampler's kept
    draws (evenly spaced over the pooled chains), else from a Gamma per
    element — VB's q, or for a sampler without kept draws the Gamma with its
    posterior mean and geometric mean. Fixed factors stay at their values."""
    free = [a for a in range(model.n_factors) if a not in model.fixed]
    if draws is not None and all(draws[a] is not None for a in free):
        pooled = {a: draws[a].reshape((-1,) + draws[a].shape[2:]) for a in free}
        n_kept = pooled[free[0]].shape[0]
        for index in np.linspace(0, n_kept - 1, N_PREDICTIVE_DRAWS).round().astype(int):
            yield _tie([pooled[a][index] if a in pooled else state.mean[a]
                        for a in range(model.n_factors)], tied)
        return
    gammas = {}
    for a in free:
        if state.shape[a] is not None:
            gammas[a] = (state.shape[a], 1.0 / state.scale[a])
        else:
            gammas[a] = gamma_from_moments(state.mean[a], state.geometric[a])
    for _ in range(N_PREDICTIVE_DRAWS):
        yield _tie([rng.standard_gamma(gammas[a][0]) / gammas[a][1] if a in gammas else state.mean[a]
                    for a in range(model.n_factors)], tied)


def _tie(factors, tied):
    """``factors`` with each tied position holding its source's array."""
    for position, source in tied.items():
        factors[position] = factors[source]
    return factors
