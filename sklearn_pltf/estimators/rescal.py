"""BayesianRESCAL: one entity factor on both entity modes of a relational tensor."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..evidence._checks import check_poisson_log_evidence
from ..inference import rescal, rescal_gibbs
from ..inference._common import gamma_priors
from . import _mcmc
from ._base import BasePoissonPLTF, run_to_convergence

__all__ = ["BayesianRESCAL"]

#: The structure as a model string, for a relation tensor and for one
#: relation (a square matrix); factor 1 is factor 0.
RESCAL_MODEL = "ia,jb,abk->ijk"
SINGLE_RELATION_MODEL = "ia,jb,ab->ij"
TIED = {1: 0}
_SGLD_PARAMETERS = ("batch_size", "n_blocks", "n_temperatures", "steps_per_temperature",
                    "step_size")


def _fit_restart(method, rng, data, priors, n_components, max_iter, tol, report):
    kernel = rescal.KERNELS[method]
    state = kernel.init(rng, data, priors, n_components)
    return run_to_convergence(kernel, state, data, priors, max_iter, tol, report)


class BayesianRESCAL(BasePoissonPLTF):
    """Bayesian non-negative RESCAL for relational data (entity x entity x relation).

    ``X(i, j, k) ~ Poisson(Σ_ab A(i, a) A(j, b) G(a, b, k))``, or its
    Bernoulli–Poisson link for 0/1 relations, with Gamma priors on the entity
    factor A (one row per entity, the same on both entity axes) and the
    relation core G: the RESCAL structure (Nickel, Tresp & Kriegel 2011) with
    non-negative factors, as the model string ``"ia,jb,abk->ijk"`` with its
    second factor tied to the first. Where CP needs a component per pattern
    of who relates to whom, G(·, ·, k) says how each pair of entity clusters
    relates under relation k, so exclusive relations (kin terms) need few
    components. A square entity x entity matrix (a graph's adjacency matrix)
    is one relation: ``X(i, j) ~ Poisson(Σ_ab A(i, a) A(j, b) G(a, b))``.

    Fitted by variational Bayes (its bound is the log evidence, so
    :meth:`score` and ``GridSearchCV`` with
    :class:`~sklearn_pltf.model_selection.FullDataSplit` choose the rank), EM
    for the posterior mode (:mod:`sklearn_pltf.inference.rescal`), or Gibbs
    sampling with Chib's evidence (:mod:`sklearn_pltf.inference.rescal_gibbs`);
    each method updates or draws the rows of A one at a time, given the
    others.

    Parameters
    ----------
    n_components : int, default=2
        Entity clusters (columns of A; G is n_components x n_components x
        n_relations).
    likelihood : {"poisson", "bernoulli"}, default="poisson"
        ``"poisson"`` for counts; ``"bernoulli"`` for 0/1 relations,
        P(x = 1) = 1 − exp(−X̂). Non-binary observed values then raise.
    method : {"vb", "em", "gibbs", "sada"}, default="vb"
        Variational Bayes; EM for the posterior mode (no evidence; needs
        ``prior_shape >= 1``); ``"gibbs"``: block Gibbs sampling (one
        allocation of the counts over cluster pairs per sweep, then every row
        of A in turn, then G); ``"sada"``: the same with a fresh allocation
        before G.
    evidence : {"auto", "vb", "chib"} or None, default="auto"
        ``"auto"``: the variational bound for VB, Chib's estimate for the
        samplers (one clamped run of ``n_warmup + n_draws`` sweeps per
        element of A, and one for G); EM has none. ``None`` skips it.
    prior_shape, prior_rate : float, array-like or dict, default=1.0
        Gamma(shape, rate) prior of every element of A and G: a scalar, an
        array broadcastable to a factor, or ``{0: value for A, 2: value for
        G}`` (position 1 is A again and its entry is not used).
    max_iter : int, default=1000
        Sweeps (every row of A, then G) per initialisation.
    tol : float, default=1e-6
        Convergence threshold on the relative change of the objective.
    n_init : int, default=1
        VB and EM: initialisations, the one with the highest objective kept.
        Samplers: chains, pooled after aligning their cluster labels.
    random_state : int, Generator, RandomState or None, default=None
    verbose : int, default=0
        1 prints each initialisation; 2 also the objective every
        ``verbose_interval`` sweeps.
    verbose_interval : int, default=10
    n_jobs : int or None, default=None
        Initialisations or chains in parallel through joblib.
    n_draws, n_warmup, thin : int, default=2000, 500, 1
        Samplers: sweeps kept (every ``thin``-th) and discarded per chain,
        and per clamped run of Chib's estimate.
    keep_draws : bool, default=True
        Samplers: keep the draws (``draws_``, :meth:`to_inference_data`;
        :meth:`predict_entries` averages over them).

    Attributes
    ----------
    model_ : Model
        ``"ia,jb,abk->ijk"`` (``"ia,jb,ab->ij"`` for one relation) with its sizes.
    factors_ : tuple of ndarray
        ``(A, A, G)``: posterior means (VB) or modes (EM), in model order;
        G is (n_components, n_components) for a single relation.
    n_iter_ : int
    converged_ : bool
        VB and EM.
    lower_bounds_ : ndarray of shape (n_iterations,)
        VB and EM: the bound (VB) or log joint (EM) after each sweep.
    lower_bound_ : float
    log_evidence_ : float
        The estimate of log p(X) over the off-diagonal observed entries: the
        bound (VB, from below) or Chib's (samplers).
    log_evidence_error_ : float
        Samplers: the Monte Carlo standard error of Chib's estimate.
    log_likelihoods_ : ndarray of shape (n_chains, n_sweeps)
        Samplers: log p(X | A, G) after every sweep of every chain.
    rhat_ : float
        Samplers: split R-hat of the log-likelihood over the chains.
    draws_ : tuple of ndarray
        Samplers with ``keep_draws``: (n_chains, n_draws, ...) per position,
        positions 0 and 1 the same draws of A.
    n_features_in_ : int
        The number of entities.

    Notes
    -----
    Diagonal entries x(i, i, k), where the entity factor would meet itself
    (a rate with A(i, a)², not conjugate to the Gamma prior), are treated as
    missing by every method: they neither inform the fit nor count in its
    evidence. SGLD (and so STI) and AIS are not offered for this model.
    :meth:`predict_entries` still gives them the model's value; under the
    Bernoulli–Poisson likelihood its draws of A serve both entity axes. The
    entities are those of the training data: :meth:`transform` and
    :meth:`score` take the training data only.

    Examples
    --------
    >>> from sklearn_pltf import BayesianRESCAL
    >>> from sklearn_pltf.datasets import load_nations
    >>> X = load_nations().data
    >>> est = BayesianRESCAL(3, likelihood="bernoulli", random_state=0).fit(X)
    >>> est.transform(X).shape
    (14, 3)
    """

    _tied_factors = TIED

    _parameter_constraints: dict = {
        **{name: constraint for name, constraint in BasePoissonPLTF._parameter_constraints.items()
           if name not in _SGLD_PARAMETERS},
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "method": [StrOptions({"vb", "em", *rescal_gibbs.SWEEPS})],
        "evidence": [StrOptions({"auto", "vb", "chib"}), None],
    }

    def __init__(
        self,
        n_components=2,
        *,
        likelihood="poisson",
        method="vb",
        evidence="auto",
        prior_shape=1.0,
        prior_rate=1.0,
        max_iter=1000,
        tol=1e-6,
        n_init=1,
        random_state=None,
        verbose=0,
        verbose_interval=10,
        n_jobs=None,
        n_draws=2000,
        n_warmup=500,
        thin=1,
        keep_draws=True,
    ):
        self.n_components = n_components
        self.likelihood = likelihood
        self.method = method
        self.evidence = evidence
        self.prior_shape = prior_shape
        self.prior_rate = prior_rate
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.n_jobs = n_jobs
        self.n_draws = n_draws
        self.n_warmup = n_warmup
        self.thin = thin
        self.keep_draws = keep_draws

    def _model_spec(self, ndim):
        model = SINGLE_RELATION_MODEL if ndim == 2 else RESCAL_MODEL
        return model, {"a": self.n_components, "b": self.n_components}, {}

    def _accepts_tensors(self):
        return True

    def _gamma_priors(self, model):
        """As the base's, with position 1 (A again) taking position 0's entry
        of a dict of priors."""
        shape, rate = (
            {1: value[0], **value} if isinstance(value, dict) and 0 in value else value
            for value in (self.prior_shape, self.prior_rate)
        )
        return gamma_priors(model, shape, rate)

    def _observed(self, X, mask, reset):
        data = super()._observed(X, mask, reset)
        if data.ndim not in (2, 3) or data.shape[0] != data.shape[1]:
            raise ValueError(
                "BayesianRESCAL needs an entity x entity x relation tensor (or an entity x "
                f"entity matrix, one relation), its first two axes the same size; got shape "
                f"{data.shape}."
            )
        return data

    def _evidence_method(self, data_is_sparse=False):
        """As the base's, with Chib's estimate the samplers' default (AIS and
        STI are not built for a tied factor)."""
        if self.evidence == "auto" and self.method in rescal_gibbs.SWEEPS:
            return "chib"
        return super()._evidence_method(data_is_sparse)

    def _relational(self, data, priors):
        return (rescal.relational_data(rescal.with_relation_axis(data), self.likelihood),
                rescal.priors_with_relation_axis(priors))

    def _sample_posterior(self, data, model, priors, fixed, rng, evidence):
        """Gibbs or SADA chains with the rows of A drawn in turn
        (:mod:`sklearn_pltf.inference.rescal_gibbs`), and Chib's evidence."""
        relational, priors = self._relational(data, priors)
        return _mcmc.rescal_posterior(self.method, rng, model, relational, priors,
                                      self.n_components, chib=evidence == "chib",
                                      **self._chain_settings())

    def _fit_optimizer(self, data, model, priors, fixed, rng, evidence):
        """VB or EM: restarts to convergence, the best kept."""
        relational, priors = self._relational(data, priors)
        results = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_restart)(
                self.method, child, relational, priors, self.n_components, self.max_iter,
                self.tol, self._reporter(init) if self.verbose else None,
            )
            for init, child in enumerate(rng.spawn(self.n_init))
        )
        state, objectives, converged = self._best_restart(results)
        if data.ndim == 2:
            state = rescal.without_relation_axis(state)
        self.n_iter_ = len(objectives)
        self.converged_ = converged
        self.lower_bounds_ = np.asarray(objectives)
        self.lower_bound_ = objectives[-1]
        if evidence == "vb":
            self.log_evidence_ = check_poisson_log_evidence(
                self.lower_bound_, relational.observed,
                advice="A variational bound cannot lie above log p(X): please report this.",
                likelihood=self.likelihood)
        return state

    def _require_training_data(self, X, mask, what):
        check_is_fitted(self)
        data = self._observed(X, mask, reset=False)
        if not self._is_training_data(data):
            raise ValueError(
                f"BayesianRESCAL {what} its training data only: its entities are that "
                "tensor's, and a new entity needs its relations to them; refit on the "
                "tensor with the new entities."
            )

    def transform(self, X, mask=None):
        """The entity factor A of the training data (posterior mean, or mode for EM).

        Returns
        -------
        A : ndarray of shape (n_entities, n_components)
        """
        self._require_training_data(X, mask, "transforms")
        return np.array(self.factors_[0])

    def inverse_transform(self, X):
        """X̂(i, j, k) = Σ_ab W(i, a) W(j, b) G(a, b, k) from entity factors ``X``.

        Parameters
        ----------
        X : ndarray of shape (n_entities, n_components)
            Entity factor rows, e.g. from :meth:`transform`.

        Returns
        -------
        X_hat : ndarray of shape (n_entities, n_entities, n_relations)
            Or (n_entities, n_entities) for a model of one relation.
        """
        check_is_fitted(self)
        W = np.asarray(X, dtype=np.float64)
        if W.ndim != 2 or W.shape[1] != self.n_components:
            raise ValueError(f"Expected an array of shape (n_entities, {self.n_components}), "
                             f"got {W.shape}.")
        return np.einsum(self.model_.string, W, W, self.factors_[2])

    def score(self, X, y=None, mask=None):
        """Log evidence of the training data (``log_evidence_``; EM: the log joint)."""
        self._require_training_data(X, mask, "scores")
        return self._training_score()

