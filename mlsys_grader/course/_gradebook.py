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

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..api import default_replay
from ..core import flags as flag_names
from ..core.rubric import Rubric
from ..errors import CourseFileError
from ..replay import Replay
from ._build import grading_build
from ._collusion import Group, RationaleIndex, Work, find_groups
from ._decisions import SubmissionDecision, by_student_lab, labs_by_upload, load_decisions, store_unplaced
from ._files import write_csv
from ._final import FINAL_COLUMNS, build_final
from ._formative import mark_formative
from ._identity import Claim, Identity, Manifest, Roster, claims_for, identify, read_manifest, staff_files
from ._ingest import Candidate, Discovery, discover_all, file_digest, lab_hint, labs_named
from ._late import Course, read_course
from ._options import BatchOptions, columns_for, resolve_rubrics, rubric_key
from ._overrides import agreement_of, load_overrides
from ._placing import place_labs
from ._rosters import read_roster
from ._row import SCORED, FinalRow, Result, Row, Status, identity
from ._store import GradebookDB, ScoreChange
from ._worker import file_named, grade_candidate

if TYPE_CHECKING:
    import pandas as pd


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


# -- rows --------------------------------------------------------------------------

_LEGACY_KIND = re.compile(r"^([A-Z][A-Za-z]*(?:Error|Refused)): (.*)$", re.DOTALL)


def _status(result: Mapping[str, Any]) -> Status:
    """The row's status; a stored result from before ``regrade`` existed still becomes one."""
    status = Status(result.get("status", "error"))
    return Status.REGRADE if status == Status.GRADED and flag_names.GRADER_ERROR in result.get("flags", []) else status


def _reason_and_kind(result: Mapping[str, Any], path: str | None = None) -> tuple[tuple[str, ...], str]:
    """(reasons, error kind), a stored reason naming ``path``, the row's own file; a result stored by an earlier release
    (``BundleFormatError: …``) is split the same way."""
    if _status(result) in SCORED:
        return tuple(f"{part}/{criterion}: {message}" for part, criterion, item, message in result.get("findings", [])), ""
    reason, kind = file_named(str(result.get("reason", "")), path), str(result.get("error_kind", ""))
    legacy = _LEGACY_KIND.match(reason)
    if legacy and not kind:
        kind, reason = legacy[1], legacy[2]
    return (reason,) if reason else (), kind or ("Timeout" if result.get("status") == "timeout" else "")


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
               parts=dict(result.get("parts", {})), points=dict(result.get("items", {})), flags=flags,
               reasons=" | ".join(reasons), reason_list=reasons,
               error_kind=kind, origin=result.get("origin") or f"unreadable {candidate.kind}", grader_version=__version__,
               rubric=result.get("rubric", rubric_label),
               findings=tuple((str(p), str(c), str(i), str(m)) for p, c, i, m in result.get("findings", [])),
               rationale=result.get("rationale", ""), held=tuple(result.get("held", [])),
               item_max=dict(result.get("item_max", {})))


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
            out.append(row.with_flag(flag_names.NOT_IN_ROSTER).with_reason_first(person.problem))
            continue
        track = person.student.track(row.lab)
        row = row.but(roster_track=track)
        if track and row.status == Status.GRADED and row.track != track:
            row = row.with_flag(flag_names.WRONG_TRACK).with_reason_first(f"submitted on track {row.track!r}, roster assigns "
                                                                         f"{track!r}")
        out.append(row)
    return out


# -- the pipeline ------------------------------------------------------------------

def _forced(candidates: Sequence[Candidate], who: Sequence[Identity], only: Sequence[str]) -> list[bool]:
    """Which candidates ``--only`` names: by student key, email or sid (an input hash is matched in the worker)."""
    wanted = {value.strip().lower() for value in only if value.strip()}
    return [bool(wanted & {v.lower() for v in (person.key, person.columns()["student_email"], person.columns()["student_id"]) if v})
            for person in who]


