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
from ._row import FinalRow
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


def _read_gradebook(db_path: str | os.PathLike[str]) -> tuple[list[FinalRow], dict[str, Any]]:
    """(the final gradebook's rows, the course file's policy per lab) stored at ``db_path``."""
    db = GradebookDB(db_path)
    try:
        final = db.final()
        found = db.conn.execute("SELECT value FROM meta WHERE key = 'course'").fetchone()
    finally:
        db.close()
    policies: dict[str, Any] = json.loads(found[0]).get("labs", {}) if found else {}
    return final, policies


def _points_possible(final: Sequence[Mapping[str, Any]], lab: str) -> Any:
    """The first maximum score a row of ``lab`` gives ("" when none does)."""
    return next((r["max_score"] for r in final if r["lab"] == lab and r["max_score"] != ""), "")


def _canvas_student(row: Mapping[str, Any]) -> str:
    """Canvas's ``Student`` cell: "Last, First" when the roster gives both, else whichever it gives."""
    first, last = _names(row)
    return f"{last}, {first}" if first and last else first or last


def _canvas(final: Sequence[Mapping[str, Any]], labs: Sequence[str], policies: Mapping[str, Any],
            students: Mapping[str, Mapping[str, Mapping[str, Any]]], unmatched: list[str]) -> tuple[list[str], list[list[Any]]]:
    """Canvas's header and lines (the ``Points Possible`` line first); appends the students Canvas matches only by name."""
    header = [*CANVAS_LEADING, *(canvas_column(lab, policies.get(lab, {})) for lab in labs)]
    rows: list[list[Any]] = [["Points Possible", "", "", "", "", *(_points_possible(final, lab) for lab in labs)]]
    for key, mine in students.items():
        any_row = next(iter(mine.values()))
        if not (any_row["canvas_id"] or any_row["sis_id"]):
            unmatched.append(f"{key} ({any_row['student_name'] or 'no name'}): no canvas_id or sis_id; Canvas can only "
                             "match this line by name")
        rows.append([_canvas_student(any_row), any_row["canvas_id"], any_row["sis_id"],
                     any_row.get("sis_login_id", ""), any_row["section"], *(_score(mine.get(lab)) for lab in labs)])
    return header, rows


def _moodle(labs: Sequence[str], students: Mapping[str, Mapping[str, Mapping[str, Any]]],
            unmatched: list[str]) -> tuple[list[str], list[list[Any]]]:
    """Moodle's header and lines; appends the students without the email Moodle matches on."""
    header = [*MOODLE_LEADING, *labs]
    rows: list[list[Any]] = []
    for key, mine in students.items():
        any_row = next(iter(mine.values()))
        if not any_row["student_email"]:
            unmatched.append(f"{key} ({any_row['student_name'] or 'no name'}): no email; Moodle's import matches by email")
        first, last = _names(any_row)
        rows.append([first, last, any_row["student_email"], *(_score(mine.get(lab)) for lab in labs)])
    return header, rows


def _generic_line(key: str, lab: str, row: Mapping[str, Any]) -> list[Any]:
    """The generic line of one student's result for one lab."""
    comment = "; ".join(text for text in (row["rule"], row.get("changes", "")) if text)
    return [row["student_id"] or key, lab, row["score"], row["raw_score"], row["late_penalty"], row["status"], comment]


def _generic(labs: Sequence[str], students: Mapping[str, Mapping[str, Mapping[str, Any]]],
             unmatched: list[str]) -> tuple[list[str], list[list[Any]]]:
    """The generic header and lines, one per student and lab; appends the students without a sid."""
    rows: list[list[Any]] = []
    for key, mine in students.items():
        rows.extend(_generic_line(key, lab, mine[lab]) for lab in labs if mine.get(lab) is not None)
        if not next(iter(mine.values()))["student_id"]:
            unmatched.append(f"{key}: no sid in the roster; the line carries the gradebook's key instead")
    return GENERIC_COLUMNS, rows


def _write(out: str | os.PathLike[str], header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write the header and the lines (each cell made safe for a spreadsheet) to ``out``."""
    with replace_atomically(out) as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows([[_cell(value) for value in row] for row in rows])


def export_lms(db_path: str | os.PathLike[str], target: Target, out: str | os.PathLike[str]) -> Export:
    """Write ``target``'s import file from the gradebook at ``db_path``; one line per student (generic: per student and lab)."""
    if target not in TARGETS:
        raise ValueError(f"unknown LMS {target!r}; expected one of {', '.join(TARGETS)}")
    final, policies = _read_gradebook(db_path)
    labs = sorted({row["lab"] for row in final})
    unmatched: list[str] = [f"{row['student']} {row['lab']}: not in the roster, not exported ({row['path']})"
                            for row in final if "not_in_roster" in row.flags]
    students = _by_student([row for row in final if "not_in_roster" not in row.flags])
    if target == "canvas":
        header, rows = _canvas(final, labs, policies, students, unmatched)
    elif target == "moodle":
        header, rows = _moodle(labs, students, unmatched)
    else:
        header, rows = _generic(labs, students, unmatched)
    _write(out, header, rows)
    return Export(str(out), target, len(students), unmatched)
