"""Pieces every Poisson–Gamma inference module shares: priors and initial factors."""

from __future__ import annotations

from numbers import Integral
from typing import NamedTuple

import numpy as np
from scipy.special import gammaln

from ..engine._array_api import like


class GammaPriors(NamedTuple):
    """Gamma(shape, rate) prior of every factor; ``None`` for a held factor.

    A held factor is fixed (given by the user) or held at its posterior during
    a fold-in; inference never updates it and it has no prior term.
    """

    shape: tuple
    rate: tuple
    #: Σ (A log R - log Γ(A)) over each factor's elements: the prior's
    #: normalising constant, which the bound and the log joint add (with
    #: hierarchical rates, E log R and the hyperprior's terms).
    log_normalizer: tuple
    #: Per factor with hierarchical rates, the rate of its elements for an
    #: entity the fit has not seen (its rate at the hyperprior's mean); else None.
    new_entity_rate: tuple | None = None

    @property
    def free(self):
        """Positions of the factors inference updates."""
        return tuple(a for a, s in enumerate(self.shape) if s is not None)


def gamma_priors(model, prior_shape, prior_rate, free=None):
    """Broadcast shape/rate hyper-parameters to every free factor of ``model``.

    Parameters
    ----------
    model : Model
        A bound model.
    prior_shape, prior_rate : float, array-like or dict
        A scalar or an array broadcastable to every free factor's shape, or a
        dict ``{position: value}`` with one entry per free factor (an entry
        for a factor not in ``free`` is not used; a key that is no position
        of ``model`` raises). Both must be > 0.
    free : tuple of int, default=None
        The factors to give priors to (default: every factor not fixed).
    """
    free = model.free if free is None else tuple(free)
    prior_shape = _by_position(prior_shape, model, "prior_shape")
    prior_rate = _by_position(prior_rate, model, "prior_rate")
    shapes, rates = [None] * model.n_factors, [None] * model.n_factors
    for alpha in free:
        shapes[alpha] = _per_factor(prior_shape, alpha, model, "prior_shape")
        rates[alpha] = _per_factor(prior_rate, alpha, model, "prior_rate")
    normalizers = [
        None if a is None else float(np.sum(a * np.log(r) - gammaln(a)))
        for a, r in zip(shapes, rates)
    ]
    return GammaPriors(tuple(shapes), tuple(rates), tuple(normalizers))


def priors_for(priors, data):
    """``priors`` with their arrays where ``data`` lives: unchanged for NumPy
    data, in the data's namespace, dtype and device for array-API data
    (:mod:`sklearn_pltf.engine._array_api`)."""
    if not data.is_array_api:
        return priors
    on_data = [tuple(None if v is None else like(v, data.dense) for v in field)
               for field in (priors.shape, priors.rate)]
    return GammaPriors(*on_data, priors.log_normalizer, priors.new_entity_rate)


def _positions(model):
    """``0 ('ik'), 1 ('kj')``: the factor positions of ``model``, for messages."""
    return ", ".join(f"{a} ({f!r})" for a, f in enumerate(model.factors))


def _by_position(value, model, name):
    """``value`` (a prior hyper-parameter) checked: a dict's keys must be
    positions of ``model``'s factors (returned as ``{int: value}``), and no
    value, in a dict or not, may be a string (``prior_rate="auto"`` is the
    estimator's to turn into learned rates: as the whole value, not per
    factor)."""
    if not isinstance(value, dict):
        _check_not_text(value, name, name)
        return value
    by_position = {}
    for key, entry in value.items():
        if (isinstance(key, bool) or not isinstance(key, Integral)
                or not 0 <= key < model.n_factors):
            raise ValueError(
                f"{name} key {key!r} names no factor of {model.string!r}: its keys are factor "
                f"positions, here {_positions(model)}.")
        _check_not_text(entry, f"{name}[{key!r}]", name)
        by_position[int(key)] = entry
    return by_position


def _check_not_text(value, where, name):
    if not isinstance(value, str):
        return
    if value == "auto" and name == "prior_rate":
        raise ValueError(
            f"{where}='auto': 'auto' is accepted only as the whole value of prior_rate "
            "(prior_rate='auto' learns the rate of every factor that carries no ARD index); "
            "a dict's values must be numbers or arrays.")
    raise ValueError(f"{where}={value!r}: {name} must be a number, an array or a dict "
                     "{factor position: number or array}.")


def _per_factor(value, alpha, model, name):
    if isinstance(value, dict):
        if alpha not in value:
            raise ValueError(f"{name} has no entry for factor {alpha} ({model.factors[alpha]!r}); "
                             f"the model's factors: {_positions(model)}.")
        value = value[alpha]
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} for factor {alpha} ({model.factors[alpha]!r}) is not a "
                         f"number or an array of numbers: {value!r}.") from None
    target = model.factor_shape(alpha)
    try:
        array = np.broadcast_to(array, target)
    except ValueError:
        raise ValueError(
            f"{name} of shape {array.shape} does not broadcast to factor {alpha} "
            f"({model.factors[alpha]!r}) of shape {target}."
        ) from None
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError(f"{name} must be finite and > 0 for factor {alpha}.")
    # A contiguous copy (not a view of the user's array or a broadcast): the
    # compiled kernels read it flat, and the fit never aliases the user's data.
    return np.array(array, order="C", copy=True)


def data_scale(model, contractor, factors, free):
    """The common value s of the free factors that makes the mean of X̂ over the
    observed entries equal the mean observed value (plus one pseudo-count, so
    all-zero data still give a positive scale)."""
    ones = [np.ones(model.factor_shape(a)) if a in free else f for a, f in enumerate(factors)]
    data = contractor.data
    mean_model = contractor.masked_total(ones) / data.n_observed
    mean_data = (data.total + 1.0) / data.n_observed
    if mean_model <= 0:  # fixed factors zero wherever observed: the data say nothing of s
        return 1.0
    return (mean_data / mean_model) ** (1.0 / max(len(free), 1))


def initial_factors(rng, model, contractor, given, free, start=None):
    """Free factors to start from; ``given`` ({position: array}) as they are.

    Free factors in ``start`` ({position: array}) start there; the others are
    ``s * Gamma(1, 1)`` draws (exponential: broad enough to break the
    symmetry between components), ``s`` the scale (:func:`data_scale`) with
    the started factors held."""
    start = dict(start or {})
    factors = [given.get(a, start.get(a)) for a in range(model.n_factors)]
    drawn = [a for a in free if a not in start]
    if drawn:
        scale = data_scale(model, contractor, factors, drawn)
        for alpha in drawn:
            factors[alpha] = scale * rng.standard_gamma(1.0, size=model.factor_shape(alpha))
    # Array-API data: the values drawn (or given) on the host go where the data live.
    on_device = getattr(contractor, "on_device", None)
    return factors if on_device is None else [None if f is None else on_device(f) for f in factors]
