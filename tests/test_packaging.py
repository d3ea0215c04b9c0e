"""The package's metadata is what current build tools read without a
deprecation warning (PEP 639: an SPDX license expression and its files)."""

import pathlib

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from "
                              "Python 3.11")

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_license_is_an_spdx_expression_with_its_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "BSD-3-Clause"  # a table ({text = ...}) is deprecated
    for name in project["license-files"]:
        assert "BSD 3-Clause License" in (ROOT / name).read_text()
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert "setuptools>=77" in build["requires"]  # the first to read PEP 639 metadata
