"""``partial_fit``: stochastic variational inference over minibatches of samples.

Each call is one step of :mod:`sklearn_pltf.inference.svi` on the samples it
is given: their sample-mode factor is folded in exactly as :meth:`transform`
does, then every other factor's q moves towards what the batch, standing for
``total_samples`` samples, says of it, with weight
``(learning_offset + n_batch_iter_) ** -learning_decay``. Memory and time per
call follow the batch; the data seen before are not kept.
"""

from __future__ import annotations

from numbers import Real

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from ..engine._array_api import array_api_refusal
from ..engine._likelihood import get_likelihood
from ..engine._random import as_generator
from ..inference import svi
from ..inference._methods import require
from ..inference._fold_in import with_factor
from ..inference._states import VBState
from ..engine.model import Model
from ._fitting import FittedModel, set_fitted
from ._one_tensor import fold_in_samples, optimize_one_tensor, sample_priors, sample_start
from ..inference._relevance import held_priors
from ._relevance import LEARNED_ATTRIBUTES, learned_attributes
from ..engine._factor_checks import check_fixed_factors_reach_the_data
from ._validation import input_namespace
from ._skeleton import restore_on_failure

__all__ = ["OnlineVBMixin", "ONLINE_PARAMETERS", "ONLINE_CONSTRAINTS"]

#: What a later batch continues from the fit or the batches before it.
_CONTINUED = ("model_", "_state", "_fitted_priors", "_rate_learning", "_sample_start",
              "_predictive_seed", "prior_rate_", "prior_shape_", "relevance_", "effective_rank_")

ONLINE_CONSTRAINTS = {
    "total_samples": [Interval(Real, 0, None, closed="neither")],
    "learning_offset": [Interval(Real, 0, None, closed="left")],
    "learning_decay": [Interval(Real, 0.5, 1, closed="right")],
}

ONLINE_PARAMETERS = """\
    total_samples : float, default=1e6
        :meth:`partial_fit`: how many samples the whole data set has (each
        batch stands for ``total_samples / n_batch`` copies of itself), as
        in :class:`~sklearn.decomposition.LatentDirichletAllocation`.
    learning_offset : float, default=10.0
        :meth:`partial_fit`: τ₀ of the step weight ``(τ₀ + t) ** -κ``;
        larger damps the first batches.
    learning_decay : float, default=0.7
        :meth:`partial_fit`: κ in (0.5, 1], how fast the step weight decays
        (the Robbins–Monro conditions need κ > 0.5)."""


