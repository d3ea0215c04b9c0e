"""Plots of what a fit found: evidence against rank, sampler traces, factors.

Each function draws on a matplotlib ``Axes`` (a new figure when ``ax`` is
None) and returns what it drew on. matplotlib is an optional dependency
(``pip install "sklearn-pltf[plot]"``), imported only when a plot is made.
"""

from __future__ import annotations

import numpy as np

from .engine._array_api import to_numpy

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
    warmup = getattr(estimator, "n_warmup_", 0)
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


def plot_factors(factors, *, names=None, labels=None, kind="auto", axes=None, normalize=True):
    """Each factor matrix, one curve, bar group or heatmap column per component.

    Given a fitted estimator, every factor that carries one axis of the data
    and one latent index is drawn with that axis along x (BayesianNMF's H
    too, stored components by features), titled with the factor's name and
    index letters (e.g. ``"H (j)"``) and its ticks labelled with the
    training data's feature names where it had them; a core or a factor
    over several latent indices is skipped.

    Parameters
    ----------
    factors : fitted estimator or sequence of 2-D arrays
        An estimator, or matrices of shape (size, n_components).
    names : sequence of str, default=None
        A title per drawn matrix.
    labels : dict, default=None
        Tick labels per drawn matrix, ``{position among the drawn matrices:
        sequence}``, e.g. ``{0: nations.entities}``.
    kind : {"auto", "line", "bar", "heatmap"}, default="auto"
        ``"line"`` for an ordered axis (time, frequency); ``"bar"`` (grouped
        bars) or ``"heatmap"`` (rows the axis's values, columns the
        components) for unordered categories (countries, relations, words).
        ``"auto"``: a heatmap for an axis of at most 30 values or with tick
        labels, lines for longer ones.
    axes : sequence of matplotlib Axes, default=None
        One per drawn matrix; a new row of panels when None.
    normalize : bool, default=True
        Scale every column to sum to one: a component's scale is shared
        between its factors, so only the shapes compare.

    Returns
    -------
    axes : list of matplotlib Axes
    """
    if kind not in ("auto", "line", "bar", "heatmap"):
        raise ValueError(f"kind must be 'auto', 'line', 'bar' or 'heatmap', got {kind!r}.")
    panels = _factor_panels(factors)
    if not panels:
        raise ValueError("No factor matrix (one data axis by one latent index) to plot.")
    if axes is None:
        _, axes = _pyplot().subplots(1, len(panels), figsize=(3.4 * len(panels), 3.2),
                                     squeeze=False)
        axes = list(axes[0])
    if len(axes) < len(panels):
        raise ValueError(f"{len(panels)} factor matrices need as many axes, got {len(axes)}.")
    for k, (ax, (matrix, title, letter, ticks)) in enumerate(zip(axes, panels)):
        if normalize:
            totals = matrix.sum(axis=0, keepdims=True)
            matrix = matrix / np.where(totals > 0, totals, 1.0)
        ticks = (labels or {}).get(k, ticks)
        if ticks is not None and len(ticks) != matrix.shape[0]:
            raise ValueError(f"labels for matrix {k} has {len(ticks)} entries; the matrix has "
                             f"{matrix.shape[0]} rows.")
        drawn = kind if kind != "auto" else (
            "heatmap" if ticks is not None or matrix.shape[0] <= 30 else "line")
        _DRAW[drawn](ax, matrix, ticks)
        ax.set_title(names[k] if names is not None else title)
        value = "share" if normalize else "value"
        if drawn == "heatmap":
            ax.set_ylabel(letter)
            ax.set_xlabel("component")
        else:
            ax.set_xlabel(letter)
            ax.set_ylabel(value)
    if kind != "heatmap" and any(not ax.images for ax in axes[:len(panels)]):
        next(ax for ax in axes if not ax.images).legend(fontsize="small")
    return list(axes)


def _factor_panels(factors):
    """``(matrix (size, components), title, axis label, tick labels)`` per
    drawable factor of an estimator, or of a sequence of matrices."""
    model = getattr(factors, "model_", None)
    if model is None:
        matrices = [np.asarray(to_numpy(f), dtype=np.float64)
                    for f in getattr(factors, "factors_", factors)
                    if f is not None and len(getattr(f, "shape", np.shape(f))) == 2]
        return [(m, f"factor {k}", "index", None) for k, m in enumerate(matrices)]
    estimator = factors
    names = estimator._default_factor_names()
    feature_names = getattr(estimator, "feature_names_in_", None)
    panels, seen = [], set()
    for a, (own, value) in enumerate(zip(model.factors, estimator.factors_)):
        observed = [c for c in own if c in model.output]
        if len(own) != 2 or len(observed) != 1 or names[a] in seen:
            continue  # a core, a factor over several latent indices, a tied copy
        seen.add(names[a])
        letter = observed[0]
        matrix = np.asarray(to_numpy(value), dtype=np.float64)  # a factor: small
        if own.index(letter) == 1:
            matrix = matrix.T
        ticks = (list(feature_names) if feature_names is not None
                 and model.output.index(letter) == 1 else None)
        panels.append((matrix, f"{names[a]} ({letter})", f"{letter} (axis "
                       f"{model.output.index(letter)})", ticks))
    return panels


def _draw_lines(ax, matrix, ticks):
    for r in range(matrix.shape[1]):
        ax.plot(matrix[:, r], lw=1, label=f"component {r}")
    if ticks is not None:
        ax.set_xticks(range(len(ticks)), ticks, rotation=90, fontsize="small")


def _draw_bars(ax, matrix, ticks):
    n, R = matrix.shape
    width = 0.8 / R
    for r in range(R):
        ax.bar(np.arange(n) + (r - (R - 1) / 2) * width, matrix[:, r], width,
               label=f"component {r}")
    ax.set_xticks(range(n), ticks if ticks is not None else range(n), rotation=90,
                  fontsize="small")


def _draw_heatmap(ax, matrix, ticks):
    image = ax.imshow(matrix, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.figure.colorbar(image, ax=ax, fraction=0.05)
    ax.set_xticks(range(matrix.shape[1]))
    if ticks is not None:
        ax.set_yticks(range(len(ticks)), ticks, fontsize="small")


_DRAW = {"line": _draw_lines, "bar": _draw_bars, "heatmap": _draw_heatmap}
