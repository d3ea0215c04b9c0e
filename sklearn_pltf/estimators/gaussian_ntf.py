"""GibbsNTF: Bayesian non-negative PARAFAC for continuous data with Gaussian
noise (Schmidt & Mohamed 2009), sampled by Gibbs or HMC, and for binary data
through the probit link (Albert & Chib 1993)."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval

from ..engine.model import cp_model_string
from ..inference._inference_data import mode_factor_names
from ._gaussian_base import BaseGaussianFactorization, with_gaussian_parameters
from ._tensor_export import CPResultMixin, with_cp_attributes

__all__ = ["GibbsNTF"]


@with_gaussian_parameters
@with_cp_attributes
class GibbsNTF(CPResultMixin, BaseGaussianFactorization):
    """Bayesian non-negative CP (PARAFAC) of real-valued tensors with Gaussian noise.

    The model of Schmidt & Mohamed ("Probabilistic non-negative tensor
    factorisation using Markov chain Monte Carlo", EUSIPCO 2009):

    ``X(i, j, k, ...) ~ N(Σ_r A_ir B_jr C_kr ..., σ²)`` on the observed entries,
    ``σ² ~ InvGamma(noise_shape, noise_scale)``, every factor element a
    Gaussian truncated to ``[0, ∞)`` with its column's location μ and variance
    v, and each column's (μ, v) under the joint hyper-prior that makes them
    Normal–inverse-Gamma given the column (``hyper_precision``,
    ``hyper_shape``, ``hyper_scale``; see :mod:`sklearn_pltf.inference.gaussian`).
    The hierarchy lets each component shrink when the data do not support
    it, so the fit does not overfit as the rank grows.

    With ``likelihood="probit"`` the data are binary (0 or 1) and
    ``P(x(i, j, k, ...) = 1) = Φ(Σ_r A_ir B_jr C_kr ...)``, Φ the standard
    normal CDF: the latent Gaussian of Albert & Chib (JASA 1993), drawn in
    every Gibbs sweep, makes every other conditional the Gaussian model's
    with σ² = 1. Its evidence is a probability of the binary data, so it
    compares with the Bernoulli–Poisson models' on the same data and mask,
    and :meth:`predict_entries` gives the posterior predictive probability of
    a one. Signed factors with ``ard=True`` are the usual choice for
    relations (``GibbsNTF(20, likelihood="probit", nonnegative=False,
    ard=True)``).

    With ``nonnegative=False`` the factor elements are plain Gaussians given
    their column's (μ, v), of either sign, under the Normal–inverse-Gamma
    hyper-prior: Bayesian CP as relational learning knows it (Xiong et al.,
    SDM 2010), for data where signs help (components that cancel, contrasts).

    Data are any real values (negative ones included); NaN marks a missing
    entry of a dense array, and the implicit zeros of sparse input are
    observed zeros (pass ``mask`` for missing ones). Axis 0 is the sample axis.

    Parameters
    ----------
    n_components : int, default=2
        The CP rank R.
%(gaussian_parameters)s
    Attributes
    ----------
%(cp_attributes)s
    model_ : Model
        The CP model string bound to the data's shape, e.g. ``"az,bz,cz->abc"``.
    factors_ : tuple of ndarray
        Posterior mean of each factor matrix, (I_n, n_components).
    noise_variance_ : float
        Posterior mean of σ² (1 under ``likelihood="probit"``, where it is fixed).
    draws_ : tuple of ndarray
        Per factor, the kept draws, shape (n_init, n_draws, I_n,
        n_components), chains aligned to the first. Only with ``keep_draws``.
    log_likelihoods_ : ndarray of shape (n_init, n_iterations)
        log p(X | A, σ²) after every iteration of each chain
        (``n_warmup_ + n_draws * thin`` of them).
    n_warmup_ : int
        The warm-up iterations the chains ran (``n_warmup``, or what
        ``"auto"`` chose).
    acceptance_rate_ : float
        Mean acceptance probability over the kept HMC iterations and the
        chains (1 for Gibbs).
    step_size_ : float or None
        HMC's adapted step size (the chains' mean).
    log_evidence_, log_evidence_error_ : float
        The estimate of log p(X) (``evidence``) and its Monte Carlo
        standard error.
    n_iter_ : int
        Iterations run by the chain.
    rhat_ : float
        Split R-hat of the log-likelihood over the kept iterations (each
        chain cut in halves); above 1.05 the fit warns
        (``ConvergenceWarning``) that the chains have not mixed.
    n_features_in_ : int
        Size of axis 1.
    relevance_ : ndarray of shape (n_components,)
        With ``ard``: the posterior mean of each component's variance v_r.
    effective_rank_ : int
        With ``ard``: the components whose energy (the squared norm of their
        rank-one term at the posterior means) is at least 1e-3 of the
        largest's.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf import GibbsNTF
    >>> rng = np.random.default_rng(0)
    >>> A, B, C = (rng.gamma(2.0, 1.0, (n, 2)) for n in (10, 8, 6))
    >>> X = np.einsum("ir,jr,kr->ijk", A, B, C) + rng.normal(0, 0.1, (10, 8, 6))
    >>> est = GibbsNTF(2, evidence=None, n_warmup=100, n_draws=100, random_state=0).fit(X)
    >>> est.factors_[0].shape
    (10, 2)
    """

    _parameter_constraints: dict = {
        **BaseGaussianFactorization._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_components=2, *, likelihood="gaussian", nonnegative=True,
                 method="gibbs", evidence="auto",
                 n_warmup="auto", n_draws="auto", thin=1, n_leapfrog=20, step_size=0.05,
                 target_acceptance=0.8,
                 noise_shape=1.0, noise_scale=1.0, hyper_precision=1.0, hyper_shape=1.0,
                 hyper_scale=1.0, ard=False, keep_draws=True, n_init=1, n_jobs=None,
                 random_state=None,
                 verbose=0):
        self.n_components = n_components
        super().__init__(
            likelihood=likelihood, nonnegative=nonnegative, method=method, evidence=evidence,
            n_warmup=n_warmup, n_draws=n_draws, thin=thin, n_leapfrog=n_leapfrog,
            step_size=step_size, target_acceptance=target_acceptance, noise_shape=noise_shape,
            noise_scale=noise_scale, hyper_precision=hyper_precision, hyper_shape=hyper_shape,
            hyper_scale=hyper_scale, ard=ard, keep_draws=keep_draws, n_init=n_init,
            n_jobs=n_jobs, random_state=random_state, verbose=verbose)

    def fit(self, X, y=None, mask=None):
        """Sample the posterior of the factors and estimate the evidence.

        Parameters
        ----------
        X : ndarray, pydata sparse array or scipy.sparse matrix
            Real-valued data with at least 2 dimensions; NaN marks missing
            entries of a dense array.
        y : None
            Ignored.
        mask : array-like of bool, default=None
            True where an entry is observed.

        Returns
        -------
        self : object
        """
        return super().fit(X, y, mask)

    def _model_spec(self, ndim):
        return cp_model_string(ndim), self.n_components

    def _default_factor_names(self):
        return mode_factor_names(self.model_)
