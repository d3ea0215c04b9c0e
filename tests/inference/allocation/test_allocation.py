"""The Bayesian Allocation Model: SMC and VB against exact enumeration, the
SMC estimate's unbiasedness and standard error, and AllocationSMC's contract
on count data (scikit-learn's own checks fit non-integer data, which the
estimator refuses; see tests/test_common.py)."""

import pickle
from decimal import Decimal, localcontext

import numpy as np
import pytest
import scipy.sparse
import sparse
from sklearn.base import clone

from sklearn_pltf import AllocationSMC
from sklearn_pltf.evidence import bam_exact_log_evidence
from sklearn_pltf.inference import allocation

# The tiny count matrix: 4 x 3, T = 9 tokens.
TINY = np.array([[3, 0, 1], [0, 2, 0], [1, 0, 1], [0, 1, 0]])


def _problem(X, rank, concentration=1.0, rate=None):
    coords = np.array(np.nonzero(X))
    return allocation.allocation_data(coords, X[tuple(coords)], X.shape, rank, concentration, rate)


@pytest.mark.parametrize("concentration", [
    pytest.param(0.1, marks=pytest.mark.slow(minutes=0.1)), 1.0,
    pytest.param(10.0, marks=pytest.mark.slow(minutes=0.1)),
])
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_smc_matches_exact_enumeration_and_vb_lies_below(rank, concentration):
    exact = bam_exact_log_evidence(TINY, rank, concentration=concentration)
    smc = AllocationSMC(rank, n_particles=200_000, n_islands=20, concentration=concentration,
                        random_state=0).fit(TINY)
    # 0.05 nats is at least 2.5 of the estimate's own standard errors.
    assert smc.log_evidence_error_ < 0.02
    assert abs(smc.log_evidence_ - exact) < 0.05
    vb = AllocationSMC(rank, method="vb", concentration=concentration, random_state=0).fit(TINY)
    # With one component the bound is tight and SMC exact (one allocation).
    assert vb.log_evidence_ <= exact + 1e-9
    assert vb.log_evidence_ <= smc.log_evidence_ + 1e-9


def test_smc_matches_exact_enumeration_on_a_three_way_tensor():
    X = np.array([[[2, 0], [1, 0]], [[0, 1], [0, 2]]])
    exact = bam_exact_log_evidence(X, 3, concentration=1.0)
    smc = AllocationSMC(3, n_particles=200_000, n_islands=20, random_state=1).fit(X)
    assert smc.log_evidence_error_ < 0.02
    assert abs(smc.log_evidence_ - exact) < 0.05


def test_smc_estimate_of_the_evidence_is_unbiased():
    """E[Ẑ] = p(X) whatever the particle count: 2000 runs of 20 particles,
    resampling whenever the effective sample size drops below 90% (almost
    every run resamples), their mean Ẑ / p(X) within 4 standard errors of 1."""
    data = _problem(TINY, 2, concentration=1.0)
    exact = bam_exact_log_evidence(TINY, 2, concentration=1.0)
    rng = np.random.default_rng(0)
    ratios, resampled = [], []
    for _ in range(2000):
        result = allocation.run_smc(rng, data, n_particles=20, n_islands=1, resample_threshold=0.9)
        ratios.append(np.exp(result.log_evidence - exact))
        resampled.append(result.n_resampled)
    ratios = np.array(ratios)
    assert np.mean(np.array(resampled) > 0) > 0.9
    assert ratios.std() > 0.05  # a noisy estimator: the test has power
    assert abs(ratios.mean() - 1.0) < 4 * ratios.std(ddof=1) / np.sqrt(ratios.size)


def test_smc_with_moves_is_unbiased():
    """Resample-move keeps E[Ẑ] = p(X): the test above with 5 Gibbs moves
    per particle after every resampling."""
    data = _problem(TINY, 2, concentration=1.0)
    exact = bam_exact_log_evidence(TINY, 2, concentration=1.0)
    rng = np.random.default_rng(0)
    ratios = np.array([np.exp(allocation.run_smc(rng, data, n_particles=20, n_islands=1,
                                                 resample_threshold=0.9, n_moves=5).log_evidence
                              - exact) for _ in range(2000)])
    assert ratios.std() > 0.05
    assert abs(ratios.mean() - 1.0) < 4 * ratios.std(ddof=1) / np.sqrt(ratios.size)


