"""The quick loop (``pytest -m "not slow"``) runs a lab-parametrised test on its labs only (``tests/conftest.py``):
Lab 07 and Lab 02 unless ``MLSYS_GRADER_QUICK_LABS`` names others, every lab in the full run; a sweep keeps its
representatives of those labs, or all of them when none is of those labs.  Its property tests draw a quarter of
their examples."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LABS, QUICK_LABS_VARIABLE, QUICK_LOOP_SHARE

ROOT = Path(__file__).resolve().parents[1]
PER_LAB = "tests/test_collusion.py::test_independent_clocks_on_the_same_defaults_and_settings_are_never_paired"
SWEPT = "tests/test_notebooks.py::test_reference_notebook_is_executed_and_its_bundle_earns_full_marks"
"""A sweep of every lab and track whose quick cases are Lab 07 cloud and Lab 11 tinyml."""


def _pytest(*arguments: str, quick_labs: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != QUICK_LABS_VARIABLE}
    if quick_labs is not None:
        env[QUICK_LABS_VARIABLE] = quick_labs
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def _collected(*arguments: str, quick_labs: str | None = None) -> subprocess.CompletedProcess[str]:
    return _pytest("--collect-only", *arguments, quick_labs=quick_labs)


def _labs(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return sorted(re.findall(r"\[(lab\d\d)\]$", done.stdout, re.M))


@pytest.mark.slow  # pytest runs in subprocesses
def test_the_quick_loop_runs_a_lab_parametrised_test_on_its_labs_and_the_full_run_on_every_lab():
    assert _labs(_collected(PER_LAB, "-m", "not slow")) == ["lab02", "lab07"]
    assert _labs(_collected(PER_LAB)) == sorted(LABS)
    assert _labs(_collected(PER_LAB, "-m", "not slow", quick_labs="lab08")) == ["lab08"]
    assert _labs(_collected(PER_LAB, "-m", "not slow", quick_labs="all")) == sorted(LABS)


@pytest.mark.slow  # pytest runs in subprocesses
def test_a_sweep_keeps_its_quick_loop_labs_representatives_or_all_of_them_and_an_unknown_lab_is_named():
    def ids(done: subprocess.CompletedProcess[str]) -> list[str]:
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return [line.removeprefix(SWEPT) for line in done.stdout.splitlines() if line.startswith(SWEPT + "[")]

    assert len(ids(_collected(SWEPT))) == 4 * len(LABS)
    assert ids(_collected(SWEPT, "-m", "not slow")) == ["[lab07-cloud]"]
    assert ids(_collected(SWEPT, "-m", "not slow", quick_labs="lab08")) == ["[lab07-cloud]", "[lab11-tinyml]"]  # none is Lab 08's
    refused = _collected(PER_LAB, "-m", "not slow", quick_labs="lab07,lab99")
    assert refused.returncode != 0
    assert "MLSYS_GRADER_QUICK_LABS names lab99, which no installed lab is" in refused.stdout + refused.stderr


PROPERTY = "tests/test_text.py::test_normalising_twice_is_normalising_once"
"""A property test of 300 examples whose every example passes (the draw never runs out of texts)."""


@pytest.mark.slow  # pytest runs in subprocesses
def test_the_quick_loop_draws_a_quarter_of_each_property_tests_examples_and_the_full_run_all():
    def drawn(*arguments: str) -> int:
        done = _pytest("--hypothesis-show-statistics", PROPERTY, *arguments)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return int(re.search(r"(\d+) passing", done.stdout).group(1))  # type: ignore[union-attr]

    assert drawn() == 300
    assert drawn("-m", "not slow") == 300 // QUICK_LOOP_SHARE


def _counts_through_examples(node: ast.expr) -> bool:
    """``settings(max_examples=examples(N), ...)``."""
    return isinstance(node, ast.Call) and any(
        keyword.arg == "max_examples" and isinstance(keyword.value, ast.Call)
        and isinstance(keyword.value.func, ast.Name) and keyword.value.func.id == "examples" for keyword in node.keywords)


def test_every_property_test_names_its_examples_through_the_quick_loops_share():
    """A property test that named a bare count (or none: hypothesis's 100) would draw all of them in the quick loop."""
    checked = 0
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = {target.id for node in tree.body if isinstance(node, ast.Assign) and _counts_through_examples(node.value)
                 for target in node.targets if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "given" for d in node.decorator_list):
                checked += 1
                assert any(_counts_through_examples(d) or (isinstance(d, ast.Name) and d.id in named)
                           for d in node.decorator_list), f"{path.relative_to(ROOT)}::{node.name}"
    assert checked >= 14  # the suite's property tests were found
