"""Who a submission belongs to: roster, staff manifest, Gradescope metadata, LMS download names.

A submission's student is read from sources the student does not control, in this order,
and the first source that says anything decides:

1. the staff manifest CSV (``grade --manifest``): ``path`` (relative to the manifest's
   folder, or absolute), ``student`` (an email or sid), optional ``submitted_at`` (ISO
   8601 with its offset) and ``lab``;
2. the Gradescope export's ``submission_metadata.yml`` (names, emails, sids, ``created_at``);
3. a Canvas download name ``lastfirst_userid_submissionid_original`` (``lastfirst_late_…``
   when Canvas marked it late);
4. a Moodle download name ``Full Name_12345_assignsubmission_file_original`` (file or folder);
5. a folder per student: a folder (or the file's stem) named after a roster email, sid or name.

The roster (:func:`read_roster`) then fills every identity column.  Only the manifest and
Gradescope give a submission *time* (:attr:`Claim.submitted_at`); an LMS late marker
gives a ``late`` flag and nothing more.  An input no roster student matches keeps what
was read, and :attr:`Identity.problem` says what was read from its path and what was tried.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePath

from ..errors import CourseFileError
from ..intake import read_staff_csv

CANVAS_NAME = re.compile(r"^(?P<name>[a-z]+)(?P<late>_late)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<original>.+)$", re.IGNORECASE)
MOODLE_NAME = re.compile(r"^(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_(?:file|onlinetext)_(?P<original>.*)$")


def canvas_lastfirst(last: str, first: str) -> str:
    """The name part of a Canvas download's file name: last then first name, lower-case letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", f"{last}{first}".lower())


@dataclass(frozen=True)
class RosterStudent:
    """One student of the roster (several roster lines for one student, e.g. one per lab, are merged)."""

    key: str
    """Who the gradebook files the student under: the sid, else the email, else the name."""
    name: str = ""
    """The display name: as the roster gives it, else its first and last name joined."""
    email: str = ""
    sid: str = ""
    sis_id: str = ""
    canvas_id: str = ""
    moodle_id: str = ""
    section: str = ""
    sis_login_id: str = ""
    """Canvas's SIS Login ID, for the Canvas export (optional)."""
    first_name: str = ""
    last_name: str = ""
    """The name as the roster splits it (empty when it gives one display name only: it is never split again)."""
    tracks: Mapping[str, str] = field(default_factory=dict)
    """Lab id (or ``""`` for every lab) → track."""

    def track(self, lab: str) -> str:
        return self.tracks.get(lab) or self.tracks.get("", "")


@dataclass(frozen=True)
class Roster:
    """The course's students and the indexes the sources are matched through."""

    path: str
    students: tuple[RosterStudent, ...]
    layout: str = "mlsys-grader roster"
    """The layout the file was read as (:mod:`._rosters`)."""

    def __post_init__(self) -> None:
        index: dict[tuple[str, str], RosterStudent] = {}
        for student in self.students:
            for column in ("email", "sid", "sis_id", "sis_login_id", "canvas_id", "moodle_id", "name"):
                value = getattr(student, column)
                if value:
                    index.setdefault((column, value.lower()), student)
        # Canvas names a downloaded file after the student's sortable name, "lastfirst" in lower-case letters: a
        # roster that splits names (and has no Canvas ids) is matched through it, when exactly one student has it.
        lastfirst: dict[str, list[RosterStudent]] = {}
        for student in self.students:
            if student.last_name or student.first_name:
                lastfirst.setdefault(canvas_lastfirst(student.last_name, student.first_name), []).append(student)
        index.update({("lastfirst", key): found[0] for key, found in lastfirst.items() if key and len(found) == 1})
        object.__setattr__(self, "_index", index)

    def find(self, column: str, value: str) -> RosterStudent | None:
        """The student whose ``column`` equals ``value`` (case-insensitive), or None."""
        return self._index.get((column, value.strip().lower())) if value else None  # type: ignore[attr-defined]

    def by_email_or_sid(self, value: str) -> RosterStudent | None:
        """The student any id names: email, sid, SIS id, SIS login or an LMS user id (a manifest, an extension or
        Gradescope's metadata may use whichever the course has)."""
        return next((found for column in ("email", "sid", "sis_id", "sis_login_id", "canvas_id", "moodle_id")
                     if (found := self.find(column, value)) is not None), None)




# -- what an input says about its student ------------------------------------------