@pytest.mark.slow(minutes=0.05)
def test_moves_cut_the_spread_of_the_estimate():
    """Ten runs of 500 particles on 300 tokens, rank 4: without moves the
    log evidence spreads by about 3.2 nats (standard deviation), with 50
    moves per particle after each resampling by about 1.0. Each standard
    deviation of ten runs is known to about 24%, so a ratio below 0.6
    separates them."""
    X, _ = allocation.sample_bam(np.random.default_rng(0), (8, 7, 6), 3, concentration=5.0,
                                 n_tokens=300)
    data = _problem(X, 4, concentration=5.0)

    def spread(n_moves):
        return np.std([allocation.run_smc(np.random.default_rng(seed), data, n_particles=500,
                                          n_moves=n_moves).log_evidence
                       for seed in range(10)], ddof=1)

    assert spread(50) < 0.6 * spread(0)


@pytest.mark.usefixtures("kernels_in_parallel_at_any_size")
def test_moves_do_not_depend_on_the_thread_count():
    """The moves draw their uniforms from a hash of the island, token and
    particle, not from a per-thread generator."""
    import numba

    most = numba.config.NUMBA_NUM_THREADS
    if most == 1:
        pytest.skip("numba has one thread on this machine: nothing to compare")
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(most)
        reference = AllocationSMC(3, n_particles=400, n_moves=20, random_state=0).fit(TINY)
        numba.set_num_threads(1)
        single = AllocationSMC(3, n_particles=400, n_moves=20, random_state=0).fit(TINY)
    finally:
        numba.set_num_threads(previous)
    assert single.log_evidence_ == reference.log_evidence_
    for a, b in zip(single.factors_, reference.factors_):
        np.testing.assert_array_equal(a, b)


def test_smc_standard_error_matches_the_spread_of_repeated_runs():
    """The islands' standard error against 100 independent runs. Its square
    estimates the variance without bias, so its root mean square matches the
    runs' standard deviation (known to within about 7%, 1/sqrt(2 x 99); the
    reported errors' own spread adds as much again), and two of them cover
    the exact value in most runs (about 95% for a normal estimate)."""
    data = _problem(TINY, 3, concentration=0.1)
    exact = bam_exact_log_evidence(TINY, 3, concentration=0.1)
    rng = np.random.default_rng(1)
    runs = [allocation.run_smc(rng, data, n_particles=2000, n_islands=10) for _ in range(100)]
    values = np.array([r.log_evidence for r in runs])
    errors = np.array([r.standard_error for r in runs])
    assert 0.7 < np.sqrt(np.mean(errors**2)) / values.std(ddof=1) < 1.4
    assert np.mean(np.abs(values - exact) < 2 * errors) > 0.8


def test_vb_bound_never_decreases():
    X, _ = allocation.sample_bam(np.random.default_rng(0), (8, 7, 6), 3, concentration=5.0,
                                 n_tokens=300)
    est = AllocationSMC(4, method="vb", concentration=5.0, tol=0, max_iter=200,
                        random_state=0).fit(X)
    bounds = est.lower_bounds_  # one per iteration, then the final q(θ)'s
    # tol=0 stops early only where the bound repeats exactly, a fixed point in
    # floating point (whether it gets there depends on the last bits of the
    # numerics): every iteration until then is checked.
    if est.converged_:
        assert bounds.size < 201 and bounds[-2] == bounds[-3]
    else:
        assert bounds.size == 201
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert bounds[-1] > bounds[0] + 1.0


