"""Gradebook rows as frozen values: one :class:`Row` per input, one :class:`FinalRow` per student and lab; the status as an enum.

A :class:`Row` keeps what the per-input CSV shows (identity, scores per part and item,
flags, reasons) as typed fields, and what only the gradebook's own views read (the report's
findings, the rationale, the items held for staff and each item's maximum) apart from the
columns, so nothing travels as ``_findings``-style keys.  A row is read like a mapping of its
CSV columns (``row["score"]``, ``row.get("A.captured", "")``: :meth:`Row.columns`), and a
changed row is a new one (:meth:`Row.but`).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Any, NamedTuple, TypedDict


class ItemKey(NamedTuple):
    """A rubric item of a part as a grade stores it (``A.captured``, ``synthesis.rationale_length``; a part's time label
    ``A.prediction_locked_at`` alike): read into its two names where a stored grade is read, never split again."""

    part: str
    item: str

    @classmethod
    def of(cls, column: str) -> ItemKey:
        """The key a stored column names (``"A.captured"`` → ``ItemKey("A", "captured")``)."""
        part, _, item = column.partition(".")
        return cls(part, item)

    def __str__(self) -> str:
        return f"{self.part}.{self.item}"


class Status(StrEnum):
    """What became of an input (the ``status`` column)."""

    GRADED = "graded"
    REGRADE = "regrade"
    """Graded, with points held because the grader itself failed on part of it (flag ``grader_error``)."""
    ERROR = "error"
    """It cannot be read as a bundle, or its form is one the course does not accept."""
    UNSUPPORTED = "unsupported"
    """A file in no accepted form (a PDF, a text file)."""
    TIMEOUT = "timeout"
    MEMORY = "memory"
    CRASH = "crash"
    MISSING = "missing"
    """A final row only: a roster student with no submission of the lab (or one staff decided counts as missing)."""
    UNREADABLE = "unreadable"
    """A final row only: the student handed in an upload that cannot be graded (truncated, empty, a PDF, a form the
    course does not accept); staff decide it in review (:mod:`._decisions`), the row names the file and why."""


NOT_GRADED = (Status.UNREADABLE, Status.TIMEOUT, Status.MEMORY, Status.CRASH)
"""Final statuses of a student who submitted but whose submission the machine could not grade: each waits for a staff
decision on the whole submission (a score, or "counts as missing")."""
UNREADABLE_INPUT = (Status.ERROR, Status.UNSUPPORTED)
"""Input statuses that make the counting submission's final row :attr:`Status.UNREADABLE`."""


class Result(TypedDict, total=False):
    """What grading one input yields (stored as JSON in the gradebook database, keyed by its input hash), from which
    :func:`._gradebook.make_row` builds its :class:`Row`.  An ungradable input has ``status``, ``reason`` and
    ``error_kind``; a graded one the report's summary (:func:`._worker.summarize`) and what collusion, the review
    page and the feedback files need."""

    status: str
    """A :class:`Status` value, or ``reuse`` (the stored result is used)."""
    input_hash: str
    origin: str
    reason: str
    error_kind: str
    lab: str
    track: str
    score: float
    max_score: float
    parts: dict[str, float]
    items: dict[str, float]
    flags: list[str]
    findings: list[list[str]]
    """(part, criterion, rubric item or "", message) per finding."""
    hidden: list[int]
    """Indices of the findings withheld from feedback until grades are released."""
    item_max: dict[str, float]
    rubric: str
    held: list[str]
    certainty: dict[str, list[str | None]]
    part_times: dict[str, list[str]]
    rationale: str
    evidence: dict[str, dict[str, Any]]
    spans: list[list[Any]]
    choices: dict[str, Any]
    controls: dict[str, dict[str, Any]]
    report: dict[str, Any]
    template: dict[str, Any]
    """For a rationale flagged ``generated`` (or partly the template's): the template it was matched against and the
    rationale's sentences judged the template's (:func:`._worker.graded_result`), for the review page."""
    """The grade report as JSON (``GradeReport.model_dump(mode="json")``): what the gradebook stores as the record of
    the grade; the summary fields above are its view (:func:`._worker.summary_of`)."""
    work_path: list[tuple[str, str]]
    """The work's labelled events (:func:`._collusion.work_path`), for the collusion report."""
    """Part → the bundle's final control settings, for the review page's collusion view."""


SCORED = (Status.GRADED, Status.REGRADE)
"""Statuses whose row carries a score from the grader (and takes part in collusion)."""

