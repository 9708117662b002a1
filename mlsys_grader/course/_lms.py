"""Grades out to the LMS: Canvas's gradebook import CSV, Moodle's grade import CSV, a generic long CSV.

All three are written from the final gradebook (one row per student and lab, penalties
applied) stored in the SQLite gradebook.  A roster student without the id the target LMS
matches on is still written (Canvas also matches by name) and is listed in
:attr:`Export.unmatched`, so the command can name them.

Names are the roster's own split (first and last name fields); a roster with one display name
gives it whole (never split again).

* **Canvas**: the fixed leading columns ``Student`` ("Last, First"), ``ID`` (the Canvas
  user id, roster ``canvas_id``), ``SIS User ID`` (``sis_id``), ``SIS Login ID``
  (``sis_login_id``, when the roster has it), ``Section``; a ``Points Possible`` row; then
  one column per lab named as Canvas's own export names assignments, ``Name (assignment
  id)``, from ``canvas_name`` and ``canvas_assignment_id`` in the course file.
* **Moodle**: ``First name``, ``Last name``, ``Email address`` (the import maps that column to
  the user's email), then one column per lab.
* **generic**: ``student_id, lab, score, raw_score, late_penalty, status, comment``.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._files import _cell, replace_atomically
from ._store import GradebookDB

Target = Literal["canvas", "moodle", "generic"]
TARGETS: tuple[Target, ...] = ("canvas", "moodle", "generic")
CANVAS_LEADING = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_LEADING = ["First name", "Last name", "Email address"]
GENERIC_COLUMNS = ["student_id", "lab", "score", "raw_score", "late_penalty", "status", "comment"]


@dataclass
class Export:
    """What :func:`export_lms` wrote: the file, its student lines, and the students the LMS cannot match by id."""

    path: str
    target: Target
    students: int
    unmatched: list[str] = field(default_factory=list)


def _names(row: Mapping[str, Any]) -> tuple[str, str]:
    """(first, last) as the roster split them; a roster with one display name gives it whole as the first name (a
    display name is never split again: "John Van Rossum" has no knowable split)."""
    first, last = row.get("student_first_name", ""), row.get("student_last_name", "")
    return (first, last) if first or last else (row["student_name"], "")


def _by_student(final: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Mapping[str, Any]]]:
    students: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row in final:
        students.setdefault(row["student"], {})[row["lab"]] = row
    return students


def _score(row: Mapping[str, Any] | None) -> Any:
    return "" if row is None else row["score"]


def canvas_column(lab: str, policy: Mapping[str, Any]) -> str:
    """The Canvas assignment column for ``lab``: ``Name (id)`` when the course file gives the assignment id."""
    name = policy.get("canvas_name") or lab
    return f"{name} ({policy['canvas_assignment_id']})" if policy.get("canvas_assignment_id") else name


def export_lms(db_path: str | os.PathLike[str], target: Target, out: str | os.PathLike[str]) -> Export:
    """Write ``target``'s import file from the gradebook at ``db_path``; one line per student (generic: per student and lab)."""
    if target not in TARGETS:
        raise ValueError(f"unknown LMS {target!r}; expected one of {', '.join(TARGETS)}")
    db = GradebookDB(db_path)
    try:
        final = db.final()
        found = db.conn.execute("SELECT value FROM meta WHERE key = 'course'").fetchone()
    finally:
        db.close()
    policies: dict[str, Any] = json.loads(found[0]).get("labs", {}) if found else {}
    labs = sorted({row["lab"] for row in final})
    unmatched: list[str] = [f"{row['student']} {row['lab']}: not in the roster, not exported ({row['path']})"
                            for row in final if "not_in_roster" in row.flags]
    students = _by_student([row for row in final if "not_in_roster" not in row.flags])
    rows: list[list[Any]] = []
    if target == "canvas":
        header = [*CANVAS_LEADING, *(canvas_column(lab, policies.get(lab, {})) for lab in labs)]
        rows.append(["Points Possible", "", "", "", "",
                     *(next((r["max_score"] for r in final if r["lab"] == lab and r["max_score"] != ""), "") for lab in labs)])
        for key, mine in students.items():
            any_row = next(iter(mine.values()))
            first, last = _names(any_row)
            if not (any_row["canvas_id"] or any_row["sis_id"]):
                unmatched.append(f"{key} ({any_row['student_name'] or 'no name'}): no canvas_id or sis_id; Canvas can only "
                                 "match this line by name")
            rows.append([f"{last}, {first}" if first and last else first or last, any_row["canvas_id"], any_row["sis_id"],
                         any_row.get("sis_login_id", ""), any_row["section"], *(_score(mine.get(lab)) for lab in labs)])
    elif target == "moodle":
        header = [*MOODLE_LEADING, *labs]
        for key, mine in students.items():
            any_row = next(iter(mine.values()))
            if not any_row["student_email"]:
                unmatched.append(f"{key} ({any_row['student_name'] or 'no name'}): no email; Moodle's import matches by email")
            first, last = _names(any_row)
            rows.append([first, last, any_row["student_email"], *(_score(mine.get(lab)) for lab in labs)])
    else:
        header = GENERIC_COLUMNS
        for key, mine in students.items():
            for lab in labs:
                row = mine.get(lab)
                if row is None:
                    continue
                comment = "; ".join(text for text in (row["rule"], row.get("changes", "")) if text)
                rows.append([row["student_id"] or key, lab, row["score"], row["raw_score"], row["late_penalty"],
                             row["status"], comment])
            if not next(iter(mine.values()))["student_id"]:
                unmatched.append(f"{key}: no sid in the roster; the line carries the gradebook's key instead")
    with replace_atomically(out) as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows([[_cell(value) for value in row] for row in rows])
    return Export(str(out), target, len(students), unmatched)
