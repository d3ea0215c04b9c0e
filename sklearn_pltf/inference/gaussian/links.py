"""The Gaussian family's likelihoods: what ties the latent CP tensor X̂ to the data.

Each is an object with one interface, which the chains
(:func:`~sklearn_pltf.inference.gaussian.run_chain`), Chib's estimate
(:func:`~sklearn_pltf.evidence.gaussian_chib_log_evidence`) and the estimator
read, so that a new likelihood is a new row of :data:`LIKELIHOODS`:

- ``shape``, ``ndim``; ``learns_noise`` (whether σ² is a parameter);
  ``allows_negative`` (whether data may hold negative values);
  ``evidence_bound`` (what log p(X) cannot exceed: 0 for a probability of
  discrete data, None for a density);
  ``samplers`` (the methods that can sample it);
- ``initial_state(rng, rank, priors)``; ``sweep(rng, state, priors, clamped,
  visit)``, one Gibbs sweep leaving the posterior invariant;
- ``log_likelihood(factors, noise_variance)``, :math:`\\log p(X \\mid A, \\sigma^2)`;
- ``predictive(xhat, noise_variance)``, the mean of a new entry given X̂
  (the posterior predictive mean is its average over the draws), and
  ``entry_log_likelihood(x, xhat, noise_variance)``, each entry's term;
- ``fold_in(factors, mode, means, variances, noise_variance, nonnegative)``,
  the mean-field posterior mean of one factor with the rest held.

:class:`GaussianNoise`: :math:`x_v \\sim \\mathcal N(\\hat x_v, \\sigma^2)`.

:class:`ProbitLink`: binary data, :math:`P(x_v = 1 \\mid \\hat X) =
\\Phi(\\hat x_v)`, sampled through the latent Gaussian of Albert & Chib
("Bayesian analysis of binary and polychotomous response data", JASA 1993):
:math:`z_v \\sim \\mathcal N(\\hat x_v, 1)` and :math:`x_v = [z_v > 0]`. Given
X̂, each observed :math:`z_v` is that Gaussian truncated to the side its
:math:`x_v` names; given z, the factors are the Gaussian family's with z as
data and σ² = 1, so the sweep is exact Gibbs. A missing entry's
:math:`z_v` is drawn untruncated, :math:`\\mathcal N(\\hat x_v, 1)`: an exact
augmentation too (its x is summed out), which makes z complete, so the
factors' conditionals read one dense MTTKRP per mode with no correction for
missing entries. The latent tensor is dense: a sweep costs the tensor's
size, not its non-zeros.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr

from ...engine._data import ObservedTensor
from .._cp_stats import CPStatistics, cp_dense
from .._truncnorm import rectified_normal_mean
from ...engine.model import Model
from . import _probit_kernels
from ._model import GaussianInfo, init, log_likelihood
from ._string_stats import StringStatistics
from .sweeps import fold_in, gibbs_sweep

__all__ = ["GaussianNoise", "ProbitLink", "LIKELIHOODS", "likelihood_of", "cp_dense",
           "binary_signs", "statistics_of", "is_cp_model", "ard_groups"]


def statistics_of(data, model=None):
    """The data-side sums of ``data`` for a model string (a bound
    :class:`~sklearn_pltf.engine.model.Model`; None: CP):
    :class:`~sklearn_pltf.inference._cp_stats.CPStatistics` for CP, whose
    Gram identities are cheapest, else
    :class:`~._string_stats.StringStatistics`. Both give the same sums (tests)."""
    if model is None or is_cp_model(Model.parse(model)):
        return CPStatistics(data)
    return StringStatistics(data, model)


def is_cp_model(model):
    """Whether factor n is (axis n, the one latent index), as CP's factor matrices are."""
    return (len(model.latent) == 1 and model.n_factors == len(model.output)
            and all(f == axis + model.latent for f, axis in zip(model.factors, model.output)))


