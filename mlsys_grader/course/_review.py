"""The staff review queue, computed from the gradebook, and the decisions staff make on it.

The queue holds, for each student's counting submission: every staff flag that asks for a
person (:data:`REVIEW_FLAGS`), every rationale item whose verdict the reader marked
``uncertain``, every regrade request staff entered, and every stale override.  Entries are
ordered by the points at stake (most first); each says why it is there.  Decisions are
overrides (:mod:`._overrides`); after each batch the ``final`` table is recomputed from the
machine scores, so every output (final CSV, LMS export, feedback) carries them.

The CSV round trip (PrairieLearn style): :func:`export_queue` writes one line per item to
decide; staff fill ``new_points`` (blank: no decision; the machine's points: confirm) and
``comment``; :func:`import_decisions` checks every line first and imports nothing unless all
are valid, in one transaction.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import flags as flag_names
from ..errors import DecisionError
from ._decisions import (
    SubmissionDecision,
    by_student_lab,
    check_decision,
    load_decisions,
    load_unplaced,
    placed,
    refuse,
    write_decision,
)
from ._gradebook import GradebookDB, _cell
from ._overrides import Override, agreement_of, apply_to_final, load_overrides, now, stale_reason, write_overrides
from ._row import NOT_GRADED, FinalRow, Status

REVIEW_FLAGS = (flag_names.GRADER_ERROR, flag_names.COLLUSION, flag_names.INTEGRITY, flag_names.GENERATED,
                flag_names.VERSION_DRIFT)
"""Flags that put a submission in the queue: signals for staff, who make the call."""
WHOLE = "*"
"""The ``item`` of a decisions-CSV line that decides a whole submission."""
QUEUE_COLUMNS = ["student", "student_name", "lab", "input_hash", "item", "machine_points", "max_points", "at_stake",
                 "why", "new_points", "comment"]


@dataclass(frozen=True)
class QueueItem:
    """One rubric item of an entry: the machine's points, the maximum, and the decision staff made (if any)."""

    column: str
    points: float
    max_points: float
    decision: Override | None = None
    why: str = ""
    """Why this item is reviewed (``uncertain: …``, ``flag collusion: …``, ``grader_error: …``, ``regrade request: …``)."""


@dataclass(frozen=True)
class Entry:
    """One submission that needs a person."""

    student: str
    student_name: str
    lab: str
    input_hash: str
    path: str
    reasons: tuple[str, ...]
    items: tuple[QueueItem, ...]
    at_stake: float
    """Points that hang on the decision: the items' maxima for uncertain or held items, the points earned for a flag."""
    stale: tuple[str, ...] = ()
    groups: tuple[str, ...] = field(default=())
    """Collusion group ids (``collusion_group``)."""
    whole: str = ""
    """Why the whole submission waits for a decision (an upload the machine could not grade; :mod:`._decisions`),
    "" when only items are to decide."""
    decision: str = ""
    """The decision on the whole submission in force, in words ("" while there is none)."""

    @property
    def key(self) -> str:
        return f"{self.student}|{self.lab}|{self.input_hash}" if not self.lab else f"{self.student}|{self.lab}"

    @property
    def decided(self) -> bool:
        """True when staff decided every item of the entry, and the whole submission where it waits for that (and
        nothing is stale)."""
        return (not self.stale and all(item.decision is not None for item in self.items)
                and (not self.whole or bool(self.decision)))


def _request_rows(conn: sqlite3.Connection) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    found: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for student, lab, item, reason, at in conn.execute("SELECT student, lab, item, reason, at FROM regrade_requests ORDER BY id"):
        found.setdefault((student, lab), []).append((item, reason, at))
    return found


