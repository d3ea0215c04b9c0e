"""ArviZ export: named factors, feature names as coordinates, and the
pointwise log-likelihood that ``az.loo`` and ``az.waic`` read."""

import warnings

import arviz
import numpy as np
import pandas as pd
import pytest
import sparse

from sklearn_pltf import (PLTF, AllocationSMC, BayesianNMF, BayesianRESCAL, GibbsNTF, PoissonCP,
                          TuckerVB)


SHORT = dict(evidence=None, n_warmup=50, n_draws=60, random_state=0)


@pytest.fixture
def counts():
    rng = np.random.default_rng(0)
    return rng.poisson(rng.gamma(1.0, 1.0, (15, 2)) @ rng.gamma(1.0, 1.0, (2, 6))).astype(float)


def _fit(estimator, X, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: R-hat warnings
        return estimator.fit(X, **fit_params)


def _pointwise_sums_are_the_trace(idata):
    """Σ over entries of log p(x_e | draw) is the chain's log p(X | draw)."""
    total = idata.log_likelihood["x"].sum("entry").values
    np.testing.assert_allclose(total, idata.sample_stats["total_log_likelihood"].values,
                               rtol=1e-10)


@pytest.mark.parametrize("make, X_of", [
    (lambda: BayesianNMF(2, method="gibbs", n_init=2, **SHORT), lambda X: X),
    (lambda: PoissonCP(2, method="sada", likelihood="bernoulli", **SHORT),
     lambda X: (X[:, :, None] > 1).astype(float).repeat(2, axis=2)),
    (lambda: GibbsNTF(2, n_init=2, **SHORT), lambda X: X[:, :, None] * np.ones(3)),
], ids=["poisson-gibbs", "bernoulli-sada", "gaussian-gibbs"])
def test_loo_and_waic_run_on_the_export(counts, make, X_of):
    X = X_of(counts)
    est = _fit(make(), X)
    idata = est.to_inference_data(X)
    n_chains = est.n_init
    assert idata.log_likelihood["x"].shape == (n_chains, 60, X.size)
    np.testing.assert_array_equal(idata.observed_data["x"].values, X.ravel())
    np.testing.assert_array_equal(idata.constant_data["entry_index"].values,
                                  np.argwhere(np.ones(X.shape, dtype=bool)))
    _pointwise_sums_are_the_trace(idata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto k warnings at 60 draws
        loo, waic = arviz.loo(idata), arviz.waic(idata)
    assert np.isfinite(loo.elpd_loo) and np.isfinite(waic.elpd_waic)
    # elpd_loo sums log p(x_e | X_-e) over entries: below the in-sample fit
    assert loo.elpd_loo < idata.log_likelihood["x"].mean(("chain", "draw")).sum()


def test_missing_entries_are_left_out_and_sparse_input_agrees(counts):
    mask = np.ones(counts.shape, dtype=bool)
    mask[0, :3] = False
    est = _fit(BayesianNMF(2, method="gibbs", **SHORT), counts, mask=mask)
    dense = est.to_inference_data(counts, mask=mask)
    assert dense.log_likelihood["x"].shape[-1] == mask.sum()
    _pointwise_sums_are_the_trace(dense)
    from_sparse = est.to_inference_data(sparse.COO.from_numpy(counts), mask=mask)
    np.testing.assert_array_equal(from_sparse.log_likelihood["x"].values,
                                  dense.log_likelihood["x"].values)
    with pytest.raises(ValueError, match="must be the data the estimator was fitted to"):
        est.to_inference_data(counts)  # without the mask: other data


def test_factor_names_and_feature_names(counts):
    frame = pd.DataFrame(counts, columns=[f"word{j}" for j in range(counts.shape[1])])
    est = _fit(BayesianNMF(2, method="gibbs", **SHORT), frame)
    idata = est.to_inference_data()
    assert set(idata.posterior.data_vars) == {"W", "H"}
    assert list(idata.posterior["H"].coords["j"].values) == list(frame.columns)
    renamed = est.to_inference_data(factor_names={0: "topics_of_documents"})
    assert set(renamed.posterior.data_vars) == {"topics_of_documents", "H"}
    assert set(est.to_inference_data(factor_names=["theta", "beta"]).posterior.data_vars) == {
        "theta", "beta"}
    with pytest.raises(ValueError, match="needs 2 names"):
        est.to_inference_data(factor_names=["W"])
    with pytest.raises(ValueError, match="no factor at position 5"):
        est.to_inference_data(factor_names={5: "X"})


def test_default_names_of_each_structure(counts, rng):
    T = rng.poisson(1.0, size=(5, 4, 3)).astype(float)
    tucker = _fit(TuckerVB(2, method="gibbs", **SHORT), T).to_inference_data(T)
    assert set(tucker.posterior.data_vars) == {"A", "B", "C", "G"}
    assert tucker.posterior["G"].dims == ("chain", "draw", "A_index", "B_index", "C_index")
    _pointwise_sums_are_the_trace(tucker)
    relations = rng.poisson(0.5, size=(6, 6, 2)).astype(float)
    rescal = _fit(BayesianRESCAL(2, method="gibbs", **SHORT), relations)
    exported = rescal.to_inference_data(relations)
    assert set(exported.posterior.data_vars) == {"A", "R"}  # one entity factor, not two
    assert exported.log_likelihood["x"].shape[-1] == 6 * 5 * 2  # the diagonal is not modelled
    _pointwise_sums_are_the_trace(exported)
    pltf = _fit(PLTF("ik,kj->ij", 2, method="gibbs", **SHORT), counts).to_inference_data()
    assert set(pltf.posterior.data_vars) == {"Z0_ik", "Z1_kj"}


@pytest.mark.parametrize("method", [pytest.param("smc", marks=pytest.mark.slow(minutes=0.2)), "vb"])
def test_allocation_export_draws_the_factors_posterior(method):
    X = np.random.default_rng(0).poisson(1.0, size=(8, 6, 5))
    est = _fit(AllocationSMC(2, method=method, n_particles=500, random_state=0), X)
    idata = est.to_inference_data(X)
    assert set(idata.posterior.data_vars) == {"A", "B", "C"}
    # SMC: a draw per particle resampled at fit (1000, or every particle if fewer)
    assert idata.posterior["A"].shape == (1, 500 if method == "smc" else 1000, 8, 2)
    _pointwise_sums_are_the_trace(idata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isfinite(arviz.loo(idata).elpd_loo)
    again = est.to_inference_data()
    np.testing.assert_array_equal(again.posterior["B"].values, idata.posterior["B"].values)
    if method == "vb":
        # 1000 independent draws from q: their mean is the fitted mean within
        # 4 standard errors, element by element.
        for name, fitted in zip("ABC", est.factors_):
            draws = idata.posterior[name].values[0]
            error = draws.std(axis=0) / np.sqrt(draws.shape[0])
            assert np.all(np.abs(draws.mean(axis=0) - fitted) <= 4 * error)


def test_the_memory_guard_comes_before_the_entries_are_listed(counts, monkeypatch):
    """A pointwise log-likelihood too large for memory is refused before the
    observed entries are enumerated (for sparse data, a pass over the whole
    tensor's size)."""
    import sklearn_pltf.inference._inference_data as export

    est = _fit(BayesianNMF(2, method="gibbs", **SHORT), counts)
    monkeypatch.setattr(export, "physical_memory", lambda: 1024)
    monkeypatch.setattr(export, "observed_entries", lambda data: pytest.fail("listed first"))
    with pytest.raises(ValueError, match="needs .* GiB; refit with fewer draws"):
        est.to_inference_data(sparse.COO.from_numpy(counts))
