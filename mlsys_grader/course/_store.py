"""The SQLite gradebook: stored results by input, the latest score of each student, the final gradebook and the change
log (its schema and upgrades: :mod:`._migrations`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ._migrations import open_gradebook
from ._row import FinalRow, Result, identity
from ._worker import record_of, view_of

RECORD_KEYS = ("report", "part_times", "rationale", "spans")
"""What a stored graded result must hold: the report (the record of the grade), and what collusion and the review
queue read of its bundle; a result stored without them (by an earlier release) is graded again."""


@dataclass
class ScoreChange:
    """A student whose score differs from the previous run of the same gradebook."""

    who: str
    lab: str
    path: str
    old_score: float
    new_score: float
    cause: str
    """``rubric``, ``grader`` (same input, new rubric or grader version) or ``resubmission``."""

    @property
    def delta(self) -> float:
        return round(self.new_score - self.old_score, 6)


# -- SQLite gradebook --------------------------------------------------------------

class GradebookDB:
    """The embedded gradebook: stored results by (input hash, grader version, rubric key), latest score per student."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.conn, self.migrated_from = open_gradebook(self.path)  # an earlier release's gradebook is upgraded in place

    def known_hashes(self, grader_version: str, key: str) -> frozenset[str]:
        """Inputs whose stored result can be reused: not ``regrade``, and (when graded) holding
        what collusion needs — a result stored by an earlier format lacks it and is graded again."""
        held = " AND ".join(f"json_type(result, '$.{name}') IS NOT NULL" for name in RECORD_KEYS)
        rows = self.conn.execute(
            "SELECT input_hash FROM results WHERE grader_version = ? AND rubric_key = ? AND "
            f"(json_extract(result, '$.status') IN ('error', 'unsupported') OR (json_extract(result, '$.status') = 'graded' AND {held}))",
            (grader_version, key))
        return frozenset(h for (h,) in rows)

    def stored(self, input_hash: str, grader_version: str, key: str) -> Result | None:
        found = self.conn.execute("SELECT result FROM results WHERE input_hash = ? AND grader_version = ? AND rubric_key = ?",
                                  (input_hash, grader_version, key)).fetchone()
        return view_of(json.loads(found[0])) if found else None

    def store(self, results: Iterable[Mapping[str, Any]], grader_version: str, key: str) -> None:
        """Store fresh results as their records (:func:`._worker.record_of`: a graded one's report and what is read of its
        bundle; the report's view is computed when read); their evidence numbers go to the ``evidence`` table (only
        feedback reads them)."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        results = list(results)
        self.conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)",
                              [(r["input_hash"], grader_version, key, now,
                                json.dumps({k: v for k, v in record_of(r).items() if k != "evidence"})) for r in results])
        self.conn.executemany("INSERT OR REPLACE INTO evidence VALUES (?, ?)",
                              [(r["input_hash"], json.dumps(r["evidence"])) for r in results if r.get("evidence")])
        self.conn.commit()

    def result(self, input_hash: str) -> Result | None:
        """The latest result stored for ``input_hash`` (with its evidence numbers), or None: the one the last run graded
        or reused, whichever grading code it was."""
        found = self.conn.execute("SELECT result FROM results WHERE input_hash = ? ORDER BY graded_at DESC",
                                  (input_hash,)).fetchone()
        if found is None:
            return None
        result: Result = view_of(json.loads(found[0]))
        result.setdefault("evidence", self.evidence(input_hash))
        return result

    def evidence(self, input_hash: str) -> dict[str, Any]:
        found = self.conn.execute("SELECT numbers FROM evidence WHERE input_hash = ?", (input_hash,)).fetchone()
        return json.loads(found[0]) if found else {}

    def record_run(self, rows: Sequence[Mapping[str, Any]], grader_version: str, key: str) -> list[ScoreChange]:
        """Compare each graded row with the student's previous score, then remember the new one.

        A ``regrade`` row is provisional (points held for staff) and is neither compared nor remembered.
        """
        now = datetime.now(UTC).isoformat(timespec="seconds")
        changes = []
        for row in rows:
            if row["status"] not in ("graded", "error"):
                continue
            who, lab = identity(row), row.get("lab") or ""
            before = self.conn.execute("SELECT input_hash, score, grader_version, rubric_key FROM latest WHERE who = ? AND lab = ?",
                                       (who, lab)).fetchone()
            score = float(row["score"] or 0)
            if before is not None and abs(before[1] - score) > 1e-9:
                cause = ("resubmission" if before[0] != row["input_hash"] else
                         "grader" if before[2] != grader_version else "rubric")
                changes.append(ScoreChange(who, lab, row["path"], before[1], score, cause))
            self.conn.execute("INSERT OR REPLACE INTO latest VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                              (who, lab, row["path"], row["input_hash"], score, grader_version, key, now))
        self.conn.commit()
        return changes

    def write_final(self, final: Sequence[FinalRow]) -> None:
        """Replace the ``final`` table with ``final`` (one row per student and lab)."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self.conn:
            self.conn.execute("DELETE FROM final")
            self.conn.executemany("INSERT INTO final VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                  [(r.student, r.lab, str(r.status), r.raw_score, r.late_penalty, r.score,
                                    r.input_hash, json.dumps(r.to_json()), now) for r in final])

    def final(self) -> list[FinalRow]:
        """The final gradebook as last written, in the order it was written."""
        return [FinalRow.from_json(json.loads(text)) for (text,) in self.conn.execute("SELECT row FROM final ORDER BY rowid")]

    def final_scores(self) -> dict[tuple[str, str], float]:
        return {(student, lab): score for student, lab, score in self.conn.execute("SELECT student, lab, score FROM final")}

    def log(self, kind: str, entries: Iterable[tuple[str, str, str, float | None, float | None, str]], by: str = "") -> None:
        """Append change-log entries: (student, lab, input hash, old score, new score, reason)."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self.conn:
            self.conn.executemany("INSERT INTO change_log (at, kind, student, lab, input_hash, old_score, new_score, reason, by) "
                                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [(now, kind, *entry, by) for entry in entries])

    def change_log(self) -> list[dict[str, Any]]:
        cursor = self.conn.execute("SELECT id, at, kind, student, lab, input_hash, old_score, new_score, reason, by "
                                   "FROM change_log ORDER BY id")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor]

    def change_summaries(self) -> dict[tuple[str, str], str]:
        """(student, lab) → the change log in a few words (latest first), for the final gradebook's ``changes`` column."""
        found: dict[tuple[str, str], list[str]] = {}
        for entry in reversed(self.change_log()):
            words = f"{entry['at'][:16]} {entry['kind']}"
            if entry["old_score"] is not None and entry["new_score"] is not None:
                words += f" {entry['old_score']:g} -> {entry['new_score']:g}"
            if entry["reason"]:
                words += f" ({entry['reason']})"
            found.setdefault((entry["student"], entry["lab"]), []).append(words)
        return {key: "; ".join(texts[:3]) for key, texts in found.items()}

    def close(self) -> None:
        self.conn.close()
