"""Feedback to hand back: one self-contained HTML page per student and lab with a gradable submission.

Written from the SQLite gradebook (the final row and the stored grade of the submission that
counts) by ``mlsys-grader feedback --db gradebook.sqlite -o DIR [--release]``.  Each page
holds the score, every part and item, the messages, the evidence numbers as recorded, the
late penalty, and the staff's overrides with their comments.  Hidden items (the replay checks and
``prediction_correct``, as on Gradescope) and the final score are withheld until
``--release``.  Pages are named ``<sid>-<lab>.html`` (the gradebook key when there is no sid).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._version import __version__
from ..api import default_rubric
from ..core.report import HIDDEN_ITEMS, render_html
from ..errors import GraderError
from ._formative import FORMATIVE_ITEM
from ._gradebook import GradebookDB
from ._row import FinalRow

_UNSAFE = re.compile(r"[^A-Za-z0-9@._-]+")


@dataclass(frozen=True)
class Feedback:
    """What :func:`write_feedback` wrote."""

    files: tuple[str, ...]
    released: bool
    skipped: int
    """Final rows without a gradable submission (missing, ungradable): no page."""


def feedback_name(row: Mapping[str, Any]) -> str:
    """``<sid>-<lab>.html``, with anything but letters, digits, ``@._-`` replaced (a key may be a path)."""
    return f"{_UNSAFE.sub('_', row['student_id'] or row['student']).strip('_')}-{row['lab']}.html"


def _stored(db: GradebookDB, input_hash: str) -> dict[str, Any] | None:
    found = db.conn.execute("SELECT result FROM results WHERE input_hash = ? AND grader_version = ? ORDER BY graded_at DESC",
                            (input_hash, __version__)).fetchone()
    if found is None:
        return None
    result: dict[str, Any] = json.loads(found[0])
    result.setdefault("evidence", db.evidence(input_hash))
    return result


def _rubric_points(lab: str) -> dict[str, float]:
    try:
        rubric = default_rubric(lab)
    except GraderError:
        return {}
    return {f"{part}.{item}": points for part, items in rubric.parts.items() for item, points in items.items()} | {
        f"synthesis.{item}": points for item, points in rubric.synthesis.items()}


def render_feedback(row: FinalRow, result: Mapping[str, Any], *, release: bool) -> str:
    """The page for one final row and its stored grade."""
    findings = result.get("findings", [])
    hidden_index = set(result.get("hidden", [i for i, f in enumerate(findings) if f[2] in HIDDEN_ITEMS]))
    # A grade stored before item maxima were kept falls back to the shipped rubric's points.
    item_max = result.get("item_max") or _rubric_points(row["lab"])
    parts: dict[str, list[tuple[str, Any, Any]]] = {}
    visible, visible_max = 0.0, 0.0
    overridden = row.overridden  # staff decisions replace the machine's points (course/_overrides.py)
    for column, points in result.get("items", {}).items():
        points = overridden.get(column, points)
        part, item = column.split(".", 1)
        if item in HIDDEN_ITEMS and not release:
            continue
        most = item_max.get(column, "")
        shown: Any = points
        if item == FORMATIVE_ITEM and most == 0:  # formative: right or not, from the findings
            shown = not any(f[0] == part and f[2] == FORMATIVE_ITEM for f in findings)
        else:
            visible += float(points)
            visible_max += float(most or 0)
        parts.setdefault(part, []).append((item, shown, most))
    messages = [(f[0], f[3]) for i, f in enumerate(findings) if release or i not in hidden_index]
    evidence = [(part, sorted(numbers.items())) for part, numbers in sorted(result.get("evidence", {}).items())]
    return render_html(
        "feedback.html", lab=row["lab"], student=row["student"], name=row["student_name"], email=row["student_email"],
        sid=row["student_id"], path=os.path.basename(row["path"]), submitted_at=row["submitted_at"], released=release,
        score=row["score"], max_score=row["max_score"], raw_score=row["raw_score"], late_penalty=row["late_penalty"],
        rule=row["rule"], visible_score=round(visible, 6), visible_max=round(visible_max, 6),
        parts=list(parts.items()), messages=messages, evidence=evidence, changes=row.get("changes", ""), comments=row.get("overrides", ""))


def write_feedback(db_path: str | os.PathLike[str], out: str | os.PathLike[str], *, release: bool = False) -> Feedback:
    """Write one page per final row with a gradable submission into ``out`` (created)."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    db = GradebookDB(db_path)
    written, skipped = [], 0
    try:
        for row in db.final():
            result = _stored(db, row["input_hash"]) if row["status"] in ("graded", "regrade") else None
            if result is None:
                skipped += 1
                continue
            path = folder / feedback_name(row)
            path.write_text(render_feedback(row, result, release=release), encoding="utf-8")
            written.append(str(path))
    finally:
        db.close()
    return Feedback(tuple(written), release, skipped)
