"""How observed values relate to latent Poisson counts: the three likelihoods.

Every model here is a Poisson model of latent counts :math:`N(v_0)` with rate
:math:`\\hat X(v_0)`; a likelihood says what is observed of them.

- ``"poisson"``: the counts themselves, :math:`X = N`.
- ``"bernoulli"`` (Bernoulli–Poisson link; Zhou, "Infinite edge partition
  models for overlapping community detection and link prediction", AISTATS
  2015; Hu, Rai & Carin, "Zero-truncated Poisson tensor factorization for
  massive binary tensors", UAI 2015): only whether a count is positive,
  :math:`X = 1[N > 0]`, so :math:`P(X = 1) = 1 - e^{-\\hat X}`. Given a one,
  :math:`N` is zero-truncated Poisson; given a zero, :math:`N = 0`.
- ``"compound_poisson"`` (non-negative reals; compound Poisson factorisation,
  Basbug & Engelhardt, ICML 2016, with exponential jumps): the sum of
  :math:`N` jumps, each Exponential with mean ``jump_mean``,
  :math:`X = \\sum_{n \\le N} G_n`. A zero is exactly :math:`N = 0`; a
  positive value has the density (Tweedie with power 1.5)

  .. math::

      p(x \\mid \\hat X) = e^{-\\hat X - \\beta x} \\, x^{-1} S(\\beta x \\hat X),
      \\qquad S(z) = \\sum_{N \\ge 1} \\frac{z^N}{N! (N - 1)!} = \\sqrt z \\, I_1(2 \\sqrt z),

  :math:`\\beta = 1 / \\text{jump_mean}`, and given it :math:`P(N) \\propto
  z^N / (N! (N - 1)!)` with mean :math:`\\sqrt z I_0(2 \\sqrt z) / I_1(2 \\sqrt z)`.
  :math:`E[X] = \\text{jump_mean} \\cdot \\hat X`.

Everything an algorithm needs from the likelihood is one of three things
(zeros contribute only :math:`-\\hat X`, the same under both, so only the
observed non-zeros are ever visited and the cost follows them):

- :meth:`count_ratio` — :math:`E[N \\mid X, \\hat X] / \\hat X` at a non-zero:
  :math:`X / \\hat X` (Poisson) or :math:`1 / (1 - e^{-\\hat X})` (Bernoulli).
  With it, the EM fixed point and the VB updates of the count model hold
  unchanged (the E-step, or the optimal :math:`q(N)`, at the ones), and the
  gradient of the log-likelihood is :math:`\\Delta_\\alpha(M \\circ` ratio
  :math:`) - \\Delta_\\alpha(M)`. Under the compound Poisson likelihood it is
  :math:`E[N] / \\hat X`.
- :meth:`log_terms` (:meth:`entry_log_terms` summed) — the non-zero's term of the log-likelihood besides
  :math:`-\\hat X`: :math:`X \\log \\hat X` (Poisson) or
  :math:`\\log(e^{\\hat X} - 1)` (Bernoulli) or :math:`\\log S(\\beta X \\hat X)`
  (compound). Evaluated at the geometric means it is also the data term of
  the variational bound (the zero-truncated :math:`q(N) \\propto \\hat X_L^N /
  N!` normalises to :math:`e^{\\hat X_L} - 1`, the compound one to
  :math:`S(\\beta X \\hat X_L)`).
- :meth:`draw_counts` — a draw of :math:`N` given :math:`X` and
  :math:`\\hat X`, for the Gibbs samplers' allocation step.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Protocol, runtime_checkable

import numba
import numpy as np
from scipy.special import gammaln, xlogy

from ._elementwise import compound_ratio
from ._kernels import (BERNOULLI_RATIO, COMPOUND_RATIO, MIDDLE_BLOCK, POISSON_RATIO,
                       SERIES_LIMIT, SMALL_Z, TINY, compound_log_sum, middle_entries,
                       middle_log_sum, small_compound_series)

__all__ = ["LIKELIHOODS", "Likelihood", "get_likelihood", "PoissonLikelihood",
           "BernoulliPoissonLikelihood", "CompoundPoisson"]


@runtime_checkable
class Likelihood(Protocol):
    r"""What every path of the engine reads of a likelihood (the declared
    interface a new one implements; ``x`` the observed non-zeros, ``xhat``
    :math:`\hat X` there, or the geometric means' for VB's bound).

    ``kernel_mode`` names the compiled element-wise pass that evaluates
    :meth:`count_ratio` and :meth:`log_terms` over dense data and in the
    sparse kernels (:data:`~._kernels.POISSON_RATIO`,
    :data:`~._kernels.BERNOULLI_RATIO` or :data:`~._kernels.COMPOUND_RATIO`;
    ``_elementwise`` and ``_kernels`` dispatch on it, passing ``jump_rate``,
    which only the compound pass reads): a new likelihood whose ratio is one
    of these declares it; one with a new ratio adds its mode to those two
    modules' passes. ``name`` identifies it (the array-API engine runs
    ``"poisson"`` and ``"bernoulli"``); ``counts_observed``: the data are
    the latent counts (the samplers need not draw them);
    ``mean_is_linear``: E[X] is linear in X̂ (a posterior predictive mean
    needs only E[X̂])."""

    name: str
    kernel_mode: int
    jump_rate: float
    counts_observed: bool
    mean_is_linear: bool

    def check(self, data):
        """Raise a ValueError naming the problem unless ``data`` (an
        ``ObservedTensor``) can be of this likelihood."""

    def count_ratio(self, x, xhat, out=None):
        r""":math:`E[N \mid X, \hat X] / \hat X` at the non-zeros."""

    def entry_log_terms(self, x, xhat):
        r"""Each non-zero's log-likelihood term besides :math:`-\hat X`."""

    def log_terms(self, x, xhat, out=None):
        """:meth:`entry_log_terms` summed (float64)."""

    def entry_log_likelihood(self, x, xhat):
        """log p(x | X̂) of each entry, zeros included."""

    def log_base_measure(self, data):
        """The terms of log p(X | X̂) that do not depend on X̂, summed."""

    def draw_counts(self, rng, x, xhat):
        """A draw of the latent counts N given X and X̂ (the samplers)."""

    def predictive(self, xhat_draws):
        """The posterior predictive mean of an entry from draws of X̂."""

    def saturated_log_likelihood(self, data):
        """The most log p(X | X̂) any X̂ gives ``data`` (an evidence's check)."""


