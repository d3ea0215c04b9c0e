"""Inference algorithms: one module per algorithm, each a State, an Info, ``init``
and a pure ``step``. No module here imports another algorithm or scikit-learn."""