def test_recovers_the_factors_of_well_separated_components():
    """Two components on disjoint index blocks, 4000 tokens: the factor
    columns match the truth (up to order) within a few standard errors of a
    multinomial proportion, sqrt(p / 2000) <= 0.015."""
    rng = np.random.default_rng(0)
    theta = [np.zeros((2, 6)) for _ in range(3)]
    for t in theta:
        t[0, :3] = rng.dirichlet(np.full(3, 5.0))
        t[1, 3:] = rng.dirichlet(np.full(3, 5.0))
    tokens = np.stack([np.concatenate([rng.choice(6, 2000, p=t[r]) for r in (0, 1)])
                       for t in theta])
    X = np.zeros((6, 6, 6), dtype=np.int64)
    np.add.at(X, tuple(tokens), 1)
    est = AllocationSMC(2, n_particles=500, random_state=0).fit(X)
    for n in (1, 2):
        found = est.factors_[n].T
        order = [int(np.argmax(found[:, :3].sum(axis=1))), int(np.argmax(found[:, 3:].sum(axis=1)))]
        assert np.abs(found[order] - theta[n]).max() < 0.06
    np.testing.assert_allclose(est.factors_[0].sum(), X.sum(), rtol=1e-3)
    one = AllocationSMC(1, n_particles=500, random_state=0).fit(X)
    assert est.log_evidence_ > one.log_evidence_ + 100


# ------------------------------------------------------------ the estimator
@pytest.fixture(scope="module")
def counts():
    X, _ = allocation.sample_bam(np.random.default_rng(3), (10, 8, 6), 3, concentration=5.0,
                                 n_tokens=200)
    return X


def test_same_random_state_same_numbers_and_sparse_equals_dense(counts):
    params = dict(n_particles=500, n_moves=25)
    first = AllocationSMC(3, random_state=7, **params).fit(counts)
    again = AllocationSMC(3, random_state=7, **params).fit(counts)
    from_sparse = AllocationSMC(3, random_state=7, **params).fit(sparse.COO.from_numpy(counts))
    for other in (again, from_sparse):
        assert other.log_evidence_ == first.log_evidence_
        for a, b in zip(first.factors_, other.factors_):
            np.testing.assert_array_equal(a, b)
    other_seed = AllocationSMC(3, random_state=8, **params).fit(counts)
    assert other_seed.log_evidence_ != first.log_evidence_


def test_scipy_sparse_matrix_equals_dense():
    X = TINY
    dense = AllocationSMC(2, n_particles=500, random_state=0).fit(X)
    csr = AllocationSMC(2, n_particles=500, random_state=0).fit(scipy.sparse.csr_matrix(X))
    assert dense.log_evidence_ == csr.log_evidence_


def test_pickle_clone_and_refit(counts):
    est = AllocationSMC(2, n_particles=500, random_state=0).fit(counts)
    restored = pickle.loads(pickle.dumps(est))
    assert restored.log_evidence_ == est.log_evidence_
    np.testing.assert_array_equal(restored.transform(counts), est.transform(counts))
    fresh = clone(est)
    assert not hasattr(fresh, "log_evidence_")
    assert fresh.fit(counts).log_evidence_ == est.log_evidence_
    assert est.fit(counts).log_evidence_ == restored.log_evidence_
    assert est.n_features_in_ == counts.shape[1]


@pytest.mark.parametrize("method", ["smc", "vb"])
def test_transform_score_and_inverse_transform(counts, method):
    est = AllocationSMC(3, method=method, n_particles=500, random_state=0)
    W = est.fit_transform(counts)
    np.testing.assert_array_equal(W, est.transform(counts))
    assert W.shape == (counts.shape[0], 3)
    np.testing.assert_allclose(W.sum(axis=1), counts.sum(axis=(1, 2)))
    # Each sample on its own: a subset of rows, in another order, gives the same rows.
    rows = [4, 1, 7]
    np.testing.assert_allclose(est.transform(counts[rows]), W[rows], rtol=1e-9)
    assert est.score(counts) == est.log_evidence_
    new = counts[:4] + 1
    assert np.isfinite(est.score(new)) and est.score(new) < 0
    xhat = est.inverse_transform(W)
    assert xhat.shape == counts.shape
    np.testing.assert_allclose(xhat.sum(axis=(1, 2)), W.sum(axis=1))