def _prepare(replay: Replay, labs: Iterable[str] | None) -> Callable[[], None] | None:
    """Prepare ``replay`` for a batch of ``labs`` (None: every installed lab); when that fails (mlsysim does not
    import), what each worker raises as it starts, so every task's row names the grader's environment
    (:func:`~._pool.run_tasks`), else None."""
    try:
        replay.prepare(labs)
    except Exception as exc:  # any failure to ready the grader is every task's reason, not a crash of the batch
        error = exc

        def fail() -> None:
            raise error

        return fail
    return None


def labs_to_grade(paths: Iterable[str | os.PathLike[str]], *staff: str | os.PathLike[str] | None) -> list[str] | None:
    """The labs the inputs under ``paths`` name (``staff``: the roster, manifest and course file, never inputs), sorted,
    or None when one names none: what ``grade`` builds replay tables for before it grades, so a batch of one lab never
    waits for another lab's table.  A guess made before anything is read (:func:`~._ingest.labs_named`): an input it
    misjudges is still graded exactly, through its own lab's table if there is one, else by live replay.  Never
    raises: inputs that cannot even be listed give None (every lab), and the batch reports them."""
    try:
        return labs_named(discover_all(paths, staff_files(*staff)).candidates)
    except Exception:  # a guess only: grade_paths reads and reports every input itself
        return None


@dataclass(frozen=True)
class _Staff:
    """The staff files of a batch (roster, manifest, course file), each None when not given."""

    roster: Roster | None
    manifest: Manifest | None
    course: Course | None


@dataclass(frozen=True)
class _Inputs:
    """What a batch grades: the inputs found, who each belongs to, which ``--only`` names, and notes for staff."""

    found: Discovery
    who: list[Identity]
    forced: list[bool]
    notes: list[str]

    @property
    def candidates(self) -> list[Candidate]:
        """The inputs, in the stable order of :func:`~._ingest.discover_all`."""
        return self.found.candidates


@dataclass
class _Collected:
    """The pool's results in input order as they come back, with the rationales read for collusion meanwhile."""

    results: list[Result | None]
    progress: Callable[[int, int], None] | None = None
    rationales: RationaleIndex = field(default_factory=RationaleIndex)
    done: int = 0

    def add(self, index: int, result: Result) -> None:
        """Keep ``result`` as input ``index``'s, read its rationale and report progress."""
        self.results[index] = result
        self.done += 1
        if isinstance(result.get("rationale"), str):
            # Read for collusion now, while the workers grade the rest (the parent only waits for them).
            self.rationales.add(result["rationale"])
        if self.progress:
            self.progress(self.done, len(self.results))


@dataclass(frozen=True)
class _Graded:
    """Every input's result in input order, the fresh ones to store, how many were reused, and the rationales read."""

    results: list[Result]
    fresh: list[Result]
    reused: int
    rationales: RationaleIndex


@dataclass(frozen=True)
class _Book:
    """The course-level outcome of a batch: its rows, collusion groups, final gradebook, score changes and agreement."""

    rows: list[Row]
    groups: list[Group]
    final: list[FinalRow]
    changes: list[ScoreChange]
    final_seconds: float
    agreement: list[tuple[str, str, int, int]]


def grade_paths(
    paths: Iterable[str | os.PathLike[str]],
    options: BatchOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    replay: Replay | None = None,
) -> GradebookResult:
    """Grade every input under ``paths`` into a :class:`GradebookResult` (one row per input, one final row per student and lab).

    Through ``replay`` (default: :func:`~mlsys_grader.api.default_replay`), readied once here by
    :meth:`~mlsys_grader.replay.Replay.prepare` (its tables, or the evaluators) before the pool forks its workers, so
    each worker starts with its own copy of a prepared replay: prepared once per batch rather than once per worker,
    and outside every task's time limit."""
    options = options or BatchOptions()
    batch_replay = replay or default_replay()
    started = time.perf_counter()
    rubrics = resolve_rubrics(options.rubrics)
    key = rubric_key(rubrics, options.formats)
    # Staff files are read (and checked) before anything is graded, so a bad one stops the run with the database untouched.
    staff = _read_staff(options)
    inputs = _discover(paths, options, staff)
    db = GradebookDB(options.db) if options.db else None
    try:
        graded = _grade(inputs, rubrics, key, options, batch_replay, staff.course, db, progress)
        _store(db, graded.fresh, key)
        rows = _rows(inputs, graded.results, key, rubrics)
        book = _course(rows, inputs, graded, staff, rubrics, key, options, db)
    finally:
        if db:
            db.close()
    return _result(inputs, graded, book, rubrics, options, db, started)


