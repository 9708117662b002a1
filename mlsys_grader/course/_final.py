"""Students, not files: one final row per student and lab from the per-input rows.

The submission that counts is chosen among the student's gradable submissions of the lab
(status ``graded`` or ``regrade``; an ungradable one counts only when there is nothing
else): under ``counting = "latest"`` (the default) the latest by trusted submission time
(manifest ``submitted_at``, Gradescope ``created_at``), a submission without a trusted
time being older than any with one, and equal times going to the higher score; under
``counting = "best"`` the highest score.  Every other submission is listed (an ungradable one
says so).  A roster student without a submission of a lab is a ``missing`` row with score 0; a
student whose counting submission could not be read is ``unreadable`` (naming the file and
why), one whose grading did not finish ``timeout``, ``memory`` or ``crash``: a person decides
those (:mod:`._decisions`).

Final score = machine score, then staff overrides (:mod:`._overrides`), then the late
penalty (:mod:`._late`); ``machine_score``, ``raw_score`` (after overrides), ``late_penalty``
(points), ``overrides``, ``stale_overrides`` and ``rule`` show how.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from ._decisions import SubmissionDecision, placed
from ._identity import Roster, RosterStudent
from ._late import Course, penalty
from ._overrides import Override, apply_to_final
from ._row import NOT_GRADED, SCORED, UNREADABLE_INPUT, FinalRow, Row, Status

FINAL_COLUMNS = ["student", "student_name", "student_first_name", "student_last_name", "student_email", "student_id", "sis_id", "canvas_id", "moodle_id", "section",
                 "sis_login_id",
                 "lab", "status", "machine_score", "raw_score", "late_penalty", "score", "max_score", "submitted_at", "late", "rule",
                 "path", "input_hash", "other_submissions", "flags", "overrides", "stale_overrides", "decision", "reason", "changes"]
IDENTITY = {"student_name": "name", "student_first_name": "first_name", "student_last_name": "last_name", "student_email": "email", "student_id": "sid", "sis_id": "sis_id",
            "canvas_id": "canvas_id", "moodle_id": "moodle_id", "section": "section", "sis_login_id": "sis_login_id"}
"""Identity column → the roster attribute that fills it."""
_OLDEST = datetime.min.replace(tzinfo=UTC)


def _when(row: Row) -> datetime:
    text = row.get("submitted_at") or ""
    return datetime.fromisoformat(text) if text else _OLDEST


def counting_submission(rows: Sequence[Row], counting: str = "latest") -> Row:
    """The row that counts among one student's rows of one lab (see the module docstring)."""
    pool = [row for row in rows if row.status in SCORED] or list(rows)
    if counting == "best":
        return max(pool, key=lambda row: (float(row["score"] or 0), _when(row), row["path"]))
    return max(pool, key=lambda row: (_when(row), float(row["score"] or 0), row["path"]))


def build_final(rows: Iterable[Row], roster: Roster | None, labs: Sequence[str],
                max_scores: Mapping[str, float], course: Course | None = None,
                changes: Mapping[tuple[str, str], str] | None = None,
                overrides: Mapping[tuple[str, str], Sequence[Override]] | None = None,
                decisions: Mapping[tuple[str, str], Sequence[SubmissionDecision]] | None = None,
                unplaced: Mapping[str, Mapping[str, str]] | None = None) -> list[FinalRow]:
    """One row per (student, lab): every roster student for every lab in ``labs``, and every other student seen.

    ``changes`` maps (student, lab) to the change-log summary shown in the ``changes`` column;
    ``overrides`` (student, lab) to the staff overrides stored for that student's lab; ``decisions`` (student, lab)
    to the staff decisions on whole submissions; ``unplaced`` upload hash → the path and reason of an unreadable upload whose lab
    could not be told (a decision naming its lab places it).  A counting submission that could not be read makes the
    row ``unreadable``, naming the file and why.
    """
    grouped = _by_student_lab(rows)
    students = {s.key: s for s in roster.students} if roster else {}
    counting = course.counting if course else "latest"
    final: list[FinalRow] = []
    for key in _final_keys(grouped, roster, labs):
        mine = grouped.get(key, [])
        entry = students.get(key[0])
        change = (changes or {}).get(key, "")
        mine_decisions = (decisions or {}).get(key, ())
        if mine:
            made = _counted_row(key, mine, entry, course, counting, max_scores, change)
        else:
            made = placed(_missing_row(key, entry, max_scores, change), mine_decisions, unplaced or {})
        final.append(apply_to_final(made, (overrides or {}).get(key, ()), mine_decisions))
    return _with_collusion(final)


def _by_student_lab(rows: Iterable[Row]) -> dict[tuple[str, str], list[Row]]:
    """(student, lab) → the per-input rows of that student's lab, in input order (rows without either are left out)."""
    grouped: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row.lab and row.get("student"):
            grouped.setdefault((row["student"], row.lab), []).append(row)
    return grouped


def _final_keys(grouped: Mapping[tuple[str, str], list[Row]], roster: Roster | None,
                labs: Sequence[str]) -> list[tuple[str, str]]:
    """The (student, lab) of every final row: the roster's students by lab in roster order, then every other one seen, sorted."""
    keys: list[tuple[str, str]] = [(s.key, lab) for s in (roster.students if roster else ()) for lab in labs]
    known = set(keys)
    return keys + sorted(k for k in grouped if k not in known)


