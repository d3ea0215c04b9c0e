"""AllocationSMC: the Bayesian Allocation Model for count tensors, its
evidence by sequential Monte Carlo over the tokens (or a variational bound)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._contract import EntryList
from .._kernels import TINY
from .._likelihood import PoissonLikelihood
from ..evidence._checks import check_poisson_log_evidence
from ..inference import allocation
from ..model import Model, cp_model_string
from ._base import cp_reconstruction, validate_tensor, with_n_samples
from ._inference_data import export_inference_data, factor_names_of, mode_factor_names
from ._skeleton import BaseFactorization
from ._tensor_export import CPResultMixin, with_cp_attributes

__all__ = ["AllocationSMC"]


@with_cp_attributes
class AllocationSMC(CPResultMixin, BaseFactorization):
    """Bayesian Allocation Model (CP topology) for count tensors, with an
    unbiased evidence estimate whose cost follows the total count.

    The model of Cemgil, Kurutmaz, Yıldırım, Barsbey & Şimşekli ("Bayesian
    Allocation Model: marginal likelihood-based model selection for count
    tensors", IEEE JSTSP 2020): ``T ~ Poisson(λ)`` tokens, ``λ ~ Gamma(a,
    b)``; each token picks a component ``r ~ θ0`` and then an index in every
    mode, ``i_n ~ θn(r, :)``, with ``θ0 ~ Dirichlet(a/R, ...)`` and
    ``θn(r, :) ~ Dirichlet(a/(R I_n), ...)``. It is Poisson CP with the
    scales tied to one intensity λ, so ``E[X] = λ Σ_r θ0(r) Π_n θn(r, i_n)``.

    With the parameters integrated out the tokens form a Pólya urn, and
    ``method="smc"`` estimates ``p(X)`` by sequential importance sampling
    over the tokens (urn proposal, adaptive resampling): unbiased, with a
    cost of ``T x n_particles x R x N`` that does not grow with the size of
    the tensor — the evidence estimator for sparse, small-count data, where
    a variational bound misjudges the rank. ``method="vb"`` gives the
    mean-field bound instead, at ``nnz x R x N`` per iteration, for dense
    data with large counts.

    Every entry is observed (there is no missing-data mask); counts must be
    whole numbers. Axis 0 is the sample axis.

    Parameters
    ----------
    n_components : int, default=2
        The number of components R.
    method : {"smc", "vb"}, default="smc"
        Sequential Monte Carlo over the tokens, or variational Bayes.
    n_particles : int, default=10_000
        SMC particles in all (a multiple of ``n_islands``). Time and memory
        (``n_particles x R x Σ I_n`` counts) grow in proportion. A
        ``log_evidence_error_`` near 1 says one island dominates, and more
        particles are needed for a reliable value (the user guide shows how
        the estimate moves with the particles).
    n_islands : int, default=10
        The particles run as this many independent systems of equal size;
        the spread of their estimates is ``log_evidence_error_``.
    concentration : float, default=1.0
        The total concentration ``a``: λ's Gamma shape and the total of every
        Dirichlet parameter. Small values favour few, sparse components.
    prior_rate : float or None, default=None
        λ's Gamma rate ``b``; None sets ``a / T``, which puts λ's prior mean
        at the observed total.
    resample_threshold : float, default=0.5
        Resample an island when its effective sample size falls below this
        fraction of its particles.
    max_iter : int, default=500
        VB: maximum coordinate-ascent sweeps.
    tol : float, default=1e-8
        VB: stop when the bound's relative change is below ``tol``.
    random_state : int, Generator or None, default=None
        Seeds the token order, the allocations and the resampling (SMC) or
        the initial responsibilities (VB).
    verbose : int, default=0
        1 prints progress lines (tokens placed by SMC, or VB's iterations)
        with the time left, at most every 10 seconds.

    Attributes
    ----------
%(cp_attributes)s
    model_ : Model
        The CP model string bound to the data's shape, e.g. ``"az,bz,cz->abc"``.
    factors_ : tuple of ndarray
        Posterior means: ``factors_[0]`` (I_1, R) holds λθ0(r)θ1(r, i),
        ``factors_[n]`` (I_n, R) holds θn(r, i) (columns sum to one), so that
        X̂ = Σ_r factors_[0][i_1, r] Π_n factors_[n][i_n, r]. With SMC the
        particles' component labels are matched to the heaviest particle's
        before averaging.
    log_evidence_ : float
        log p(X): the SMC estimate (the log of an unbiased estimate of p(X)),
        or the VB lower bound.
    log_evidence_error_ : float
        SMC only: its standard error, from the islands' spread.
    n_resampled_ : int
        SMC only: resampling events, summed over the islands.
    lower_bounds_ : ndarray
        VB only: the bound after every sweep (never decreasing).
    converged_ : bool
        VB only: whether ``tol`` was reached within ``max_iter``.
    n_iter_ : int
        Tokens allocated (SMC) or sweeps run (VB).
    n_features_in_ : int
        Size of axis 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pltf import AllocationSMC
    >>> X = np.random.default_rng(0).poisson(0.5, size=(6, 5, 4))
    >>> est = AllocationSMC(2, random_state=0).fit(X)
    >>> est.factors_[1].sum(axis=0)
    array([1., 1.])
    """

    _stale_attributes = ("log_evidence_error_", "n_resampled_", "lower_bounds_", "converged_")

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "method": [StrOptions({"smc", "vb"})],
        "n_particles": [Interval(Integral, 1, None, closed="left")],
        "n_islands": [Interval(Integral, 1, None, closed="left")],
        "concentration": [Interval(Real, 0, None, closed="neither")],
        "prior_rate": [Interval(Real, 0, None, closed="neither"), None],
        "resample_threshold": [Interval(Real, 0, 1, closed="both")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, n_components=2, *, method="smc", n_particles=10_000, n_islands=10,
                 concentration=1.0, prior_rate=None, resample_threshold=0.5, max_iter=500,
                 tol=1e-8, random_state=None, verbose=0):
        self.n_components = n_components
        self.method = method
        self.n_particles = n_particles
        self.n_islands = n_islands
        self.concentration = concentration
        self.prior_rate = prior_rate
        self.resample_threshold = resample_threshold
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def _observed(self, X, mask, reset):
        """``X`` checked for the allocation model: whole counts, every entry observed."""
        data = validate_tensor(self, X, mask, reset=reset)
        if data.n_missing:
            raise ValueError(
                "AllocationSMC needs every entry observed; X has "
                f"{data.n_missing} missing entries."
            )
        data.require_integer("AllocationSMC",
                             remedy="use a Poisson estimator such as PoissonCP")
        return data

    def fit(self, X, y=None, mask=None):
        """Estimate the evidence and the posterior means of the factors.

        Parameters
        ----------
        X : ndarray, pydata sparse array or scipy.sparse matrix
            Non-negative integer counts with at least 2 dimensions.
        y : None
            Ignored.
        mask : None
            Every entry must be observed; a mask with a missing entry is an
            error.

        Returns
        -------
        self : object
        """
        return super().fit(X, y, mask)

    def _fit_data(self, observed, rng):
        coords, counts = _nonzero_cells(observed)
        data = allocation.allocation_data(coords, counts, observed.shape, self.n_components,
                                          self.concentration, self.prior_rate)
        self.model_ = Model.parse(cp_model_string(observed.ndim)).bind(
            observed.shape, {"z": self.n_components})
        if self.method == "smc":
            # The tokens' cells, listed in a random order, as int64 coordinates.
            observed.require_tokens_in_memory(
                "AllocationSMC(method='smc')", bytes_per_token=8 * (observed.ndim + 1),
                remedy="Use method='vb', or scale the counts down.")
            result = allocation.run_smc(rng, data, n_particles=self.n_particles,
                                        n_islands=self.n_islands,
                                        resample_threshold=self.resample_threshold,
                                        verbose=self.verbose)
            self.log_evidence_ = result.log_evidence
            self.log_evidence_error_ = result.standard_error
            self.n_resampled_ = result.n_resampled
            self.n_iter_ = data.total
            sample = allocation.resample_particles(rng, result)
            factors = allocation.particle_factor_means(sample, data)
            self._posterior = (*allocation.particle_dirichlet_parameters(sample, data),
                               allocation.total_posterior(data))
        else:
            result = allocation.run_vb(rng, data, max_iter=self.max_iter, tol=self.tol,
                                       verbose=self.verbose)
            self.log_evidence_ = result.lower_bound
            self.lower_bounds_ = result.lower_bounds
            self.converged_ = result.converged
            self.n_iter_ = result.lower_bounds.size - 1
            factors = allocation.vb_factor_means(result.state, data)
            state = result.state
            self._posterior = (state.component[None], [m[None] for m in state.modes],
                               allocation.total_posterior(data))
        check_poisson_log_evidence(
            self.log_evidence_, observed,
            standard_error=result.standard_error if self.method == "smc" else 0.0,
            advice=("Use more particles (n_particles)." if self.method == "smc" else
                    "A variational bound cannot lie above log p(X): please report this."))
        self.factors_ = tuple(factors)
        # Seeds to_inference_data's draws: its own stream, spawned last.
        self._export_seed = int(rng.spawn(1)[0].integers(2**63))

    def transform(self, X, mask=None):
        """Per-sample component weights: the expected number of each sample's
        tokens in each component, the other modes' θn held at their
        posterior means (:func:`~sklearn_pltf.inference.allocation.fold_in`).

        Returns
        -------
        W : ndarray of shape (n_samples, n_components)
            Each row sums to the sample's total count.
        """
        return super().transform(X, mask)

    def _transform_data(self, observed):
        self._check_sample_shape(observed)
        coords, counts = _nonzero_cells(observed)
        return allocation.fold_in(coords, counts, observed.shape[0], self.factors_)

    def inverse_transform(self, X):
        """X̂ (dense) from per-sample component weights ``X`` (n_samples,
        n_components), the other modes' θn at their posterior means."""
        return cp_reconstruction(self, X)

    def score(self, X, y=None, mask=None):
        """``log_evidence_`` when ``X`` is the training data; for new samples,
        their Poisson log-likelihood with the weights folded in
        (:meth:`transform`) and θn at the posterior means, a plug-in
        predictive score."""
        return super().score(X, y, mask)

    def _predictive_score(self, observed):
        coords, counts = _nonzero_cells(observed)
        W = allocation.fold_in(coords, counts, observed.shape[0], self.factors_)
        xhat = EntryList(with_n_samples(self.model_, W.shape[0]), coords).xhat([W, *self.factors_[1:]])
        xhat = np.maximum(xhat, np.finfo(np.float64).tiny)
        # Σ over every cell of X̂ is Σ W, the θn summing to one.
        return float(counts @ np.log(xhat) - W.sum() - gammaln(counts + 1.0).sum())

    def to_inference_data(self, X=None, *, mask=None, factor_names=None):
        """Posterior draws of the factors as an ArviZ ``InferenceData``
        (``diagnostics`` extra); given the training data, with
        ``observed_data`` and the pointwise ``log_likelihood`` for ``az.loo``
        and ``az.waic``.

        - ``method="smc"``: one draw per particle resampled at fit (1000,
          or ``n_particles`` if fewer; equally weighted, labels matched), the factors drawn from their
          exact posterior given that particle's allocation: λ from its Gamma,
          θ0 and each θn(r, :) from their Dirichlets.
        - ``method="vb"``: 1000 draws from q.

        The draws are seeded at fit: the same fitted estimator exports the
        same numbers. They form one chain of independent draws, so R-hat
        and trace plots say nothing here.

        Parameters
        ----------
        X : array-like, pydata sparse or scipy.sparse, default=None
            The training data: adds ``observed_data`` and ``log_likelihood``
            (variable ``x``: log Poisson(x_e | λ p(e)) of every entry at every
            draw, dimension ``entry``; ``constant_data.entry_index`` gives
            each entry's coordinates).
        mask : None
            AllocationSMC fits fully observed data only.
        factor_names : sequence of str or dict, default=None
            A variable name per factor, or ``{position: name}`` for some;
            default ``A``, ``B``, ``C``, ... (one per mode; ``A`` carries
            λ θ0, so X̂ = Σ_r A(i, r) B(j, r) C(k, r)).

        Returns
        -------
        idata : arviz.InferenceData
        """
        check_is_fitted(self)
        component, modes, total = self._posterior
        n_draws = max(1000 if self.method == "vb" else 1, component.shape[0])
        rng = np.random.default_rng(self._export_seed)
        draws = allocation.draw_factors(
            rng, np.broadcast_to(component, (n_draws,) + component.shape[1:]),
            [np.broadcast_to(m, (n_draws,) + m.shape[1:]) for m in modes], total)
        model = self.model_
        return export_inference_data(
            model, tuple(d[None] for d in draws),
            factor_names_of(model, factor_names, self._default_factor_names()), sample_stats=None,
            coords=self._index_coords(),
            data=None if X is None else self._training_data(X, mask),
            factors_at=lambda chain, draw: [d[draw] for d in draws],
            entry_log_likelihood=lambda x, xhat, chain, draw: (
                PoissonLikelihood.entry_log_likelihood(x, np.maximum(xhat, TINY))))

    def _default_factor_names(self):
        return mode_factor_names(self.model_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags


def _nonzero_cells(observed):
    """The non-zero cells of a fully observed tensor: coordinates (N x nnz) and counts."""
    return observed.nonzero_entries
