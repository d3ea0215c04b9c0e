"""The Bayesian Allocation Model beyond CP: model strings read as Bayesian
networks of Dirichlet tables, their exact evidence against independent
references, SMC and VB against it, array priors, and AllocationSMC's
contract on a Tucker topology."""

import pickle

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from sklearn.base import clone

from sklearn_pltf import AllocationSMC
from sklearn_pltf.evidence import bam_exact_log_evidence
from sklearn_pltf.inference import allocation

TINY = np.array([[3, 0, 1], [0, 2, 0], [1, 0, 1], [0, 1, 0]])
CUBE = np.array([[[2, 0], [1, 0]], [[0, 1], [0, 1]]])
TUCKER = "ip,jq,kr,pqr->ijk"


@pytest.mark.parametrize("model", ["ir,jr->ij", "jr,ir->ij", "ir,jr,r->ij"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_cp_written_as_a_string_has_the_cp_formulas_evidence(model, rank):
    """The network's enumeration (tables in the urn's layout) against the CP
    formula written independently: with the BDeu prior, writing θ0 as a
    factor or reordering the factors changes nothing."""
    expected = bam_exact_log_evidence(TINY, rank)
    assert bam_exact_log_evidence(TINY, rank, model=model) == pytest.approx(expected, abs=1e-10)


def test_cp_written_as_a_string_fits_the_default_model_exactly():
    default = AllocationSMC(2, n_particles=1000, random_state=0).fit(CUBE)
    written = AllocationSMC(2, model="ir,jr,kr->ijk", n_particles=1000, random_state=0).fit(CUBE)
    assert written.log_evidence_ == pytest.approx(default.log_evidence_, abs=1e-12)
    for a, b in zip(default.factors_, written.factors_):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def _prior_monte_carlo(X, priors, a, b, n_draws, rng):
    """log p(X) under Tucker-BAM by averaging the likelihood over prior
    draws, the tables drawn directly: core θ(p, q, r) ~ Dir(priors[3]) and
    θ1(i | p) ~ Dir(priors[0][:, p]) etc. With λ integrated out,
    p(X | θ) = Γ(a + T) b^a / (Γ(a) (b + 1)^(a + T)) Π_c p(c)^X(c) / X(c)!."""
    T = X.sum()
    constant = (gammaln(a + T) - gammaln(a) + a * np.log(b) - (a + T) * np.log1p(b)
                - gammaln(X + 1.0).sum())
    log_likelihoods = []
    for _ in range(n_draws // 10_000):
        core = rng.dirichlet(priors[3].ravel(), size=10_000).reshape((-1,) + priors[3].shape)
        modes = [np.stack([rng.dirichlet(alpha[:, s], size=10_000) for s in range(alpha.shape[1])],
                          axis=-1) for alpha in priors[:3]]  # (draws, I, S)
        cells = np.einsum("dip,djq,dkr,dpqr->dijk", *modes, core)
        log_likelihoods.append((X * np.log(cells)).sum(axis=(1, 2, 3)))
    log_likelihoods = np.concatenate(log_likelihoods)
    log_mean = logsumexp(log_likelihoods) - np.log(log_likelihoods.size)
    relative = np.exp(log_likelihoods - log_mean)
    return constant + log_mean, relative.std() / np.sqrt(relative.size)


def test_tucker_enumeration_matches_a_monte_carlo_integral_over_the_prior():
    """The network's semantics checked without the network's code: a
    non-uniform core prior and one non-uniform factor prior, the tables
    drawn from their Dirichlets by numpy. 200,000 draws give a standard
    error of about 0.003 nats here, the check allows 4 of them, and the
    uniform prior's evidence lies 0.2 nats away."""
    rng = np.random.default_rng(0)
    a, b = 4.0, 1.0
    sizes = {"p": 2, "q": 2, "r": 2}
    priors = [rng.uniform(0.3, 2.0, (2, 2)), np.full((2, 2), a / 4), np.full((2, 2), a / 4),
              rng.uniform(0.2, 1.0, (2, 2, 2))]
    exact = bam_exact_log_evidence(CUBE, sizes, concentration=a, rate=b, model=TUCKER,
                                   dirichlet_prior=[priors[0], None, None, priors[3]])
    estimate, error = _prior_monte_carlo(CUBE, priors, a, b, 200_000, rng)
    assert error < 0.02
    assert abs(exact - estimate) < 4 * error


@pytest.mark.parametrize("X, sizes", [
    (CUBE, 2),
    (CUBE, {"p": 2, "q": 1, "r": 3}),
    pytest.param(np.array([[[1, 0, 2], [0, 1, 0]], [[0, 2, 0], [1, 0, 0]]]), 2,
                 marks=pytest.mark.slow(minutes=0.2)),
])
def test_tucker_smc_matches_exact_enumeration_and_vb_lies_below(X, sizes):
    exact = bam_exact_log_evidence(X, sizes, model=TUCKER)
    smc = AllocationSMC(sizes, model=TUCKER, n_particles=200_000, n_islands=20,
                        random_state=0).fit(X)
    # 0.05 nats is at least 2.5 of the estimate's own standard errors.
    assert smc.log_evidence_error_ < 0.02
    assert abs(smc.log_evidence_ - exact) < 0.05
    vb = AllocationSMC(sizes, model=TUCKER, method="vb", random_state=0).fit(X)
    assert vb.log_evidence_ <= exact + 1e-9


def test_hierarchical_topology_with_array_priors_matches_exact_enumeration():
    """θ(p, q) a root over two latent indices, θ(i | p), θ(j | q), with
    arrays for two of the three tables."""
    model, sizes = "ip,pq,jq->ij", {"p": 2, "q": 2}
    prior = [np.array([[0.5, 1.0], [0.2, 0.3], [1.0, 1.0], [0.4, 0.1]]),
             np.array([[0.3, 0.1], [0.2, 0.6]]), None]
    exact = bam_exact_log_evidence(TINY, sizes, model=model, dirichlet_prior=prior)
    uniform = bam_exact_log_evidence(TINY, sizes, model=model)
    assert abs(exact - uniform) > 0.1  # the arrays matter
    smc = AllocationSMC(sizes, model=model, dirichlet_prior=prior, n_particles=200_000, n_moves=20,
                        n_islands=20, random_state=0).fit(TINY)
    assert smc.log_evidence_error_ < 0.02
    assert abs(smc.log_evidence_ - exact) < 0.05
    vb = AllocationSMC(sizes, model=model, dirichlet_prior=prior, method="vb",
                       random_state=0).fit(TINY)
    assert vb.log_evidence_ <= exact + 1e-9


def test_vb_bound_never_decreases_on_a_tucker_topology():
    X, _ = allocation.sample_bam(np.random.default_rng(0), (6, 5, 4), 2, concentration=5.0,
                                 n_tokens=150)
    est = AllocationSMC({"p": 2, "q": 3, "r": 2}, model=TUCKER, method="vb", random_state=0).fit(X)
    assert np.all(np.diff(est.lower_bounds_) >= -1e-9 * np.abs(est.lower_bounds_[1:]))
    assert est.lower_bounds_[-1] > est.lower_bounds_[0] + 1.0


@pytest.mark.parametrize("model, match", [
    ("ir,jr,ijr->ij", "observed index 'i' lies in factors"),
    ("ip,pq,qr,jr->ij", "share 'q'"),
    ("ip,jq->ij", "no factor holds all of them"),
])
def test_strings_that_are_not_such_networks_are_refused(model, match):
    with pytest.raises(ValueError, match=match):
        AllocationSMC(2, model=model).fit(TINY)
    with pytest.raises(ValueError, match=match):
        bam_exact_log_evidence(TINY, 2, model=model)


@pytest.mark.parametrize("prior, match", [
    ([np.ones((4, 2)), np.ones((3, 3))], r"dirichlet_prior\[1\] must have the shape"),
    ([np.ones((4, 2)), -np.ones((3, 2))], "positive and finite"),
    ([np.ones((4, 2))], "one entry"),
])
def test_bad_dirichlet_priors_get_a_clear_error(prior, match):
    with pytest.raises(ValueError, match=match):
        AllocationSMC(2, model="ir,jr->ij", dirichlet_prior=prior).fit(TINY)


def test_a_dict_of_sizes_needs_a_model_string():
    with pytest.raises(ValueError, match="dict only with a model string"):
        AllocationSMC({"z": 2}).fit(TINY)


def test_the_users_prior_arrays_are_neither_changed_nor_kept():
    prior = [np.full((4, 2), 0.5), None]
    kept = prior[0].copy()
    est = AllocationSMC(2, model="ir,jr->ij", dirichlet_prior=prior, n_particles=500,
                        random_state=0).fit(TINY)
    np.testing.assert_array_equal(prior[0], kept)
    before = est.to_inference_data().posterior["A"].values
    prior[0][:] = 7.0  # the fitted posterior does not see it
    np.testing.assert_array_equal(est.to_inference_data().posterior["A"].values, before)


# ------------------------------------------------------ the estimator on Tucker
@pytest.fixture(scope="module")
def counts():
    X, _ = allocation.sample_bam(np.random.default_rng(3), (10, 8, 6), 3, concentration=5.0,
                                 n_tokens=200)
    return X


@pytest.mark.parametrize("method", ["smc", "vb"])
def test_tucker_factors_transform_score_and_inverse_transform(counts, method):
    sizes = {"p": 2, "q": 3, "r": 2}
    est = AllocationSMC(sizes, model=TUCKER, method=method, n_particles=500,
                        random_state=0).fit(counts)
    assert [f.shape for f in est.factors_] == [(10, 2), (8, 3), (6, 2), (2, 3, 2)]
    # Conditional tables' columns are distributions; the core carries E[λ].
    for f in est.factors_[:3]:
        np.testing.assert_allclose(f.sum(axis=0), 1.0)
    a, T, b = est.concentration, counts.sum(), est.concentration / counts.sum()
    assert est.factors_[3].sum() == pytest.approx((a + T) / (b + 1.0))
    np.testing.assert_allclose(est.reconstruct().sum(), (a + T) / (b + 1.0))
    W = est.transform(counts)
    assert W.shape == (10, 2)
    np.testing.assert_allclose(W.sum(axis=1), counts.sum(axis=(1, 2)))
    rows = [4, 1, 7]
    np.testing.assert_allclose(est.transform(counts[rows]), W[rows], rtol=1e-9)
    xhat = est.inverse_transform(W)
    assert xhat.shape == counts.shape
    np.testing.assert_allclose(xhat.sum(axis=(1, 2)), W.sum(axis=1))
    assert est.score(counts) == est.log_evidence_
    new = counts[:4] + 1
    assert np.isfinite(est.score(new)) and est.score(new) < 0
    with pytest.raises(AttributeError, match="CP topology"):
        est.weights_


def test_tucker_fit_is_reproducible_pickles_and_clones(counts):
    est = AllocationSMC(2, model=TUCKER, n_particles=500, n_moves=25, random_state=0).fit(counts)
    again = AllocationSMC(2, model=TUCKER, n_particles=500, n_moves=25, random_state=0).fit(counts)
    assert again.log_evidence_ == est.log_evidence_
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.transform(counts), est.transform(counts))
    assert clone(est).fit(counts).log_evidence_ == est.log_evidence_


def test_tucker_inference_data_draws_reconstruct_the_posterior_mean(counts):
    est = AllocationSMC(2, model=TUCKER, n_particles=500, random_state=0).fit(counts)
    idata = est.to_inference_data(counts)
    posterior = idata.posterior
    assert list(posterior.data_vars) == ["Z0_ip", "Z1_jq", "Z2_kr", "Z3_pqr"]
    assert posterior["Z3_pqr"].shape == (1, 500, 2, 2, 2)
    # Draws from the posterior given each particle: their mean is the
    # particles' mean (500 draws; the core's total is λ's, Gamma(a + T)).
    core_draws = posterior["Z3_pqr"].values[0]
    np.testing.assert_allclose(core_draws.mean(axis=0), est.factors_[3],
                               atol=6 * core_draws.std(axis=0).max() / np.sqrt(500))
    assert idata.log_likelihood["x"].shape[:2] == (1, 500)


def test_sample_bam_draws_from_a_model_string():
    X, (T, tables) = allocation.sample_bam(np.random.default_rng(0), (5, 4, 3), 2, model=TUCKER,
                                           concentration=3.0, n_tokens=400)
    assert X.shape == (5, 4, 3) and X.sum() == 400 == T
    assert [t.shape for t in tables] == [(5, 2), (4, 2), (3, 2), (2, 2, 2)]
    for table in tables[:3]:
        np.testing.assert_allclose(table.sum(axis=0), 1.0)  # θ(i | p) sums over i
    assert tables[3].sum() == pytest.approx(1.0)  # the core is a joint
    # The cells' frequencies follow the joint the tables make (400 tokens:
    # each cell's count within 5 binomial standard deviations).
    joint = np.einsum("ip,jq,kr,pqr->ijk", *tables)
    assert np.all(np.abs(X - 400 * joint) <= 5 * np.sqrt(400 * joint * (1 - joint)) + 1)


def test_cp_attributes_follow_the_fitted_topology():
    written = AllocationSMC(2, model="ir,jr,kr->ijk", n_particles=200, random_state=0).fit(CUBE)
    assert written.weights_.shape == (2,)
    assert list(written.to_inference_data().posterior.data_vars) == ["A", "B", "C"]
    reordered = AllocationSMC(2, model="jr,ir,kr->ijk", n_particles=200, random_state=0).fit(CUBE)
    with pytest.raises(AttributeError, match="CP topology"):
        reordered.normalized_factors_
