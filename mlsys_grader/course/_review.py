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
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import flags as flag_names
from ..core.codes import verdict_code
from ..core.report import INTEGRITY_CRITERIA
from ..errors import DecisionError
from ._decisions import (
    CONFIRM,
    SubmissionDecision,
    by_student_lab,
    check_decision,
    load_decisions,
    load_unplaced,
    placed,
    refuse,
    write_decision,
)
from ._files import _cell
from ._overrides import Override, agreement_of, apply_to_final, load_overrides, now, stale_reason, write_overrides
from ._row import NOT_GRADED, FinalRow, ItemKey, Result, Status
from ._store import GradebookDB

REVIEW_FLAGS = (flag_names.GRADER_ERROR, flag_names.COLLUSION, flag_names.INTEGRITY, flag_names.GENERATED,
                flag_names.VERSION_DRIFT, flag_names.WRONG_TRACK)
"""Flags that put a submission in the queue: signals for staff, who make the call."""
WHOLE = "*"
"""The ``item`` of a decisions-CSV line that decides a whole submission."""
QUEUE_COLUMNS = ["student", "student_name", "lab", "input_hash", "item", "machine_points", "max_points", "at_stake",
                 "why", "code", "new_points", "comment"]


@dataclass(frozen=True)
class QueueItem:
    """One rubric item of an entry: the machine's points, the maximum, and the decision staff made (if any)."""

    column: str
    points: float
    max_points: float
    decision: Override | None = None
    why: str = ""
    """Why this item is reviewed (``uncertain: …``, ``flag collusion: …``, ``grader_error: …``, ``regrade request: …``)."""
    code: str = ""
    """The kind of that reason (:mod:`mlsys_grader.core.codes`): ``uncertain.no_stance_cue``, ``flag.collusion``,
    ``grader.error``, ``request.regrade``, ``stale.override``; what ``review --decide-code`` decides by."""


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
    def codes(self) -> tuple[str, ...]:
        """The kinds of every reason it is here, sorted: its items' codes, and ``status.<status>`` for a submission the
        machine could not grade."""
        found = {item.code for item in self.items if item.code}
        if self.whole:
            found.add("status.unreadable" if self.whole == "unreadable upload" else "status.not_graded")
        if self.stale and not self.items:
            found.add("stale.confirmation")
        return tuple(sorted(found))

    @property
    def decided(self) -> bool:
        """True when nothing is stale and staff decided the whole submission (a score, "missing", or a confirmation of
        the machine's verdict), or, where only items are in question, every item."""
        if self.stale:
            return False
        if self.decision:
            return True
        return not self.whole and all(item.decision is not None for item in self.items)


def flag_scope(flag: str, items: Mapping[str, float], findings: Sequence[Sequence[str]]) -> list[str]:
    """The rubric items a review flag puts in question: a ``generated`` rationale every rationale item, ``integrity`` and
    ``version_drift`` the items of the parts whose evidence failed those checks (every item when none is named), collusion
    the whole submission."""
    if flag == flag_names.GENERATED:
        return [c for c in items if c.startswith("synthesis.")]
    if flag in (flag_names.INTEGRITY, flag_names.VERSION_DRIFT):
        parts = {str(f[0]) for f in findings if len(f) > 1 and f[1] in INTEGRITY_CRITERIA}
        scope = [c for c in items if ItemKey.of(c).part in parts]
        return scope or list(items)
    return list(items)


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


def _not_graded_entry(row: FinalRow) -> Entry:
    """The whole-submission entry of a row the machine could not grade."""
    status = row.machine_status or row.status
    what = "unreadable upload" if status == Status.UNREADABLE else f"not graded ({status})"
    return Entry(row["student"], row.get("student_name", ""), row["lab"], row.input_hash, row.path,
                 (f"{what} {row.path}: {row.reason or row.rule}",), (),
                 float(row.max_score) if row.max_score not in ("", None) else 0.0,
                 whole=what, decision=row.decision)


def _scored_items(row: FinalRow, result: Result | None, item_max: Mapping[str, float]) -> dict[str, float]:
    """Item → the machine's points, of the items that score: a formative item (maximum 0) has nothing to decide."""
    return {c: v for c, v in (row.points or (result or {}).get("items", {})).items() if float(item_max.get(c, 0) or 0) > 0}


