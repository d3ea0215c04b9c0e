"""The Bernoulli–Poisson likelihood for binary data: the exact oracle, the
VB bound and Chib against it, the zero-truncated count draws, link
probabilities and input checks. The bound's monotonicity and dense = sparse
are in tests/inference/test_inference.py, the sampler's Geweke test in
tests/inference/test_gibbs.py."""

import itertools
import pickle

import numpy as np
import pytest
import sparse
from scipy import stats

from sklearn_pltf import PLTF, BayesianNMF, PoissonCP
from sklearn_pltf.engine._contract import make_contractor
from sklearn_pltf.engine._data import as_observed_tensor
from sklearn_pltf.engine._likelihood import BernoulliPoissonLikelihood
from sklearn_pltf.evidence import bernoulli_exact_log_evidence, chib_log_evidence
from sklearn_pltf.inference import gibbs
from sklearn_pltf.inference._common import gamma_priors
from sklearn_pltf.engine.model import Model

TINY_BINARY = [
    np.array([[1, 0, 1], [0, 1, 1]], dtype=float),
    np.array([[1, 0], [np.nan, 1], [1, 1]]),  # one missing entry
    np.array([[0, 1], [1, 1], [0, 0], [1, 0]], dtype=float),
]
PRIORS = [(1.0, 1.0), (2.0, 1.0)]


# ------------------------------------------------------------------ the oracle
@pytest.mark.parametrize("n_components, prior", [(1, (1.0, 1.0)), (2, (0.5, 2.0)), (3, (2.0, 1.0))])
def test_exact_probabilities_of_every_binary_matrix_sum_to_one(n_components, prior):
    """The oracle is a probability: over all 2^6 binary 2 x 3 matrices its
    values sum to 1 (its quadrature is accurate to ~1e-14 here)."""
    total = sum(
        np.exp(bernoulli_exact_log_evidence(np.reshape(bits, (2, 3)), n_components,
                                            prior_shape=prior[0], prior_rate=prior[1]))
        for bits in itertools.product([0.0, 1.0], repeat=6)
    )
    assert total == pytest.approx(1.0, abs=1e-10)


def test_exact_evidence_is_symmetric_and_converged():
    X = TINY_BINARY[0]
    value = bernoulli_exact_log_evidence(X, 2, prior_shape=(2.0, 1.0), prior_rate=(1.0, 3.0))
    # Transposing swaps the roles (and priors) of W and H.
    assert bernoulli_exact_log_evidence(X.T, 2, prior_shape=(1.0, 2.0), prior_rate=(3.0, 1.0)) \
        == pytest.approx(value, abs=1e-10)
    # Halving the quadrature step does not move it.
    assert bernoulli_exact_log_evidence(X, 2, prior_shape=(2.0, 1.0), prior_rate=(1.0, 3.0),
                                        step=1 / 24) == pytest.approx(value, abs=1e-10)


def test_exact_evidence_rejects_what_it_cannot_do():
    with pytest.raises(ValueError, match="0, 1 or NaN"):
        bernoulli_exact_log_evidence(np.array([[2.0, 0.0]]), 1)
    with pytest.raises(ValueError, match="at most 3"):
        bernoulli_exact_log_evidence(np.zeros((4, 4)), 1)


# ------------------------------------------------------------- VB and Chib
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("n_components", [1, 2, 3])
@pytest.mark.parametrize("index", range(len(TINY_BINARY)))
def test_vb_bound_is_below_the_exact_evidence(index, n_components, prior):
    X = TINY_BINARY[index]
    exact = bernoulli_exact_log_evidence(X, n_components, prior_shape=prior[0], prior_rate=prior[1])
    est = BayesianNMF(n_components, likelihood="bernoulli", prior_shape=prior[0],
                      prior_rate=prior[1], n_init=3, tol=1e-9, random_state=0).fit(X)
    assert est.log_evidence_ <= exact
    # and a useful bound: within the K! label symmetry and q's factorisation
    assert est.log_evidence_ > exact - 8.0


def _chib(X, n_components, prior, sweep, seed=0):
    model = Model.parse("ik,kj->ij").bind(X.shape, {"k": n_components})
    contractor = make_contractor(model, as_observed_tensor(X), "bernoulli")
    return chib_log_evidence(np.random.default_rng(seed), model, contractor,
                             gamma_priors(model, *prior), sweep=gibbs.SWEEPS[sweep],
                             blocks="elements", n_draws=2000)


