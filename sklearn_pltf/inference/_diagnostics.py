"""Convergence diagnostics of sampler runs."""

from __future__ import annotations

import numpy as np

__all__ = ["RHAT_LIMIT", "split_rhat"]

#: Split R-hat above this says the chains have not mixed (Vehtari et al. 2021
#: recommend 1.01 for their rank-normalised version, which needs many more
#: draws than a user's quick fit; the classic statistic at 1.05 flags chains
#: that disagree, not the noise of short ones).
RHAT_LIMIT = 1.05


def split_rhat(trace):
    """Split R-hat (Gelman et al., *Bayesian Data Analysis*, 3rd ed., §11.4) of
    a scalar traced by several chains.

    Parameters
    ----------
    trace : ndarray of shape (n_chains, n_draws)
        Post-warm-up values; each chain is cut into halves, so one chain
        works too.

    Returns
    -------
    float
        √(var⁺ / W), var⁺ = (n − 1)/n W + B/n over the half-chains; NaN with
        fewer than 4 draws per chain, and 1 when every value is the same.
    """
    trace = np.asarray(trace, dtype=np.float64)
    n = trace.shape[1] // 2
    if n < 2:
        return float("nan")
    halves = np.concatenate([trace[:, :n], trace[:, -n:]])
    within = halves.var(axis=1, ddof=1).mean()
    between = n * halves.mean(axis=1).var(ddof=1)
    if within == 0:
        return 1.0 if between == 0 else float("inf")
    return float(np.sqrt(((n - 1) / n * within + between / n) / within))