def _held_reasons(row: FinalRow, items: Mapping[str, float], live: Mapping[str, Override],
                  concerned: dict[str, tuple[str, str]]) -> list[str]:
    """The reason of a grader error while items it held wait for a decision, those items added to ``concerned``."""
    pending = [c for c in row.held if c in items and c not in live]
    if not pending:
        return []
    for c in pending:
        concerned.setdefault(c, ("grader_error: points held", "grader.error"))
    return [f"grader_error: points held on {', '.join(pending)}"]


def _flag_reasons(row: FinalRow, items: Mapping[str, float], live: Mapping[str, Override],
                  findings: Sequence[Sequence[str]], concerned: dict[str, tuple[str, str]]) -> list[str]:
    """The reasons of the row's review flags, in its flags' order, the items each puts in question added to
    ``concerned``."""
    reasons: list[str] = []
    for flag in row.flags:
        if flag not in REVIEW_FLAGS:
            continue
        if flag == flag_names.GRADER_ERROR:
            reasons += _held_reasons(row, items, live, concerned)
            continue
        why = f"flag {flag}: {flag_names.MEANINGS.get(flag, '')}"
        reasons.append(why)
        for c in flag_scope(flag, items, findings):
            concerned.setdefault(c, (why, f"flag.{flag}"))
    return reasons


def _uncertain_reasons(result: Result | None, items: Mapping[str, float],
                       concerned: dict[str, tuple[str, str]]) -> list[str]:
    """The reasons of the items whose verdict the reader marked uncertain, each item's concern replacing an earlier
    one."""
    reasons: list[str] = []
    for column, (certainty, why) in ((result or {}).get("certainty") or {}).items():
        if certainty == "uncertain" and column in items:
            reasons.append(f"uncertain {column}: {why or 'the reader is not sure'}")
            concerned[column] = (f"uncertain: {why or 'the reader is not sure'}", verdict_code(why))
    return reasons


def _request_reasons(requests: Sequence[tuple[str, str, str]], items: Mapping[str, float],
                     concerned: dict[str, tuple[str, str]]) -> list[str]:
    """The reasons of the regrade requests staff entered, each request's item (every item when it names none) added
    to ``concerned``."""
    reasons: list[str] = []
    for item, why, at in requests:
        reasons.append(f"regrade request{f' on {item}' if item else ''} ({at[:10]}): {why}")
        for c in [item] if item in items else list(items):
            concerned.setdefault(c, (f"regrade request: {why}", "request.regrade"))
    return reasons


def _stale_overrides(mine: Sequence[Override], input_hash: str, items: Mapping[str, float],
                     item_max: Mapping[str, float], live: Mapping[str, Override],
                     concerned: dict[str, tuple[str, str]]) -> list[str]:
    """What makes each override that no longer applies stale, its item added to ``concerned`` for re-review."""
    stale = [f"stale override {o.item} {o.new_points:g} by {o.by or '?'}: {why}" for o in mine
             if (why := stale_reason(o, input_hash, items, item_max)) is not None and o.item not in live]
    for o in mine:
        if o.item in items and o.item not in live:
            concerned.setdefault(o.item, ("stale override: re-review", "stale.override"))
    return stale


def _confirmation(decided: Sequence[SubmissionDecision], input_hash: str) -> tuple[SubmissionDecision | None, list[str]]:
    """The latest confirmation of the machine's verdict on the submission that counts (or None), and what makes a
    confirmation made on another submission stale."""
    confirmed = next((d for d in reversed(decided) if d.verdict == CONFIRM), None)
    if confirmed is None or confirmed.input_hash == input_hash:
        return confirmed, []
    return None, [f"stale confirmation by {confirmed.by or '?'} ({confirmed.at[:10]}): made for submission "
                  f"{confirmed.input_hash[:12]}; the submission that counts is now {input_hash[:12]}"]


