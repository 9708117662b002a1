"""The course's late policy on Gradescope: applied when ``course.toml`` is in the autograder zip.

The autograder zip's files land in ``/autograder/source``; when ``course.toml`` (and the
extensions CSV it names) is among them, the score of record is reduced by the late
penalty computed from ``/autograder/submission_metadata.json`` by the rule the bulk
gradebook applies (:func:`mlsys_grader.core.late.gradescope_penalty`; the course file is read
by :func:`mlsys_grader.intake.read_course`).  The results
gain a visible "Late penalty" line with the rule; ``extra_data`` keeps the raw score.  A
course file or metadata that cannot be read leaves the score as it is and tells staff why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.late import gradescope_penalty
from ..errors import CourseFileError
from ..intake import read_course
from ._results import total_line

COURSE_FILE = "course.toml"
METADATA = "submission_metadata.json"
MAX_METADATA_BYTES = 4 * 1024 * 1024


def read_metadata(autograder: Path) -> Mapping[str, Any] | None:
    """Gradescope's submission metadata, or None when absent or unreadable."""
    path = autograder / METADATA
    try:
        if path.stat().st_size > MAX_METADATA_BYTES:
            return None
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, Mapping) else None


def apply_late_policy(document: dict[str, Any], source: Path, lab: str, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """``document`` with the late penalty applied when ``source / course.toml`` exists (else unchanged)."""
    course_path = source / COURSE_FILE
    if not course_path.is_file() or "score" not in document:
        return document
    extra = document.setdefault("extra_data", {}).setdefault("mlsys_grader", {})
    if "late" in extra:  # already applied to this document
        return document
    try:
        course = read_course(course_path)
    except CourseFileError as exc:
        extra.setdefault("notes", []).append(f"late policy not applied: {exc}")
        return document
    if lab not in course.file.labs:
        return document
    late = gradescope_penalty(course.file.labs[lab], course.extensions, lab, metadata or {})
    raw = float(document["score"])
    points = round(raw * late.percent / 100, 5)
    document["score"] = round(raw - points, 5)
    document.setdefault("tests", []).append({"name": "Late penalty", "visibility": "after_published", "score": -points,
                                             "max_score": 0, "status": "failed" if points else "passed",
                                             "output": late.rule or "no deadline for this lab"})
    most = float(extra.get("max_score") or 100)
    for test in document["tests"]:  # the published total never contradicts the score
        if test.get("name") == "Total":
            test["output"] = total_line(document["score"], most, (points, late.rule) if points else None)
    extra["late"] = {"raw_score": raw, "late_penalty": points, "percent": late.percent, "rule": late.rule}
    return document