Finding = tuple[str, str, str, str]
"""A finding as a row keeps it: (part, criterion, rubric item or "", message)."""


class _ColumnsView(Mapping[str, Any]):
    """A row read as the mapping of its columns (``columns``, which each row defines)."""

    @property
    @abc.abstractmethod
    def columns(self) -> Mapping[str, Any]: ...

    def __getitem__(self, key: str) -> Any:
        return self.columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    __hash__ = None  # type: ignore[assignment]  # rows hold mappings: compared, never hashed


@dataclass(frozen=True, eq=True)
class Row(_ColumnsView):
    """One input's gradebook row (see the module docstring)."""

    path: str
    kind: str
    identity: Mapping[str, Any]
    """The identity columns (``student`` … ``late``) from :meth:`._identity.Identity.columns`."""
    input_hash: str
    lab: str
    track: str
    status: Status
    score: float
    max_score: float | str
    parts: Mapping[str, float]
    """Part (``A`` … ``synthesis``) → points, written as the ``part_<name>`` columns."""
    points: Mapping[str, float | bool | str]
    """Item (``A.captured`` …) → points (a formative item: True/False, or "" when it could not be judged)."""
    flags: tuple[str, ...]
    reasons: str
    error_kind: str
    origin: str
    grader_version: str
    rubric: str
    roster_track: str = ""
    collusion_group: str = ""
    findings: tuple[Finding, ...] = ()
    """The report's findings, for the HTML summary (not a CSV column)."""
    rationale: str = ""
    """The synthesis rationale, shown beside collusion pairs in the summary (not a CSV column)."""
    held: tuple[str, ...] = ()
    """The items held for staff (``C.replay`` …), for overrides (not a CSV column)."""
    item_max: Mapping[str, float] = field(default_factory=dict)
    """Each item's maximum, for overrides (not a CSV column)."""
    reason_list: tuple[str, ...] = ()
    """The reasons one by one (``reasons`` is their CSV column, joined): what the summary orders, never split again."""

    def but(self, **changes: Any) -> Row:
        """This row with ``changes`` (field names) applied."""
        return replace(self, **changes)

    def with_reason_first(self, reason: str) -> Row:
        """This row with ``reason`` before its others (in ``reasons`` and ``reason_list``)."""
        return replace(self, reasons=reason + (" | " + self.reasons if self.reasons else ""),
                       reason_list=(reason, *self.reason_list))

    def with_flag(self, flag: str) -> Row:
        return self if flag in self.flags else replace(self, flags=(*self.flags, flag))

    @cached_property
    def columns(self) -> Mapping[str, Any]:
        """The row as its CSV columns (flags joined with ``;``, sorted)."""
        view: dict[str, Any] = {"path": self.path, "kind": self.kind, **self.identity, "input_hash": self.input_hash,
                                "lab": self.lab, "track": self.track, "roster_track": self.roster_track,
                                "status": str(self.status), "score": self.score, "max_score": self.max_score,
                                "flags": ";".join(sorted(set(self.flags))), "collusion_group": self.collusion_group,
                                "reasons": self.reasons, "error_kind": self.error_kind, "origin": self.origin,
                                "grader_version": self.grader_version, "rubric": self.rubric}
        view.update({f"part_{name}": points for name, points in self.parts.items()})
        view.update(self.points)
        return view

    def to_csv(self, columns: Sequence[str]) -> list[Any]:
        """The values of ``columns`` in order ("" for a column this row does not have)."""
        return [self.columns.get(column, "") for column in columns]


IDENTITY_FIELDS = ("student_name", "student_first_name", "student_last_name", "student_email", "student_id", "sis_id", "canvas_id", "moodle_id", "section", "sis_login_id")
"""The identity columns of a final row (filled from the roster, else from the counting submission)."""


