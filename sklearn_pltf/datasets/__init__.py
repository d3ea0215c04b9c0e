"""Shipped relational tensors and synthetic data from every model.

- :func:`load_nations`, :func:`load_kinships`, :func:`load_umls`: binary entity x entity x
  relation tensors for link prediction; :func:`off_diagonal_mask` leaves out
  their (empty) self-relations; :func:`load_kinships_attributes`: Kinships
  with each person's attributes, for coupled factorization.
- ``make_*``: data drawn from the package's models, with the parameters that
  generated them (Poisson NMF, CP and Tucker, any PLTF model string, Gaussian
  non-negative CP, the Bayesian Allocation Model); :func:`make_dask_poisson_cp`
  draws a large sparse CP tensor chunk by chunk as a Dask array.
"""

from ._dask import make_dask_poisson_cp
from ._generators import (
    make_bam,
    make_gaussian_ntf,
    make_pltf,
    make_poisson_cp,
    make_poisson_nmf,
    make_poisson_tucker,
)
from ._relational import (load_kinships, load_kinships_attributes, load_nations, load_umls,
                          off_diagonal_mask)

__all__ = [
    "load_nations", "load_kinships", "load_umls", "load_kinships_attributes", "off_diagonal_mask",
    "make_pltf", "make_poisson_nmf", "make_poisson_cp",
    "make_poisson_tucker", "make_gaussian_ntf", "make_bam", "make_dask_poisson_cp",
]
