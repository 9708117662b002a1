"""Rosters as the LMS exports them: read as they are, told apart by their header row.

``grade --roster FILE`` reads, with ``,`` or ``;`` as the delimiter and with or without a
UTF-8 byte-order mark (a spreadsheet saved it):

* **mlsys-grader's own CSV**: ``name``, ``email`` or ``sid``, and optional ``first_name``,
  ``last_name``, ``sis_id``, ``canvas_id``, ``moodle_id``, ``section``, ``sis_login_id``,
  ``track``, ``lab`` (``student_id`` and ``student`` read as ``sid`` and ``name``);
* **Canvas's gradebook export**: ``Student`` ("Last, First"), ``ID`` (the Canvas user id),
  ``SIS User ID`` (the sid), ``SIS Login ID`` (the login; the email too when it holds an
  ``@``), ``Section``, then assignment columns; its ``Points Possible`` row and its test
  student ("Student, Test") are no students;
* **Moodle's participants export** (``First name``, ``Last name``, ``ID number``, ``Email
  address``, ``Roles``, …; only those with the student role) and **Moodle's grades export**
  (``First name``, ``Last name``, ``ID number``, ``Institution``, ``Department``, ``Email
  address``, then grade columns);
* **Gradescope's roster export** (``First Name``, ``Last Name`` — or ``Name`` —, ``SID``,
  ``Email``, ``Role``, ``Sections``; only students).

A header that is none of these is refused, naming the columns found and the layouts
expected.  Two students sharing a non-empty email, sid, SIS id, login or LMS id are refused
naming both lines (empty values never collide).  Names are kept as the roster splits them:
``first_name`` and ``last_name`` where the export has them, the display name for matching
and the gradebook; a display name is never split again.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import CourseFileError
from ._identity import Roster, RosterStudent

FIELDS = ("name", "first_name", "last_name", "email", "sid", "sis_id", "canvas_id", "moodle_id", "section", "sis_login_id")
"""What a roster line says about a student (and, per line, ``track`` and ``lab``)."""
UNIQUE = ("email", "sid", "sis_id", "sis_login_id", "canvas_id", "moodle_id")
"""Ids two students may never share (the LMS matches on them)."""
MAX_ROSTER_BYTES = 16 * 1024 * 1024
CANVAS_TEST_STUDENT = "student, test"
"""How Canvas names the test student of its Student View (``Test Student``, last name first)."""

Line = dict[str, str]


@dataclass(frozen=True)
class Layout:
    """One roster layout: how its header is recognised and how a line becomes the roster's fields (None: no student)."""

    name: str
    expected: str
    """The header columns it is recognised by, in words, for the refusal of an unknown header."""
    matches: Callable[[set[str]], bool]
    convert: Callable[[Mapping[str, str]], Line | None]


def _own(row: Mapping[str, str]) -> Line | None:
    line = {{"student_id": "sid", "student": "name", "first name": "first_name", "last name": "last_name"}.get(k, k): v
            for k, v in row.items()}
    return _named(line)


def _named(line: Line) -> Line:
    """``line`` with its display name: the name given, else first and last name joined (never split again)."""
    if not line.get("name"):
        line["name"] = " ".join(part for part in (line.get("first_name", ""), line.get("last_name", "")) if part)
    return line


def _canvas(row: Mapping[str, str]) -> Line | None:
    student = row.get("student", "")
    if not student or student.strip().lower() in ("points possible", CANVAS_TEST_STUDENT) \
            or ("points possible" in student.lower() and not row.get("id")):
        return None
    last, comma, first = student.partition(",")
    login = row.get("sis login id", "")
    line = {"name": f"{first.strip()} {last.strip()}".strip() if comma else student.strip(),
            "first_name": first.strip() if comma else "", "last_name": last.strip() if comma else "",
            "canvas_id": row.get("id", ""), "sid": row.get("sis user id", ""), "sis_id": row.get("sis user id", ""),
            "sis_login_id": login, "email": login if "@" in login else row.get("email", ""), "section": row.get("section", ""),
            "track": row.get("track", "")}
    return line


def _role_ok(row: Mapping[str, str], column: str) -> bool:
    """A line whose role column (when there is one) does not name a student is staff, not a student."""
    roles = row.get(column)
    return roles is None or not roles.strip() or "student" in roles.lower()


def _moodle(row: Mapping[str, str]) -> Line | None:
    if not _role_ok(row, "roles"):
        return None
    line = {"first_name": row.get("first name", ""), "last_name": row.get("last name", ""), "name": row.get("full name", ""),
            "sid": row.get("id number", ""), "email": row.get("email address", ""), "section": row.get("groups", ""),
            "track": row.get("track", "")}
    return _named(line)


def _gradescope(row: Mapping[str, str]) -> Line | None:
    if not _role_ok(row, "role"):
        return None
    line = {"first_name": row.get("first name", ""), "last_name": row.get("last name", ""),
            "name": row.get("name", "") or row.get("full name", ""), "sid": row.get("sid", ""), "email": row.get("email", ""),
            "section": row.get("sections", "") or row.get("section", ""), "track": row.get("track", "")}
    return _named(line)


LAYOUTS = (
    Layout("Canvas gradebook export", "Student, ID, SIS User ID, SIS Login ID, Section, …",
           lambda h: {"student", "id"} <= h and bool({"sis user id", "sis login id", "section"} & h), _canvas),
    Layout("Moodle export (participants or grades)", "First name, Last name, ID number, Email address, …",
           lambda h: "email address" in h and ({"first name", "last name"} <= h or "full name" in h), _moodle),
    Layout("Gradescope roster export", "First Name, Last Name (or Name), SID, Email, Role, Sections",
           lambda h: "email" in h and ("role" in h or {"first name", "last name"} <= h), _gradescope),
    Layout("mlsys-grader roster", "name, email or sid; optional first_name, last_name, sis_id, canvas_id, moodle_id, section, "
                                  "sis_login_id, track, lab",
           lambda h: bool({"name", "email", "sid", "student_id", "student"} & h), _own),
)