@pytest.mark.parametrize(
    "X, params, error, match",
    [
        (TINY + 0.5, {}, ValueError, "non-integer"),
        (TINY - 1, {}, ValueError, "negative"),
        (np.zeros((3, 4)), {}, ValueError, "no counts"),
        (TINY, {"n_particles": 105}, ValueError, "multiple of n_islands"),
        (TINY, {"n_components": 0}, ValueError, "n_components"),
        (TINY, {"concentration": 0.0}, ValueError, "concentration"),
    ],
)
def test_bad_input_gets_a_clear_error(X, params, error, match):
    with pytest.raises(error, match=match):
        AllocationSMC(**params).fit(X)


def test_all_zero_data_with_a_rate_has_the_closed_form_evidence():
    est = AllocationSMC(2, prior_rate=2.0, n_particles=100, random_state=0).fit(np.zeros((3, 4)))
    assert est.log_evidence_ == pytest.approx(1.0 * np.log(2.0 / 3.0))


def test_transform_rejects_data_of_another_shape(counts):
    est = AllocationSMC(2, n_particles=100, random_state=0).fit(counts)
    with pytest.raises(ValueError, match="shape"):
        est.transform(counts[:, :, :3])


def test_sample_bam_draws_the_requested_total_and_shape():
    X, (T, theta0, thetas) = allocation.sample_bam(np.random.default_rng(0), (5, 4, 3), 2,
                                                   concentration=2.0, n_tokens=123)
    assert X.shape == (5, 4, 3) and X.sum() == 123 == T
    assert theta0.shape == (2,) and [t.shape for t in thetas] == [(2, 5), (2, 4), (2, 3)]


# ------------------------------------------- tiny concentrations, huge counts
def test_smc_and_vb_at_a_concentration_near_the_smallest_floats():
    """At concentration=1e-300 every table's parameters are ~1e-301: the
    products of the urn's terms underflow (the kernel divided 0 by 0 and
    raised SystemError), so the terms come from logs, and the estimate still
    matches the exact evidence (thousands of nats below 0)."""
    for rank in (2, 3):
        exact = bam_exact_log_evidence(TINY, rank, concentration=1e-300)
        smc = AllocationSMC(rank, n_particles=20_000, n_islands=20, concentration=1e-300,
                            random_state=0).fit(TINY)
        assert smc.log_evidence_error_ < 0.02
        assert abs(smc.log_evidence_ - exact) < 0.05
        vb = AllocationSMC(rank, method="vb", concentration=1e-300, random_state=0).fit(TINY)
        assert np.isfinite(vb.log_evidence_) and vb.log_evidence_ <= exact + 1e-9


def test_concentration_below_normal_parameters_is_refused_with_the_smallest_value():
    # TINY at rank 2: the largest table holds 4 x 2 cells, so each of its
    # parameters is concentration / 8, which must be a normal float.
    smallest = 8 * np.finfo(np.float64).tiny
    with pytest.raises(ValueError, match=r"smallest concentration .* is 1\.78e-307"):
        AllocationSMC(2, concentration=smallest / 2).fit(TINY)
    exact = bam_exact_log_evidence(TINY, 2, concentration=smallest)
    smc = AllocationSMC(2, concentration=smallest, n_particles=2000, random_state=0).fit(TINY)
    assert abs(smc.log_evidence_ - exact) < 0.05
    vb = AllocationSMC(2, method="vb", concentration=smallest, random_state=0).fit(TINY)
    assert np.isfinite(vb.log_evidence_) and vb.log_evidence_ <= exact + 1e-9
    with pytest.raises(ValueError, match=r"dirichlet_prior\[1\] has an entry of 1e-310"):
        AllocationSMC(2, model="ir,jr->ij",
                      dirichlet_prior=[None, np.full((3, 2), 1e-310)]).fit(TINY)


_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
_BERNOULLI = [Decimal(n) / d for n, d in [(1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66),
                                          (-691, 2730), (7, 6), (-3617, 510)]]


