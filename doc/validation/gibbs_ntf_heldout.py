"""GibbsNTF's held-out error against the rank, beside TensorLy's masked NTF.

Run from the repository's root (with TensorLy, the ``bench`` extra; about an
hour, most of it on the ``kinetic`` tensor)::

    python doc/validation/gibbs_ntf_heldout.py

Schmidt & Mohamed's Table 1: held-out RMSE by rank, GibbsNTF (500 warm-up
sweeps, 500 draws) against TensorLy's masked ``non_negative_parafac``, on the
paper's synthetic rank-3 20 x 15 x 10 tensor (ranks 1-8, 10 splits) and
TensorLy's real ``load_IL2data`` (ranks 1-6, 10 splits) and ``load_kinetic``
(ranks 1-4, one split) tensors, 10% of the observed entries held out per
split. The gallery example ``plot_gaussian_ntf_heldout.py`` runs it on fewer
splits; the cost of a GibbsNTF sweep is the benchmark suite's (``python
benchmarks/run.py samplers``).

Writes ``doc/_static/validation/gibbs_ntf_heldout.json``; the user guide's
Gaussian NTF section (``doc/gaussian_and_allocation.rst``) records its
numbers.
"""

from _setup import line, write_json  # first: one core and the Agg backend, before numpy

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from sklearn_pltf import GibbsNTF  # noqa: E402


def synthetic_gaussian_cp(shape=(20, 15, 10), rank=3, noise_ratio=0.3, seed=0):
    """Three-way non-negative rank-``rank`` CP (Exponential(1) factors) plus Gaussian
    noise of standard deviation ``noise_ratio`` times X̂'s."""
    rng = np.random.default_rng(seed)
    factors = [rng.standard_exponential((n, rank)) for n in shape]
    xhat = np.einsum("ir,jr,kr->ijk", *factors)
    return xhat + rng.normal(0.0, noise_ratio * xhat.std(), shape)


def held_out_splits(X, n_splits, fraction=0.1, seed=0):
    """``n_splits`` random sets of ``fraction`` of the observed entries (as
    boolean masks), independently drawn."""
    rng = np.random.default_rng(seed)
    observed = np.flatnonzero(~np.isnan(X))
    for _ in range(n_splits):
        hidden = np.zeros(X.size, dtype=bool)
        hidden[rng.choice(observed, int(round(fraction * observed.size)), replace=False)] = True
        yield hidden.reshape(X.shape)


def gibbs_ntf_rmse(X, hidden, rank, n_warmup, n_draws, seed):
    train = X.copy()
    train[hidden] = np.nan
    est = GibbsNTF(rank, evidence=None, n_warmup=n_warmup, n_draws=n_draws, random_state=seed).fit(train)
    predicted = est.predict_entries(np.argwhere(hidden))
    return float(np.sqrt(np.mean((predicted - X[hidden]) ** 2)))


def tensorly_rmse(X, hidden, rank, seed, n_iter_max=2000):
    """TensorLy's non_negative_parafac with the held-out (and missing) entries masked."""
    import tensorly as tl
    from tensorly.decomposition import non_negative_parafac

    observed = ~np.isnan(X) & ~hidden
    filled = np.where(observed, X, 0.0)
    filled = np.maximum(filled, 0.0)  # TensorLy's multiplicative updates need X >= 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cp = non_negative_parafac(filled, rank, mask=observed.astype(float), init="random",
                                  n_iter_max=n_iter_max, tol=1e-8, random_state=seed)
    xhat = tl.cp_to_tensor(cp)
    return float(np.sqrt(np.mean((xhat[hidden] - X[hidden]) ** 2)))


def rmse_table(name, X, ranks, n_splits, n_warmup, n_draws, tensorly_iter=2000):
    """Mean held-out RMSE per rank for both methods over ``n_splits`` splits."""
    ours, theirs = {r: [] for r in ranks}, {r: [] for r in ranks}
    for split, hidden in enumerate(held_out_splits(X, n_splits)):
        for rank in ranks:
            start = time.perf_counter()
            ours[rank].append(gibbs_ntf_rmse(X, hidden, rank, n_warmup, n_draws, seed=split))
            middle = time.perf_counter()
            theirs[rank].append(tensorly_rmse(X, hidden, rank, seed=split, n_iter_max=tensorly_iter))
            line(workload="ntf-heldout", data=name, split=split, rank=rank, gibbs_ntf=ours[rank][-1],
                 tensorly=theirs[rank][-1], gibbs_ntf_seconds=middle - start,
                 tensorly_seconds=time.perf_counter() - middle)
    table = {r: (float(np.mean(ours[r])), float(np.std(ours[r]) / np.sqrt(n_splits)),
                 float(np.mean(theirs[r])), float(np.std(theirs[r]) / np.sqrt(n_splits))) for r in ranks}
    for r, row in table.items():
        line(workload="ntf-heldout", data=name, rank=r, gibbs_ntf_mean=row[0], gibbs_ntf_se=row[1],
             tensorly_mean=row[2], tensorly_se=row[3])
    return table


def heldout(n_splits=10, n_warmup=500, n_draws=500):
    """Held-out RMSE by rank: the synthetic table (ranks 1-8) and the two real tensors."""
    from tensorly.datasets import load_IL2data, load_kinetic

    summary = {}
    X = synthetic_gaussian_cp()
    table = rmse_table("synthetic 20x15x10 rank 3", X, list(range(1, 9)), n_splits, n_warmup, n_draws)
    summary["synthetic: GibbsNTF RMSE rank 8 / rank 3"] = table[8][0] / table[3][0]
    summary["synthetic: TensorLy RMSE rank 8 / rank 3"] = table[8][2] / table[3][2]
    # The real tensors in units of their root mean square (GibbsNTF's default
    # priors are in such units; TensorLy's fit is scale-equivariant), so the
    # RMSEs are fractions of the data's RMS. kinetic (460,800 entries) gets one
    # split, ranks 1-4 and at most 500 TensorLy iterations: each fit there
    # takes minutes for either method.
    for name, loader, splits, ranks, tensorly_iter in [
            ("IL2", load_IL2data, n_splits, range(1, 7), 2000),
            ("kinetic", load_kinetic, 1, range(1, 5), 500)]:
        tensor = np.asarray(loader().tensor, dtype=float)
        tensor /= np.sqrt(np.nanmean(tensor**2))
        table = rmse_table(name, tensor, list(ranks), splits, n_warmup, n_draws, tensorly_iter)
        best = min(table, key=lambda r: table[r][0])
        summary[f"{name}: best GibbsNTF RMSE / best TensorLy RMSE"] = (
            table[best][0] / min(row[2] for row in table.values()))
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10)
    args = parser.parse_args()
    start = time.perf_counter()
    summary = heldout(args.splits)
    write_json("gibbs_ntf_heldout", summary=summary,
               start=start)


if __name__ == "__main__":
    main()
