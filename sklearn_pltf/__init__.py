"""Bayesian matrix and tensor factorization as scikit-learn estimators."""

from .estimators import PLTF
from .model import Model

__all__ = ["PLTF", "Model"]
__version__ = "0.1.0.dev0"