# -- discover ------------------------------------------------------------------------

def _read_staff(options: BatchOptions) -> _Staff:
    """The roster, manifest and course file ``options`` name, read and checked in that order."""
    roster = read_roster(options.roster) if options.roster else None
    manifest = read_manifest(options.manifest) if options.manifest else None
    course = read_course(options.course, roster) if options.course else None
    return _Staff(roster, manifest, course)


def _extensions_file(course: Course | None) -> Path | None:
    """The course file's extensions file (a staff file, never an input), else None."""
    return Path(course.path).resolve().parent / course.file.extensions if course and course.file.extensions else None


def _discover(paths: Iterable[str | os.PathLike[str]], options: BatchOptions, staff: _Staff) -> _Inputs:
    """Every input under ``paths`` (staff files aside), who each belongs to and which ``--only`` names; raises
    :class:`CourseFileError` when the roster matches none of them."""
    found = discover_all(paths, staff_files(options.roster, options.manifest, options.course, _extensions_file(staff.course),
                                            options.db, *options.outputs))
    who = identities(found.candidates, staff.roster, staff.manifest)
    if staff.roster is not None:
        _check_roster_matches(staff.roster, found.candidates, who)
    notes = unused_manifest_lines(staff.manifest, found.candidates) if staff.manifest else []
    return _Inputs(found, who, _forced(found.candidates, who, options.only), notes)


def _check_roster_matches(roster: Roster, candidates: Sequence[Candidate], who: Sequence[Identity]) -> None:
    """Raise :class:`CourseFileError` when inputs were found but none is a student of ``roster`` (nothing is graded)."""
    if roster.students and candidates and not any(person.student for person in who):
        raise CourseFileError(roster.path, None, f"no submission matches a student of this roster ({len(candidates)} input(s), "
                                                 f"{len(roster.students)} student(s), read as {roster.layout}): is it this "
                                                 "course's roster? Nothing was graded")


# -- grade ---------------------------------------------------------------------------

def _grade(inputs: _Inputs, rubrics: Mapping[str, Rubric], key: str, options: BatchOptions, replay: Replay,
           course: Course | None, db: GradebookDB | None, progress: Callable[[int, int], None] | None) -> _Graded:
    """Every input graded in the pool, a stored grade reused where one is (see :func:`_settle`)."""
    collected = _run_pool(inputs, rubrics, _reusable(db, key, options.only), options, replay, course, progress)
    return _settle(inputs.candidates, collected, db, key, rubrics, options, replay)


def _reusable(db: GradebookDB | None, key: str, only: Sequence[str]) -> frozenset[str]:
    """The input hashes whose stored grade may be reused: graded with this grading code and ``key``, and not named by
    ``--only`` (graded afresh)."""
    known = db.known_hashes(grading_build(), key) if db else frozenset()
    return known - set(only)


def _labs_to_prepare(course: Course | None, candidates: Sequence[Candidate]) -> list[str] | None:
    """The labs the course file lists, else the labs the inputs name (None: every lab)."""
    return list(course.file.labs) if course and course.file.labs else labs_named(candidates)


