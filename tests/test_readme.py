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
from mlsys_grader.labs import lab_ids

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _between(start: str, end: str) -> str:
    match = re.search(re.escape(start) + r"\n(.*?)\n" + re.escape(end), README, re.S)
    assert match, f"README lacks the block {start} … {end}"
    return match.group(1)


def test_readme_rubric_table_is_the_generated_one():
    expected = rubric_markdown([default_rubric(lab) for lab in lab_ids()])
    assert _between("<!-- rubric-table:start -->", "<!-- rubric-table:end -->") == expected, (
        "README's rubric table is out of date: paste the output of `mlsys-grader rubric`")


def test_the_cli_prints_the_same_table(capsys):
    assert cli.main(["rubric"]) == cli.EXIT_OK
    assert capsys.readouterr().out.strip() == rubric_markdown([default_rubric(lab) for lab in lab_ids()])


@pytest.mark.slow
def test_the_installed_command_prints_the_same_table():
    result = subprocess.run([sys.executable, "-m", "mlsys_grader", "rubric"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == rubric_markdown([default_rubric(lab) for lab in lab_ids()])


def test_readme_names_exactly_the_hidden_items():
    block = _between("<!-- hidden-items:start -->", "<!-- hidden-items:end -->")
    assert set(re.findall(r"`(\w+)`", block)) == set(HIDDEN_ITEMS)



def _layout() -> dict[str, str]:
    """README's Layout block: each entry (``mlsys_grader/core/``, ``mlsys_grader/api.py``, ``assignments/``) → its
    whole description (continuation lines, indented past the names, included)."""
    block = _between("## Layout\n\n```", "```")
    entries: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        entry = re.match(r"^(  )?(\S+)(?: {2,}(.*))?$", line)
        if entry:
            name = ("mlsys_grader/" if entry.group(1) else "") + entry.group(2)
            entries[name] = entry.group(3) or ""
        else:
            assert name is not None and line.startswith(" " * 17), line
            entries[name] += " " + line.strip()
    return entries


def test_readme_layout_names_exactly_the_packages_and_public_modules_of_the_tree():
    """README's Layout names every package and public module of ``mlsys_grader/``, every lab package and the modules
    it is split into, and the repository's folders; everything it names exists."""
    root = Path(__file__).resolve().parents[1]
    named = _layout()
    package = root / "mlsys_grader"
    tree = {f"mlsys_grader/{path.name}/" for path in package.iterdir() if path.is_dir() and not path.name.startswith("_")}
    tree |= {f"mlsys_grader/{path.name}" for path in package.glob("*.py") if not path.name.startswith("_")}
    assert {name for name in named if name.startswith("mlsys_grader/") and name != "mlsys_grader/"} == tree
    assert all((root / name).exists() for name in named)
    assert {"assignments/", "solutions/", "autograder/", "examples/", "benchmarks/", "tests/"} <= set(named)
    labs = named["mlsys_grader/labs/"]
    lab_packages = [path for path in (package / "labs").iterdir() if path.is_dir() and not path.name.startswith("_")]
    assert lab_packages
    for lab in lab_packages:
        assert f"{lab.name}/" in labs, lab.name
        seams = {path.stem for path in lab.glob("*.py") if path.stem != "__init__"}
        assert seams <= set(re.findall(r"\b\w+\b", labs)), (lab.name, seams - set(re.findall(r"\b\w+\b", labs)))
    for helper in (package / "labs").glob("*.py"):  # the helpers the lab packages share (charts.py)
        assert helper.name == "__init__.py" or helper.name in labs, helper.name
    for layer in ("core", "staff"):  # each module by its name (a private module's without its underscore)
        words = set(re.findall(r"\b\w+\b", named[f"mlsys_grader/{layer}/"]))
        modules = {path.stem.lstrip("_") for path in (package / layer).glob("*.py") if path.stem != "__init__"}
        assert modules <= words, (layer, sorted(modules - words))