def _decimal_lgamma(x):
    """log Γ(x) for a Decimal x > 0: shifted above 60, then Stirling's series."""
    shift = Decimal(0)
    while x < 60:
        shift += x.ln()
        x += 1
    value = (x - Decimal("0.5")) * x.ln() - x + (2 * _PI).ln() / 2
    for k, b in enumerate(_BERNOULLI, start=1):
        value += b / (2 * k * (2 * k - 1) * x ** (2 * k - 1))
    return value - shift


def _decimal_digamma(x):
    shift = Decimal(0)
    while x < 60:
        shift += 1 / x
        x += 1
    value = x.ln() - 1 / (2 * x)
    for k, b in enumerate(_BERNOULLI, start=1):
        value -= b / (2 * k * x ** (2 * k))
    return value - shift


def _decimal_bound(state, data, indices, missing_indices):
    """vb_step's bound term by term as its docstring writes it (log p(T),
    the multinomial, the unobserved cells' constant, Σ X log Σ_h e^ℓ and the
    KL), in 60-digit decimal arithmetic, from the same stored parameters."""
    with localcontext() as context:
        context.prec = 60
        alpha = [Decimal(float(v)) for v in data.network.alpha]
        gamma = [Decimal(float(v)) for v in state.concentration]
        psi = [_decimal_digamma(g) for g in gamma]

        def log_terms(positions):  # per listed cell, per configuration
            families, parents = list(positions.families()), positions.parents
            n_cells, H = families[0].shape
            return [[sum(psi[int(slot[i, h])] for slot in families)
                     - sum(psi[int(p)] for p in parents[:, h]) for h in range(H)]
                    for i in range(n_cells)]

        def log_sum_exp(values):
            top = max(values)
            return top + sum((v - top).exp() for v in values).ln()

        p_missing = sum((sum(v.exp() for v in row) for row in log_terms(missing_indices)),
                        Decimal(0))
        kl = sum(int(s) * (_decimal_lgamma(a) - _decimal_lgamma(g) + (g - a) * p)
                 for s, a, g, p in zip(data.network.cell_signs(), alpha, gamma, psi))
        a, b, T = Decimal(data.concentration), Decimal(data.rate), Decimal(data.total)
        counts = [Decimal(int(x)) for x in data.counts]
        constant = (_decimal_lgamma(a + T) - _decimal_lgamma(a) + a * (b / (b + 1)).ln()
                    - T * (b + 1).ln() - sum(_decimal_lgamma(x + 1) for x in counts)
                    - (a + T) * (1 - p_missing / (b + 1)).ln())
        likelihood = sum(x * log_sum_exp(row) for x, row in zip(counts, log_terms(indices)))
        return float(constant + likelihood - kl)


E17 = 10**17


@pytest.mark.parametrize("X, observed, sizes, model", [
    (np.array([[7, 3], [1, 5]]) * E17, None, 2, None),
    # a zero cell (its mass then summed cell by cell) and a missing one
    (np.array([[7, 0, 3], [1, 5, 2]]) * E17, np.array([[1, 1, 1], [1, 1, 0]], dtype=bool), 2,
     None),
    (np.array([[7, 4, 3], [1, 5, 2]]) * E17, np.array([[1, 0, 1], [1, 1, 1]], dtype=bool),
     {"p": 2, "q": 2}, "ip,jq,pq->ij"),
])
def test_vb_bound_matches_60_digit_arithmetic_at_counts_near_the_int64_limit(X, observed,
                                                                             sizes, model):
    """Written as vb_step's docstring writes it, the bound's terms reach
    T log T ~ 10^19 and cancel to a few hundred nats, so that in doubles it
    came out nan or above log p(X) at counts of 7e17. The bound must match
    the same formula evaluated in 60-digit arithmetic at the start, early
    on (bounds near -1e17), and at convergence (a few hundred nats): to
    1e-13 of its size, and 1e-6 nats where it is small."""
    observed = np.ones(X.shape, dtype=bool) if observed is None else observed
    coords = np.array(np.nonzero((X > 0) & observed))
    data = allocation.allocation_data(coords, X[tuple(coords)], X.shape, sizes, model=model,
                                      missing=np.array(np.nonzero(~observed)))
    indices = allocation.vb._CellPositions(data.network, data.coords)
    missing = allocation.vb._CellPositions(data.network, data.missing)
    state = allocation.vb_init(np.random.default_rng(0), data, indices)
    for sweep in range(201):
        new, bound = allocation.vb_step(state, data, indices, missing)
        if sweep in (0, 3, 200):
            reference = _decimal_bound(state, data, indices, missing)
            assert abs(bound - reference) <= 1e-6 + 1e-13 * abs(reference)
        state = new
    assert abs(bound) < 1e3  # it did reach a small bound, where the check is in nats