@dataclass(frozen=True, eq=True)
class FinalRow(_ColumnsView):
    """One student's result for one lab (:func:`._final.build_final`), read like a mapping of its columns.

    Final score = machine score, then staff overrides, then the late penalty (:func:`._overrides.apply_to_final`).
    ``held``, ``item_max``, ``points``, ``overridden``, ``collusion_group`` and ``collusion_with`` are what
    overrides and the review page need; they are stored with the row (:meth:`to_json`) but are no CSV column.
    """

    student: str
    lab: str
    identity: Mapping[str, Any]
    status: Status
    machine_score: float
    raw_score: float
    late_penalty: float
    score: float
    max_score: float | str
    late_percent: float = 0.0
    submitted_at: str = ""
    late: str = ""
    rule: str = ""
    path: str = ""
    input_hash: str = ""
    other_submissions: str = ""
    flags: tuple[str, ...] = ()
    """The counting submission's flags (the ``flags`` column joins them with ``;``)."""
    overrides: str = ""
    stale_overrides: str = ""
    changes: str = ""
    decision: str = ""
    """The staff decision on the whole submission in force (``score 7 by ta: …``, ``counts as missing by ta: …``)."""
    reason: str = ""
    """Why the machine could not grade the counting submission (a :data:`NOT_GRADED` row), naming its file."""
    machine_status: Status | None = None
    """The status before a staff decision on the whole submission (None: :attr:`status`), so decisions recompute."""
    held: tuple[str, ...] = ()
    """The items held for staff because the grader failed on them."""
    item_max: Mapping[str, float] = field(default_factory=dict)
    points: Mapping[str, float] = field(default_factory=dict)
    """Item → the machine's points (a formative True/False as 1.0/0.0)."""
    overridden: Mapping[str, float] = field(default_factory=dict)
    """Item → the points staff decided (applied overrides)."""
    collusion_group: str = ""
    collusion_with: tuple[str, ...] = ()
    """The other students of the counting submission's collusion group."""

    def but(self, **changes: Any) -> FinalRow:
        """This row with ``changes`` (field names) applied."""
        return replace(self, **changes)

    @cached_property
    def columns(self) -> Mapping[str, Any]:
        """The row as its columns (those of the final CSV and ``late_percent``)."""
        return {"student": self.student, "lab": self.lab, "changes": self.changes,
                **{name: self.identity.get(name, "") for name in IDENTITY_FIELDS},
                "status": str(self.status), "machine_score": self.machine_score, "raw_score": self.raw_score,
                "late_penalty": self.late_penalty, "score": self.score, "max_score": self.max_score,
                "late_percent": self.late_percent, "submitted_at": self.submitted_at, "late": self.late, "rule": self.rule,
                "path": self.path, "input_hash": self.input_hash, "other_submissions": self.other_submissions,
                "flags": ";".join(self.flags), "overrides": self.overrides, "stale_overrides": self.stale_overrides,
                "decision": self.decision, "reason": self.reason}

    def to_json(self) -> dict[str, Any]:
        """The row as the gradebook database stores it (its columns, and the override and review data apart)."""
        return {**self.columns, "_flags": list(self.flags), "_held": list(self.held), "_item_max": dict(self.item_max), "_items": dict(self.points),
                "_overridden": dict(self.overridden), "_collusion_group": self.collusion_group,
                "_collusion_with": list(self.collusion_with), "_machine_status": str(self.machine_status or self.status)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FinalRow:
        """A row as :meth:`to_json` stored it (an earlier release's is migrated first: :mod:`._migrations`), or as an
        earlier release stored the data it kept apart (missing fields read as empty)."""
        return cls(student=str(data.get("student", "")), lab=str(data.get("lab", "")),
                   identity={name: data.get(name, "") for name in IDENTITY_FIELDS}, status=Status(data.get("status", "missing")),
                   machine_score=data.get("machine_score", data.get("raw_score", 0.0)), raw_score=data.get("raw_score", 0.0),
                   late_penalty=data.get("late_penalty", 0.0), score=data.get("score", 0.0), max_score=data.get("max_score", ""),
                   late_percent=data.get("late_percent", 0.0), submitted_at=data.get("submitted_at", ""),
                   late=data.get("late", ""), rule=data.get("rule", ""), path=data.get("path", ""),
                   input_hash=data.get("input_hash", ""), other_submissions=data.get("other_submissions", ""),
                   flags=tuple(data.get("_flags") or ()),  # rows of releases that kept no list: schema 6 wrote one
                   overrides=data.get("overrides", ""),
                   stale_overrides=data.get("stale_overrides", ""), changes=data.get("changes", ""),
                   decision=data.get("decision", ""), reason=data.get("reason", ""),
                   machine_status=Status(data["_machine_status"]) if data.get("_machine_status") else None,
                   held=tuple(data.get("_held") or ()), item_max=dict(data.get("_item_max") or {}),
                   points=dict(data.get("_items") or {}), overridden=dict(data.get("_overridden") or {}),
                   collusion_group=data.get("_collusion_group") or "", collusion_with=tuple(data.get("_collusion_with") or ()))


def identity(row: Mapping[str, Any]) -> str:
    """Who a row belongs to: the student key (roster), else email, student id, name, else the input's path."""
    return (row.get("student") or row.get("student_email") or row.get("student_id") or row.get("student_name")
            or row["path"])
