"""The samplers' posteriors and their evidence: ``n_chains`` chains of a
sampler on the multi-chain driver
(:func:`~sklearn_pltf.inference._chains.run_chains`: spawned, run in
parallel, labels aligned, summaries pooled) and Chib's or STI's estimate of
log p(X) from them — what an estimator with ``method="gibbs"``, ``"sada"``
or ``"sgld"`` calls. One chain runs on
:func:`~sklearn_pltf.inference._chains.drive_chain`."""

from __future__ import annotations

import functools
import warnings
from typing import Callable, NamedTuple

import numpy as np

from ..engine._contract import make_contractor
from ._chib import chib_log_evidence
from ._sti import sti_log_evidence
from ._rescal_chib import rescal_chib_log_evidence
from ..inference import gibbs, sgld, vb
from ..inference.relational import rescal_gibbs
from ..inference._chains import (ChainProblem, ChainSettings, drive_chain, pool_aligned,
                                 run_chains)

__all__ = ["SAMPLERS", "SampledPosterior", "sample_posterior", "contractor_of", "rescal_posterior",
           "poisson_target", "sgld_posterior", "kept_sweeps", "warn_if_chains_disagree",
           "warn_if_unsettled"]

SAMPLERS = (*gibbs.SWEEPS, "sgld")


class SampledPosterior(NamedTuple):
    """What a sampler fit keeps: ``state`` holds the posterior means and
    geometric means exp E[log Z] (the fields a fold-in reads of held
    factors); ``draws`` per factor (n_chains, n_draws, ...) or None;
    ``chib``, for Gibbs and SADA chains, Chib's estimate at their best draw
    on request (``chib(max_draws=...)`` returns a ``ChibEstimate``; its
    clamped runs are far longer than the chains, so a caller that tries
    several warm-ups asks once, for the chains it keeps)."""

    state: vb.VBState
    draws: tuple
    log_likelihoods: np.ndarray
    log_evidence: float | None
    log_evidence_error: float | None = None
    chib: Callable | None = None

    def with_chib(self, **settings):
        """This posterior with Chib's estimate as its evidence."""
        estimate = self.chib(**settings)
        return self._replace(log_evidence=estimate.log_evidence,
                             log_evidence_error=estimate.standard_error)


def _chain(rng, *, label, sweep, model, contractor_for, priors, given, n_warmup, n_draws, thin,
           keep_draws, verbose):
    return gibbs.run_chain(rng, model, contractor_for(), priors, given, sweep, n_warmup=n_warmup,
                           n_draws=n_draws, thin=thin, keep_draws=keep_draws, verbose=verbose,
                           label=label)


def _posterior_of(pooled, **fields):
    """The :class:`SampledPosterior` of pooled chains
    (:class:`~sklearn_pltf.inference._chains.PooledChains`)."""
    none = (None,) * len(pooled.mean)
    state = vb.VBState(none, none, pooled.mean, pooled.geometric, none)
    return SampledPosterior(state, pooled.draws, pooled.trace, **fields)


def contractor_of(model, data, likelihood="poisson"):
    """What :func:`sample_posterior` takes for one tensor: a picklable
    callable that builds its contractor where a chain runs."""
    return functools.partial(make_contractor, model, data, likelihood)


def sample_posterior(method, rng, model, contractor_for, priors, given, *, n_chains, n_warmup,
                     n_draws, thin, keep_draws, n_jobs, verbose=0):
    """Run ``n_chains`` chains of ``method`` ("gibbs" or "sada") in parallel,
    align their labels and pool their summaries; the posterior's ``chib``
    estimates log p(X) by Chib's method at the best draw of all chains (its
    clamped runs take ``n_warmup`` + ``n_draws`` sweeps each, or more up to
    ``max_draws``). ``contractor_for()`` builds the data's contractor (one
    tensor: :func:`contractor_of`; several, coupled: a
    ``CoupledContractor``'s arguments bound), in each chain's worker.
    ``verbose`` reports the progress of each chain and of Chib's clamped runs."""
    sweep = gibbs.SWEEPS[method]
    chain = functools.partial(_chain, sweep=sweep, model=model, contractor_for=contractor_for,
                              priors=priors, given=given, n_warmup=n_warmup, n_draws=n_draws,
                              thin=thin, keep_draws=keep_draws, verbose=verbose)
    pooled, (spare,) = run_chains(
        rng, chain, n_chains, n_jobs=n_jobs, label=method, spare=1,
        pool=functools.partial(pool_aligned, model=model, free=priors.free))
    best = max(pooled.chains, key=lambda c: c.best_log_joint).best

    def chib(**settings):
        return chib_log_evidence(
            spare, model, contractor_for(), priors, given,
            sweep=sweep, n_draws=n_draws, n_warmup=n_warmup, point=best, verbose=verbose,
            **settings)

    return _posterior_of(pooled, log_evidence=None, chib=chib)


