"""The estimators' sampler path: chains, their pooled summaries, Chib's
evidence, and the ArviZ export of the draws."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from joblib import Parallel, delayed

from .._contract import make_contractor
from ..evidence import chib_log_evidence
from ..inference import gibbs, vb
from ..inference._chains import align_labels, run_chain

__all__ = ["SAMPLERS", "SampledPosterior", "sample_posterior", "to_inference_data"]

SAMPLERS = tuple(gibbs.SWEEPS)


class SampledPosterior(NamedTuple):
    """What a sampler fit keeps: ``state`` holds the posterior means and
    geometric means exp E[log Z] (the fields a fold-in reads of held
    factors); ``draws`` per factor (n_chains, n_draws, ...) or None."""

    state: vb.VBState
    draws: tuple
    log_likelihoods: np.ndarray
    log_evidence: float | None


def _chain(sweep, rng, model, data, priors, given, n_warmup, n_draws, thin, keep_draws):
    contractor = make_contractor(model, data)
    return run_chain(rng, model, contractor, priors, given, sweep, n_warmup=n_warmup,
                     n_draws=n_draws, thin=thin, keep_draws=keep_draws)


def sample_posterior(method, rng, model, data, priors, given, *, n_chains, n_warmup, n_draws,
                     thin, keep_draws, chib, n_jobs):
    """Run ``n_chains`` chains of ``method`` ("gibbs" or "sada") in parallel,
    align their labels, pool their summaries and, with ``chib``, estimate
    log p(X) by Chib's method at the best draw of all chains (its clamped runs
    take ``n_warmup`` + ``n_draws`` sweeps each)."""
    sweep = gibbs.SWEEPS[method]
    children = rng.spawn(n_chains + 1)
    chains = Parallel(n_jobs=n_jobs)(
        delayed(_chain)(sweep, child, model, data, priors, given, n_warmup, n_draws, thin, keep_draws)
        for child in children[:-1]
    )
    chains = align_labels(chains, model, priors.free)
    n = model.n_factors
    mean = tuple(np.mean([c.mean[a] for c in chains], axis=0) for a in range(n))
    mean_log = tuple(np.mean([c.mean_log[a] for c in chains], axis=0) for a in range(n))
    none = (None,) * n
    state = vb.VBState(none, none, mean, tuple(np.exp(m) for m in mean_log), none)
    draws = tuple(
        None if chains[0].draws[a] is None else np.stack([c.draws[a] for c in chains])
        for a in range(n)
    )
    log_evidence = None
    if chib:
        best = max(chains, key=lambda c: c.best_log_joint).best
        estimate = chib_log_evidence(
            children[-1], model, make_contractor(model, data), priors, given, sweep=sweep,
            n_draws=n_draws, n_warmup=n_warmup, point=best,
        )
        log_evidence = estimate.log_evidence
    trace = np.stack([c.log_likelihoods for c in chains])
    return SampledPosterior(state, draws, trace, log_evidence)


def to_inference_data(model, draws, log_likelihoods, n_warmup, thin):
    """An ArviZ ``InferenceData``: each free factor's draws under the name
    ``Z<position>_<indices>`` (dimensions named by the model's indices), and
    the log-likelihood of each kept draw as ``total_log_likelihood`` in
    ``sample_stats``."""
    try:
        import arviz
    except ImportError as error:
        raise ImportError(
            "to_inference_data needs ArviZ: pip install 'sklearn-pltf[diagnostics]'."
        ) from error
    posterior, dims = {}, {}
    for a, factor_draws in enumerate(draws):
        if factor_draws is None:
            continue
        name = f"Z{a}_{model.factors[a]}"
        posterior[name] = factor_draws
        dims[name] = list(model.factors[a])
    # the sweeps whose draws were kept (inference/_chains.run_chain)
    sample_stats = {"total_log_likelihood": log_likelihoods[:, n_warmup + thin - 1::thin]}
    return arviz.from_dict(posterior=posterior, sample_stats=sample_stats, dims=dims)