@dataclass(frozen=True)
class Claim:
    """What one source says about an input's student; empty strings where it says nothing."""

    source: str
    """``manifest``, ``gradescope``, ``canvas``, ``moodle`` or ``folder``."""
    read: str
    """What was read, in words, for the reason of an unmatched row."""
    name: str = ""
    email: str = ""
    sid: str = ""
    canvas_id: str = ""
    moodle_id: str = ""
    folder: str = ""
    submitted_at: datetime | None = None
    """A time the student does not control (manifest, Gradescope), or None."""
    late: bool = False
    """The LMS marked the submission late (Canvas's ``late`` marker)."""
    lab: str = ""


@dataclass(frozen=True)
class ManifestEntry:
    student: str
    submitted_at: datetime | None
    lab: str
    line: int


@dataclass(frozen=True)
class Manifest:
    """The staff manifest: input path (resolved) → who submitted it and when."""

    path: str
    entries: Mapping[str, ManifestEntry]

    def lookup(self, *paths: str | None) -> ManifestEntry | None:
        for path in paths:
            if path:
                found = self.entries.get(os.path.realpath(path))
                if found is not None:
                    return found
        return None


def parse_time(text: str, where: tuple[str, int], column: str = "submitted_at") -> datetime:
    """An ISO 8601 time with its offset (``2026-02-06T23:10:00-08:00``); raises :class:`CourseFileError` otherwise."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise CourseFileError(where[0], where[1], f"{column} must be an ISO 8601 time with its offset, "
                                                  f"e.g. 2026-02-06T23:10:00-08:00 (got {text!r})") from None
    if value.tzinfo is None:
        raise CourseFileError(where[0], where[1], f"{column} {text!r} has no UTC offset; add one, e.g. {text}-08:00")
    return value


def read_manifest(path: str | os.PathLike[str]) -> Manifest:
    """The manifest CSV (``path``, ``student``; optional ``submitted_at``, ``lab``); raises :class:`CourseFileError`."""
    header, rows = read_staff_csv(path, "manifest")
    missing = [c for c in ("path", "student") if c not in header]
    if missing:
        raise CourseFileError(str(path), 1, f"expected a manifest header with path and student (missing {missing}; got {header})")
    base = Path(path).resolve().parent
    entries: dict[str, ManifestEntry] = {}
    for line, row in rows:
        if not any(row.values()):
            continue
        if not row["path"] or not row["student"]:
            raise CourseFileError(str(path), line, f"expected a path and a student (got path {row['path']!r}, student {row['student']!r})")
        when = parse_time(row["submitted_at"], (str(path), line)) if row.get("submitted_at") else None
        target = os.path.realpath(base / row["path"])
        if target in entries:
            raise CourseFileError(str(path), line, f"{row['path']!r} is listed twice (first on line {entries[target].line})")
        entries[target] = ManifestEntry(row["student"], when, row.get("lab", ""), line)
    return Manifest(str(path), entries)


def lms_claim(component: str) -> Claim | None:
    """A Canvas or Moodle claim from one path component (a file or folder name), or None."""
    moodle = MOODLE_NAME.match(component)
    if moodle:
        return Claim("moodle", f"Moodle download name {component!r} gives name {moodle['name']!r}, "
                               f"participant id {moodle['participant']}",
                     name=moodle["name"], moodle_id=moodle["participant"])
    canvas = CANVAS_NAME.match(component)
    if canvas:
        late = bool(canvas["late"])
        return Claim("canvas", f"Canvas download name {component!r} gives name {canvas['name']!r}, user id {canvas['user']}"
                               + (" (marked late)" if late else ""),
                     name=canvas["name"], canvas_id=canvas["user"], late=late)
    return None


def path_components(source: str, root: str) -> list[str]:
    """The folder and file names from the input root down to ``source`` (just the name when it is the root)."""
    prefix = root.rstrip(os.sep) + os.sep if root else ""
    if prefix and source.startswith(prefix):  # the usual case, without relpath's two abspath calls per input
        parts = [p for p in source[len(prefix):].split(os.sep) if p and p != "."]
        if parts and ".." not in parts:
            return parts
    try:
        relative = PurePath(os.path.relpath(source, root)) if root else PurePath(PurePath(source).name)
    except ValueError:
        relative = PurePath(PurePath(source).name)
    parts = [p for p in relative.parts if p not in (".", "..")]
    return parts or [PurePath(source).name]


def claims_for(source: str, root: str, gradescope: Claim | None, manifest: Manifest | None,
               primary: str | None = None) -> list[Claim]:
    """Every claim about an input, in the order of precedence (the first decides)."""
    claims = []
    entry = manifest.lookup(source, primary) if manifest else None
    if entry is not None:
        claims.append(Claim("manifest", f"manifest {manifest.path} line {entry.line} gives student {entry.student!r}",  # type: ignore[union-attr]
                            email=entry.student, sid=entry.student, submitted_at=entry.submitted_at, lab=entry.lab))
    if gradescope is not None:
        claims.append(gradescope)
    components = path_components(source, root)
    if primary and primary != source:
        components.append(os.path.basename(primary))
    lms = [claim for claim in (lms_claim(c) for c in reversed(components)) if claim is not None]
    claims.extend(lms[:1])
    names = [*components[:-1], os.path.splitext(components[-1])[0]]
    claims.append(Claim("folder", "folder and file names " + " / ".join(repr(n) for n in names), folder="\x00".join(names)))
    return claims


# -- matching ----------------------------------------------------------------------

@dataclass(frozen=True)
class Identity:
    """Who an input belongs to, as the gradebook shows it."""

    key: str
    """The roster student's key, else the best identifier the source gave, else the input path."""
    source: str = ""
    student: RosterStudent | None = None
    name: str = ""
    email: str = ""
    sid: str = ""
    canvas_id: str = ""
    moodle_id: str = ""
    submitted_at: datetime | None = None
    late: bool = False
    lab: str = ""
    problem: str = ""
    """Why no roster student matched (empty when one did, or when there is no roster)."""

    def columns(self) -> dict[str, str]:
        """The identity columns of a gradebook row."""
        s = self.student
        # a roster without emails (a Canvas export whose logins are not emails) takes the email the source gave
        return {"student": self.key, "student_name": s.name if s else self.name,
                "student_email": (s.email if s else self.email) or (self.email if "@" in self.email else ""),
                "student_id": s.sid if s else self.sid, "sis_id": s.sis_id if s else "",
                "canvas_id": (s.canvas_id if s else "") or self.canvas_id, "moodle_id": (s.moodle_id if s else "") or self.moodle_id,
                "section": s.section if s else "", "identity_source": self.source,
                "submitted_at": self.submitted_at.isoformat() if self.submitted_at else "", "late": "yes" if self.late else ""}


