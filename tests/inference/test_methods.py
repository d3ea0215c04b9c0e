"""The table of inference methods: the one place a method's capabilities are
read from, the evidence it picks, the errors of what it lacks, and the user
guide's capability table rendered from it."""

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from sklearn.utils._param_validation import InvalidParameterError

from sklearn_pltf import (PLTF, AllocationSMC, BayesianNMF, BayesianRESCAL, CoupledPLTF, GibbsNTF,
                          PoissonCP)
from sklearn_pltf.inference import vb
from sklearn_pltf.inference._methods import (EVIDENCE, FAMILIES, METHODS, capability_table,
                                             choose_evidence, method_names, offered_evidence,
                                             require)

ROOT = Path(__file__).resolve().parents[2]
ESTIMATORS = ROOT / "sklearn_pltf" / "estimators"


def test_the_user_guide_table_is_the_generated_one():
    """doc/methods_table.inc is capability_table()'s output: regenerate it with
    ``python -c "from sklearn_pltf.inference._methods import capability_table;
    open('doc/methods_table.inc', 'w').write(capability_table())"``."""
    shipped = (ROOT / "doc" / "methods_table.inc").read_text()
    assert shipped == capability_table()
    assert "methods_table.inc" in (ROOT / "doc" / "fitting.rst").read_text()
    for name in METHODS:
        assert f'``"{name}"``' in shipped


@pytest.mark.parametrize("family, method, sparse, expected", [
    ("poisson", "vb", False, "vb"), ("poisson", "em", False, None),
    ("poisson", "gibbs", False, "ais"), ("poisson", "gibbs", True, "chib"),
    ("poisson", "sada", True, "chib"), ("poisson", "sgld", True, "sti"),
    ("tied", "gibbs", False, "chib"), ("tied", "sgld", False, "sti"),
    ("coupled", "sada", False, "chib"), ("coupled", "vb", False, "vb"),
    ("gaussian", "hmc", False, "ais"), ("gaussian", "gibbs", True, "chib"),
    ("allocation", "smc", False, "smc"), ("allocation", "vb", False, "vb"),
])
def test_auto_evidence_is_the_first_the_family_and_data_allow(family, method, sparse,
                                                             expected):
    assert choose_evidence(method, "auto", family, sparse=sparse) == expected
    assert choose_evidence(method, None, family, sparse=sparse) is None


def test_auto_passes_over_what_the_model_makes_too_costly():
    assert choose_evidence("gibbs", "auto", "poisson", passed_over=("ais",)) == "chib"
    # ... which may still be asked for.
    assert choose_evidence("gibbs", "ais", "poisson", passed_over=("ais",)) == "ais"


@pytest.mark.parametrize("family, method, asked, message", [
    ("poisson", "em", "vb", r"evidence='vb' is the variational bound: it needs method='vb', "
                            r"got 'em'"),
    ("poisson", "sgld", "chib", r"it needs method='gibbs' or 'sada', got 'sgld'"),
    ("poisson", "vb", "sti", r"it needs method='sgld', got 'vb'"),
    ("tied", "gibbs", "ais", "not built for a model with a tied factor"),
    ("coupled", "vb", "sti", r"not built for coupled tensors.*use evidence='vb' or 'chib'"),
    ("poisson", "gibbs", "ais", "runs on dense data"),
])
def test_an_evidence_the_method_cannot_give_is_one_clear_error(family, method, asked,
                                                               message):
    with pytest.raises(ValueError, match=message):
        choose_evidence(method, asked, family, sparse=True)


def test_a_method_outside_its_family_and_a_missing_capability_are_refused():
    with pytest.raises(ValueError, match=r"method='hmc' is not built for coupled tensors.*"
                                         r"'vb', 'em', 'gibbs' or 'sada'"):
        choose_evidence("hmc", "auto", "coupled")
    with pytest.raises(ValueError, match=r"partial_fit: it needs method='vb', got 'gibbs'"):
        require("gibbs", "poisson", "streams", "partial_fit: it needs")
    require("vb", "poisson", "streams", "partial_fit: it needs")  # no error


