"""The compound Poisson likelihood (non-negative reals): what a sweep costs
against the Poisson likelihood on the same data, and a whole fit at the
defaults against scikit-learn's KL NMF, the non-Bayesian model a user of
non-negative reals would otherwise run.

Run ``python bench_compound.py``; numbers go to benchmarks/README.md.
"""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np
import scipy.sparse as sp


def _values(shape, rank, density, jump_mean=1.0, seed=0):
    """Compound Poisson data of a rank-``rank`` NMF: jumps ~ Poisson(W H),
    each exponential of mean ``jump_mean``; ``density`` thins the rates."""
    rng = np.random.default_rng(seed)
    W = rng.gamma(1.0, 1.0, (shape[0], rank))
    H = rng.gamma(1.0, 1.0, (rank, shape[1]))
    jumps = rng.poisson(density * (W @ H) / rank)
    return np.where(jumps > 0, rng.gamma(np.maximum(jumps, 1), jump_mean), 0.0)


def _sweep_seconds(X, likelihood, rank, n_sweeps=10, repeats=3):
    from sklearn_pltf.engine._contract import make_contractor
    from sklearn_pltf.engine._data import as_observed_tensor
    from sklearn_pltf.inference import vb
    from sklearn_pltf.inference._common import gamma_priors
    from sklearn_pltf.engine.model import Model

    data = as_observed_tensor(X)
    model = Model.parse("ik,kj->ij").bind(data.shape, rank)
    contractor = make_contractor(model, data, likelihood)
    priors = gamma_priors(model, 1.0, 1.0)
    state, _ = vb.step(vb.init(np.random.default_rng(0), model, contractor, priors),
                       contractor, priors)  # compiled
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n_sweeps):
            vb.step(state, contractor, priors)
        times.append((time.perf_counter() - start) / n_sweeps)
    return statistics.median(times)


def _generalised_kl(X, components, loadings):
    """Σ x log(x / x̂) − x + x̂ over all entries, x̂ = loadings @ components
    (the posterior mean of the rate; jump mean 1)."""
    xhat = loadings @ components
    values = X.toarray() if sp.issparse(X) else X
    positive = values > 0
    return float(np.sum(values[positive] * np.log(values[positive] / xhat[positive]))
                 - values.sum() + xhat.sum())


def bench_compound(rank=20):
    from sklearn.decomposition import NMF

    from sklearn_pltf import BayesianNMF

    cases = {"dense 2000 x 1000": _values((2000, 1000), rank, 1.0),
             "sparse 20000 x 5000": sp.csr_matrix(_values((20000, 5000), rank, 0.005))}
    for name, X in cases.items():
        nnz = X.nnz if sp.issparse(X) else np.count_nonzero(X)
        poisson = _sweep_seconds(X, "poisson", rank)
        compound = _sweep_seconds(X, "compound_poisson", rank)
        print(f"{name} ({nnz} non-zeros), rank {rank}: a VB sweep {compound * 1e3:.1f} ms "
              f"compound Poisson, {poisson * 1e3:.1f} ms Poisson on the same values: ratio "
              f"{compound / poisson:.2f}", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            ours = BayesianNMF(rank, likelihood="compound_poisson", random_state=0).fit(X)
            ours_seconds = time.perf_counter() - start
            start = time.perf_counter()
            peer = NMF(rank, beta_loss="kullback-leibler", solver="mu", init="nndsvda",
                       random_state=0, max_iter=1000).fit(X)
            peer_seconds = time.perf_counter() - start
        ours_kl = _generalised_kl(X, ours.components_, ours.transform(X))
        peer_kl = peer.reconstruction_err_ ** 2 / 2  # scikit-learn reports sqrt(2 KL)
        print(f"  whole fit at the defaults: BayesianNMF(compound_poisson) {ours_seconds:.1f} s, "
              f"{ours.n_iter_} iterations, bound {ours.log_evidence_:.1f} "
              f"(converged {ours.converged_}), generalised KL {ours_kl:.0f}; scikit-learn "
              f"NMF(KL, mu) {peer_seconds:.1f} s, {peer.n_iter_} iterations, generalised KL "
              f"{peer_kl:.0f}: time ratio {ours_seconds / peer_seconds:.2f}", flush=True)


if __name__ == "__main__":
    bench_compound()
