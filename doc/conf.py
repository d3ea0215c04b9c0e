"""Sphinx configuration for sklearn-pltf."""

import inspect

import sklearn_pltf

project = "sklearn-pltf"
author = "the sklearn-pltf developers"
copyright = "2026, " + author
release = sklearn_pltf.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["custom.css"]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "sg_execution_times.rst", "_inventories"]
html_theme = "pydata_sphinx_theme"
html_title = "sklearn-pltf"

# Links to the projects the package builds on, from inventories kept in
# _inventories/ (make_inventories.py writes them), so the build needs no network.
intersphinx_mapping = {
    name: (url, f"_inventories/{name}.inv") for name, url in {
        "sklearn": "https://scikit-learn.org/stable/",
        "numpy": "https://numpy.org/doc/stable/",
        "scipy": "https://docs.scipy.org/doc/scipy/",
        "arviz": "https://python.arviz.org/en/stable/",
        "tensorly": "https://tensorly.org/stable/",
    }.items()
}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "doc_module": ("sklearn_pltf",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"sklearn_pltf": None},
    "write_computation_times": False,
}


def _own_methods():
    """``{class's full name: its public methods defined in this package}``
    (each gets a page); methods inherited from scikit-learn are listed on
    the class's page with links to scikit-learn's."""
    own, inherited = {}, {}
    for name in sklearn_pltf.__all__:
        cls = getattr(sklearn_pltf, name)
        if not inspect.isclass(cls):
            continue
        methods = [m for m, value in inspect.getmembers(cls, callable)
                   if not m.startswith("_") and not inspect.isclass(value)]
        mine = [m for m in methods
                if getattr(getattr(cls, m), "__module__", "").startswith("sklearn_pltf")]
        own[f"sklearn_pltf.{name}"] = mine
        inherited[f"sklearn_pltf.{name}"] = [m for m in methods if m not in mine]
    return own, inherited


_OWN, _INHERITED = _own_methods()
autosummary_context = {"own_methods": _OWN, "inherited_methods": _INHERITED}
