"""One chain of the Gaussian family (Gibbs or HMC, on the samplers' driver) and
the pooling of several, aligned over their symmetric modes."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment

from .._chains import ChainProblem, ChainSettings, drive_chain
from ._model import GaussianState
from .hmc import AdaptiveHMC, _log_prior
from .links import likelihood_of


class GaussianChain(NamedTuple):
    """One chain's output (or several pooled, :func:`pool_chains`): posterior
    means of the factors and of their logs (None for signed factors), of
    each column's (μ, v) and of σ², the kept draws (or None; a leading chain
    axis once pooled), log p(X | A, σ²) after every iteration (warm-up
    included; a row per chain once pooled), the kept state of highest log
    joint and that log joint, the mean acceptance probability after warm-up
    and HMC's adapted step size (None for Gibbs; the chains' mean once
    pooled)."""

    mean_factors: tuple
    mean_log_factors: tuple
    mean_hyper_means: tuple
    mean_hyper_variances: tuple
    mean_noise_variance: float
    draws: tuple | None
    log_likelihoods: np.ndarray
    best: GaussianState
    best_log_joint: float
    acceptance: float
    step_size: float | None
    noise_variance_draws: np.ndarray | None = None  # σ² at each kept draw, with ``draws``



def run_chain(rng, stats, rank, priors, *, sampler="gibbs", n_warmup=500, n_draws=1000, thin=1,
              keep_draws=True, step_size=0.05, n_leapfrog=20, target_acceptance=0.8, verbose=0,
              label=None):
    """Run one Gibbs (the likelihood's ``sweep``) or HMC (:class:`AdaptiveHMC`)
    chain from a random start (its ``initial_state``) with
    :func:`~sklearn_pltf.inference._chains.drive_chain`. ``stats`` is the
    data's likelihood (:mod:`.links`), or a
    :class:`~sklearn_pltf.inference._cp_stats.CPStatistics` for Gaussian noise. HMC's
    ``target_acceptance`` should be at least 0.75 (Schmidt & Mohamed's rule
    asks for rejections below 25%). With ``verbose``, progress lines headed
    ``label`` (default: the sampler's name and "chain") give the time left."""
    likelihood = likelihood_of(stats)
    if sampler not in likelihood.samplers:
        raise ValueError(f"method={sampler!r} cannot sample this likelihood; use one of "
                         f"{list(likelihood.samplers)}.")
    state = likelihood.initial_state(rng, rank, priors)
    if sampler == "hmc":
        transition = AdaptiveHMC(likelihood.stats, priors, n_warmup=n_warmup,
                                 step_size=step_size, n_leapfrog=n_leapfrog,
                                 target_acceptance=target_acceptance)
    else:
        transition = lambda rng, state: likelihood.sweep(rng, state, priors)  # noqa: E731
    n = len(state.factors)
    chain = drive_chain(rng, ChainProblem(
        state, transition, tuple(range(n)), lambda state: _log_prior(state, priors),
        log_summaries=priors.nonnegative,
        collect=lambda state, info: (*state.means, *state.variances, state.noise_variance,
                                     info.acceptance),
        record=lambda state: state.noise_variance), ChainSettings(
        n_warmup, n_draws, thin, keep_draws, verbose, label or f"{sampler} chain", "iterations"))
    hyper = chain.collected
    return GaussianChain(
        chain.mean, chain.mean_log if priors.nonnegative else None, hyper[:n], hyper[n:2 * n],
        hyper[2 * n], chain.draws if keep_draws else None, chain.log_likelihoods, chain.best_state,
        chain.best_log_joint, float(hyper[2 * n + 1]),
        transition.adaptation.final if sampler == "hmc" else None, chain.recorded,
    )


def pool_chains(chains):
    """Chains of one model pooled into one :class:`GaussianChain`.

    Each chain settles in one of the posterior's symmetric modes: its
    columns in any order and, for signed factors, a column's signs flipped
    in any set of factors whose product of signs is one. Every chain is
    aligned to the first before averaging: the column order is the
    assignment (Hungarian algorithm) minimising the summed
    ``1 - |cos|`` between the first chain's posterior-mean columns and its
    own over the factors, then (signed factors) each factor but the first
    takes the sign of that cosine and the first the product of theirs.
    Switching within a chain is not undone.
    """
    reference = chains[0]
    aligned = [reference] + [_aligned_to(reference, chain) for chain in chains[1:]]
    n = len(reference.mean_factors)

    def mean(field):
        return tuple(np.mean([getattr(c, field)[m] for c in aligned], axis=0) for m in range(n))

    best = max(aligned, key=lambda c: c.best_log_joint)
    step_sizes = [c.step_size for c in aligned]
    return GaussianChain(
        mean("mean_factors"),
        None if reference.mean_log_factors is None else mean("mean_log_factors"),
        mean("mean_hyper_means"), mean("mean_hyper_variances"),
        float(np.mean([c.mean_noise_variance for c in aligned])),
        None if reference.draws is None else tuple(
            np.stack([c.draws[m] for c in aligned]) for m in range(n)),
        np.stack([c.log_likelihoods for c in aligned]), best.best, best.best_log_joint,
        float(np.mean([c.acceptance for c in aligned])),
        None if step_sizes[0] is None else float(np.mean(step_sizes)),
        None if reference.noise_variance_draws is None else np.stack(
            [c.noise_variance_draws for c in aligned]),
    )


def _aligned_to(reference, chain):
    """``chain`` with its columns ordered, and signed columns flipped, to match ``reference``."""
    cosines = [_column_cosines(a, b) for a, b in zip(reference.mean_factors, chain.mean_factors)]
    _, order = linear_sum_assignment(sum(1.0 - np.abs(c) for c in cosines))
    signs = [np.where(c[np.arange(order.size), order] < 0, -1.0, 1.0) for c in cosines]
    signs[0] = np.prod(signs[1:], axis=0)
    if chain.mean_log_factors is not None:  # non-negative: no signs to flip
        signs = [np.ones(order.size)] * len(signs)

    def moved(arrays, flip=True):
        return tuple(np.take(x, order, axis=-1) * (s if flip else 1.0)
                     for x, s in zip(arrays, signs))

    return chain._replace(
        mean_factors=moved(chain.mean_factors),
        mean_log_factors=(None if chain.mean_log_factors is None
                          else moved(chain.mean_log_factors, flip=False)),
        mean_hyper_means=moved(chain.mean_hyper_means),
        mean_hyper_variances=moved(chain.mean_hyper_variances, flip=False),
        draws=None if chain.draws is None else moved(chain.draws),
    )


def _column_cosines(first, second):
    """Cosines between the columns of two (I, R) matrices: (R, R)."""
    a = first / np.maximum(np.linalg.norm(first, axis=0), 1e-300)
    b = second / np.maximum(np.linalg.norm(second, axis=0), 1e-300)
    return a.T @ b
