"""The Bayesian Allocation Model with missing entries: the exact evidence of
the observed entries against an independent quadrature, SMC and VB against
it (CP and Tucker), the posterior predictive at a missing entry against its
exact posterior mean, and AllocationSMC's contract with masks."""

import numpy as np
import pytest
import sparse
from scipy.integrate import quad
from scipy.special import betaln, gammaln
from sklearn.exceptions import ConvergenceWarning

from sklearn_pltf import AllocationSMC
from sklearn_pltf.evidence import bam_exact_log_evidence
from sklearn_pltf.inference import allocation
from sklearn_pltf.model_selection import EntryKFold, cross_validate_entries

CUBE = np.array([[[2, 0], [1, 1]], [[0, 3], [1, 0]]], dtype=float)
CUBE_MASK = np.ones(CUBE.shape, dtype=bool)
CUBE_MASK[1, 1, 1] = False
MATRIX = np.array([[2, 0, 1], [0, 1, 0]], dtype=float)
MATRIX_MASK = np.ones(MATRIX.shape, dtype=bool)
MATRIX_MASK[0, 1] = False


def _vector_evidence_by_quadrature(x, observed, a, b):
    """log p(x_O) for the one-mode, one-component BAM, θ ~ Dir(a / I) over the
    I cells, written without the enumeration: given θ,
    p(x_O | θ) = b^a Γ(a + T) / (Γ(a) Π x!) Π θ_c^{x_c} (b + θ_O)^{-(a + T)};
    the observed cells' shares given θ_O are Dirichlet, so the integral over θ
    is Dirichlet-multinomial terms times a Beta integral over θ_O, here by
    quadrature."""
    x_obs = x[observed]
    alpha = np.full(x.size, a / x.size)
    alpha_obs, alpha_missing = alpha[observed].sum(), alpha[~observed].sum()
    T = x_obs.sum()
    shares = (gammaln(alpha[observed] + x_obs) - gammaln(alpha[observed])).sum() \
        - (gammaln(alpha_obs + T) - gammaln(alpha_obs))
    constant = a * np.log(b) + gammaln(a + T) - gammaln(a) - gammaln(x_obs + 1.0).sum()

    def integrand(t):
        return np.exp((alpha_obs + T - 1) * np.log(t) + (alpha_missing - 1) * np.log1p(-t)
                      - (a + T) * np.log(b + t) - betaln(alpha_obs, alpha_missing))

    value, _ = quad(integrand, 0.0, 1.0, epsabs=0.0, epsrel=1e-12, limit=200)
    return constant + shares + np.log(value)


@pytest.mark.parametrize("rate", [0.5, 2.0])
def test_exact_evidence_of_the_observed_entries_matches_a_quadrature(rate):
    """The mask's sum over the unobserved cells' counts, each term a full
    enumeration, against the integral over θ written independently."""
    x = np.array([3, 0, 1, 2])
    observed = np.array([True, False, True, True])
    exact = bam_exact_log_evidence(x, 1, mask=observed, concentration=2.0, rate=rate)
    reference = _vector_evidence_by_quadrature(x, observed, 2.0, rate)
    assert exact == pytest.approx(reference, abs=1e-8)
    # The missing cell's count changes nothing; ignoring the mask does.
    assert bam_exact_log_evidence(np.array([3, 7, 1, 2]), 1, mask=observed, concentration=2.0,
                                  rate=rate) == pytest.approx(exact, abs=1e-12)
    assert abs(bam_exact_log_evidence(x, 1, concentration=2.0, rate=rate) - exact) > 0.1
    # A mask with nothing missing is the plain evidence.
    assert bam_exact_log_evidence(x, 1, mask=np.ones(4, dtype=bool), concentration=2.0,
                                  rate=rate) == bam_exact_log_evidence(x, 1, concentration=2.0,
                                                                       rate=rate)


def _exact_smc_and_vb(X, mask, sizes, model, rate):
    """The exact evidence of the observed entries, and SMC (20,000
    particles) and VB fits to them."""
    exact = bam_exact_log_evidence(X, sizes, mask=mask, rate=rate, model=model)
    smc = AllocationSMC(sizes, model=model, n_particles=20_000, n_moves=20, prior_rate=rate,
                        random_state=0).fit(X, mask=mask)
    vb = AllocationSMC(sizes, model=model, method="vb", prior_rate=rate,
                       random_state=0).fit(X, mask=mask)
    return exact, smc, vb


def _bound_never_decreases(vb):
    return np.all(np.diff(vb.lower_bounds_) >= -1e-9 * np.abs(vb.lower_bounds_[1:]))


def test_cp_smc_with_a_missing_entry_matches_exact_and_vb_lies_below():
    exact, smc, vb = _exact_smc_and_vb(CUBE, CUBE_MASK, 2, None, 1.0)
    # 0.05 nats is at least 5 of the estimate's own standard errors.
    assert smc.log_evidence_error_ < 0.01
    assert abs(smc.log_evidence_ - exact) < 0.05
    assert vb.log_evidence_ <= exact + 1e-9
    assert _bound_never_decreases(vb)
    assert abs(exact - bam_exact_log_evidence(CUBE, 2, rate=1.0)) > 0.3  # the mask matters


@pytest.mark.parametrize("sizes", [
    {"p": 2, "q": 1},
    pytest.param(2, marks=pytest.mark.slow(minutes=0.2)),
])
def test_tucker_smc_with_a_missing_entry_matches_exact_and_vb_lies_below(sizes):
    exact, smc, vb = _exact_smc_and_vb(MATRIX, MATRIX_MASK, sizes, "ip,jq,pq->ij", 2.0)
    assert smc.log_evidence_error_ < 0.01
    assert abs(smc.log_evidence_ - exact) < 0.05
    assert vb.log_evidence_ <= exact + 1e-9
    assert _bound_never_decreases(vb)


