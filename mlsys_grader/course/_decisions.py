"""Staff decisions on a whole submission: what an upload the machine could not grade is worth.

A student who handed in something the grader cannot read (a truncated zip, an empty file, a
PDF, a form the course does not accept) or could not finish grading (timeout, memory, crash)
has a final row of that status (:data:`._row.NOT_GRADED`), never ``missing``: the student
submitted, and a person decides.  A decision is one of

* ``score``: the lab's score, from 0 to its maximum, with the reason (e.g. the notebook read
  by hand), after which the late penalty applies as to any score;
* ``missing``: the upload counts as no submission (score 0, status ``missing``), with the reason;
* ``confirm``: for a submission the machine graded, staff keep its verdict as it stands (who,
  when, the submission's hash): one decision that takes the whole entry out of the review queue,
  instead of one confirmation per rubric item.

A decision is keyed by (student, upload hash) and records who made it, when and on which file.
It applies while that upload is the one that counts; after a resubmission it is stale (listed
in ``stale_overrides``, never applied).  Every decision goes to the change log; a newer
decision on the same upload replaces the row, the log keeps both.  An unreadable upload whose
lab could not be told (``unplaced``) is decided the same way, naming its lab for a score.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import DecisionError
from ._row import NOT_GRADED, FinalRow, Row, Status

CONFIRM = "confirm"
VERDICTS = ("score", "missing", CONFIRM)
MAX_REASON = 1000
"""Characters a decision's reason may hold."""


@dataclass(frozen=True)
class SubmissionDecision:
    """One stored staff decision on one upload of one student."""

    student: str
    lab: str
    """The lab the decision is for ("" for an upload of unknown lab counted as missing)."""
    input_hash: str
    verdict: str
    """``score`` or ``missing``."""
    points: float | None
    reason: str
    by: str
    at: str
    path: str = ""
    """The upload's file, as the gradebook last saw it."""

    def words(self) -> str:
        """The decision as the final gradebook's ``decision`` cell shows it."""
        what = {"score": f"score {self.points or 0:g}", "missing": "counts as missing"}.get(self.verdict,
                                                                                          "machine's verdict confirmed")
        return f"{what} by {self.by or '?'} ({self.at[:10]})" + (f": {self.reason}" if self.reason else "")


_COLUMNS = "student, lab, input_hash, verdict, points, reason, by, at, path"


def load_decisions(conn: sqlite3.Connection) -> list[SubmissionDecision]:
    """Every stored decision, oldest first."""
    return [SubmissionDecision(*values) for values in conn.execute(f"SELECT {_COLUMNS} FROM decisions ORDER BY at, rowid")]


def by_student_lab(decisions: Iterable[SubmissionDecision]) -> dict[tuple[str, str], list[SubmissionDecision]]:
    """(student, lab) → that student's decisions on uploads of the lab."""
    found: dict[tuple[str, str], list[SubmissionDecision]] = {}
    for decision in decisions:
        found.setdefault((decision.student, decision.lab), []).append(decision)
    return found


def labs_by_upload(decisions: Iterable[SubmissionDecision]) -> dict[str, str]:
    """Upload hash → the lab staff named for it (an upload whose lab the grader could not tell is placed so)."""
    return {d.input_hash: d.lab for d in decisions if d.lab}


def apply_decision(row: FinalRow, decisions: Sequence[SubmissionDecision]) -> FinalRow:
    """``row`` (its overrides applied) with the decision on its counting upload in force, if any.

    Sets ``status``, ``raw_score`` and ``decision``; decisions made for another upload go to ``stale_overrides``.
    Applied after the overrides and before the late penalty (:func:`._overrides.apply_to_final`).
    """
    base = row.machine_status or row.status
    live = next((d for d in reversed(decisions) if d.input_hash and d.input_hash == row.input_hash), None)
    stale = [d for d in decisions if d is not live and d.input_hash != row.input_hash]
    if live is not None and (base in NOT_GRADED) == (live.verdict == CONFIRM):  # a confirmation needs a machine verdict
        stale.append(live)
        live = None
    words = "; ".join(f"decision {d.words()}: made for upload {d.path or d.input_hash[:12]}; the submission that counts is "
                      f"now {row.path or 'none'}" for d in stale)
    stale_text = "; ".join(text for text in (row.stale_overrides, words) if text)
    if live is None:
        return row.but(decision="", stale_overrides=stale_text)
    if live.verdict == CONFIRM:
        return row.but(decision=live.words(), stale_overrides=stale_text)
    if live.verdict == "missing":
        return row.but(status=Status.MISSING, raw_score=0.0, decision=live.words(), stale_overrides=stale_text)
    return row.but(raw_score=float(live.points or 0.0), decision=live.words(), stale_overrides=stale_text)


