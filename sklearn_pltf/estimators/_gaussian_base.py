"""The base of the Gaussian family's estimators (``GibbsNTF`` on CP,
``GaussianPLTF`` on any model string): validation, the chains, the evidence,
transform, prediction and export; a subclass says which model string
(:meth:`BaseGaussianFactorization._model_spec`)."""

from __future__ import annotations

import functools
from abc import abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine._contract import EntryList
from ..engine._factor_checks import check_entry_indices
from ..engine.model import Model
from ..evidence import _posterior as _mcmc
from ..evidence._ais import has_posterior_start, posterior_start
from ..evidence._checks import check_log_evidence
from ..evidence._gaussian_ais import gaussian_ais_log_evidence
from ..evidence._gaussian_chib import gaussian_chib_log_evidence
from ..inference import gaussian
from ..inference._chains import run_chains
from ..inference._diagnostics import chain_lengths, sample_until_mixed
from ..inference._inference_data import export_inference_data, factor_names_of
from ..inference._methods import FamilyMethods, choose_evidence
from ..inference.gaussian.links import is_cp_model
from ._one_tensor import sample_reconstruction, with_n_samples
from ._sampled import lengthen_advice, warn_unless_mixed
from ._skeleton import BaseFactorization
from ._validation import validate_tensor

#: What ``n_warmup="auto"`` and ``n_draws="auto"`` start from.
DEFAULT_N_WARMUP, DEFAULT_N_DRAWS = 500, 1000

#: ARD: a component counts towards ``effective_rank_`` when its share of the
#: largest component's energy is at least this.
EFFECTIVE_SHARE = 1e-3

__all__ = ["BaseGaussianFactorization", "DEFAULT_N_DRAWS", "DEFAULT_N_WARMUP", "EFFECTIVE_SHARE",
           "GAUSSIAN_PARAMETERS", "with_gaussian_parameters"]

#: The Parameters entries the Gaussian family's estimators share, for their docstrings.
GAUSSIAN_PARAMETERS = """\
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
        by every mode (on a model string, by the factors that carry the
        component's latent index), ``v_r ~ InvGamma(hyper_shape, hyper_scale)``, so the
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
        the time left, at most every 10 seconds."""


def with_gaussian_parameters(cls):
    """Put :data:`GAUSSIAN_PARAMETERS` in place of ``%(gaussian_parameters)s`` in ``cls.__doc__``."""
    cls.__doc__ = cls.__doc__.replace("%(gaussian_parameters)s", GAUSSIAN_PARAMETERS)
    return cls


