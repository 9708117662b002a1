"""The score of record: the submitted bundle, graded by the core.

Computed in the grading process before any student code could run, from the bytes the
student uploaded (see :mod:`._upload`), so nothing a notebook does later can change which
bytes are graded.  Never raises for a bad submission: an unreadable, missing or wrong-lab
upload becomes a zero report whose one submission-level finding says why and what to do.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..api import default_rubric, grade_submission
from ..core import flags as flag_names
from ..core import grading
from ..core.jsonio import MAX_BYTES, loads_strict, sha256_of
from ..core.models import load_bundle, submission_filename
from ..core.report import Finding, GradeReport
from ..errors import ErrorKind, GraderError
from ..intake import ORIGIN_WORDS, Format, read_submission
from ..labs import get_lab
from ..replay import Replay
from ._upload import FLAG_NO_BUNDLE, FLAG_WRONG_LAB, Upload, export_advice, inspect_upload, lab_title, read_regular_file

FLAG_GRADER_ERROR = flag_names.GRADER_ERROR
FLAG_UNREADABLE = flag_names.INTEGRITY

REPLAY_DIR = Path(sys.prefix) / "share" / "mlsys-grader" / "replay"
"""The image's replay tables: built by ``setup.sh`` (:func:`._runner.check_image`), as root and before any student code
exists, inside the environment (root's, under ``/root``, which the notebook's user may enter but not write)."""

SAVE_AGAIN = "save it again from the notebook (never edit it by hand), then run the export cell and upload the zip it makes"


@dataclass(frozen=True)
class ScoreOfRecord:
    """What was graded, how it scored, and what staff should look at (immutable: a changed record is a new one,
    :func:`dataclasses.replace`; ``flags`` and the notes are tuples, built from any sequence).

    ``problem`` is set when nothing gradable was uploaded: one sentence for the student.
    """

    lab: str
    report: GradeReport
    source: str
    bundle_sha256: str | None = None
    bundle_path: str | None = None
    flags: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    public_notes: tuple[str, ...] = ()
    problem: str | None = None
    bundle: bytes | None = None

    def __post_init__(self) -> None:
        for name in ("flags", "notes", "public_notes"):  # a list given is held as a tuple, as the report's fields are
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def all_flags(self) -> list[str]:
        return sorted(set(self.report.flags) | set(self.flags))

    @property
    def track(self) -> str | None:
        return None if self.problem else self.report.track

    def with_problem(self, problem: str) -> ScoreOfRecord:
        """This record of an ungradable upload, told with another ``problem`` sentence (the report's one finding too)."""
        first, *rest = self.report.findings
        report = self.report.model_copy(update={"findings": (first.model_copy(update={"message": problem}), *rest)})
        return replace(self, problem=problem, report=report)

    def noted(self, *notes: str, public: Sequence[str] = ()) -> ScoreOfRecord:
        """This record with ``notes`` for staff (and ``public`` notes for the student) after its own."""
        return replace(self, notes=(*self.notes, *notes), public_notes=(*self.public_notes, *public))


def ungradable_report(lab_id: str, sentence: str) -> GradeReport:
    """A zero report for ``lab_id``: every part voided, one submission-level finding (``sentence``), built by the core."""
    return grading.ungradable_report(lab_id, default_rubric(lab_id), Finding(part="bundle", criterion="missing", message=sentence,
                                                                                  code="missing.submission"))


def _short(text: object, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def ungradable(lab_id: str, sentence: str, flag: str, source: str = "none", notes: Sequence[str] = (),
               digest: str | None = None) -> ScoreOfRecord:
    return ScoreOfRecord(lab_id, ungradable_report(lab_id, sentence), source, digest, flags=(flag,),
                         notes=tuple(notes), problem=sentence)


GRADESCOPE_FORMATS: tuple[Format, ...] = ("bundle", "otter")
"""What an upload's bundle bytes may be: the notebook's bundle (or an export zip under its name); a marimo export is
not this assignment's work."""


def grade_bytes(lab_id: str, raw: bytes, source: str, *, replay: Replay | None = None) -> ScoreOfRecord:
    """The score of record of one bundle's bytes (``source`` says where they came from), read by the one reader
    (:func:`mlsys_grader.intake.read_submission`) and graded as every edge grades it, through ``replay`` (default:
    :func:`mlsys_grader.api.default_replay`)."""
    digest = hashlib.sha256(raw).hexdigest()
    read = read_submission(raw, name=submission_filename(lab_id), formats=GRADESCOPE_FORMATS, replay=replay)
    if read.error_kind is ErrorKind.FORMAT_REFUSED:
        sentence = (f"Your upload ({source}) is {ORIGIN_WORDS.get(read.origin, read.origin)}, which this assignment does not "
                    f"grade: {export_advice(lab_id)}.")
        return ungradable(lab_id, sentence, FLAG_UNREADABLE, source, (read.error or "",), digest)
    if read.bundle is None:
        error = read.error or "the input holds no bundle"
        sentence = f"Your bundle ({source}) cannot be read ({_short(error)}): {SAVE_AGAIN}."
        return ungradable(lab_id, sentence, FLAG_UNREADABLE, source, (error,), digest)
    bundle = read.bundle
    if bundle.lab != lab_id:
        sentence = (f"This upload is {lab_title(bundle.lab)} work ({source} is a {bundle.lab} bundle), but this assignment "
                    f"is {lab_title(lab_id)}: {export_advice(lab_id)}.")
        return ungradable(lab_id, sentence, FLAG_WRONG_LAB, source, digest=digest)
    try:
        report = grade_submission(read, replay=replay)
    except GraderError as exc:
        sentence = f"Your bundle ({source}) cannot be graded ({_short(exc)}): {SAVE_AGAIN}."
        return ungradable(lab_id, sentence, FLAG_UNREADABLE, source, (str(exc),), digest)
    return ScoreOfRecord(lab_id, report, source, digest, bundle=raw)


def grader_failed(lab_id: str, error: BaseException, source: str = "error") -> ScoreOfRecord:
    """The record when the grader itself failed: zero for now, flagged for a staff regrade."""
    sentence = "The autograder failed on your upload (not your error): course staff will regrade it from your upload."
    return ungradable(lab_id, sentence, FLAG_GRADER_ERROR, source, (f"{type(error).__name__}: {error}",))


def grade_upload(upload: Upload, *, replay: Replay | None = None) -> ScoreOfRecord:
    """The score of record of an inspected upload (through ``replay``, as :func:`grade_bytes`)."""
    if upload.bundle is None:
        record = ungradable(upload.lab, upload.problem or f"Nothing gradable was uploaded: {export_advice(upload.lab)}.",
                            upload.flag or FLAG_NO_BUNDLE, upload.source, upload.notes)
    else:
        record = grade_bytes(upload.lab, upload.bundle, upload.source, replay=replay)
        record = replace(record, notes=(*upload.notes, *record.notes))
    return replace(record, bundle_path=str(upload.bundle_path) if upload.bundle_path else None,
                   flags=(*record.flags, *(flag for flag in upload.flags if flag not in record.flags)),
                   public_notes=(*record.public_notes, *upload.public_notes))


def score_of_record(lab_id: str, submission_dir: str | os.PathLike, notebook_path: str | os.PathLike | None = None, *,
                    replay: Replay | None = None) -> ScoreOfRecord:
    """Grade what was uploaded in ``submission_dir`` for ``lab_id``.  Never raises for a bad submission.

    ``notebook_path`` is accepted for callers that already resolved the notebook (Otter's
    runner); the upload is inspected as a whole either way.
    """
    del notebook_path  # the upload is classified from the folder; kept for the plugin's call
    try:
        return grade_upload(inspect_upload(submission_dir, lab_id), replay=replay)
    except Exception as exc:
        return grader_failed(lab_id, exc)


def untrusted_table_dir(directory: Path) -> str | None:
    """Why the tables in ``directory`` may not be trusted (None: they may): the folder and every file in it must be
    this process's user's (root's on Gradescope) and writable by no one else, so no student process could have
    written them; their digest then catches corruption."""
    try:
        entries = [directory, *sorted(directory.iterdir())]
        for path in entries:
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                return f"{path} is a symbolic link"
            if info.st_uid != os.geteuid():
                return f"{path} belongs to uid {info.st_uid}, not to the grader's (uid {os.geteuid()})"
            if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return f"{path} is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    except FileNotFoundError:
        return f"there is no table folder {directory}"
    except OSError as exc:
        return f"{directory} cannot be read ({exc})"
    return None


def replay_for(lab_id: str, directory: Path | None) -> tuple[Replay, str]:
    """The replay service that grades ``lab_id`` here: on its verified table in ``directory`` when there is one, and the
    sentence for the staff log.

    Never builds and never trusts: a missing, unverified or untrusted table (:func:`untrusted_table_dir`) leaves the
    lab on live replay (mlsysim imported on its first evaluation), which gives the same grades, only slower.
    """
    if directory is None:
        return Replay(), "replay: live (no replay table folder configured)"
    problem = untrusted_table_dir(directory)
    if problem is not None:
        return Replay(), f"replay: live — the table is not used: {problem}"
    from ..replay import load_table

    try:
        lab = get_lab(lab_id)
        table = load_table(lab, directory, rebuild=False)
    except GraderError as exc:  # ReplayTableError: missing, refused or for another key
        return Replay(), f"replay: live — the table is not used: {exc}"
    return Replay({lab: table}), f"replay: verified table in {directory} ({len(table)} evaluations)"


def saved_at(raw: bytes | str) -> str | None:
    """The bundle's own ``created_at`` text, or None when the bytes are not a readable bundle."""
    try:
        value = loads_strict(raw)
    except GraderError:
        return None
    created = value.get("created_at") if isinstance(value, dict) else None
    return created if isinstance(created, str) else None


def bundle_fingerprint(text: bytes | str) -> str:
    """What a bundle says, without when it was saved: two saves of the same work match.

    The student API re-saves on every re-run (a new ``created_at`` and so a new content
    hash), so comparing raw bytes would call every honest re-execution a rewrite.
    Unreadable text is fingerprinted by its bytes.
    """
    raw = text.encode("utf-8") if isinstance(text, str) else text
    try:
        data = load_bundle(raw).model_dump(mode="json", exclude={"created_at", "content_hash"})
    except GraderError:
        return "raw:" + hashlib.sha256(raw).hexdigest()
    return "bundle:" + sha256_of(data)


def file_fingerprint(path: str | None) -> str | None:
    """:func:`bundle_fingerprint` of a file's current bytes (None when it is gone or not a regular file)."""
    if not path:
        return None
    try:
        return bundle_fingerprint(read_regular_file(Path(path), MAX_BYTES))
    except OSError:
        return None