def _rescal_chain(rng, *, label, method, data, priors, n_components, n_warmup, n_draws, thin,
                  keep_draws, verbose):
    state = rescal_gibbs.init(rng, data, priors, n_components)
    chain = drive_chain(rng, ChainProblem(
        state, lambda rng, state: rescal_gibbs.step(rng, state, data, priors, method), (0, 2),
        lambda state: rescal_gibbs.log_prior(state.factors, priors)),
        ChainSettings(n_warmup, n_draws, thin, keep_draws, verbose, label))
    return _with_tied_summaries(chain, {1: 0})


def _with_tied_summaries(chain, tied):
    """``chain`` with each tied position's summaries and draws those of its
    source (a factor at two positions is summarised once)."""
    fields = {name: list(getattr(chain, name)) for name in ("mean", "mean_log", "draws")}
    for position, source in tied.items():
        for values in fields.values():
            values[position] = values[source]
    return chain._replace(**{name: tuple(values) for name, values in fields.items()})


def rescal_posterior(method, rng, model, data, priors, n_components, *, n_chains, n_warmup,
                     n_draws, thin, keep_draws, n_jobs, verbose=0):
    """As :func:`sample_posterior` for the RESCAL model (its entity factor at
    positions 0 and 1): ``n_chains`` chains of
    :mod:`~sklearn_pltf.inference.relational.rescal_gibbs` on ``data`` (a
    ``RelationalData``; ``priors`` with G as (R, R, K)), their cluster labels
    aligned (A's columns and both axes of G together), and its ``chib``
    the estimate of :func:`rescal_chib_log_evidence` at the best draw. G
    keeps its relation axis (of length one for one relation)."""
    chain = functools.partial(_rescal_chain, method=method, data=data, priors=priors,
                              n_components=n_components, n_warmup=n_warmup, n_draws=n_draws,
                              thin=thin, keep_draws=keep_draws, verbose=verbose)
    best = []

    def pool(chains):  # the best draw as the chain found it, before the labels are aligned
        best.append(max(chains, key=lambda c: c.best_log_joint).best)
        return pool_aligned(chains, model, (0, 1, 2), tied=[("a", "b")])

    pooled, (spare,) = run_chains(rng, chain, n_chains, n_jobs=n_jobs, label=method, spare=1,
                                  pool=pool)
    chib = functools.partial(rescal_chib_log_evidence, spare, data, priors, best[0],
                             method=method, n_draws=n_draws, n_warmup=n_warmup, verbose=verbose)
    return _posterior_of(pooled, log_evidence=None, chib=chib)


def poisson_target(model, data, likelihood, priors, given, batch_size, n_blocks):
    """The PLTF model's SGLD target (built in each chain's worker: a target
    keeps its control variates' reference point, so chains must not share one)."""
    contractor = make_contractor(model, data, likelihood)
    if data.is_distributed:
        return sgld.DistributedPoissonTarget(model, contractor, priors, given, n_blocks=n_blocks)
    return sgld.PoissonTarget(model, contractor, priors, given, batch_size=batch_size,
                              n_blocks=n_blocks)


def _sgld_chain(rng, *, make_target, settings, sti, n_warmup, n_draws, thin, keep_draws,
                verbose=0, label="sgld chain"):
    """One SGLD chain on ``make_target()``: the STI ladder (if ``sti``), then
    ``n_warmup`` + ``n_draws * thin`` steps at t = 1 for the posterior
    summaries of the factors at ``target.positions`` (and of the positions
    ``target.tied`` maps onto them). Its trace holds every step's
    log-likelihood estimate, the warm-up's included, as a Gibbs chain's."""
    target = make_target()
    estimate = None
    if sti:
        estimate = sti_log_evidence(
            rng, target, n_temperatures=settings["n_temperatures"],
            n_steps=settings["steps_per_temperature"], n_warmup=n_warmup,
            step_size=settings["step_size"], verbose=verbose,
        )
        state = estimate.state
    else:
        state = sgld.init(rng, target, 1.0)
    advance = sgld.AdaptiveSGLD(target, 1.0, n_warmup=n_warmup, step_size=settings["step_size"])
    chain = drive_chain(rng, ChainProblem(
        state, advance, target.positions, factors_of=lambda state: target.factors(state.params)),
        ChainSettings(n_warmup, n_draws, thin, keep_draws, verbose, label, "steps"))
    if not np.all(np.isfinite(chain.log_likelihoods[n_warmup:])):
        raise FloatingPointError(
            "SGLD diverged (a non-finite log-likelihood at t = 1); lower step_size."
        )
    return _with_tied_summaries(chain, target.tied), estimate


