"""Plots of what a fit found: evidence against rank, sampler traces, factors.

Each function draws on a matplotlib ``Axes`` (a new figure when ``ax`` is
None) and returns what it drew on. matplotlib is an optional dependency
(``pip install "sklearn-pltf[plot]"``), imported only when a plot is made.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plot_evidence", "plot_trace", "plot_factors"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Plotting needs matplotlib: pip install 'sklearn-pltf[plot]'."
        ) from exc
    return plt


def plot_evidence(ranks, log_evidence, errors=None, *, ax=None, label=None, mark_best=True):
    """The log evidence against the rank, with ±2 standard-error bars.

    Parameters
    ----------
    ranks : array-like of int
    log_evidence : array-like of float
        One estimate of log p(X | rank) per rank, e.g. ``log_evidence_`` of
        fits at each rank, or ``GridSearchCV(..., cv=FullDataSplit())``'s
        ``cv_results_["mean_test_score"]``.
    errors : array-like of float, default=None
        Standard errors (``log_evidence_error_``); bars of ±2 SE.
    ax : matplotlib Axes, default=None
    label : str, default=None
        Legend label of the curve.
    mark_best : bool, default=True
        Circle the rank with the highest evidence.

    Returns
    -------
    ax : matplotlib Axes
    """
    ranks = np.asarray(ranks)
    log_evidence = np.asarray(log_evidence, dtype=np.float64)
    if ranks.shape != log_evidence.shape:
        raise ValueError(f"ranks {ranks.shape} and log_evidence {log_evidence.shape} differ in shape.")
    if ax is None:
        _, ax = _pyplot().subplots(figsize=(5, 3.5))
    yerr = None if errors is None else 2 * np.asarray(errors, dtype=np.float64)
    line = ax.errorbar(ranks, log_evidence, yerr=yerr, marker="o", capsize=3, label=label)
    if mark_best:
        best = int(np.nanargmax(log_evidence))
        ax.plot(ranks[best], log_evidence[best], "o", ms=14, mfc="none",
                color=line.lines[0].get_color())
    ax.set_xlabel("rank")
    ax.set_ylabel("log evidence")
    ax.set_xticks(ranks)
    if label is not None:
        ax.legend()
    return ax


def plot_trace(estimator, *, ax=None, skip_warmup=False):
    """Each chain's log-likelihood log p(X | Z) after every sweep.

    A chain that has not reached its stationary level by the end of the
    warm-up (the dashed line) needs a longer ``n_warmup``; chains that settle
    at different levels have found different modes.

    Parameters
    ----------
    estimator : fitted sampler estimator
        One fitted by Gibbs, SADA, SGLD or HMC (it has ``log_likelihoods_``).
    ax : matplotlib Axes, default=None
    skip_warmup : bool, default=False
        Start the plot after the warm-up.

    Returns
    -------
    ax : matplotlib Axes
    """
    if not hasattr(estimator, "log_likelihoods_"):
        raise ValueError(
            f"{type(estimator).__name__} has no sampler trace (log_likelihoods_); "
            "fit it with a sampling method first."
        )
    traces = np.atleast_2d(estimator.log_likelihoods_)
    warmup = getattr(estimator, "n_warmup", 0)
    start = warmup if skip_warmup else 0
    if ax is None:
        _, ax = _pyplot().subplots(figsize=(6, 3.5))
    sweeps = np.arange(start, traces.shape[1])
    for k, trace in enumerate(traces):
        ax.plot(sweeps, trace[start:], lw=0.8, label=f"chain {k}")
    if warmup and not skip_warmup:
        ax.axvline(warmup, ls="--", color="gray", lw=1)
    ax.set_xlabel("sweep")
    ax.set_ylabel("log p(X | Z)")
    if traces.shape[0] > 1:
        ax.legend()
    return ax


def plot_factors(factors, *, names=None, axes=None, normalize=True):
    """Each factor matrix as lines, one per component.

    Parameters
    ----------
    factors : fitted estimator or sequence of 2-D arrays
        An estimator's ``factors_`` (matrices of shape (size, n_components);
        arrays of other dimensions, such as a Tucker core, are skipped) or
        the estimator itself.
    names : sequence of str, default=None
        A title per matrix.
    axes : sequence of matplotlib Axes, default=None
        One per matrix; a new row of panels when None.
    normalize : bool, default=True
        Scale every column to sum to one: a CP component's scale is shared
        between its factors, so only the shapes compare.

    Returns
    -------
    axes : list of matplotlib Axes
    """
    factors = getattr(factors, "factors_", factors)
    matrices = [np.asarray(f, dtype=np.float64) for f in factors
                if f is not None and np.ndim(f) == 2]
    if not matrices:
        raise ValueError("No factor matrix (2-D array) to plot.")
    if axes is None:
        _, axes = _pyplot().subplots(1, len(matrices), figsize=(3.2 * len(matrices), 3),
                                     squeeze=False)
        axes = list(axes[0])
    if len(axes) < len(matrices):
        raise ValueError(f"{len(matrices)} factor matrices need as many axes, got {len(axes)}.")
    for k, (ax, matrix) in enumerate(zip(axes, matrices)):
        if normalize:
            totals = matrix.sum(axis=0, keepdims=True)
            matrix = matrix / np.where(totals > 0, totals, 1.0)
        for r in range(matrix.shape[1]):
            ax.plot(matrix[:, r], lw=1, label=f"component {r}")
        ax.set_title(names[k] if names is not None else f"factor {k}")
        ax.set_xlabel("index")
    axes[0].legend(fontsize="small")
    return list(axes)
