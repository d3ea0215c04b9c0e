"""AllocationSMC: the Bayesian Allocation Model for count tensors, its
evidence by sequential Monte Carlo over the tokens (or a variational bound)."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine._contract import EntryList
from ..engine._kernels import TINY
from ..engine._likelihood import PoissonLikelihood
from ..evidence._checks import check_poisson_log_evidence
from ..inference import allocation
from ..inference._methods import FamilyMethods
from ..engine._contract import full_xhat
from ..engine.model import cp_model_string
from ._one_tensor import with_n_samples
from ..engine._factor_checks import check_entry_indices
from ._validation import validate_tensor
from ..inference._inference_data import (export_inference_data, factor_names_of,
                                         mode_factor_names)
from ._skeleton import BaseFactorization
from ._tensor_export import CPResultMixin, with_cp_attributes

__all__ = ["AllocationSMC"]

# The SMC's sum over the missing entries' counts, stopped at its cap, is
# worth a warning when the rest of it may exceed e^-10 of it.
_TAIL_WARNING = 10.0


@with_cp_attributes
class AllocationSMC(CPResultMixin, BaseFactorization):
    """Bayesian Allocation Model for count tensors, with an unbiased
    evidence estimate whose cost follows the total count.

    The model of Cemgil, Kurutmaz, Yıldırım, Barsbey & Şimşekli ("Bayesian
    Allocation Model: marginal likelihood-based model selection for count
    tensors", IEEE JSTSP 2020): ``T ~ Poisson(λ)`` tokens, ``λ ~ Gamma(a,
    b)``, and each token draws its indices from a Bayesian network of
    Dirichlet tables. In the default CP topology each token picks a
    component ``r ~ θ0`` and then an index in every mode, ``i_n ~ θn(r,
    :)``, with ``θ0 ~ Dirichlet(a/R, ...)`` and ``θn(r, :) ~ Dirichlet(a/(R
    I_n), ...)``: Poisson CP with the scales tied to one intensity λ, so
    ``E[X] = λ Σ_r θ0(r) Π_n θn(r, i_n)``. Other topologies are written as
    model strings (``model="ip,jq,kr,pqr->ijk"`` is Tucker: a core
    ``θ(p, q, r)`` and ``θ1(i | p)``, ``θ2(j | q)``, ``θ3(k | r)``).

    With the parameters integrated out the tokens form a Pólya urn, and
    ``method="smc"`` estimates ``p(X)`` by sequential importance sampling
    over the tokens (urn proposal, adaptive resampling, Gibbs moves over the
    placed tokens after each resampling): unbiased, with a cost of
    ``T x n_particles x H x F`` (H latent configurations, F tables; CP: R
    and N + 1) that does not grow with the size of the tensor — the
    evidence estimator for sparse, small-count data, where a variational
    bound misjudges the rank. ``method="vb"`` gives the mean-field bound
    instead, at ``nnz x H x F`` per iteration, for dense data with large
    counts.

    Entries may be missing (NaN, or ``mask=``): the tokens then lie in the
    observed cells only, and the evidence is that of the observed entries,
    p(X_O), with the unobserved cells' counts summed out (SMC places tokens
    in them after the observed ones, one at a time, until the sum over their
    number has converged; VB gives them expected counts). Their posterior
    predictive means are :meth:`predict_entries`, for link prediction. Counts
    must be whole numbers. Axis 0 is the sample axis.

    Parameters
    ----------
    n_components : int or dict, default=2
        The size of every latent index (R in CP), or ``{index: size}`` for
        each latent index of ``model``.
    model : str or None, default=None
        The topology as a model string; None is CP over the data's axes.
        Each factor is a Dirichlet table whose children are its observed
        indices and whose parents are its latent ones; a factor holding only
        latent indices (a Tucker core) is a joint Dirichlet over them, and
        the latent indices in no such factor share one implicit root table
        (CP's ``θ0``), folded into the first factor that holds them all. A
        string qualifies when each observed index lies in exactly one factor
        and no two latent-only factors share an index (``"ip,jq,kr,pqr->ijk"``
        and ``"ip,pq,jq->ij"`` do; ``"ir,jr,ijr->ij"`` and
        ``"ip,pq,qr,jr->ij"`` do not); others raise ``ValueError`` at fit.
    dirichlet_prior : list or None, default=None
        One entry per factor of ``model``: an array of the factor's shape
        (indices in its written order) holding its table's Dirichlet
        parameters, each table ``θ(children | parents)`` drawn from the
        Dirichlet over the children with the parents' slice; or None for
        the shorthand. The shorthand (and the implicit root's prior) is
        ``concentration / Π (sizes of the factor's indices)``, the BDeu
        prior: every table's parameters are marginals of one uniform
        Dirichlet of total ``concentration`` over all indices. Write the
        implicit root as a factor (``"ir,jr,kr,r->ijk"``) to give its prior.
    method : {"smc", "vb"}, default="smc"
        Sequential Monte Carlo over the tokens, or variational Bayes. SMC
        places at most 2^31 - 1 tokens (the sum of the counts) and refuses
        more; VB takes any total of counts up to 2^62 each. VB's bound is
        exact to rounding (relative 1e-13, or 1e-6 nats where it is
        small) for counts up to 2^62; above 2^36 tokens in all it sums the
        zero cells one by one, and refuses data with more of them than
        non-zero cells and 2^22.
    n_particles : int, default=1000
        SMC particles in all (a multiple of ``n_islands``). Time and memory
        (``n_particles`` x every table's counts, CP: ``R x Σ I_n``) grow in
        proportion. A ``log_evidence_error_`` near 1 says one island
        dominates, and more particles or moves are needed for a reliable
        value (the user guide shows how the estimate moves with both).
    n_moves : int, default=250
        Resample-move: after each resampling, every particle of the island
        makes this many Gibbs moves, each redrawing the configuration of one
        already placed token (chosen at random) from its exact conditional.
        The moves keep the estimate unbiased and cut its variance; they need
        each particle's allocation of every token, ``4 x n_particles x T``
        bytes. 0 turns them off.
    n_islands : int, default=10
        The particles run as this many independent systems of equal size;
        the spread of their estimates is ``log_evidence_error_``.
    concentration : float, default=1.0
        The total concentration ``a``: λ's Gamma shape and, unless
        ``dirichlet_prior`` says otherwise, the total of every table's
        Dirichlet parameters. Small values favour few, sparse components.
        Every table's parameters (``concentration`` over its number of
        cells) must be at least 2.2e-308, the smallest normal float64, so
        the smallest value a fit takes is 2.2e-308 times the largest table's
        number of cells (the fit's ``ValueError`` gives it).
    prior_rate : float or None, default=None
        λ's Gamma rate ``b``; None sets ``a / T``, which puts λ's prior mean
        at the observed total.
    resample_threshold : float, default=0.5
        Resample an island when its effective sample size falls below this
        fraction of its particles.
    max_iter : int, default=500
        VB: maximum coordinate-ascent sweeps.
    tol : float, default=0.1
        VB: stop once the bound is estimated to be within ``tol`` nats of
        its limit, from how its gains shrink over the last 24 sweeps: the
        rule of every VB and EM fit of the package
        (:func:`~sklearn_pltf.inference._convergence.run_to_convergence`;
        user guide, "When a fit has converged"); 0 runs until the bound
        repeats exactly or ``max_iter``. (Until this release ``tol`` was a
        relative change of the bound, default 1e-8.)
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
        The model string bound to the data's shape (CP: ``"az,bz,cz->abc"``).
    factors_ : tuple of ndarray
        Posterior means of the tables, one per factor in its index order,
        so that the model string reconstructs ``E[X]``. In CP
        ``factors_[0]`` (I_1, R) holds λθ0(r)θ1(r, i) and ``factors_[n]``
        (I_n, R) holds θn(r, i) (columns sum to one), so that X̂ = Σ_r
        factors_[0][i_1, r] Π_n factors_[n][i_n, r]. In general each factor
        holds ``E[θ(children | parents)]``, and the one carrying the
        implicit root (else the last root, e.g. a Tucker core) also holds
        ``E[λ]`` and the root's ``E[θ0]``. With SMC each particle's latent
        labels are matched to the heaviest particle's before averaging.
        ``weights_``, ``normalized_factors_`` and ``to_tensorly`` exist for
        the CP topology only.
    log_evidence_ : float
        log p(X): the SMC estimate (the log of an unbiased estimate of p(X)),
        or the VB lower bound.
    log_evidence_error_ : float
        SMC only: its standard error, from the islands' spread.
    n_resampled_ : int
        SMC only: resampling events, summed over the islands.
    lower_bounds_ : ndarray
        VB only: the bound of the first q(θ), after every sweep, then that
        of the final q(θ), one sweep further (never decreasing).
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
        "n_components": [Interval(Integral, 1, None, closed="left"), dict],
        "model": [str, None],
        "dirichlet_prior": [list, tuple, None],
        "method": [StrOptions(FamilyMethods("allocation"))],
        "n_particles": [Interval(Integral, 1, None, closed="left")],
        "n_moves": [Interval(Integral, 0, None, closed="left")],
        "n_islands": [Interval(Integral, 1, None, closed="left")],
        "concentration": [Interval(Real, 0, None, closed="neither")],
        "prior_rate": [Interval(Real, 0, None, closed="neither"), None],
        "resample_threshold": [Interval(Real, 0, 1, closed="both")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, n_components=2, *, model=None, dirichlet_prior=None, method="smc",
                 n_particles=1000, n_moves=250, n_islands=10, concentration=1.0, prior_rate=None,
                 resample_threshold=0.5, max_iter=500, tol=0.1, random_state=None, verbose=0):
        self.n_components = n_components
        self.model = model
        self.dirichlet_prior = dirichlet_prior
        self.method = method
        self.n_particles = n_particles
        self.n_moves = n_moves
        self.n_islands = n_islands
        self.concentration = concentration
        self.prior_rate = prior_rate
        self.resample_threshold = resample_threshold
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def _observed(self, X, mask, reset):
        """``X`` checked for the allocation model: whole counts."""
        data = validate_tensor(self, X, mask, reset=reset)
        data.require_integer("AllocationSMC",
                             remedy="use a Poisson estimator such as PoissonCP")
        return data

    def fit(self, X, y=None, mask=None):
        """Estimate the evidence and the posterior means of the factors.

        Parameters
        ----------
        X : ndarray, pydata sparse array or scipy.sparse matrix
            Non-negative integer counts with at least 2 dimensions; NaN
            marks a missing entry of dense data.
        y : None
            Ignored.
        mask : array-like of bool or pydata sparse array, default=None
            True where observed; missing entries are left out of the
            evidence, their counts summed out.

        Returns
        -------
        self : object
        """
        return super().fit(X, y, mask)

    def _fit_data(self, observed, rng):
        coords, counts = _nonzero_cells(observed)
        data = allocation.allocation_data(
            coords, counts, observed.shape, self._latent_sizes(), self.concentration,
            self.prior_rate, model=self._model_string(observed.ndim),
            dirichlet_prior=self.dirichlet_prior, missing=observed.missing_entries)
        network, fitted = data.network, {}
        if self.method == "smc":
            allocation.require_smc_tokens(data, "AllocationSMC(method='smc')")
            # Per token: its cells (int64 coordinates), its segment offsets
            # (int64 per table) and, for the moves, every particle's allocation.
            observed.require_tokens_in_memory(
                "AllocationSMC(method='smc')",
                bytes_per_token=(8 * (observed.ndim + 1) + 16 * len(network.tables)
                                 + (4 * self.n_particles if self.n_moves else 0)),
                remedy=("Use fewer particles, n_moves=0, " if self.n_moves else "Use ")
                + "method='vb', or scale the counts down.")
            result = allocation.run_smc(rng, data, n_particles=self.n_particles,
                                        n_islands=self.n_islands,
                                        resample_threshold=self.resample_threshold,
                                        n_moves=self.n_moves, verbose=self.verbose)
            fitted.update(log_evidence_=result.log_evidence,
                          log_evidence_error_=result.standard_error,
                          n_resampled_=result.n_resampled, n_iter_=data.total)
            if result.missing_gap < _TAIL_WARNING:
                warnings.warn(
                    f"The SMC's sum over the missing entries' counts stopped at its cap of "
                    f"{result.n_missing_placed} tokens "
                    + (f"with the rest of it about {result.missing_gap:.3g} nats below the sum"
                       if np.isfinite(result.missing_gap) else "with its terms still rising")
                    + ": the data leave the missing entries' share of the counts weakly "
                    "identified (e.g. a whole slice or block is missing) under λ's vague "
                    "prior, and log_evidence_ is a lower estimate. Give λ an informative "
                    "prior (prior_rate), or observe some entries of every slice.",
                    ConvergenceWarning)
            summary = allocation.resample_particles(rng, result, network)
            total = allocation.total_posterior(data, summary.n_missing)
            factors = allocation.particle_factor_means(summary, network, total)
        else:
            result = allocation.run_vb(rng, data, max_iter=self.max_iter, tol=self.tol,
                                       verbose=self.verbose)
            fitted.update(log_evidence_=result.lower_bound, lower_bounds_=result.lower_bounds,
                          converged_=result.converged, n_iter_=result.lower_bounds.size - 1)
            summary = result.state
            total = allocation.vb_total_posterior(result.state, data)
            factors = allocation.vb_factor_means(result.state, data.network, total)
        check_poisson_log_evidence(
            fitted["log_evidence_"], observed,
            standard_error=result.standard_error if self.method == "smc" else 0.0,
            advice=("Use more particles (n_particles)." if self.method == "smc" else
                    "A variational bound cannot lie above log p(X): please report this."))
        fitted.update(model_=network.model, factors_=tuple(factors))
        # What to_inference_data draws from: the resampled particles, or q.
        fitted["_posterior"] = (network, summary, total)
        # Seeds to_inference_data's draws: its own stream, spawned last.
        fitted["_export_seed"] = int(rng.spawn(1)[0].integers(2**63))
        return fitted

    def _model_string(self, ndim):
        return cp_model_string(ndim) if self.model is None else self.model

    def _latent_sizes(self):
        if self.model is None and isinstance(self.n_components, dict):
            raise ValueError("n_components is a dict only with a model string; CP takes an int.")
        return self.n_components

    def _is_cp(self):
        """Whether the fitted model is CP: one latent index, and factor n
        holding axis n and it."""
        model = self.model_
        return (len(model.latent) == 1 and len(model.factors) == len(model.output)
                and all(len(f) == 2 and model.latent in f and axis in f
                        for f, axis in zip(model.factors, model.output)))

    def _cp_only(self, name):
        check_is_fitted(self)
        if not self._is_cp():
            raise AttributeError(f"{name} is defined for the CP topology only.")

    @property
    def weights_(self):
        self._cp_only("weights_")
        return CPResultMixin.weights_.fget(self)

    @property
    def normalized_factors_(self):
        self._cp_only("normalized_factors_")
        return CPResultMixin.normalized_factors_.fget(self)

    def to_tensorly(self):
        """The fitted CP factors as a TensorLy ``CPTensor`` (CP topology only)."""
        self._cp_only("to_tensorly")
        return super().to_tensorly()

    def transform(self, X, mask=None):
        """Per-sample weights: the expected number of each sample's tokens in
        its observed entries in each configuration of the sample factor's
        latent indices (CP: each component), every other factor held at its
        posterior mean (:func:`~sklearn_pltf.inference.allocation.fold_in`);
        missing entries are left out.

        Returns
        -------
        W : ndarray of shape (n_samples, n_configurations)
            Each row sums to the sample's total count.
        """
        return super().transform(X, mask)

    def _fold_in(self, observed):
        self._check_sample_shape(observed)
        self._sample_factor()
        coords, counts = _nonzero_cells(observed)
        W, normaliser = allocation.fold_in(coords, counts, observed.shape[0], self.factors_,
                                           self.model_, missing=observed.missing_entries)
        return coords, counts, W, normaliser

    def _transform_data(self, observed):
        _, _, W, normaliser = self._fold_in(observed)
        return W * normaliser

    def inverse_transform(self, X):
        """X̂ (dense) from per-sample weights ``X`` (what :meth:`transform`
        returns), every other factor at its posterior mean."""
        check_is_fitted(self)
        self._sample_factor()
        normaliser = allocation.sample_normaliser(self.factors_, self.model_)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != normaliser.size:
            raise ValueError(f"Expected an array of shape (n_samples, {normaliser.size}), "
                             f"got {X.shape}.")
        return full_xhat(*self._with_sample_rows(X / normaliser))

    def _with_sample_rows(self, W):
        """The model and factors with the sample factor's rows set to ``W``."""
        model = with_n_samples(self.model_, W.shape[0])
        alpha = model.sample_factor()
        rows = allocation.as_sample_factor(W, model)
        return model, [rows if a == alpha else f for a, f in enumerate(self.factors_)]

    def score(self, X, y=None, mask=None):
        """``log_evidence_`` when ``X`` is the training data; for new samples,
        their Poisson log-likelihood with their rows folded in
        (:meth:`transform`) and every other factor at its posterior mean, a
        plug-in predictive score."""
        return super().score(X, y, mask)

    def _predictive_score(self, observed):
        coords, counts, W, normaliser = self._fold_in(observed)
        model, factors = self._with_sample_rows(W)
        xhat = np.maximum(EntryList(model, coords).xhat(factors), np.finfo(np.float64).tiny)
        # Σ over every cell of X̂ is Σ_s W(i, s) ν(s).
        return float(counts @ np.log(xhat) - (W * normaliser).sum() - gammaln(counts + 1.0).sum())

    def to_inference_data(self, X=None, *, mask=None, factor_names=None):
        """Posterior draws of the factors as an ArviZ ``InferenceData``
        (``diagnostics`` extra); given the training data, with
        ``observed_data`` and the pointwise ``log_likelihood`` for ``az.loo``
        and ``az.waic``.

        - ``method="smc"``: one draw per particle resampled at fit (1000,
          or ``n_particles`` if fewer; equally weighted, labels matched),
          the tables drawn from their exact posterior given that particle's
          allocation: λ from its Gamma and every table's rows from their
          Dirichlets, combined as ``factors_`` combines the means.
        - ``method="vb"``: 1000 draws from q.

        The draws are seeded at fit: the same fitted estimator exports the
        same numbers. They form one chain of independent draws, so R-hat
        and trace plots say nothing here.

        Parameters
        ----------
        X : array-like, pydata sparse or scipy.sparse, default=None
            The training data: adds ``observed_data`` and ``log_likelihood``
            (variable ``x``: log Poisson(x_e | E[X_e]) of every entry at every
            draw, dimension ``entry``; ``constant_data.entry_index`` gives
            each entry's coordinates).
        mask : array-like of bool, default=None
            The training mask, with ``X``.
        factor_names : sequence of str or dict, default=None
            A variable name per factor, or ``{position: name}`` for some;
            default ``A``, ``B``, ``C``, ... for CP (``A`` carries λ θ0, so
            X̂ = Σ_r A(i, r) B(j, r) C(k, r)), ``Z<position>_<indices>``
            otherwise.

        Returns
        -------
        idata : arviz.InferenceData
        """
        check_is_fitted(self)
        network, summary, total = self._posterior
        if self.method == "smc":
            parameters = allocation.particle_dirichlet_parameters(summary, network)
            repeats = summary.multiplicity
        else:
            parameters, repeats = allocation.vb_tables(summary, network), [1000]
        shape, rate = total
        shape = np.repeat(np.broadcast_to(shape, len(repeats)), repeats)
        rng = np.random.default_rng(self._export_seed)
        draws = allocation.draw_factors(
            rng, [np.repeat(p, repeats, axis=0) for p in parameters], network, (shape, rate))
        model = self.model_
        return export_inference_data(
            model, tuple(d[None] for d in draws),
            factor_names_of(model, factor_names, self._default_factor_names()), sample_stats=None,
            coords=self._index_coords(),
            data=None if X is None else self._training_data(X, mask),
            factors_at=lambda chain, draw: [d[draw] for d in draws],
            entry_log_likelihood=lambda x, xhat, chain, draw: (
                PoissonLikelihood.entry_log_likelihood(x, np.maximum(xhat, TINY))))

    def predict_entries(self, indices):
        """Posterior predictive mean E[X(e) | X] at the given entries (for
        link prediction; missing entries of the training data included).

        - ``method="smc"``: per particle resampled at fit, E[λ] times the
          urn's predictive probability of the cell, exact given the
          particle's allocation, averaged over the particles (no label
          matching is involved).
        - ``method="vb"``: the model string at ``factors_`` (q's means, λ at
          its posterior mean given them).

        Parameters
        ----------
        indices : array-like of int, shape (n_entries, n_dims)
            One row of coordinates per entry of the fitted data tensor.

        Returns
        -------
        prediction : ndarray of shape (n_entries,)
        """
        check_is_fitted(self)
        coords = check_entry_indices(indices, self.model_.observed_shape).T
        network, summary, total = self._posterior
        if self.method == "smc":
            return allocation.particle_predictive_means(summary, network, total, coords)
        return EntryList(self.model_, coords).xhat(list(self.factors_))

    def _default_factor_names(self):
        return mode_factor_names(self.model_) if self._is_cp() else super()._default_factor_names()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags


def _nonzero_cells(observed):
    """The non-zero cells of a fully observed tensor: coordinates (N x nnz) and counts."""
    return observed.nonzero_entries
