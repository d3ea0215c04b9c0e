"""scikit-learn estimators on the PLTF engine."""

from .allocation import AllocationSMC
from .coupled import CoupledPLTF
from .cp import PoissonCP
from .gaussian_ntf import GibbsNTF
from .gaussian_pltf import GaussianPLTF
from .nmf import BayesianNMF
from .pltf import PLTF
from .probit_rescal import ProbitRESCAL
from .rescal import BayesianRESCAL
from .tucker import TuckerVB
# The one check of a rank's size, for the tools that take ranks (the command line).
from ._validation import MAX_RANK, check_ranks

__all__ = ["PLTF", "BayesianNMF", "PoissonCP", "TuckerVB", "GibbsNTF", "GaussianPLTF",
           "AllocationSMC", "BayesianRESCAL", "ProbitRESCAL", "CoupledPLTF"]
