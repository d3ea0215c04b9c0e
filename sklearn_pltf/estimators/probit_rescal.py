"""ProbitRESCAL: RESCAL with signed factors for binary relations, through the
probit link, sampled by block Gibbs (with Chib's evidence) or fitted by
mean-field VB (with its bound)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine.model import Model
from ..evidence._checks import check_log_evidence
from ..evidence._probit_rescal_chib import probit_rescal_chib_log_evidence
from ..inference._driver import OptimizerProblem, Settings
from ..inference.gaussian.rescal import ProbitRescalModel, run_rescal_chain
from ..inference.gaussian.rescal_vb import ProbitRescalVB, predictive_probabilities
from ..inference.relational.structure import RESCAL_MODEL, SINGLE_RELATION_MODEL
from ..engine._factor_checks import check_entry_indices
from ._fitting import fit_by_optimizer
from ._sampled import warn_unless_mixed
from ._skeleton import BaseFactorization
from ._validation import validate_tensor

__all__ = ["ProbitRESCAL"]

#: ARD: a column counts towards ``effective_rank_`` when its relevance is at
#: least this share of the largest.
EFFECTIVE_SHARE = 1e-3


class ProbitRESCAL(BaseFactorization):
    """Bayesian RESCAL with signed factors for binary relations (probit link).

    ``P(x(i, j, k) = 1) = Φ(a_iᵀ R_k a_j)``, Φ the standard normal CDF, for an
    entity x entity x relation tensor of 0/1 values (or an entity x entity
    matrix, one relation): RESCAL's structure (Nickel, Tresp & Kriegel, ICML
    2011), one entity factor A on both entity axes and a core R_k per
    relation, with the latent Gaussian of Albert & Chib (JASA 1993). The
    factors are signed: ``a_i ~ N(0, diag(v))`` with a relevance v_c per
    column (automatic relevance determination, ``v_c ~ InvGamma(prior_shape,
    prior_scale)``), so one fit at a generous ``n_components`` leaves the
    columns the data do not need near zero; ``R_k(c, d) ~ N(0, w)``, ``w ~
    InvGamma(prior_shape, prior_scale)``. Where the Bernoulli–Poisson
    :class:`BayesianRESCAL` (non-negative factors) can only add links, signed
    factors can also say who does *not* relate to whom, which is what lifts
    link prediction on Nations, Kinships and UMLS (the Validation page).

    ``method="gibbs"`` (the default) samples the posterior by block Gibbs
    (:mod:`sklearn_pltf.inference.gaussian.rescal`): the latent tensor,
    every core at once, then each row of A given the others.
    :meth:`predict_entries` gives the posterior predictive probability of a
    link, for :func:`~sklearn_pltf.metrics.link_prediction_auc` and
    :func:`~sklearn_pltf.model_selection.cross_validate_entries`. Its
    evidence, a probability of the binary data like the Bernoulli–Poisson
    models', is Chib's estimate with the latent variables
    (:mod:`sklearn_pltf.evidence._probit_rescal_chib`), offered for small
    problems only (``evidence="chib"``): its blocks (a row of A, a
    relation's core) hold up to ``n_components²`` values, and the Monte Carlo
    error of a block's ordinate grows with its size, so on data the size of
    Nations it is not yet to be trusted (the fit warns, and raises when the
    estimate is impossible). At the default ``evidence=None`` a Gibbs fit's
    :meth:`score` has no evidence to return.

    ``method="vb"`` fits a mean-field approximation instead
    (:mod:`sklearn_pltf.inference.gaussian.rescal_vb`: Gaussian rows of A,
    Gaussian cores, a truncated Gaussian per latent entry), whose bound is
    a lower bound of the same log evidence, comparable with the
    Bernoulli–Poisson :class:`BayesianRESCAL`'s bound on the same data and
    mask: :meth:`score` returns it, so ``GridSearchCV`` can choose between
    the two families. A VB step costs :math:`O(n^2 K r + (n + K) r^4 + r^6)`
    (the cores share one :math:`r^2 \times r^2` covariance), so VB suits a
    modest ``n_components``; its predictions are less sharp than the
    sampler's (the Validation page gives both, and the step's time).

    Diagonal entries x(i, i, k) are treated as missing, as in
    :class:`BayesianRESCAL`: they neither inform the fit nor count in its
    evidence. NaN marks a missing entry of a dense array; the implicit zeros
    of sparse input are observed zeros (pass ``mask`` for missing ones). The
    latent tensor is dense, so a sweep costs the tensor's size, not its
    non-zeros.

    Parameters
    ----------
    n_components : int, default=2
        Columns of A (R_k is n_components x n_components); an upper bound
        that ARD prunes.
    method : {"gibbs", "vb"}, default="gibbs"
        Block Gibbs sampling, or mean-field VB (see above).
    evidence : {"chib"} or None, default=None
        Gibbs only. ``"chib"``: Chib's estimate, from one clamped run of
        ``min(n_warmup, n_draws) + n_draws`` sweeps per element of A's first
        row, per other row of A and per relation's core (``n_components +
        n_entities - 1 + n_relations`` runs), for small problems (see
        above). None skips it. (VB's evidence is its bound, always.)
    n_warmup : int, default=1000
        Gibbs: sweeps discarded.
    n_draws : int, default=1000
        Gibbs: sweeps kept: :meth:`predict_entries` averages Φ(x̂) over them.
        Also the length of each of Chib's clamped runs.
    max_iter : int, default=1000
        VB: at most this many steps per initialisation.
    tol : float, default=0.1
        VB stops once its bound is estimated to be within ``tol`` nats of
        its limit (see ``tol`` of :class:`BayesianNMF`).
    n_init : int, default=1
        VB: initialisations from random starts; the one of highest bound is
        kept.
    prior_shape, prior_scale : float, default=1.0
        The inverse-Gamma prior of every column relevance v_c and of the
        cores' variance w.
    random_state : int, Generator or None, default=None
        Seeds the chain and the evidence's runs, or VB's starts.
    verbose : int, default=0
        1 prints the progress of the chain and of the evidence's runs, with
        the time left, at most every 10 seconds (VB: each initialisation's
        start and end; 2 also every 10th step's bound).

    Attributes
    ----------
    model_ : Model
        ``"ia,jb,abk->ijk"`` (``"ia,jb,ab->ij"`` for one relation) with its sizes.
    factors_ : tuple of ndarray
        ``(A, A, R)``: posterior means (VB: q's), in model order, R of shape
        (n_components, n_components, n_relations) (or without the last axis
        for one relation). Signed factors of a model that is symmetric under
        a signed permutation of A's columns: means over one of its modes.
    log_likelihoods_ : ndarray of shape (1, n_sweeps)
        Gibbs: log p(X | A, R) after every sweep, warm-up included.
    rhat_ : float
        Gibbs: split R-hat of the log-likelihood over the kept sweeps; above
        1.05 the fit warns (``ConvergenceWarning``).
    relevance_ : ndarray of shape (n_components,)
        The posterior mean of each column's variance v_c.
    effective_rank_ : int
        The columns whose relevance is at least 1e-3 of the largest's.
    log_evidence_ : float
        Gibbs with ``evidence="chib"``: Chib's estimate of log p(X) over the
        observed off-diagonal entries; VB: its bound of it.
    log_evidence_error_ : float
        Gibbs with ``evidence="chib"``: the estimate's Monte Carlo standard
        error.
    lower_bound_ : float
        VB: the bound at the end of the kept initialisation.
    objective_history_ : ndarray
        VB: the bound after every step of the kept initialisation (never
        decreasing).
    converged_ : bool
        VB: whether the kept initialisation met ``tol``; if not, the fit
        warns (``ConvergenceWarning``).
    n_iter_ : int
        Sweeps run by the chain, or VB's steps.
    n_features_in_ : int
        The number of entities.

    Examples
    --------
    >>> from sklearn_pltf import ProbitRESCAL
    >>> from sklearn_pltf.datasets import load_nations
    >>> X = load_nations().data
    >>> est = ProbitRESCAL(4, n_warmup=50, n_draws=50, random_state=0).fit(X)
    >>> est.transform(X).shape
    (14, 4)
    """

    _stale_attributes = ("log_evidence_", "log_evidence_error_", "log_likelihoods_", "rhat_",
                         "lower_bound_", "objective_history_", "converged_")

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "method": [StrOptions({"gibbs", "vb"})],
        "evidence": [StrOptions({"chib"}), None],
        "n_warmup": [Interval(Integral, 0, None, closed="left")],
        "n_draws": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "prior_shape": [Interval(Real, 0, None, closed="neither")],
        "prior_scale": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, n_components=2, *, method="gibbs", evidence=None, n_warmup=1000,
                 n_draws=1000, max_iter=1000, tol=0.1, n_init=1, prior_shape=1.0,
                 prior_scale=1.0, random_state=None, verbose=0):
        self.n_components = n_components
        self.method = method
        self.evidence = evidence
        self.n_warmup = n_warmup
        self.n_draws = n_draws
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.prior_shape = prior_shape
        self.prior_scale = prior_scale
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None, mask=None):
        """Sample the posterior of A and R (or fit VB's approximation of it)
        and estimate the evidence.

        Parameters
        ----------
        X : ndarray, pydata sparse array or scipy.sparse matrix
            0/1 relations, shape (n_entities, n_entities, n_relations) or
            (n_entities, n_entities); NaN marks missing entries of a dense
            array.
        y : None
            Ignored.
        mask : array-like of bool, default=None
            True where an entry is observed.

        Returns
        -------
        self : object
        """
        return super().fit(X, y, mask)

    def _observed(self, X, mask, reset):
        data = validate_tensor(self, X, mask, reset=reset, allow_negative=False)
        if data.ndim not in (2, 3) or data.shape[0] != data.shape[1]:
            raise ValueError(
                "ProbitRESCAL needs an entity x entity x relation tensor (or an entity x entity "
                f"matrix, one relation), its first two axes the same size; got shape "
                f"{data.shape}.")
        return data

    def _model(self, data):
        return Model.parse(SINGLE_RELATION_MODEL if data.ndim == 2 else RESCAL_MODEL).bind(
            data.shape, {"a": self.n_components, "b": self.n_components})

    def _fit_data(self, data, rng):
        if self.method == "vb" and self.evidence is not None:
            raise ValueError(f"evidence={self.evidence!r} is Gibbs's: method='vb' has its "
                             "bound as its evidence; leave evidence=None.")
        model = ProbitRescalModel(data, self.prior_shape, self.prior_scale)
        fitted = _FITS[self.method](self, model, rng)
        entities, cores = fitted.pop("_entities"), np.moveaxis(fitted.pop("_cores"), 0, -1)
        if data.ndim == 2:
            cores = cores[..., 0]
        relevance = fitted["relevance_"]
        fitted.update({
            "model_": self._model(data), "factors_": (entities, entities, cores),
            "effective_rank_": int(np.count_nonzero(relevance >= EFFECTIVE_SHARE * relevance.max())),
        })
        return fitted

    def _fit_vb(self, model, rng):
        kernel = ProbitRescalVB(self.n_components)
        result = fit_by_optimizer(
            OptimizerProblem(kernel, model, None,
                             lambda start_rng, restart, contractor: kernel.init(start_rng,
                                                                                contractor)),
            rng.spawn(self.n_init),
            Settings(self.max_iter, self.tol, acceleration=None, verbose=self.verbose))
        state, bound = result.state, float(result.objectives[-1])
        return {
            "_entities": state.means, "_cores": state.core_means,
            "_probabilities": model.in_data_order(predictive_probabilities(state)),
            "relevance_": kernel.column_variances(state, model),
            "log_evidence_": bound, "lower_bound_": bound,
            "objective_history_": np.asarray(result.objectives),
            "converged_": bool(result.converged), "n_iter_": len(result.objectives),
        }

    def _fit_gibbs(self, model, rng):
        chain_rng, evidence_rng = rng.spawn(2)
        chain = run_rescal_chain(chain_rng, model, self.n_components, n_warmup=self.n_warmup,
                                 n_draws=self.n_draws, verbose=self.verbose)
        fitted = {
            "_entities": chain.mean_entities, "_cores": chain.mean_cores,
            "_probabilities": chain.probabilities, "log_likelihoods_": chain.log_likelihoods[None],
            "n_iter_": chain.log_likelihoods.size, "relevance_": chain.mean_column_variances,
            "rhat_": warn_unless_mixed(chain.log_likelihoods[None, self.n_warmup:]),
        }
        if self.evidence is not None:
            estimate = probit_rescal_chib_log_evidence(
                evidence_rng, model, self.n_components, n_draws=self.n_draws,
                n_warmup=min(self.n_warmup, self.n_draws), point=chain.best, verbose=self.verbose)
            # A probability of the binary data: at most 1.
            fitted.update(log_evidence_=check_log_evidence(
                estimate.log_evidence, standard_error=estimate.standard_error, upper_bound=0.0,
                advice="Chib's blocks are too large for their Monte Carlo error at this size: "
                       "lower n_components, or lengthen the clamped runs (n_draws)."),
                log_evidence_error_=estimate.standard_error)
        return fitted

    def predict_entries(self, indices):
        """The posterior predictive probability of a one at the given entries
        of the fitted tensor: Φ(a_iᵀ R_k a_j) averaged over the kept draws
        (VB: :math:`\\Phi(m / \\sqrt{1 + s^2})`, m and s² the mean and
        variance of a_iᵀ R_k a_j under q).

        Parameters
        ----------
        indices : array-like of int, shape (n_entries, n_dims)

        Returns
        -------
        probability : ndarray of shape (n_entries,)
        """
        check_is_fitted(self)
        entries = check_entry_indices(indices, self.model_.observed_shape)
        return self._probabilities[tuple(entries.T)]

    def transform(self, X, mask=None):
        """The posterior mean of the entity factor A of the training data.

        Returns
        -------
        A : ndarray of shape (n_entities, n_components)
        """
        return super().transform(X, mask)

    def _transform_data(self, data):
        self._require_training_data(data, "transforms")
        return self.factors_[0]

    def _predictive_score(self, data):
        self._require_training_data(data, "scores")
        return self._training_score()

    def _require_training_data(self, data, what):
        if not self._is_training_data(data):
            raise ValueError(
                f"ProbitRESCAL {what} its training data only: its entities are that tensor's, "
                "and a new entity needs its relations to them; refit on the tensor with the "
                "new entities.")

    def _training_score(self):
        if not hasattr(self, "log_evidence_"):
            raise ValueError(
                "This ProbitRESCAL fit has no evidence of its training data: evidence=None is "
                "the default, as Chib's estimate is reliable on small problems only; refit "
                "with evidence='chib' there, or with method='vb', whose bound is its evidence.")
        return float(self.log_evidence_)

    def _accepts_tensors(self):
        return True

    def _default_factor_names(self):
        return ["A", "A", "R"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.positive_only = True
        return tags


#: ``method`` -> the fit that runs it (each returns the fitted attributes,
#: the factors' means as ``_entities`` and relation-first ``_cores``).
_FITS = {"gibbs": ProbitRESCAL._fit_gibbs, "vb": ProbitRESCAL._fit_vb}
