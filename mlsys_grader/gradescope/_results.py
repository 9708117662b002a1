"""A score of record as Gradescope results JSON.

Layout (https://gradescope-autograders.readthedocs.io/en/latest/specs/):

- top-level ``visibility`` ``after_published`` (every test not marked otherwise waits for publication)
  and ``output`` — one line: lab, track and what was graded (or the one sentence saying why nothing
  could be graded), never the total;
- ``Public checks`` — visible at once, no score of its own: one line per part with its public
  points and what to do, each sentence said once; what the public checks alone give, so it never
  tells that a hidden check (replay) failed;
- one entry per part A–E and one for the synthesis — ``after_published``: the rubric's
  points and max points (they add up to the rubric's 100), one line per lost item,
  hidden items included, and whether the part's prediction was supported;
- ``Total`` — ``after_published``: the score of record, and the late penalty charged when there is one;
- ``Staff review`` — ``hidden`` (instructors only), present when there is a flag or a note.

The top-level ``score`` is the score of record; ``extra_data`` keeps flags, provenance and
Otter's per-item test results.  Text a student sees never names files of the autograder,
Python modules, tracebacks or hashes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import flags as flag_names
from ..core.grading import REVIEW_CRITERIA
from ..core.report import GradeReport, ItemScore
from ._otter_tests import OtterResults
from ._record import ScoreOfRecord
from ._upload import lab_title

PREDICTION_ITEM = "prediction_correct"
FLAG_KERNEL_DISAGREES = flag_names.KERNEL_DISAGREES
FLAG_KERNEL_RESULTS_REJECTED = flag_names.KERNEL_RESULTS_REJECTED
FLAG_TESTS_DISAGREE = flag_names.TESTS_DISAGREE



def part_title(name: str) -> str:
    return "Synthesis" if name == "synthesis" else f"Part {name}"


@dataclass
class Review:
    """What staff should know beyond the score of record: flags, notes, Otter's results, the re-run."""

    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    otter_tests: OtterResults | None = None
    kernel_tests: OtterResults | None = None
    run: dict[str, Any] = field(default_factory=dict)

    def flag(self, name: str, note: str | None = None) -> None:
        if name not in self.flags:
            self.flags.append(name)
        if note:
            self.notes.append(note)


def _lost_lines(report: GradeReport, part: str) -> list[str]:
    """One line per lost rubric item (hidden items included): the points and the finding's sentence.

    A part that loses every item for one reason says that reason once.
    """
    scores = report.parts[part]
    held = [item for item in scores.items if item.held]
    if held and len(held) == len(scores.items):
        return [f"{part_title(part)} will be reviewed by staff: the grader failed on it (not your error), so its "
                f"{scores.max_score:g} points are held until then."]
    if held:  # a synthesis check failed: the items it judges wait, the others are graded as usual
        return [f"{', '.join(i.item for i in held)} will be reviewed by staff: the grader failed on them (not your error), "
                f"so their {sum(i.max_points for i in held):g} points are held until then.",
                *_lost_item_lines(report, part, [i for i in scores.items if not i.held])]
    return _lost_item_lines(report, part, scores.items)


def _lost_item_lines(report: GradeReport, part: str, scored: Iterable[ItemScore]) -> list[str]:
    """The lines for the items of ``scored`` that lost points (none of them held)."""
    items = [item for item in scored if item.points < item.max_points]
    if not items:
        return []
    findings = report.findings_for(part)
    voiding = next((f for f in findings if f.voids_part), None)
    if voiding is not None:
        return [f"-{sum(i.max_points - i.points for i in items):g} (all items): {voiding.message}"]
    if not findings and report.findings_for("bundle"):
        return [f"-{sum(i.max_points - i.points for i in items):g} (all items): {report.findings_for('bundle')[0].message}"]
    groups: dict[str, list] = {}  # one line per sentence: a finding that costs several items is said once
    for item in items:
        owner = next((f for f in findings if item.item in (f.rubric_item, *f.also_costs)), None)
        sentence = owner.message if owner else f"The {item.item.replace('_', ' ')} check did not pass."
        groups.setdefault(sentence, []).append(item)
    return [f"-{sum(i.max_points - i.points for i in group):g} {', '.join(i.item for i in group)}: {sentence}"
            for sentence, group in groups.items()]


