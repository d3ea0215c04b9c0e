"""The inference methods and what each supports: one table.

Every estimator consults :data:`METHODS` (and :data:`EVIDENCE`) for what a
``method`` can do, instead of comparing ``method`` with strings: which
evidence estimators it offers and which one ``evidence="auto"`` picks, whether
it learns the priors, takes a start, runs on array-API or Dask input, streams
(``partial_fit``), folds new samples in by VB or EM, and in which model
families (a single Poisson–Gamma tensor, a tied factor, coupled tensors, the
Gaussian family, the allocation model) it is built. An unsupported
combination gets its one error from here (:func:`method_in`,
:func:`require`, :func:`choose_evidence`), and the user guide's capability
table is rendered from the same rows (:func:`capability_table`).

Adding a method is a row here and its kernel in ``inference/``: the
estimators' ``method`` constraints read the table when they check
(:class:`FamilyMethods`), and a VB- or EM-like method of the Poisson–Gamma
family names its kernel in its row (:attr:`Method.kernel`).
"""

from __future__ import annotations

import importlib
from collections.abc import Set
from dataclasses import dataclass

__all__ = ["EVIDENCE", "FAMILIES", "METHODS", "Evidence", "FamilyMethods", "Method",
           "capability_table", "choose_evidence", "method_in", "method_names",
           "offered_evidence", "optimizer_kernel", "require"]

#: The model families, by the name the table uses: how errors name them, and
#: the estimators that fit them (the capability table's last column).
FAMILIES = {
    "poisson": ("a Poisson–Gamma model of one tensor",
                "BayesianNMF, PoissonCP, TuckerVB, PLTF"),
    "tied": ("a model with a tied factor", "BayesianRESCAL, PLTF with tied_factors"),
    "coupled": ("coupled tensors (CoupledPLTF)", "CoupledPLTF"),
    "gaussian": ("the Gaussian family (GibbsNTF, GaussianPLTF)", "GibbsNTF, GaussianPLTF"),
    "allocation": ("the Bayesian allocation model (AllocationSMC)", "AllocationSMC"),
}


@dataclass(frozen=True)
class Evidence:
    """An estimator of log p(X): what it is (a predicate, for messages), the
    families it is built for, whether it needs dense data, and whether it
    runs after a fit by any method of those families (from the fitted
    posterior) rather than from the method's own output."""

    name: str
    summary: str
    families: frozenset
    dense_only: bool = False
    after_any_fit: bool = False


@dataclass(frozen=True)
class Method:
    """An inference method and what it supports.

    Attributes
    ----------
    name, summary : str
        The ``method`` value and what it is.
    sampler : bool
        Draws from the posterior (chains), else optimises (VB's bound, EM's
        log joint) to the stopping rule.
    families : frozenset of str
        The model families (:data:`FAMILIES`) it is built for.
    evidence : tuple of str
        The evidence estimators of its own output, in the order
        ``evidence="auto"`` tries them (the first the family and the data
        allow); an estimator that runs after any fit
        (:attr:`Evidence.after_any_fit`) is offered too.
    learns_priors : bool
        Learns prior rates, shapes and relevances (ARD) by the evidence.
    takes_start : bool
        Starts from ``init`` or ``warm_start`` (a sampler forgets its start
        in the warm-up).
    array_api, streams : bool
        Fits array-API input where it lives; minibatches by ``partial_fit``.
    float32 : bool
        Fits dense float32 NumPy data in float32 on the CPU (the data-sized
        work: X̂, the ratios, the first matrix product of each update; the
        sums the bound reads stay float64), as scikit-learn's NMF keeps
        float32; other input, and other methods, run in float64.
    distributed : str
        How it fits a Dask array on its cluster: ``"whole"`` (every sweep
        over all the blocks), ``"blocks"`` (parallel blocks that share no
        factor rows, ``n_blocks``) or ``""`` (not: the data in one process).
    minibatch : bool
        Steps on minibatches of the observed entries (``batch_size``) by
        the gradient of the log posterior, rather than sweeps of
        conditional draws over all the data.
    per_token : frozenset of str
        The families where it draws a uniform per count (token) in each
        sweep: integer counts held in memory.
    mode : bool
        Finds the posterior mode (a point, no posterior spread): prior
        shapes below 1 leave it at the boundary, and AIS after it starts
        from the prior.
    delete_moves : bool
        Tries delete moves where it converges on one tensor without a tie
        (:mod:`._moves`; its kernel's step and objective at the rates
        given): VB, whose bound frees a redundant component's cost.
    fold_in : str
        How new samples are folded in after a fit by it: ``"vb"`` or
        ``"em"`` (the method whose :attr:`kernel` folds them in).
    kernel : str or object or None
        An optimiser's kernel on the Poisson–Gamma model of one tensor or
        of coupled tensors (an :class:`~._driver.OptimizerKernel`): the
        module's dotted name (imported when first asked for, so the table
        imports no algorithm) or the kernel itself; None for the samplers.
        A family with kernels of its own keeps them in its folder, by
        method name (e.g. :data:`.relational.rescal.KERNELS`).
    """

    name: str
    summary: str
    sampler: bool
    families: frozenset
    evidence: tuple = ()
    learns_priors: bool = False
    takes_start: bool = False
    array_api: bool = False
    float32: bool = False
    distributed: str = ""
    streams: bool = False
    minibatch: bool = False
    per_token: frozenset = frozenset()
    mode: bool = False
    delete_moves: bool = False
    fold_in: str = "vb"
    kernel: object = None


