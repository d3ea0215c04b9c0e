"""Float32 input against float64 input: the same whole fits, ours only."""

from __future__ import annotations

import numpy as np

from . import _workloads as workloads
from ._contenders import ours_whole_fit
from ._protocol import Case, Contender
from ._quality import nmf_quality

TITLE = "Float32 input"
ABOUT = ("The same whole fit at the defaults (VB with SQUAREM to `tol=0.1` nats, then the "
         "fold-in) of the data as float64 and as float32 (cast before the timing): float32 runs "
         "the data-sized work in float32 and its bound in float64 (the user guide's \"Float32 "
         "input\"). Each one's time over float64's; quality: the bound per entry (float32's "
         "within 1e-6 of float64's, relative, is asked) and the Poisson log-likelihood per "
         "entry of the fitted mean.")


def _in_float32(contender):
    """``contender`` fitting the data cast to float32, the cast kept
    across repeats (outside the timing)."""
    kept = {}

    def run(X, **kwargs):
        if kept.get("of") is not X:
            kept.update({"of": X, "cast": X.astype(np.float32)})
        return contender.run(kept["cast"], **kwargs)
    return Contender(contender.name + " (float32 input)", run, ours=True)


def _quality(X, result):
    quality = nmf_quality("loglik_per_entry")(X, result) if X.ndim == 2 else {}
    return {"bound_per_entry": float(result.lower_bound_) / X.size, **quality}


def cases(quick):
    from sklearn_pltf import BayesianNMF, PoissonCP

    rank = 5 if quick else 20
    nmf = (300, 200) if quick else (2000, 1000)
    size = 40 if quick else 200
    cases = []
    for mean in (2.5, 20.0):
        double = ours_whole_fit(BayesianNMF, rank)
        cases.append(Case(
            f"dense {nmf[0]} x {nmf[1]}, rank {rank}, counts of mean {mean:g}",
            lambda mean=mean: workloads.dense_poisson_nmf(*nmf, rank=rank, mean=mean),
            [double, _in_float32(double)], quality=_quality, repeats=1 if quick else 3,
            baseline=double.name))
    double = ours_whole_fit(PoissonCP, rank)
    cases.append(Case(f"dense CP {size}^3, rank {rank}",
                      lambda: workloads.dense_poisson_cp(size, rank),
                      [double, _in_float32(double)], quality=_quality,
                      repeats=1 if quick else 3, baseline=double.name))
    return cases