def _notes_for(report: GradeReport, part: str, *, public_only: bool) -> list[str]:
    """Findings that cost no points but still tell the student something."""
    return [f.message for f in report.findings_for(part)
            if f.rubric_item is None and not f.also_costs and not f.voids_part and f.criterion != "grader"
            and not (public_only and f.hidden)]


def _public_sentences(report: GradeReport, part: str) -> list[str]:
    """What a student may read now about ``part``: sentences of public findings, in order, once each."""
    scores = report.parts[part]
    if all(item.held for item in scores.items):
        return ["held for staff review (the grader failed on this part, not your error)."]
    findings = [f for f in report.findings_for(part) if not f.hidden]
    # Only what the public checks say: a hidden check's verdict (an edited number failing replay) is never hinted at.
    sentences = [f.message for f in findings if f.voids_part or f.rubric_item or f.also_costs]
    sentences += _notes_for(report, part, public_only=True)
    return list(dict.fromkeys(sentences))


MAX_SENTENCES_PER_LINE = 3


def _template(sentence: str, part: str) -> str:
    """The sentence with its part's name blanked, so "Part A has no …" and "Part B has no …" count as one."""
    return sentence.replace(f"Part {part}", "Part ?").replace(f"part {part}", "part ?")


def public_summary(record: ScoreOfRecord) -> tuple[str, bool]:
    """The visible feedback — one line per part, no sentence twice — and True when nothing public is wrong."""
    report = record.report
    public = report.public()
    lines: list[str] = []
    said: dict[str, str] = {}  # sentence template → the part line that said it first
    clean = True
    if record.problem:
        lines.append(record.problem)
        clean = False
    for finding in report.findings_for("bundle"):
        if not finding.hidden and finding.message not in said and finding.message != record.problem:
            lines.append(finding.message)
            said[finding.message] = "above"
            clean = False
    lines.extend(record.public_notes)
    header_at = len(lines)
    for name, part in public.parts.items():
        line = f"{part_title(name)}: {part.score:g} / {part.max_score:g}"
        if record.problem:
            lines.append(line + ".")
            continue
        sentences = _public_sentences(report, name)
        clean &= not sentences and math.isclose(part.score, part.max_score)
        fresh = [s for s in sentences if _template(s, name) not in said]
        earlier = list(dict.fromkeys(said[_template(s, name)] for s in sentences if _template(s, name) in said))
        for sentence in fresh:
            said[_template(sentence, name)] = part_title(name)
        shown = fresh[:MAX_SENTENCES_PER_LINE]
        if len(fresh) > len(shown):
            shown.append(f"…and {len(fresh) - len(shown)} more; your notebook's check cell lists them all.")
        if earlier:
            shown.append("As for " + " and ".join(earlier) + ".")
        lines.append(line + (" — " + " ".join(shown) if shown else "."))
    track = f", track {record.track}" if record.track else ""
    lines.insert(header_at, f"{lab_title(record.lab)}{track}: public checks {public.score:g} / {public.max_score:g}. "
                            f"{PUBLISHED_LATER}")
    return "\n".join(lines), clean


PUBLISHED_LATER = ("The replay of your evidence, whether your predictions were supported, each part's points and "
                   "your total are shown when grades are published.")


def _headline(record: ScoreOfRecord) -> str:
    """The top-level output: what was graded, never the total (a student reads it before grades are published)."""
    if record.problem:
        return f"{lab_title(record.lab)}: {record.problem}"
    return f"{lab_title(record.lab)}, track {record.track}: graded from {record.source}. {PUBLISHED_LATER}"


