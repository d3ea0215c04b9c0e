"""The allocation family: the Bayesian Allocation Model (Cemgil, Yıldırım
et al.). Its sequential Monte Carlo over token allocations (:mod:`.smc`,
with the urn kernels of :mod:`._urn_kernels`, missing cells in
:mod:`._missing`, any model string's urn network in :mod:`._network`) and its
variational Bayes (:mod:`.vb`)."""

from . import smc, vb
from .smc import *  # noqa: F401,F403  (the family's names, one namespace)
from .vb import *  # noqa: F401,F403

__all__ = [*smc.__all__, *vb.__all__]