def _graded_entry(db: GradebookDB, row: FinalRow, mine: Sequence[Override], decided: Sequence[SubmissionDecision],
                  requests: Sequence[tuple[str, str, str]]) -> Entry | None:
    """The entry of a graded row: the reasons it is reviewed and the items in question, or None when there are none."""
    input_hash = row.get("input_hash", "")
    result = db.result(row["input_hash"]) if row.get("input_hash") else None
    item_max: Mapping[str, float] = row.item_max or (result or {}).get("item_max", {})
    items = _scored_items(row, result, item_max)
    live = {o.item: o for o in mine if stale_reason(o, input_hash, items, item_max) is None}
    concerned: dict[str, tuple[str, str]] = {}  # item → (why, code)
    reasons = _flag_reasons(row, items, live, (result or {}).get("findings") or [], concerned)
    reasons += _uncertain_reasons(result, items, concerned)
    reasons += _request_reasons(requests, items, concerned)
    stale = _stale_overrides(mine, input_hash, items, item_max, live, concerned)
    confirmed, unconfirmed = _confirmation(decided, input_hash)
    stale += unconfirmed
    if not reasons and not stale:
        return None
    # What the decision can move: every point of the items in question, never the points left after the flag.
    stake = sum(float(item_max.get(c, 0)) for c in concerned if c in items)
    return Entry(row["student"], row.get("student_name", ""), row["lab"], input_hash, row.get("path", ""),
                 tuple(reasons + stale),
                 tuple(QueueItem(c, float(items[c]), float(item_max.get(c, 0)), live.get(c), why, code)
                       for c, (why, code) in concerned.items() if c in items),
                 round(stake, 6), tuple(stale),
                 (row.collusion_group,) if row.collusion_group else (),
                 decision=confirmed.words() if confirmed else "")


def build_queue(db: GradebookDB, *, include_decided: bool = False) -> list[Entry]:
    """The review queue from the gradebook's final rows and stored results, most points at stake first."""
    overrides = load_overrides(db.conn)
    decisions = by_student_lab(load_decisions(db.conn))
    requests = _request_rows(db.conn)
    entries = [entry for entry in _whole_entries(db) if include_decided or not entry.decided]
    for row in db.final():
        key = (row["student"], row["lab"])
        entry = (_not_graded_entry(row) if (row.machine_status or row.status) in NOT_GRADED
                 else _graded_entry(db, row, overrides.get(key, []), decisions.get(key, ()), requests.get(key, [])))
        if entry is not None and (include_decided or not entry.decided):
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
    code: str = ""
    """The kind of the reason the item was queued for (``QueueItem.code``), kept with the override."""


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
                    decision.comment.strip(), by, at, decision.reason, decision.code)


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


FULL = "full"
"""``review --decide-code CODE --points full``: each item gets its maximum."""


def queue_codes(entries: Sequence[Entry]) -> list[tuple[str, int, int, float]]:
    """(code, open entries, items, points at stake on those items) for every code of ``entries``, most entries first."""
    counts: dict[str, list[float]] = {}
    for entry in entries:
        for code in entry.codes:
            mine = [item for item in entry.items if item.code == code and item.decision is None]
            tally = counts.setdefault(code, [0, 0, 0.0])
            tally[0] += 1
            tally[1] += len(mine)
            tally[2] += sum(item.max_points for item in mine)
    return sorted(((code, int(n), int(items), round(stake, 6)) for code, (n, items, stake) in counts.items()),
                  key=lambda row: (-row[1], row[0]))