def _whole_entries(db: GradebookDB) -> list[Entry]:
    """One entry per upload of unknown lab that could not be read, the whole of the largest lab at stake."""
    decided = {(d.student, d.input_hash): d for d in load_decisions(db.conn)}
    stake = max((float(r.max_score) for r in db.final() if r.max_score not in ("", None)), default=0.0)
    entries = []
    for upload in load_unplaced(db.conn):
        done = decided.get((upload["student"], upload["input_hash"]))
        entries.append(Entry(upload["student"], upload.get("student_name", ""), "", upload["input_hash"], upload["path"],
                             (f"unreadable, lab unknown: {upload['path']}: {upload['reason']}",), (), stake,
                             whole="unreadable, lab unknown", decision=done.words() if done else ""))
    return entries


def build_queue(db: GradebookDB, *, include_decided: bool = False) -> list[Entry]:
    """The review queue from the gradebook's final rows and stored results, most points at stake first."""
    overrides = load_overrides(db.conn)
    requests = _request_rows(db.conn)
    entries = [entry for entry in _whole_entries(db) if include_decided or not entry.decided]
    for row in db.final():
        key = (row["student"], row["lab"])
        if (row.machine_status or row.status) in NOT_GRADED:
            what = ("unreadable upload" if (row.machine_status or row.status) == Status.UNREADABLE
                    else f"not graded ({row.machine_status or row.status})")
            entry = Entry(row["student"], row.get("student_name", ""), row["lab"], row.input_hash, row.path,
                          (f"{what} {row.path}: {row.reason or row.rule}",), (),
                          float(row.max_score) if row.max_score not in ("", None) else 0.0,
                          whole=what, decision=row.decision)
            if include_decided or not entry.decided:
                entries.append(entry)
            continue
        mine = overrides.get(key, [])
        result = db.result(row["input_hash"]) if row.get("input_hash") else None
        item_max: Mapping[str, float] = row.item_max or (result or {}).get("item_max", {})
        # Formative items (maximum 0: shown as right or not, never scored) have nothing to decide.
        items: Mapping[str, float] = {c: v for c, v in (row.points or (result or {}).get("items", {})).items()
                                      if float(item_max.get(c, 0) or 0) > 0}
        live = {o.item: o for o in mine if stale_reason(o, row.get("input_hash", ""), items, item_max) is None}
        reasons: list[str] = []
        concerned: dict[str, str] = {}
        stake = 0.0
        flags = [f for f in (row.get("flags") or "").split(";") if f]
        held = [c for c in row.held if c in items]
        for flag in flags:
            if flag not in REVIEW_FLAGS:
                continue
            if flag == flag_names.GRADER_ERROR:
                pending = [c for c in held if c not in live]
                if not pending:
                    continue
                reasons.append(f"grader_error: points held on {', '.join(pending)}")
                for c in pending:
                    concerned.setdefault(c, "grader_error: points held")
                stake += sum(float(item_max.get(c, 0)) for c in pending)
                continue
            reasons.append(f"flag {flag}: {flag_names.MEANINGS.get(flag, '')}")
            scope = ([c for c in items if c.startswith("synthesis.")] if flag == flag_names.GENERATED else list(items))
            for c in scope:
                concerned.setdefault(c, f"flag {flag}: {flag_names.MEANINGS.get(flag, '')}")
            stake = max(stake, sum(float(items[c]) for c in scope))
        for column, (certainty, why) in ((result or {}).get("certainty") or {}).items():
            if certainty == "uncertain" and column in items:
                reasons.append(f"uncertain {column}: {why or 'the reader is not sure'}")
                concerned[column] = f"uncertain: {why or 'the reader is not sure'}"
                stake += float(item_max.get(column, 0))
        for item, why, at in requests.get(key, []):
            reasons.append(f"regrade request{f' on {item}' if item else ''} ({at[:10]}): {why}")
            scope = [item] if item in items else list(items)
            for c in scope:
                concerned.setdefault(c, f"regrade request: {why}")
            stake += (float(item_max.get(item, 0)) if item in items else
                      float(row.get("max_score") or 0) - float(row.get("machine_score") or 0))
        stale = [f"stale override {o.item} {o.new_points:g} by {o.by or '?'}: {why}" for o in mine
                 if (why := stale_reason(o, row.get("input_hash", ""), items, item_max)) is not None and o.item not in live]
        for o in mine:
            if o.item in items and o.item not in live:
                concerned.setdefault(o.item, "stale override: re-review")
        if not reasons and not stale:
            continue
        entry = Entry(row["student"], row.get("student_name", ""), row["lab"], row.get("input_hash", ""), row.get("path", ""),
                      tuple(reasons + stale),
                      tuple(QueueItem(c, float(items[c]), float(item_max.get(c, 0)), live.get(c), why)
                            for c, why in concerned.items() if c in items),
                      round(stake, 6), tuple(stale),
                      tuple(g for g in str(row.get("collusion_group", "")).split(";") if g))
        if include_decided or not entry.decided:
            entries.append(entry)
    entries.sort(key=lambda e: (-e.at_stake, e.lab, e.student))
    return entries