class PoissonLikelihood:
    """Observed values are the Poisson counts themselves."""

    name = "poisson"
    #: The latent counts are the data: samplers need not draw them.
    counts_observed = True
    #: What the compiled Δ kernels compute as an entry's weight (``_kernels``).
    kernel_mode = POISSON_RATIO
    #: Read by the compiled kernels under the compound Poisson likelihood only.
    jump_rate = 1.0
    #: E[X] is linear in X̂, so its posterior mean needs only E[X̂].
    mean_is_linear = True

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
        return data.saturated_total


class BernoulliPoissonLikelihood:
    """Observed values are 1[N > 0] for a latent Poisson count N."""

    name = "bernoulli"
    counts_observed = False
    kernel_mode = BERNOULLI_RATIO
    jump_rate = 1.0
    mean_is_linear = False

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


#: The most jumps (x / jump_mean) an observed value may hold under
#: :class:`CompoundPoisson`: z = β x X̂ is about its square where X̂ meets
#: the data, which float64 holds with room to spare below 1e300.
MAX_JUMPS = 1e150


class CompoundPoisson:
    """Non-negative real data as compound Poisson sums of exponential jumps.

    Each observed value is the sum of a Poisson(X̂) number N of jumps, each
    Exponential with mean ``jump_mean`` (module docstring): an exact zero
    means no jump, and a positive value has a density, so the evidence is a
    density of the data in their own units. ``likelihood="compound_poisson"``
    is this with ``jump_mean=1``; pass ``CompoundPoisson(jump_mean=s)`` for
    data whose typical single event has size s (the evidence can choose s:
    it is comparable across jump means).

    Parameters
    ----------
    jump_mean : float, default=1.0
        The mean size of one jump, in the data's units: a real number,
        positive and finite, whose reciprocal (the jump rate) is finite too.
        Checked here, when the likelihood is made (it is a value, as a
        likelihood name is, that estimators take as given), with a
        TypeError for what is not one real number and a ValueError for a
        number out of range.
    """

    name = "compound_poisson"
    counts_observed = False
    kernel_mode = COMPOUND_RATIO
    mean_is_linear = True

    def __init__(self, jump_mean=1.0):
        self.jump_mean, self.jump_rate = _checked_jump_mean(jump_mean)

    def __repr__(self):
        return f"CompoundPoisson(jump_mean={self.jump_mean!r})"

    def __eq__(self, other):
        return isinstance(other, CompoundPoisson) and other.jump_mean == self.jump_mean

    def __hash__(self):
        return hash((CompoundPoisson, self.jump_mean))

    def check(self, data):
        """Raise unless every observed value (non-negative: checked on input)
        holds a number of jumps the fit can count: x / jump_mean, about the
        count N of jumps in x, at most ``MAX_JUMPS``. The fit's z = β x X̂
        is about (x / jump_mean)² where X̂ meets the data, so beyond that it
        overflows and the objective turns NaN."""
        limit = np.float64(MAX_JUMPS * self.jump_mean)  # float32 data compare in float64
        n_bad = int(data.value_sum(lambda x: x > limit))
        if n_bad:
            raise ValueError(
                f"likelihood {self!r}: {n_bad} observed value(s) exceed {limit:.3g}, i.e. hold "
                f"more than {MAX_JUMPS:.0e} jumps of mean {self.jump_mean!r}, beyond what the "
                "fit can count in floating point; give jump_mean on the scale of the data "
                "(the size of one event in their units), or rescale the data.")

    def _per_entry(self, kernel, x, xhat):
        """``kernel(x, xhat, jump_rate, out)`` over x and X̂ broadcast
        together, flat and contiguous; the result in their shape."""
        x, xhat = np.broadcast_arrays(np.asarray(x, dtype=np.float64),
                                      np.asarray(xhat, dtype=np.float64))
        result = np.empty(x.shape)
        kernel(np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(xhat).reshape(-1),
               self.jump_rate, result.reshape(-1))
        return result

    def count_ratio(self, x, xhat, out=None):
        """E[N | X, X̂] / X̂ at the non-zeros, 0 at zeros (into ``out`` if given;
        the dense pass of :func:`~sklearn_pltf.engine._elementwise.count_ratio_into`)."""
        result = self._per_entry(compound_ratio, x, np.maximum(xhat, TINY))
        if out is None:
            return result
        out[...] = result
        return out

    def entry_log_terms(self, x, xhat):
        """log S(β X X̂) at each entry (0 at zeros of X)
        (:func:`~sklearn_pltf.engine._kernels.compound_log_sum`)."""
        return self._per_entry(_compound_log_terms, x, xhat)

    def log_terms(self, x, xhat, out=None):
        """Σ log S(β X X̂) over the non-zeros (:meth:`entry_log_terms`,
        summed): S itself where z ≤ ``SMALL_Z`` in one vectorised pass (into
        ``out``, a work array of x's shape, if given) and numpy's logarithm,
        the log of the larger ones one by one."""
        x, xhat = np.broadcast_arrays(np.asarray(x, dtype=np.float64),
                                      np.asarray(xhat, dtype=np.float64))
        x, xhat = np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(xhat).reshape(-1)
        normalisers = np.empty(x.size) if out is None or not out.flags.c_contiguous \
            else out.reshape(-1)
        large = _small_normalisers(x, xhat, self.jump_rate, normalisers)
        return float(large + np.sum(np.log(normalisers)))

    def entry_log_likelihood(self, x, xhat):
        """log p(x | X̂) at each entry: −X̂ at a zero, −X̂ − βx − log x + log
        S(βxX̂) at a positive value."""
        x = np.asarray(x, dtype=np.float64)
        return self.entry_log_terms(x, xhat) - xhat + self._entry_base(x)

    def _entry_base(self, x):
        """−βx − log x at the positive values, 0 at zeros."""
        positive = x > 0
        return np.where(positive, -self.jump_rate * x - np.log(np.where(positive, x, 1.0)), 0.0)

    def log_base_measure(self, data):
        """Σ (−βx − log x) over the observed positive values: the part of
        the log density free of the factors."""
        return data.value_sum(self._entry_base)

    def draw_counts(self, rng, x, xhat):
        """N given a positive X at each listed entry, exactly: P(N) ∝ z^N /
        (N! (N − 1)!), z = βXX̂, by inversion of one uniform per entry,
        summing outwards from the mode (:func:`_draw_compound_counts`)."""
        z = self.jump_rate * np.asarray(x, dtype=np.float64) * xhat
        counts = np.empty(z.shape)
        _draw_compound_counts(np.ascontiguousarray(z).reshape(-1), rng.random(z.size),
                              counts.reshape(-1))
        return counts

    def predictive(self, xhat_draws):
        """The posterior predictive mean of X: jump_mean × the mean of X̂ over draws (axis 0)."""
        return self.jump_mean * np.mean(xhat_draws, axis=0)

    def saturated_log_likelihood(self, data):
        """An upper bound on the log density any rate gives the data: a
        positive value's density is a Poisson mixture of Gamma(N, β)
        densities, each at most β there, so n_positive · log β."""
        return data.value_sum(lambda x: np.where(x > 0, np.log(self.jump_rate), 0.0))


