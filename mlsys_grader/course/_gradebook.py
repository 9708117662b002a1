"""Grade a course's submissions into a gradebook: rows, CSV, DataFrame, SQLite, roster.

:func:`grade_paths` is the whole pipeline: discover inputs (:mod:`._ingest`), read each with
the one reader (:func:`mlsys_grader.intake.read_submission`) and grade it in the core
(:func:`mlsys_grader.api.grade_submission`) in a bounded worker (:mod:`._pool`), reuse results stored in the SQLite gradebook for
inputs already graded with the same grader version and rubrics, join roster tracks,
find collusion (:mod:`._collusion`) and report which students' scores moved since the
last run.  Every input yields exactly one row (a frozen :class:`._row.Row`); an input that
cannot be graded gets score 0 and the reason.

Row status (:class:`._row.Status`): ``graded``; ``regrade`` when the grader itself failed on part of the
submission (flag ``grader_error``: the part's points are held, the reason says which
check failed; such a result is stored but never reused, so the next run grades it
again); ``error`` for an input that cannot be read as a bundle, or whose format the
course does not accept (``BatchOptions.formats``); ``unsupported`` for a file in no
accepted format (a PDF, a text file); ``timeout``, ``memory`` or ``crash`` when grading
it did not finish.  ``reasons`` are plain sentences; ``error_kind`` names the kind of
failure (``BundleFormatError``, ``FormatRefused``, ``Unsupported``, …).

Who each input belongs to comes from :mod:`._identity`; the final gradebook (one row per
student and lab, with the late policy) from :mod:`._final` and :mod:`._late`.  Every row's ``origin`` says what the input was read as
(``bundle``, ``notebook``, ``otter``, ``marimo-json``, ``marimo-md``, ``otter/marimo-json``), or
``unreadable <kind>`` when its content could not be read.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from .._version import __version__
from ..api import default_replay, default_rubric, grade_submission, load_rubric
from ..core import flags as flag_names
from ..core.models import PARTS, Bundle
from ..core.report import GradeReport
from ..core.rubric import PART_ITEMS, SYNTHESIS_ITEMS, Rubric
from ..errors import CourseFileError, GraderError, RubricError
from ..intake import Submission as Read
from ..intake import read_submission
from ..labs import lab_ids
from ..replay import Replay
from ._collusion import RATIONALE_THRESHOLD, Group, RationaleIndex, Submission, find_groups, part_times, work_path
from ._decisions import SubmissionDecision, by_student_lab, labs_by_upload, load_decisions, store_unplaced
from ._files import replace_atomically
from ._final import FINAL_COLUMNS, build_final
from ._formative import mark_formative
from ._identity import Claim, Identity, Manifest, Roster, claims_for, identify, read_manifest, staff_files
from ._ingest import (
    FORMATS,
    Candidate,
    Format,
    discover_all,
    file_digest,
    lab_hint,
    load_candidate,
)
from ._late import Course, read_course
from ._migrations import open_gradebook
from ._overrides import agreement_of, load_overrides
from ._placing import place_labs
from ._rosters import read_roster
from ._row import SCORED, FinalRow, Result, Row, Status

if TYPE_CHECKING:
    import pandas as pd

CHOICE_FIELDS = ("recommendation", "rejected_alternative", "residual_risk", "reevaluation_trigger")
"""The synthesis choices a stored result keeps, for the review page."""
COLLUSION_KEYS = ("part_times", "rationale", "certainty", "spans")
"""What a stored result must hold for collusion and the review queue; a stored result without them is graded again."""


class BatchOptions(BaseModel):
    """How ``mlsys-grader grade`` runs; the CLI reads its defaults from here."""

    model_config = ConfigDict(extra="forbid")

    jobs: int | None = Field(default=None, ge=1, description="Worker processes (default: all cores).")
    timeout_s: float = Field(default=30.0, gt=0, description="Time limit per submission, in seconds.")
    memory_mb: int | None = Field(default=1024, ge=64, description="Memory a worker may add while grading, in MiB.")
    db: str | None = Field(default="gradebook.sqlite", description="SQLite gradebook to reuse and update (None: no database).")
    roster: str | None = Field(default=None, description="Roster as the LMS exports it (Canvas gradebook export, Moodle "
                                                        "participants or grades export, Gradescope roster) or mlsys-grader's "
                                                        "CSV: name, email or sid per student; optional first_name, last_name, "
                                                        "sis_id, canvas_id, moodle_id, section, track (and lab, for a track per lab).")
    manifest: str | None = Field(default=None, description="Staff manifest CSV: path, student (email or sid), optional "
                                                          "submitted_at (ISO 8601 with offset) and lab.")
    course: str | None = Field(default=None, description="Course file (TOML): deadlines, late policy, extensions, LMS ids.")
    only: tuple[str, ...] = Field(default=(), description="Grade these students (key, email or sid) or input hashes afresh, "
                                                         "ignoring their stored results; recorded in the change log.")
    reason: str = Field(default="", description="Why `only` regrades; recorded in the change log.")
    rubrics: dict[str, str] = Field(default_factory=dict, description="Lab id → rubric TOML replacing the shipped rubric.")
    collusion_threshold: float = Field(default=RATIONALE_THRESHOLD, gt=0, le=1,
                                       description="Word-shingle Jaccard at or above which two rationales are paired.")
    formats: tuple[Format, ...] = Field(
        default=FORMATS, min_length=1,
        description="Input formats the course accepts (bundle JSON, Otter export zip, marimo export); any other is an "
                    "error row saying so.")


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


@dataclass
class GradebookResult:
    """The outcome of :func:`grade_paths`: rows in input order plus course-level findings."""

    rows: list[Row]
    columns: list[str]
    groups: list[Group] = field(default_factory=list)
    changes: list[ScoreChange] = field(default_factory=list)
    graded: int = 0
    reused: int = 0
    seconds: float = 0.0
    final: list[FinalRow] = field(default_factory=list)
    """One row per student and lab (:mod:`._final`)."""
    ignored: list[tuple[str, str]] = field(default_factory=list)
    """Files ignored by rule (path, why): a notebook beside its bundle, helper files, staff files."""
    migrated_from: int | None = None
    """The schema version the gradebook database was upgraded from in this run (None: no upgrade)."""
    final_seconds: float = 0.0
    only_matched: int = 0
    notes: list[str] = field(default_factory=list)
    """What staff should know about the run itself (e.g. manifest lines naming no input)."""
    """How many inputs ``BatchOptions.only`` named (by student or input hash)."""
    agreement: list[tuple[str, str, int, int]] = field(default_factory=list)
    """Staff decisions so far: (rubric item, why it was reviewed, decisions, changed) (:func:`._overrides.agreement_of`)."""
    unplaced: list[Row] = field(default_factory=list)
    """Uploads that could not be read and whose lab could not be told (:mod:`._placing`): in the review queue."""

    def write_final(self, out: str | os.PathLike[str]) -> int:
        """Write the final gradebook (one row per student and lab); returns the number of rows."""
        return write_csv(self.final, out, FINAL_COLUMNS)

    def to_dataframe(self) -> pd.DataFrame:
        """The gradebook as a :class:`pandas.DataFrame` (same columns as the CSV)."""
        import pandas as pd  # pandas loads only when a DataFrame is asked for: keeps `import mlsys_grader` fast

        return pd.DataFrame([row.to_csv(self.columns) for row in self.rows], columns=self.columns)

    def write_csv(self, out: str | os.PathLike[str]) -> int:
        """Write the CSV gradebook; returns the number of rows."""
        return write_csv(self.rows, out, self.columns)


# -- rubrics and keys --------------------------------------------------------------

def resolve_rubrics(overrides: Mapping[str, str]) -> dict[str, Rubric]:
    """The rubric for every lab: shipped, or loaded from ``overrides[lab]``."""
    unknown = sorted(set(overrides) - set(lab_ids()))
    if unknown:
        raise RubricError(f"rubric given for unknown lab(s) {unknown}; expected one of {list(lab_ids())}")
    return {lab: load_rubric(overrides[lab], lab) if lab in overrides else default_rubric(lab) for lab in lab_ids()}


def rubric_key(rubrics: Mapping[str, Rubric], formats: Iterable[str] = FORMATS) -> str:
    """One digest of every lab's rubric (and of the accepted formats, when not all): a stored result
    is reused only under the same rubrics and formats."""
    text = ";".join(f"{lab}:{rubric.version}:{rubric.digest}" for lab, rubric in sorted(rubrics.items()))
    accepted = sorted(set(formats))
    if accepted != sorted(FORMATS):
        text += ";formats=" + ",".join(accepted)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def item_columns(rubrics: Iterable[Rubric]) -> list[str]:
    """``A.captured`` … ``synthesis.rationale_names_trigger``: every rubric item any lab scores."""
    rubrics = list(rubrics)
    columns = [f"{part}.{item}" for part in PARTS for item in PART_ITEMS
               if any(item in r.parts.get(part, {}) for r in rubrics)]
    return columns + [f"synthesis.{item}" for item in SYNTHESIS_ITEMS if any(item in r.synthesis for r in rubrics)]


IDENTITY_COLUMNS = ["path", "kind", "student", "student_name", "student_email", "student_id", "sis_id", "canvas_id",
                    "moodle_id", "section", "identity_source", "submitted_at", "late", "input_hash"]
SCORE_COLUMNS = ["lab", "track", "roster_track", "status", "score", "max_score",
                 *[f"part_{p}" for p in PARTS], "part_synthesis"]
TAIL_COLUMNS = ["flags", "collusion_group", "reasons", "error_kind", "origin", "grader_version", "rubric"]


def columns_for(rubrics: Iterable[Rubric]) -> list[str]:
    """The CSV/DataFrame columns, identity first."""
    return IDENTITY_COLUMNS + SCORE_COLUMNS + item_columns(rubrics) + TAIL_COLUMNS


# -- one submission (runs in a worker) ---------------------------------------------

def summarize(report: GradeReport, origin: str = "") -> Result:
    """The JSON-safe part of a row that depends only on the graded report (its flags are the report's own,
    whatever the origin: ``check`` and the gradebook say the same)."""
    items = {f"{name}.{item.item}": item.points for name, part in report.parts.items() for item in part.items}
    return {
        "lab": report.lab, "track": report.track, "score": report.score, "max_score": report.max_score,
        "parts": {name: part.score for name, part in report.parts.items()}, "items": items,
        "flags": list(report.flags),
        "findings": [[f.part, f.criterion, f.rubric_item or "", f.message] for f in report.findings],
        "hidden": [index for index, f in enumerate(report.findings) if f.hidden],  # withheld from feedback until release
        "item_max": {f"{name}.{item.item}": item.max_points for name, part in report.parts.items() for item in part.items},
        "rubric": report.versions.get("rubric", ""),
        # For the review queue (:mod:`._review`): the items held for staff, and the reader's certainty per judged item.
        "held": [f"{name}.{item.item}" for name, part in report.parts.items() for item in part.items if item.held],
        "certainty": {f"{name}.{item.item}": [item.certainty, item.certainty_reason or ""]
                      for name, part in report.parts.items() for item in part.items if item.certainty},
    }


def grade_loaded(loaded: Read, rubric: Rubric | None = None, *, replay: Replay | None = None) -> GradeReport:
    """The grade report of a read input (raises its reading's error when it cannot be graded).

    The core grades the bundle with what the reader found about the file (a marimo export's own
    findings, the lock-time excuse, the rule that the lab downloads only complete reports) and scores
    it once (:func:`mlsys_grader.api.grade_submission`).  ``check`` and the gradebook both come here.
    """
    return grade_submission(loaded, rubric, replay=replay)


def check_file(path: str | os.PathLike[str], rubric: Rubric | None = None, *, replay: Replay | None = None) -> GradeReport:
    """The report ``mlsys-grader check`` prints for one file in any accepted form (bundle, Otter export zip,
    notebook, Gradescope upload folder, marimo export), exactly as the gradebook grades it.  Raises the reading's
    error (:class:`GraderError` or ``OSError``) when the file cannot be graded."""
    return grade_loaded(read_submission(path), rubric, replay=replay)


def grade_candidate(candidate: Candidate, rubrics: Mapping[str, Rubric], reuse: frozenset[str] = frozenset(),
                    formats: Iterable[Format] = FORMATS, *, replay: Replay | None = None) -> Result:
    """Grade one input; the result for the row (never raises for a bad input).

    When the input's hash is in ``reuse`` the stored result is used instead and only
    ``{"status": "reuse", "input_hash": ...}`` comes back.  An input whose content is a
    format the course does not accept (``formats``) is an ``error`` row that says so and
    keeps its origin.
    """
    loaded = load_candidate(candidate, reuse, formats)
    if loaded.origin == "known" or loaded.input_hash in reuse:
        return {"status": "reuse", "input_hash": loaded.input_hash}
    result: Result = {"input_hash": loaded.input_hash, "origin": loaded.origin}
    bundle = loaded.bundle
    if loaded.error is not None or bundle is None:
        status = "unsupported" if loaded.error_kind == "Unsupported" else "error"
        reason = loaded.error or "the input holds no bundle"
        if candidate.primary and candidate.primary not in reason and not reason.startswith(os.path.basename(candidate.primary)):
            reason = f"{os.path.basename(candidate.primary)}: {reason}"  # the file a person opens to see what went wrong
        return {**result, "status": status, "reason": file_neutral(reason, candidate.primary),
                "error_kind": loaded.error_kind or "GraderError"}
    try:
        report = grade_loaded(loaded, rubrics.get(bundle.lab), replay=replay or default_replay())
    except GraderError as exc:
        return {**result, "status": "error", "reason": str(exc), "error_kind": type(exc).__name__}
    return {**result, **graded_result(report, bundle, loaded.origin)}


def graded_result(report: GradeReport, bundle: Bundle, origin: str = "") -> Result:
    """The stored result of a graded bundle: its status, the report's summary, what collusion needs and the
    rationale spans the review page highlights (the reading's own, :attr:`GradeReport.rationale_spans`).

    Status ``regrade`` when the grader failed on part of it (flag ``grader_error``), else ``graded``.
    """
    summary = summarize(report, origin)
    status = "regrade" if flag_names.GRADER_ERROR in summary["flags"] else "graded"
    return {"status": status, **summary, "part_times": part_times(bundle), "work_path": work_path(bundle),
            "rationale": bundle.synthesis.rationale or "",
            "evidence": evidence_numbers(bundle), "spans": [list(span) for span in report.rationale_spans],
            "choices": {name: getattr(bundle.synthesis, name, None) for name in CHOICE_FIELDS},
            # the final settings of every part, shown beside a collusion partner's on the review page
            "controls": {str(part): dict(values) for part, values in (getattr(bundle, "controls", None) or {}).items()}}


def evidence_numbers(bundle: Bundle) -> dict[str, dict[str, Any]]:
    """Part → the numbers its evidence record holds (``inputs.executions`` …), for the feedback file."""
    shown: dict[str, dict[str, Any]] = {}
    for part, record in (getattr(bundle, "evidence", None) or {}).items():
        values = getattr(record, "result", None)
        if not isinstance(values, Mapping):
            continue
        flat: dict[str, Any] = {}
        for key, value in values.items():
            if isinstance(value, Mapping):
                flat.update({f"{key}.{k}": v for k, v in value.items() if isinstance(v, int | float | str | bool)})
            elif isinstance(value, int | float | str | bool):
                flat[key] = value
        shown[str(part)] = flat
    return shown


# -- rows --------------------------------------------------------------------------

_PATH, _NAME = "\x00path\x00", "\x00name\x00"
"""Where a stored reason named its file (a NUL is in no file name): a result is stored once per content hash and
reused for every input with those bytes, so each row names its own file (:func:`file_named`)."""


def file_neutral(reason: str, path: str | None) -> str:
    """``reason`` with the input's path and file name replaced by placeholders, as it is stored."""
    if not path:
        return reason
    reason = reason.replace(path, _PATH)
    name = os.path.basename(path)
    # the reader names a file by its name only at the start of a sentence ("scan.pdf is a PDF document, …"):
    # replaced there alone, so that a short name ("a") never replaces letters of the words
    return _NAME + reason[len(name):] if name and reason.startswith((f"{name} ", f"{name}:")) else reason


def file_named(reason: str, path: str | None) -> str:
    """A stored reason naming ``path`` (the row's own input) where it named the input it was graded from."""
    return reason.replace(_PATH, path or "").replace(_NAME, os.path.basename(path or ""))


_LEGACY_KIND = re.compile(r"^([A-Z][A-Za-z]*(?:Error|Refused)): (.*)$", re.DOTALL)


def _status(result: Mapping[str, Any]) -> Status:
    """The row's status; a stored result from before ``regrade`` existed still becomes one."""
    status = Status(result.get("status", "error"))
    return Status.REGRADE if status == Status.GRADED and flag_names.GRADER_ERROR in result.get("flags", []) else status


def _reason_and_kind(result: Mapping[str, Any], path: str | None = None) -> tuple[str, str]:
    """(reasons, error kind), a stored reason naming ``path``, the row's own file; a result stored by an earlier release
    (``BundleFormatError: …``) is split the same way."""
    if _status(result) in SCORED:
        return " | ".join(f"{part}/{criterion}: {message}" for part, criterion, item, message in result.get("findings", [])), ""
    reason, kind = file_named(str(result.get("reason", "")), path), str(result.get("error_kind", ""))
    legacy = _LEGACY_KIND.match(reason)
    if legacy and not kind:
        kind, reason = legacy[1], legacy[2]
    return reason, kind or ("Timeout" if result.get("status") == "timeout" else "")


def make_row(candidate: Candidate, result: Mapping[str, Any], rubric_label: str, who: Identity | None = None) -> Row:
    """A gradebook row from a candidate, its (fresh or stored) result and who it belongs to."""
    who = who or identify(claims_for(candidate.source, candidate.root, _gradescope_claim(candidate), None, candidate.primary),
                          None, candidate.source)
    reasons, kind = _reason_and_kind(result, candidate.primary or candidate.source)
    columns = who.columns()
    status = _status(result)
    flags = tuple(result.get("flags", [])) + (() if status in SCORED else ("ungradable",))
    return Row(path=candidate.source, kind=candidate.kind, identity=columns, input_hash=result.get("input_hash", ""),
               lab=result.get("lab", "") or who.lab or lab_hint(candidate.source) or "", track=result.get("track", ""),
               status=status, score=result.get("score", 0), max_score=result.get("max_score", ""),
               parts=dict(result.get("parts", {})), points=dict(result.get("items", {})), flags=flags, reasons=reasons,
               error_kind=kind, origin=result.get("origin") or f"unreadable {candidate.kind}", grader_version=__version__,
               rubric=result.get("rubric", rubric_label),
               findings=tuple((str(p), str(c), str(i), str(m)) for p, c, i, m in result.get("findings", [])),
               rationale=result.get("rationale", ""), held=tuple(result.get("held", [])),
               item_max=dict(result.get("item_max", {})))


def identity(row: Mapping[str, Any]) -> str:
    """Who a row belongs to: the student key (roster), else email, student id, name, else the input's path."""
    return (row.get("student") or row.get("student_email") or row.get("student_id") or row.get("student_name")
            or row["path"])


# -- roster ------------------------------------------------------------------------

def _gradescope_claim(candidate: Candidate) -> Claim | None:
    if candidate.kind != "gradescope":
        return None
    student = candidate.student
    read = (f"Gradescope metadata gives name {student.name!r}, email {student.email!r}, sid {student.sid!r}"
            if any((student.name, student.email, student.sid)) else
            f"Gradescope metadata has no submitter for {Path(candidate.source).name!r}" + (f" ({candidate.note})" if candidate.note else ""))
    return Claim("gradescope", read, name=student.name, email=student.email, sid=student.sid,
                 submitted_at=student.submitted_at)


def identities(candidates: Sequence[Candidate], roster: Roster | None, manifest: Manifest | None) -> list[Identity]:
    """Who each candidate belongs to (see :mod:`._identity` for the order of the sources)."""
    return [identify(claims_for(c.source, c.root, _gradescope_claim(c), manifest, c.primary), roster, c.source)
            for c in candidates]


def unused_manifest_lines(manifest: Manifest, candidates: Sequence[Candidate]) -> list[str]:
    """One sentence per manifest line whose path is none of the inputs (a typo would otherwise go unnoticed)."""
    seen = {os.path.realpath(p) for c in candidates for p in (c.source, c.primary) if p}
    return [f"{manifest.path} line {entry.line}: {path} is not among the inputs; its student {entry.student!r} was not applied"
            for path, entry in manifest.entries.items() if path not in seen]


def apply_roster(rows: Sequence[Row], who: Sequence[Identity], roster: Roster) -> list[Row]:
    """The rows with ``roster_track`` filled; flagged ``wrong_track`` (graded on another track) or ``not_in_roster``
    (with the reason)."""
    out = []
    for row, person in zip(rows, who, strict=True):
        if person.student is None:
            out.append(row.with_flag(flag_names.NOT_IN_ROSTER).but(
                reasons=person.problem + (" | " + row.reasons if row.reasons else "")))
            continue
        track = person.student.track(row.lab)
        row = row.but(roster_track=track)
        if track and row.status == Status.GRADED and row.track != track:
            row = row.with_flag(flag_names.WRONG_TRACK).but(
                reasons=f"submitted on track {row.track!r}, roster assigns {track!r}" + (" | " + row.reasons if row.reasons else ""))
        out.append(row)
    return out


# -- SQLite gradebook --------------------------------------------------------------

class GradebookDB:
    """The embedded gradebook: stored results by (input hash, grader version, rubric key), latest score per student."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.conn, self.migrated_from = open_gradebook(self.path)  # an earlier release's gradebook is upgraded in place

    def known_hashes(self, grader_version: str, key: str) -> frozenset[str]:
        """Inputs whose stored result can be reused: not ``regrade``, and (when graded) holding
        what collusion needs — a result stored by an earlier format lacks it and is graded again."""
        held = " AND ".join(f"json_type(result, '$.{name}') IS NOT NULL" for name in COLLUSION_KEYS)
        rows = self.conn.execute(
            "SELECT input_hash FROM results WHERE grader_version = ? AND rubric_key = ? AND "
            f"(json_extract(result, '$.status') IN ('error', 'unsupported') OR (json_extract(result, '$.status') = 'graded' AND {held}))",
            (grader_version, key))
        return frozenset(h for (h,) in rows)

    def stored(self, input_hash: str, grader_version: str, key: str) -> Result | None:
        found = self.conn.execute("SELECT result FROM results WHERE input_hash = ? AND grader_version = ? AND rubric_key = ?",
                                  (input_hash, grader_version, key)).fetchone()
        return json.loads(found[0]) if found else None

    def store(self, results: Iterable[Mapping[str, Any]], grader_version: str, key: str) -> None:
        """Store fresh results; their evidence numbers go to the ``evidence`` table (only feedback reads them)."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        results = list(results)
        self.conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)",
                              [(r["input_hash"], grader_version, key, now,
                                json.dumps({k: v for k, v in r.items() if k != "evidence"})) for r in results])
        self.conn.executemany("INSERT OR REPLACE INTO evidence VALUES (?, ?)",
                              [(r["input_hash"], json.dumps(r["evidence"])) for r in results if r.get("evidence")])
        self.conn.commit()

    def result(self, input_hash: str) -> Result | None:
        """The latest result stored for ``input_hash`` by this grader version (with its evidence numbers), or None."""
        found = self.conn.execute("SELECT result FROM results WHERE input_hash = ? AND grader_version = ? "
                                  "ORDER BY graded_at DESC", (input_hash, __version__)).fetchone()
        if found is None:
            return None
        result: Result = json.loads(found[0])
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