# -- decisions ---------------------------------------------------------------------

@dataclass(frozen=True)
class Decision:
    """What staff decided on one item (``new_points`` None: confirm the machine's points)."""

    student: str
    lab: str
    item: str
    new_points: float | None
    comment: str = ""
    input_hash: str = ""
    """The submission the decision was made on ('' : the one that counts now)."""
    reason: str = ""
    where: str = ""
    """Where the decision came from, for messages (``decisions.csv line 4``)."""


def _check(decision: Decision, rows: Mapping[tuple[str, str], FinalRow], by: str, at: str) -> Override | str:
    """The override for ``decision``, or the sentence saying why it cannot be made."""
    where = f"{decision.where}: " if decision.where else ""
    row = rows.get((decision.student, decision.lab))
    if row is None:
        labs = sorted({lab for (student, lab) in rows if student == decision.student})
        return (f"{where}unknown student {decision.student!r}" if not labs else
                f"{where}student {decision.student!r} has no row for lab {decision.lab!r} (has {', '.join(labs)})")
    if not row.get("input_hash"):
        return f"{where}{decision.student} has no submission of {decision.lab} to override"
    if decision.input_hash and decision.input_hash != row["input_hash"]:
        return (f"{where}stale submission hash {decision.input_hash[:12]} for {decision.student} {decision.lab}: the submission "
                f"that counts is now {row['input_hash'][:12]}; export the queue again")
    items: Mapping[str, float] = row.points
    if decision.item not in items:
        return f"{where}unknown rubric item {decision.item!r} for {decision.lab} (expected one of {', '.join(items)})"
    most = float(row.item_max.get(decision.item, 0))
    points = float(items[decision.item]) if decision.new_points is None else decision.new_points
    if not (math.isfinite(points) and -1e-9 <= points <= most + 1e-9):
        return f"{where}{decision.item}: points must be 0..{most:g} (got {points:g})"
    return Override(decision.student, decision.lab, row["input_hash"], decision.item, float(items[decision.item]), points, most,
                    decision.comment.strip(), by, at, decision.reason)


@dataclass(frozen=True)
class WholeDecision:
    """What staff decided on a whole submission the machine could not grade (:mod:`._decisions`)."""

    student: str
    lab: str
    verdict: str
    """``score`` or ``missing``."""
    points: float | None
    reason: str
    upload: str = ""
    """The upload's hash (or a prefix of 8 or more) or path: needed for an upload of unknown lab."""
    where: str = ""


def _check_whole(decision: WholeDecision, rows: Mapping[tuple[str, str], FinalRow], unplaced: Sequence[Mapping[str, str]],
                 by: str, at: str) -> SubmissionDecision | str:
    checked = check_decision(rows, unplaced, decision.student, decision.lab, decision.verdict, decision.points,
                             decision.reason, decision.upload, decision.where)
    if isinstance(checked, str):
        return checked
    student, lab, input_hash, points, path = checked
    return SubmissionDecision(student, lab, input_hash, decision.verdict, points if decision.verdict == "score" else None,
                              decision.reason.strip(), by, at, path)


