"""The sampler path of the Poisson–Gamma estimators: Gibbs, SADA or SGLD
chains (:mod:`sklearn_pltf.evidence._posterior`), their evidence, the
attributes a sampler fit sets, and the export of the kept draws."""

from __future__ import annotations

import contextlib
import copy
import functools
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..engine._kernels import TINY
from ..engine._likelihood import get_likelihood
from ..evidence import _posterior as _mcmc
from ..evidence._checks import check_poisson_log_evidence
from ..inference._diagnostics import RHAT_LIMIT, chain_lengths, split_rhat, warm_up_until_mixed
from ..inference._inference_data import export_inference_data, factor_names_of
from ..inference._methods import METHODS, method_names

__all__ = ["DEFAULT_N_DRAWS", "DEFAULT_N_WARMUP", "chain_settings", "export_draws", "fit_sampler",
           "warn_unless_mixed"]

#: What ``n_warmup="auto"`` and ``n_draws="auto"`` start from (Poisson–Gamma samplers).
DEFAULT_N_WARMUP, DEFAULT_N_DRAWS = 500, 2000


def warn_unless_mixed(trace, what="the log-likelihood", advice="raise n_warmup and n_draws"):
    """A ``ConvergenceWarning`` when the split R-hat of ``trace`` (n_chains,
    n_draws) exceeds :data:`RHAT_LIMIT`; returns the R-hat."""
    rhat = split_rhat(trace)
    if rhat > RHAT_LIMIT:
        warnings.warn(
            f"The chains have not mixed: split R-hat of {what} is {rhat:.3g} (above "
            f"{RHAT_LIMIT}), so the posterior means and the evidence are not yet to be "
            f"trusted; {advice}.", ConvergenceWarning, stacklevel=2)
    return rhat


def _evidence_advice(evidence, priors):
    """What to change when a sampler's evidence estimate fails its check."""
    if evidence == "sti":
        return ("Use more temperatures (n_temperatures) or more steps per temperature "
                "(steps_per_temperature), or a smaller step_size.")
    advice = "Lengthen Chib's clamped runs (n_warmup, n_draws)."
    if min(np.min(shape) for shape in priors.shape if shape is not None) < 1:
        advice += (" With prior_shape below 1 the Gamma density is infinite at 0, and Gibbs "
                   "draws of small factor elements underflow to exactly 0: raise prior_shape "
                   "to 1 or more, or estimate the evidence by STI (method='sgld').")
    return advice


def lengthen_advice(n_warmup, lengths):
    """What to raise when chains have not mixed: past what ``"auto"`` tried."""
    if n_warmup == "auto":
        return (f"n_warmup='auto' tried up to {lengths.max_warmup} warm-up sweeps; set n_warmup "
                "to more, and raise n_draws")
    return "raise n_warmup and n_draws"


def poisson_chain_lengths(estimator):
    """The :class:`~sklearn_pltf.inference._diagnostics.ChainLengths` of a
    Poisson–Gamma sampler's ``n_warmup`` and ``n_draws`` (``"auto"``: from
    :data:`DEFAULT_N_WARMUP` and :data:`DEFAULT_N_DRAWS`)."""
    return chain_lengths(estimator.n_warmup, estimator.n_draws, DEFAULT_N_WARMUP,
                         DEFAULT_N_DRAWS)


def chain_settings(estimator, n_warmup, n_draws):
    """What every sampler's chains take from the estimator's parameters, at
    the lengths :func:`fit_sampler` is trying."""
    return dict(n_chains=estimator.n_init, n_warmup=n_warmup, n_draws=n_draws,
                thin=estimator.thin,
                keep_draws=estimator.keep_draws, n_jobs=estimator.n_jobs,
                verbose=estimator.verbose)


