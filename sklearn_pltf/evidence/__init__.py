"""Estimators of the log evidence log p(X) of a Poisson–Gamma PLTF model.

- :func:`exact_log_evidence`: exact, by enumerating allocations, for tiny NMF
  problems (a reference for tests);
- :func:`bernoulli_exact_log_evidence`: exact, by inclusion–exclusion and
  quadrature, for tiny binary matrices under Bernoulli–Poisson NMF;
- :func:`bam_exact_log_evidence`: exact, by enumerating allocations, for tiny
  count tensors under the Bayesian Allocation Model (``AllocationSMC``);
- :func:`chib_log_evidence`: Chib's estimate from block Gibbs runs, for any
  model string;
- :func:`sti_log_evidence`: stochastic thermodynamic integration from
  minibatch SGLD over power posteriors, for data too large for Chib;
- :func:`ais_log_evidence`: annealed importance sampling over power
  posteriors with Metropolis-adjusted Langevin moves, for dense data (a
  stochastic lower bound), and :func:`reverse_ais_log_evidence`, the same
  ladder walked down from an exact posterior sample (a stochastic upper
  bound): together, for data simulated from the model, they sandwich the
  evidence (bidirectional Monte Carlo);
  :func:`gaussian_ais_log_evidence`, AIS for Gaussian non-negative PARAFAC
  (``GibbsNTF``), and :func:`gaussian_reverse_ais_log_evidence`, its upper
  bound from an exact posterior sample.

The variational bound, the other estimate, comes with every VB fit
(``log_evidence_`` of an estimator fitted with ``method="vb"``).
"""

from ._ais import AISEstimate, ais_log_evidence, reverse_ais_log_evidence
from ._bam_exact import bam_exact_log_evidence
from ._bernoulli_exact import bernoulli_exact_log_evidence
from ._chib import ChibEstimate, chib_log_evidence
from ._exact import exact_log_evidence
from ._gaussian_ais import gaussian_ais_log_evidence, gaussian_reverse_ais_log_evidence
from ._sti import STIEstimate, sti_log_evidence, temperature_ladder

__all__ = [
    "exact_log_evidence", "bernoulli_exact_log_evidence", "chib_log_evidence", "ChibEstimate", "sti_log_evidence", "STIEstimate",
    "temperature_ladder", "bam_exact_log_evidence", "ais_log_evidence", "AISEstimate",
    "reverse_ais_log_evidence", "gaussian_ais_log_evidence", "gaussian_reverse_ais_log_evidence",
]
