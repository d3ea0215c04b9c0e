"""Convergence diagnostics of sampler runs."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["split_rhat", "warn_unless_mixed"]

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


def warn_unless_mixed(trace, what="the log-likelihood", advice="raise n_warmup and n_draws"):
    """A ``ConvergenceWarning`` when the split R-hat of ``trace`` (n_chains,
    n_draws) exceeds :data:`RHAT_LIMIT`; returns the R-hat."""
    rhat = split_rhat(trace)
    if rhat > RHAT_LIMIT:
        warnings.warn(
            f"The chains have not mixed: split R-hat of {what} is {rhat:.3g} (above "
            f"{RHAT_LIMIT}), so the posterior means and the evidence are not yet to be "
            f"trusted; {advice}.", ConvergenceWarning, stacklevel=2)
    return rhat
