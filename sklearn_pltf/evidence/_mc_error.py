"""Monte Carlo standard errors of means of autocorrelated draws."""

from __future__ import annotations

import numpy as np

__all__ = ["batch_means_error", "effective_sample_size", "mean_error"]


def batch_means_error(values, n_batches=20):
    """Standard error of the mean of autocorrelated ``values`` by batch means."""
    values = np.asarray(values, dtype=np.float64)
    n_batches = min(n_batches, values.size)
    if n_batches < 2:
        return np.inf
    means = np.array([b.mean() for b in np.array_split(values, n_batches)])
    return float(means.std(ddof=1) / np.sqrt(n_batches))


def effective_sample_size(values):
    """Effective sample size of an autocorrelated series, ``n / τ``, with the
    integrated autocorrelation time τ by Geyer's initial monotone sequence
    (Geyer 1992): sums of adjacent autocorrelations, cut at the first
    non-positive one and made non-increasing. τ is held at 1 or more, so the
    size never exceeds ``n``."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n < 4:
        return float(n)
    centred = x - x.mean()
    spectrum = np.fft.rfft(centred, 2 * n)
    autocovariance = np.fft.irfft(spectrum * np.conj(spectrum))[:n] / n
    if autocovariance[0] <= 0:
        return float(n)
    rho = autocovariance / autocovariance[0]
    m = (n - 1) // 2
    pairs = rho[0:2 * m:2] + rho[1:2 * m + 1:2]
    non_positive = np.flatnonzero(pairs <= 0)
    pairs = np.minimum.accumulate(pairs[:non_positive[0] if non_positive.size else m])
    tau = max(-1.0 + 2.0 * float(pairs.sum()), 1.0)
    return n / tau


def mean_error(values):
    """Standard error of the mean of autocorrelated ``values``, from their
    :func:`effective_sample_size`."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return np.inf
    return float(values.std(ddof=1) / np.sqrt(effective_sample_size(values)))