def apply_decisions(db: GradebookDB, decisions: Sequence[Decision], by: str,
                    whole: Sequence[WholeDecision] = ()) -> list[Override | SubmissionDecision]:
    """Check every decision (on items, and on whole submissions), then store them all and recompute the final table
    in one transaction.

    Raises :class:`DecisionError` naming every bad decision; the database is then untouched.
    """
    rows = {(r["student"], r["lab"]): r for r in db.final()}
    unplaced = load_unplaced(db.conn)
    at = now()
    checked = [_check(d, rows, by, at) for d in decisions]
    judged = [_check_whole(d, rows, unplaced, by, at) for d in whole]
    refuse([c for c in [*checked, *judged] if isinstance(c, str)])
    made = [c for c in checked if isinstance(c, Override)]
    decided = [c for c in judged if isinstance(c, SubmissionDecision)]
    if not made and not decided:
        return []
    scores = {key: float(row["score"]) for key, row in rows.items()}
    try:
        write_overrides(db.conn, made, scores)
        for decision in decided:
            write_decision(db.conn, decision, scores.get((decision.student, decision.lab)))
        refresh_final(db)  # commits the decisions with the table they change
    except BaseException:
        db.conn.rollback()
        raise
    return [*made, *decided]


def decide(db: GradebookDB, decision: WholeDecision, by: str) -> SubmissionDecision:
    """Store one decision on a whole submission (``review --decide``) and recompute the final table; raises
    :class:`DecisionError` saying why it cannot be made (nothing stored)."""
    [made] = apply_decisions(db, (), by, (decision,))
    return made  # type: ignore[return-value]


def refresh_final(db: GradebookDB) -> list[FinalRow]:
    """Recompute every final row from its machine score with the stored overrides and decisions, and store the table
    again.

    Committed with whatever the caller wrote before in the same transaction (:meth:`GradebookDB.write_final`).
    """
    overrides = load_overrides(db.conn)
    decisions = by_student_lab(load_decisions(db.conn))
    unplaced = {u["input_hash"]: u for u in load_unplaced(db.conn)}
    summaries = db.change_summaries()
    final = []
    for row in db.final():
        key = (row.student, row.lab)
        mine = decisions.get(key, ())
        final.append(apply_to_final(placed(row, mine, unplaced), overrides.get(key, ()), mine)
                     .but(changes=summaries.get(key, "")))
    db.write_final(final)
    return final