def _run_pool(inputs: _Inputs, rubrics: Mapping[str, Rubric], reuse: frozenset[str], options: BatchOptions,
              replay: Replay, course: Course | None, progress: Callable[[int, int], None] | None) -> _Collected:
    """Every input graded in a bounded worker (a stored grade in ``reuse`` comes back as ``reuse``), reporting progress."""
    from ._pool import run_tasks  # pebble, and asyncio with it, loads only when a batch runs: keeps `import mlsys_grader` fast

    candidates, forced = inputs.candidates, inputs.forced
    collected = _Collected([None] * len(candidates), progress)

    def work(index: int) -> Result:
        return grade_candidate(candidates[index], rubrics, frozenset() if forced[index] else reuse, options.formats,
                               replay=replay)

    # The replay is prepared here, once, and every worker forks with it (outside every task's time limit; a
    # worker's memory cap counts from its size at the start): only the labs a course file lists, else the labs the
    # inputs name (every lab when one names none).  A rerun against a gradebook database, which mostly reuses
    # stored grades, skips that: the first task that needs a lab loads it, as does a bundle of a lab not prepared.
    broken = None if reuse else _prepare(replay, _labs_to_prepare(course, candidates))
    run_tasks(list(range(len(candidates))), work, jobs=options.jobs, timeout_s=options.timeout_s,
              memory_mb=options.memory_mb, on_result=collected.add, prepare=broken)
    return collected


def _settle(candidates: Sequence[Candidate], collected: _Collected, db: GradebookDB | None, key: str,
            rubrics: Mapping[str, Rubric], options: BatchOptions, replay: Replay) -> _Graded:
    """Every input's final result: ``reuse`` read back from ``db``, a missing one a crash, every one with an input
    hash; the fresh results of readable or refused inputs are the ones to store."""
    fresh: list[Result] = []
    reused = 0
    results: list[Result] = []
    for candidate, result in zip(candidates, collected.results, strict=True):
        result = result or {"status": "crash", "reason": "no result came back"}
        if result["status"] == "reuse":
            result, was_stored = _stored_or_graded(candidate, result, db, key, rubrics, options, replay)
            if was_stored:
                reused += 1
            else:
                fresh.append(result)
        elif result["status"] in (*SCORED, "error", "unsupported") and result.get("input_hash"):
            fresh.append(result)
        _fill_failure_hash(candidate, result)
        results.append(result)
    return _Graded(results, fresh, reused, collected.rationales)


def _stored_or_graded(candidate: Candidate, reuse: Result, db: GradebookDB | None, key: str,
                      rubrics: Mapping[str, Rubric], options: BatchOptions, replay: Replay) -> tuple[Result, bool]:
    """(the stored grade a ``reuse`` result names, True), or (the input graded here, False) when it vanished between
    lookup and use."""
    stored = db.stored(reuse["input_hash"], grading_build(), key) if db else None
    if stored is None:
        return grade_candidate(candidate, rubrics, formats=options.formats, replay=replay), False
    return stored, True


def _fill_failure_hash(candidate: Candidate, result: Result) -> None:
    """Give a result with no input hash (an input that failed) its file's digest, else its path's."""
    if result.get("input_hash"):
        return
    try:
        result["input_hash"] = file_digest(candidate.primary or candidate.source)
    except OSError:
        result["input_hash"] = hashlib.sha256(candidate.source.encode()).hexdigest()


# -- store and rows ------------------------------------------------------------------

def _store(db: GradebookDB | None, fresh: Sequence[Result], key: str) -> None:
    """Store this run's fresh results in ``db`` (when there is one)."""
    if db:
        db.store(fresh, grading_build(), key)


def _rows(inputs: _Inputs, results: Sequence[Result], key: str, rubrics: Mapping[str, Rubric]) -> list[Row]:
    """One row per input, in input order, formative labs marked."""
    return mark_formative([make_row(c, r, key, person) for c, r, person in zip(inputs.candidates, results, inputs.who, strict=True)],
                          rubrics)


# -- course --------------------------------------------------------------------------

