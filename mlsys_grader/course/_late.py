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

The penalty is ``min(cap, penalty_per_day × started days)`` percent of the score, the days
counted from the deadline plus the grace plus the student's extension.  Only a time the
student does not control counts (the manifest's ``submitted_at``, Gradescope's
``created_at``): without one there is no penalty, and the rule says so.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import CourseFileError
from ._identity import Roster, read_staff_csv

Counting = Literal["latest", "best"]


class LabPolicy(BaseModel):
    """One lab's deadline and late policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deadline: datetime | None = Field(default=None, description="Due time, a TOML datetime with its UTC offset.")
    grace_minutes: float = Field(default=0, ge=0, description="Minutes after the deadline before a submission is late.")
    penalty_per_day: float = Field(default=0, ge=0, le=100, description="Percent of the score per started day late.")
    cap: float = Field(default=100, ge=0, le=100, description="The largest penalty, in percent.")
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
class Extension:
    days: float
    reason: str


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
    """The extensions CSV: ``student`` (email or sid), ``lab``, ``days``, ``reason``, keyed by (student key, lab)."""
    header, rows = read_staff_csv(path, "extensions")
    missing = [c for c in ("student", "lab", "days") if c not in header]
    if missing:
        raise CourseFileError(str(path), 1, f"expected an extensions header with student, lab, days, reason (missing {missing})")
    found: dict[tuple[str, str], Extension] = {}
    for line, row in rows:
        if not any(row.values()):
            continue
        try:
            days = float(row["days"])
        except ValueError:
            raise CourseFileError(str(path), line, f"days must be a number of days (got {row['days']!r})") from None
        if not math.isfinite(days) or days < 0:
            raise CourseFileError(str(path), line, f"days must be 0 or more (got {row['days']!r})")
        if labs and row["lab"] not in labs:
            raise CourseFileError(str(path), line, f"lab must be one of {sorted(labs)} (got {row['lab']!r})")
        key = row["student"]
        if roster is not None:
            student = roster.by_email_or_sid(key)
            if student is None:
                raise CourseFileError(str(path), line, f"student {key!r} is no roster email or sid")
            key = student.key
        found[(key, row["lab"])] = Extension(days, row.get("reason", ""))
    return found


@dataclass(frozen=True)
class Penalty:
    percent: float
    rule: str


def penalty(course: Course | None, student: str, lab: str, submitted_at: datetime | None, late_marker: bool = False,
            *, extension: Extension | None = None, deadline: datetime | None = None) -> Penalty:
    """The late penalty (percent of the score) and the rule applied, in words.

    ``extension`` and ``deadline`` replace the course file's (Gradescope's own due dates, see
    :func:`gradescope_penalty`).
    """
    policy = course.file.labs.get(lab) if course else None
    deadline = (policy.deadline if policy else None) or deadline
    if policy is None or deadline is None:
        return Penalty(0.0, "LMS marked it late; no deadline in the course file, no penalty" if late_marker else "")
    extension = extension or (course.extensions.get((student, lab)) if course else None)
    due = deadline + timedelta(minutes=policy.grace_minutes, days=extension.days if extension else 0)
    terms = f"due {deadline.isoformat()}"
    if policy.grace_minutes:
        terms += f" + {policy.grace_minutes:g} min grace"
    if extension:
        terms += f" + {extension.days:g} d extension" + (f" ({extension.reason})" if extension.reason else "")
    terms += f"; {policy.penalty_per_day:g} % per started day, cap {policy.cap:g} %"
    if submitted_at is None:
        marker = "; LMS marked it late" if late_marker else ""
        return Penalty(0.0, f"{terms}; no trusted submission time{marker}: no penalty")
    if submitted_at <= due:
        return Penalty(0.0, f"{terms}; submitted {submitted_at.isoformat()}: on time")
    days = math.ceil((submitted_at - due) / timedelta(days=1))
    percent = min(policy.cap, policy.penalty_per_day * days)
    return Penalty(percent, f"{terms}; submitted {submitted_at.isoformat()}: {days} day{'s' if days > 1 else ''} late, "
                            f"-{percent:g} %")


def _aware(text: Any) -> datetime | None:
    try:
        value = datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None
    return value if value is not None and value.tzinfo is not None else None


def gradescope_penalty(course: Course, lab: str, metadata: Mapping[str, Any]) -> Penalty:
    """The late penalty of a Gradescope submission from its ``submission_metadata.json``.

    The submission time is ``created_at``; the deadline is the course file's, else the
    assignment's ``due_date``; the extension is the course file's (by a submitter's email or
    sid), else a submitter's own later ``assignment.due_date`` (how Gradescope records an
    extension).  A submission without ``created_at`` gets no penalty, and the rule says so.
    """
    found = metadata.get("assignment")
    assignment: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    users = [u for u in metadata.get("users") or [] if isinstance(u, Mapping)]
    due = _aware(assignment.get("due_date"))
    extension = next((course.extensions[(str(u.get(k)), lab)] for u in users for k in ("email", "sid")
                      if (str(u.get(k)), lab) in course.extensions), None)
    if extension is None and due is not None:
        own = [d for d in (_aware((u.get("assignment") or {}).get("due_date")) for u in users
                           if isinstance(u.get("assignment"), Mapping)) if d is not None and d > due]
        if own:
            extension = Extension((max(own) - due) / timedelta(days=1), "Gradescope extension")
    return penalty(course, "", lab, _aware(metadata.get("created_at")), extension=extension, deadline=due)