def _checked_jump_mean(jump_mean):
    """``(jump_mean, 1 / jump_mean)`` as floats, or the error that names
    what is wrong: not one real number (None, a string, an array, a bool:
    TypeError), or not positive and finite, or so small that its
    reciprocal, the rate every kernel reads, overflows (ValueError)."""
    if isinstance(jump_mean, (bool, np.bool_)) or not isinstance(jump_mean, Real):
        raise TypeError(f"jump_mean must be one real number (the mean size of one jump), got "
                        f"{jump_mean!r} of type {type(jump_mean).__name__}.")
    jump_mean = float(jump_mean)
    if not np.isfinite(jump_mean) or jump_mean <= 0:
        raise ValueError(f"jump_mean must be a positive number, got {jump_mean!r}.")
    with np.errstate(over="ignore"):
        jump_rate = float(np.float64(1.0) / np.float64(jump_mean))
    if not np.isfinite(jump_rate):
        raise ValueError(
            f"jump_mean must be a positive number whose reciprocal, the jump rate, is finite; "
            f"got {jump_mean!r}, whose rate 1 / jump_mean overflows (jump_mean must be at "
            f"least {1.0 / np.finfo(np.float64).max:.3g}).")
    return jump_mean, jump_rate


@numba.njit(cache=True, nogil=True)
def _compound_log_terms(x, xhat, jump_rate, out):  # pragma: no cover - compiled
    for i in range(x.size):
        out[i] = 0.0 if x[i] == 0.0 else compound_log_sum(jump_rate * x[i] * xhat[i])