def total_line(score: float, max_score: float, late: tuple[float, str] | None = None) -> str:
    """The total as published: the score of record, with the late penalty charged stated beside it."""
    if late is None or not late[0]:
        return f"Total: {score:g} / {max_score:g}."
    points, rule = late
    return f"Total: {score:g} / {max_score:g}, after a late penalty of {points:g} points ({rule})."


def _prediction_line(report: GradeReport, part: str) -> str | None:
    """Whether the part's prediction was supported by the replayed numbers, said after publication (formative when the
    rubric gives it no points)."""
    item = next((i for i in report.parts[part].items if i.item == PREDICTION_ITEM), None)
    if item is None:
        return None
    wrong = next((f for f in report.findings_for(part) if f.rubric_item == PREDICTION_ITEM), None)
    formative = " (formative: no points)" if item.max_points == 0 else ""
    if wrong is None:
        return f"Your prediction was supported by your evidence{formative}."
    return f"Your prediction was not supported by your evidence{formative}: {wrong.message}"


def _staff_lines(record: ScoreOfRecord, flags: list[str], notes: Iterable[str]) -> list[str]:
    lines = [f"flags: {', '.join(flags) or 'none'}",
             f"graded: {record.source}" + (f" (sha256 {record.bundle_sha256})" if record.bundle_sha256 else "")]
    lines += [f"- {note}" for note in dict.fromkeys(notes)]
    lines += [f"- [{f.part}] {f.criterion}: {f.message}" for f in record.report.findings
              if f.criterion in REVIEW_CRITERIA]
    return lines


def gradescope_results(record: ScoreOfRecord, review: Review | None = None) -> dict[str, Any]:
    """The Gradescope results document for a score of record (and what staff should review)."""
    review = review or Review()
    report = record.report
    flags = sorted(set(record.all_flags) | set(review.flags))
    notes = list(record.notes) + list(review.notes)
    summary, clean = public_summary(record)
    tests: list[dict[str, Any]] = [{
        "name": "Public checks",
        "visibility": "visible",
        "status": "passed" if clean else "failed",
        "output": summary,
    }]
    for number, (name, part) in enumerate(report.parts.items(), start=1):
        prediction = None if record.problem else _prediction_line(report, name)
        if record.problem:
            lost = [f"-{part.max_score:g} (all items): nothing gradable was uploaded (see the summary)."]
        else:
            lost = _lost_lines(report, name) + [f"note: {n}" for n in _notes_for(report, name, public_only=False)]
        tests.append({
            "name": part_title(name),
            "number": str(number),
            "score": round(part.score, 5),
            "max_score": round(part.max_score, 5),
            "status": "passed" if math.isclose(part.score, part.max_score) else "failed",
            "visibility": "after_published",
            "output": "\n".join([*(lost or ["Every check passed."]), *([prediction] if prediction else [])]),
        })
    tests.append({"name": "Total", "visibility": "after_published", "output": total_line(report.score, report.max_score)})
    if flags or notes:
        tests.append({"name": "Staff review", "visibility": "hidden", "status": "failed" if flags else "passed",
                      "output": "\n".join(_staff_lines(record, flags, notes))})
    extra: dict[str, Any] = {
        "flags": flags,
        "source": record.source,
        "track": record.track,
        "bundle_sha256": record.bundle_sha256,
        "content_hash": report.content_hash,
        "versions": dict(report.versions),
        "max_score": report.max_score,
        "notes": notes,
    }
    if review.otter_tests is not None:
        extra["otter_tests"] = {"error": review.otter_tests.error, "questions": review.otter_tests.by_question()}
    if review.kernel_tests is not None:
        extra["kernel_tests"] = {"error": review.kernel_tests.error, "questions": review.kernel_tests.by_question()}
    if review.run:
        extra["notebook_run"] = review.run
    return {
        "score": round(report.score, 5),
        # Before publication a student sees the public checks only (the test marked visible), never the total or a
        # hidden check's result; Gradescope's "Hide autograder results" keeps the score itself from showing too.
        "visibility": "after_published",
        "output": _headline(record),
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"mlsys_grader": extra},
    }
