"""How observed values relate to latent Poisson counts: the two likelihoods.

Every model here is a Poisson model of latent counts :math:`N(v_0)` with rate
:math:`\\hat X(v_0)`; a likelihood says what is observed of them.

- ``"poisson"``: the counts themselves, :math:`X = N`.
- ``"bernoulli"`` (Bernoulli–Poisson link; Zhou, "Infinite edge partition
  models for overlapping community detection and link prediction", AISTATS
  2015; Hu, Rai & Carin, "Zero-truncated Poisson tensor factorization for
  massive binary tensors", UAI 2015): only whether a count is positive,
  :math:`X = 1[N > 0]`, so :math:`P(X = 1) = 1 - e^{-\\hat X}`. Given a one,
  :math:`N` is zero-truncated Poisson; given a zero, :math:`N = 0`.

Everything an algorithm needs from the likelihood is one of three things
(zeros contribute only :math:`-\\hat X`, the same under both, so only the
observed non-zeros are ever visited and the cost follows them):

- :meth:`count_ratio` — :math:`E[N \\mid X, \\hat X] / \\hat X` at a non-zero:
  :math:`X / \\hat X` (Poisson) or :math:`1 / (1 - e^{-\\hat X})` (Bernoulli).
  With it, the EM fixed point and the VB updates of the count model hold
  unchanged (the E-step, or the optimal :math:`q(N)`, at the ones), and the
  gradient of the log-likelihood is :math:`\\Delta_\\alpha(M \\circ` ratio
  :math:`) - \\Delta_\\alpha(M)`.
- :meth:`log_terms` (:meth:`entry_log_terms` summed) — the non-zero's term of the log-likelihood besides
  :math:`-\\hat X`: :math:`X \\log \\hat X` (Poisson) or
  :math:`\\log(e^{\\hat X} - 1)` (Bernoulli). Evaluated at the geometric means
  it is also the data term of the variational bound (the zero-truncated
  :math:`q(N) \\propto \\hat X_L^N / N!` normalises to :math:`e^{\\hat X_L} - 1`).
- :meth:`draw_counts` — a draw of :math:`N` given :math:`X` and
  :math:`\\hat X`, for the Gibbs samplers' allocation step.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, xlogy

from ._kernels import BERNOULLI_RATIO, POISSON_RATIO

__all__ = ["LIKELIHOODS", "get_likelihood", "PoissonLikelihood", "BernoulliPoissonLikelihood"]


class PoissonLikelihood:
    """Observed values are the Poisson counts themselves."""

    name = "poisson"
    #: The latent counts are the data: samplers need not draw them.
    counts_observed = True
    #: What the compiled Δ kernels compute as an entry's weight (``_kernels``).
    kernel_mode = POISSON_RATIO

    def check(self, data):
        """Poisson data: any non-negative values (already checked on input)."""

    @staticmethod
    def count_ratio(x, xhat, out=None):
        """E[N | X] / X̂ = X / X̂ at the non-zeros (into ``out``, a work array
        of x's shape, if given)."""
        return np.divide(x, xhat, out=out)

    @staticmethod
    def entry_log_terms(x, xhat):
        """X log X̂ at each entry (X̂ > 0; zeros of X give 0)."""
        return x * np.log(xhat)

    @staticmethod
    def log_terms(x, xhat, out=None):
        """Σ X log X̂ (:meth:`entry_log_terms`, summed; ``out``, a work array
        of x's shape, if given, holds the terms instead of a new array)."""
        terms = np.log(xhat, out=out)
        return float(np.sum(np.multiply(x, terms, out=terms)))

    @staticmethod
    def entry_log_likelihood(x, xhat):
        """log Poisson(x | X̂) at each entry: x log X̂ − X̂ − log Γ(x + 1)."""
        return xlogy(x, xhat) - xhat - gammaln(x + 1.0)

    @staticmethod
    def log_base_measure(data):
        """−Σ log Γ(X + 1): the part of the log-likelihood free of the factors."""
        return -data.log_factorial_total

    @staticmethod
    def draw_counts(rng, x, xhat):
        """The counts are observed: N = X (no random numbers used)."""
        return x

    @staticmethod
    def predictive(xhat_draws):
        """The posterior predictive mean of X: the mean of X̂ over draws (axis 0)."""
        return np.mean(xhat_draws, axis=0)

    @staticmethod
    def saturated_log_likelihood(data):
        """The largest log-likelihood any rate gives the data: each entry at
        its own rate, Σ x log x − x − log Γ(x + 1) (0 at zeros)."""
        return data.value_sum(_saturated_terms)


class BernoulliPoissonLikelihood:
    """Observed values are 1[N > 0] for a latent Poisson count N."""

    name = "bernoulli"
    counts_observed = False
    kernel_mode = BERNOULLI_RATIO

    def check(self, data):
        """Raise unless every observed value is 0 or 1."""
        n_bad = int(data.value_sum(_not_one))
        if n_bad:
            raise ValueError(
                f"likelihood='bernoulli' models binary data (0 = no link, 1 = link), but "
                f"{n_bad} observed value(s) are neither 0 nor 1; "
                "binarise the data (X > 0) or use likelihood='poisson' for counts."
            )

    @staticmethod
    def count_ratio(x, xhat, out=None):
        """E[N | X = 1] / X̂ = 1 / (1 − e^{−X̂}), the zero-truncated Poisson mean
        over X̂ (into ``out``, a work array of x's shape, if given)."""
        return np.divide(x, -np.expm1(-xhat), out=out)

    @staticmethod
    def entry_log_terms(x, xhat):
        """X log(e^{X̂} − 1) at each entry, computed as X̂ + log(1 − e^{−X̂}) (no
        overflow; X̂ > 0, zeros of X give 0)."""
        return x * (xhat + np.log(-np.expm1(-xhat)))

    def entry_log_likelihood(self, x, xhat):
        """log P(x | X̂) at each entry: log(1 − e^{−X̂}) at a one, −X̂ at a zero."""
        return self.entry_log_terms(x, xhat) - xhat

    def log_terms(self, x, xhat, out=None):
        """Σ X log(e^{X̂} − 1) (:meth:`entry_log_terms`, summed): over the ones.
        ``out`` is accepted for the Poisson signature; the terms need
        temporaries of their own here."""
        return float(np.sum(self.entry_log_terms(x, xhat)))

    @staticmethod
    def log_base_measure(data):
        """No constant: P(X = 1) = 1 − e^{−X̂} and P(X = 0) = e^{−X̂} exactly."""
        return 0.0

    @staticmethod
    def draw_counts(rng, x, xhat):
        """N ~ zero-truncated Poisson(X̂) at each one, exactly and vectorised.

        A Poisson process of rate X̂ on [0, 1] with at least one point has its
        first point at T ~ Exponential(X̂) truncated to [0, 1], and Poisson(X̂
        (1 − T)) points after it, so N = 1 + Poisson(X̂ (1 − T)). T is drawn by
        inverting its distribution function: T = −log(1 − U (1 − e^{−X̂})) / X̂.
        """
        u = rng.random(xhat.shape)
        first = -np.log1p(u * np.expm1(-xhat)) / xhat
        rest = np.maximum(xhat * (1.0 - first), 0.0)
        return 1.0 + rng.poisson(rest).astype(np.float64)

    @staticmethod
    def predictive(xhat_draws):
        """P(X = 1) = the mean of 1 − e^{−X̂} over draws (axis 0)."""
        return np.mean(-np.expm1(-np.asarray(xhat_draws)), axis=0)

    @staticmethod
    def saturated_log_likelihood(data):
        """A probability of binary data is at most 1."""
        return 0.0


def _saturated_terms(x):
    """x log x − x − log Γ(x + 1): an entry's log-likelihood at its own rate."""
    return xlogy(x, x) - x - gammaln(x + 1.0)


def _not_one(x):
    """1 for each non-zero value other than 1 (a non-binary value)."""
    return x != 1.0


LIKELIHOODS = {"poisson": PoissonLikelihood(), "bernoulli": BernoulliPoissonLikelihood()}


def get_likelihood(likelihood):
    """The likelihood object for a name in :data:`LIKELIHOODS` (or the object itself)."""
    if isinstance(likelihood, (PoissonLikelihood, BernoulliPoissonLikelihood)):
        return likelihood
    try:
        return LIKELIHOODS[likelihood]
    except (KeyError, TypeError):
        raise ValueError(
            f"likelihood must be one of {sorted(LIKELIHOODS)}, got {likelihood!r}."
        ) from None