def _identity(entry: RosterStudent | None) -> dict[str, str]:
    """The identity columns as the roster fills them for ``entry`` (all empty without one)."""
    return {column: getattr(entry, attribute) if entry else "" for column, attribute in IDENTITY.items()}


def _missing_row(key: tuple[str, str], entry: RosterStudent | None, max_scores: Mapping[str, float], change: str) -> FinalRow:
    """The ``missing`` row, score 0, of a student's lab without a submission."""
    student_key, lab = key
    return FinalRow(student_key, lab, _identity(entry), Status.MISSING, machine_score=0.0, raw_score=0.0, late_penalty=0.0,
                    score=0.0, max_score=max_scores.get(lab, ""), rule="no submission", changes=change)


def _counted_row(key: tuple[str, str], mine: Sequence[Row], entry: RosterStudent | None, course: Course | None, counting: str,
                 max_scores: Mapping[str, float], change: str) -> FinalRow:
    """The row of a student's lab from its counting submission, the late penalty taken (before overrides and decisions)."""
    student_key, lab = key
    chosen = counting_submission(mine, counting)
    # the roster's identity, each field it leaves empty filled from the submission's own (an email Gradescope gave)
    identity = {column: (value or chosen.get(column, "")) for column, value in _identity(entry).items()} \
        if entry is not None else {column: chosen.get(column, "") for column in IDENTITY}
    raw = float(chosen["score"] or 0)
    when = chosen.get("submitted_at") or ""
    late = penalty(course, student_key, lab, datetime.fromisoformat(when) if when else None, bool(chosen.get("late")))
    points = round(raw * late.percent / 100, 6)
    status = Status.UNREADABLE if chosen.status in UNREADABLE_INPUT else chosen.status
    return FinalRow(student_key, lab, identity, status, machine_score=raw, raw_score=raw, late_penalty=points,
                    score=round(raw - points, 6), max_score=chosen.max_score or max_scores.get(lab, ""),
                    late_percent=late.percent, submitted_at=when,
                    late="yes" if (late.percent > 0 or chosen.get("late")) else "",
                    rule=_rule(mine, chosen, counting, late.rule, status), path=chosen.path,
                    input_hash=chosen.input_hash, other_submissions=_other_submissions(mine, chosen),
                    flags=tuple(sorted(set(chosen.flags))), reason=chosen.reasons if status in NOT_GRADED else "",
                    changes=change, held=chosen.held, item_max=dict(chosen.item_max), points=_numbers(chosen),
                    collusion_group=chosen.collusion_group)


def _rule(mine: Sequence[Row], chosen: Row, counting: str, late_rule: str, status: str) -> str:
    """The ``rule`` cell: which of several submissions counts, the late rule, and whether staff must decide the row."""
    rule = late_rule
    if len(mine) > 1:
        rule = (f"{'best score' if counting == 'best' else 'latest by trusted time'} of {len(mine)} submissions"
                + (f"; {rule}" if rule else ""))
    if status in NOT_GRADED:
        unreadable = chosen.status in UNREADABLE_INPUT
        rule = "; ".join(text for text in (f"{'unreadable upload' if unreadable else f'not graded ({chosen.status})'}: "
                                           "staff decide it in review", rule) if text)
    return rule


def _other_submissions(mine: Sequence[Row], chosen: Row) -> str:
    """The ``other_submissions`` cell: every submission but the counting one, an ungradable one saying so."""
    return "; ".join(row.path + ("" if row.status in SCORED else f" ({_unread(row)})") for row in mine if row is not chosen)


def _with_collusion(final: Sequence[FinalRow]) -> list[FinalRow]:
    """``final`` with each row naming the other students of its collusion group (the review page shows them side by side)."""
    members: dict[str, list[str]] = {}
    for out in final:
        if out.collusion_group:
            members.setdefault(out.collusion_group, []).append(out.student)
    return [out.but(collusion_with=tuple(s for s in members.get(out.collusion_group, []) if s != out.student)) for out in final]


def _unread(row: Row) -> str:
    return "unreadable" if row.status in UNREADABLE_INPUT else f"not graded: {row.status}"


def _numbers(row: Row) -> dict[str, float]:
    """The points of each of the row's items that has a maximum (a formative True/False as 1.0/0.0)."""
    return {column: float(value) for column in row.item_max if isinstance(value := row.points.get(column), int | float)}


def default_final_path(csv_path: str | os.PathLike[str]) -> str:
    """Where the final gradebook goes when ``--final`` is not given: ``final.csv`` beside a per-input CSV named
    ``grades.csv`` (the default), else ``<stem>-final.csv`` beside it, so two runs with different ``-o`` in one
    folder never overwrite each other's final gradebook."""
    folder = os.path.dirname(os.fspath(csv_path)) or "."
    stem = os.path.splitext(os.path.basename(os.fspath(csv_path)))[0]
    return os.path.join(folder, "final.csv" if stem == "grades" else f"{stem}-final.csv")