@pytest.mark.slow(minutes=0.1)
def test_chib_is_close_to_the_exact_evidence():
    """Chib's estimate with the augmented sampler (latent counts drawn at
    the ones) within 0.25 nats of the exact value; at 2000 draws per clamped
    run the standard error here is about 0.03."""
    X = TINY_BINARY[0]
    exact = bernoulli_exact_log_evidence(X, 1)
    assert abs(_chib(X, 1, (1.0, 1.0), "gibbs").log_evidence - exact) < 0.25


@pytest.mark.slow(minutes=0.8)
@pytest.mark.parametrize("sweep", ["gibbs", "sada"])
@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("n_components", [2, 3])
@pytest.mark.parametrize("index", range(len(TINY_BINARY)))
def test_chib_is_close_to_the_exact_evidence_on_every_tiny_case(index, n_components, prior, sweep):
    """Standard errors at these ranks are 0.06-0.12 nats, so 0.25 is two to
    four of them; the seed is fixed."""
    X = TINY_BINARY[index]
    exact = bernoulli_exact_log_evidence(X, n_components, prior_shape=prior[0], prior_rate=prior[1])
    assert abs(_chib(X, n_components, prior, sweep).log_evidence - exact) < 0.25


@pytest.mark.slow(minutes=0.1)
def test_estimator_chib_runs_with_the_bernoulli_likelihood():
    X = TINY_BINARY[0]
    exact = bernoulli_exact_log_evidence(X, 1)
    est = BayesianNMF(1, likelihood="bernoulli", method="gibbs", n_draws=1000,
                      random_state=0).fit(X)
    assert abs(est.log_evidence_ - exact) < 0.25


@pytest.mark.slow(minutes=0.5)
def test_estimator_sti_is_close_to_the_exact_evidence():
    X = TINY_BINARY[0]
    exact = bernoulli_exact_log_evidence(X, 1)
    est = BayesianNMF(1, likelihood="bernoulli", method="sgld", random_state=0).fit(X)
    # STI within three of its standard errors (and its discretisation bias)
    assert abs(est.log_evidence_ - exact) < 3 * est.log_evidence_error_ + 0.3


# ------------------------------------------------------- latent count draws
def test_zero_truncated_poisson_draws_have_the_right_law():
    """The exact sampler N = 1 + Poisson(X̂ (1 − T)) against the
    zero-truncated Poisson law: a chi-square test of the frequencies at
    three rates (p > 1e-4 for a correct sampler except with that chance)."""
    rng = np.random.default_rng(0)
    for rate in (0.05, 1.0, 6.0):
        draws = BernoulliPoissonLikelihood.draw_counts(rng, np.ones(100_000), np.full(100_000, rate))
        assert draws.min() >= 1
        values = np.arange(1, 30)
        pmf = stats.poisson.pmf(values, rate) / -np.expm1(-rate)
        observed = np.array([np.sum(draws == v) for v in values], dtype=float)
        keep = pmf * draws.size >= 5
        expected = pmf[keep] * draws.size
        observed_kept = observed[keep]
        # lump the tail into the last kept cell
        observed_kept[-1] += draws.size - observed_kept.sum()
        expected[-1] += draws.size - expected.sum()
        assert keep.sum() >= 2
        assert stats.chisquare(observed_kept, expected).pvalue > 1e-4


# -------------------------------------------------------- link probabilities
def _relational(seed=0, shape=(12, 12, 5), rank=3):
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(0.5, 1.0, (n, rank)) for n in shape]
    rates = np.einsum("ir,jr,kr->ijk", *factors)
    return (rng.poisson(rates) > 0).astype(float), rates


def test_predict_entries_are_link_probabilities():
    X, _ = _relational()
    entries = np.argwhere(np.ones_like(X, dtype=bool))
    vb = PoissonCP(3, likelihood="bernoulli", random_state=0).fit(X)
    p = vb.predict_entries(entries)
    assert np.all((p > 0) & (p < 1))
    np.testing.assert_array_equal(p, vb.predict_entries(entries))  # seeded at fit
    np.testing.assert_array_equal(p, pickle.loads(pickle.dumps(vb)).predict_entries(entries))
    # Jensen: the posterior predictive lies below the plug-in 1 - exp(-X̂(E Z)),
    # up to the Monte Carlo error of 256 draws (standard error <= 0.5 / 16 per
    # entry; the mean over 720 entries has far less).
    plug_in = -np.expm1(-np.einsum("ir,jr,kr->ijk", *vb.factors_)[tuple(entries.T)])
    assert np.max(p - plug_in) < 4 * 0.5 / 16
    assert np.mean(plug_in - p) > 1e-3
    # EM: the plug-in at the mode exactly.
    em = PoissonCP(3, likelihood="bernoulli", method="em", prior_shape=1.1, random_state=0).fit(X)
    xhat = np.einsum("ir,jr,kr->ijk", *em.factors_)[tuple(entries.T)]
    np.testing.assert_allclose(em.predict_entries(entries), -np.expm1(-xhat), rtol=1e-12)


