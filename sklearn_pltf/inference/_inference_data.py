"""A fitted sampler as an ArviZ ``InferenceData``: the factors' draws under
their names, the data's feature names as coordinates and, given the training
data, ``observed_data`` and the pointwise ``log_likelihood`` that
``az.loo`` and ``az.waic`` read (Vehtari, Gelman & Gabry 2017)."""

from __future__ import annotations

import warnings

import numpy as np

from ..engine._contract import EntryList
from ..engine._data import physical_memory

__all__ = ["export_inference_data", "factor_names_of", "mode_factor_names", "observed_entries"]


def _arviz():
    try:
        import arviz
    except ImportError as error:
        raise ImportError(
            "to_inference_data needs ArviZ: pip install 'sklearn-pltf[diagnostics]'."
        ) from error
    return arviz


def mode_factor_names(model):
    """``A``, ``B``, ``C``, ...: a name per observed axis, for the factors
    that carry one axis each (CP, and Tucker's factor matrices)."""
    return [chr(ord("A") + n) for n in range(len(model.output))]


def factor_names_of(model, given, default, tied=None):
    """One variable name per factor: ``given`` (a sequence in model order, or
    ``{position: name}`` overriding ``default``), checked to be distinct
    strings where the factors differ (``tied``, ``{position: source
    position}``, names the positions that hold one factor)."""
    names = list(default)
    if given is not None:
        if isinstance(given, dict):
            for position, name in given.items():
                if not isinstance(position, int) or not 0 <= position < model.n_factors:
                    raise ValueError(f"factor_names: no factor at position {position!r} "
                                     f"(positions 0..{model.n_factors - 1}).")
                names[position] = name
        else:
            names = list(given)
            if len(names) != model.n_factors:
                raise ValueError(f"factor_names needs {model.n_factors} names (one per factor of "
                                 f"{model.string!r}), got {len(names)}.")
    if not all(isinstance(name, str) and name for name in names):
        raise ValueError(f"factor_names must be non-empty strings, got {names}.")
    tied = tied or {}
    first_of = {}
    for position, name in enumerate(names):
        factor = tied.get(position, position)
        if first_of.setdefault(name, (position, factor))[1] != factor:
            raise ValueError(
                f"factor_names gives the name {name!r} to factors {first_of[name][0]} and "
                f"{position} ({model.factors[first_of[name][0]]!r} and "
                f"{model.factors[position]!r}), which differ; give each factor its own name.")
    return names


def observed_entries(data):
    """Coordinates (ndim, n) and values (n,) of every observed entry of an
    :class:`~sklearn_pltf.engine._data.ObservedTensor`, zeros included, in C order."""
    if not data.is_sparse:
        observed = np.ones(data.shape, dtype=bool) if data.mask is None else data.mask
        coords = np.array(np.nonzero(observed)).reshape(data.ndim, -1)
        return coords, data.dense[tuple(coords)]
    observed = np.ones(data.shape, dtype=bool)
    observed[tuple(data.missing)] = False
    coords = np.array(np.nonzero(observed)).reshape(data.ndim, -1)
    values = np.zeros(coords.shape[1])
    linear = np.ravel_multi_index(tuple(coords), data.shape)  # sorted: C order
    stored = np.ravel_multi_index(tuple(data.coords), data.shape)
    values[np.searchsorted(linear, stored)] = data.values
    return coords, values


def export_inference_data(model, draws, names, *, sample_stats, coords=None, data=None,
                          modelled=None, factors_at=None, entry_log_likelihood=None,
                          extra_posterior=None):
    """An ``InferenceData`` of a fitted model's kept draws.

    Parameters
    ----------
    model : Model
        The fitted, bound model.
    draws : tuple
        Per factor, draws of shape ``(n_chains, n_draws, *factor shape)``, or
        None (fixed or tied factors: not exported).
    names : list of str
        The variable name of each factor.
    sample_stats : dict or None
        Per-draw statistics, each ``(n_chains, n_draws)``; None: with
        ``entries``, the sum of the pointwise log-likelihood of each draw.
    coords : dict, default=None
        ``{index letter: labels}``.
    data : ObservedTensor, default=None
        The training data: adds ``observed_data`` and ``log_likelihood``
        (variable ``x``, one value per modelled entry, dimension ``entry``;
        ``constant_data.entry_index`` gives each entry's coordinates). Raises
        before listing the entries if the result would not fit in a quarter
        of the memory.
    modelled : callable, default=None
        ``modelled(coords, values)``: the observed entries the fit modelled
        (default: all of them).
    factors_at : callable, default=None
        ``factors_at(chain, draw)``: every factor in model order at that draw.
    entry_log_likelihood : callable, default=None
        ``entry_log_likelihood(values, xhat, chain, draw)``: log p(x_e | draw)
        at each entry.
    extra_posterior : dict, default=None
        More posterior variables, each ``(n_chains, n_draws, ...)``.
    """
    arviz = _arviz()
    posterior, dims = dict(extra_posterior or {}), {}

    def dim(letter):  # a dimension may not share a variable's name (Tucker's "A")
        return f"{letter}_index" if letter in names else letter

    for a, factor_draws in enumerate(draws):
        if factor_draws is None:
            continue
        posterior[names[a]] = factor_draws
        dims[names[a]] = [dim(c) for c in model.factors[a]]
    coords = {dim(c): labels for c, labels in (coords or {}).items()}
    groups = dict(posterior=posterior)
    if data is None:
        warnings.warn(
            "Exported without the training data, so the InferenceData has no log_likelihood "
            "group and ArviZ's loo and waic cannot read it; pass the data the estimator was "
            "fitted to, to_inference_data(X), for them.", UserWarning, stacklevel=3)
    else:
        n_chains, n_draws = next(d for d in draws if d is not None).shape[:2]
        needed, memory = 8.0 * n_chains * n_draws * data.n_observed, physical_memory()
        if memory is not None and needed > memory / 4:
            raise ValueError(
                f"The pointwise log-likelihood of {data.n_observed} observed entries at "
                f"{n_chains * n_draws} draws needs {needed / 2**30:.3g} GiB; refit with fewer "
                "draws (n_draws, thin) or export without X.")
        entries, values = observed_entries(data)
        if modelled is not None:
            entries, values = modelled(entries, values)
        listed = EntryList(model, entries)
        pointwise = np.empty((n_chains, n_draws, values.size))
        for chain in range(n_chains):
            for draw in range(n_draws):
                xhat = listed.xhat(factors_at(chain, draw))
                pointwise[chain, draw] = entry_log_likelihood(values, xhat, chain, draw)
        groups.update(observed_data={"x": values}, log_likelihood={"x": pointwise},
                      constant_data={"entry_index": entries.T})
        dims.update(x=["entry"], entry_index=["entry", "axis"])
        if sample_stats is None:
            sample_stats = {"total_log_likelihood": pointwise.sum(axis=-1)}
    if sample_stats is not None:
        groups["sample_stats"] = sample_stats
    return arviz.from_dict(**groups, dims=dims, coords=coords)
