"""Staff overrides: a person's points for one rubric item of one submission, kept in the gradebook.

An override is keyed by (student, lab, submission hash, rubric item) and records the staff
name, the time, the machine's points when it was made (``old_points``), the staff's points
(``new_points``), the item's maximum then, a comment and why the item was reviewed.  A
confirmation is an override whose new points equal the machine's: it changes nothing and
takes the item out of the review queue.

Final score = machine score, then overrides, then the late penalty (:mod:`._final`).  An
override applies only while it still describes the submission that counts:

* the student's counting submission has another hash (a resubmission),
* the item is no longer in the rubric, or
* the item's maximum is now lower than when the override was made

each make it **stale**: listed for re-review, never applied and never clamped.  An override
of an item whose points were held (``grader_error``) resolves the hold.  Every override
written goes to the change log (nothing is deleted; a newer decision on the same key
replaces the row, the log keeps both).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ._decisions import SubmissionDecision, apply_decision
from ._row import FinalRow, Status

EPSILON = 1e-9


@dataclass(frozen=True)
class Override:
    """One stored staff decision on one rubric item of one submission."""

    student: str
    lab: str
    input_hash: str
    item: str
    """``part.item``, as the gradebook's item columns name it (``synthesis.rationale_cites_evidence``)."""
    old_points: float
    new_points: float
    max_points: float
    comment: str
    by: str
    at: str
    reason: str = ""
    """Why the item was in the review queue (``uncertain: …``, ``flag generated``, ``regrade request``)."""
    code: str = ""
    """The kind of that reason (``uncertain.no_stance_cue``, ``flag.generated`` …; :mod:`mlsys_grader.core.codes`), ""
    for a decision made without one."""

    @property
    def confirms(self) -> bool:
        """True when staff kept the machine's points."""
        return abs(self.new_points - self.old_points) < EPSILON


@dataclass(frozen=True)
class Applied:
    """What the overrides of one final row did: the points they moved and the ones left stale (with why)."""

    applied: tuple[Override, ...]
    stale: tuple[tuple[Override, str], ...]
    delta: float
    """Points added to the machine score (negative when staff took points away)."""


_COLUMNS = "student, lab, input_hash, item, old_points, new_points, max_points, comment, by, at, reason, code"


def load_overrides(conn: sqlite3.Connection) -> dict[tuple[str, str], list[Override]]:
    """(student, lab) → every stored override of that student's lab, oldest first."""
    found: dict[tuple[str, str], list[Override]] = {}
    for values in conn.execute(f"SELECT {_COLUMNS} FROM overrides ORDER BY at, rowid"):
        override = Override(*values)
        found.setdefault((override.student, override.lab), []).append(override)
    return found


def stale_reason(override: Override, input_hash: str, items: Mapping[str, float], item_max: Mapping[str, float]) -> str | None:
    """Why ``override`` no longer applies to the counting submission (``input_hash``, its ``items`` and maxima), or None."""
    if override.input_hash != input_hash:
        return (f"made for submission {override.input_hash[:12]}; the submission that counts is now "
                f"{input_hash[:12] or 'none'}")
    if override.item not in items:
        return f"rubric item {override.item} is no longer in the rubric"
    most = item_max.get(override.item)
    if most is not None and most + EPSILON < override.max_points:
        return f"rubric item {override.item}'s maximum was lowered from {override.max_points:g} to {most:g}"
    return None


def apply_overrides(overrides: Sequence[Override], input_hash: str, items: Mapping[str, float],
                    item_max: Mapping[str, float]) -> Applied:
    """Apply ``overrides`` to one counting submission's item points.

    The table's key (student, lab, hash, item) leaves at most one live override per item of a submission.
    """
    applied, stale, delta = [], [], 0.0
    for override in overrides:
        why = stale_reason(override, input_hash, items, item_max)
        if why is not None:
            stale.append((override, why))
        else:
            applied.append(override)
            delta += override.new_points - float(items[override.item])
    redone = {o.item for o in applied}  # a stale decision that staff re-reviewed on the new submission is settled
    stale = [(o, why) for o, why in stale if o.item not in redone]
    return Applied(tuple(applied), tuple(stale), round(delta, 6))


