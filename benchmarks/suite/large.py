"""Poisson NMF at 20000 x 10000, rank 50 (2·10^8 entries): whole fit against
scikit-learn's KL NMF at their defaults."""

from __future__ import annotations

from . import _workloads as workloads
from ._contenders import ours_whole_fit, sklearn_kl_nmf
from ._protocol import Case
from ._quality import nmf_quality

TITLE = "Poisson NMF at 2·10^8 entries against scikit-learn"
ABOUT = ("BayesianNMF at its defaults against scikit-learn's `NMF(beta_loss='kullback-leibler', "
         "solver='mu')` at its defaults on a dense 20000 x 10000 count matrix of rank 50, one "
         "timed fit each (the warm-up runs on a 2000 x 1000 matrix of the same rank: a data "
         "set this size is mapped afresh at every call). Quality: the generalised KL "
         "divergence and the Poisson log-likelihood per entry at each fit's mean W H.")

_QUALITY = nmf_quality("generalised_kl", "loglik_per_entry")


def cases(quick):
    from sklearn_pltf import BayesianNMF

    rank = 5 if quick else 50
    shape, warmup = ((600, 300), (200, 100)) if quick else ((20000, 10000), (2000, 1000))
    return [
        Case(f"dense {shape[0]} x {shape[1]}, rank {rank}",
             lambda: workloads.dense_poisson_nmf(*shape, rank=rank),
             [ours_whole_fit(BayesianNMF, rank), sklearn_kl_nmf(rank)],
             quality=_QUALITY, repeats=1,
             warmup_setup=lambda: workloads.dense_poisson_nmf(*warmup, rank=rank)),
    ]
