"""PLTF: Poisson–Gamma factorization for any model string."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval

from ..engine.model import Model
from ._base import BasePoissonPLTF
from ..engine._factor_checks import fixed_factor_copies, tied_positions
from ._named import fill_doc


@fill_doc
class PLTF(BasePoissonPLTF):
    """Bayesian Poisson–Gamma factorization of any model written as a string.

    The data are modelled as ``X(v0) ~ Poisson(Σ_{v̄0} Π_α Z_α(v_α))`` with
    independent ``Gamma(prior_shape, prior_rate)`` factors (Cemgil 2009;
    Yılmaz, Cemgil & Şimşekli 2011), fitted by variational Bayes (which also
    bounds the log evidence, so the rank can be chosen by :meth:`score`) or by
    EM for the posterior mode.

    Parameters
    ----------
    model : str, default="ir,jr,kr->ijk"
        The factorization as an einsum-like string: factor indices, ``->``, the
        observed indices in the data's axis order. ``"ik,kj->ij"`` is NMF,
        ``"ir,jr,kr->ijk"`` CP, ``"ip,jq,kr,pqr->ijk"`` Tucker, ``"r,d,dtr->t"``
        deconvolution with the third factor fixed, ``"fi,ik,kt->ft"``
        hierarchical NMF with the first factor fixed.
    n_components : int, dict or None, default=None
        Size of the latent indices: one int for every latent index whose size
        no fixed factor sets, or a dict ``{index: size}``. None is allowed when
        the fixed factors set every latent size.
    fixed_factors : dict or None, default=None
        ``{position or factor index string: array}``: factors that are given,
        never updated and have no prior (e.g. a known dictionary).
    tied_factors : dict or None, default=None
        ``{position: source position}`` (positions or index strings): the
        factor at ``position`` is the one at ``source`` (one entity factor on
        two axes). Supported for the RESCAL structure,
        ``PLTF("ia,jb,abk->ijk", tied_factors={1: 0})`` (or
        ``"ia,jb,ab->ij"`` for one relation), in any letters and factor order
        with the entities on the data's first two axes; other models raise.
        The two factors' index sizes must agree. Entries where the factor
        meets itself, x(i, i, k), are treated as missing, and ``transform``
        and ``score`` take the training data only
        (:class:`~sklearn_pltf.BayesianRESCAL` is this model by name).
        Methods ``"vb"`` (its first initialisation starts around EM's
        posterior mode, any others at random: ``BayesianRESCAL``'s
        ``init="auto"``), ``"em"``, ``"gibbs"``, ``"sada"`` and ``"sgld"``
        (not ``n_blocks``); evidence by the bound, Chib's estimate or STI.
%(shared_parameters)s
    ard : bool or str, default=False
        Automatic relevance determination (VB): ``True`` gives every latent
        index a relevance per value, a string only the latent indices it
        names, each once (e.g. ``"r"``, not a convolution's lag). A relevance is shared
        by every free factor that carries its index: an element's prior is
        ``Gamma(prior_shape, prior_shape · Π relevance⁻¹)`` over its ARD
        indices, so values the data do not need fall to zero mass
        (``relevance_``, ``effective_rank_``). ``log_evidence_`` is then the
        bound at the learned relevances; ``prior_rate`` applies to factors
        that carry no ARD index.
    prune : bool, default=False
        With ``ard``: remove the values of ARD indices that the evidence does
        not need (those whose removal lowers the bound by at most ``tol``
        nats); ``model_``, ``factors_`` and ``transform`` then have the
        smaller sizes.
%(start_parameters)s

    Attributes
    ----------
%(shared_attributes)s
%(ard_attributes)s

    Notes
    -----
    ``factors_`` includes the fixed factors as given. ``transform`` needs a
    sample-mode factor: one free factor carrying axis 0 and no other observed
    index (``"fi,ik,kt->ft"`` with the dictionary fixed has none).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf import PLTF
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(3.0, size=(20, 10, 5))
    >>> est = PLTF("ir,jr,kr->ijk", n_components=2, random_state=0).fit(X)
    >>> est.transform(X).shape
    (20, 2)
    """

    _parameter_constraints: dict = {
        **BasePoissonPLTF._parameter_constraints,
        "model": [str],
        "n_components": [Interval(Integral, 1, None, closed="left"), dict, None],
        "fixed_factors": [dict, None],
        "tied_factors": [dict, None],
        "warm_start": ["boolean"],
        "ard": ["boolean", str],
    }

    def __init__(
        self,
        model="ir,jr,kr->ijk",
        n_components=None,
        *,
        likelihood="poisson",
        method="vb",
        evidence="auto",
        prior_shape=1.0,
        prior_rate=1.0,
        ard=False,
        prune=False,
        fixed_factors=None,
        tied_factors=None,
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
    ):
        super().__init__(
            n_components, likelihood=likelihood, method=method, evidence=evidence,
            prior_shape=prior_shape, prior_rate=prior_rate, ard=ard, prune=prune, init=init,
            max_iter=max_iter, tol=tol, acceleration=acceleration, n_init=n_init,
            random_state=random_state, verbose=verbose, verbose_interval=verbose_interval,
            n_jobs=n_jobs, n_draws=n_draws, n_warmup=n_warmup, thin=thin, keep_draws=keep_draws,
            batch_size=batch_size, n_temperatures=n_temperatures,
            steps_per_temperature=steps_per_temperature, step_size=step_size)
        self.model = model
        self.fixed_factors = fixed_factors
        self.tied_factors = tied_factors
        self.n_blocks = n_blocks
        self.warm_start = warm_start

    def _model_spec(self, ndim):
        model = Model.parse(self.model)
        return model.string, self.n_components, fixed_factor_copies(model, self.fixed_factors)

    def _warm_start_requested(self):
        return self.warm_start

    def _tied_positions(self, model):
        return tied_positions(model, self.tied_factors)

    def _has_tied_factor(self):
        return bool(self.tied_factors)

    def _ard_indices(self, model):
        if isinstance(self.ard, str):
            return _checked_ard_letters(self.ard)
        return model.latent if self.ard else ""

    def _min_ndim(self):
        return min(2, len(Model.parse(self.model).output))

    def _accepts_tensors(self):
        return len(Model.parse(self.model).output) > 2


def _checked_ard_letters(ard):
    """``ard`` given as a string of latent indices, each named once.

    A letter written twice is refused rather than read once: ``ard`` names
    a set of indices, so a repeat is most likely a slip for another letter
    (``"rr"`` for ``"rs"``), and reading it as ``"r"`` would fit a model
    other than the one meant without a word. Whether each letter is a
    latent index of the model is the rate learning's check
    (:func:`~sklearn_pltf.inference._hyperparameters.rate_learning`)."""
    repeated = sorted({c for c in ard if ard.count(c) > 1})
    if repeated:
        raise ValueError(
            f"ard={ard!r} names latent index {', '.join(map(repr, repeated))} more than once; "
            f"name each index once (e.g. ard={''.join(dict.fromkeys(ard))!r}).")
    return ard

