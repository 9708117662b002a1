"""The course file (``course.toml``): deadlines, late policy, extensions, LMS assignment ids — read here, below
every edge, because bulk grading (:mod:`mlsys_grader.course`), the Gradescope runner and the autograder builder all
read it (see :mod:`mlsys_grader.course._late` for the format and the penalty).  Also the one reader of staff CSVs
(roster, manifest, extensions): UTF-8, a header, one row per line, a malformed file refused naming the line.
"""

from __future__ import annotations

import csv
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core.late import Extension
from ..errors import CourseFileError

Counting = Literal["latest", "best"]


MAX_EXTENSION_DAYS = 365
"""The longest extension an extensions line may grant, in days (a longer one is a typo, and 1e308 days overflows a date)."""


class LabPolicy(BaseModel):
    """One lab's deadline and late policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deadline: datetime | None = Field(default=None, description="Due time, a TOML datetime with its UTC offset.")
    grace_minutes: float = Field(default=0, ge=0, description="Minutes after the deadline before a submission is late.")
    penalty_per_day: float = Field(default=0, ge=0, le=100, description="Percent of the score per started day late.")
    cap: float = Field(default=100, ge=0, le=100, description="The largest penalty, in percent.")
    late_marker_days: int | None = Field(
        default=None, ge=0, le=365,
        description="Started days charged for a submission the LMS marked late (Canvas's or Moodle's late marker) when "
                    "no trusted submission time is known; unset: the marker is shown, no penalty.")
    canvas_assignment_id: int | None = Field(default=None, description="The Canvas assignment id, for the export's header.")
    canvas_name: str | None = Field(default=None, description="The assignment's name in Canvas (default: the lab id).")

    @field_validator("deadline")
    @classmethod
    def _has_offset(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError(f"deadline {value.isoformat()} has no UTC offset; write it as {value.isoformat()}-08:00 or similar")
        return value


class CourseFile(BaseModel):
    """The whole course file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    extensions: str | None = Field(default=None, description="Extensions CSV, relative to the course file.")
    counting: Counting = Field(default="latest", description="Which submission counts: the latest by trusted time, or the best.")
    labs: dict[str, LabPolicy] = Field(default_factory=dict, description="Lab id → its policy.")


@dataclass(frozen=True)
class Course:
    """A read course file with its extensions (student key, lab) → :class:`Extension`."""

    path: str
    file: CourseFile
    extensions: Mapping[tuple[str, str], Extension]

    @property
    def counting(self) -> Counting:
        return self.file.counting

    def digest_text(self) -> str:
        """What the penalties depend on, for telling whether they must be recomputed."""
        return self.file.model_dump_json() + repr(sorted((k, v.days) for k, v in self.extensions.items()))


class RosterKeys(Protocol):
    """What reading the extensions asks of a roster (:class:`mlsys_grader.course.Roster` is one): the student an email
    or sid names, whose ``key`` the extensions are filed under."""

    def by_email_or_sid(self, value: str) -> StudentKey | None: ...


class StudentKey(Protocol):
    @property
    def key(self) -> str: ...


def read_course(path: str | os.PathLike[str], roster: RosterKeys | None = None) -> Course:
    """Read and validate ``course.toml`` (and its extensions CSV); raises :class:`CourseFileError`."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CourseFileError(str(path), None, f"expected TOML ({exc})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseFileError(str(path), None, f"cannot read the course file ({exc})") from exc
    try:
        course = CourseFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CourseFileError(str(path), None, f"{where}: {first['msg']} (got {first.get('input')!r})") from exc
    extensions: dict[tuple[str, str], Extension] = {}
    if course.extensions:
        extensions = read_extensions(Path(path).resolve().parent / course.extensions, roster, set(course.labs))
    return Course(str(path), course, extensions)


def read_extensions(path: str | os.PathLike[str], roster: RosterKeys | None, labs: set[str]) -> dict[tuple[str, str], Extension]:
    """The extensions CSV: ``student`` (email or sid), ``lab``, ``days``, ``reason``, keyed by (student key, lab).

    Refused naming the file and line (:class:`CourseFileError`): days that are not a number from 0 to
    :data:`MAX_EXTENSION_DAYS`, a lab the course file does not list, a student who is not in the roster, and a second
    line for the same student and lab (which one was meant cannot be told)."""
    header, rows = read_staff_csv(path, "extensions")
    missing = [c for c in ("student", "lab", "days") if c not in header]
    if missing:
        raise CourseFileError(str(path), 1, f"expected an extensions header with student, lab, days, reason (missing {missing})")
    found: dict[tuple[str, str], Extension] = {}
    lines: dict[tuple[str, str], int] = {}
    for line, row in rows:
        if not any(row.values()):
            continue
        try:
            days = float(row["days"])
        except ValueError:
            raise CourseFileError(str(path), line, f"days must be a number of days (got {row['days']!r})") from None
        if not math.isfinite(days) or not 0 <= days <= MAX_EXTENSION_DAYS:
            raise CourseFileError(str(path), line, f"days must be a number from 0 to {MAX_EXTENSION_DAYS} (got {row['days']!r})")
        if labs and row["lab"] not in labs:
            raise CourseFileError(str(path), line, f"lab must be one of {sorted(labs)} (got {row['lab']!r})")
        if not row["student"]:
            raise CourseFileError(str(path), line, "expected a student (email or sid) on every extensions line (got none)")
        key = row["student"]
        if roster is not None:
            student = roster.by_email_or_sid(key)
            if student is None:
                raise CourseFileError(str(path), line, f"student {key!r} is no roster email or sid")
            key = student.key
        if (key, row["lab"]) in lines:
            raise CourseFileError(str(path), line, f"student {row['student']!r} already has an extension for {row['lab']} on "
                                                   f"line {lines[(key, row['lab'])]}; keep one line per student and lab")
        lines[(key, row["lab"])] = line
        found[(key, row["lab"])] = Extension(days, row.get("reason", ""))
    return found


def read_staff_csv(path: str | os.PathLike[str], what: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(lower-cased header, [(line number, row)]) of a staff CSV; a malformed file raises :class:`CourseFileError`."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            header = [(name or "").strip().lower() for name in reader.fieldnames or []]
            rows = []
            for raw in reader:
                if None in raw:
                    raise CourseFileError(str(path), reader.line_num,
                                          f"{what} row has {len(header) + len(raw[None])} cells; the header has {len(header)}")
                rows.append((reader.line_num, {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}))
    except UnicodeDecodeError as exc:
        raise CourseFileError(str(path), None, f"expected a UTF-8 {what} CSV, got undecodable bytes ({exc.reason})") from exc
    except csv.Error as exc:
        raise CourseFileError(str(path), None, f"expected a {what} CSV ({exc})") from exc
    return header, rows