# -- the pipeline ------------------------------------------------------------------

def _fill_failure_hash(candidate: Candidate, result: Result) -> None:
    if result.get("input_hash"):
        return
    try:
        result["input_hash"] = file_digest(candidate.primary or candidate.source)
    except OSError:
        result["input_hash"] = hashlib.sha256(candidate.source.encode()).hexdigest()


def _forced(candidates: Sequence[Candidate], who: Sequence[Identity], only: Sequence[str]) -> list[bool]:
    """Which candidates ``--only`` names: by student key, email or sid (an input hash is matched in the worker)."""
    wanted = {value.strip().lower() for value in only if value.strip()}
    return [bool(wanted & {v.lower() for v in (person.key, person.columns()["student_email"], person.columns()["student_id"]) if v})
            for person in who]


def grade_paths(
    paths: Iterable[str | os.PathLike[str]],
    options: BatchOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    replay: Replay | None = None,
) -> GradebookResult:
    """Grade every input under ``paths`` into a :class:`GradebookResult` (one row per input, one final row per student and lab).

    Through ``replay`` (default: :func:`~mlsys_grader.api.default_replay`): each worker the pool starts has its own copy, which
    :meth:`~mlsys_grader.replay.Replay.prepare` readies before its first task (its tables, or the evaluators)."""
    from ._pool import run_tasks  # pebble, and asyncio with it, loads only when a batch runs: keeps `import mlsys_grader` fast

    options = options or BatchOptions()
    batch_replay = replay or default_replay()
    started = time.perf_counter()
    rubrics = resolve_rubrics(options.rubrics)
    key = rubric_key(rubrics, options.formats)
    # Staff files are read (and checked) before anything is graded, so a bad one stops the run with the database untouched.
    roster = read_roster(options.roster) if options.roster else None
    manifest = read_manifest(options.manifest) if options.manifest else None
    course = read_course(options.course, roster) if options.course else None
    # The evaluators are not imported here but by each worker as it starts (in parallel, and
    # outside every task's time limit).  A rerun against a gradebook database, which mostly
    # reuses stored grades, skips that and imports them in the first task that needs them.
    extensions = Path(course.path).resolve().parent / course.file.extensions if course and course.file.extensions else None
    found = discover_all(paths, staff_files(options.roster, options.manifest, options.course, extensions))
    candidates = found.candidates
    who = identities(candidates, roster, manifest)
    if roster is not None and roster.students and candidates and not any(person.student for person in who):
        raise CourseFileError(roster.path, None, f"no submission matches a student of this roster ({len(candidates)} input(s), "
                                                 f"{len(roster.students)} student(s), read as {roster.layout}): is it this "
                                                 "course's roster? Nothing was graded")
    notes = unused_manifest_lines(manifest, candidates) if manifest else []
    forced = _forced(candidates, who, options.only)
    db = GradebookDB(options.db) if options.db else None
    try:
        known = db.known_hashes(__version__, key) if db else frozenset()
        reuse = known - set(options.only)  # an input hash named by --only is graded afresh
        results: list[Result | None] = [None] * len(candidates)
        done = [0]
        rationales = RationaleIndex()

        def work(index: int) -> Result:
            return grade_candidate(candidates[index], rubrics, frozenset() if forced[index] else reuse, options.formats,
                                   replay=batch_replay)

        def collect(index: int, result: Result) -> None:
            results[index] = result
            done[0] += 1
            if isinstance(result.get("rationale"), str):
                # Read for collusion now, while the workers grade the rest (the parent only waits for them).
                rationales.add(result["rationale"])
            if progress:
                progress(done[0], len(candidates))

        run_tasks(list(range(len(candidates))), work, jobs=options.jobs, timeout_s=options.timeout_s,
                  memory_mb=options.memory_mb, on_result=collect, prepare=None if reuse else batch_replay.prepare)
        fresh, reused = [], 0
        final: list[Result] = []
        for index, candidate in enumerate(candidates):
            result = results[index] or {"status": "crash", "reason": "no result came back"}
            if result["status"] == "reuse":
                stored = db.stored(result["input_hash"], __version__, key) if db else None
                if stored is None:  # vanished between lookup and use: grade here
                    stored = grade_candidate(candidate, rubrics, formats=options.formats, replay=batch_replay)
                    fresh.append(stored)
                else:
                    reused += 1
                result = stored
            elif result["status"] in (*SCORED, "error", "unsupported") and result.get("input_hash"):
                fresh.append(result)
            _fill_failure_hash(candidate, result)
            final.append(result)
        if db:
            db.store(fresh, __version__, key)
        rows = mark_formative([make_row(c, r, key, person) for c, r, person in zip(candidates, final, who, strict=True)],
                              rubrics)
        if roster is not None:
            rows = apply_roster(rows, who, roster)
        decided = load_decisions(db.conn) if db else []
        rows = place_labs(rows, candidates, labs_by_upload(decided), _only_lab(course, rubrics))
        subs = [Submission(i, r.lab, res.get("part_times") or {}, res.get("rationale") or "", identity(r),
                           res.get("work_path") or ())
                for i, (r, res) in enumerate(zip(rows, final, strict=True)) if r.status in SCORED]
        groups = find_groups(subs, threshold=options.collusion_threshold, index=rationales)
        for group in groups:
            for member in group.members:
                rows[member] = rows[member].with_flag(flag_names.COLLUSION).but(collusion_group=group.group_id)
        final_started = time.perf_counter()
        gradebook, changes = _final_gradebook(rows, roster, rubrics, course, db, key, options, forced, decided)
        final_seconds = time.perf_counter() - final_started
        agreement = agreement_of(load_overrides(db.conn)) if db else []
    finally:
        if db:
            db.close()
    return GradebookResult(rows=rows, columns=columns_for(rubrics.values()), groups=groups, changes=changes,
                           graded=len(fresh), reused=reused, seconds=time.perf_counter() - started, final=gradebook,
                           ignored=found.ignored, migrated_from=db.migrated_from if db else None, final_seconds=final_seconds,
                           only_matched=sum(1 for row, force in zip(rows, forced, strict=True)
                                            if force or row["input_hash"] in options.only), notes=notes, agreement=agreement,
                           unplaced=[row for row in rows if not row.lab and row.status not in SCORED])