class BaseGaussianFactorization(BaseFactorization):
    """Base class of the Gaussian family's estimators (not for direct use).

    ``factors_`` and ``draws_`` hold each factor as a tensor in its model
    string's index order (for CP, the (I_n, R) matrices); the samplers work
    on each factor as a matrix, a row per value of its observed indices and a
    column per value of its latent ones (:mod:`~sklearn_pltf.inference.gaussian._string_stats`).
    """

    _stale_attributes = ("draws_", "log_evidence_", "log_evidence_error_", "rhat_", "relevance_",
                         "effective_rank_")

    _parameter_constraints: dict = {
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

    def __init__(self, *, likelihood, nonnegative, method, evidence, n_warmup, n_draws, thin,
                 n_leapfrog, step_size, target_acceptance, noise_shape, noise_scale,
                 hyper_precision, hyper_shape, hyper_scale, ard, keep_draws, n_init, n_jobs,
                 random_state, verbose):
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

    @abstractmethod
    def _model_spec(self, ndim):
        """``(model string, latent sizes)`` for data of ``ndim`` dimensions."""

    def _bound_model(self, shape):
        string, sizes = self._model_spec(len(shape))
        return Model.parse(string).bind(shape, sizes)

    def _priors(self, model=None):
        """The priors of ``model``: under ARD, each factor's columns share the
        relevances of its latent index (:func:`~sklearn_pltf.inference.gaussian.ard_groups`;
        without a model, every factor's, as on CP)."""
        shared = gaussian.ard_groups(model) if self.ard and model is not None else None
        return gaussian.GaussianPriors(self.noise_shape, self.noise_scale, self.hyper_precision,
                                       self.hyper_shape, self.hyper_scale, bool(self.nonnegative),
                                       bool(self.ard), shared)

    def _observed(self, X, mask, reset):
        # Negative values pass here: the probit link refuses anything but 0
        # and 1 with its own message (naming binary data, not counts).
        data = validate_tensor(self, X, mask, reset=reset, allow_negative=True)
        with np.errstate(over="ignore"):
            sum_of_squares = float(np.sum(np.square(data.observed_values)))
        if not np.isfinite(sum_of_squares):
            raise ValueError(
                "The Gaussian likelihood sums the squares of the data, and those of X "
                f"(values up to {np.abs(data.observed_values).max():.3g}) overflow; scale X "
                "down, e.g. divide it by its standard deviation."
            )
        return data

    def _likelihood_of(self, data, model=None):
        model = self._bound_model(data.shape) if model is None else model
        return gaussian.LIKELIHOODS[self.likelihood].from_data(data, model)

    def _check_structure(self, model, likelihood):
        """A ValueError for what this model string cannot take: a sampler
        its likelihood has not, and, off the CP structure, ARD's variance per
        component over every mode and the chains' alignment (``n_init``)."""
        if self.method not in likelihood.samplers:
            raise ValueError(f"method={self.method!r} cannot sample likelihood="
                             f"{self.likelihood!r} on model {model.string!r}; use one of "
                             f"{list(likelihood.samplers)}.")
        if is_cp_model(model):
            return
        groups = gaussian.ard_groups(model)
        if self.ard and None in groups:
            factor = model.factors[groups.index(None)]
            raise ValueError(
                f"ard=True shares a variance per component among the factors of each latent "
                f"index, and needs every factor to carry exactly one latent index (as CP's and "
                f"NMF's do); factor {factor!r} of model {model.string!r} carries "
                f"{sum(c in model.latent for c in factor)}: use ard=False.")
        if self.n_init > 1:
            raise ValueError(f"n_init={self.n_init} aligns the chains' components, as CP's; on "
                             f"model {model.string!r} run one chain (n_init=1).")

    def _fit_data(self, data, rng):
        model = self._bound_model(data.shape)
        likelihood = self._likelihood_of(data, model)
        self._check_structure(model, likelihood)
        priors = self._priors(model)
        chain_rng, evidence_rng = rng.spawn(2)
        evidence = self._evidence_method(model, likelihood, data)
        lengths = chain_lengths(self.n_warmup, self.n_draws, DEFAULT_N_WARMUP, DEFAULT_N_DRAWS)
        rank = model.sizes[model.latent] if is_cp_model(model) else None  # CP's sums need it
        chain, n_warmup = self._run_chains(chain_rng, likelihood, rank, priors, lengths)
        if not (np.isfinite(chain.mean_noise_variance)
                and all(np.isfinite(f).all() for f in chain.mean_factors)):
            raise FloatingPointError(
                "The chain's factors or noise variance became non-finite; scale X to unit "
                "standard deviation, or check noise_shape and noise_scale."
            )
        structure = likelihood.structure
        tensors = tuple(structure.factor_tensor(a, f) for a, f in enumerate(chain.mean_factors))
        sample = model.sample_factor()
        fitted = {
            "model_": model, "factors_": tensors,
            "noise_variance_": float(chain.mean_noise_variance),
            "_sample_hyper": None if sample is None else (chain.mean_hyper_means[sample],
                                                          chain.mean_hyper_variances[sample]),
            "log_likelihoods_": chain.log_likelihoods, "acceptance_rate_": chain.acceptance,
            "step_size_": chain.step_size, "n_iter_": chain.log_likelihoods.shape[1],
            "n_warmup_": n_warmup,
            "rhat_": warn_unless_mixed(chain.log_likelihoods[:, n_warmup:],
                                       advice=lengthen_advice(self.n_warmup, lengths))}
        if self.ard:
            fitted.update(_relevance_attributes(model, priors, chain))
        if self.keep_draws:
            fitted.update(draws_=tuple(structure.factor_tensor(a, d)
                                       for a, d in enumerate(chain.draws)),
                          _noise_variance_draws=chain.noise_variance_draws)
        if evidence is not None:
            fitted.update(self._evidence(evidence, evidence_rng, data, model, likelihood, rank,
                                         priors, chain, n_warmup, lengths))
        return fitted

    def _evidence_method(self, model, likelihood, data):
        """The evidence estimator ``evidence`` names for these data (or None).

        AIS runs on the log-factors of non-negative CP factors, integrating
        each column's own hyper-parameters out; where the Gamma start cannot
        mix over the labels (``posterior_start`` gives None), AIS would run
        from the prior, far too short a path for real data: Chib then
        (``"auto"``)."""
        refused = {}
        if not is_cp_model(model):
            refused["ais"] = (f"evidence='ais' is built for the CP structure; on model "
                              f"{model.string!r} use evidence='chib'.")
        if self.ard:
            refused.setdefault("ais", "evidence='ais' integrates each column's own "
                               "hyper-parameters out; with ard=True (one variance per component "
                               "over every mode) use evidence='chib'.")
        if not likelihood.learns_noise:
            refused.setdefault("ais", "evidence='ais' integrates σ² out of the Gaussian "
                               f"likelihood; with likelihood={self.likelihood!r} use "
                               "evidence='chib'.")
        if not self.nonnegative:
            refused.setdefault("ais", "evidence='ais' runs on the log-factors of non-negative "
                               "factors; with nonnegative=False use evidence='chib'.")
        passed_over = () if "ais" not in refused and has_posterior_start(
            model, tuple(range(model.n_factors))) else ("ais",)
        return choose_evidence(self.method, self.evidence, "gaussian", sparse=data.is_sparse,
                               refused=refused, passed_over=passed_over)

    def _evidence(self, evidence, rng, data, model, likelihood, rank, priors, chain, n_warmup,
                  lengths):
        """``log_evidence_`` and its standard error by ``evidence``."""
        if evidence == "ais":
            start = posterior_start(model, chain.mean_factors,
                                    [np.exp(m) for m in chain.mean_log_factors])
            estimate = gaussian_ais_log_evidence(rng, data, rank, priors, start,
                                                 verbose=self.verbose)
            advice = ("evidence='ais' runs sklearn_pltf.evidence.gaussian_ais_log_evidence at "
                      "its defaults; call it directly with more runs or temperatures.")
        else:
            estimate = gaussian_chib_log_evidence(
                rng, likelihood, rank, priors, n_draws=lengths.n_draws,
                n_warmup=min(n_warmup, lengths.n_draws), point=chain.best, verbose=self.verbose,
                max_draws=lengths.max_draws)
            advice = "Lengthen Chib's clamped runs (n_warmup, n_draws)."
        # A density has no bound above (only finiteness is checked); a
        # probability of binary data (probit) is at most 1.
        return {"log_evidence_": check_log_evidence(
                    estimate.log_evidence, standard_error=estimate.standard_error,
                    upper_bound=likelihood.evidence_bound, advice=advice),
                "log_evidence_error_": estimate.standard_error}

    def _run_chains(self, rng, likelihood, rank, priors, lengths):
        """The pooled chains and their warm-up: ``n_init`` chains, run again
        with a longer warm-up until they mix (``n_warmup="auto"``,
        :func:`~sklearn_pltf.inference._diagnostics.sample_until_mixed`)."""
        def run(n_warmup, rng):
            # The same seeds at every warm-up: a longer Gibbs warm-up repeats the
            # shorter one's sweeps (HMC adapts over the warm-up, so its chain differs).
            one = functools.partial(
                gaussian.run_chain, stats=likelihood, rank=rank, priors=priors,
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
        W : ndarray of shape (n_samples, n_features_out)
            The sample factor's columns (CP: ``n_components``).
        """
        return super().transform(X, mask)

    def _transform_data(self, data):
        self._check_sample_shape(data)
        sample = self._sample_factor()
        likelihood = self._likelihood_of(data, with_n_samples(self.model_, data.shape[0]))
        factors = self._matrices_for(likelihood.structure, sample)
        # The start: the training samples' mean row.
        factors[sample] = np.broadcast_to(self._sample_rows().mean(axis=0),
                                          (data.shape[0], self._n_features_out)).copy()
        means, variances = self._sample_hyper
        return likelihood.fold_in(factors, sample, means, variances, self.noise_variance_,
                                  self.nonnegative)

    def _matrices_for(self, structure, sample):
        """The fitted factors as the sampler's matrices on new samples' data
        (``structure``), the sample factor left None."""
        return [None if a == sample else structure.factor_matrix(a, f)
                for a, f in enumerate(self.factors_)]

    def _sample_rows(self):
        """The fitted sample factor as a matrix: a row per training sample."""
        sample = self._sample_factor()
        tensor = self.factors_[sample]
        axis = self.model_.factors[sample].index(self.model_.output[0])
        return np.moveaxis(tensor, axis, 0).reshape(tensor.shape[axis], -1)

    def inverse_transform(self, X):
        """X̂ from sample-mode factor values ``X`` (n_samples, n_features_out),
        the other factors at their posterior means (dense)."""
        check_is_fitted(self)
        self._sample_factor()  # raises unless the model has a sample-mode factor
        return sample_reconstruction(self.model_, self.factors_, np.asarray(X, dtype=np.float64))

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
        sample = self._sample_factor()
        likelihood = self._likelihood_of(data, with_n_samples(self.model_, data.shape[0]))
        factors = self._matrices_for(likelihood.structure, sample)
        factors[sample] = self._transform_data(data)
        return likelihood.log_likelihood(factors, self.noise_variance_)

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
            default ``A``, ``B``, ``C``, ... (one per mode) for CP.

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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.positive_only = not gaussian.LIKELIHOODS[self.likelihood].allows_negative
        return tags


def _relevance_attributes(model, priors, chain):
    """``relevance_`` and ``effective_rank_`` of an ARD fit, per latent
    index: ``{index: variances}``, each component's posterior mean variance,
    and ``{index: count}``, the components whose energy over the index's
    factors (:func:`~sklearn_pltf.inference.gaussian.component_energy_shares`)
    is at least ``EFFECTIVE_SHARE`` of the largest's. CP has one index, whose
    array and int are given as they are (:class:`GibbsNTF`'s attributes)."""
    groups = gaussian.ard_members(priors, len(chain.mean_factors))
    relevance = {label: np.array(chain.mean_hyper_variances[members[0]])
                 for label, members in groups.items()}
    effective = {label: int(np.count_nonzero(gaussian.component_energy_shares(
        [chain.mean_factors[n] for n in members]) >= EFFECTIVE_SHARE))
        for label, members in groups.items()}
    if is_cp_model(model):
        (label,) = relevance
        return {"relevance_": relevance[label], "effective_rank_": effective[label]}
    return {"relevance_": relevance, "effective_rank_": effective}