def sgld_posterior(rng, make_target, model, free, *, n_chains, n_warmup, n_draws, thin,
                   keep_draws, sti, settings, n_jobs, verbose=0, tied_labels=()):
    """``n_chains`` SGLD chains on ``make_target()`` (a picklable callable,
    e.g. a ``functools.partial`` of :func:`poisson_target`) in parallel,
    aligned (``free`` positions; ``tied_labels`` as for
    :func:`~sklearn_pltf.inference._chains.align_labels`) and pooled; with
    ``sti`` each first walks the temperature ladder and log p(X) is the mean
    of the chains' STI estimates; its standard error is the larger of their
    combined errors and their spread (standard deviation / sqrt(n_chains))."""
    chain = functools.partial(_sgld_chain, make_target=make_target, settings=settings, sti=sti,
                              n_warmup=n_warmup, n_draws=n_draws, thin=thin,
                              keep_draws=keep_draws, verbose=verbose)
    estimates = []

    def pool(results):
        estimates.extend(estimate for _, estimate in results)
        return pool_aligned([chain for chain, _ in results], model, free, tied=tied_labels)

    pooled, _ = run_chains(rng, chain, n_chains, n_jobs=n_jobs, label="sgld", pool=pool)
    if not sti:
        return _posterior_of(pooled, log_evidence=None)
    values = np.array([e.log_evidence for e in estimates])
    if not np.all(np.isfinite(values)):
        raise FloatingPointError(
            "SGLD diverged on the temperature ladder (a non-finite evidence estimate); "
            "lower step_size."
        )
    errors = [e.standard_error for e in estimates]
    value, error = combine_chain_estimates(values, errors)
    warn_if_chains_disagree(values, errors)
    warn_if_unsettled(estimates)
    return _posterior_of(pooled, log_evidence=value, log_evidence_error=error)


#: Chains whose STI estimates scatter this many times more than their own
#: errors say have not settled at their temperatures.
SPREAD_LIMIT = 3.0


def warn_if_chains_disagree(values, errors):
    """A ``RuntimeWarning`` when independent chains' STI estimates scatter
    (standard deviation) more than :data:`SPREAD_LIMIT` times the root mean
    square of their own standard errors."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return
    spread = float(values.std(ddof=1))
    typical = float(np.sqrt(np.mean(np.square(errors))))
    if spread > SPREAD_LIMIT * typical:
        warnings.warn(
            f"STI: the {values.size} chains' estimates scatter by {spread:.3g} (standard "
            f"deviation), {spread / typical:.1f} times their own errors: the chains have not "
            "settled at their temperatures, and the estimate may be several nats off; raise "
            "steps_per_temperature (and n_warmup).", RuntimeWarning, stacklevel=2)


def warn_if_unsettled(estimates):
    """A ``RuntimeWarning`` when self-tuning STI's budget ran out with the
    log-likelihood still trending at some temperature (``STIEstimate.unsettled``)."""
    unsettled = sum(e.unsettled for e in estimates)
    if unsettled:
        budget = max(int(e.steps.sum()) for e in estimates)
        warnings.warn(
            f"STI: at {unsettled} temperature(s) over {len(estimates)} chain(s) the "
            f"log-likelihood was still trending when the budget of {budget} steps ran out: "
            "the estimate may be off by more than its standard error; set "
            "steps_per_temperature to a number of steps (several thousand), or n_init=2 or "
            "more, whose spread the error then includes.", RuntimeWarning, stacklevel=2)


def combine_chain_estimates(values, errors):
    """The mean of independent chains' evidence estimates and its standard
    error: the chains' errors combined, or the chains' own spread
    (standard deviation / sqrt(n_chains)) if that is larger.

    Each STI chain's error assumes its temperatures' errors independent, but
    one chain walks the whole ladder, so slow components carry from one
    temperature to the next and that error can understate the spread between
    chains (the user guide gives an example). The spread is an honest
    error whatever the cause.
    """
    values = np.asarray(values, dtype=np.float64)
    error = float(np.sqrt(np.sum(np.square(errors)))) / values.size
    if values.size > 1:
        error = max(error, float(values.std(ddof=1) / np.sqrt(values.size)))
    return float(values.mean()), error


def kept_sweeps(log_likelihoods, n_warmup, thin):
    """The log-likelihoods of the sweeps whose draws were kept
    (:func:`~sklearn_pltf.inference._chains.drive_chain`), a row per chain."""
    return log_likelihoods[:, n_warmup + thin - 1::thin]
