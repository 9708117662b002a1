"""One gradebook row per input, as a frozen value; its status as an enum.

A :class:`Row` keeps what the per-input CSV shows (identity, scores per part and item,
flags, reasons) as typed fields, and what only the gradebook's own views read (the report's
findings, the rationale, the items held for staff and each item's maximum) apart from the
columns, so nothing travels as ``_findings``-style keys.  A row is read like a mapping of its
CSV columns (``row["score"]``, ``row.get("A.captured", "")``: :meth:`Row.columns`), and a
changed row is a new one (:meth:`Row.but`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Any


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


SCORED = (Status.GRADED, Status.REGRADE)
"""Statuses whose row carries a score from the grader (and takes part in collusion)."""

Finding = tuple[str, str, str, str]
"""A finding as a row keeps it: (part, criterion, rubric item or "", message)."""


@dataclass(frozen=True, eq=True)
class Row(Mapping[str, Any]):
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

    def but(self, **changes: Any) -> Row:
        """This row with ``changes`` (field names) applied."""
        return replace(self, **changes)

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

    def __getitem__(self, key: str) -> Any:
        return self.columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    __hash__ = None  # type: ignore[assignment]  # rows hold mappings: compared, never hashed
