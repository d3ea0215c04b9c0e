"""VB against EM when 40, 60 and 80% of the entries are missing.

Run from the repository's root::

    python doc/validation/vb_em_missing.py

The experiment of the PLTF-VB paper (Ermiş & Cemgil 2014) and of the gallery
example ``plot_link_prediction_vb_em.py``, over five random splits (seeds
0-4): every entry of Nations (14 x 14 x 55) and Kinships (104 x 104 x 26)
is hidden with probability 0.4, 0.6 or 0.8; ``PoissonCP(10)`` and
``TuckerVB`` with a 5 x 5 x 5 core, 200 iterations, fitted to the rest by

- VB (the posterior mean),
- EM under VB's prior (the posterior mode: prior shape 1, the rate that
  makes the prior mean of every X̂ entry the data's mean),
- EM under a flat prior (maximum likelihood: prior rate 1e-9), the paper's
  baseline,

and scored by AUC-ROC (and AUC-PR) of the hidden entries.

Writes ``doc/_static/validation/vb_em_missing.png`` and ``vb_em_missing.json``.
"""

from _setup import OUT, save_figure  # first: one core and the Agg backend, before numpy

import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_pltf import PoissonCP, TuckerVB  # noqa: E402
from sklearn_pltf.datasets import load_kinships, load_nations  # noqa: E402
from sklearn_pltf.metrics import link_prediction_auc  # noqa: E402

SHARES = (0.4, 0.6, 0.8)
METHODS = {"vb": "VB", "em": "EM, VB's prior", "ml": "EM, flat prior (ML)"}
N_SPLITS = 5
FLAT_PRIOR_RATE = 1e-9


def model(kind, method, X):
    """CP rank 10 or Tucker 5 x 5 x 5, 200 iterations; prior mean of X̂ = the data's mean."""
    estimator, size, n_latent, n_factors = ((PoissonCP, 10, 10, 3) if kind == "cp"
                                            else (TuckerVB, 5, 5**3, 4))
    rate = FLAT_PRIOR_RATE if method == "ml" else 1.0 / (X.mean() / n_latent) ** (1 / n_factors)
    return estimator(size, method="em" if method == "ml" else method, prior_shape=1.0,
                     prior_rate=rate, max_iter=200, random_state=0)


def plot(results, path):
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for row, name in enumerate(("nations", "kinships")):
        for col, kind in enumerate(("cp", "tucker")):
            ax = axes[row, col]
            for (method, label), offset, marker in zip(METHODS.items(), (-1.5, 0, 1.5), "osD"):
                mean = [results[name][kind][f"{s:.1f}"][method]["roc_auc_mean"] for s in SHARES]
                sd = [results[name][kind][f"{s:.1f}"][method]["roc_auc_sd"] for s in SHARES]
                ax.errorbar(100 * np.array(SHARES) + offset, mean, yerr=sd, fmt=marker + "-",
                            capsize=3, ms=5, label=label)
            title = {"cp": "CP, rank 10", "tucker": "Tucker, core 5 x 5 x 5"}[kind]
            ax.set_title(f"{name.capitalize()}: {title}", fontsize=10)
            ax.set_xticks([40, 60, 80])
            if col == 0:
                ax.set_ylabel(f"AUC-ROC, mean ± SD of {N_SPLITS} splits")
            if row == 1:
                ax.set_xlabel("entries missing (%)")
    axes[0, 0].legend(fontsize=8, loc="lower left")
    save_figure(fig, path)


def main():
    start = time.perf_counter()
    results = {}
    for name, loader in (("nations", load_nations), ("kinships", load_kinships)):
        X = loader().data
        results[name] = {}
        for kind in ("cp", "tucker"):
            results[name][kind] = {}
            for share in SHARES:
                splits = [np.random.default_rng(seed).random(X.shape) < share
                          for seed in range(N_SPLITS)]
                cell = {}
                for method in METHODS:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # 200 iterations may stop EM early
                        aucs = np.array([link_prediction_auc(model(kind, method, X).fit(X, mask=~held),
                                                             X, np.argwhere(held))
                                         for held in splits])
                    cell[method] = {"roc_auc": aucs[:, 0].round(4).tolist(),
                                    "pr_auc": aucs[:, 1].round(4).tolist(),
                                    "roc_auc_mean": round(float(aucs[:, 0].mean()), 4),
                                    "roc_auc_sd": round(float(aucs[:, 0].std(ddof=1)), 4),
                                    "pr_auc_mean": round(float(aucs[:, 1].mean()), 4)}
                for baseline in ("em", "ml"):
                    cell[f"splits_vb_above_{baseline}"] = int(np.sum(
                        np.array(cell["vb"]["roc_auc"]) > np.array(cell[baseline]["roc_auc"])))
                results[name][kind][f"{share:.1f}"] = cell
                print(name, kind, share, {m: cell[m]["roc_auc_mean"] for m in METHODS},
                      "VB above EM / ML on", cell["splits_vb_above_em"], cell["splits_vb_above_ml"],
                      "splits", flush=True)
    plot(results, OUT / "vb_em_missing.png")
    seconds = time.perf_counter() - start
    with open(OUT / "vb_em_missing.json", "w") as f:
        json.dump({"shares": SHARES, "n_splits": N_SPLITS, "results": results,
                   "wall_seconds": round(seconds, 1)}, f, indent=1)
    print(f"wall time {seconds:.1f} s")


if __name__ == "__main__":
    main()
