"""Annealed importance sampling of log p(X) for Gaussian non-negative PARAFAC
(the model of :mod:`sklearn_pltf.inference.gaussian`).

Both nuisance parts of the model are integrated out in closed form, so the
runs move the log-factors φ = log A alone:

- the noise variance: with N observed entries and S their squared error,
  :math:`p(X \\mid A) = (2\\pi)^{-N/2} \\frac{\\beta^\\alpha \\Gamma(\\alpha +
  N/2)}{\\Gamma(\\alpha) (\\beta + S/2)^{\\alpha + N/2}}` under σ² ~ IG(α, β);
- each column's (μ, v): :func:`~sklearn_pltf.inference.gaussian.log_factor_prior`.

The path runs from a Gamma start fitted to a chain's marginals
(:class:`~._ais.GammaStart`) to the posterior, with the same
Metropolis-adjusted Langevin moves, pilot-tuned steps and weights as the
Poisson models' (:func:`~._ais.anneal_forward`), or, with no start, from the
prior, drawn exactly through the columns' (μ, v) (which the prior's density,
with them integrated out, does not show). Walked
down from an exact posterior draw of the factors (for data simulated from
the model, the factors that generated them: σ² and the columns' (μ, v) are
integrated out, so the factors alone are a draw of this target's
posterior), the same ladder gives a stochastic upper bound
(:func:`gaussian_reverse_ais_log_evidence`, :func:`~._ais.anneal_reverse`).
"""

from __future__ import annotations

import functools
import string

import numpy as np
from scipy.special import gammaln

from ..engine._array_contract import contract
from ..inference.gaussian import (column_log_evidence, log_hyper_normalizer,
                                  sample_column_prior, sample_elements)
from ._ais import _per_run_sum, anneal_forward, anneal_reverse

__all__ = ["gaussian_ais_log_evidence", "gaussian_reverse_ais_log_evidence"]


class _GaussianTarget:
    """log p(A) and log p(X | A) (σ² and the column hyper-parameters
    integrated out) with their gradients in φ = log A, for a stack of runs."""

    def __init__(self, data, rank, priors):
        if priors.ard:
            raise ValueError("Gaussian AIS integrates each column's own (μ, v) out; under ARD "
                             "(one variance per component over every mode) use Chib's estimate.")
        if not priors.nonnegative:
            raise ValueError("Gaussian AIS moves the log-factors of non-negative NTF; for signed "
                             "factors (nonnegative=False) use Chib's estimate.")
        self.priors, self.rank = priors, rank
        self.free = tuple(range(data.ndim))
        self.ridges = [(n, 1, n + 1, 1) for n in range(data.ndim - 1)]  # (mode, axis of r) pairs
        self.X = data.dense
        self.mask = np.ones(data.shape, dtype=bool) if data.mask is None else data.mask
        self.n_observed = int(np.count_nonzero(self.mask))
        self._log_normalizers = {size: rank * log_hyper_normalizer(size, priors.hyper_precision)
                                 for size in data.shape}
        letters = string.ascii_lowercase[:data.ndim]
        operands = ["Z" + c + "R" for c in letters]  # run, mode index, component
        self._xhat = functools.partial(contract, ",".join(operands) + "->Z" + letters)
        self._mttkrp = {n: functools.partial(contract, ",".join(
            ["Z" + letters] + [op for m, op in enumerate(operands) if m != n]) + "->" + operands[n])
                        for n in self.free}

    def log_likelihood(self, phi):
        """Per run: log p(X | φ), σ² integrated out, and its gradient."""
        priors = self.priors
        factors = [np.exp(phi[n]) for n in self.free]
        residual = np.where(self.mask, self.X - self._xhat(*factors), 0.0)
        sse = _per_run_sum(residual**2)
        shape = priors.noise_shape + 0.5 * self.n_observed
        log_lik = (-0.5 * self.n_observed * np.log(2 * np.pi)
                   + priors.noise_shape * np.log(priors.noise_scale) - gammaln(priors.noise_shape)
                   + gammaln(shape) - shape * np.log(priors.noise_scale + 0.5 * sse))
        weight = (shape / (priors.noise_scale + 0.5 * sse))[:, None, None]
        gradient = {}
        for n in self.free:
            others = [f for m, f in enumerate(factors) if m != n]
            gradient[n] = weight * factors[n] * self._mttkrp[n](residual, *others)
        return log_lik, gradient

    def prior_draws(self, rng, n_runs):
        """``n_runs`` exact draws of every φ = log A from the prior, for a path
        from the prior (``start=None``): per column v ~ IG(a₀, b₀), u = μ/√v
        from N(u | 0, 1/s) Φ(u)^I (independent of v), μ = u√v
        (:func:`~sklearn_pltf.inference.gaussian.sample_column_prior`), then
        the column's elements from the rectified Gaussian R(μ, v), as
        :func:`~sklearn_pltf.inference.gaussian.sample_prior` draws them.
        A draw that rounds to 0 is raised to the smallest normal float, so
        that its log is finite."""
        priors, rank = self.priors, self.rank
        draws = {}
        for n, size in zip(self.free, self.X.shape):
            location, variance = sample_column_prior(rng, size, (n_runs, 1, rank), priors)
            factor = sample_elements(rng, np.broadcast_to(location, (n_runs, size, rank)),
                                     np.broadcast_to(np.sqrt(variance), (n_runs, size, rank)),
                                     priors)
            draws[n] = np.log(np.maximum(factor, np.finfo(np.float64).tiny))
        return draws

    def log_prior(self, phi):
        """Per run: log p(φ) (the columns' (μ, v) integrated out, Jacobian
        included) and its gradient."""
        prior, prior_grad = 0.0, {}
        for n in self.free:
            factor = np.exp(phi[n])
            value, gradient = self._log_factor_prior(factor)
            prior = prior + value + _per_run_sum(phi[n])  # + the Jacobian of A = e^φ
            prior_grad[n] = factor * gradient + 1.0
        return prior, prior_grad

    def _log_factor_prior(self, factor):
        """Batched :func:`~sklearn_pltf.inference.gaussian.log_factor_prior`
        (runs, I, R) and its gradient in A."""
        n = factor.shape[1]
        sums = factor.sum(axis=1)
        per_column, precision, shape, scale = column_log_evidence(
            sums, (factor**2).sum(axis=1), n, self.priors)
        value = per_column.sum(axis=1) - self._log_normalizers[n]
        gradient = -(shape / scale)[:, None, :] * (factor - (sums / precision)[:, None, :])
        return value, gradient