def ard_groups(model):
    """Per factor of ``model``, the latent index whose component variances
    its columns share under ARD (the factor's one latent index; on CP every
    mode shares ``r``), so that a component switches off in every factor
    that loads it at once; None for a factor with several latent indices or
    none, which ARD does not take (a Tucker core would take up the scale
    its loadings' relevances shrink)."""
    latent = set(model.latent)
    groups = []
    for factor in model.factors:
        own = [c for c in factor if c in latent]
        groups.append(own[0] if len(own) == 1 else None)
    return tuple(groups)


def binary_signs(data, advice=""):
    """+1 at an observed one, -1 at an observed zero, 0 where missing: the
    side of zero each latent Gaussian of the probit link lies on (dense,
    the data's shape). A ValueError naming a value other than 0 or 1
    (followed by ``advice``) if the observed entries hold one."""
    values = data.observed_values
    if values.size and not np.all(values == 1):
        negative = values.min() < 0
        bad = values.min() if negative else values[values != 1][0]
        raise ValueError(f"{'Negative values in data: ' if negative else ''}likelihood='probit' "
                         "models binary data (0 or 1 at every observed entry); X holds "
                         f"{bad:.6g}.{advice}")
    ones, observed = np.zeros(data.shape), np.ones(data.shape, dtype=bool)
    if data.is_sparse:
        ones[tuple(data.coords)] = 1.0
        if data.missing is not None and data.missing.size:
            observed[tuple(data.missing)] = False
    else:
        ones[data.dense != 0] = 1.0
        if data.mask is not None:
            observed = np.asarray(data.mask, dtype=bool).copy()
    return np.where(observed, 2.0 * ones - 1.0, 0.0)


class GaussianNoise:
    """:math:`x_v \\sim \\mathcal N(\\hat x_v, \\sigma^2)` on the observed
    entries of ``stats`` (a :class:`~sklearn_pltf.inference._cp_stats.CPStatistics`)."""

    learns_noise = allows_negative = True
    evidence_bound = None  # a density

    def __init__(self, stats):
        #: The data-side sums; also the model's layout (factor shapes, column labels).
        self.stats = self.structure = stats
        self.shape, self.ndim = stats.shape, stats.ndim
        self.samplers = stats.samplers  # the sums say which samplers can read them

    @classmethod
    def from_data(cls, data, model=None):
        return cls(statistics_of(data, model))

    def initial_state(self, rng, rank, priors):
        return init(rng, self.stats, rank, priors)

    def sweep(self, rng, state, priors, clamped=None, clamp_noise=False, visit=None):
        return gibbs_sweep(rng, state, self.stats, priors, clamped=clamped,
                           clamp_noise=clamp_noise, visit=visit)

    def log_likelihood(self, factors, noise_variance):
        return log_likelihood(self.stats, factors, noise_variance)

    @staticmethod
    def predictive(xhat, noise_variance):
        return xhat

    @staticmethod
    def entry_log_likelihood(x, xhat, noise_variance):
        return -0.5 * (np.log(2 * np.pi * noise_variance) + (x - xhat) ** 2 / noise_variance)

    def fold_in(self, factors, mode, means, variances, noise_variance, nonnegative):
        """:func:`~.sweeps.fold_in` on these data."""
        return fold_in(self.stats, factors, mode, means, variances, noise_variance,
                       nonnegative=nonnegative)