def _course(rows: list[Row], inputs: _Inputs, graded: _Graded, staff: _Staff, rubrics: Mapping[str, Rubric], key: str,
            options: BatchOptions, db: GradebookDB | None) -> _Book:
    """The rows with roster tracks, labs placed and collusion flagged, and the final gradebook built and stored."""
    if staff.roster is not None:
        rows = apply_roster(rows, inputs.who, staff.roster)
    decided = load_decisions(db.conn) if db else []
    rows = place_labs(rows, inputs.candidates, labs_by_upload(decided), _only_lab(staff.course, rubrics))
    rows, groups = _collusion(rows, graded, options.collusion_threshold)
    final_started = time.perf_counter()
    gradebook, changes = _final_gradebook(rows, staff.roster, rubrics, staff.course, db, key, options, inputs.forced, decided)
    final_seconds = time.perf_counter() - final_started
    agreement = agreement_of(load_overrides(db.conn)) if db else []
    return _Book(rows, groups, gradebook, changes, final_seconds, agreement)


def _collusion(rows: Sequence[Row], graded: _Graded, threshold: float) -> tuple[list[Row], list[Group]]:
    """(the rows with every collusion group's members flagged, the groups) among the scored rows."""
    subs = [Work(i, r.lab, res.get("part_times") or {}, res.get("rationale") or "", identity(r),
                 res.get("work_path") or ())
            for i, (r, res) in enumerate(zip(rows, graded.results, strict=True)) if r.status in SCORED]
    groups = find_groups(subs, threshold=threshold, index=graded.rationales)
    flagged = list(rows)
    for group in groups:
        for member in group.members:
            flagged[member] = flagged[member].with_flag(flag_names.COLLUSION).but(collusion_group=group.group_id)
    return flagged, groups


def _unplaced(rows: Iterable[Row]) -> list[Row]:
    """The uploads that could not be read and whose lab could not be told."""
    return [row for row in rows if not row.lab and row.status not in SCORED]


def _only_matched(rows: Sequence[Row], forced: Sequence[bool], only: Sequence[str]) -> int:
    """How many inputs ``--only`` named (by student or input hash)."""
    return sum(1 for row, force in zip(rows, forced, strict=True) if force or row["input_hash"] in only)


def _result(inputs: _Inputs, graded: _Graded, book: _Book, rubrics: Mapping[str, Rubric], options: BatchOptions,
            db: GradebookDB | None, started: float) -> GradebookResult:
    """The batch's :class:`GradebookResult`, its time counted from ``started``."""
    return GradebookResult(rows=book.rows, columns=columns_for(rubrics.values()), groups=book.groups, changes=book.changes,
                           graded=len(graded.fresh), reused=graded.reused, seconds=time.perf_counter() - started,
                           final=book.final, ignored=inputs.found.ignored, migrated_from=db.migrated_from if db else None,
                           final_seconds=book.final_seconds, only_matched=_only_matched(book.rows, inputs.forced, options.only),
                           notes=inputs.notes, agreement=book.agreement, unplaced=_unplaced(book.rows))


def _course_labs(course: Course | None, rubrics: Mapping[str, Rubric]) -> list[str]:
    """The course's labs, sorted: the ones its course file lists, else every installed lab."""
    return sorted(course.file.labs) if course and course.file.labs else sorted(rubrics)


def _only_lab(course: Course | None, rubrics: Mapping[str, Rubric]) -> str | None:
    """The course's only lab (its course file lists one, or one lab is installed), else None."""
    labs = _course_labs(course, rubrics)
    return labs[0] if len(labs) == 1 else None


# -- final ---------------------------------------------------------------------------

