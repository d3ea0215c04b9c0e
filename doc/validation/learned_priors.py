"""Learned priors on Nations: AUC-PR of RESCAL at the defaults and with
hierarchical rates and learned shapes, and the bound each reaches.

Run from the repository's root::

    python doc/validation/learned_priors.py

Nations (14 countries x 14 countries x 55 relations, binary) in 10 folds over
the entries off the diagonal (``EntryKFold(10, random_state=0)``, the
diagonal missing in every fit), the issue's protocol:
``BayesianRESCAL(10, likelihood="bernoulli", ard=True, random_state=0)``
with nothing else set, with ``prior_rate="hierarchical"``, with
``prior_shape="auto"`` and with both, each from EM's mode (the default
start), and the defaults and both learned together from a random start
and from both starts (``n_init=2``, the higher bound kept); one fit per
fold. Also the bound of
each on the whole tensor (the evidence's own verdict on the four priors).

Writes ``doc/_static/validation/learned_priors.json``.
"""

from _setup import OUT  # first: one core and the Agg backend, before numpy

import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from sklearn_pltf import BayesianRESCAL  # noqa: E402
from sklearn_pltf.datasets import load_nations, off_diagonal_mask  # noqa: E402
from sklearn_pltf.model_selection import EntryKFold, cross_validate_entries  # noqa: E402

N_SPLITS = 10
SETTINGS = {
    "defaults": {},
    "hierarchical rates": dict(prior_rate="hierarchical"),
    "learned shapes": dict(prior_shape="auto"),
    "hierarchical rates and learned shapes": dict(prior_rate="hierarchical", prior_shape="auto"),
    # The start: at random instead of around EM's mode, and both with the
    # higher bound kept.
    "defaults, random start": dict(init="random"),
    "defaults, both starts": dict(n_init=2),
    "hierarchical rates and learned shapes, random start": dict(
        prior_rate="hierarchical", prior_shape="auto", init="random"),
    "hierarchical rates and learned shapes, both starts": dict(
        prior_rate="hierarchical", prior_shape="auto", n_init=2),
}


def main():
    X = np.asarray(load_nations().data)
    mask = off_diagonal_mask(X.shape)
    results = {}
    for name, settings in SETTINGS.items():
        estimator = BayesianRESCAL(10, likelihood="bernoulli", ard=True, random_state=0,
                                   **settings)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores = cross_validate_entries(estimator, X, cv=EntryKFold(N_SPLITS, random_state=0),
                                            mask=mask)
            whole = estimator.fit(X, mask=mask)
        results[name] = {
            "pr_auc": scores["test_pr_auc"].tolist(),
            "roc_auc": scores["test_roc_auc"].tolist(),
            "mean_pr_auc": float(np.mean(scores["test_pr_auc"])),
            "mean_roc_auc": float(np.mean(scores["test_roc_auc"])),
            "seconds": time.perf_counter() - start,
            "bound_on_the_whole_tensor": float(whole.lower_bound_),
            "learned_shapes": list(getattr(whole, "prior_shape_", ()) or ()),
        }
        print(f"{name:40s} AUC-PR {results[name]['mean_pr_auc']:.3f} "
              f"bound {results[name]['bound_on_the_whole_tensor']:.1f} "
              f"({results[name]['seconds']:.0f} s)", flush=True)
    (OUT / "learned_priors.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