class ProbitLink:
    """Binary data under :math:`P(x_v = 1) = \\Phi(\\hat x_v)` (module docstring).

    Parameters
    ----------
    data : ObservedTensor
        Values 0 or 1 at the observed entries.
    model : Model or None
        The bound model string of X̂ (None: CP).
    """

    learns_noise = allows_negative = False
    samplers = ("gibbs",)
    evidence_bound = 0.0  # a probability of the binary data

    def __init__(self, data, model=None):
        self.shape, self.ndim = tuple(data.shape), data.ndim
        #: +1 at an observed one, -1 at an observed zero, 0 where missing.
        self.signs = binary_signs(data, " Use likelihood='gaussian' for real values.")
        self.observed = self.signs != 0
        self.model = model
        # The sums on the signs: the start's scale, X̂ from the factors, and
        # the model's layout (factor shapes, column labels).
        self._on_signs = self.structure = self._statistics(self.signs)

    @classmethod
    def from_data(cls, data, model=None):
        return cls(data, model)

    def _statistics(self, dense):
        """The model's sums on a complete dense tensor (the latent z, the signs)."""
        return statistics_of(ObservedTensor(self.shape, dense=dense), self.model)

    def _xhat(self, factors):
        return self._on_signs.dense_xhat(factors)

    def initial_state(self, rng, rank, priors):
        """:func:`~._model.init` on the signs (X̂ of mean square 1), σ² = 1."""
        return init(rng, self._on_signs, rank, priors)._replace(noise_variance=1.0)

    def draw_latent(self, rng, xhat):
        """z given X̂: :math:`\\mathcal N(\\hat x, 1)` truncated to z > 0 at a
        one, z < 0 at a zero, untruncated where missing."""
        latent = np.empty(xhat.shape)
        _probit_kernels.draw_latent(rng, xhat.ravel(), self.signs.ravel(), latent.ravel())
        return latent

    def sweep(self, rng, state, priors, clamped=None, clamp_noise=True, visit=None):
        """z given the factors, then the Gaussian family's sweep on z with σ² = 1."""
        stats = self._statistics(self.draw_latent(rng, self._xhat(state.factors)))
        state, _ = gibbs_sweep(rng, state._replace(noise_variance=1.0), stats, priors,
                               clamped=clamped, clamp_noise=True, visit=visit)
        return state, GaussianInfo(self.log_likelihood(state.factors))

    def log_likelihood(self, factors, noise_variance=1.0):
        """:math:`\\sum_{v \\in O} \\log \\Phi(s_v \\hat x_v)`: a probability of the binary data."""
        return float(_probit_kernels.binary_log_likelihood(self._xhat(factors).ravel(),
                                                           self.signs.ravel()))

    @staticmethod
    def predictive(xhat, noise_variance=1.0):
        """:math:`P(x = 1 \\mid \\hat x) = \\Phi(\\hat x)`."""
        return _probit_kernels.normal_cdf(xhat)

    @staticmethod
    def entry_log_likelihood(x, xhat, noise_variance=1.0):
        """:math:`\\log \\Phi(\\pm \\hat x)`, + at a one."""
        return log_ndtr(np.where(np.asarray(x) != 0, 1.0, -1.0) * xhat)

    def fold_in(self, factors, mode, means, variances, noise_variance=1.0, nonnegative=False,
                *, max_iter=200, tol=1e-8):
        """Mean-field VB of ``factors[mode]`` and the latent tensor with the
        other factors held: :meth:`expected_latent` at the current X̂, then a
        pass of :func:`~.sweeps.fold_in` on it with σ² = 1, until no element
        moves by more than ``tol`` relative to its row's largest."""
        factors = list(factors)
        for _ in range(max_iter):
            stats = self._statistics(self.expected_latent(self._xhat(factors)))
            old = factors[mode]
            factors[mode] = fold_in(stats, factors, mode, means, variances, 1.0, max_iter=1,
                                    nonnegative=nonnegative)
            change = np.abs(factors[mode] - old).max(axis=1)
            if np.all(change <= tol * np.maximum(np.abs(old).max(axis=1), 1e-300)):
                break
        return factors[mode]

    def expected_latent(self, xhat):
        """:math:`\\mathbb E[z]` under z's truncated Gaussian given X̂ (the
        mean-field update of q(z)): :math:`\\hat x + s\\, \\varphi(\\hat x) /
        \\Phi(s \\hat x)` at the observed entries (the rectified Gaussian's
        mean on the side s names), X̂ where missing."""
        s = np.where(self.signs != 0, self.signs, 1.0)
        return np.where(self.observed, s * rectified_normal_mean(s * xhat, 1.0), xhat)


#: The Gaussian family's likelihoods by the estimators' ``likelihood`` name.
LIKELIHOODS = {"gaussian": GaussianNoise, "probit": ProbitLink}


def likelihood_of(data):
    """``data`` as a likelihood: a :class:`~sklearn_pltf.inference._cp_stats.CPStatistics`
    is the Gaussian noise model's, a likelihood stays itself."""
    return data if isinstance(data, tuple(LIKELIHOODS.values())) else GaussianNoise(data)
