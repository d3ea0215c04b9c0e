"""BayesianNMF: Poisson–Gamma matrix factorization (model ``"ik,kj->ij"``)."""

from ._named import NamedPoissonPLTF, fill_doc


@fill_doc
class BayesianNMF(NamedPoissonPLTF):
    """Bayesian non-negative matrix factorization of count data.

    ``X ≈ W H`` with ``X_ij ~ Poisson(Σ_k W_ik H_kj)`` and Gamma priors on
    ``W`` and ``H`` (Cemgil 2009), fitted by variational Bayes. ``score``
    returns the log evidence, so :class:`~sklearn.model_selection.GridSearchCV`
    over ``n_components`` with
    :class:`~sklearn_pltf.model_selection.FullDataSplit` chooses the rank.

    Parameters
    ----------
    n_components : int, default=2
        The rank ``K``.
%(shared_parameters)s
%(ard_parameters)s
%(start_parameters)s
%(online_parameters)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Posterior mean of ``H``, as in :class:`sklearn.decomposition.NMF`.
%(shared_attributes)s
%(ard_attributes)s
%(online_attributes)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf import BayesianNMF
    >>> X = np.random.default_rng(0).poisson(2.0, size=(30, 8))
    >>> W = BayesianNMF(n_components=2, random_state=0).fit_transform(X)
    >>> W.shape
    (30, 2)
    """

    def _model_spec(self, ndim):
        return "ik,kj->ij", self.n_components, {}

    def _accepts_tensors(self):
        return False

    def _default_factor_names(self):
        return ["W", "H"]

    @property
    def components_(self):
        """ndarray of shape (n_components, n_features): the posterior mean
        of ``H`` (``factors_[1]``), as :class:`sklearn.decomposition.NMF`'s
        ``components_``."""
        return self.factors_[1]