_POISSON = frozenset({"poisson", "tied", "coupled"})

EVIDENCE = {e.name: e for e in (
    Evidence("vb", "is the variational bound", _POISSON | {"allocation"}),
    Evidence("chib", "is estimated from Gibbs runs (Chib's method)", _POISSON | {"gaussian"}),
    Evidence("sti", "integrates over SGLD runs at a ladder of temperatures (STI)",
             frozenset({"poisson", "tied"})),
    Evidence("ais", "is annealed importance sampling (AIS)", frozenset({"poisson", "gaussian"}),
             dense_only=True, after_any_fit=True),
    Evidence("smc", "is sequential Monte Carlo over the allocations", frozenset({"allocation"})),
)}

METHODS = {m.name: m for m in (
    Method("vb", "variational Bayes", False, _POISSON | {"allocation"}, ("vb",),
           learns_priors=True, takes_start=True, array_api=True, float32=True,
           distributed="whole", streams=True, delete_moves=True,
           kernel="sklearn_pltf.inference.vb"),
    Method("em", "EM, the posterior mode", False, _POISSON, takes_start=True, array_api=True,
           float32=True, distributed="whole", mode=True, fold_in="em",
           kernel="sklearn_pltf.inference.em"),
    Method("gibbs", "block Gibbs sampling", True, _POISSON | {"gaussian"}, ("ais", "chib"),
           per_token=_POISSON),
    Method("sada", "SADA: Gibbs on margins of the allocations", True, _POISSON,
           ("ais", "chib"), per_token=frozenset({"tied"})),
    Method("sgld", "stochastic gradient Langevin dynamics", True,
           frozenset({"poisson", "tied"}), ("sti",), distributed="blocks", minibatch=True),
    Method("hmc", "Hamiltonian Monte Carlo", True, frozenset({"gaussian"}), ("ais", "chib")),
    Method("smc", "sequential Monte Carlo", True, frozenset({"allocation"}), ("smc",)),
)}


def method_names(family):
    """The ``method`` values built for ``family``, in the table's order."""
    return tuple(name for name, m in METHODS.items() if family in m.families)


class FamilyMethods(Set):
    """The ``method`` values built for ``family``, read from :data:`METHODS`
    at every look: what an estimator's ``method`` constraint holds
    (``StrOptions(FamilyMethods(family))``), so a row added to the table is
    a method every estimator of the family takes."""

    def __init__(self, family):
        self.family = family

    @classmethod
    def _from_iterable(cls, names):  # the set operations' results: plain sets
        return frozenset(names)

    def __contains__(self, name):
        method = METHODS.get(name)
        return method is not None and self.family in method.families

    def __iter__(self):
        return iter(method_names(self.family))

    def __len__(self):
        return len(method_names(self.family))


def optimizer_kernel(name):
    """The kernel of optimiser ``name`` (:attr:`Method.kernel`)."""
    kernel = METHODS[name].kernel
    return importlib.import_module(kernel) if isinstance(kernel, str) else kernel


def _quoted(names, joiner="or"):
    names = [repr(n) for n in names]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {joiner} {names[-1]}"


def method_in(name, family):
    """The :class:`Method` ``name`` of ``family``, or a ValueError naming
    the methods built for it."""
    method = METHODS.get(name)
    if method is None or family not in method.families:
        raise ValueError(f"method={name!r} is not built for {FAMILIES[family][0]}: use "
                         f"method={_quoted(method_names(family))}.")
    return method


def require(name, family, capability, needs):
    """A ValueError unless method ``name`` of ``family`` has ``capability``
    (a :class:`Method` attribute): ``needs``, what asks for it ending in its
    verb (``"partial_fit is stochastic variational inference: it needs"``),
    then the methods that have it."""
    if getattr(method_in(name, family), capability):
        return
    able = [n for n in method_names(family) if getattr(METHODS[n], capability)]
    raise ValueError(f"{needs} method={_quoted(able)}, got {name!r}.")


