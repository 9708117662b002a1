"""A score of record as Gradescope results JSON, and the kernel-side results compared with it.

Layout (https://gradescope-autograders.readthedocs.io/en/latest/specs/):

- ``Public checks`` — visible at once: per part, the public items' points and what to do;
  no score of its own, so nothing hidden leaks through it;
- one entry per part A–E and one for the synthesis — ``after_published``: the rubric's
  points and max points, and one actionable sentence for every lost point, hidden items
  included;
- ``Staff review`` — ``hidden`` (instructors only), present when the submission is flagged.

The top-level ``score`` is the score of record; ``extra_data`` keeps flags and provenance.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..core.report import HIDDEN_ITEMS, GradeReport
from ._record import ScoreOfRecord

FLAG_KERNEL_DISAGREES = "kernel-disagrees"
FLAG_KERNEL_RESULTS_REJECTED = "kernel-results-rejected"
FLAG_BUNDLE_REWRITTEN = "bundle-rewritten-during-grading"

_PART_NAME = re.compile(r"(?:^|[^a-z])(?:part)?[\s_\-]*([a-e])$")


def question_part(name: str, overrides: Mapping[str, str] | None = None) -> str | None:
    """The rubric part an Otter question grades (``part_a``/``q_a``/``A`` → ``A``; ``*synth*`` → synthesis)."""
    if overrides and name in overrides:
        return overrides[name]
    lower = name.strip().lower()
    if "synth" in lower:
        return "synthesis"
    match = _PART_NAME.search(lower)
    return match.group(1).upper() if match else None


def part_title(name: str) -> str:
    return "Synthesis" if name == "synthesis" else f"Part {name}"


@dataclass
class KernelComparison:
    """What the tests inside the student's kernel reported, next to the score of record."""

    scores: dict[str, tuple[float, float]] = field(default_factory=dict)
    error: str | None = None
    disagreements: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


def compare_kernel(record: GradeReport, kernel_scores: Mapping[str, tuple[float, float]] | None, error: str | None,
                   overrides: Mapping[str, str] | None = None) -> KernelComparison:
    """Per part, the kernel's points against the score of record; any difference is a disagreement."""
    if kernel_scores is None:
        return KernelComparison(error=error, flags=[FLAG_KERNEL_RESULTS_REJECTED],
                                disagreements=[f"the kernel's results were not accepted: {error}"])
    per_part: dict[str, list[float]] = {}
    for question, (score, _possible) in kernel_scores.items():
        part = question_part(question, overrides)
        if part in record.parts:
            per_part.setdefault(part, []).append(score)
    comparison = KernelComparison(scores=dict(kernel_scores))
    if per_part:
        for part, scores in per_part.items():
            kernel, recorded = sum(scores), record.parts[part].score
            if not math.isclose(kernel, recorded, abs_tol=1e-6):
                comparison.disagreements.append(f"{part_title(part)}: kernel tests gave {kernel:g}, score of record is {recorded:g}")
    else:
        kernel = sum(score for score, _ in kernel_scores.values())
        if not math.isclose(kernel, record.score, abs_tol=1e-6):
            comparison.disagreements.append(f"kernel tests gave {kernel:g} in total, score of record is {record.score:g}")
    if comparison.disagreements:
        comparison.flags.append(FLAG_KERNEL_DISAGREES)
    return comparison


def _lost_points(report: GradeReport, part: str, *, public_only: bool) -> list[str]:
    """One line per lost rubric item: the points and the finding's sentence.

    A part with no evidence loses every item for one reason, so that reason is said once.
    """
    findings = report.findings_for(part)
    if report.parts[part].held:
        return [f"{part_title(part)} will be reviewed by staff: the grader failed on it (not your error), so its "
                f"{report.parts[part].max_score:g} points are held until then."]
    items = [item for item in report.parts[part].items
             if item.points < item.max_points and not (public_only and item.item in HIDDEN_ITEMS)]
    if not items:
        return []
    voiding = next((f for f in findings if f.voids_part and not (public_only and f.hidden)), None)
    if voiding is not None:
        return [f"-{sum(i.max_points - i.points for i in items):g} (all items): {voiding.message}"]
    lines = []
    for item in items:
        owner = next((f for f in findings if f.rubric_item == item.item and not (public_only and f.hidden)), None)
        sentence = owner.message if owner else f"The {item.item.replace('_', ' ')} check did not pass; see the public feedback."
        lines.append(f"-{item.max_points - item.points:g} {item.item}: {sentence}")
    return lines


