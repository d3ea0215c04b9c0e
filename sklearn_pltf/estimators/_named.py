"""The shared constructor and documentation of the named Poisson–Gamma estimators."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval

from ._base import BasePoissonPLTF
from ._online import ONLINE_CONSTRAINTS, ONLINE_PARAMETERS, OnlineVBMixin
from ._relevance import ARD_ATTRIBUTES, ARD_PARAMETERS
from ._tensor_export import CP_ATTRIBUTES

MODEL_PARAMETERS = """\
    likelihood : {"poisson", "bernoulli", "compound_poisson"} or CompoundPoisson, \
            default="poisson"
        ``"poisson"``: the data are counts, Poisson with mean X̂.
        ``"bernoulli"``: the data are binary (0/1 relations, links, events),
        a link where a latent Poisson count with mean X̂ is positive, so
        P(x = 1) = 1 − exp(−X̂) (the Bernoulli–Poisson link; Zhou 2015). Every
        method and every evidence estimator support it;
        :meth:`predict_entries` then returns link probabilities. The
        cost still follows the ones. Non-binary observed values raise.
        ``"compound_poisson"``: non-negative reals (intensities, amounts,
        durations), each value the sum of a Poisson(X̂) number of
        exponential jumps of mean 1 (exact zeros mean no jump);
        ``CompoundPoisson(jump_mean=s)`` for jumps of mean s, so that
        E[x] = s X̂. The evidence is then a density of the data in their
        units, comparable across jump means. Every method and every
        evidence estimator support it.
    method : {"vb", "em", "gibbs", "sada", "sgld"}, default="vb"
        ``"vb"``: variational Bayes, ``q(Z) = Gamma``; its bound is the log
        evidence estimate. ``"em"``: the posterior mode (needs
        ``prior_shape >= 1``); no evidence, and ``score`` is then the log joint
        density, which must not be used to choose the rank. ``"gibbs"``
        (block Gibbs) and ``"sada"`` (a fresh allocation per factor, drawn
        through its margin): Markov chain Monte Carlo, asymptotically exact,
        for whole-number counts (Şimşekli & Cemgil 2012). ``"sgld"``:
        stochastic gradient Langevin dynamics on minibatches of the
        non-zeros (cost per step follows ``batch_size``, not the data), for
        large data; approximate, with a bias that shrinks with ``step_size``.
    evidence : {"auto", "vb", "chib", "sti", "ais"} or None, default="auto"
        How ``log_evidence_`` is estimated: ``"vb"``, the variational bound
        (``method="vb"``); ``"ais"``, annealed importance sampling (dense
        data only, any ``method``; see
        :func:`~sklearn_pltf.evidence.ais_log_evidence`): runs from a Gamma
        fit to the fitted posterior marginals, symmetrised over the
        component labels, to the posterior, with a standard error in
        ``log_evidence_error_``; ``"chib"``, Chib's estimator from sampler
        runs (``method="gibbs"`` or ``"sada"``), which costs one clamped run
        of ``n_warmup_ + n_draws`` sweeps (or more, see ``n_draws``) per
        element of the free factors (see
        :func:`~sklearn_pltf.evidence.chib_log_evidence`); ``"sti"``,
        stochastic thermodynamic integration over SGLD runs at
        ``n_temperatures`` temperatures (``method="sgld"``; see
        :func:`~sklearn_pltf.evidence.sti_log_evidence`), with a standard
        error; ``"auto"``, the bound for VB, AIS for Gibbs and SADA on dense
        data (Chib on sparse data, where AIS does not run, and for models
        with more than one latent index to relabel, e.g. Tucker, where AIS
        would start from the prior), STI for SGLD, none for EM; None, no
        estimate. AIS is the samplers' default because
        its cost does not grow with the number of factor elements, as
        Chib's does (the user guide compares them).
    prior_shape, prior_rate : float, array-like or dict, default=1.0
        Gamma(shape, rate) prior of every factor entry: a scalar, an array
        broadcastable to every factor, or ``{factor position: value}`` (a key
        that is no factor position raises). A prior given as mean ``m`` and
        shape ``a`` has rate ``a / m``.
        ``prior_rate="auto"``: each factor's rate learned by the evidence
        with VB (type-II maximum likelihood, ``Σ prior_shape / Σ E[Z]`` at
        every step), in ``prior_rate_``; ``log_evidence_`` is then the bound
        at the learned rates. ``prior_rate="hierarchical"``: a rate per
        entity (each value of a factor's observed indices) under a Gamma
        hyperprior whose rate is learned (hierarchical Poisson
        factorization; new samples are folded in at its mean).
        ``prior_shape="auto"``: one shape per factor learned by the evidence,
        from the fit's first convergence at shape 1 on. These strings are
        the whole value, not a dict entry; all need ``method="vb"``
        (user guide: learned rates and relevances)."""

STOP_PARAMETERS = """\
    max_iter : int, default=1000
        VB and EM: iterations per initialisation (an iteration is a SQUAREM
        cycle of three sweeps, or with ``acceleration=None`` one sweep that
        updates every factor); also caps the fold-in of :meth:`transform`.
    tol : float, default=0.1
        VB and EM stop once the objective (VB's bound, EM's log joint) is
        estimated to be within ``tol`` nats of its limit, from how its gains
        shrink over the last 24 iterations (see the user guide, "When a fit
        has converged"); 0 runs until the objective repeats exactly or
        ``max_iter``. The fold-in of :meth:`transform` (and the one that ends
        :meth:`fit`) stops each sample once a step changes its factor by less
        than ``min(tol, 1e-6)`` relative to its largest entry."""

#: The restarts, seeding, progress and parallelism of every Poisson–Gamma fit.
LOOP_PARAMETERS = """\
    acceleration : {"squarem", "anderson"} or None, default="squarem"
        VB and EM: ``"squarem"`` extrapolates from two sweeps (SQUAREM,
        Varadhan & Roland 2008) and keeps the result only where the objective
        did not fall, so it never decreases; ``"anderson"`` takes a secant
        step from the last ten sweeps (Anderson acceleration with restarts,
        kept on the same condition; the user guide says where it pays off;
        NumPy arrays only); None: plain
        coordinate ascent, one sweep an iteration.
    n_init : int, default=1
        Initialisations; the one with the highest final objective is kept. For
        the samplers: independent chains, pooled after aligning their labels.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the one generator of a fit, spawned into the initialisations.
    verbose : int, default=0
        1 prints each initialisation; 2 also the objective every
        ``verbose_interval`` iterations (VB and EM). For the samplers, 1
        prints the progress of each chain, of AIS's temperatures, of Chib's
        clamped runs and of STI's temperatures, with the time left, at most
        every 10 seconds
        (chains run with ``n_jobs`` print from their worker processes).
    verbose_interval : int, default=10
    n_jobs : int or None, default=None
        Initialisations (chains) run in parallel through joblib; the result is
        that of a serial run (exactly on sparse data; on dense data up to the
        last bits of BLAS products)."""

#: The samplers' settings (but SGLD's ``n_blocks``), and STI's.
DRAW_PARAMETERS = """\
    n_draws : int or "auto", default="auto"
        Samplers: draws kept per chain, and sweeps per clamped run of Chib's
        estimator. Chib's noise grows with the number of factor elements
        (one clamped run each), and shrinks with the draws per run (see
        the user guide). ``"auto"``: 2000 per chain, and each clamped run
        goes on in blocks of 2000 while its ordinate's relative Monte Carlo
        error (batch means) is above 0.5, up to 8000 draws (4 times); an
        ordinate still above it then warns. A number is used exactly.
    n_warmup : int or "auto", default="auto"
        Samplers: sweeps discarded at the start of each chain and clamped
        run; SGLD: warm-up steps at each temperature and before the draws.
        ``"auto"``: 500, doubled (the chains run again from the same seeds)
        while the split R-hat of the log-likelihood over the draws is above
        1.05, up to 2000 (4 times), so the chains run at most three times;
        Chib's clamped runs discard ``n_warmup_`` sweeps, the warm-up used.
        A number is used exactly.
    thin : int, default=1
        Samplers: keep every ``thin``-th sweep after the warm-up.
    keep_draws : bool, default=True
        Samplers: keep the draws (``draws_``, :meth:`to_inference_data`);
        False keeps running sums only (memory for one draw per chain).
    batch_size : int, default=10_000
        SGLD: observed non-zeros per minibatch (the zeros enter in closed
        form, at the cost of the factors). Data with fewer non-zeros use the
        exact gradient, which is cheaper there (compiled kernels) and free
        of the minibatch noise that lowers STI's estimate at a fixed step."""

STI_PARAMETERS = """\
    n_temperatures : int, default=40
        STI: temperatures of the ladder ``t_i = (i / (n - 1))^6``.
    steps_per_temperature : int or "auto", default="auto"
        STI: SGLD steps kept at each temperature (after ``n_warmup``), or
        ``"auto"``: after 500 at each, more where the log-likelihood still
        trends or the standard error gains most, until nothing trends and
        the standard error is at most 1 nat, within 2000 steps per
        temperature on average (:func:`~sklearn_pltf.evidence.sti_log_evidence`).
        The fit warns if a temperature still trends when that budget is
        spent; then give a number of steps here (user guide).
    step_size : float, default=0.1
        SGLD: the step after warm-up, in units of each element's posterior
        width; smaller is less biased and mixes more slowly."""

SAMPLER_PARAMETERS = "\n".join([DRAW_PARAMETERS, STI_PARAMETERS])

N_BLOCKS_PARAMETER = """\
    n_blocks : int or None, default=None
        SGLD: parallel-block minibatches instead, with the data cut into
        ``n_blocks`` ranges per axis; each step updates every factor row
        from one part of ``n_blocks`` blocks that share no row (Şimşekli et
        al., ICML 2015). Needed for SGLD on a Dask array, whose chunks become
        the blocks and compute each part on their workers."""

SHARED_PARAMETERS = "\n".join([MODEL_PARAMETERS, STOP_PARAMETERS, LOOP_PARAMETERS,
                               DRAW_PARAMETERS, N_BLOCKS_PARAMETER, STI_PARAMETERS])

START_PARAMETERS = """\
    init : {"random", "svd"}, dict or sequence of arrays, default="random"
        Where VB and EM start: ``"random"``, every initialisation around the
        data's scale at random; ``"svd"``, the first deterministically from
        the data's leading singular vectors (non-negative parts, NNDSVDa
        style; Boutsidis & Gallopoulos 2008), each mode's factor from its
        unfolding as in TensorLy's ``init="svd"``, a core at ones; given
        factors, ``{position or index string: array}`` or one array (or
        None) per factor in model order, positive and of the factor's
        shape: the first initialisation starts at them (factors not given
        are drawn). Any further initialisations (``n_init``) start at
        random. The samplers start at random (their warm-up forgets the
        start): with them, leave ``"random"``.
    warm_start : bool, default=False
        Start the first initialisation of the next :meth:`fit` from this
        fit's factors when the model and sizes are unchanged (e.g. after
        ``set_params(tol=...)`` or on updated data of the same shape);
        otherwise ``init`` applies. VB and EM only."""

ONLINE_ATTRIBUTES = """\
    n_batch_iter_ : int
        After :meth:`partial_fit`: the batches seen, plus one (the next
        step's ``t``)."""

SHARED_ATTRIBUTES = """\
    model_ : Model
        The parsed model string with every index size.
    factors_ : tuple of ndarray
        Posterior means (VB, samplers) or modes (EM) of the factors, in model
        order; fixed factors as given.
    n_iter_ : int
        Iterations of the best initialisation (samplers: sweeps per chain,
        warm-up included).
    converged_ : bool
        VB and EM: whether it converged within ``max_iter``.
    lower_bounds_ : ndarray of shape (n_iterations,)
        VB and EM: objective after each iteration of the best initialisation:
        the variational bound (VB) or the log joint density (EM). A delete
        move VB kept after a convergence (:ref:`converged`) is one
        iteration, its bound the one the move reached.
    lower_bound_ : float
        VB and EM: the objective of the fitted model (after the final fold-in
        of the sample-mode factor).
    log_evidence_ : float
        The estimate of log p(X) of the training data (``evidence``), which
        :meth:`score` returns for them.
    rhat_ : float
        Samplers: split R-hat of the log-likelihood over the chains' kept
        iterations (each chain cut in halves); above 1.05 the fit warns
        (``ConvergenceWarning``) that the chains have not mixed.
    n_warmup_ : int
        Samplers: the warm-up sweeps the chains ran (``n_warmup``, or what
        ``"auto"`` chose).
    draws_ : tuple of ndarray or None
        Samplers with ``keep_draws=True``: per factor, draws of shape
        ``(n_init, n_draws, *factor shape)``, chains aligned to the first
        chain's labels; None for fixed factors.
    log_likelihoods_ : ndarray of shape (n_init, n_sweeps)
        Samplers: log p(X | Z) after every sweep of each chain
        (``n_sweeps`` is ``n_iter_``, warm-up included). SGLD: the unbiased
        minibatch estimate at every step, warm-up included.
    log_evidence_error_ : float
        Chib, STI and AIS: the Monte Carlo standard error of
        ``log_evidence_``. Chib's combines its ordinates' errors as
        independent, and on large data one run can scatter several times
        more (user guide). STI: from one
        chain (``n_init=1``) it covers the noise within each temperature
        only, and on large data it can understate the run-to-run spread
        (user guide); with ``n_init >= 2`` it is at least the
        chains' own spread, an honest error.
    n_features_in_ : int
        Size of axis 1 of the training data."""


def fill_doc(cls):
    """Put the shared parameter and attribute text into ``cls.__doc__``."""
    cls.__doc__ = (cls.__doc__.replace("%(shared_parameters)s", SHARED_PARAMETERS)
                   .replace("%(loop_parameters)s", LOOP_PARAMETERS)
                   .replace("%(sampler_parameters)s", SAMPLER_PARAMETERS)
                   .replace("%(start_parameters)s", START_PARAMETERS)
                   .replace("%(ard_parameters)s", ARD_PARAMETERS)
                   .replace("%(ard_attributes)s", ARD_ATTRIBUTES)
                   .replace("%(online_parameters)s", ONLINE_PARAMETERS)
                   .replace("%(online_attributes)s", ONLINE_ATTRIBUTES)
                   .replace("%(cp_attributes)s", CP_ATTRIBUTES)
                   .replace("%(shared_attributes)s", SHARED_ATTRIBUTES))
    return cls


class NamedPoissonPLTF(OnlineVBMixin, BasePoissonPLTF):
    """Base of the estimators whose model string follows from ``n_components``
    and the data's number of dimensions (and whose samples can arrive in
    batches: :meth:`partial_fit`)."""

    _parameter_constraints: dict = {
        **BasePoissonPLTF._parameter_constraints,
        **ONLINE_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
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
        n_blocks=None,
        n_temperatures=40,
        steps_per_temperature="auto",
        step_size=0.1,
        init="random",
        warm_start=False,
        total_samples=1e6,
        learning_offset=10.0,
        learning_decay=0.7,
    ):
        super().__init__(
            n_components, likelihood=likelihood, method=method, evidence=evidence,
            prior_shape=prior_shape, prior_rate=prior_rate, ard=ard, prune=prune, init=init,
            max_iter=max_iter, tol=tol, acceleration=acceleration, n_init=n_init,
            random_state=random_state, verbose=verbose, verbose_interval=verbose_interval,
            n_jobs=n_jobs, n_draws=n_draws, n_warmup=n_warmup, thin=thin, keep_draws=keep_draws,
            batch_size=batch_size, n_temperatures=n_temperatures,
            steps_per_temperature=steps_per_temperature, step_size=step_size)
        self.n_blocks = n_blocks
        self.warm_start = warm_start
        self.total_samples = total_samples
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay

    def _warm_start_requested(self):
        return self.warm_start

    def _ard_indices(self, model):
        """With ``ard``, every latent index: the components (NMF, CP), or each
        mode's core index (Tucker)."""
        return model.latent if self.ard else ""
