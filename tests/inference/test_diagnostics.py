"""Sampler fits say when their chains have not mixed."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_pltf import BayesianNMF, GibbsNTF
from sklearn_pltf.inference._diagnostics import RHAT_LIMIT, split_rhat


def test_split_rhat_of_agreeing_and_disagreeing_chains(rng):
    agreeing = rng.normal(size=(4, 1000))
    assert abs(split_rhat(agreeing) - 1.0) < 0.01
    shifted = agreeing + np.array([[0.0], [0.0], [0.0], [2.0]])
    assert split_rhat(shifted) > 1.2
    trending = np.linspace(0.0, 3.0, 1000)[None] + rng.normal(size=(1, 1000))
    assert split_rhat(trending) > 1.2  # one chain: its halves disagree
    assert np.isnan(split_rhat(agreeing[:, :3]))


def _counts(seed=0):
    rng = np.random.default_rng(seed)
    return rng.poisson(rng.gamma(1.0, 3.0, (30, 3)) @ rng.gamma(1.0, 1.0, (3, 20))).astype(float)


def test_unmixed_gibbs_chains_warn_and_mixed_ones_do_not():
    X = _counts()
    with pytest.warns(ConvergenceWarning, match="R-hat.*n_warmup"):
        est = BayesianNMF(3, method="gibbs", evidence=None, n_init=2, n_warmup=0, n_draws=6,
                          random_state=0).fit(X)
    assert est.rhat_ > RHAT_LIMIT
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = BayesianNMF(1, method="gibbs", evidence=None, n_init=2, n_warmup=100,
                          n_draws=400, random_state=0).fit(X)
    assert est.rhat_ < RHAT_LIMIT


def test_gibbs_ntf_warns_while_its_chain_still_climbs():
    # No warm-up on a rank-3 20 x 15 x 10 tensor: the first sweeps climb
    # from the random start (measured R-hat 1.6-2.1 over six seeds).
    rng = np.random.default_rng(0)
    factors = [rng.standard_exponential((n, 3)) for n in (20, 15, 10)]
    X = np.einsum("ir,jr,kr->ijk", *factors) + rng.normal(0.0, 0.3, (20, 15, 10))
    with pytest.warns(ConvergenceWarning, match="R-hat"):
        est = GibbsNTF(3, evidence=None, n_warmup=0, n_draws=6, random_state=0).fit(X)
    assert est.rhat_ > RHAT_LIMIT


# --- n_warmup="auto": the warm-up doubles until the chains mix ---------------

def _trending_run(settle, n_draws=400, seed=0):
    """A ``run(n_warmup)`` for ``warm_up_until_mixed`` whose one chain climbs
    for ``settle`` sweeps and then stays level; it records the warm-ups asked."""
    asked = []
    noise = np.random.default_rng(seed).normal(size=20_000)

    def run(n_warmup):
        asked.append(n_warmup)
        t = np.arange(n_warmup + n_draws)
        trace = np.minimum(t, settle) / 10.0 + noise[:t.size]
        return "result", trace[None]

    return run, asked


def test_warm_up_doubles_until_split_rhat_passes():
    from sklearn_pltf.inference._diagnostics import warm_up_until_mixed

    run, asked = _trending_run(settle=900)
    result, n_warmup, rhat = warm_up_until_mixed(run, 250, 1000)
    assert asked == [250, 500, 1000] and n_warmup == 1000 and result == "result"
    assert rhat <= RHAT_LIMIT


def test_warm_up_stops_at_its_budget_and_a_set_warm_up_runs_once():
    from sklearn_pltf.inference._diagnostics import warm_up_until_mixed

    run, asked = _trending_run(settle=10_000)
    _, n_warmup, rhat = warm_up_until_mixed(run, 250, 1000)
    assert asked == [250, 500, 1000] and n_warmup == 1000 and rhat > RHAT_LIMIT
    run, asked = _trending_run(settle=10_000)
    _, n_warmup, _ = warm_up_until_mixed(run, 250, 250)
    assert asked == [250] and n_warmup == 250


def test_chain_lengths_are_exact_when_set_and_budgeted_when_auto():
    from sklearn_pltf.inference._diagnostics import DRAWS_BUDGET, WARMUP_BUDGET, chain_lengths

    assert chain_lengths(7, 11, 500, 2000) == (7, 7, 11, 11)
    assert chain_lengths("auto", "auto", 500, 2000) == (500, WARMUP_BUDGET * 500, 2000,
                                                        DRAWS_BUDGET * 2000)


@pytest.mark.parametrize("method", ["gibbs", "sada"])
def test_auto_warm_up_equals_the_set_warm_up_it_chose(monkeypatch, method):
    """With tiny defaults (2 warm-up sweeps, 30 draws) the warm-up of a rank-3
    fit must grow; the chains rerun from the same seeds, so the fit equals
    one with that warm-up set, number for number, and a second fit with the
    same seed gives the same numbers."""
    from sklearn_pltf.estimators import _sampled

    monkeypatch.setattr(_sampled, "DEFAULT_N_WARMUP", 2)
    monkeypatch.setattr(_sampled, "DEFAULT_N_DRAWS", 30)
    X = _counts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = BayesianNMF(3, method=method, evidence=None, n_init=2, random_state=0).fit(X)
        again = BayesianNMF(3, method=method, evidence=None, n_init=2, random_state=0).fit(X)
        assert auto.n_warmup_ > 2 and auto.n_warmup_ <= 8
        set_ = BayesianNMF(3, method=method, evidence=None, n_init=2, n_warmup=auto.n_warmup_,
                           n_draws=30, random_state=0).fit(X)
    assert auto.get_params()["n_warmup"] == "auto"
    assert auto.log_likelihoods_.shape == (2, auto.n_warmup_ + 30)
    assert auto.draws_[0].shape[:2] == (2, 30)
    for other in (again, set_):
        np.testing.assert_array_equal(auto.log_likelihoods_, other.log_likelihoods_)
        for a, b in zip(auto.factors_, other.factors_):
            np.testing.assert_array_equal(a, b)
    assert auto.rhat_ == set_.rhat_


def test_set_chain_lengths_are_used_exactly():
    X = _counts()
    with pytest.warns(ConvergenceWarning):
        est = BayesianNMF(3, method="gibbs", evidence=None, n_init=2, n_warmup=3, n_draws=9,
                          random_state=0).fit(X)
    assert est.n_warmup_ == 3 and est.log_likelihoods_.shape == (2, 12) and est.n_iter_ == 12


def test_gibbs_ntf_auto_warm_up_grows_while_its_chain_climbs(monkeypatch):
    """The same rank-3 tensor as above: from a default of 2 warm-up sweeps
    the warm-up grows, and the fit equals one with that warm-up set."""
    from sklearn_pltf.estimators import _gaussian_base

    monkeypatch.setattr(_gaussian_base, "DEFAULT_N_WARMUP", 2)
    monkeypatch.setattr(_gaussian_base, "DEFAULT_N_DRAWS", 20)
    rng = np.random.default_rng(0)
    factors = [rng.standard_exponential((n, 3)) for n in (20, 15, 10)]
    X = np.einsum("ir,jr,kr->ijk", *factors) + rng.normal(0.0, 0.3, (20, 15, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = GibbsNTF(3, evidence=None, random_state=0).fit(X)
        set_ = GibbsNTF(3, evidence=None, n_warmup=auto.n_warmup_, n_draws=20,
                        random_state=0).fit(X)
    assert 2 < auto.n_warmup_ <= 8
    np.testing.assert_array_equal(auto.log_likelihoods_, set_.log_likelihoods_)
    np.testing.assert_array_equal(auto.factors_[0], set_.factors_[0])


def test_chibs_evidence_is_made_once_from_the_chains_kept(monkeypatch):
    """With ``n_warmup="auto"`` the chains may run several times, but Chib's
    clamped runs (far longer) run once, from the chains kept: the evidence
    equals that of a fit with the chosen warm-up set, number for number."""
    from sklearn_pltf.estimators import _sampled
    from sklearn_pltf.evidence import _chib

    monkeypatch.setattr(_sampled, "DEFAULT_N_WARMUP", 2)
    monkeypatch.setattr(_sampled, "DEFAULT_N_DRAWS", 30)
    calls = []
    original = _chib.chib_log_evidence
    monkeypatch.setattr("sklearn_pltf.evidence._posterior.chib_log_evidence",
                        lambda *args, **kwargs: (calls.append(kwargs), original(*args, **kwargs))[1])
    X = _counts()[:8, :6]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = BayesianNMF(2, method="gibbs", evidence="chib", n_init=2, random_state=0).fit(X)
        assert auto.n_warmup_ > 2 and len(calls) == 1
        assert calls[0]["n_warmup"] == auto.n_warmup_ and calls[0]["max_draws"] == 120
        set_ = BayesianNMF(2, method="gibbs", evidence="chib", n_init=2, n_warmup=auto.n_warmup_,
                           random_state=0).fit(X)
    assert auto.log_evidence_ == set_.log_evidence_
    assert auto.log_evidence_error_ == set_.log_evidence_error_
