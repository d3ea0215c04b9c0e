"""The shared constructor and documentation of the named Poisson–Gamma estimators."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval

from ._base import BasePoissonPLTF

SHARED_PARAMETERS = """\
    method : {"vb", "em"}, default="vb"
        ``"vb"``: variational Bayes, ``q(Z) = Gamma``; its bound is the log
        evidence estimate. ``"em"``: the posterior mode (needs
        ``prior_shape >= 1``); no evidence, and ``score`` is then the log joint
        density, which must not be used to choose the rank.
    evidence : {"vb"}, default="vb"
        How ``log_evidence_`` is estimated: ``"vb"``, the variational bound.
    prior_shape, prior_rate : float, array-like or dict, default=1.0
        Gamma(shape, rate) prior of every factor entry: a scalar, an array
        broadcastable to every factor, or ``{factor position: value}``. A prior
        given as mean ``m`` and shape ``a`` has rate ``a / m``.
    max_iter : int, default=1000
        Iterations per initialisation (one iteration updates every factor).
    tol : float, default=1e-6
        Convergence threshold on the relative change of the objective; in the
        fold-in of :meth:`transform`, on the change of each sample's factor
        relative to its largest entry.
    n_init : int, default=1
        Initialisations; the one with the highest final objective is kept.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the one generator of a fit, spawned into the initialisations.
    verbose : int, default=0
        1 prints each initialisation; 2 also the objective every
        ``verbose_interval`` iterations.
    verbose_interval : int, default=10
    n_jobs : int or None, default=None
        Initialisations run in parallel through joblib; the result is that of a
        serial run (exactly on sparse data; on dense data up to the last bits of
        BLAS products)."""

SHARED_ATTRIBUTES = """\
    model_ : Model
        The parsed model string with every index size.
    factors_ : tuple of ndarray
        Posterior means (VB) or modes (EM) of the factors, in model order.
    n_iter_ : int
        Iterations of the best initialisation.
    converged_ : bool
        Whether it converged within ``max_iter``.
    lower_bounds_ : ndarray of shape (n_iterations,)
        Objective after each iteration of the best initialisation: the
        variational bound (VB) or the log joint density (EM).
    lower_bound_ : float
        The objective of the fitted model (after the final fold-in of the
        sample-mode factor).
    log_evidence_ : float
        VB only: the estimate of log p(X) of the training data, which
        :meth:`score` returns for them.
    n_features_in_ : int
        Size of axis 1 of the training data."""


def fill_doc(cls):
    """Put the shared parameter and attribute text into ``cls.__doc__``."""
    cls.__doc__ = cls.__doc__.replace("%(shared_parameters)s", SHARED_PARAMETERS).replace(
        "%(shared_attributes)s", SHARED_ATTRIBUTES
    )
    return cls


class NamedPoissonPLTF(BasePoissonPLTF):
    """Base of the estimators whose model string follows from ``n_components``
    and the data's number of dimensions."""

    _parameter_constraints: dict = {
        **BasePoissonPLTF._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        n_components=2,
        *,
        method="vb",
        evidence="vb",
        prior_shape=1.0,
        prior_rate=1.0,
        max_iter=1000,
        tol=1e-6,
        n_init=1,
        random_state=None,
        verbose=0,
        verbose_interval=10,
        n_jobs=None,
    ):
        self.n_components = n_components
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


def mode_letters(ndim):
    """Index letters for the data's axes ('a', 'b', ...), at most 25 axes."""
    if ndim > 25:
        raise ValueError(f"At most 25-way data are supported, got {ndim} dimensions.")
    return "abcdefghijklmnopqrstuvwxy"[:ndim]