def add_request(db: GradebookDB, student: str, lab: str, reason: str, item: str = "", by: str = "") -> None:
    """Enter a regrade request (Gradescope does not export them: staff copy them in)."""
    rows = {(r["student"], r["lab"]): r for r in db.final()}
    matches = [key for key, row in rows.items() if student in (key[0], row.get("student_email"), row.get("student_id"))
               and key[1] == lab]
    if not matches:
        raise DecisionError([f"unknown student {student!r} for lab {lab!r}"])
    row = rows[matches[0]]
    if item and item not in row.points:
        raise DecisionError([f"unknown rubric item {item!r} for {lab} (expected one of {', '.join(row.points)})"])
    if not reason.strip():
        raise DecisionError(["a regrade request needs a --reason"])
    with db.conn:
        db.conn.execute("INSERT INTO regrade_requests (at, student, lab, item, reason, by, input_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (now(), row["student"], lab, item, reason.strip(), by, row.get("input_hash", "")))
        db.conn.execute("INSERT INTO change_log (at, kind, student, lab, input_hash, old_score, new_score, reason, by) "
                        "VALUES (?, 'regrade_request', ?, ?, ?, ?, NULL, ?, ?)",
                        (now(), row["student"], lab, row.get("input_hash", ""), row.get("score"),
                         f"{item + ': ' if item else ''}{reason.strip()}", by))


# -- the CSV round trip ------------------------------------------------------------

def export_queue(db: GradebookDB, out: str | os.PathLike[str]) -> int:
    """Write the queue as ``decisions.csv`` to fill in; returns the number of item lines."""
    lines = 0
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(QUEUE_COLUMNS)
        for entry in build_queue(db):
            if entry.whole and not entry.decision:
                # one line for the whole submission: new_points a score, or `missing`; the comment is the reason
                writer.writerow([_cell(v) for v in (entry.student, entry.student_name, entry.lab, entry.input_hash, WHOLE,
                                                    "", entry.at_stake, entry.at_stake, "; ".join(entry.reasons), "", "")])
                lines += 1
            for item in entry.items:
                writer.writerow([_cell(v) for v in (entry.student, entry.student_name, entry.lab, entry.input_hash, item.column,
                                                    item.points, item.max_points, entry.at_stake, item.why,
                                                    "", "")])
                lines += 1
    return lines


def read_decisions(path: str | os.PathLike[str]) -> list[Decision]:
    """The filled item lines of a decisions CSV (:func:`read_all_decisions` without the whole-submission lines)."""
    return read_all_decisions(path)[0]


def read_all_decisions(path: str | os.PathLike[str]) -> tuple[list[Decision], list[WholeDecision]]:
    """The filled lines of a decisions CSV (as a spreadsheet saves it: BOM, CRLF, quoted fields, blank lines): the
    decisions on items, and those on whole submissions (item ``*``: ``new_points`` a score or ``missing``, the comment
    the reason).

    Raises :class:`DecisionError` naming every line that cannot be read.
    """
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DecisionError([f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as CSV UTF-8"]) from exc
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in ("student", "lab", "item", "new_points") if name not in header]
    if missing:
        raise DecisionError([f"{path}: missing column(s) {', '.join(missing)} (expected {', '.join(QUEUE_COLUMNS)})"])
    decisions, whole, problems = [], [], []
    for raw in reader:
        line = reader.line_num
        cells = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k is not None and isinstance(v, str)}
        if not any(cells.values()) or not cells.get("new_points"):
            continue  # blank line, or no decision on this item
        where = f"{os.path.basename(os.fspath(path))} line {line}"
        if cells["item"] == WHOLE:
            answer = cells["new_points"].lstrip("'").strip().lower()
            try:
                points = None if answer == "missing" else float(answer)
            except ValueError:
                problems.append(f"{where}: new_points must be a score or `missing` for the whole submission "
                                f"(got {cells['new_points']!r})")
                continue
            whole.append(WholeDecision(cells["student"], cells["lab"], "missing" if points is None else "score", points,
                                       cells.get("comment", ""), cells.get("input_hash", ""), where))
            continue
        try:
            points = float(cells["new_points"].lstrip("'"))
        except ValueError:
            problems.append(f"{where}: new_points must be a number (got {cells['new_points']!r})")
            continue
        decisions.append(Decision(cells["student"], cells["lab"], cells["item"], points, cells.get("comment", ""),
                                  cells.get("input_hash", ""), reason=cells.get("why", "")[:300], where=where))
    if problems:
        raise DecisionError(problems)
    return decisions, whole


def import_decisions(db: GradebookDB, path: str | os.PathLike[str], by: str) -> list[Override | SubmissionDecision]:
    """Read, check and store a decisions CSV: everything or nothing."""
    items, whole = read_all_decisions(path)
    return apply_decisions(db, items, by, whole)


def agreement(db: GradebookDB) -> list[tuple[str, str, int, int]]:
    """How often staff changed the machine's points: (rubric item, why it was reviewed, decisions, changed)."""
    return agreement_of(load_overrides(db.conn))
