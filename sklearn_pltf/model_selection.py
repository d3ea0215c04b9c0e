"""Cross-validation splitters for choosing a factorization by its evidence."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _num_samples

__all__ = ["FullDataSplit"]


class FullDataSplit:
    """A single split that trains and tests on every sample.

    With it, ``GridSearchCV(estimator, {"n_components": [...]}, cv=FullDataSplit())``
    fits each candidate to all the data and scores it on the same data, where
    the estimators' ``score`` is the log evidence ``log_evidence_``: the grid
    search then chooses the rank by the evidence (Bayesian model selection),
    with no data held out. A K-fold splitter instead chooses by the predictive
    evidence of held-out samples.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_pltf import BayesianNMF
    >>> from sklearn_pltf.model_selection import FullDataSplit
    >>> X = np.random.default_rng(0).poisson(2.0, size=(30, 8))
    >>> search = GridSearchCV(BayesianNMF(random_state=0), {"n_components": [1, 2]},
    ...                       cv=FullDataSplit()).fit(X)
    >>> search.best_params_["n_components"] in (1, 2)
    True
    """

    def split(self, X, y=None, groups=None):
        """Yield ``(train, test)``: both are every sample's index."""
        indices = np.arange(_num_samples(X))
        yield indices, indices

    def get_n_splits(self, X=None, y=None, groups=None):
        """Always 1."""
        return 1

    def __repr__(self):
        return "FullDataSplit()"
