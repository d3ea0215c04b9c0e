"""Bayesian matrix and tensor factorization as scikit-learn estimators."""

from .estimators import (
    PLTF,
    AllocationSMC,
    BayesianNMF,
    BayesianRESCAL,
    CoupledPLTF,
    GibbsNTF,
    PoissonCP,
    TuckerVB,
)
from .engine._likelihood import CompoundPoisson
from .engine.model import Model

__all__ = ["PLTF", "BayesianNMF", "PoissonCP", "TuckerVB", "GibbsNTF", "AllocationSMC", "BayesianRESCAL",
           "CoupledPLTF", "CompoundPoisson", "Model"]
__version__ = "0.1.0.dev0"
