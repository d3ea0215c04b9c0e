"""The benchmark suite: one module per workload family (``FAMILIES``), each
with ``TITLE``, ``ABOUT`` and ``cases(quick)``; ``benchmarks/run.py`` runs
them and ``benchmarks/make_page.py`` writes the page from their results."""

FAMILIES = ("nmf", "cp", "oslo", "compound", "scaling", "large")