def gaussian_ais_log_evidence(rng, data, rank, priors, start, *, n_runs=32, n_temperatures=1000,
                              power=None, n_moves=2, verbose=0):
    """Estimate log p(X) of Gaussian NTF of rank ``rank`` by annealed importance sampling.

    Parameters
    ----------
    rng : numpy.random.Generator
    data : ObservedTensor
        Dense layout.
    rank : int
    priors : GaussianPriors
    start : GammaStart or None
        Where the path starts, e.g. the Gamma fit to a chain's factor
        marginals (:func:`~._ais.posterior_start`), or None: the prior,
        drawn exactly (:meth:`_GaussianTarget.prior_draws`), for a rank
        whose labels the Gamma start cannot mix over (above
        :data:`~._permanent.MAX_SIZE` components), a path far longer than
        the start's to travel on real data.
    n_runs, n_temperatures, power, n_moves, verbose
        As for :func:`~sklearn_pltf.evidence.ais_log_evidence`.

    Returns
    -------
    AISEstimate
    """
    if data.is_sparse:
        raise TypeError("gaussian_ais_log_evidence runs on dense data; pass a dense array.")
    return anneal_forward(rng, _GaussianTarget(data, rank, priors), start, n_runs=n_runs,
                          n_temperatures=n_temperatures, power=power, n_moves=n_moves,
                          verbose=verbose)


def gaussian_reverse_ais_log_evidence(rng, data, rank, priors, posterior_sample, start, *,
                                      n_runs=32, n_temperatures=1000, power=None, n_moves=2,
                                      verbose=0):
    """A stochastic upper bound on log p(X) of Gaussian NTF by reverse AIS
    from an exact posterior sample of the factors (bidirectional Monte
    Carlo, Grosse, Ghahramani & Adams 2015; as
    :func:`~sklearn_pltf.evidence.reverse_ais_log_evidence` for the Poisson
    models).

    Parameters
    ----------
    rng : numpy.random.Generator
    data : ObservedTensor
        Dense layout.
    rank : int
    priors : GaussianPriors
    posterior_sample : sequence of ndarray
        One positive (I_n, rank) array per mode, an exact draw of the factors
        from p(A | X), e.g. the factors that generated simulated ``data``.
    start : GammaStart
        Where the path ends, as for :func:`gaussian_ais_log_evidence`.
    n_runs, n_temperatures, power, n_moves, verbose
        As for :func:`~sklearn_pltf.evidence.ais_log_evidence`.

    Returns
    -------
    AISEstimate
        ``log_evidence`` is the upper estimate.
    """
    if data.is_sparse:
        raise TypeError("gaussian_reverse_ais_log_evidence runs on dense data; pass a dense array.")
    if len(posterior_sample) != data.ndim:
        raise ValueError(f"posterior_sample needs one factor per mode ({data.ndim}); "
                         f"got {len(posterior_sample)}.")
    initial = {}
    for n, (size, factor) in enumerate(zip(data.shape, posterior_sample)):
        factor = np.asarray(factor, dtype=np.float64)
        if factor.shape != (size, rank) or not np.all(factor > 0):
            raise ValueError(f"posterior_sample[{n}] must be a positive array of shape "
                             f"{(size, rank)}; got shape {factor.shape}.")
        initial[n] = np.log(factor)
    return anneal_reverse(rng, _GaussianTarget(data, rank, priors), start, initial,
                          n_runs=n_runs, n_temperatures=n_temperatures, power=power,
                          n_moves=n_moves, verbose=verbose)