def test_predict_entries_gives_the_exact_posterior_mean_of_a_missing_count():
    """E[X(c) | X_O] from the exact evidence of each filling of the missing
    cell, against the SMC's particles (20,000 particles, which measured
    1.4% away; the check allows 5%)."""
    cell = (1, 1, 1)
    log_p = []
    for m in range(40):
        filled = CUBE.copy()
        filled[cell] = m
        log_p.append(bam_exact_log_evidence(filled, 2, rate=1.0))
    log_p = np.array(log_p)
    assert log_p[-1] < log_p.max() - 30  # the tail left out is negligible
    weights = np.exp(log_p - log_p.max())
    expected = float((weights * np.arange(40)).sum() / weights.sum())
    smc = AllocationSMC(2, n_particles=20_000, n_moves=20, prior_rate=1.0,
                        random_state=0).fit(CUBE, mask=CUBE_MASK)
    predicted = smc.predict_entries([cell, (0, 0, 0)])
    assert predicted[0] == pytest.approx(expected, rel=0.05)
    assert predicted[1] > 0


def test_nan_mask_and_sparse_mask_give_the_same_fit():
    nan_data = np.where(CUBE_MASK, CUBE, np.nan)
    params = dict(n_particles=500, n_moves=10, prior_rate=1.0, random_state=0)
    by_nan = AllocationSMC(2, **params).fit(nan_data)
    by_mask = AllocationSMC(2, **params).fit(CUBE, mask=CUBE_MASK)
    sparse_mask = sparse.COO(np.array([[1], [1], [1]]), np.array([False]), shape=CUBE.shape,
                             fill_value=True)
    by_sparse = AllocationSMC(2, **params).fit(sparse.COO.from_numpy(CUBE), mask=sparse_mask)
    assert by_nan.log_evidence_ == by_mask.log_evidence_ == by_sparse.log_evidence_
    assert by_mask.score(CUBE, mask=CUBE_MASK) == by_mask.log_evidence_
    np.testing.assert_allclose(by_nan.predict_entries([(1, 1, 1)]),
                               by_sparse.predict_entries([(1, 1, 1)]))


def test_fold_in_leaves_missing_entries_out():
    """A sample's row from its observed entries: hiding entries the model
    predicts well barely moves its rates W, while treating them as observed
    zeros pulls them down; transform's rows sum to the observed totals."""
    X = np.random.default_rng(0).poisson(3.0, size=(6, 5, 4)).astype(float)
    est = AllocationSMC(2, n_particles=500, n_moves=20, random_state=0).fit(X)
    hidden = X.copy()
    hidden[0, :3] = np.nan
    W = est.transform(hidden)
    np.testing.assert_allclose(W.sum(axis=1), np.nansum(hidden, axis=(1, 2)))
    np.testing.assert_allclose(W[1:], est.transform(X)[1:])
    assert np.isfinite(est.score(hidden[:2]))

    def rates(data, missing=None):
        coords = np.array(np.nonzero(np.nan_to_num(data)))
        return allocation.fold_in(coords, data[tuple(coords)], data.shape[0], est.factors_,
                                  est.model_, missing=missing)[0][0]

    full = rates(X)
    left_out = rates(np.nan_to_num(hidden), missing=np.array(np.nonzero(np.isnan(hidden))))
    as_zeros = rates(np.nan_to_num(hidden))
    assert as_zeros.sum() < 0.8 * full.sum()  # 3 of 5 rows' counts read as zeros
    assert abs(left_out.sum() - full.sum()) < 0.15 * full.sum()


def test_cross_validate_entries_runs_with_allocation_smc():
    X = np.random.default_rng(0).poisson(0.8, size=(6, 5, 4)).astype(float)
    for method in ("smc", "vb"):
        est = AllocationSMC(2, method=method, n_particles=200, n_moves=10, random_state=0)
        scores = cross_validate_entries(est, X, cv=EntryKFold(3, random_state=0))
        assert scores["test_pr_auc"].shape == (3,)
        assert np.all((scores["test_roc_auc"] > 0.0) & (scores["test_roc_auc"] < 1.0))


def test_a_missing_slice_warns_that_the_evidence_is_a_lower_estimate():
    """Nothing observed in slice 0: its share of the tokens is left to the
    prior, and under λ's vague default prior (rate a / 63) the terms of the
    sum over them fall by about 1/63 nats per token, so the cap stops it
    with much of it still to come."""
    X = np.random.default_rng(1).poisson(5.0, size=(3, 3, 2)).astype(float)
    X[0] = np.nan
    with pytest.warns(ConvergenceWarning, match="lower estimate"):
        AllocationSMC(1, n_particles=20, n_islands=2, n_moves=0, random_state=0).fit(X)



def test_smc_places_tokens_in_missing_entries_at_a_concentration_near_the_smallest_floats():
    """At concentration=1e-300 the unobserved cells' terms underflow as
    products (the kernel raised SystemError), so they are summed from logs;
    the evidence of the observed entries still matches the exact one."""
    exact = bam_exact_log_evidence(MATRIX, 2, mask=MATRIX_MASK, rate=1.0, concentration=1e-300)
    smc = AllocationSMC(2, n_particles=20_000, n_islands=20, n_moves=20, prior_rate=1.0,
                        concentration=1e-300, random_state=0).fit(MATRIX, mask=MATRIX_MASK)
    assert exact < -2000 and smc.log_evidence_error_ < 0.01
    assert abs(smc.log_evidence_ - exact) < 0.05
