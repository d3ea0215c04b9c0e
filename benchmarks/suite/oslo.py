"""The Oslo city-bike trips (tensorly-viz): a real five-way count tensor."""

from __future__ import annotations

from . import _workloads as workloads
from ._contenders import ours_whole_fit, tensorly_nn_parafac
from ._protocol import Case
from .cp import _quality

TITLE = "Oslo city-bike trips against TensorLy"
ABOUT = ("Trips ending at 270 stations x 2 years x 12 months x 7 weekdays x 24 hours "
         "(`tlviz.data.load_oslo_city_bike`, 48% non-zero), rank 10: PoissonCP at its "
         "defaults against TensorLy's `non_negative_parafac` at its defaults; quality: the "
         "Poisson log-likelihood per entry at each fit's mean.")


def cases(quick):
    from sklearn_pltf import PoissonCP

    def data():
        X = workloads.oslo_city_bike()
        return X[:40] if quick else X

    return [Case("270 x 2 x 12 x 7 x 24, rank 10" if not quick else "40 stations, rank 10",
                 data, [ours_whole_fit(PoissonCP, 10), tensorly_nn_parafac(10)],
                 quality=_quality, repeats=1 if quick else 2)]

