"""PoissonCP: Poisson–Gamma CP (PARAFAC) factorization of N-way count tensors."""

from ..engine.model import cp_model_string
from ..inference._inference_data import mode_factor_names
from ._named import NamedPoissonPLTF, fill_doc
from ._tensor_export import CPResultMixin


@fill_doc
class PoissonCP(CPResultMixin, NamedPoissonPLTF):
    """Bayesian Poisson CP (PARAFAC) factorization of N-way count tensors.

    ``X(i, j, k, ...) ~ Poisson(Σ_r A_ir B_jr C_kr ...)`` with Gamma priors on
    every factor matrix, fitted by variational Bayes (the model string is
    ``"az,bz,cz->abc"`` for 3-way data, and so on). Axis 0 is the sample axis:
    :meth:`transform` returns the posterior mean of its factor.

    Parameters
    ----------
    n_components : int, default=2
        The CP rank.
%(shared_parameters)s
%(ard_parameters)s
%(start_parameters)s
%(online_parameters)s

    Attributes
    ----------
%(cp_attributes)s
%(shared_attributes)s
%(ard_attributes)s
%(online_attributes)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf import PoissonCP
    >>> X = np.random.default_rng(0).poisson(2.0, size=(20, 6, 5))
    >>> PoissonCP(n_components=2, random_state=0).fit(X).factors_[2].shape
    (5, 2)
    """

    def _model_spec(self, ndim):
        return cp_model_string(ndim), self.n_components, {}

    def _default_factor_names(self):
        return mode_factor_names(self.model_)