def placed(row: FinalRow, decisions: Sequence[SubmissionDecision], unplaced: Mapping[str, Mapping[str, str]]) -> FinalRow:
    """A ``missing`` final row that staff gave an upload of unknown lab to: now that upload's ``unreadable`` row
    (``unplaced``: upload hash → what the gradebook knows of it).  Any other row comes back unchanged."""
    if row.input_hash or (row.machine_status or row.status) != Status.MISSING:
        return row
    chosen = next((d for d in reversed(decisions) if d.lab == row.lab and d.input_hash in unplaced), None)
    if chosen is None:
        return row
    upload = unplaced[chosen.input_hash]
    return row.but(status=Status.UNREADABLE, machine_status=Status.UNREADABLE, input_hash=chosen.input_hash,
                   path=str(upload["path"]), reason=str(upload["reason"]), rule="unreadable upload, lab named by staff")


# -- the gradebook's store ----------------------------------------------------------

def store_unplaced(conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
    """Replace the ``unplaced`` table with this run's unreadable uploads of unknown lab (in the caller's transaction)."""
    conn.execute("DELETE FROM unplaced")
    conn.executemany("INSERT OR REPLACE INTO unplaced VALUES (?, ?, ?, ?, ?)",
                     [(row["student"], row.input_hash, row.path, row.reasons,
                       json.dumps({"student": row["student"], "student_name": row.get("student_name", ""), "path": row.path,
                                   "reason": row.reasons, "input_hash": row.input_hash}))
                      for row in rows])


def load_unplaced(conn: sqlite3.Connection) -> list[dict[str, str]]:
    """This run's unreadable uploads of unknown lab: student, student_name, path, reason, input_hash."""
    return [json.loads(text) for (text,) in conn.execute("SELECT row FROM unplaced ORDER BY student, path")]


def check_decision(rows: Mapping[tuple[str, str], FinalRow], unplaced: Sequence[Mapping[str, str]], student: str, lab: str,
                   verdict: str, points: float | None, reason: str, upload: str = "", where: str = "",
                   max_scores: Mapping[str, float] | None = None) -> tuple[str, str, str, float | None, str] | str:
    """(student, lab, upload hash, points, path) for a decision, or the sentence saying why it cannot be made.

    ``upload`` (an upload hash or its prefix, or its path) picks an upload of unknown lab; without it the decision is on
    the counting upload of (student, lab).  A ``score`` needs points from 0 to the lab's maximum; every decision a reason.
    """
    where = f"{where}: " if where else ""
    problem = _verdict_problem(where, verdict, reason)
    if problem:
        return problem
    found = _unplaced_upload(unplaced, student, upload)
    if found is not None:
        return _checked_unplaced(rows, found, where, (student, lab), verdict, points, max_scores)
    row = rows.get((student, lab))
    if row is None:
        return _no_row(rows, unplaced, where, student, lab, upload)
    return _checked_counting(row, where, (student, lab), verdict, points, upload, max_scores)


_Checked = tuple[str, str, str, float | None, str]
"""What :func:`check_decision` returns for a decision that can be made: student, lab, upload hash, points, path."""


def _verdict_problem(where: str, verdict: str, reason: str) -> str:
    """Why the verdict or its reason cannot stand, or ""."""
    if verdict not in VERDICTS:
        return f"{where}expected a score or `missing` (got {verdict!r})"
    reason = reason.strip()
    if not reason and verdict != CONFIRM:
        return f"{where}a decision on a submission needs a reason (why this score, or why it counts as missing)"
    if len(reason) > MAX_REASON:
        return f"{where}the reason is {len(reason):,} characters; at most {MAX_REASON:,}"
    return ""


def _names(upload: str, path: str, input_hash: str) -> bool:
    """Whether ``upload`` is that upload's path, its hash, or a prefix of its hash of at least 8 characters."""
    return upload in (path, input_hash) or (len(upload) >= 8 and input_hash.startswith(upload))


def _unplaced_upload(unplaced: Sequence[Mapping[str, str]], student: str, upload: str) -> Mapping[str, str] | None:
    """The student's first upload of unknown lab that ``upload`` names, if any."""
    loose = [u for u in unplaced if u["student"] == student and upload and _names(upload, u["path"], u["input_hash"])]
    return loose[0] if loose else None


def _checked_unplaced(rows: Mapping[tuple[str, str], FinalRow], found: Mapping[str, str], where: str, key: tuple[str, str],
                      verdict: str, points: float | None, max_scores: Mapping[str, float] | None) -> _Checked | str:
    """The checked decision on ``found``, an upload of unknown lab, or why it cannot be made."""
    student, lab = key
    if verdict == "score" and not lab:
        return f"{where}{found['path']} is an upload of unknown lab: name the lab the score is for"
    row = rows.get(key) if lab else None
    if lab and row is None:
        return f"{where}student {student!r} has no row for lab {lab!r}"
    most = _max(row, lab, max_scores)
    return _points_checked(where, verdict, points, most) or (student, lab, found["input_hash"], points, found["path"])


def _no_row(rows: Mapping[tuple[str, str], FinalRow], unplaced: Sequence[Mapping[str, str]], where: str, student: str, lab: str,
            upload: str) -> str:
    """Why a decision on (student, lab), which has no final row, cannot be made."""
    labs = sorted({known for (who, known) in rows if who == student})
    if not labs and not any(u["student"] == student for u in unplaced):
        return f"{where}unknown student {student!r}"
    if not upload:
        return f"{where}student {student!r} has no row for lab {lab!r} (has {', '.join(labs) or 'none'})"
    return f"{where}student {student!r} has no upload {upload!r} of unknown lab"


def _checked_counting(row: FinalRow, where: str, key: tuple[str, str], verdict: str, points: float | None, upload: str,
                      max_scores: Mapping[str, float] | None) -> _Checked | str:
    """The checked decision on the counting upload of (student, lab), whose final row is ``row``, or why it cannot be made."""
    student, lab = key
    if upload and not _names(upload, row.path, row.input_hash):
        return (f"{where}stale upload {upload!r} for {student} {lab}: the submission that counts is now "
                f"{row.path or row.input_hash[:12]}; list the queue again")
    machine = row.machine_status or row.status
    if verdict == CONFIRM:
        if machine in NOT_GRADED or not row.input_hash:
            return (f"{where}{student} {lab} is {machine}: there is no machine verdict to confirm (decide a score or "
                    "`missing`)")
        return (student, lab, row.input_hash, None, row.path)
    if machine not in NOT_GRADED:
        return (f"{where}{student} {lab} is {machine}: a score or `missing` for the whole submission is for an "
                "upload the machine could not grade (unreadable, timeout, memory, crash); change items with overrides, "
                "or confirm the machine's verdict")
    return (_points_checked(where, verdict, points, _max(row, lab, max_scores))
            or (student, lab, row.input_hash, points, row.path))


def _max(row: FinalRow | None, lab: str, max_scores: Mapping[str, float] | None) -> float:
    if row is not None and row.max_score not in ("", None):
        return float(row.max_score)
    return float((max_scores or {}).get(lab, 100.0))


def _points_checked(where: str, verdict: str, points: float | None, most: float) -> str:
    if verdict == "missing":
        return ""
    if points is None or not math.isfinite(points) or not -1e-9 <= points <= most + 1e-9:
        return f"{where}the score must be a number from 0 to {most:g} (got {points!r})"
    return ""


def write_decision(conn: sqlite3.Connection, decision: SubmissionDecision, before: float | None) -> None:
    """Store ``decision`` and log it, in the caller's transaction (``before``: the final score before it)."""
    conn.execute(f"INSERT OR REPLACE INTO decisions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (decision.student, decision.lab, decision.input_hash, decision.verdict, decision.points, decision.reason,
                  decision.by, decision.at, decision.path))
    conn.execute("INSERT INTO change_log (at, kind, student, lab, input_hash, old_score, new_score, reason, by) "
                 "VALUES (?, 'decision', ?, ?, ?, ?, ?, ?, ?)",
                 (decision.at, decision.student, decision.lab, decision.input_hash, before,
                  decision.points if decision.verdict == "score" else 0.0,
                  f"{decision.path}: {decision.words()}", decision.by))


def refuse(problems: Sequence[str]) -> None:
    """Raise :class:`DecisionError` naming every problem (nothing is stored)."""
    if problems:
        raise DecisionError(list(problems))
