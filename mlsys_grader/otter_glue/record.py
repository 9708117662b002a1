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
from ..core.jsonio import MAX_BYTES
from ..core.models import load_bundle
from ..core.report import Finding, GradeReport, PartScore, ItemScore
from ..errors import GraderError
from .embed import find_embedded_bundles

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


def ungradable_report(lab_id: str, reason: str) -> GradeReport:
    """A zero report for ``lab_id`` whose every part says, in one sentence, why and what to do."""
    rubric = default_rubric(lab_id)
    parts = {}
    for name, items in [*rubric.parts.items(), ("synthesis", rubric.synthesis)]:
        scored = [ItemScore(item=item, points=0.0, max_points=points) for item, points in items.items()]
        parts[name] = PartScore(part=name, score=0.0, max_score=sum(items.values()), items=scored)
    hint = (
        f"{reason}; run the notebook's capture cells so it saves {bundle_filename(lab_id)}, "
        "then run the export cell and upload the zip it makes."
    )
    findings = [Finding(part=name, criterion="missing", message=hint) for name in parts]
    return GradeReport(lab=lab_id, track="unknown", score=0.0, max_score=rubric.max_score, parts=parts,
                       findings=findings, flags=["missing"])


def _grade_text(lab_id: str, text: bytes | str, source: str) -> ScoreOfRecord:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    digest = hashlib.sha256(raw).hexdigest()
    try:
        bundle = load_bundle(raw)
    except GraderError as exc:
        report = ungradable_report(lab_id, f"the submitted bundle ({source}) cannot be read: {exc}")
        return ScoreOfRecord(lab_id, report, source, digest, flags=["integrity"], notes=[str(exc)])
    if bundle.lab != lab_id:
        report = ungradable_report(lab_id, f"the submitted bundle is for {bundle.lab!r} but this assignment is {lab_id!r}")
        return ScoreOfRecord(lab_id, report, source, digest, flags=[FLAG_WRONG_LAB])
    try:
        report = grade_bundle(bundle)
    except GraderError as exc:
        report = ungradable_report(lab_id, f"the submitted bundle ({source}) cannot be graded: {exc}")
        return ScoreOfRecord(lab_id, report, source, digest, flags=["integrity"], notes=[str(exc)])
    return ScoreOfRecord(lab_id, report, source, digest)


def _bundle_identity(text: bytes | str) -> str | None:
    """The content hash a bundle's content implies (None when unreadable), to compare two saves."""
    try:
        return load_bundle(text).compute_hash()
    except GraderError:
        return None


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
            if embedded and _bundle_identity(embedded[-1].text) != _bundle_identity(text):
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
        report = ungradable_report(lab_id, f"the grader failed on this submission ({type(exc).__name__}: {exc}); staff will regrade it")
        return ScoreOfRecord(lab_id, report, "error", flags=[FLAG_GRADER_ERROR], notes=[repr(exc)])


def file_sha256(path: str | None) -> str | None:
    """SHA-256 of a file's current bytes (None when it is gone), to notice a rewrite during execution."""
    if not path:
        return None
    try:
        return hashlib.sha256(read_bundle_bytes(path)).hexdigest()
    except OSError:
        return None
