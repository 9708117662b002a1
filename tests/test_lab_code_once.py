"""No lab package repeats a function of another: what two labs share lives once, in the shared modules of ``labs/``.

A lab is a declaration plus what only code can say, so a function body written again in a second lab is a rule that
would have to be fixed twice.  The bodies compared are the functions' syntax trees without their docstrings (names,
arguments and statements, any length, nested functions included).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

LABS = Path(__file__).resolve().parents[1] / "mlsys_grader" / "labs"


def _body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    statements = node.body
    if statements and isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant) \
            and isinstance(statements[0].value.value, str):
        statements = statements[1:]  # the docstring: the words may differ, the code is the same
    return ast.dump(node.args) + "\n" + ast.dump(ast.Module(body=statements, type_ignores=[]))


def repeated_bodies(root: Path = LABS) -> dict[str, set[str]]:
    """``module.function`` → the lab packages under ``root`` whose function of that body is the same as another lab's
    (every function, nested ones included, keyed by the first name it was found under)."""
    where: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for path in sorted(root.glob("*/*.py")):
        if not (path.parent / "__init__.py").is_file() or path.parent.name.startswith("_"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                where[_body(node)].append((path.parent.name, f"{path.stem}.{node.name}"))
    found: dict[str, set[str]] = {}
    for places in where.values():
        labs = {lab for lab, _ in places}
        if len(labs) > 1:
            found.setdefault(places[0][1], set()).update(labs)
    return found


def test_no_lab_package_repeats_another_labs_function():
    assert repeated_bodies() == {}, "function bodies repeated across lab packages: share them in mlsys_grader/labs/"


def test_a_copied_function_is_found_whatever_its_docstring(tmp_path):
    one, two = tmp_path / "laba", tmp_path / "labb"
    for package, docstring in ((one, "One way to say it."), (two, "Another.")):
        package.mkdir()
        (package / "__init__.py").write_text("", encoding="utf-8")
        (package / "rules.py").write_text(f'def plan(x):\n    """{docstring}"""\n    return x + 1\n\n\n'
                                          f"def own_{package.name}(y):\n    return y * {len(docstring)}\n", encoding="utf-8")
    assert repeated_bodies(tmp_path) == {"rules.plan": {"laba", "labb"}}
