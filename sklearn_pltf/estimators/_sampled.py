"""The sampler path of the Poisson–Gamma estimators: Gibbs, SADA or SGLD
chains (:mod:`sklearn_pltf.evidence._posterior`), their evidence, the
attributes a sampler fit sets, and the export of the kept draws."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..engine._kernels import TINY
from ..engine._likelihood import get_likelihood
from ..evidence import _posterior as _mcmc
from ..inference._diagnostics import RHAT_LIMIT, chain_lengths, sample_until_mixed, split_rhat
from ..inference._inference_data import export_inference_data, factor_names_of
from ..inference._methods import METHODS, method_names

__all__ = ["DEFAULT_N_DRAWS", "DEFAULT_N_WARMUP", "chain_settings", "export_draws", "fit_sampler",
           "warn_unless_mixed"]

#: What ``n_warmup="auto"`` and ``n_draws="auto"`` start from (Poisson–Gamma samplers).
DEFAULT_N_WARMUP, DEFAULT_N_DRAWS = 500, 2000


def warn_unless_mixed(trace, what="the log-likelihood", advice="raise n_warmup and n_draws"):
    """A ``ConvergenceWarning`` when the split R-hat of ``trace`` (n_chains,
    n_draws) exceeds :data:`RHAT_LIMIT`; returns the R-hat."""
    rhat = split_rhat(trace)
    if rhat > RHAT_LIMIT:
        warnings.warn(
            f"The chains have not mixed: split R-hat of {what} is {rhat:.3g} (above "
            f"{RHAT_LIMIT}), so the posterior means and the evidence are not yet to be "
            f"trusted; {advice}.", ConvergenceWarning, stacklevel=2)
    return rhat


def _evidence_advice(evidence, priors):
    """What to change when a sampler's evidence estimate fails its check."""
    if evidence == "sti":
        return ("Use more temperatures (n_temperatures) or more steps per temperature "
                "(steps_per_temperature), or a smaller step_size.")
    advice = "Lengthen Chib's clamped runs (n_warmup, n_draws)."
    if min(np.min(shape) for shape in priors.shape if shape is not None) < 1:
        advice += (" With prior_shape below 1 the Gamma density is infinite at 0, and Gibbs "
                   "draws of small factor elements underflow to exactly 0: raise prior_shape "
                   "to 1 or more, or estimate the evidence by STI (method='sgld').")
    return advice


def lengthen_advice(n_warmup, lengths):
    """What to raise when chains have not mixed: past what ``"auto"`` tried."""
    if n_warmup == "auto":
        return (f"n_warmup='auto' tried up to {lengths.max_warmup} warm-up sweeps; set n_warmup "
                "to more, and raise n_draws")
    return "raise n_warmup and n_draws"


def poisson_chain_lengths(chains):
    """The :class:`~sklearn_pltf.inference._diagnostics.ChainLengths` of a
    Poisson–Gamma sampler's ``n_warmup`` and ``n_draws`` (in ``chains``,
    :attr:`~._fitting.FitSettings.chains`; ``"auto"``: from
    :data:`DEFAULT_N_WARMUP` and :data:`DEFAULT_N_DRAWS`)."""
    return chain_lengths(chains["n_warmup"], chains["n_draws"], DEFAULT_N_WARMUP,
                         DEFAULT_N_DRAWS)


def chain_settings(settings, n_warmup, n_draws):
    """What every sampler's chains take from the fit's settings, at the
    lengths :func:`fit_sampler` is trying."""
    return dict(n_chains=settings.n_init, n_warmup=n_warmup, n_draws=n_draws,
                thin=settings.chains["thin"], keep_draws=settings.chains["keep_draws"],
                n_jobs=settings.n_jobs, verbose=settings.verbose)