def _delimiter(header_line: str) -> str:
    """``;`` when the header row holds more semicolons than commas outside quotes (a European spreadsheet), else ``,``."""
    outside, quoted = [], False
    for char in header_line:
        if char == '"':
            quoted = not quoted
        elif not quoted:
            outside.append(char)
    text = "".join(outside)
    return ";" if text.count(";") > text.count(",") else "\t" if text.count("\t") > text.count(",") else ","


def _read_text(path: str | os.PathLike[str], what: str) -> str:
    """The text of a staff file (without its BOM); raises :class:`CourseFileError` for one too large, unreadable or not
    UTF-8."""
    try:
        size = os.path.getsize(path)
        if size > MAX_ROSTER_BYTES:
            raise CourseFileError(str(path), None, f"expected a {what} CSV under {MAX_ROSTER_BYTES:,} bytes (got {size:,})")
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CourseFileError(str(path), None, f"expected a UTF-8 {what} CSV, got undecodable bytes ({exc.reason})") from exc
    except OSError as exc:
        raise CourseFileError(str(path), None, f"cannot read the {what} ({exc.strerror or exc})") from exc


def _blank(cells: Sequence[str]) -> bool:
    """True when no cell holds anything but whitespace."""
    return not any(c.strip() for c in cells)


def _row(cells: Sequence[str], header: Sequence[str], path: str, line_no: int, what: str) -> dict[str, str]:
    """Header column → stripped cell (empty for a missing one); raises :class:`CourseFileError` for a row with
    non-empty cells beyond the header."""
    if len(cells) > len(header) and not _blank(cells[len(header):]):
        raise CourseFileError(path, line_no, f"{what} row has {len(cells)} cells; the header has {len(header)}")
    return {name: (cells[i].strip() if i < len(cells) else "") for i, name in enumerate(header) if name}


def _csv_lines(text: str, path: str, what: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(lower-cased header, [(line number, row)]) of CSV ``text`` in the delimiter its header row uses, blank rows
    skipped; raises :class:`CourseFileError` naming ``path`` and the line for text that is not such a CSV."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(first))
    rows: list[tuple[int, dict[str, str]]] = []
    header: list[str] | None = None
    try:
        for cells in reader:
            if _blank(cells):
                continue
            if header is None:
                header = [c.strip().lower() for c in cells]
                continue
            rows.append((reader.line_num, _row(cells, header, path, reader.line_num, what)))
    except csv.Error as exc:
        raise CourseFileError(path, reader.line_num, f"expected a {what} CSV ({exc})") from exc
    return header or [], rows


def read_lines(path: str | os.PathLike[str], what: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(lower-cased header, [(line number, row)]) of a staff CSV in either delimiter, BOM or not; raises
    :class:`CourseFileError` naming the file (and line) for a file that is not such a CSV."""
    return _csv_lines(_read_text(path, what), str(path), what)


def layout_of(header: Sequence[str]) -> Layout | None:
    """The layout a header row belongs to, or None."""
    columns = set(header)
    return next((layout for layout in LAYOUTS if layout.matches(columns)), None)


def read_roster(path: str | os.PathLike[str]) -> Roster:
    """The roster in any layout of the module docstring; raises :class:`CourseFileError` naming the file and line.

    Lines with the same sid (else email, else name) are one student (e.g. one line per lab, for a track per lab).
    """
    header, rows = read_lines(path, "roster")
    layout = layout_of(header)
    if layout is None:
        expected = "; ".join(f"{layout.name} ({layout.expected})" for layout in LAYOUTS)
        raise CourseFileError(str(path), 1, f"expected a roster header of one of these layouts: {expected}; "
                                            f"found columns {header}")
    merged: dict[str, dict[str, str]] = {}
    first_line: dict[str, int] = {}
    tracks: dict[str, dict[str, str]] = {}
    owners: dict[tuple[str, str], tuple[str, int]] = {}
    for line_no, raw in rows:
        line = layout.convert(raw)
        if line is None:
            continue
        key = line.get("sid") or line.get("email") or line.get("canvas_id") or line.get("name") or ""
        if not key:
            raise CourseFileError(str(path), line_no, f"expected a name, email or sid on every roster line (got {raw})")
        known = merged.setdefault(key, {})
        first_line.setdefault(key, line_no)
        for column in FIELDS:
            value = line.get(column, "")
            if not value:
                continue
            if known.get(column) and known[column] != value:
                raise CourseFileError(str(path), line_no, f"student {key!r} has {column} {known[column]!r} on line "
                                                          f"{first_line[key]} and {value!r} here")
            known[column] = value
            if column in UNIQUE:
                other = owners.setdefault((column, value.lower()), (key, line_no))
                if other[0] != key:
                    raise CourseFileError(str(path), line_no, f"{column} {value!r} is also on line {other[1]} (student "
                                                              f"{other[0]!r}): two students cannot share it")
        if line.get("track"):
            tracks.setdefault(key, {})[raw.get("lab", "")] = line["track"]
    students = tuple(RosterStudent(key=key, tracks=tracks.get(key, {}), **values) for key, values in merged.items())
    return Roster(str(path), students, layout.name)
