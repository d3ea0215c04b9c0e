"""Bayesian matrix and tensor factorization as scikit-learn estimators."""

# First: the thread settings that OpenMP and OpenBLAS read when they load.
from .engine import _threads  # noqa: F401  isort: skip
from .estimators import (
    PLTF,
    AllocationSMC,
    BayesianNMF,
    BayesianRESCAL,
    CoupledPLTF,
    GaussianPLTF,
    GibbsNTF,
    PoissonCP,
    ProbitRESCAL,
    TuckerVB,
)
from .engine._likelihood import CompoundPoisson
from .engine.model import Model

__all__ = ["PLTF", "BayesianNMF", "PoissonCP", "TuckerVB", "GibbsNTF", "GaussianPLTF", "AllocationSMC",
           "BayesianRESCAL", "ProbitRESCAL", "CoupledPLTF", "CompoundPoisson", "Model"]
__version__ = "0.1.0.dev0"
