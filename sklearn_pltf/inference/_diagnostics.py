"""Convergence diagnostics of sampler runs."""

from __future__ import annotations

import contextlib
import copy
import warnings
from typing import NamedTuple

import numpy as np

__all__ = ["RHAT_LIMIT", "WARMUP_BUDGET", "DRAWS_BUDGET", "ChainLengths", "chain_lengths",
           "split_rhat", "sample_until_mixed", "warm_up_until_mixed"]

#: Split R-hat above this says the chains have not mixed (Vehtari et al. 2021
#: recommend 1.01 for their rank-normalised version, which needs many more
#: draws than a user's quick fit; the classic statistic at 1.05 flags chains
#: that disagree, not the noise of short ones).
RHAT_LIMIT = 1.05

#: With ``n_warmup="auto"`` the warm-up doubles until the chains mix, up to
#: this multiple of its default length.
WARMUP_BUDGET = 4

#: With ``n_draws="auto"`` each of Chib's clamped runs goes on until its
#: ordinates are precise enough, up to this multiple of the default draws.
DRAWS_BUDGET = 4


class ChainLengths(NamedTuple):
    """The lengths a sampler fit starts from and the most it may grow them to
    (equal when the user set them)."""

    n_warmup: int
    max_warmup: int
    n_draws: int
    max_draws: int


def chain_lengths(n_warmup, n_draws, default_warmup, default_draws):
    """A sampler's :class:`ChainLengths` from its ``n_warmup`` and ``n_draws``
    parameters: a number is used exactly; ``"auto"`` starts from the default
    and may grow to :data:`WARMUP_BUDGET` (warm-up) or :data:`DRAWS_BUDGET`
    (Chib's clamped runs) times it."""
    warmup = (default_warmup, WARMUP_BUDGET * default_warmup) if n_warmup == "auto" else (
        n_warmup, n_warmup)
    draws = (default_draws, DRAWS_BUDGET * default_draws) if n_draws == "auto" else (
        n_draws, n_draws)
    return ChainLengths(*warmup, *draws)


def split_rhat(trace):
    """Split R-hat (Gelman et al., *Bayesian Data Analysis*, 3rd ed., §11.4) of
    a scalar traced by several chains.

    Parameters
    ----------
    trace : ndarray of shape (n_chains, n_draws)
        Post-warm-up values; each chain is cut into halves, so one chain
        works too.

    Returns
    -------
    float
        √(var⁺ / W), var⁺ = (n − 1)/n W + B/n over the half-chains; NaN with
        fewer than 4 draws per chain, and 1 when every value is the same.
    """
    trace = np.asarray(trace, dtype=np.float64)
    n = trace.shape[1] // 2
    if n < 2:
        return float("nan")
    halves = np.concatenate([trace[:, :n], trace[:, -n:]])
    within = halves.var(axis=1, ddof=1).mean()
    between = n * halves.mean(axis=1).var(ddof=1)
    if within == 0:
        return 1.0 if between == 0 else float("inf")
    return float(np.sqrt(((n - 1) / n * within + between / n) / within))


def warm_up_until_mixed(run, n_warmup, max_warmup, *, verbose=0):
    """Run the chains with the warm-up doubled until they have mixed.

    The rule: the chains run ``n_warmup`` sweeps and then their draws; if the
    split R-hat of their log-likelihood over the sweeps after the warm-up
    (:func:`split_rhat`; Gelman et al., *BDA3* §11.4, the unranked form of
    Vehtari et al. 2021) is above :data:`RHAT_LIMIT`, they run again from the
    same seeds with twice the warm-up, until it is at most the limit or the
    warm-up has reached ``max_warmup``. A rerun of Gibbs or SADA chains from
    the same seeds repeats the earlier run's sweeps first, so each attempt
    extends the previous one's warm-up by a block as long as it (SGLD and
    HMC adapt their steps over the warm-up: theirs is a new chain).

    Parameters
    ----------
    run : callable
        ``run(n_warmup) -> (result, trace)``, ``trace`` of shape
        (n_chains, n_warmup + n_draws * thin), warm-up included.
    n_warmup, max_warmup : int
        The first warm-up and the most it grows to (equal: one run).
    verbose : int, default=0
        At 1 or more, a line for each attempt that does not pass.

    Returns
    -------
    result : object
        That of the last run.
    n_warmup : int
        The warm-up of the last run.
    rhat : float
        The split R-hat of its trace after the warm-up.
    """
    while True:
        result, trace = run(n_warmup)
        rhat = split_rhat(trace[:, n_warmup:])
        if not rhat > RHAT_LIMIT or n_warmup >= max_warmup:
            break
        longer = min(max(2 * n_warmup, 1), max_warmup)
        if verbose:
            print(f"Warm-up: split R-hat of the log-likelihood {rhat:.3g} after {n_warmup} "
                  f"warm-up sweeps (above {RHAT_LIMIT}); running again with {longer}.",
                  flush=True)
        n_warmup = longer
    return result, n_warmup, rhat


def sample_until_mixed(run, rng, lengths, *, verbose=0):
    """:func:`warm_up_until_mixed` of chains that take their generator:
    ``run(n_warmup, rng) -> (result, trace)``. With a warm-up that may grow
    (``lengths``, a :class:`ChainLengths`), every attempt gets a copy of
    ``rng`` as it is now (the same seeds, so a longer Gibbs warm-up repeats
    the earlier sweeps; :class:`Replay`), ``rng`` is left as the last
    attempt left its copy, and only the last attempt's warnings are shown
    (each once: the earlier ones were superseded). Returns the last
    attempt's result and warm-up."""
    replay = Replay(rng, lengths.max_warmup > lengths.n_warmup)

    def attempt(n_warmup):
        with _warnings_of_the_last(replay.replays) as caught:
            result, trace = run(n_warmup, replay())
        return (result, caught), trace

    (result, caught), n_warmup, _ = warm_up_until_mixed(
        attempt, lengths.n_warmup, lengths.max_warmup, verbose=verbose)
    replay.done()
    shown = dict.fromkeys((str(w.message), w.category, w.filename, w.lineno) for w in caught)
    for message, category, filename, lineno in shown:
        warnings.warn_explicit(message, category, filename, lineno)
    return result, n_warmup


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
