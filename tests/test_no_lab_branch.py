"""A lab is one package: nothing outside the lab packages branches on a lab.

Every module of ``mlsys_grader`` outside ``labs/<lab>/`` is read as Python (never imported) and searched for a lab's
id (``lab07``) or a book evaluator key (``v1_08_experiments``) used as a value in code — compared with, looked up,
used as a mapping's key or passed on — so "if lab_id == 'lab08'" or ``{"lab02": …}`` anywhere in the core or an
edge fails here.  Docstrings, help text and examples in field descriptions name labs freely; the registry's table
of the shipped labs (``labs/__init__.py``'s ``_BUILTIN``) is the one place that lists them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mlsys_grader"
LAB_VALUE = re.compile(r"^(?:lab\d{2}\w*|v1_\d{2}\w*)$")


def _text_only(tree: ast.AST) -> set[int]:
    """Ids of the string constants that are prose: docstrings, and keyword arguments named ``description`` or
    ``help`` (a field's or an option's words for people)."""
    prose: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                prose.add(id(first.value))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # attribute docstrings
            prose.add(id(node.value))
        if isinstance(node, ast.keyword) and node.arg in ("description", "help"):
            prose |= {id(part) for part in ast.walk(node.value) if isinstance(part, ast.Constant)}
    return prose


def lab_values(path: Path) -> list[tuple[int, str]]:
    """(line, value) of each lab id or evaluator key used as a value in the code of ``path``, in order."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    prose = _text_only(tree)
    found = [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and id(node) not in prose and LAB_VALUE.match(node.value.split(".")[0])]
    return [(node.lineno, node.value) for node in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def outside_the_labs() -> list[Path]:
    labs = PACKAGE / "labs"
    return [path for path in sorted(PACKAGE.rglob("*.py"))
            if not (path.parent.parent == labs and path.parent.name.startswith("lab"))]


def test_no_module_outside_a_lab_package_uses_a_lab_as_a_value():
    found = {(str(path.relative_to(PACKAGE.parent)), line, value) for path in outside_the_labs()
             for line, value in lab_values(path)}
    registry = {hit for hit in found if hit[0] == "mlsys_grader/labs/__init__.py"}  # _BUILTIN: the shipped labs
    assert sorted(found - registry) == []
    assert {value for _, _, value in registry} == {"lab02", "lab07", "lab08", "lab11"}, registry  # the shipped labs


def test_the_search_finds_a_branch_on_a_lab(tmp_path):
    """The search is not blind: a branch on a lab id, a lookup by one and an evaluator key are each found, and a
    docstring or a field's description naming a lab is not."""
    sample = tmp_path / "sample.py"
    sample.write_text('"""Grades lab07 and lab11."""\n'
                      "def f(lab_id, table, Field):\n"
                      '    """For lab08 only."""\n'
                      '    x = Field(description="a lab id, e.g. lab07")\n'
                      '    if lab_id == "lab08":\n'
                      '        return table["lab02"]\n'
                      '    return "v1_11_experiments.roofline"\n', encoding="utf-8")
    assert lab_values(sample) == [(5, "lab08"), (6, "lab02"), (7, "v1_11_experiments.roofline")]
