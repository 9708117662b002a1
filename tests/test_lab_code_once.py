"""Code a lab package repeats from another lab package: the functions whose bodies are the same in two labs.

A lab is meant to be a declaration plus what only code can say, so a function body written again in a second lab
is a rule that will have to be fixed twice.  The bodies compared are the functions' syntax trees without their
docstrings (names, arguments and statements, any length); the ones that are still repeated today are listed in
:data:`REPEATED`, to leave as they move into shared modules.  The test fails on a repeat that is not listed (a new
lab copied from an old one) and on a listed one that is gone (take it off the list: the list only shrinks).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

LABS = Path(__file__).resolve().parents[1] / "mlsys_grader" / "labs"

REPEATED = {
    "evaluate.replay": {"lab02", "lab07"},
    "marimo.answers": {"lab07", "lab08"},
    "marimo.decision_copies": {"lab02", "lab07"},
    "references._answers": {"lab02", "lab07", "lab08", "lab11"},
    "references.reference_answers": {"lab02", "lab07", "lab08", "lab11"},
    "references.reference_synthesis": {"lab07", "lab08"},
    "rules.build_variants": {"lab02", "lab08", "lab11"},
    "rules.evaluate": {"lab02", "lab07", "lab08"},
    "rules.evaluator": {"lab02", "lab07", "lab08", "lab11"},
    "rules.model_key": {"lab08", "lab11"},
    "rules.upstream_inputs": {"lab07", "lab11"},
    "views.captured_decision": {"lab02", "lab07", "lab08"},
    "views.header_facts": {"lab02", "lab07", "lab11"},
    "views.render": {"lab02", "lab07", "lab08", "lab11"},
    "words.final_choice_terms": {"lab07", "lab08"},
    "words.synthesis_choices": {"lab07", "lab08"},
}
"""``module.function`` → the lab packages that hold the same body, as of the four shipped labs."""


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


def test_no_lab_package_repeats_another_labs_function_beyond_the_listed_ones():
    found = repeated_bodies()
    new = {name: labs for name, labs in found.items() if not labs <= REPEATED.get(name, set())}
    assert not new, f"function bodies repeated from another lab package (share them instead): {new}"
    gone = {name: labs - found.get(name, set()) for name, labs in REPEATED.items() if labs - found.get(name, set())}
    assert not gone, f"no longer repeated in these labs: take them off REPEATED (it only shrinks): {gone}"


def test_a_copied_function_is_found_whatever_its_docstring(tmp_path):
    one, two = tmp_path / "laba", tmp_path / "labb"
    for package, docstring in ((one, "One way to say it."), (two, "Another.")):
        package.mkdir()
        (package / "__init__.py").write_text("", encoding="utf-8")
        (package / "rules.py").write_text(f'def plan(x):\n    """{docstring}"""\n    return x + 1\n\n\n'
                                          f"def own_{package.name}(y):\n    return y * {len(docstring)}\n", encoding="utf-8")
    assert repeated_bodies(tmp_path) == {"rules.plan": {"laba", "labb"}}