def decide_code(db: GradebookDB, code: str, points: float | str | None, reason: str, by: str,
                lab: str = "") -> list[Override]:
    """Decide every open item of kind ``code`` in the queue (of ``lab``, or the whole course) in one step: ``points``
    a number (capped at each item's maximum), :data:`FULL` (each item's maximum) or None (confirm the machine's points).

    Each decision is stored per submission, on the submission that counts now, like one made on the page: it shows in
    the change log and goes stale for that student alone on a resubmission.  Raises :class:`DecisionError` when no open
    entry has the code, when ``reason`` is empty, or when the code is one of whole submissions (decide those one by one
    with ``--decide``); nothing is stored then.
    """
    if not reason.strip():
        raise DecisionError([f"--decide-code {code}: give the reason for the decision (--reason), shown in the change log"])
    entries = [entry for entry in build_queue(db) if not lab or entry.lab == lab]
    items = [(entry, item) for entry in entries for item in entry.items if item.code == code and item.decision is None]
    if not items:
        known = ", ".join(f"{c} ({n})" for c, n, _, _ in queue_codes(entries)) or "none"
        if any(code in entry.codes for entry in entries):
            raise DecisionError([f"--decide-code {code}: a kind of whole submissions; decide each with --decide"])
        raise DecisionError([f"--decide-code {code}: no open item has this code{f' in {lab}' if lab else ''} "
                             f"(open codes: {known})"])
    decisions = []
    for entry, item in items:
        new = (item.max_points if points == FULL else None if points is None
               else min(float(points), item.max_points))
        decisions.append(Decision(entry.student, entry.lab, item.column, new, reason.strip(), entry.input_hash,
                                  reason=item.why[:300], where=f"--decide-code {code}", code=code))
    made = apply_decisions(db, decisions, by)
    return [decision for decision in made if isinstance(decision, Override)]


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
            # one line for the whole submission: new_points `confirm` (the machine's verdict stands) or, for an upload the
            # machine could not grade, a score or `missing`; the comment is the reason
            writer.writerow([_cell(v) for v in (entry.student, entry.student_name, entry.lab, entry.input_hash, WHOLE,
                                                "", entry.at_stake, entry.at_stake, "; ".join(entry.reasons),
                                                " ".join(entry.codes), "", "")])
            lines += 1
            for item in entry.items:
                writer.writerow([_cell(v) for v in (entry.student, entry.student_name, entry.lab, entry.input_hash, item.column,
                                                    item.points, item.max_points, entry.at_stake, item.why, item.code,
                                                    "", "")])
                lines += 1
    return lines


def read_decisions(path: str | os.PathLike[str]) -> list[Decision]:
    """The filled item lines of a decisions CSV (:func:`read_all_decisions` without the whole-submission lines)."""
    return read_all_decisions(path)[0]


