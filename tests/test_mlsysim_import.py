"""The fast mlsysim import reads mlsysim's data exactly as PyYAML's pure-Python loader does."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import yaml


def test_libyaml_safe_loader_gives_identical_notation_data():
    data = Path(importlib.util.find_spec("mlsysim").submodule_search_locations[0]) / "notation" / "data"
    files = sorted(data.glob("*.yaml"))
    assert len(files) >= 5
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.safe_load(text), path.name


def test_evaluators_load_on_first_use_and_yaml_is_restored():
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
