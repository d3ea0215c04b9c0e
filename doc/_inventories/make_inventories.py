"""Write the Sphinx inventories (``objects.inv`` format) this documentation
links to, so ``sphinx-build`` needs no network: scikit-learn, NumPy, SciPy,
ArviZ and TensorLy names, each at the page its project's documentation
gives it. Run from this folder after upgrading those packages:
``python make_inventories.py``."""

import importlib
import inspect
import pkgutil
import zlib

#: project: (inventory file, package, modules walked, page of a name)
PROJECTS = {
    "sklearn": ("sklearn", ["sklearn"],
                lambda name: f"modules/generated/{name}.html#{name}"),
    "numpy": ("numpy", ["numpy"],
              lambda name: f"reference/generated/{name}.html#{name}"),
    "scipy": ("scipy", ["scipy.sparse", "scipy.sparse.linalg", "scipy.special", "scipy.stats",
                        "scipy.optimize"],
              lambda name: f"reference/generated/{name}.html#{name}"),
    "arviz": ("arviz", ["arviz"], lambda name: f"api/generated/{name}.html#{name}"),
    "tensorly": ("tensorly", ["tensorly", "tensorly.cp_tensor", "tensorly.tucker_tensor"],
                 lambda name: f"modules/generated/{name}.html#{name}"),
}

#: Names whose page does not follow the project's pattern.
SPECIAL = {
    "numpy": {"numpy.random.Generator": "reference/random/generator.html#numpy.random.Generator",
              "numpy.random.RandomState": "reference/random/legacy.html#numpy.random.RandomState"},
}


def public_objects(module_name):
    """``(dotted name, role)`` of the public classes and functions of a
    module (its ``__all__``, else its public names) and, for scikit-learn,
    of every public submodule."""
    module = importlib.import_module(module_name)
    modules = [module]
    if module_name == "sklearn":
        for info in pkgutil.iter_modules(module.__path__, "sklearn."):
            if not info.name.split(".")[-1].startswith("_") and "tests" not in info.name:
                try:
                    modules.append(importlib.import_module(info.name))
                except ImportError:
                    continue
    for mod in modules:
        names = getattr(mod, "__all__", [n for n in dir(mod) if not n.startswith("_")])
        for name in names:
            try:
                obj = getattr(mod, name, None)
            except ImportError:  # scikit-learn's experimental names
                continue
            if inspect.isclass(obj):
                yield f"{mod.__name__}.{name}", "py:class"
                for method, value in vars(obj).items():
                    if not method.startswith("_") and callable(value):
                        yield f"{mod.__name__}.{name}.{method}", "py:method"
            elif callable(obj):
                yield f"{mod.__name__}.{name}", "py:function"


def write_inventory(project, package, modules, page):
    version = importlib.import_module(package).__version__
    lines, seen = [], set()
    for module in modules:
        for name, role in public_objects(module):
            if name in seen:
                continue
            seen.add(name)
            uri = SPECIAL.get(project, {}).get(name) or page(name.rsplit(".", 1)[0]
                                                              if role == "py:method" else name)
            if role == "py:method":
                uri = uri.split("#")[0] + "#" + name
            lines.append(f"{name} {role} 1 {uri} -")
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: {version}\n"
              "# The remainder of this file is compressed using zlib.\n")
    with open(f"{project}.inv", "wb") as f:
        f.write(header.encode())
        f.write(zlib.compress("\n".join(sorted(lines)).encode() + b"\n"))
    print(f"{project}.inv: {len(lines)} names")


if __name__ == "__main__":
    for project, spec in PROJECTS.items():
        write_inventory(project, *spec)
