"""The quick loop (``pytest -m "not slow"``) runs a lab-parametrised test on its labs only (``tests/conftest.py``):
Lab 07 and Lab 02 unless ``MLSYS_GRADER_QUICK_LABS`` names others, every lab in the full run; a sweep keeps its
representatives of those labs, or all of them when none is of those labs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LABS, QUICK_LABS_VARIABLE

ROOT = Path(__file__).resolve().parents[1]
PER_LAB = "tests/test_collusion.py::test_independent_clocks_on_the_same_defaults_and_settings_are_never_paired"
SWEPT = "tests/test_notebooks.py::test_reference_notebook_is_executed_and_its_bundle_earns_full_marks"
"""A sweep of every lab and track whose quick cases are Lab 07 cloud and Lab 11 tinyml."""


def _collected(*arguments: str, quick_labs: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != QUICK_LABS_VARIABLE}
    if quick_labs is not None:
        env[QUICK_LABS_VARIABLE] = quick_labs
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *arguments],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


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
