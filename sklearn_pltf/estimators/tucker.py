"""TuckerVB: Poisson–Gamma Tucker factorization of N-way count tensors."""

from numbers import Integral

from sklearn.utils._param_validation import Interval

from ..engine.model import tucker_model
from ..inference._inference_data import mode_factor_names
from ._named import NamedPoissonPLTF, fill_doc
from ._tensor_export import TuckerResultMixin


@fill_doc
class TuckerVB(TuckerResultMixin, NamedPoissonPLTF):
    """Bayesian Poisson Tucker factorization of N-way count tensors.

    ``X(i, j, k) ~ Poisson(Σ_pqr A_ip B_jq C_kr G_pqr)`` with Gamma priors on
    the factor matrices and the core, fitted by variational Bayes (model string
    ``"aA,bB,cC,ABC->abc"`` for 3-way data). Axis 0 is the sample axis.

    Parameters
    ----------
    n_components : int or tuple of int, default=2
        The core's size: one rank for every mode, or one per mode.
%(shared_parameters)s
%(ard_parameters)s
%(start_parameters)s
%(online_parameters)s

    Attributes
    ----------
    core_ : ndarray
        Posterior mean of the core tensor.
%(shared_attributes)s
%(ard_attributes)s
%(online_attributes)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf import TuckerVB
    >>> X = np.random.default_rng(0).poisson(2.0, size=(20, 6, 5))
    >>> TuckerVB(n_components=(2, 3, 2), random_state=0).fit(X).core_.shape
    (2, 3, 2)
    """

    _parameter_constraints: dict = {
        **NamedPoissonPLTF._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left"), tuple, list],
    }

    def _model_spec(self, ndim):
        spec, sizes = tucker_model(ndim, self.n_components)
        return spec, sizes, {}

    def _default_factor_names(self):
        return mode_factor_names(self.model_) + ["G"]

    @property
    def core_(self):
        """ndarray: the posterior mean of the core tensor (``factors_[-1]``)."""
        return self.factors_[-1]
