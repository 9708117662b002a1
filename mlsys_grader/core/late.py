"""The late penalty: a lab's policy, a trusted submission time and an extension → percent of the score, and the rule in words.

Pure: the course file is read by :mod:`mlsys_grader.course` (``read_course``); this module only
computes, so the bulk gradebook and the Gradescope runner apply the same rule to the same times.
The penalty is ``min(cap, penalty_per_day × started days)`` percent of the score, the days
counted from the deadline plus the grace plus the student's extension.  Only a time the
student does not control counts: without one there is no penalty, and the rule says so, unless the LMS
marked the submission late and the policy prices that marker (``late_marker_days`` started days).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol


class LatePolicy(Protocol):
    """One lab's deadline and late policy (the course file's ``[labs.<lab>]`` table)."""

    @property
    def deadline(self) -> datetime | None: ...
    @property
    def grace_minutes(self) -> float: ...
    @property
    def penalty_per_day(self) -> float: ...
    @property
    def cap(self) -> float: ...
    @property
    def late_marker_days(self) -> int | None: ...


class ExtensionLike(Protocol):
    """A student's extension: ``days`` added to the deadline, and why."""

    @property
    def days(self) -> float: ...
    @property
    def reason(self) -> str: ...


@dataclass(frozen=True)
class Extension:
    days: float
    reason: str


@dataclass(frozen=True)
class Penalty:
    """Percent of the score taken off, and the rule applied in words."""

    percent: float
    rule: str


def penalty(policy: LatePolicy | None, submitted_at: datetime | None, late_marker: bool = False, *,
            extension: ExtensionLike | None = None, deadline: datetime | None = None) -> Penalty:
    """The late penalty under ``policy`` for a submission at ``submitted_at`` (None: no trusted time).

    ``deadline`` stands in when the policy has none (Gradescope's own due date);
    ``late_marker``: the LMS marked the submission late; without a trusted time it costs the policy's
    ``late_marker_days`` started days (unset: said in the rule, no penalty).  A trusted time always wins over the marker.
    """
    deadline = (policy.deadline if policy else None) or deadline
    if policy is None or deadline is None:
        return Penalty(0.0, "LMS marked it late; no deadline in the course file, no penalty" if late_marker else "")
    due = deadline + timedelta(minutes=policy.grace_minutes, days=extension.days if extension else 0)
    terms = f"due {deadline.isoformat()}"
    if policy.grace_minutes:
        terms += f" + {policy.grace_minutes:g} min grace"
    if extension:
        terms += f" + {extension.days:g} d extension" + (f" ({extension.reason})" if extension.reason else "")
    terms += f"; {policy.penalty_per_day:g} % per started day, cap {policy.cap:g} %"
    if submitted_at is None:
        if late_marker and policy.late_marker_days:
            days = policy.late_marker_days
            percent = min(policy.cap, policy.penalty_per_day * days)
            return Penalty(percent, f"{terms}; no trusted submission time; LMS marked it late: charged as {days} started "
                                    f"day{'s' if days > 1 else ''} late (late_marker_days), -{percent:g} %")
        marker = "; LMS marked it late" if late_marker else ""
        return Penalty(0.0, f"{terms}; no trusted submission time{marker}: no penalty")
    if submitted_at <= due:
        return Penalty(0.0, f"{terms}; submitted {submitted_at.isoformat()}: on time")
    days = math.ceil((submitted_at - due) / timedelta(days=1))
    percent = min(policy.cap, policy.penalty_per_day * days)
    return Penalty(percent, f"{terms}; submitted {submitted_at.isoformat()}: {days} day{'s' if days > 1 else ''} late, "
                            f"-{percent:g} %")


def aware_time(text: Any) -> datetime | None:
    """An ISO 8601 time with its UTC offset, or None (absent, malformed or without an offset)."""
    try:
        value = datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None
    return value if value is not None and value.tzinfo is not None else None


def gradescope_penalty(policy: LatePolicy | None, extensions: Mapping[tuple[str, str], ExtensionLike], lab: str,
                       metadata: Mapping[str, Any]) -> Penalty:
    """The late penalty of a Gradescope submission from its ``submission_metadata.json``.

    The submission time is ``created_at``; the deadline is the policy's, else the assignment's
    ``due_date``; the extension is ``extensions``' (keyed by a submitter's email or sid, and
    ``lab``), else a submitter's own later ``assignment.due_date`` (how Gradescope records an
    extension).  A submission without ``created_at`` gets no penalty, and the rule says so.
    """
    found = metadata.get("assignment")
    assignment: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    users = [u for u in metadata.get("users") or [] if isinstance(u, Mapping)]
    due = aware_time(assignment.get("due_date"))
    extension: ExtensionLike | None = next((extensions[(str(u.get(k)), lab)] for u in users for k in ("email", "sid")
                                            if (str(u.get(k)), lab) in extensions), None)
    if extension is None and due is not None:
        own = [d for d in (aware_time((u.get("assignment") or {}).get("due_date")) for u in users
                           if isinstance(u.get("assignment"), Mapping)) if d is not None and d > due]
        if own:
            extension = Extension((max(own) - due) / timedelta(days=1), "Gradescope extension")
    return penalty(policy, aware_time(metadata.get("created_at")), extension=extension, deadline=due)