def test_link_probabilities_are_calibrated_against_the_truth():
    """Data drawn from the model: in each of four bins of the predicted
    probability holding 200+ entries, the mean prediction is within 0.03 of
    the mean of the true link probabilities 1 − exp(−X̂_true)."""
    X, rates = _relational(seed=1, shape=(30, 30, 8))
    est = PoissonCP(3, likelihood="bernoulli", n_init=2, random_state=0).fit(X)
    entries = np.argwhere(np.ones_like(X, dtype=bool))
    p = est.predict_entries(entries)
    truth = -np.expm1(-rates[tuple(entries.T)])
    bins = np.digitize(p, [0.25, 0.5, 0.75])
    checked = [b for b in range(4) if np.sum(bins == b) >= 200]
    assert len(checked) >= 2
    for b in checked:
        inside = bins == b
        assert abs(p[inside].mean() - truth[inside].mean()) < 0.03, b


def test_bernoulli_beats_poisson_at_link_prediction():
    """On binary data drawn from the Bernoulli–Poisson model, its held-out
    AUC-PR exceeds the Poisson model's (a tenth of the entries masked)."""
    from sklearn.metrics import average_precision_score

    X, _ = _relational(seed=2, shape=(25, 25, 6))
    rng = np.random.default_rng(0)
    held = rng.random(X.shape) < 0.1
    scores = {}
    for likelihood in ("poisson", "bernoulli"):
        est = PoissonCP(3, likelihood=likelihood, random_state=0).fit(X, mask=~held)
        predicted = est.predict_entries(np.argwhere(held))
        scores[likelihood] = average_precision_score(X[held], predicted)
    assert scores["bernoulli"] > scores["poisson"]


def test_sampler_link_probabilities_use_the_kept_draws():
    X, _ = _relational(shape=(8, 8, 3))
    est = PoissonCP(2, likelihood="bernoulli", method="gibbs", n_draws=300, n_warmup=100,
                    evidence=None, random_state=0).fit(X)
    entries = np.argwhere(np.ones_like(X, dtype=bool))
    draws = [d.reshape((-1,) + d.shape[2:]) for d in est.draws_]
    by_hand = np.mean([
        -np.expm1(-np.einsum("ir,jr,kr->ijk", *(d[i] for d in draws)))
        for i in np.linspace(0, draws[0].shape[0] - 1, 256).round().astype(int)
    ], axis=0)
    np.testing.assert_allclose(est.predict_entries(entries), by_hand[tuple(entries.T)], rtol=1e-10)


# ------------------------------------------------------------- input checks
@pytest.mark.parametrize("make", [np.asarray, sparse.COO.from_numpy])
def test_non_binary_values_are_rejected(make):
    X = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="neither 0 nor 1.*likelihood='poisson'"):
        BayesianNMF(1, likelihood="bernoulli").fit(make(X))
    est = BayesianNMF(1, likelihood="bernoulli").fit(make((X > 0).astype(float)))
    with pytest.raises(ValueError, match="neither 0 nor 1"):
        est.transform(make(X))


@pytest.mark.parametrize("method", ["vb", "gibbs"])
@pytest.mark.slow(minutes=0.1)
def test_ais_is_close_to_the_exact_evidence(method):
    """AIS (the samplers' default evidence on dense data) under the
    Bernoulli–Poisson likelihood, from a Gamma fit to the posterior, within
    0.25 nats of the exact value."""
    X = TINY_BINARY[0]
    exact = bernoulli_exact_log_evidence(X, 2)
    est = BayesianNMF(2, likelihood="bernoulli", method=method, evidence="ais", n_draws=500,
                      random_state=0).fit(X)
    assert abs(est.log_evidence_ - exact) < 0.25


def test_generic_pltf_takes_the_likelihood():
    X, _ = _relational(shape=(6, 6, 3))
    est = PLTF("ir,jr,kr->ijk", 2, likelihood="bernoulli", random_state=0).fit(X)
    assert est.log_evidence_ < 0
    with pytest.raises(ValueError, match="likelihood"):
        PLTF("ir,jr,kr->ijk", 2, likelihood="gaussian").fit(X)
