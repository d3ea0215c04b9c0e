"""The one random generator of a fit, from a scikit-learn ``random_state``."""

from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = ["as_generator"]


def as_generator(random_state):
    """One :class:`numpy.random.Generator` from a scikit-learn ``random_state``.

    ``None`` gives fresh entropy, an int a seeded generator, a ``Generator``
    is used as it is, and a legacy ``RandomState`` seeds a new generator from
    its stream (advancing it, as scikit-learn estimators do).
    """
    if random_state is None or isinstance(random_state, (Integral, np.integer)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    raise ValueError(f"random_state must be None, an int or a numpy generator, got {random_state!r}.")
