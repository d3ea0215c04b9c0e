"""GibbsNTF: Bayesian non-negative PARAFAC for continuous data with Gaussian
noise (Schmidt & Mohamed 2009), sampled by Gibbs or HMC, and for binary data
through the probit link (Albert & Chib 1993)."""

from __future__ import annotations

import functools
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine._contract import EntryList
from ..evidence._ais import has_posterior_start, posterior_start
from ..evidence._checks import check_log_evidence
from ..evidence._gaussian_ais import gaussian_ais_log_evidence
from ..evidence._gaussian_chib import gaussian_chib_log_evidence
from ..inference import gaussian
from ..inference._methods import FamilyMethods, choose_evidence
from ..inference._chains import run_chains
from ..inference._diagnostics import chain_lengths, sample_until_mixed
from ..engine.model import Model, cp_model_string
from ..evidence import _posterior as _mcmc
from ._base import cp_reconstruction
from ._sampled import lengthen_advice, warn_unless_mixed
from ..engine._factor_checks import check_entry_indices
from ._validation import validate_tensor
from ..inference._inference_data import (export_inference_data, factor_names_of,
                                         mode_factor_names)
from ._skeleton import BaseFactorization
from ._tensor_export import CPResultMixin, with_cp_attributes

#: What ``n_warmup="auto"`` and ``n_draws="auto"`` start from.
DEFAULT_N_WARMUP, DEFAULT_N_DRAWS = 500, 1000

#: ARD: a component counts towards ``effective_rank_`` when its share of the
#: largest component's energy is at least this.
EFFECTIVE_SHARE = 1e-3

__all__ = ["GibbsNTF"]


