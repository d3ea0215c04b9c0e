"""The benchmark suite: one module per workload family (``FAMILIES``), each
with ``TITLE``, ``ABOUT`` and ``cases(quick)``; ``benchmarks/run.py`` runs
them and ``benchmarks/make_page.py`` writes the page from their results.
The GPU's measurements have their own entry point, ``benchmarks/run_gpu.py``."""

FAMILIES = ("nmf", "cp", "precision", "oslo", "compound", "scaling", "large", "binary",
            "relations", "coupled", "samplers", "online", "threads", "neighbour", "dask")