def _advice(report: GradeReport, part: str, *, public_only: bool) -> list[str]:
    """Findings that cost no points but still tell the student something."""
    return [f"note: {f.message}" for f in report.findings_for(part)
            if f.rubric_item is None and not f.voids_part and f.criterion != "grader" and not (public_only and f.hidden)]


def public_summary(report: GradeReport) -> tuple[str, bool]:
    """The visible feedback: public points and sentences per part; True when nothing public was lost."""
    public = report.public()
    lines, clean = [], True
    for name, part in public.parts.items():
        lost = _lost_points(report, name, public_only=True)
        clean &= not lost
        lines.append(f"{part_title(name)}: {part.score:g} / {part.max_score:g} public points")
        lines.extend(f"  {line}" for line in lost + _advice(report, name, public_only=True))
    bundle = [f"  {f.message}" for f in report.findings_for("bundle") if not f.hidden]
    if bundle:
        lines.append("Submission:")
        lines.extend(bundle)
    lines.append("Hidden checks (replay, and whether each prediction matched the numbers) are shown when grades are published.")
    return "\n".join(lines), clean


def gradescope_results(record: ScoreOfRecord, kernel: KernelComparison | None = None, *,
                       extra_flags: list[str] | None = None, extra_notes: list[str] | None = None) -> dict[str, Any]:
    """The Gradescope results document for a score of record."""
    report = record.report
    flags = sorted(set(record.all_flags) | set(kernel.flags if kernel else []) | set(extra_flags or []))
    summary, clean = public_summary(report)
    tests: list[dict[str, Any]] = [{
        "name": "Public checks",
        "visibility": "visible",
        "status": "passed" if clean else "failed",
        "output": summary,
    }]
    for number, (name, part) in enumerate(report.parts.items(), start=1):
        lost = _lost_points(report, name, public_only=False) + _advice(report, name, public_only=False)
        tests.append({
            "name": part_title(name),
            "number": str(number),
            "score": round(part.score, 5),
            "max_score": round(part.max_score, 5),
            "status": "passed" if math.isclose(part.score, part.max_score) else "failed",
            "visibility": "after_published",
            "output": "\n".join(lost) if lost else "Every check passed.",
        })
    notes = list(record.notes) + list(extra_notes or []) + (kernel.disagreements if kernel else [])
    if flags:
        staff = [f"flags: {', '.join(flags)}", f"graded: {record.source}"
                 + (f" (sha256 {record.bundle_sha256})" if record.bundle_sha256 else "")]
        staff += [f"- {note}" for note in notes]
        staff += [f"- [{f.part}] {f.criterion}: {f.message}" for f in report.findings
                  if f.criterion in ("replay", "domain", "version", "format", "grader", "generated")]
        tests.append({"name": "Staff review", "visibility": "hidden", "status": "failed", "output": "\n".join(staff)})
    return {
        "score": round(report.score, 5),
        "output": (f"{report.lab} on track {report.track}: {report.score:g} / {report.max_score:g}. "
                   "Score of record computed by mlsys-grader from your saved bundle, outside your notebook's kernel."),
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"mlsys_grader": {
            "flags": flags,
            "source": record.source,
            "bundle_sha256": record.bundle_sha256,
            "content_hash": report.content_hash,
            "versions": report.versions,
            "max_score": report.max_score,
            "kernel_scores": {k: list(v) for k, v in (kernel.scores if kernel else {}).items()},
            "notes": notes,
        }},
    }