@with_cp_attributes
class GibbsNTF(CPResultMixin, BaseFactorization):
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
    likelihood : {"gaussian", "probit"}, default="gaussian"
        ``"gaussian"``: real values with Gaussian noise of learned variance
        σ². ``"probit"``: binary data (0 or 1 at every observed entry; other
        values are an error), ``P(x = 1) = Φ(x̂)``, sampled by Gibbs only;
        the latent tensor it draws is dense, so a sweep costs the tensor's
        size also for sparse input.
    nonnegative : bool, default=True
        True: non-negative factors (rectified Gaussians). False: signed
        factors (Gaussians); the evidence is then Chib's (AIS runs on the
        log-factors of non-negative models only).
    method : {"gibbs", "hmc"}, default="gibbs"
        Column-wise Gibbs sampling with (rectified-)Gaussian conditionals, or
        Hamiltonian Monte Carlo on the log-factors (Jacobian included; on the
        factors themselves if signed) with the noise and hyper-parameters
        drawn by Gibbs between trajectories.
    evidence : {"auto", "ais", "chib"} or None, default="auto"
        How ``log_evidence_`` is estimated: ``"ais"``, annealed importance
        sampling over the log-factors (σ² and the column hyper-parameters
        integrated out in closed form) from a Gamma fit to the chain's
        factor marginals, dense data only (see
        :func:`~sklearn_pltf.evidence.gaussian_ais_log_evidence`);
        ``"chib"``, Chib's method (one clamped Gibbs run of ``min(n_warmup_,
        n_draws) + n_draws`` sweeps or more, see ``n_draws``, per factor
        element, whatever the
        ``sampler``; for signed factors each column's sign is averaged over
        like its label, see
        :func:`~sklearn_pltf.evidence.gaussian_chib_log_evidence`); ``"auto"``,
        AIS on dense data with non-negative factors, Chib otherwise;
        None skips it. AIS is the default because its cost does not grow
        with the number of factor elements, as Chib's does. Both give a
        standard error in ``log_evidence_error_``. Above 12 components
        the Gamma start cannot average over the components' labels (its
        cost grows as 2^R), so ``"auto"`` is Chib's there, and ``"ais"``
        starts its path from the prior (drawn exactly), which needs far
        more temperatures on real data. Under ``likelihood="probit"`` the
        evidence is Chib's, with the latent Gaussian drawn afresh in every
        sweep of the clamped runs.
    n_warmup : int or "auto", default="auto"
        Iterations discarded (HMC adapts its step size and mass over them).
        ``"auto"``: 500, doubled (the chains run again from the same seeds)
        while the split R-hat of the log-likelihood over the kept
        iterations is above 1.05, up to 2000 (4 times), so the chains run
        at most three times; ``n_warmup_`` holds the warm-up used. A number
        is used exactly.
    n_draws : int or "auto", default="auto"
        Iterations kept; also the length of each of Chib's clamped runs.
        ``"auto"``: 1000, and each clamped run goes on in blocks of 1000
        while its ordinate's relative Monte Carlo error (batch means) is
        above 0.5, up to 4000 (4 times); an ordinate still above it then
        warns. A number is used exactly.
    thin : int, default=1
        Keep every ``thin``-th iteration after warm-up.
    n_leapfrog : int, default=20
        Leapfrog steps per HMC trajectory.
    step_size : float, default=0.05
        HMC's first step size; adapted during warm-up.
    target_acceptance : float, default=0.8
        HMC's warm-up aims at this acceptance probability (the paper's rule:
        rejections below 25%).
    noise_shape, noise_scale : float, default=1.0
        Inverse-Gamma prior of the noise variance, in squared data units.
    hyper_precision, hyper_shape, hyper_scale : float, default=1.0
        Column hyper-prior: v ~ InvGamma(hyper_shape, hyper_scale), μ | v ~
        N(0, v / hyper_precision), in factor units (factor entries of order 1
        make X̂ of order R).
    ard : bool, default=False
        Automatic relevance determination (Zhao, Zhang & Cichocki 2015):
        every column has location 0 and one variance per component, shared
        by every mode, ``v_r ~ InvGamma(hyper_shape, hyper_scale)``, so the
        components the data do not need shrink in every mode at once and one
        fit at a generous ``n_components`` finds the rank
        (``effective_rank_``, ``relevance_``). Components switch off during
        the warm-up, so it needs a long ``n_warmup`` (the user guide's ARD
        section says how long and which ``hyper_shape``/``hyper_scale``).
        The evidence is then Chib's (``"auto"``).
    keep_draws : bool, default=True
        Keep every kept draw of the factors in ``draws_`` (for
        :meth:`to_inference_data` and :meth:`predict_entries`).
    n_init : int, default=1
        Independent chains, each from its own random start. Their columns
        (and, for signed factors, signs) are aligned to the first chain's
        and their summaries pooled; two or more give R-hat across chains.
    n_jobs : int or None, default=None
        Chains run in parallel through joblib (``None``: one unless in a
        ``joblib.parallel_backend`` context; -1: all processors).
    random_state : int, Generator or None, default=None
        Seeds the chains and the evidence's runs.
    verbose : int, default=0
        1 prints the progress of each chain and of the evidence's runs, with
        the time left, at most every 10 seconds.

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

    _stale_attributes = ("draws_", "log_evidence_", "log_evidence_error_", "rhat_", "relevance_",
                         "effective_rank_")

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "likelihood": [StrOptions(set(gaussian.LIKELIHOODS))],
        "nonnegative": ["boolean"],
        "method": [StrOptions(FamilyMethods("gaussian"))],
        "evidence": [StrOptions({"auto", "ais", "chib"}), None],
        "n_warmup": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "n_draws": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_leapfrog": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither")],
        "target_acceptance": [Interval(Real, 0, 1, closed="neither")],
        "noise_shape": [Interval(Real, 0, None, closed="neither")],
        "noise_scale": [Interval(Real, 0, None, closed="neither")],
        "hyper_precision": [Interval(Real, 0, None, closed="neither")],
        "hyper_shape": [Interval(Real, 0, None, closed="neither")],
        "hyper_scale": [Interval(Real, 0, None, closed="neither")],
        "ard": ["boolean"],
        "keep_draws": ["boolean"],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
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
        self.likelihood = likelihood
        self.nonnegative = nonnegative
        self.method = method
        self.evidence = evidence
        self.n_warmup = n_warmup
        self.n_draws = n_draws
        self.thin = thin
        self.n_leapfrog = n_leapfrog
        self.step_size = step_size
        self.target_acceptance = target_acceptance
        self.noise_shape = noise_shape
        self.noise_scale = noise_scale
        self.hyper_precision = hyper_precision
        self.hyper_shape = hyper_shape
        self.hyper_scale = hyper_scale
        self.ard = ard
        self.keep_draws = keep_draws
        self.n_init = n_init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _priors(self):
        return gaussian.GaussianPriors(self.noise_shape, self.noise_scale, self.hyper_precision,
                                       self.hyper_shape, self.hyper_scale, bool(self.nonnegative),
                                       bool(self.ard))

    def _observed(self, X, mask, reset):
        link = gaussian.LIKELIHOODS[self.likelihood]
        data = validate_tensor(self, X, mask, reset=reset, allow_negative=link.allows_negative)
        with np.errstate(over="ignore"):
            sum_of_squares = float(np.sum(np.square(data.observed_values)))
        if not np.isfinite(sum_of_squares):
            raise ValueError(
                "The Gaussian likelihood sums the squares of the data, and those of X "
                f"(values up to {np.abs(data.observed_values).max():.3g}) overflow; scale X "
                "down, e.g. divide it by its standard deviation."
            )
        return data

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

    def _likelihood_of(self, data):
        return gaussian.LIKELIHOODS[self.likelihood].from_data(data)

    def _fit_data(self, data, rng):
        likelihood = self._likelihood_of(data)
        if self.method not in likelihood.samplers:
            raise ValueError(f"method={self.method!r} cannot sample likelihood="
                             f"{self.likelihood!r}; use one of {list(likelihood.samplers)}.")
        priors = self._priors()
        chain_rng, evidence_rng = rng.spawn(2)
        model = Model.parse(cp_model_string(data.ndim)).bind(data.shape,
                                                             {"z": self.n_components})
        # AIS runs on the log-factors of non-negative factors, integrating
        # each column's own hyper-parameters out; where the Gamma start cannot
        # mix over the labels (posterior_start gives None), AIS would run from
        # the prior, far too short a path for real data: Chib then ("auto").
        refused = {}
        if self.ard:
            refused["ais"] = ("evidence='ais' integrates each column's own hyper-parameters out; "
                              "with ard=True (one variance per component over every mode) use "
                              "evidence='chib'.")
        if not likelihood.learns_noise:
            refused["ais"] = ("evidence='ais' integrates σ² out of the Gaussian likelihood; with "
                              f"likelihood={self.likelihood!r} use evidence='chib'.")
        if not self.nonnegative:
            refused.setdefault("ais", "evidence='ais' runs on the log-factors of non-negative factors; "
                              "with nonnegative=False use evidence='chib'.")
        evidence = choose_evidence(
            self.method, self.evidence, "gaussian", sparse=data.is_sparse, refused=refused,
            passed_over=() if has_posterior_start(model, tuple(range(data.ndim))) else ("ais",))
        lengths = chain_lengths(self.n_warmup, self.n_draws, DEFAULT_N_WARMUP, DEFAULT_N_DRAWS)
        chain, n_warmup = self._run_chains(chain_rng, likelihood, priors, lengths)
        if not (np.isfinite(chain.mean_noise_variance)
                and all(np.isfinite(f).all() for f in chain.mean_factors)):
            raise FloatingPointError(
                "The chain's factors or noise variance became non-finite; scale X to unit "
                "standard deviation, or check noise_shape and noise_scale."
            )
        fitted = {
            "model_": model, "factors_": chain.mean_factors,
            "noise_variance_": float(chain.mean_noise_variance),
            "_sample_hyper": (chain.mean_hyper_means[0], chain.mean_hyper_variances[0]),
            "log_likelihoods_": chain.log_likelihoods, "acceptance_rate_": chain.acceptance,
            "step_size_": chain.step_size, "n_iter_": chain.log_likelihoods.shape[1],
            "n_warmup_": n_warmup,
            "rhat_": warn_unless_mixed(chain.log_likelihoods[:, n_warmup:],
                                       advice=lengthen_advice(self.n_warmup, lengths))}
        if self.ard:
            fitted["relevance_"] = np.array(chain.mean_hyper_variances[0])
            fitted["effective_rank_"] = int(np.count_nonzero(
                gaussian.component_energy_shares(chain.mean_factors) >= EFFECTIVE_SHARE))
        if self.keep_draws:
            fitted.update(draws_=chain.draws, _noise_variance_draws=chain.noise_variance_draws)
        if evidence == "ais":
            start = posterior_start(model, chain.mean_factors,
                                    [np.exp(m) for m in chain.mean_log_factors])
            estimate = gaussian_ais_log_evidence(evidence_rng, data, self.n_components, priors,
                                                 start, verbose=self.verbose)
            advice = ("evidence='ais' runs sklearn_pltf.evidence.gaussian_ais_log_evidence at "
                      "its defaults; call it directly with more runs or temperatures.")
        elif evidence == "chib":
            estimate = gaussian_chib_log_evidence(
                evidence_rng, likelihood, self.n_components, priors, n_draws=lengths.n_draws,
                n_warmup=min(n_warmup, lengths.n_draws), point=chain.best, verbose=self.verbose,
                max_draws=lengths.max_draws)
            advice = "Lengthen Chib's clamped runs (n_warmup, n_draws)."
        if evidence is not None:
            # A density has no bound above (only finiteness is checked); a
            # probability of binary data (probit) is at most 1.
            fitted.update(log_evidence_=check_log_evidence(
                estimate.log_evidence, standard_error=estimate.standard_error,
                upper_bound=likelihood.evidence_bound, advice=advice),
                log_evidence_error_=estimate.standard_error)
        return fitted

    def _run_chains(self, rng, likelihood, priors, lengths):
        """The pooled chains and their warm-up: ``n_init`` chains, run again
        with a longer warm-up until they mix (``n_warmup="auto"``,
        :func:`~sklearn_pltf.inference._diagnostics.sample_until_mixed`)."""
        def run(n_warmup, rng):
            # The same seeds at every warm-up: a longer Gibbs warm-up repeats the
            # shorter one's sweeps (HMC adapts over the warm-up, so its chain differs).
            one = functools.partial(
                gaussian.run_chain, stats=likelihood, rank=self.n_components, priors=priors,
                sampler=self.method, n_warmup=n_warmup, n_draws=lengths.n_draws, thin=self.thin,
                keep_draws=self.keep_draws, step_size=self.step_size, n_leapfrog=self.n_leapfrog,
                target_acceptance=self.target_acceptance, verbose=self.verbose)
            chain, _ = run_chains(rng, one, self.n_init, pool=gaussian.pool_chains,
                                  n_jobs=self.n_jobs, label=self.method)
            return chain, chain.log_likelihoods

        return sample_until_mixed(run, rng, lengths, verbose=self.verbose)

    # ------------------------------------------------------------ transform
    def transform(self, X, mask=None):
        """Posterior mean of the sample-mode factor for the samples in ``X``,
        the other factors, σ² and the column hyper-parameters held at their
        posterior means: a mean-field fold-in, deterministic, each sample on
        its own (:func:`~sklearn_pltf.inference.gaussian.fold_in`).

        Returns
        -------
        W : ndarray of shape (n_samples, n_components)
        """
        return super().transform(X, mask)

    def _transform_data(self, data):
        self._check_sample_shape(data)
        factors = list(self.factors_)
        start = np.broadcast_to(self.factors_[0].mean(axis=0), (data.shape[0], self.n_components))
        factors[0] = start.copy()
        means, variances = self._sample_hyper
        return self._likelihood_of(data).fold_in(factors, 0, means, variances,
                                                 self.noise_variance_, self.nonnegative)

    def inverse_transform(self, X):
        """X̂ from sample-mode factor values ``X`` (n_samples, n_components),
        the other factors at their posterior means (dense)."""
        return cp_reconstruction(self, X)

    def predict_entries(self, indices):
        """Posterior predictive mean at the given entries of the fitted tensor:
        the average over the kept draws of X̂ (``likelihood="gaussian"``) or of
        the probability of a one, Φ(X̂) (``"probit"``); with
        ``keep_draws=False``, that of the posterior-mean factors, an
        approximation.

        Parameters
        ----------
        indices : array-like of int, shape (n_entries, n_dims)

        Returns
        -------
        xhat : ndarray of shape (n_entries,)
        """
        check_is_fitted(self)
        entries = EntryList(self.model_, check_entry_indices(indices, self.model_.observed_shape).T)
        link = gaussian.LIKELIHOODS[self.likelihood]
        if not hasattr(self, "draws_"):
            return link.predictive(entries.xhat(self.factors_), self.noise_variance_)
        n_chains, n_draws = self.draws_[0].shape[:2]
        variances = self._noise_variance_draws
        return sum(link.predictive(entries.xhat([d[c, k] for d in self.draws_]), variances[c, k])
                   for c in range(n_chains) for k in range(n_draws)) / (n_chains * n_draws)

    def score(self, X, y=None, mask=None):
        """``log_evidence_`` when ``X`` is the training data; for new samples,
        log p(X_new | Â) with their factor folded in (:meth:`transform`) and
        the rest at the posterior means: a plug-in predictive log-likelihood
        (a probability of the binary values under ``likelihood="probit"``)."""
        return super().score(X, y, mask)

    def _predictive_score(self, data):
        factors = [self._transform_data(data), *self.factors_[1:]]
        return self._likelihood_of(data).log_likelihood(factors, self.noise_variance_)

    def to_inference_data(self, X=None, *, mask=None, factor_names=None):
        """The kept draws as an ArviZ ``InferenceData`` (``diagnostics``
        extra), for R-hat, effective sample sizes and, given the training
        data, ``az.loo`` and ``az.waic``.

        Parameters
        ----------
        X : array-like, pydata sparse or scipy.sparse, default=None
            The training data: adds ``observed_data`` and ``log_likelihood``
            (variable ``x``: log N(x_e | X̂_e, σ²) of every observed entry at
            every draw, or log Φ(±X̂_e) under ``likelihood="probit"``, dimension ``entry``; ``constant_data.entry_index``
            gives each entry's coordinates).
        mask : array-like of bool, default=None
            The training mask, as given to :meth:`fit`.
        factor_names : sequence of str or dict, default=None
            A variable name per factor, or ``{position: name}`` for some;
            default ``A``, ``B``, ``C``, ... (one per mode).

        Returns
        -------
        idata : arviz.InferenceData
            ``posterior``: each factor's draws (chains aligned to the first)
            and ``noise_variance``; ``sample_stats.total_log_likelihood``.
        """
        check_is_fitted(self)
        if not hasattr(self, "draws_"):
            raise ValueError("No draws to export: fit with keep_draws=True.")
        model, draws, variances = self.model_, self.draws_, self._noise_variance_draws

        link = gaussian.LIKELIHOODS[self.likelihood]

        def entry_log_likelihood(x, xhat, chain, draw):
            return link.entry_log_likelihood(x, xhat, variances[chain, draw])

        return export_inference_data(
            model, draws, factor_names_of(model, factor_names, self._default_factor_names()),
            sample_stats={"total_log_likelihood": _mcmc.kept_sweeps(
                self.log_likelihoods_, self.n_warmup_, self.thin)},
            coords=self._index_coords(),
            data=None if X is None else self._training_data(X, mask),
            factors_at=lambda chain, draw: [d[chain, draw] for d in draws],
            entry_log_likelihood=entry_log_likelihood,
            extra_posterior={"noise_variance": variances})

    def _default_factor_names(self):
        return mode_factor_names(self.model_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.positive_only = not gaussian.LIKELIHOODS[self.likelihood].allows_negative
        return tags