def test_vb_fits_counts_of_7e17_with_one_component_exactly():
    """With one component the bound is log p(X) itself, here at counts of
    up to 6e17 (T = 1.8e18) and against its closed form in 60-digit
    arithmetic: Dirichlet-multinomial terms for each mode's margins."""
    X = np.outer([1, 2], [1, 2, 3]) * E17
    with localcontext() as context:
        context.prec = 60
        a, T = Decimal(1), Decimal(int(X.sum()))
        b = a / T
        exact = (_decimal_lgamma(a + T) - _decimal_lgamma(a) + a * (b / (b + 1)).ln()
                 - T * (b + 1).ln() - sum(_decimal_lgamma(Decimal(int(x)) + 1) for x in X.ravel()))
        for margin in (X.sum(axis=1), X.sum(axis=0)):
            share = a / len(margin)
            exact += _decimal_lgamma(a) - _decimal_lgamma(a + T) + sum(
                _decimal_lgamma(share + int(m)) - _decimal_lgamma(share) for m in margin)
    est = AllocationSMC(1, method="vb", random_state=0).fit(X)
    assert est.log_evidence_ == pytest.approx(float(exact), abs=1e-6)


def test_vb_fit_on_counts_of_7e17_is_finite_monotone_and_converges():
    X = np.array([[7, 3], [1, 5]]) * E17
    est = AllocationSMC(2, method="vb", random_state=0).fit(X)
    bounds = est.lower_bounds_
    assert est.converged_ and np.all(np.isfinite(bounds))
    assert np.all(np.diff(bounds) >= -1e-13 * np.abs(bounds[1:]))
    assert bounds[0] < -1e16 and -1e3 < est.log_evidence_ < 0


def test_vb_refuses_huge_counts_with_zero_cells_too_many_to_list():
    # Above 2^36 tokens the zero cells' share of the bound is summed cell by
    # cell; 9 million of them (3 non-zero cells) are more than it lists.
    X = scipy.sparse.coo_matrix(([10**11, 10**11, 10**11], ([0, 1, 2], [0, 1, 2])),
                                shape=(3000, 3000))
    with pytest.raises(ValueError, match="zero cells"):
        AllocationSMC(2, method="vb").fit(X)


# Each count within the documented 2^62, their total (2.4e19) beyond 2^63:
# an int64 sum of them wraps (to a negative number here).
BEYOND_INT64 = np.full((2, 3), 4 * 10**18)


def test_exact_total_sums_counts_beyond_int64_exactly():
    rng = np.random.default_rng(0)
    for counts in (BEYOND_INT64.ravel(), rng.integers(0, 2**62, size=1000),
                   rng.integers(0, 10, size=1000), np.zeros(0, dtype=np.int64)):
        expected = sum(int(c) for c in counts)
        assert allocation.exact_total(counts) == expected
        assert type(allocation.exact_total(counts)) is int
    data = _problem(BEYOND_INT64, 2)
    assert data.total == 24 * 10**18
    assert data.rate == 1.0 / (24 * 10**18)  # a / T, at the exact T


