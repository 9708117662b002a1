"""The course file (``grade --course course.toml``): deadlines, late policy, extensions, LMS assignment ids.

::

    extensions = "extensions.csv"          # relative to this file: student (email or sid), lab, days, reason
    counting = "latest"                    # which submission counts: latest (by trusted time) or best
    [labs.lab07]
    deadline = 2026-02-06T23:59:00-08:00   # a TOML datetime with its offset
    grace_minutes = 30
    penalty_per_day = 10                   # percent of the score, per started day after deadline + grace
    cap = 50                               # percent, at most
    canvas_assignment_id = 123456          # optional, for the Canvas export's column header
    late_marker_days = 1                   # optional: a download the LMS marked late, with no trusted time, is 1 day late

The penalty (:mod:`mlsys_grader.core.late`, the rule the Gradescope runner applies too) is
``min(cap, penalty_per_day × started days)`` percent of the score, the days counted from the
deadline plus the grace plus the student's extension.  Only a time the
student does not control counts (the manifest's ``submitted_at``, Gradescope's
``created_at``): without one there is no penalty, and the rule says so.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core.late import Extension, Penalty
from ..core.late import penalty as core_penalty
from ..errors import CourseFileError
from ._identity import Roster, read_staff_csv

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


def read_course(path: str | os.PathLike[str], roster: Roster | None = None) -> Course:
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


def read_extensions(path: str | os.PathLike[str], roster: Roster | None, labs: set[str]) -> dict[tuple[str, str], Extension]:
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


def penalty(course: Course | None, student: str, lab: str, submitted_at: datetime | None, late_marker: bool = False) -> Penalty:
    """The late penalty (percent of the score) and the rule applied, in words: the core's rule
    (:func:`mlsys_grader.core.late.penalty`) under the course file's policy for ``lab`` and the student's extension."""
    return core_penalty(course.file.labs.get(lab) if course else None, submitted_at, late_marker,
                        extension=course.extensions.get((student, lab)) if course else None)