def _match(claim: Claim, roster: Roster) -> tuple[RosterStudent | None, str]:
    """(student, what was tried) for one claim."""
    if claim.source in ("manifest", "gradescope"):
        people = [p for p in (claim.email.split("; ") + claim.sid.split("; ")) if p]
        for person in people:
            found = roster.by_email_or_sid(person)
            if found:
                return found, ""
        return None, f"no roster student has email or sid {' or '.join(repr(p) for p in dict.fromkeys(people))}"
    if claim.source == "canvas":
        found = roster.find("canvas_id", claim.canvas_id) or roster.find("lastfirst", claim.name)
        return found, "" if found else (f"no roster student has canvas_id {claim.canvas_id} or, as one student alone, the "
                                        f"Canvas file name's {claim.name!r}")
    if claim.source == "moodle":
        found = roster.find("moodle_id", claim.moodle_id) or roster.find("name", claim.name)
        return found, "" if found else f"no roster student has moodle_id {claim.moodle_id} or name {claim.name!r}"
    for name in reversed(claim.folder.split("\x00")):
        found = roster.find("email", name) or roster.find("sid", name) or roster.find("name", name)
        if found:
            return found, ""
    return None, "none of them is a roster email, sid or name"


def _fallback_key(claim: Claim) -> str:
    first = lambda text: text.split("; ")[0]  # noqa: E731 - a group submission is filed under its first member
    if claim.source == "canvas":
        return f"canvas:{claim.canvas_id}"
    if claim.source == "moodle":
        return f"moodle:{claim.moodle_id}"
    return first(claim.email) or first(claim.sid) or first(claim.name)


def identify(claims: Sequence[Claim], roster: Roster | None, fallback: str) -> Identity:
    """The identity of an input from its claims (:func:`claims_for`): the first claim decides."""
    claim = claims[0] if claims else Claim("", "")
    common = {"source": claim.source, "name": claim.name, "email": claim.email, "sid": claim.sid,
              "canvas_id": claim.canvas_id, "moodle_id": claim.moodle_id, "submitted_at": claim.submitted_at,
              "late": claim.late, "lab": claim.lab}
    if roster is None:
        key = _fallback_key(claim) if claim.source != "folder" else ""
        return Identity(key=key or fallback, **common)  # type: ignore[arg-type]
    student, tried = _match(claim, roster)
    if student is not None:
        return Identity(key=student.key, student=student, **common)  # type: ignore[arg-type]
    problem = f"not in roster {roster.path}: {claim.read}; {tried}"
    return Identity(key=_fallback_key(claim) or fallback, problem=problem, **common)  # type: ignore[arg-type]


def staff_files(*paths: str | os.PathLike[str] | None) -> frozenset[str]:
    """Resolved paths of the staff's own files, which are never inputs even inside a graded folder."""
    return frozenset(os.path.realpath(p) for p in paths if p)
