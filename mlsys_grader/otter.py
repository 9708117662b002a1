"""What Otter's test files call: one rubric item of the saved bundle, as a passing or failing test case.

The masters' test files (public ones travel in the student notebook's metadata, hidden ones
in the autograder zip) hold one test case per rubric item::

    @test_case(points=3, hidden=False)
    def test_A_captured():
        from mlsys_grader.student import assert_item
        assert_item('lab07', 'A', 'captured')

They import :func:`assert_item` from :mod:`mlsys_grader.student`, which re-exports it from
here: that dotted name is in every student notebook and autograder already handed out, so
it stays.  The glue itself belongs to neither the notebook session nor the Gradescope
runner: Otter runs these files in the student's kernel (``grader.check``, a re-run notebook)
and in the grading process (:mod:`mlsys_grader.gradescope._otter_tests`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from .core.models import submission_filename
from .core.report import GradeReport
from .errors import BundleFormatError, UnknownLabError

if TYPE_CHECKING:
    from .replay import Replay

__all__ = ["assert_item"]

# NOTE: the test files call ``assert_item(lab, part, item)`` and nothing else (their text is in every notebook and
# autograder already handed out), so the replay of the process that runs them cannot be an argument: the Gradescope
# pipeline names it for the duration of its run (:func:`replaying_with`), in a context variable that is unset
# everywhere else (a notebook's kernel grades through the live default).
_REPLAY: ContextVar[Replay | None] = ContextVar("mlsys_grader_otter_replay", default=None)


@contextlib.contextmanager
def replaying_with(replay: Replay | None) -> Iterator[None]:
    """Within the block, the test files' :func:`assert_item` grades through ``replay`` (None: the live default)."""
    token = _REPLAY.set(replay)
    try:
        yield
    finally:
        _REPLAY.reset(token)


@lru_cache(maxsize=4)
def _graded(data: bytes) -> GradeReport:
    from .api import grade_bundle

    return grade_bundle(data, replay=_REPLAY.get())


def _grade_bytes(data: bytes) -> GradeReport:
    """Grade bundle bytes; memoised (by the bytes: a replay changes speed, never a grade) so the test cases of one
    notebook grade its bundle once."""
    return _graded(data)


def assert_item(lab_id: str, part: str, item: str, *, directory: str | os.PathLike[str] | None = None) -> None:
    """Raise :class:`AssertionError` with the grader's advice unless ``item`` of ``part`` earned full points.

    Grades ``<lab>-submission.json`` in ``directory`` (the working directory: the notebook's
    folder, or the grading process's private copy of the graded bytes).
    """
    from .api import read_bundle_bytes

    path = Path(directory or ".") / submission_filename(lab_id)
    if not path.exists():
        raise AssertionError(f"No {path.name} next to the notebook: run the notebook's cells (predict, run, capture) first.")
    try:
        report = _grade_bytes(read_bundle_bytes(path))
    except (BundleFormatError, UnknownLabError, OSError) as exc:
        raise AssertionError(f"{path.name} cannot be graded ({exc}); run the notebook again to rewrite it.") from None
    if report.lab != lab_id:
        raise AssertionError(f"{path.name} is a {report.lab} bundle, expected {lab_id}.")
    scores = report.parts.get(part)
    entry = next((i for i in scores.items if i.item == item), None) if scores else None
    if entry is None:
        raise AssertionError(f"the {lab_id} rubric has no item {item!r} for {part!r}")
    if entry.points < entry.max_points:
        messages = [f.message for f in report.findings if f.part == part and (f.rubric_item == item or f.criterion == "missing")]
        raise AssertionError(" ".join(dict.fromkeys(messages)) or f"{part}: {item} earned {entry.points:g} of {entry.max_points:g} points.")
