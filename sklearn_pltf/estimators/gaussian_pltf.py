"""GaussianPLTF: the Gaussian family (Gaussian noise or the probit link) on a
model string, sampled by block Gibbs."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval

from ._gaussian_base import BaseGaussianFactorization, with_gaussian_parameters

__all__ = ["GaussianPLTF"]


@with_gaussian_parameters
class GaussianPLTF(BaseGaussianFactorization):
    """Bayesian factorization of real-valued or binary tensors on any model string.

    ``X(v0) ~ N(X̂(v0), σ²)`` on the observed entries (or, with
    ``likelihood="probit"``, ``P(X(v0) = 1) = Φ(X̂(v0))``), with
    ``X̂(v0) = Σ_{v̄0} Π_α Z_α(v_α)`` written as in :class:`PLTF`: CP
    ``"ir,jr,kr->ijk"``, Tucker ``"ip,jq,kr,pqr->ijk"``, NMF ``"ik,kj->ij"``,
    hierarchical, convolutive. Every element of a factor is a Gaussian (or,
    with ``nonnegative=True``, a Gaussian truncated to ``[0, ∞)``) given its
    column's location and variance, under the hyper-prior of
    :class:`GibbsNTF`; a column is a value of the factor's latent indices,
    its elements the values of its observed ones (Tucker's core, with none,
    has one element per column).

    X̂ is linear in each factor, so a factor's column is Gaussian given the
    rest (a Bayesian linear regression on the design the other factors
    make), and the sampler draws the columns in turn (block Gibbs; Schmidt &
    Mohamed 2009 for CP). The evidence is Chib's, its first blocks averaged
    over the latent indices' labels and, for signed factors, the signs
    (:func:`~sklearn_pltf.evidence.gaussian_chib_log_evidence`): a density
    of the real data, or a probability of the binary data that compares
    with the Bernoulli–Poisson models' on the same data and mask.

    :class:`GibbsNTF` is this model on the CP string, by name; it gives the
    same numbers for the same seed.

    Parameters
    ----------
    model : str, default="ir,jr,kr->ijk"
        The factorization as an einsum-like string (:class:`PLTF`). Every
        observed index must belong to exactly one factor: tied factors (as
        RESCAL's; :class:`ProbitRESCAL` has the probit RESCAL) and fixed
        factors are not taken yet.
    n_components : int, dict or None, default=None
        Size of the latent indices: one int for all, or ``{index: size}``.
%(gaussian_parameters)s

        ``ard=True`` gives each latent index a relevance per component,
        shared by the factors that carry it (W's and H's columns on
        ``"ik,kj->ij"``), so one fit at a generous size learns it:
        ``relevance_`` and ``effective_rank_`` are then dicts by latent
        index. It needs every factor to carry exactly one latent index: a
        Tucker core, which carries several, would take up the scale its
        loadings' relevances shrink, and is refused with an error. Off the
        CP structure, ``n_init`` above 1 (which aligns the chains'
        components), ``method="hmc"`` and ``evidence="ais"`` are refused
        with an error: they are built for CP.

    Attributes
    ----------
    model_ : Model
        The model string bound to the data's shape.
    factors_ : tuple of ndarray
        Posterior mean of each factor, in its string's index order.
    noise_variance_ : float
        Posterior mean of σ² (1 under ``likelihood="probit"``).
    draws_ : tuple of ndarray
        Per factor, the kept draws, shape (n_init, n_draws, *factor shape).
        Only with ``keep_draws``.
    log_likelihoods_ : ndarray of shape (n_init, n_iterations)
        log p(X | Z, σ²) after every iteration.
    n_warmup_ : int
        The warm-up the chains ran.
    acceptance_rate_ : float
        1 for Gibbs.
    step_size_ : None
    log_evidence_, log_evidence_error_ : float
        Chib's estimate of log p(X) and its Monte Carlo standard error.
    relevance_, effective_rank_ : dict
        With ``ard=True`` (CP: an array and an int, as :class:`GibbsNTF`'s):
        per latent index, the posterior mean variance of each component,
        and the number of components whose energy (the product over the
        index's factors of the column's squared norm) is at least 1e-3 of
        the largest's.
    n_iter_ : int
        Iterations run by the chain.
    rhat_ : float
        Split R-hat of the log-likelihood over the kept iterations; above
        1.05 the fit warns (``ConvergenceWarning``).
    n_features_in_ : int
        Size of axis 1.

    See Also
    --------
    GibbsNTF : the CP case, with HMC, AIS, ARD and several chains.
    PLTF : the Poisson–Gamma family on model strings.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf import GaussianPLTF
    >>> rng = np.random.default_rng(0)
    >>> A, B, C, G = (rng.normal(size=s) for s in [(8, 2), (7, 2), (6, 2), (2, 2, 2)])
    >>> X = np.einsum("ip,jq,kr,pqr->ijk", A, B, C, G) + rng.normal(0, 0.1, (8, 7, 6))
    >>> est = GaussianPLTF("ip,jq,kr,pqr->ijk", 2, nonnegative=False, evidence=None,
    ...                    n_warmup=100, n_draws=100, random_state=0).fit(X)
    >>> [f.shape for f in est.factors_]
    [(8, 2), (7, 2), (6, 2), (2, 2, 2)]
    """

    _parameter_constraints: dict = {
        **BaseGaussianFactorization._parameter_constraints,
        "model": [str],
        "n_components": [Interval(Integral, 1, None, closed="left"), dict, None],
    }

    def __init__(self, model="ir,jr,kr->ijk", n_components=None, *, likelihood="gaussian",
                 nonnegative=True, method="gibbs", evidence="auto", n_warmup="auto",
                 n_draws="auto", thin=1, n_leapfrog=20, step_size=0.05, target_acceptance=0.8,
                 noise_shape=1.0, noise_scale=1.0, hyper_precision=1.0, hyper_shape=1.0,
                 hyper_scale=1.0, ard=False, keep_draws=True, n_init=1, n_jobs=None,
                 random_state=None, verbose=0):
        self.model = model
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
            Real-valued (or, with ``likelihood="probit"``, binary) data with
            as many dimensions as the model's observed indices; NaN marks
            missing entries of a dense array.
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
        return self.model, self.n_components