@numba.njit(cache=True, nogil=True)
def _small_normalisers(x, xhat, jump_rate, out):  # pragma: no cover - compiled
    """out = S(z) = z S₁(z) where 0 < z ≤ SMALL_Z, 1 elsewhere (log 0);
    returns Σ log S(z) over the entries with z above it, block by block as
    :func:`~sklearn_pltf.engine._elementwise.compound_ratio` takes them."""
    for i in range(x.size):
        z = min(jump_rate * x[i] * xhat[i], SMALL_Z)
        normaliser = z * small_compound_series(z)[1]
        out[i] = normaliser if x[i] != 0.0 else 1.0
    large = 0.0
    index, gathered = np.empty(MIDDLE_BLOCK, dtype=np.int64), np.empty(MIDDLE_BLOCK)
    for start in range(0, x.size, MIDDLE_BLOCK):
        stop = min(start + MIDDLE_BLOCK, x.size)
        m, above = middle_entries(x, xhat, jump_rate, start, stop, index, gathered)
        for k in range(m):
            gathered[k] = middle_log_sum(gathered[k])
        for k in range(m):
            out[index[k]] = 1.0
            large += gathered[k]
        if above:
            for i in range(start, stop):
                value = jump_rate * x[i] * xhat[i]
                if value >= SERIES_LIMIT:
                    out[i] = 1.0
                    large += compound_log_sum(value)
    return large


@numba.njit(cache=True)
def _draw_compound_counts(z, uniforms, out):  # pragma: no cover - compiled
    """out[i] ~ P(N) ∝ z^N / (N! (N − 1)!), N ≥ 1, by inverting ``uniforms[i]``.

    The weights relative to the mode m (where N (N + 1) ≥ z first holds)
    follow from w(N + 1) / w(N) = z / (N (N + 1)); they are summed outwards
    until negligible, then the uniform is inverted from the lower end.
    """
    for i in range(z.size):
        zi = z[i]
        mode = max(1, int(math.ceil((math.sqrt(1.0 + 4.0 * zi) - 1.0) / 2.0)))
        low, weight, total = mode, 1.0, 1.0
        while low > 1:
            weight *= low * (low - 1) / zi
            if weight < 1e-17 * total:
                break
            low -= 1
            total += weight
        high, weight = mode, 1.0
        while True:
            weight *= zi / (high * (high + 1.0))
            if weight < 1e-17 * total:
                break
            high += 1
            total += weight
        # Back to the weight of ``low`` relative to the mode, then walk up.
        weight = 1.0
        for n in range(mode, low, -1):
            weight *= n * (n - 1) / zi
        target, n, cumulative = uniforms[i] * total, low, weight
        while cumulative < target and n < high:
            weight *= zi / (n * (n + 1.0))
            n += 1
            cumulative += weight
        out[i] = n


def _not_one(x):
    """1 for each non-zero value other than 1 (a non-binary value)."""
    return x != 1.0


LIKELIHOODS = {"poisson": PoissonLikelihood(), "bernoulli": BernoulliPoissonLikelihood(),
               "compound_poisson": CompoundPoisson()}


def get_likelihood(likelihood):
    """The likelihood object for a name in :data:`LIKELIHOODS` (or the
    object itself, anything with the :class:`Likelihood` interface)."""
    # The shipped classes first: a Protocol's isinstance reads every member.
    shipped = (PoissonLikelihood, BernoulliPoissonLikelihood, CompoundPoisson)
    if isinstance(likelihood, shipped) or (not isinstance(likelihood, str)
                                           and isinstance(likelihood, Likelihood)):
        return likelihood
    try:
        return LIKELIHOODS[likelihood]
    except (KeyError, TypeError):
        raise ValueError(
            f"likelihood must be one of {sorted(LIKELIHOODS)}, got {likelihood!r}."
        ) from None