def _own_evidence(name, family):
    """The evidence estimators of method ``name``'s own output in ``family``."""
    return tuple(e for e in method_in(name, family).evidence if family in EVIDENCE[e].families)


def offered_evidence(name, family):
    """The evidence estimators a fit by method ``name`` of ``family`` can
    give: its own, in ``"auto"``'s order, then those that run after any fit."""
    own = _own_evidence(name, family)
    return own + tuple(e for e, spec in EVIDENCE.items()
                       if spec.after_any_fit and family in spec.families and e not in own)


def choose_evidence(name, asked, family, *, sparse=False, refused=None, passed_over=()):
    """The evidence estimator of a fit by method ``name`` of ``family``.

    Parameters
    ----------
    asked : str or None
        The ``evidence`` parameter: an estimator's name, ``"auto"`` (the
        first the method offers that the family and the data allow) or None.
    sparse : bool
        Whether the data are sparse (a dense-only estimator is then refused).
    refused : dict, default=None
        ``{estimator: reason}``: what this fit's model cannot use, and why
        (the reason is the error when asked for; ``"auto"`` passes over it).
    passed_over : tuple of str
        What ``"auto"`` passes over although it may be asked for (an
        estimator this model makes too costly to be a default).

    Returns
    -------
    str or None
    """
    offered = offered_evidence(name, family)
    refused = dict(refused or {})
    for e in EVIDENCE.values():
        if e.dense_only and sparse:
            others = [o for o in offered if not EVIDENCE[o].dense_only]
            refused.setdefault(e.name, f"evidence={e.name!r} runs on dense data for now" + (
                f"; for sparse data use evidence={_quoted(others)}." if others else "."))
    if asked is None:
        return None
    if asked == "auto":
        return next((e for e in _own_evidence(name, family)
                     if e not in refused and e not in passed_over), None)
    estimator = EVIDENCE[asked]
    if family not in estimator.families:
        usable = [e for e in EVIDENCE if family in EVIDENCE[e].families]
        raise ValueError(f"evidence={asked!r} is not built for {FAMILIES[family][0]}: use "
                         f"evidence={_quoted(usable)}.")
    if asked not in offered:
        able = [n for n in method_names(family) if asked in offered_evidence(n, family)]
        raise ValueError(f"evidence={asked!r} {estimator.summary}: it needs "
                         f"method={_quoted(able)}, got {name!r}.")
    if asked in refused:
        raise ValueError(refused[asked])
    return asked


def _estimators(method):
    """The estimators that offer ``method``, family by family."""
    names = [FAMILIES[f][1] for f in FAMILIES if f in method.families]
    return "; ".join(dict.fromkeys(names))


def _other_evidence(method):
    """What else a fit by ``method`` can give, in any of its families."""
    return [e for f in FAMILIES if f in method.families for e in offered_evidence(method.name, f)
            if e not in method.evidence]


_COLUMNS = (
    ("method", lambda m: f"``{m.name!r}``".replace("'", '"')),
    ("what it is", lambda m: m.summary),
    ('``evidence="auto"``', lambda m: f"``{m.evidence[0]}``" if m.evidence else "none"),
    ("other evidence", lambda m: ", ".join(f"``{e}``" for e in dict.fromkeys(
        [*m.evidence[1:], *_other_evidence(m)]))),
    ("learned priors", lambda m: "yes" if m.learns_priors else ""),
    ("init", lambda m: "yes" if m.takes_start else ""),
    ("GPU (array API)", lambda m: "yes" if m.array_api else ""),
    ("float32 (one dense tensor)", lambda m: "yes" if m.float32 else ""),
    ("Dask", lambda m: {"whole": "yes", "blocks": "``n_blocks``"}.get(m.distributed, "")),
    ("partial_fit", lambda m: "yes" if m.streams else ""),
    ("tie", lambda m: "yes" if "tied" in m.families else ""),
    ("coupled", lambda m: "yes" if "coupled" in m.families else ""),
    ("estimators", _estimators),
)


def capability_table():
    """The capability table of the user guide, as reStructuredText (a
    list-table rendered from :data:`METHODS`)."""
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [[title for title, _ in _COLUMNS]] + [[cell(m) for _, cell in _COLUMNS]
                                                     for m in METHODS.values()]:
        lines += [f"   * - {row[0]}"] + [f"     - {value}".rstrip() for value in row[1:]]
    return "\n".join(lines) + "\n"