def write_overrides(conn: sqlite3.Connection, overrides: Iterable[Override],
                    scores: Mapping[tuple[str, str], float | None]) -> None:
    """Store ``overrides`` and log each in the change log, in the caller's transaction (``scores``: the final score before)."""
    for o in overrides:
        conn.execute(f"INSERT OR REPLACE INTO overrides ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (o.student, o.lab, o.input_hash, o.item, o.old_points, o.new_points, o.max_points, o.comment, o.by,
                      o.at, o.reason, o.code))
        words = "confirmed" if o.confirms else f"{o.old_points:g} -> {o.new_points:g}"
        conn.execute("INSERT INTO change_log (at, kind, student, lab, input_hash, old_score, new_score, reason, by) "
                     "VALUES (?, 'override', ?, ?, ?, ?, NULL, ?, ?)",
                     (o.at, o.student, o.lab, o.input_hash, scores.get((o.student, o.lab)),
                      f"{o.item} {words}" + (f": {o.comment}" if o.comment else ""), o.by))


def now() -> str:
    """The time an override is stamped with (UTC, seconds)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def describe(applied: Applied) -> tuple[str, str]:
    """The final gradebook's ``overrides`` and ``stale_overrides`` cells."""
    done = "; ".join(f"{o.item} {'confirmed' if o.confirms else f'{o.old_points:g}->{o.new_points:g}'} by {o.by or '?'}"
                     + (f" ({o.comment})" if o.comment else "") for o in applied.applied)
    stale = "; ".join(f"{o.item} {o.new_points:g} by {o.by or '?'}: {why}" for o, why in applied.stale)
    return done, stale


def apply_to_final(row: FinalRow, overrides: Sequence[Override], decisions: Sequence[SubmissionDecision] = ()) -> FinalRow:
    """One final row recomputed from its machine score and status: overrides, then a staff decision on the whole
    submission (:mod:`._decisions`), then the late penalty.

    Reads ``machine_score``, ``machine_status``, ``late_percent``, ``points``, ``item_max`` and ``held`` (from
    :func:`._final.build_final`); sets ``raw_score``, ``late_penalty``, ``score``, ``overrides``,
    ``stale_overrides``, ``overridden`` (item → points), ``decision`` and ``status``, turning a ``regrade`` row whose
    held items staff all scored into ``graded``.  Recomputing an already computed row gives the same row.
    """
    base = row.machine_status or row.status
    done = apply_overrides(overrides, row.input_hash, row.points, row.item_max) if row.input_hash \
        else Applied((), tuple((o, "the student has no submission that counts") for o in overrides), 0.0)
    machine = float(row.machine_score or 0)
    applied, stale = describe(done)
    overridden = {o.item: o.new_points for o in done.applied}
    status, rule = base, row.rule
    held = set(row.held)
    if status == Status.REGRADE and held and held <= set(overridden):
        status = Status.GRADED
        rule = "; ".join(text for text in (rule, HELD_SCORED) if text and (text != HELD_SCORED or HELD_SCORED not in rule))
    out = apply_decision(row.but(raw_score=round(machine + done.delta, 6), overrides=applied, stale_overrides=stale,
                                 overridden=overridden, status=status, rule=rule, machine_status=base), decisions)
    late = round(out.raw_score * float(row.late_percent or 0) / 100, 6)
    return out.but(late_penalty=late, score=round(out.raw_score - late, 6))


HELD_SCORED = "held items scored by staff"


def agreement_of(overrides: Mapping[tuple[str, str], Sequence[Override]]) -> list[tuple[str, str, int, int]]:
    """How often staff changed the machine's points: (rubric item, why it was reviewed, decisions, changed), sorted.

    "Why" is the code of the reason the item was queued for (``uncertain.no_stance_cue``, ``flag.collusion``,
    ``grader.error``, ``request.regrade``, ``stale.override``); ``staff`` for a decision made without one.
    """
    counts: dict[tuple[str, str], list[int]] = {}
    for mine in overrides.values():
        for o in mine:
            tally = counts.setdefault((o.item, o.code or "staff"), [0, 0])
            tally[0] += 1
            tally[1] += 0 if o.confirms else 1
    return [(item, why, n, changed) for (item, why), (n, changed) in sorted(counts.items())]


def decisions_by_item(rows: Iterable[tuple[str, str, int, int]]) -> list[tuple[str, int, int]]:
    """:func:`agreement_of` summed per rubric item: (item, decisions, changed)."""
    total: dict[str, list[int]] = {}
    for item, _, n, changed in rows:
        tally = total.setdefault(item, [0, 0])
        tally[0] += n
        tally[1] += changed
    return [(item, n, changed) for item, (n, changed) in sorted(total.items())]