class OnlineVBMixin:
    """Adds :meth:`partial_fit` to a Poisson–Gamma estimator with a sample mode."""

    @_fit_context(prefer_skip_nested_validation=True)
    @restore_on_failure
    def partial_fit(self, X, y=None, mask=None):
        """Update the posterior with one minibatch of new samples (online VB).

        The first call fits every factor to its batch by VB, as :meth:`fit`
        would (from a random start or ``init``); each call folds the batch's samples
        in with the other factors held, then moves the other factors' q
        towards the batch's view of them (stochastic variational inference,
        Hoffman et al. 2013), the step shrinking as
        ``(learning_offset + n_batch_iter_) ** -learning_decay``. After a
        :meth:`fit`, it continues from the fitted posterior. Afterwards
        :meth:`transform` folds samples in and :meth:`score` is the
        predictive bound of new data (there is no training evidence: the
        past batches are not kept). Learned rates (``prior_rate="auto"``,
        ``ard=True``) are learned on the first batch, as :meth:`fit` learns
        them, and held for the later ones, whatever their size (the sample
        factor's rates do not vary along the samples); ``prune=True`` needs
        :meth:`fit`. A call that raises leaves the estimator as it was.

        Parameters
        ----------
        X : ndarray, pydata sparse array or scipy.sparse matrix
            The batch, axis 0 its samples; the other axes as in every batch.
        y : None
            Ignored.
        mask : array-like of bool, default=None
            True where an entry is observed.

        Returns
        -------
        self : object
        """
        if input_namespace(X) is not None:
            raise TypeError(array_api_refusal(f"{type(self).__name__}.partial_fit"))
        require(self.method, "poisson", "streams", "partial_fit is stochastic variational "
                "inference: it needs")
        if self.prune:
            raise ValueError(
                "partial_fit keeps the model's sizes from batch to batch: prune=True, which "
                "removes components, needs fit.")
        first = not hasattr(self, "factors_")
        data = self._observed(X, mask, reset=first)
        settings = self._fit_settings()
        get_likelihood(settings.likelihood).check(data)
        if first:
            fit = self._start_online(data, settings)
        else:
            self._check_sample_shape(data)
            self._check_continuable(data)
            fit = {name: getattr(self, name) for name in _CONTINUED if hasattr(self, name)}
        model = fit["model_"]
        alpha = self._sample_factor(model)
        fitted = FittedModel(model, fit["_fitted_priors"], fit["_rate_learning"],
                             fit["_sample_start"])
        folded, contractor, _ = fold_in_samples(settings, fitted, data, fit["_state"])
        state = with_factor(fit["_state"], alpha, folded, lambda batch, _: batch)
        model = contractor.model
        priors = self._gamma_priors(model)
        learning = fitted.learning
        if learning is not None:
            # The held rates at this batch's size: the sample factor's do not
            # vary along the samples, so they are re-broadcast per batch.
            priors = held_priors(priors, fitted.priors,
                                 sample_priors(settings, fitted, model, alpha), alpha)
            # The held priors follow ``model_`` (fold-ins read the sample
            # factor's per-sample rate from them at its shape), and so does
            # ``prior_rate_``; the rates themselves are the first batch's.
            fit.update(learned_attributes(learning, None, priors), _fitted_priors=priors)
        step = getattr(self, "n_batch_iter_", 1)
        rho = svi.learning_rate(step, self.learning_offset, self.learning_decay)
        state = svi.global_step(state, contractor, priors,
                                tuple(a for a in priors.free if a != alpha),
                                self.total_samples / data.shape[0], rho)
        if self.verbose:
            print(f"Batch {step}: {data.shape[0]} samples, step weight {rho:.4g}")
        set_fitted(self, {
            **fit, "model_": model, "_state": state, "_sample_start": sample_start(model, state),
            "_fingerprint": None, "_folded_in_fit": False,
            "factors_": tuple(m.copy() for m in state.mean), "n_batch_iter_": step + 1},
            # the rates learned on the first batch stay
            stale=[a for a in (*self._stale_attributes, "n_iter_") if a not in LEARNED_ATTRIBUTES])
        return self

    def _check_continuable(self, data):
        """Raise unless the fitted posterior is VB's, of the model the
        parameters now give: the batch's step continues that posterior."""
        restart = ("refit, or start online learning afresh on a new estimator "
                   "(sklearn.base.clone(estimator).partial_fit(X)).")
        state = self._state
        if not isinstance(state, VBState) or any(state.shape[a] is None for a in self.model_.free):
            raise ValueError(
                "partial_fit continues a variational posterior, and this estimator's was not "
                f"fitted by VB (a sampler's or EM's); {restart}")
        spec, sizes, fixed = self._model_spec(len(data.shape))
        model = Model.parse(spec).bind(data.shape, sizes, {a: f.shape for a, f in fixed.items()})
        if model != self._resized_model(data.shape[0]):
            raise ValueError(
                f"The parameters now give the model {model.string!r} with index sizes "
                f"{model.sizes}, not the fitted {self.model_.string!r} with "
                f"{self._resized_model(data.shape[0]).sizes} (set_params since the last "
                f"partial_fit?); partial_fit continues the fitted posterior: {restart}")

    def _start_online(self, data, settings):
        """The first batch: the model, and every factor's q fitted to the batch
        by VB from a random start (or ``init``), as :meth:`fit` would; returns
        what the later batches continue (fitted attributes)."""
        if data.total == 0:
            # VB on zeros shrinks every factor towards zero; the next batch's
            # samples, folded in against those, would carry the whole scale.
            raise ValueError(
                "The first partial_fit batch has no non-zero observed entry: the first batch "
                "sets the factors' scale, and zeros give none. Start with a batch that has "
                "counts.")
        spec, sizes, fixed = self._model_spec(len(data.shape))
        model = Model.parse(spec).bind(data.shape, sizes, {a: f.shape for a, f in fixed.items()})
        check_fixed_factors_reach_the_data(model, data, fixed)
        priors = self._gamma_priors(model)
        learning = self._structure(model).rate_learning(model, self._ard_indices(model),
                                                        settings)
        rng = as_generator(self.random_state)
        # One restart, from the estimator's own generator (partial_fit's
        # batches continue it); the rates learned on this batch are held for
        # the later ones.
        state, _, _, held, _ = optimize_one_tensor(
            settings, data, model, priors, fixed, [rng], self._first_start(model, data, fixed),
            learning)
        fit = {"_rate_learning": learning, "_fitted_priors": priors}
        if held is not None:
            fit.update(learned_attributes(learning, held.relevance, held.priors),
                       _fitted_priors=held.priors)
        return {**fit, "model_": model, "_state": state,
                "_predictive_seed": int(rng.spawn(1)[0].integers(2**63)),
                "_sample_start": sample_start(model, state)}
