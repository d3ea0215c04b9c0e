"""BayesianRESCAL: one entity factor on both entity modes of a relational tensor."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval, StrOptions

from ..inference._methods import FamilyMethods
from ._base import BasePoissonPLTF
from ._named import fill_doc
from ..inference.relational.structure import RESCAL_MODEL, SINGLE_RELATION_MODEL

__all__ = ["BayesianRESCAL"]

#: Factor 1 is factor 0.
TIED = {1: 0}
#: SGLD's parallel blocks share no factor rows, which a factor on both entity axes cannot give.
_NOT_OFFERED = ("n_blocks",)


@fill_doc
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
    :meth:`score` and :class:`~sklearn.model_selection.GridSearchCV` with
    :class:`~sklearn_pltf.model_selection.FullDataSplit` choose the rank), EM
    for the posterior mode (:mod:`sklearn_pltf.inference.relational.rescal`), Gibbs
    sampling with Chib's evidence (:mod:`sklearn_pltf.inference.relational.rescal_gibbs`;
    VB, EM and Gibbs update or draw the rows of A one at a time, given the
    others), or SGLD with the evidence by stochastic thermodynamic
    integration (:mod:`sklearn_pltf.inference.relational.rescal_sgld`).

    Parameters
    ----------
    n_components : int, default=2
        Entity clusters (columns of A; G is n_components x n_components x
        n_relations).
    likelihood : {"poisson", "bernoulli", "compound_poisson"} or CompoundPoisson, \
            default="poisson"
        ``"poisson"`` for counts; ``"bernoulli"`` for 0/1 relations,
        P(x = 1) = 1 − exp(−X̂) (non-binary observed values then raise);
        ``"compound_poisson"`` or ``CompoundPoisson(jump_mean=s)`` for
        non-negative real values, sums of a Poisson(X̂) number of exponential
        jumps of mean s (:class:`~sklearn_pltf.CompoundPoisson`).
    method : {"vb", "em", "gibbs", "sada", "sgld"}, default="vb"
        Variational Bayes; EM for the posterior mode (no evidence; needs
        ``prior_shape >= 1``); ``"gibbs"``: block Gibbs sampling (one
        allocation of the counts over cluster pairs per sweep, then every row
        of A in turn, then G); ``"sada"``: the same with a fresh allocation
        before G; ``"sgld"``: stochastic gradient Langevin dynamics on
        minibatches of the non-zeros, for data too large for Gibbs sweeps.
    evidence : {"auto", "vb", "chib", "sti"} or None, default="auto"
        ``"auto"``: the variational bound for VB, Chib's estimate for Gibbs
        and SADA (one clamped run of ``n_warmup_ + n_draws`` sweeps, or more
        with ``n_draws="auto"``, per element of A, and one for G), STI for SGLD; EM has none. ``None``
        skips it.
    prior_shape, prior_rate : float, array-like or dict, default=1.0
        Gamma(shape, rate) prior of every element of A and G: a scalar, an
        array broadcastable to a factor, or ``{0: value for A, 2: value for
        G}`` (position 1 is A again and its entry is not used).
        ``prior_rate="auto"``: the rates of A and of G learned by the
        evidence with VB (type-II maximum likelihood), in ``prior_rate_``.
        ``prior_rate="hierarchical"``: a rate per entity (A's rows) and per
        relation (G's slices) under a Gamma hyperprior, with ``ard`` too.
        ``prior_shape="auto"``: the shapes of A and G learned by the
        evidence, from the fit's first convergence at shape 1 on.
    ard : bool, default=False
        Automatic relevance determination (VB): a relevance r per entity
        cluster, learned by the evidence; A(i, a) has prior
        ``Gamma(prior_shape, prior_shape / r_a)`` and G(a, b, k)
        ``Gamma(prior_shape, prior_shape / (r_a r_b))``, so clusters the
        data do not need lose their mass and one fit at a generous
        ``n_components`` finds how many there are (``relevance_``,
        ``effective_rank_``). A numeric ``prior_rate`` is then not used.
        ``log_evidence_`` is the bound at the learned relevances.
    prune : bool, default=False
        With ``ard``: remove the clusters the evidence does not need (those
        whose removal lowers the bound by at most ``tol`` nats) from A and G.
    init : {"auto", "mode", "random"}, default="auto"
        Where each VB initialisation starts: ``"mode"``, around the posterior
        mode that EM finds from a random start (under the priors with every
        shape raised to at least 1); ``"random"``; ``"auto"``, the first
        from the mode and any others (``n_init``) at random. Coordinate
        ascent on the bound stops in a local optimum, and on some data the
        mode leads to a far higher one, on others a random start does: with
        ``n_init`` of 2 or more, ``"auto"`` tries both and keeps the higher
        bound. The other methods start at random.
    max_iter : int, default=1000
        Iterations per initialisation (VB from the mode: for EM's run and
        VB's each); an iteration is a SQUAREM cycle of three sweeps (every
        row of A, then G), or one sweep with ``acceleration=None``.
    tol : float, default=0.1
        VB and EM stop once the objective is estimated to be within ``tol``
        nats of its limit (see ``tol`` of :class:`BayesianNMF`).
%(loop_parameters)s
%(sampler_parameters)s

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
        bound (VB, from below), Chib's or STI's.
    log_evidence_error_ : float
        Samplers: the Monte Carlo standard error of Chib's or STI's estimate.
    log_likelihoods_ : ndarray of shape (n_chains, n_sweeps)
        Samplers: log p(X | A, G) after every sweep (SGLD: every kept step)
        of every chain.
    rhat_ : float
        Samplers: split R-hat of the log-likelihood over the chains.
    draws_ : tuple of ndarray
        Samplers with ``keep_draws``: (n_chains, n_draws, ...) per position,
        positions 0 and 1 the same draws of A.
    n_features_in_ : int
        The number of entities.
    prior_rate_ : tuple of ndarray
        With learned rates or shapes (``prior_rate="auto"`` or
        ``"hierarchical"``, ``prior_shape="auto"``, ``ard``): the fitted rate
        of every element of A, A and G (model order), at which
        ``log_evidence_`` is the bound.
    prior_shape_ : tuple of float
        With ``prior_shape="auto"``: the learned shapes of A, A and G.
    relevance_ : ndarray of shape (n_components,)
        With ``ard``: each cluster's relevance, the prior mean of its column
        of A; near zero for clusters the data do not need.
    effective_rank_ : int
        With ``ard``: the clusters the evidence needs.

    Notes
    -----
    Diagonal entries x(i, i, k), where the entity factor would meet itself
    (a rate with A(i, a)², not conjugate to the Gamma prior), are treated as
    missing by every method: they neither inform the fit nor count in its
    evidence. AIS, and SGLD's parallel blocks (``n_blocks``), are not
    offered for this model.
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

    _parameter_constraints: dict = {
        **{name: constraint for name, constraint in BasePoissonPLTF._parameter_constraints.items()
           if name not in _NOT_OFFERED},
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "method": [StrOptions(FamilyMethods("tied"))],
        "evidence": [StrOptions({"auto", "vb", "chib", "sti"}), None],
        "init": [StrOptions({"auto", "mode", "random"})],
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
        ard=False,
        prune=False,
        init="auto",
        max_iter=1000,
        tol=0.1,
        acceleration="squarem",
        n_init=1,
        random_state=None,
        verbose=0,
        verbose_interval=10,
        n_jobs=None,
        n_draws="auto",
        n_warmup="auto",
        thin=1,
        keep_draws=True,
        batch_size=10_000,
        n_temperatures=40,
        steps_per_temperature="auto",
        step_size=0.1,
    ):
        super().__init__(
            n_components, likelihood=likelihood, method=method, evidence=evidence,
            prior_shape=prior_shape, prior_rate=prior_rate, ard=ard, prune=prune, init=init,
            max_iter=max_iter, tol=tol, acceleration=acceleration, n_init=n_init,
            random_state=random_state, verbose=verbose, verbose_interval=verbose_interval,
            n_jobs=n_jobs, n_draws=n_draws, n_warmup=n_warmup, thin=thin, keep_draws=keep_draws,
            batch_size=batch_size, n_temperatures=n_temperatures,
            steps_per_temperature=steps_per_temperature, step_size=step_size)


    def _model_spec(self, ndim):
        model = SINGLE_RELATION_MODEL if ndim == 2 else RESCAL_MODEL
        return model, {"a": self.n_components, "b": self.n_components}, {}

    def _accepts_tensors(self):
        return True

    def _default_factor_names(self):
        return ["A", "A", "R"]  # the entities' factor on both axes, the relations' core

    def _tied_positions(self, model):
        return dict(TIED)

    def _has_tied_factor(self):
        return True

    def _ard_indices(self, model):
        return model.latent if self.ard else ""

    def _first_start(self, model, data, fixed):
        return None  # init here chooses between EM's mode and random (_tied_start)

    def _tied_start(self):
        return self.init

    def _observed(self, X, mask, reset):
        data = super()._observed(X, mask, reset)
        if data.ndim not in (2, 3) or data.shape[0] != data.shape[1]:
            raise ValueError(
                "BayesianRESCAL needs an entity x entity x relation tensor (or an entity x "
                f"entity matrix, one relation), its first two axes the same size; got shape "
                f"{data.shape}."
            )
        return data