def _only_lab(course: Course | None, rubrics: Mapping[str, Rubric]) -> str | None:
    """The course's only lab (its course file lists one, or one lab is installed), else None."""
    labs = sorted(course.file.labs) if course and course.file.labs else sorted(rubrics)
    return labs[0] if len(labs) == 1 else None


def _final_gradebook(rows: Sequence[Row], roster: Roster | None, rubrics: Mapping[str, Rubric],
                     course: Course | None, db: GradebookDB | None, key: str,
                     options: BatchOptions, forced: Sequence[bool],
                     decided: Sequence[SubmissionDecision] = ()) -> tuple[list[FinalRow], list[ScoreChange]]:
    """Build the final gradebook, compare the counting submissions with the last run's, log this run's regrades
    and score changes, and store it with this run's unreadable uploads of unknown lab; returns (final rows, score
    changes)."""
    labs = sorted(course.file.labs) if course and course.file.labs else sorted(rubrics)
    max_scores = {lab: rubric.max_score for lab, rubric in rubrics.items()}
    overrides = load_overrides(db.conn) if db else None
    unplaced = [row for row in rows if not row.lab and row.status not in SCORED]
    gradebook = build_final(rows, roster, labs, max_scores, course, overrides=overrides, decisions=by_student_lab(decided),
                            unplaced={row.input_hash: {"path": row.path, "reason": row.reasons} for row in unplaced})
    if db is None:
        return gradebook, []
    with db.conn:
        store_unplaced(db.conn, unplaced)
    before = db.final_scores()
    # Only the submission that counts is compared with the last run: a student's other submissions of the
    # same lab would otherwise take turns as "the latest score" and report moves on every run.
    counting = {(r["student"], r["lab"], r["path"]) for r in gradebook if r["path"]}
    changes = db.record_run([row for row in rows if (row["student"], row["lab"], row["path"]) in counting], __version__, key)
    automatic = [(c.who, c.lab, "", c.old_score, c.new_score, f"score moved: {c.cause}") for c in changes]
    regraded = {(row["student"], row["lab"]) for row, force in zip(rows, forced, strict=True)
                if force or (options.only and row["input_hash"] in options.only)}
    asked = [(r["student"], r["lab"], r["input_hash"], before.get((r["student"], r["lab"])), r["score"],
              options.reason or "regrade asked with --only") for r in gradebook if (r["student"], r["lab"]) in regraded]
    if automatic:
        db.log("rescore", automatic)
    if asked:
        db.log("regrade", asked, by=os.environ.get("USER", ""))
    if course is not None:  # the export names Canvas columns from it
        db.conn.execute("INSERT OR REPLACE INTO meta VALUES ('course', ?)", (course.file.model_dump_json(),))
    summaries = db.change_summaries()
    gradebook = [row.but(changes=summaries.get((row.student, row.lab), "")) for row in gradebook]
    db.write_final(gradebook)
    return gradebook, changes


def gradebook_dataframe(paths: Iterable[str | os.PathLike[str]], **options: Any) -> pd.DataFrame:
    """The gradebook of ``paths`` as a pandas DataFrame; ``options`` are :class:`BatchOptions` fields."""
    return grade_paths(paths, BatchOptions(**options)).to_dataframe()


# -- CSV ---------------------------------------------------------------------------

_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A CSV cell; text that a spreadsheet would run as a formula is quoted with a leading apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value


def write_csv(rows: Iterable[Mapping[str, Any]], out: str | os.PathLike[str], columns: Sequence[str]) -> int:
    """Write rows to ``out`` (UTF-8, header first); returns how many were written.

    Written whole or not at all: into a temporary file beside ``out``, renamed over it once complete, so an
    interrupted run leaves the previous file as it was."""
    count = 0
    with replace_atomically(out) as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row.get(column, "")) for column in columns])
            count += 1
    return count
