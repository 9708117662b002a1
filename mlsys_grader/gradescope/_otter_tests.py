"""Otter's tests (the master's public and hidden test files), run against a bundle, item by item.

Each Otter test case is one rubric item: ``test_<question>_<item>`` calls
``assert_item(lab, part, item)`` (:func:`mlsys_grader.otter.assert_item`, imported by the test
files as ``mlsys_grader.student.assert_item``), which grades the bundle saved as
``<lab>-submission.json`` in the working directory.  :func:`run_tests_on_bundle` runs those
files *in the grading process* on the bytes that were graded — a private folder holding only
that bundle, no notebook, no student code — so Otter's per-item results exist on every run
without executing the notebook.  :class:`OtterResults` is also what the notebook's own kernel
reports when the notebook is re-run (read back as JSON from the sandbox, or from Otter's
results object under ``otter run``), so both are compared with the score of record the same way.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.models import submission_filename
from ..core.report import GradeReport
from ..otter import replaying_with

if TYPE_CHECKING:
    from ..replay import Replay

MAX_CASES = 500


def question_part(name: str, overrides: Mapping[str, str] | None = None) -> str | None:
    """The rubric part an Otter question grades (``part_a``/``q_a``/``A`` → ``A``; ``*synth*`` → synthesis)."""
    if overrides and name in overrides:
        return overrides[name]
    lower = name.strip().lower()
    if "synth" in lower:
        return "synthesis"
    match = re.search(r"(?:^|[^a-z])(?:part)?[\s_\-]*([a-e])$", lower)
    return match.group(1).upper() if match else None


@dataclass(frozen=True)
class CaseResult:
    """One Otter test case: its question, name, points, visibility and outcome."""

    question: str
    name: str
    points: float
    hidden: bool
    passed: bool


@dataclass
class OtterResults:
    """Otter's per-case results, or why there are none (``error``)."""

    cases: list[CaseResult] = field(default_factory=list)
    error: str | None = None

    def by_question(self) -> dict[str, dict[str, Any]]:
        """Question → score, possible and the failed cases (what ``extra_data`` keeps)."""
        summary: dict[str, dict[str, Any]] = {}
        for case in self.cases:
            entry = summary.setdefault(case.question, {"score": 0.0, "possible": 0.0, "failed": []})
            entry["possible"] += case.points
            if case.passed:
                entry["score"] += case.points
            else:
                entry["failed"].append(case.name)
        return summary

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "cases": [vars(case) for case in self.cases]}


def from_json(data: Any) -> OtterResults:
    """A :class:`OtterResults` from untrusted JSON data (the sandbox's report); ``ValueError`` if malformed."""
    if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list) or len(data["cases"]) > MAX_CASES:
        raise ValueError(f"expected an object with a list 'cases' of at most {MAX_CASES} test cases")
    cases = []
    for raw in data["cases"]:
        if not isinstance(raw, Mapping):
            raise ValueError("each test case must be an object")
        question, name, points = raw.get("question"), raw.get("name"), raw.get("points")
        hidden, passed = raw.get("hidden"), raw.get("passed")
        if not (isinstance(question, str) and isinstance(name, str) and len(question) < 100 and len(name) < 200
                and isinstance(points, (int, float)) and not isinstance(points, bool) and math.isfinite(points)
                and isinstance(hidden, bool) and isinstance(passed, bool)):
            raise ValueError(f"malformed test case {str(dict(raw))[:120]}")
        cases.append(CaseResult(question, name, float(points), hidden, passed))
    error = data.get("error")
    return OtterResults(cases, str(error)[:500] if error is not None else None)


def from_grading_results(results: Any) -> OtterResults:
    """A :class:`OtterResults` from Otter's ``GradingResults`` (built by Otter's own classes)."""
    error = getattr(results, "catastrophic_error", None)
    if error is not None:
        return OtterResults(error=f"{type(error).__name__}: {error}")
    cases = []
    for question, test_file in results.results.items():
        for result in test_file.test_case_results:
            case = result.test_case
            function = getattr(getattr(case, "body", None), "test_func", None)  # exception-format tests: the function's name
            name = getattr(function, "__name__", None) or case.name
            cases.append(CaseResult(str(question), str(name), float(case.points or 0), bool(case.hidden), bool(result.passed)))
    return OtterResults(cases)


