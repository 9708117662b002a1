"""The fast mlsysim import reads mlsysim's data exactly as PyYAML's pure-Python loader does."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import sweep

import mlsys_grader

# find_spec locates the installed package without importing it.
NOTATION_DATA = Path(importlib.util.find_spec("mlsysim").submodule_search_locations[0]) / "notation" / "data"
DATA_FILES = sorted(path.name for path in NOTATION_DATA.glob("*.yaml"))


def test_the_notation_data_is_where_the_fast_import_expects_it():
    assert len(DATA_FILES) >= 5
    assert {"exempt.yaml", "vocabulary.yaml"} <= set(DATA_FILES)


@pytest.mark.parametrize("name", sweep(DATA_FILES, fast=["exempt.yaml", "vocabulary.yaml"]))
def test_libyaml_safe_loader_gives_identical_notation_data(name):
    """The pure-Python loader takes seconds on the large files: the quick loop checks the small ones."""
    text = (NOTATION_DATA / name).read_text(encoding="utf-8")
    assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.safe_load(text)


def test_loading_the_evaluators_leaves_yaml_safe_load_as_pyyaml_defines_it():
    mlsys_grader.get_lab("lab11").plan("edge", "A", {"change": "bandwidth", "factor": 2}, {})  # evaluators loaded
    assert "mlsysim" in sys.modules
    assert (yaml.safe_load.__module__, yaml.safe_load.__name__) == ("yaml", "safe_load")


@pytest.mark.slow
def test_evaluators_load_on_first_use_and_yaml_is_restored():
    """In a fresh interpreter: ``import mlsys_grader`` does not import mlsysim; the first lab does, and restores yaml."""
    code = (
        "import yaml, sys; before = yaml.safe_load; import mlsys_grader; "
        "assert 'mlsysim' not in sys.modules, 'importing the package must not import mlsysim'; "
        "mlsys_grader.get_lab('lab07'); "
        "assert yaml.safe_load is before; assert 'mlsysim' in sys.modules; "
        "from mlsysim.notation.registry import Notation; print(len(list(Notation)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 100
