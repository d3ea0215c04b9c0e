"""The samplers' driver: running chains (:func:`run_chains`, the one place
several chains are spawned, run and pooled, for every sampler of every
family), one chain of any kernel (:func:`drive_chain`), summarising its
draws, and aligning the labels of several chains.

A chain runs ``n_warmup`` sweeps that are discarded, then keeps every
``thin``-th of the next ``n_draws * thin`` sweeps. Its summaries are the
posterior mean E[Z_α] and E[log Z_α] of every free factor over the kept draws
(the second is what a variational fold-in needs of a held factor: its
geometric mean exp E[log Z]), its log-likelihood trace, and the draw with the
highest log p(X, Z) (Chib's point Z*). The draws themselves are kept only
when asked: running sums need memory for one draw.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Protocol

import numpy as np
from joblib import Parallel, delayed
from scipy.optimize import linear_sum_assignment

from ..engine._progress import progress_or_none

__all__ = ["ChainProblem", "ChainResult", "ChainSettings", "SamplerStep", "align_labels",
           "drive_chain", "pool_aligned", "run_chains"]


class SamplerStep(Protocol):
    """The declared interface of a sampler's kernel for :func:`drive_chain`:
    ``step(rng, state) -> (state, info)``, one transition that leaves the
    posterior invariant, with ``info.log_likelihood`` the log p(X | Z) of
    the new state (or the estimate the step has of it)."""

    def __call__(self, rng, state):
        """One transition from ``state``."""


def run_chains(rng, chain, n_chains, *, pool, n_jobs=None, label="chain", spare=0):
    """The multi-chain driver of every sampler: ``n_chains`` independent
    chains, each ``chain(rng, label=...)`` with its own generator spawned
    from ``rng``, run in parallel (joblib, ``n_jobs``), and pooled by
    ``pool(results)`` (their labels aligned and summaries averaged: for the
    Poisson–Gamma family :func:`pool_aligned`). ``spare`` more generators
    are spawned after the chains' for what runs after them (Chib's clamped
    runs). Returns ``(pooled, spare generators)``."""
    children = rng.spawn(n_chains + spare)
    results = Parallel(n_jobs=n_jobs)(
        delayed(chain)(child, label=f"{label} chain {k + 1}/{n_chains}")
        for k, child in enumerate(children[:n_chains]))
    return pool(results), children[n_chains:]


class PooledChains(NamedTuple):
    """Chains of the Poisson–Gamma family pooled: the chains aligned to the
    first's labels, their posterior means and geometric means (``mean``,
    ``geometric``, per factor), their draws stacked (chain, draw, ...) per
    factor (None where not kept or held), and their log-likelihood traces
    (chain, sweep)."""

    chains: list
    mean: tuple
    geometric: tuple
    draws: tuple
    trace: np.ndarray


def pool_aligned(chains, model, free, tied=()):
    """:class:`PooledChains` of ``chains`` (:class:`ChainResult`), their
    labels aligned by :func:`align_labels` (``free``, ``tied``)."""
    chains = align_labels(chains, model, free, tied=tied)
    n = model.n_factors
    mean = tuple(np.mean([c.mean[a] for c in chains], axis=0) for a in range(n))
    mean_log = tuple(np.mean([c.mean_log[a] for c in chains], axis=0) for a in range(n))
    draws = tuple(None if chains[0].draws[a] is None
                  else np.stack([c.draws[a] for c in chains]) for a in range(n))
    return PooledChains(chains, mean, tuple(np.exp(m) for m in mean_log), draws,
                        np.stack([c.log_likelihoods for c in chains]))


class ChainResult(NamedTuple):
    """One chain's output; per-factor tuples are in model order, with the
    given array (held factor) or its log in place of a summary."""

    mean: tuple
    mean_log: tuple
    draws: tuple  # (n_draws, *factor shape) per free factor; None if held or not kept
    log_likelihoods: np.ndarray  # log p(X | Z) after every sweep, warm-up included
    best: tuple  # the factors of the kept draw of highest log p(X, Z) (the last, if none ranked)
    best_log_joint: float
    best_state: tuple | None = None  # that draw's whole state
    collected: tuple | None = None  # means over the kept draws of what ``collect`` returned
    recorded: np.ndarray | None = None  # ``record(state)`` at each kept draw (with the draws)


class ChainProblem(NamedTuple):
    """What one chain samples (as :class:`~._driver.OptimizerProblem` is
    what one restart optimises).

    ``state`` is the start and ``step`` the kernel (a :class:`SamplerStep`);
    the factors at positions ``free`` are summarised, ``factors_of(state)``
    giving a state's factors in model order (None: ``state.factors``).
    ``log_prior(state)`` ranks the kept draws for the best one (None: none
    is ranked; ``best`` then holds the last state's factors, of unknown
    value, and ``best_state`` is None). ``log_summaries=False`` skips E[log
    Z] (signed factors have no log); ``collect(state, info)``, if given,
    returns a tuple of arrays or floats whose means over the kept draws come
    back as ``ChainResult.collected``; ``record(state)``, if given, a float
    kept with every kept draw (``keep_draws``) in ``ChainResult.recorded``.
    """

    state: object
    step: Callable
    free: tuple
    log_prior: Callable | None = None
    factors_of: Callable | None = None
    log_summaries: bool = True
    collect: Callable | None = None
    record: Callable | None = None


class ChainSettings(NamedTuple):
    """How long one chain runs and what it keeps: ``n_warmup`` sweeps
    discarded, then every ``thin``-th of ``n_draws * thin`` kept (the draws
    themselves with ``keep_draws``), with progress lines under ``label``
    counting ``unit`` when ``verbose``."""

    n_warmup: int
    n_draws: int
    thin: int = 1
    keep_draws: bool = True
    verbose: int = 0
    label: str = "Gibbs chain"
    unit: str = "sweeps"


def drive_chain(rng, problem, settings):
    """Run one chain of ``problem`` (:class:`ChainProblem`) with ``settings``
    (:class:`ChainSettings`): ``problem.step(rng, state) -> (state, info)``,
    ``info.log_likelihood`` the log p(X | Z) the step reports. Returns its
    :class:`ChainResult`."""
    state, step, free, log_prior, factors_of, log_summaries, collect, record = problem
    n_warmup, n_draws, thin, keep_draws = settings[:4]
    factors_of = _own_factors if factors_of is None else factors_of
    first = factors_of(state)
    sums = {a: np.zeros(first[a].shape) for a in free}
    log_sums = {a: np.zeros(first[a].shape) for a in free} if log_summaries else None
    kept = {a: [] for a in free} if keep_draws else None
    collected = None
    recorded = [] if record is not None and keep_draws else None
    trace = np.empty(n_warmup + n_draws * thin)
    best, best_value = state, -np.inf
    progress = progress_or_none(settings.verbose, settings.label, trace.size, unit=settings.unit)
    for t in range(trace.size):
        state, info = step(rng, state)
        trace[t] = info.log_likelihood
        if progress is not None:
            progress()
        if t < n_warmup or (t - n_warmup) % thin != thin - 1:
            continue
        factors = factors_of(state)
        for a in free:
            sums[a] += factors[a]
            if log_sums is not None:
                with np.errstate(divide="ignore"):
                    log_sums[a] += np.log(factors[a])
            if kept is not None:
                kept[a].append(factors[a])
        if recorded is not None:
            recorded.append(record(state))
        if collect is not None:
            values = collect(state, info)
            collected = values if collected is None else tuple(c + v for c, v in zip(collected, values))
        if log_prior is not None:
            value = info.log_likelihood + log_prior(state)
            if value > best_value:
                best, best_value = state, value
    best_state = best if log_prior is not None else None
    result = _chain_result(factors_of, state, sums, log_sums, kept, collected, n_draws, trace,
                           factors_of(state if best_state is None else best_state), best_value,
                           best_state)
    return result if recorded is None else result._replace(recorded=np.array(recorded))


def _own_factors(state):
    return state.factors


def _chain_result(factors_of, state, sums, log_sums, kept, collected, n_draws, trace, best,
                  best_value, best_state):
    mean, mean_log, draws = [], [], []
    for a, factor in enumerate(factors_of(state)):
        if a in sums:
            mean.append(sums[a] / n_draws)
            mean_log.append(log_sums[a] / n_draws if log_sums is not None else None)
            draws.append(np.array(kept[a]) if kept is not None else None)
        else:
            mean.append(factor)
            with np.errstate(divide="ignore"):
                mean_log.append(np.log(factor) if log_sums is not None and factor is not None
                                else None)
            draws.append(None)
    return ChainResult(
        tuple(mean), tuple(mean_log), tuple(draws), trace, tuple(best), float(best_value),
        best_state,
        None if collected is None else tuple(c / n_draws for c in collected))


def align_labels(chains, model, free, tied=()):
    """Permute each chain's latent labels to match the first chain's.

    Each chain settles in one of the posterior's label-permuted modes, so
    averaging chains needs a common labelling. For each latent index that only
    free factors carry, the permutation is the assignment (Hungarian
    algorithm) minimising the squared distance between the first chain's
    posterior-mean slices and this chain's, each slice scaled to sum one
    (scale moves freely between factors); two passes, since a core carrying
    several latent indices couples their labels. ``tied`` lists groups of
    latent indices that carry one label (a factor tied to another: RESCAL's
    ``a`` and ``b``), permuted together. Switching within a chain is not
    undone.
    """
    free = set(free)
    movable = [
        c for c in model.latent
        if all(a in free for a, own in enumerate(model.factors) if c in own)
    ]
    grouped = {c for group in tied for c in group}
    groups = [tuple(group) for group in tied if all(c in movable for c in group)]
    groups += [(c,) for c in movable if c not in grouped]
    reference = chains[0]
    aligned = [reference]
    for chain in chains[1:]:
        for _ in range(2):
            for group in groups:
                cost = 0.0
                for c in group:
                    for a in (a for a, own in enumerate(model.factors) if c in own):
                        axis = model.factors[a].index(c)
                        cost = cost + _slice_distances(reference.mean[a], chain.mean[a], axis)
                _, order = linear_sum_assignment(cost)
                for c in group:
                    chain = _permute(chain, model, c, order)
        aligned.append(chain)
    return aligned


def _slice_distances(first, second, axis):
    """Squared distances between the slices of two arrays along ``axis``, each
    slice scaled to sum one: (K, K)."""
    a = np.moveaxis(first, axis, 0).reshape(first.shape[axis], -1)
    b = np.moveaxis(second, axis, 0).reshape(second.shape[axis], -1)
    a = a / np.maximum(a.sum(axis=1, keepdims=True), 1e-300)
    b = b / np.maximum(b.sum(axis=1, keepdims=True), 1e-300)
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)


def _permute(chain, model, index, order):
    """``chain`` with latent ``index`` relabelled: new label l is old ``order[l]``."""

    def moved(arrays, offset):
        return tuple(
            x if x is None or index not in model.factors[a]
            else np.take(x, order, axis=model.factors[a].index(index) + offset)
            for a, x in enumerate(arrays)
        )

    return chain._replace(
        mean=moved(chain.mean, 0), mean_log=moved(chain.mean_log, 0),
        draws=moved(chain.draws, 1), best=moved(chain.best, 0),
        best_state=(None if chain.best_state is None
                    else chain.best_state._replace(factors=moved(chain.best, 0))),
    )
