"""The score of record: find the bundle a student submitted and grade it with the core.

Runs in the grading process before any student code executes, so nothing the kernel
does later can change which bytes are graded.  Never raises for a bad submission: an
unreadable, missing or wrong-lab bundle becomes a zero report whose findings say why.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..api import default_rubric, grade_bundle, read_bundle_bytes
from ..core.jsonio import MAX_BYTES, sha256_of
from ..core.models import load_bundle
from ..core.report import Finding, GradeReport, ItemScore, PartScore
from ..errors import GraderError
from ._embed import find_embedded_bundles

#: Staff flags this layer adds to the core's (``integrity``, ``stale``, ``missing``).
FLAG_NO_BUNDLE = "no-bundle"
FLAG_WRONG_LAB = "wrong-lab"
FLAG_BUNDLE_MISMATCH = "bundle-mismatch"
FLAG_GRADER_ERROR = "grader-error"


def bundle_filename(lab_id: str) -> str:
    """The shared convention: the student API saves ``<lab>-submission.json`` next to the notebook."""
    return f"{lab_id}-submission.json"


@dataclass
class ScoreOfRecord:
    """What was graded, how it scored, and what staff should look at."""

    lab: str
    report: GradeReport
    source: str
    bundle_sha256: str | None = None
    bundle_path: str | None = None
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def all_flags(self) -> list[str]:
        return sorted(set(self.report.flags) | set(self.flags))


SAVE_AGAIN = "save it again from the notebook (never edit it by hand), then run the export cell and upload the zip it makes"


def ungradable_report(lab_id: str, reason: str, action: str | None = None) -> GradeReport:
    """A zero report for ``lab_id`` whose every part says, in one sentence, why and what to do."""
    rubric = default_rubric(lab_id)
    parts = {}
    for name, items in [*rubric.parts.items(), ("synthesis", rubric.synthesis)]:
        scored = [ItemScore(item=item, points=0.0, max_points=points) for item, points in items.items()]
        parts[name] = PartScore(part=name, score=0.0, max_score=sum(items.values()), items=scored)
    if len(reason) > 240:
        reason = reason[:237] + "..."
    action = action or (f"run the notebook's predict, run and capture cells so it saves {bundle_filename(lab_id)}, "
                        "then run the export cell and upload the zip it makes")
    hint = f"No points could be given because {reason}; {action}."
    findings = [Finding(part=name, criterion="missing", message=hint) for name in parts]
    return GradeReport(lab=lab_id, track="unknown", score=0.0, max_score=rubric.max_score, parts=parts,
                       findings=findings, flags=["missing"])


def _grade_text(lab_id: str, text: bytes | str, source: str) -> ScoreOfRecord:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    digest = hashlib.sha256(raw).hexdigest()
    try:
        bundle = load_bundle(raw)
    except GraderError as exc:
        report = ungradable_report(lab_id, f"the submitted bundle ({source}) cannot be read: {exc}", SAVE_AGAIN)
        return ScoreOfRecord(lab_id, report, source, digest, flags=["integrity"], notes=[str(exc)])
    if bundle.lab != lab_id:
        report = ungradable_report(lab_id, f"the submitted bundle is for {bundle.lab} but this assignment is {lab_id}",
                                   f"upload the {lab_id} notebook's export zip to this assignment")
        return ScoreOfRecord(lab_id, report, source, digest, flags=[FLAG_WRONG_LAB])
    try:
        report = grade_bundle(bundle)
    except GraderError as exc:
        report = ungradable_report(lab_id, f"the submitted bundle ({source}) cannot be graded: {exc}", SAVE_AGAIN)
        return ScoreOfRecord(lab_id, report, source, digest, flags=["integrity"], notes=[str(exc)])
    return ScoreOfRecord(lab_id, report, source, digest)


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


def find_bundle_file(submission_dir: Path, lab_id: str) -> Path | None:
    """``<lab>-submission.json`` at the top of the submission, or one folder down (a zipped folder)."""
    name = bundle_filename(lab_id)
    top = submission_dir / name
    if top.is_file():
        return top
    candidates = sorted(p for p in submission_dir.glob(f"*/{name}") if p.is_file() and "tests" not in p.parts)
    return candidates[0] if candidates else None


def read_notebook(path: Path) -> dict | None:
    """The submitted notebook as plain JSON data (bounded read), or None if it is not one."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(8 * MAX_BYTES + 1)
        if len(raw) > 8 * MAX_BYTES:
            return None
        data = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def score_of_record(lab_id: str, submission_dir: str | os.PathLike, notebook_path: str | os.PathLike | None) -> ScoreOfRecord:
    """Grade the bundle the student submitted: the bundle file if present, else the latest one
    embedded in the notebook's outputs.  Never raises for a bad submission."""
    submission_dir = Path(submission_dir)
    try:
        bundle_file = find_bundle_file(submission_dir, lab_id)
        notebook = read_notebook(Path(notebook_path)) if notebook_path and str(notebook_path).endswith(".ipynb") else None
        embedded = find_embedded_bundles(notebook) if notebook else []
        if bundle_file is not None:
            text = read_bundle_bytes(bundle_file)
            record = _grade_text(lab_id, text, f"file {bundle_file.name}")
            record.bundle_path = str(bundle_file)
            if embedded and bundle_fingerprint(embedded[-1].text) != bundle_fingerprint(text):
                record.flags.append(FLAG_BUNDLE_MISMATCH)
                record.notes.append(
                    f"{bundle_file.name} differs from the latest bundle shown in the notebook (cell {embedded[-1].cell_index}); "
                    "the file was graded"
                )
            return record
        if embedded:
            latest = embedded[-1]
            return _grade_text(lab_id, latest.text, f"notebook output in cell {latest.cell_index}")
        report = ungradable_report(lab_id, f"no saved bundle was found (no {bundle_filename(lab_id)} and none in the notebook's outputs)")
        return ScoreOfRecord(lab_id, report, "none", flags=[FLAG_NO_BUNDLE])
    except Exception as exc:  # noqa: BLE001 — a grader bug must still yield a score and a reason
        report = ungradable_report(lab_id, f"the grader failed on this submission ({type(exc).__name__})",
                                   "tell your course staff, who will regrade it from your upload")
        return ScoreOfRecord(lab_id, report, "error", flags=[FLAG_GRADER_ERROR], notes=[repr(exc)])


def file_fingerprint(path: str | None) -> str | None:
    """:func:`bundle_fingerprint` of a file's current bytes (None when it is gone), to notice a
    rewrite with different content while the notebook runs."""
    if not path:
        return None
    try:
        return bundle_fingerprint(_read_regular_file(path, MAX_BYTES + 1))
    except OSError:
        return None


def _read_regular_file(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file; ``OSError`` for anything else.

    Used after student code ran: it may have replaced the file with a FIFO (a plain
    ``open`` would then block forever) or a device, so the file is opened without
    blocking and checked on the open descriptor.
    """
    import stat

    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path} is no longer a regular file")
        return handle.read(limit)
