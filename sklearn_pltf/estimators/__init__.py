"""scikit-learn estimators on the PLTF engine."""

from .allocation import AllocationSMC
from .coupled import CoupledPLTF
from .cp import PoissonCP
from .gaussian_ntf import GibbsNTF
from .nmf import BayesianNMF
from .pltf import PLTF
from .rescal import BayesianRESCAL
from .tucker import TuckerVB

__all__ = ["PLTF", "BayesianNMF", "PoissonCP", "TuckerVB", "GibbsNTF", "AllocationSMC",
           "BayesianRESCAL", "CoupledPLTF"]