def fit_sampler(settings, structure, data, model, priors, fixed, rng, evidence):
    """Gibbs, SADA or SGLD: ``n_init`` chains, their pooled posterior means
    (the state returned), Chib's or STI's evidence, and the fitted
    attributes of a sampler fit (returned with the state). ``structure``
    (:class:`~._one_tensor.OneTensorFit`, :class:`~._tied.TiedFit` or a
    coupled model's) gives the family, the chains (``sample_posterior``)
    and the evidence's check. With ``n_warmup="auto"`` the chains run again
    with a longer warm-up until they mix
    (:func:`~sklearn_pltf.inference._diagnostics.warm_up_until_mixed`);
    Chib's estimate is made once, from the chains kept."""
    method, family, chains = settings.method, structure.family, settings.chains
    # A sampler that draws a uniform for every token (count) in each sweep.
    if family in METHODS[method].per_token and settings.likelihood == "poisson":
        data.require_integer(f"method={method!r}")
        others = [repr(m) for m in method_names(family) if family not in METHODS[m].per_token]
        data.require_tokens_in_memory(
            f"method={method!r}", bytes_per_token=8,
            remedy=(f"Use method={', '.join(others[:-1])} or {others[-1]}, or scale the "
                    "counts down."))
    lengths = poisson_chain_lengths(chains)

    def run(n_warmup, rng):
        # SGLD's chains start where STI's ladder ends, so every attempt walks it.
        posterior = structure.sample_posterior(
            settings, data, model, priors, fixed, rng, "sti" if evidence == "sti" else None,
            chain_settings(settings, n_warmup, lengths.n_draws))
        return posterior, posterior.log_likelihoods

    posterior, n_warmup = sample_until_mixed(run, rng, lengths, verbose=settings.verbose)
    if evidence == "chib":
        posterior = posterior.with_chib(max_draws=lengths.max_draws)
    attributes = {
        "n_warmup_": n_warmup, "n_iter_": n_warmup + lengths.n_draws * chains["thin"],
        "log_likelihoods_": posterior.log_likelihoods,
        "rhat_": warn_unless_mixed(posterior.log_likelihoods[:, n_warmup:],
                                   advice=lengthen_advice(chains["n_warmup"], lengths))}
    if chains["keep_draws"]:
        attributes["draws_"] = posterior.draws
    if posterior.log_evidence is not None:
        attributes["log_evidence_"] = structure.check_log_evidence(
            posterior.log_evidence, data, standard_error=posterior.log_evidence_error or 0.0,
            advice=_evidence_advice(evidence, priors), likelihood=settings.likelihood)
    if posterior.log_evidence_error is not None:
        attributes["log_evidence_error_"] = posterior.log_evidence_error
    return posterior.state, attributes


def export_draws(estimator, X, mask, factor_names):
    """``to_inference_data`` of a :class:`~._base.BasePoissonPLTF` (its
    docstring says what it holds)."""
    est = estimator
    check_is_fitted(est)
    if not hasattr(est, "draws_"):
        raise ValueError(
            "No draws to export: fit with method='gibbs', 'sada' or 'sgld' and keep_draws=True.")
    model, draws, tied = est.model_, est.draws_, est._tied_factors
    names = factor_names_of(model, factor_names, est._default_factor_names(), tied)
    likelihood = get_likelihood(est.likelihood)

    def factors_at(chain, draw):
        own = [None if d is None else d[chain, draw] for d in draws]
        return [own[a] if own[a] is not None else own[tied[a]] if a in tied
                else est._state.mean[a] for a in range(model.n_factors)]

    return export_inference_data(
        model, tuple(None if a in tied else d for a, d in enumerate(draws)), names,
        sample_stats={"total_log_likelihood": _mcmc.kept_sweeps(
            est.log_likelihoods_, est.n_warmup_, est.thin)},
        coords=est._index_coords(),
        data=None if X is None else est._training_data(X, mask),
        modelled=est._structure(model).modelled_entries,
        factors_at=factors_at,
        entry_log_likelihood=lambda x, xhat, chain, draw: likelihood.entry_log_likelihood(
            x, np.maximum(xhat, TINY)))