def fit_sampler(estimator, data, model, priors, fixed, rng, evidence, tie=None):
    """Gibbs, SADA or SGLD for a :class:`~._base.BasePoissonPLTF`:
    ``n_init`` chains, their pooled posterior means (the state returned),
    and Chib's or STI's evidence, set as the estimator's attributes
    (``tie``: a model with chains of its own, :class:`~._tied.TiedFit` or
    a coupled fit: its ``family``, ``sample_posterior`` and
    ``check_log_evidence``). With
    ``n_warmup="auto"`` the chains run again with a longer warm-up until
    they mix (:func:`~sklearn_pltf.inference._diagnostics.warm_up_until_mixed`);
    Chib's estimate is made once, from the chains kept."""
    est, method = estimator, estimator.method
    family = "poisson" if tie is None else tie.family
    # A sampler that draws a uniform for every token (count) in each sweep.
    if family in METHODS[method].per_token and est.likelihood == "poisson":
        data.require_integer(f"method={method!r}")
        others = [repr(m) for m in method_names(family) if family not in METHODS[m].per_token]
        data.require_tokens_in_memory(
            f"method={method!r}", bytes_per_token=8,
            remedy=(f"Use method={', '.join(others[:-1])} or {others[-1]}, or scale the "
                    "counts down."))
    lengths = poisson_chain_lengths(est)
    replay = Replay(rng, lengths.max_warmup > lengths.n_warmup)
    sample = functools.partial(_sample_posterior, est) if tie is None else tie.sample_posterior

    def run(n_warmup):
        # SGLD's chains start where STI's ladder ends, so every attempt walks it.
        with _warnings_of_the_last(replay.replays) as caught:
            posterior = sample(data, model, priors, fixed, replay(),
                               "sti" if evidence == "sti" else None,
                               chain_settings(est, n_warmup, lengths.n_draws))
        return (posterior, caught), posterior.log_likelihoods

    (posterior, caught), n_warmup, _ = warm_up_until_mixed(
        run, lengths.n_warmup, lengths.max_warmup, verbose=est.verbose)
    replay.done()
    # The last attempt's warnings only (earlier ones were superseded), each once.
    shown = dict.fromkeys((str(w.message), w.category, w.filename, w.lineno) for w in caught)
    for message, category, filename, lineno in shown:
        warnings.warn_explicit(message, category, filename, lineno)
    if evidence == "chib":
        posterior = posterior.with_chib(max_draws=lengths.max_draws)
    est.n_warmup_ = n_warmup
    est.n_iter_ = n_warmup + lengths.n_draws * est.thin
    est.log_likelihoods_ = posterior.log_likelihoods
    est.rhat_ = warn_unless_mixed(posterior.log_likelihoods[:, n_warmup:],
                                  advice=lengthen_advice(est.n_warmup, lengths))
    if est.keep_draws:
        est.draws_ = posterior.draws
    if posterior.log_evidence is not None:
        checked = check_poisson_log_evidence if tie is None else tie.check_log_evidence
        est.log_evidence_ = checked(
            posterior.log_evidence, data, standard_error=posterior.log_evidence_error or 0.0,
            advice=_evidence_advice(evidence, priors), likelihood=est.likelihood)
    if posterior.log_evidence_error is not None:
        est.log_evidence_error_ = posterior.log_evidence_error
    return posterior.state


@contextlib.contextmanager
def _warnings_of_the_last(attempts):
    """Record the warnings of one attempt when there may be several (they are
    shown for the last only), else let them through: yields a list."""
    if not attempts:
        yield []
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


class Replay:
    """Generators for the attempts of :func:`warm_up_until_mixed`: with
    ``replays``, each a copy of ``rng`` as it is now (the same seeds for every
    attempt, so a longer warm-up repeats the earlier sweeps), and ``done()``
    leaves ``rng`` as the last attempt left its copy; else ``rng`` itself
    (one run, exactly as without the loop)."""

    def __init__(self, rng, replays):
        self.rng, self.start = rng, copy.deepcopy(rng) if replays else None
        self.last, self.replays = rng, replays

    def __call__(self):
        self.last = self.rng if self.start is None else copy.deepcopy(self.start)
        return self.last

    def done(self):
        """Advance ``rng`` to where the last attempt's copy ended."""
        if self.last is self.rng:
            return
        self.rng.bit_generator.state = self.last.bit_generator.state
        spawned = (self.last.bit_generator.seed_seq.n_children_spawned
                   - self.rng.bit_generator.seed_seq.n_children_spawned)
        if spawned > 0:
            self.rng.spawn(spawned)


def _sample_posterior(est, data, model, priors, fixed, rng, evidence, common):
    """The chains of ``est.method`` (``common``: :func:`chain_settings`) and
    STI's evidence, as a ``SampledPosterior``."""
    common = dict(common)
    if data.is_distributed:  # the chains run one after another, each over the cluster
        common["n_jobs"] = 1
    if METHODS[est.method].minibatch:
        settings = est._sgld_settings()
        make_target = functools.partial(_mcmc.poisson_target, model, data, est.likelihood,
                                        priors, fixed, settings["batch_size"],
                                        settings["n_blocks"])
        return _mcmc.sgld_posterior(rng, make_target, model, priors.free,
                                    sti=evidence == "sti", settings=settings, **common)
    return _mcmc.sample_posterior(est.method, rng, model,
                                  _mcmc.contractor_of(model, data, est.likelihood), priors,
                                  fixed, **common)


def export_draws(estimator, X, mask, factor_names):
    """``to_inference_data`` of a :class:`~._base.BasePoissonPLTF` (its
    docstring says what it holds)."""
    est = estimator
    check_is_fitted(est)
    if not hasattr(est, "draws_"):
        raise ValueError(
            "No draws to export: fit with method='gibbs', 'sada' or 'sgld' and keep_draws=True.")
    model, draws, tied, tie = est.model_, est.draws_, est._tied_factors, est._tie(est.model_)
    names = factor_names_of(model, factor_names, est._default_factor_names(), tied)
    likelihood = get_likelihood(est.likelihood)

    def factors_at(chain, draw):
        own = [None if d is None else d[chain, draw] for d in draws]
        return [own[a] if own[a] is not None else own[tied[a]] if a in tied
                else est._state.mean[a] for a in range(model.n_factors)]

    return export_inference_data(
        model, tuple(None if a in tied else d for a, d in enumerate(draws)), names,
        sample_stats={"total_log_likelihood": _mcmc.kept_sweeps(
            est.log_likelihoods_, est.n_warmup_, est.thin)},
        coords=est._index_coords(),
        data=None if X is None else est._training_data(X, mask),
        modelled=None if tie is None else tie.modelled_entries,
        factors_at=factors_at,
        entry_log_likelihood=lambda x, xhat, chain, draw: likelihood.entry_log_likelihood(
            x, np.maximum(xhat, TINY)))