def _decisions_text(path: str | os.PathLike[str]) -> str:
    """The text of a decisions CSV; raises :class:`DecisionError` when it is not UTF-8."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DecisionError([f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as CSV UTF-8"]) from exc


def _decisions_header(path: str | os.PathLike[str], records: Sequence[tuple[int, list[str]]],
                      problems: list[str]) -> list[str]:
    """The column names of the header line; raises :class:`DecisionError` when there is none or it lacks a column a
    decision needs."""
    if not records:
        raise DecisionError(problems or [f"{path}: no header line (expected {', '.join(QUEUE_COLUMNS)})"])
    header = [cell.strip() for cell in records[0][1]]
    missing = [column for column in ("student", "lab", "item", "new_points") if column not in header]
    if missing:
        raise DecisionError([f"{path}: missing column(s) {', '.join(missing)} (expected {', '.join(QUEUE_COLUMNS)})"])
    return header


def _new_points(answer: str, whole_line: bool) -> float | None:
    """The points a line gives (None: ``missing`` or ``confirm`` on a whole-submission line); raises ValueError when
    ``answer`` is no number."""
    return None if whole_line and answer in ("missing", CONFIRM) else float(answer)


def _line_decision(cells: Mapping[str, str], answer: str, points: float | None, where: str) -> Decision | WholeDecision:
    """The decision a readable line makes: on the whole submission (item ``*``) or on one item."""
    if cells["item"] == WHOLE:
        return WholeDecision(cells["student"], cells["lab"], answer if points is None else "score", points,
                             cells.get("comment", ""), cells.get("input_hash", ""), where)
    return Decision(cells["student"], cells["lab"], cells["item"], points, cells.get("comment", ""),
                    cells.get("input_hash", ""), reason=cells.get("why", "")[:300], where=where,
                    code=cells.get("code", "")[:80])


def _read_line(name: str, line: int, values: Sequence[str], header: Sequence[str],
               seen: dict[tuple[str, str, str, str], tuple[str, int]]) -> Decision | WholeDecision | str | None:
    """The decision one line makes, the sentence saying why it cannot be read, or None when it decides nothing (blank,
    no ``new_points``, or the same decision as an earlier line)."""
    if len(values) != len(header):
        return (f"{name} line {line}: {len(values)} field(s), the header has {len(header)} (a comma or quote "
                "out of place?); nothing was imported")
    cells = {column: value.strip() for column, value in zip(header, values, strict=True)}
    if not any(cells.values()) or not cells.get("new_points"):
        return None
    where = f"{name} line {line}"
    answer = cells["new_points"].lstrip("'").strip().lower()
    whole_line = cells["item"] == WHOLE
    try:
        points = _new_points(answer, whole_line)
    except ValueError:
        return (f"{where}: new_points must be `confirm`, a score or `missing` for the whole submission "
                f"(got {cells['new_points']!r})" if whole_line else
                f"{where}: new_points must be a number (got {cells['new_points']!r})")
    first = seen.setdefault((cells["student"], cells["lab"], cells["item"], cells.get("input_hash", "")), (answer, line))
    if first[1] != line:
        return None if first[0] == answer else (
            f"{where}: {cells['student']} {cells['lab']} {cells['item']} is decided on line {first[1]} "
            f"too, with {first[0]!r} there and {answer!r} here: keep one")
    return _line_decision(cells, answer, points, where)


def read_all_decisions(path: str | os.PathLike[str]) -> tuple[list[Decision], list[WholeDecision]]:
    """The filled lines of a decisions CSV (as a spreadsheet saves it: BOM, CRLF, quoted fields, blank lines): the
    decisions on items, and those on whole submissions (item ``*``: ``new_points`` a score or ``missing``, the comment
    the reason).

    Raises :class:`DecisionError` naming every line that cannot be read.
    """
    text = _decisions_text(path)
    name = os.path.basename(os.fspath(path))
    records, problems = _strict_records(text, name)
    header = _decisions_header(path, records, problems)
    decisions: list[Decision] = []
    whole: list[WholeDecision] = []
    seen: dict[tuple[str, str, str, str], tuple[str, int]] = {}
    for line, values in records[1:]:
        read = _read_line(name, line, values, header, seen)
        if isinstance(read, str):
            problems.append(read)
        elif isinstance(read, WholeDecision):
            whole.append(read)
        elif read is not None:
            decisions.append(read)
    if problems:
        raise DecisionError(problems)
    return decisions, whole


def _swallowed(cells: Sequence[str], width: int) -> bool:
    """True when a cell spread over several lines holds what reads as whole decision lines (as many commas as a line
    of the file): a quote left open swallowed them.  A comment typed over two lines in a spreadsheet is no such cell."""
    return any(part.count(",") >= width - 2 for cell in cells for part in re.split(r"\r\n|\n|\r", cell)[1:])


def _strict_records(text: str, name: str) -> tuple[list[tuple[int, list[str]]], list[str]]:
    """(first physical line, fields) of every non-blank record, and the problems: a quote left open to the end of the file,
    or a record whose cell spreads over lines that read as decision lines (a quote opened in a cell and closed lines
    later swallows the decisions in between: refused, never imported as one)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: list[tuple[int, list[str]]] = []
    problems: list[str] = []
    previous = 0
    try:
        for cells in reader:
            start, end = previous + 1, reader.line_num
            previous = end
            if not any(cell.strip() for cell in cells):
                continue
            if end > start and records and _swallowed(cells, len(records[0][1])):
                problems.append(f"{name} lines {start}-{end} are read as one line: a quote opened on line {start} closes only "
                                f"on line {end}, swallowing the lines between; keep each decision on one line")
                continue
            records.append((start, cells))
    except csv.Error as exc:
        problems.append(f"{name} line {previous + 1}: not a well-formed CSV line ({exc}): a quote left open?")
    return records, problems


def import_decisions(db: GradebookDB, path: str | os.PathLike[str], by: str) -> list[Override | SubmissionDecision]:
    """Read, check and store a decisions CSV: everything or nothing."""
    items, whole = read_all_decisions(path)
    return apply_decisions(db, items, by, whole)


def agreement(db: GradebookDB) -> list[tuple[str, str, int, int]]:
    """How often staff changed the machine's points: (rubric item, why it was reviewed, decisions, changed)."""
    return agreement_of(load_overrides(db.conn))