def _final_gradebook(rows: Sequence[Row], roster: Roster | None, rubrics: Mapping[str, Rubric],
                     course: Course | None, db: GradebookDB | None, key: str,
                     options: BatchOptions, forced: Sequence[bool],
                     decided: Sequence[SubmissionDecision] = ()) -> tuple[list[FinalRow], list[ScoreChange]]:
    """Build the final gradebook, compare the counting submissions with the last run's, log this run's regrades
    and score changes, and store it with this run's unreadable uploads of unknown lab; returns (final rows, score
    changes)."""
    unplaced = _unplaced(rows)
    gradebook = _build_final(rows, roster, rubrics, course, db, decided, unplaced)
    if db is None:
        return gradebook, []
    with db.conn:
        store_unplaced(db.conn, unplaced)
    before = db.final_scores()
    changes = _record_counting(db, rows, gradebook, key)
    _log_run(db, changes, _regrades_asked(rows, gradebook, forced, options, before))
    if course is not None:  # the export names Canvas columns from it
        db.conn.execute("INSERT OR REPLACE INTO meta VALUES ('course', ?)", (course.file.model_dump_json(),))
    summaries = db.change_summaries()
    gradebook = [row.but(changes=summaries.get((row.student, row.lab), "")) for row in gradebook]
    db.write_final(gradebook)
    return gradebook, changes


def _build_final(rows: Sequence[Row], roster: Roster | None, rubrics: Mapping[str, Rubric], course: Course | None,
                 db: GradebookDB | None, decided: Sequence[SubmissionDecision], unplaced: Sequence[Row]) -> list[FinalRow]:
    """The final gradebook (one row per student and lab) with the late policy, staff overrides and decisions applied,
    and ``unplaced`` named by input hash."""
    max_scores = {lab: rubric.max_score for lab, rubric in rubrics.items()}
    overrides = load_overrides(db.conn) if db else None
    return build_final(rows, roster, _course_labs(course, rubrics), max_scores, course, overrides=overrides,
                       decisions=by_student_lab(decided),
                       unplaced={row.input_hash: {"path": row.path, "reason": row.reasons} for row in unplaced})


def _record_counting(db: GradebookDB, rows: Sequence[Row], gradebook: Sequence[FinalRow], key: str) -> list[ScoreChange]:
    """Record this run's counting submissions in ``db``; returns the scores that moved since the last run."""
    # Only the submission that counts is compared with the last run: a student's other submissions of the
    # same lab would otherwise take turns as "the latest score" and report moves on every run.
    counting = {(r["student"], r["lab"], r["path"]) for r in gradebook if r["path"]}
    return db.record_run([row for row in rows if (row["student"], row["lab"], row["path"]) in counting], grading_build(), key)


_LogEntry = tuple[str, str, str, float | None, float | None, str]


def _regrades_asked(rows: Sequence[Row], gradebook: Sequence[FinalRow], forced: Sequence[bool], options: BatchOptions,
                    before: Mapping[tuple[str, str], float]) -> list[_LogEntry]:
    """The change log's entries for the students and labs ``--only`` asked to regrade: score before and now, and why."""
    regraded = {(row["student"], row["lab"]) for row, force in zip(rows, forced, strict=True)
                if force or (options.only and row["input_hash"] in options.only)}
    return [(r["student"], r["lab"], r["input_hash"], before.get((r["student"], r["lab"])), r["score"],
             options.reason or "regrade asked with --only") for r in gradebook if (r["student"], r["lab"]) in regraded]


def _log_run(db: GradebookDB, changes: Sequence[ScoreChange], asked: Sequence[_LogEntry]) -> None:
    """Log the scores that moved (``rescore``) and the regrades asked (``regrade``, by ``$USER``) in ``db``."""
    automatic = [(c.who, c.lab, "", c.old_score, c.new_score, f"score moved: {c.cause}") for c in changes]
    if automatic:
        db.log("rescore", automatic)
    if asked:
        db.log("regrade", asked, by=os.environ.get("USER", ""))


def gradebook_dataframe(paths: Iterable[str | os.PathLike[str]], **options: Any) -> pd.DataFrame:
    """The gradebook of ``paths`` as a pandas DataFrame; ``options`` are :class:`BatchOptions` fields."""
    return grade_paths(paths, BatchOptions(**options)).to_dataframe()