def import_test_files(*, skip_package_init: bool = False):
    """``otter.test_files``.  With ``skip_package_init`` (the Gradescope runner's own process only),
    Otter's package ``__init__`` is not executed: it loads Otter's notebook API, exporters and
    runner (pandas, nbconvert: over a second on Gradescope's half CPU) that running test files
    never uses.  The test classes are Otter's own either way."""
    if skip_package_init and "otter" not in sys.modules:
        spec = importlib.util.find_spec("otter")
        if spec is not None and spec.submodule_search_locations:
            sys.modules["otter"] = importlib.util.module_from_spec(spec)
    return importlib.import_module("otter.test_files")


def test_file_paths(tests_dir: str | os.PathLike) -> list[Path]:
    return sorted(p for p in Path(tests_dir).glob("*.py") if p.name != "__init__.py")


def case_names(tests_dir: str | os.PathLike) -> dict[str, list[str]]:
    """Question → the names of its test functions, in file order (read with ``ast``, never run).

    Otter's results pickled by a kernel lose the test functions and name cases ``A - 1``,
    ``A - 2`` …; these names put the item back (case *k* is the *k*-th ``@test_case`` function).
    """
    names: dict[str, list[str]] = {}
    for path in test_file_paths(tests_dir):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        question = path.stem
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "name" for t in node.targets) \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                question = node.value.value
        functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
                     and any("test_case" in ast.unparse(d) for d in node.decorator_list)]
        names[question] = functions
    return names


def with_case_names(run: OtterResults, names: Mapping[str, list[str]]) -> OtterResults:
    """``run`` with positional case names (``A - 2``) replaced by the test function's name."""
    cases = []
    for case in run.cases:
        match = re.fullmatch(rf"{re.escape(case.question)} - (\d+)", case.name)
        functions = names.get(case.question, [])
        if match and 0 < int(match.group(1)) <= len(functions):
            case = CaseResult(case.question, functions[int(match.group(1)) - 1], case.points, case.hidden, case.passed)
        cases.append(case)
    return OtterResults(cases, run.error)


def run_tests_on_bundle(tests_dir: str | os.PathLike, lab: str, bundle: bytes | None, *,
                        skip_package_init: bool = False, replay: Replay | None = None) -> OtterResults:
    """Run every Otter test file in ``tests_dir`` against ``bundle`` (None: no bundle was submitted); their
    ``assert_item`` grades through ``replay`` (the score of record's: :func:`mlsys_grader.otter.replaying_with`)."""
    test_files = import_test_files(skip_package_init=skip_package_init)
    paths = test_file_paths(tests_dir)
    if not paths:
        return OtterResults(error=f"no Otter test files in {tests_dir}")
    with tempfile.TemporaryDirectory(prefix="mlsys-otter-tests-") as work:
        if bundle is not None:
            Path(work, submission_filename(lab)).write_bytes(bundle)
        files = []
        with contextlib.chdir(work), replaying_with(replay):
            for path in paths:
                test_file = test_files.create_test_file(str(path), None)
                test_file.run({})
                files.append(test_file)
    return from_grading_results(test_files.GradingResults(files))


def _item_of(case: CaseResult, items: Iterable[str]) -> str | None:
    stem = case.name.removeprefix("test_")
    stem = stem.removeprefix(f"{case.question}_")
    if stem in items:
        return stem
    return next((item for item in sorted(items, key=len, reverse=True) if case.name.endswith("_" + item)), None)


def disagreements(report: GradeReport, run: OtterResults, overrides: Mapping[str, str] | None = None) -> list[str]:
    """Where Otter's test cases and the score of record differ, one line per question and outcome.

    A case passes when its rubric item earned full points; a case Otter reports and the
    rubric does not know is listed too, because it means the master and the rubric drifted.
    """
    if run.error is not None:
        return []
    found: list[str] = []
    differing: dict[tuple[str, bool], list[str]] = {}
    for case in run.cases:
        part = question_part(case.question, overrides)
        scores = report.parts.get(part) if part else None
        if scores is None:
            found.append(f"Otter question {case.question!r} matches no rubric part")
            continue
        items = {item.item: item for item in scores.items}
        name = _item_of(case, items)
        if name is None:
            found.append(f"{case.question}: test {case.name} matches no rubric item")
            continue
        item = items[name]
        if (item.points >= item.max_points and not item.held) != case.passed:
            differing.setdefault((case.question, case.passed), []).append(
                f"{name} ({item.points:g} / {item.max_points:g} on record)")
    for (question, passed), names in differing.items():
        found.append(f"{question}: the tests of {', '.join(names)} {'passed' if passed else 'failed'}")
    return found
