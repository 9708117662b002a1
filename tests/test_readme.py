"""README's rubric facts are generated from the rubric files, never copied by hand."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlsys_grader import cli
from mlsys_grader.api import default_rubric
from mlsys_grader.core.report import HIDDEN_ITEMS
from mlsys_grader.core.rubric import rubric_markdown

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _between(start: str, end: str) -> str:
    match = re.search(re.escape(start) + r"\n(.*?)\n" + re.escape(end), README, re.S)
    assert match, f"README lacks the block {start} … {end}"
    return match.group(1)


def test_readme_rubric_table_is_the_generated_one():
    expected = rubric_markdown([default_rubric("lab07"), default_rubric("lab11")])
    assert _between("<!-- rubric-table:start -->", "<!-- rubric-table:end -->") == expected, (
        "README's rubric table is out of date: paste the output of `mlsys-grader rubric`")


def test_the_cli_prints_the_same_table(capsys):
    assert cli.main(["rubric"]) == cli.EXIT_OK
    assert capsys.readouterr().out.strip() == rubric_markdown([default_rubric("lab07"), default_rubric("lab11")])


@pytest.mark.slow
def test_the_installed_command_prints_the_same_table():
    result = subprocess.run([sys.executable, "-m", "mlsys_grader", "rubric"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == rubric_markdown([default_rubric("lab07"), default_rubric("lab11")])


def test_readme_names_exactly_the_hidden_items():
    block = _between("<!-- hidden-items:start -->", "<!-- hidden-items:end -->")
    assert set(re.findall(r"`(\w+)`", block)) == set(HIDDEN_ITEMS)