def test_the_table_is_consistent():
    for name, method in METHODS.items():
        assert method.name == name and method.families <= set(FAMILIES)
        assert method.fold_in in ("vb", "em")
        assert method.distributed in ("", "whole", "blocks")
        assert method.per_token <= method.families
        for e in method.evidence:
            assert e in EVIDENCE
        for family in method.families:
            assert name in method_names(family)
            assert set(offered_evidence(name, family)) <= {
                e for e in EVIDENCE if family in EVIDENCE[e].families}


@pytest.mark.parametrize("estimator, family", [
    (BayesianNMF(), "poisson"), (PLTF("ir,jr->ij"), "poisson"), (BayesianRESCAL(), "tied"),
    (CoupledPLTF(("ir,jr->ij",)), "coupled"), (GibbsNTF(), "gaussian"),
    (AllocationSMC(), "allocation"),
])
def test_each_estimators_methods_are_the_tables(estimator, family):
    """The ``method`` constraint of each estimator is its family's row set."""
    options = estimator._parameter_constraints["method"][0].options
    assert set(options) == set(method_names(family))


class _CountingVB:
    """A test-only kernel: VB's, counting its sweeps."""

    def __init__(self):
        self.sweeps = 0

    def step(self, *args, **kwargs):
        self.sweeps += 1
        return vb.step(*args, **kwargs)

    def __getattr__(self, name):  # every other member of the kernel interface: VB's
        return getattr(vb, name)


def test_a_method_plugs_in_through_its_row(monkeypatch):
    """doc/contributing.rst's recipe for a method, with a test-only one: a
    row of the table that names its kernel, touching no package file. Every
    estimator of its family takes it (their constraints read the table when
    they check), the capability table shows it, the fit runs its kernel and
    gives VB's numbers (the kernel is VB's); an estimator of another family
    refuses it."""
    kernel = _CountingVB()
    row = dataclasses.replace(METHODS["vb"], name="counting_vb", summary="VB, counted",
                              families=frozenset({"poisson"}), kernel=kernel)
    monkeypatch.setitem(METHODS, "counting_vb", row)
    X = np.random.default_rng(0).poisson(3.0, (12, 9, 4)).astype(float)
    ours = PoissonCP(2, method="counting_vb", random_state=0).fit(X)
    assert kernel.sweeps >= ours.n_iter_
    theirs = PoissonCP(2, random_state=0).fit(X)
    assert ours.log_evidence_ == theirs.log_evidence_
    np.testing.assert_array_equal(ours.transform(X), theirs.transform(X))
    assert "counting_vb" in capability_table()
    with pytest.raises(InvalidParameterError, match="counting_vb|method"):
        BayesianRESCAL(2, method="counting_vb").fit(X[:, :9][:9])


def _is_method(node):
    return (isinstance(node, ast.Attribute) and node.attr == "method"
            or isinstance(node, ast.Name) and node.id == "method")


def _method_comparisons():
    """``method`` (a parameter, ``self.method``, ``est.method``) compared
    (``==``, ``!=``, ``in``, ``not in``) with anything, in ``estimators/``."""
    found = []
    for path in sorted(ESTIMATORS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                    _is_method(operand) for operand in [node.left, *node.comparators]):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_estimators_read_capabilities_from_the_table():
    """What a method can do is read from the table, not from comparisons of
    ``method`` spread over the estimator layer (34 before it)."""
    found = _method_comparisons()
    assert len(found) <= 10, found


@pytest.mark.parametrize("estimator", [
    BayesianNMF(2, method="em", evidence="vb"),
    BayesianNMF(2, method="sgld", evidence="chib"),
    PLTF("ia,jb,abk->ijk", 2, tied_factors={1: 0}, method="gibbs", evidence="ais"),
])
def test_estimators_refuse_through_the_table(estimator):
    X = np.random.default_rng(0).poisson(1.0, (6, 6, 2)).astype(float)
    if isinstance(estimator, BayesianNMF):
        X = X[:, :, 0]
    with pytest.raises(ValueError, match="evidence="):
        estimator.fit(X)