def test_vb_on_counts_totalling_beyond_int64_gives_the_exact_evidence():
    """With one component the bound is log p(X) itself: the closed form in
    60-digit arithmetic at T = 2.4e19 > 2^63, where an int64 total wrapped
    to a negative T and the fit stopped blaming the priors."""
    X = BEYOND_INT64
    T = int(X.sum(dtype=object))
    with localcontext() as context:
        context.prec = 60
        a, T_ = Decimal(1), Decimal(T)
        b = a / T_
        exact = (_decimal_lgamma(a + T_) - _decimal_lgamma(a) + a * (b / (b + 1)).ln()
                 - T_ * (b + 1).ln()
                 - sum(_decimal_lgamma(Decimal(int(x)) + 1) for x in X.ravel()))
        for margin in (X.sum(axis=1, dtype=object), X.sum(axis=0, dtype=object)):
            share = a / len(margin)
            exact += _decimal_lgamma(a) - _decimal_lgamma(a + T_) + sum(
                _decimal_lgamma(share + int(m)) - _decimal_lgamma(share) for m in margin)
    est = AllocationSMC(1, method="vb", random_state=0).fit(X)
    assert est.log_evidence_ == pytest.approx(float(exact), abs=1e-6)
    # E[λ] = (a + T) / (b + 1) = T at b = a / T: the first factor's total.
    assert est.factors_[0].sum() == pytest.approx(T, rel=1e-12)
    np.testing.assert_allclose(est.transform(X).sum(axis=1), [12 * 10**18] * 2, rtol=1e-12)


def test_smc_refuses_more_tokens_than_its_urns_hold_naming_the_limit():
    with pytest.raises(ValueError, match=r"2\.4e\+19 .*at most 2147483647 \(2\^31 - 1\)"):
        AllocationSMC(2).fit(BEYOND_INT64)
    # The SMC itself refuses them before laying the tokens out.
    just_beyond = np.array([[2**30, 2**30], [0, 0]])
    with pytest.raises(ValueError, match="at most 2147483647"):
        allocation.run_smc(np.random.default_rng(0), _problem(just_beyond, 2), n_particles=1,
                           n_islands=1)


def test_smc_caps_the_tokens_in_unobserved_cells_at_what_its_urns_hold():
    X = np.array([[allocation.SMC_MAX_TOKENS - 10, 0], [0, 0]])
    coords = np.array([[0], [0]])
    data = allocation.allocation_data(coords, X[0, :1], X.shape, 2,
                                      missing=np.array([[1], [1]]))
    state = allocation.smc_init(data, 1, 1)
    assert allocation._missing._token_cap(data, state) <= 10


def test_vb_with_no_counts_has_the_closed_form_bound():
    est = AllocationSMC(2, method="vb", prior_rate=2.0, random_state=0).fit(np.zeros((3, 4)))
    assert est.log_evidence_ == pytest.approx(np.log(2.0 / 3.0), abs=1e-12)


# ------------------------------------------------------------------ tol
def test_vb_stops_within_tol_nats_by_the_packages_rule():
    """tol is nats to the limit of the bound, read by the package's one
    rule (distance_to_limit over the bounds after each sweep), as in every
    VB and EM fit; the default is theirs."""
    from sklearn_pltf import PoissonCP
    from sklearn_pltf.inference._convergence import distance_to_limit

    assert AllocationSMC().tol == PoissonCP().tol == 0.1
    X, _ = allocation.sample_bam(np.random.default_rng(0), (8, 7, 6), 3, concentration=5.0,
                                 n_tokens=300)
    for tol in (0.1, 1e-4):
        est = AllocationSMC(4, method="vb", concentration=5.0, tol=tol, max_iter=2000,
                            random_state=0).fit(X)
        sweeps = est.lower_bounds_[1:-1]  # after each sweep of the loop
        assert est.converged_ and est.n_iter_ == sweeps.size + 1
        assert distance_to_limit(sweeps) <= tol < distance_to_limit(sweeps[:-1])
    # The tighter tol ran further, and its bound is at least as high.
    loose = AllocationSMC(4, method="vb", concentration=5.0, random_state=0).fit(X)
    assert loose.n_iter_ < est.n_iter_ and loose.log_evidence_ <= est.log_evidence_ + 1e-9
