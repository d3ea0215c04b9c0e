"""scikit-learn estimators on the PLTF engine."""

from .pltf import PLTF

__all__ = ["PLTF"]
