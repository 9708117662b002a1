"""Run every check on a bundle and score the findings against the rubric — once, here.

What an importer knows about the file a bundle came from enters :func:`grade` as typed
inputs, so no outer layer re-scores a report: its own findings (``importer_findings``: a
marimo export checked against its seals and copies), :class:`Excuse` (findings of one
stable code (:mod:`~mlsys_grader.core.codes`) not charged, with a visible note) and
:class:`OnlyWhenComplete` (a source written only once complete, where a missing, stale or
non-contrasting part means the file was edited).  A submission that cannot be graded at all
gets :func:`ungradable_report`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import flags as flag_names
from .audits import CHECKS, Check, PartCheck, held
from .context import GradingContext, build_context
from .generated import template_match
from .models import PARTS, Bundle
from .rationale import rationale_verdicts, with_verdicts
from .replayer import Replayer
from .report import INTEGRITY_CRITERIA, Criterion, Finding, FindingCode, GradeReport, ItemScore, PartName, PartScore
from .roles import GradingLab
from .rubric import Rubric

REVIEW_CRITERIA = INTEGRITY_CRITERIA | {"format", "grader", "generated"}
"""Criteria whose findings staff read in full: evidence that failed verification, a bundle that
does not match its own hash, a grader failure and the grader's own template as rationale (the
findings behind the ``integrity``, ``version_drift``, ``grader_error`` and ``generated`` flags)."""

RECAPTURE_CRITERIA = ("stale", "contrast")
"""Criteria of the findings a recapture of the part clears: evidence that no longer matches the
final settings (``stale``) and an intervention that does not differ from its baseline
(``contrast``).  The notebook warns about these as soon as a part is run or captured."""


@dataclass(frozen=True)
class Excuse:
    """Findings of one kind (``code``) the importer says not to charge, and why.

    The excuse stays visible: the findings it removes are replaced by one note (on ``part``,
    with ``criterion``) whose ``actual`` names the parts excused, e.g. ``no lock time in parts A, B``.
    """

    code: FindingCode
    message: str
    """The note's one sentence for the student."""
    expected: str
    lacking: str
    """What each excused part lacks, in a few words (``no lock time``)."""
    part: PartName = "bundle"
    criterion: Criterion = "prediction"

    def note(self, excused: Sequence[Finding]) -> Finding:
        """The one finding that says what was excused."""
        parts = ", ".join(f.part for f in excused)
        return Finding(part=self.part, criterion=self.criterion, message=self.message, expected=self.expected,
                       actual=f"{self.lacking} in part{'s' if len(excused) > 1 else ''} {parts}", code=f"{self.criterion}.excused")


@dataclass(frozen=True)
class OnlyWhenComplete:
    """The source is written only once it is complete (the book's marimo labs download a report only when every
    part is captured, current and contrasting).

    A finding of one of the criteria of ``sentences`` on one of the lab's parts then means the file was
    edited: it adds an ``integrity`` finding that voids the part, ``Part <p> <sentence>; <advice>``.  A part
    whose evidence another integrity finding already voided keeps that reason alone.
    """

    sentences: tuple[tuple[Criterion, str], ...]
    advice: str


def _item_score(item: str, earned: float, points: float, held: bool) -> ItemScore:
    """The :class:`ItemScore` of these values, built without validation (the values are the rubric's and the score's)."""
    return ItemScore.model_construct(item=item, points=earned, max_points=points, held=held)


def score(findings: Sequence[Finding], rubric: Rubric, *, void: Iterable[str] = ()) -> dict[str, PartScore]:
    """Points per part (every part named in ``void`` earns nothing, whatever the findings say).

    An item earns its points unless a finding costs it (``rubric_item`` or ``also_costs``), then the share the
    finding leaves (``keeps``: 0 for most, a half for a partial credit; the least of several);
    a part whose evidence is missing or unverified (a finding with ``voids_part``) earns
    nothing; what the grader failed on (a finding with criterion ``grader``) is held for staff
    review: 0 now, marked ``held``, never a lost point the student caused and never a paid one.
    A ``grader`` finding holds the items it names, or its whole part when it names none.
    """
    kept: dict[tuple[str, str], float] = {}  # what a costing finding leaves of an item: the least any of them leaves
    for f in findings:
        if f.criterion != "grader":
            for item in (f.rubric_item, *f.also_costs):
                if item:
                    kept[(f.part, item)] = min(kept.get((f.part, item), 1.0), f.keeps)
    voided = {f.part for f in findings if f.voids_part} | set(void)
    held_parts = {f.part for f in findings if f.criterion == "grader" and not f.rubric_item}
    held_items = {(f.part, item) for f in findings if f.criterion == "grader" for item in (f.rubric_item, *f.also_costs) if item}
    parts: dict[str, PartScore] = {}
    for name, items in [*rubric.parts.items(), ("synthesis", rubric.synthesis)]:
        # model_construct: the values are computed here from a validated rubric, so validating them again
        # would only cost time (scoring runs once per submission in bulk grading).
        scored = []
        for item, points in items.items():
            held = name in held_parts or (name, item) in held_items
            share = 0.0 if held or name in voided else kept.get((name, item), 1.0)
            earned = points if share == 1.0 else round(points * share, 6)
            scored.append(_item_score(item, earned, points, held))
        parts[name] = PartScore.model_construct(part=name, score=sum(i.points for i in scored),
                                                max_score=sum(i.max_points for i in scored), items=scored)
    return parts


def staff_flags(findings: Sequence[Finding]) -> list[str]:
    """Flags for staff: ``integrity`` for evidence that failed replay, domain or version checks
    (or an edited bundle); ``version_drift`` when that evidence came from another mlsysim;
    then ``stale``, ``missing``, ``generated`` (the grader's own template as rationale) and
    ``grader_error`` (a part held for review because the grader failed)."""
    # ``integrity`` only for findings that void a part's evidence (or an edited bundle), never
    # for a note such as a harmless version label.
    flags = set()
    for finding in findings:
        if (finding.voids_part and finding.criterion in INTEGRITY_CRITERIA) or (finding.part == "bundle" and finding.criterion == "format"):
            flags.add(flag_names.INTEGRITY)
        if finding.voids_part and finding.criterion == "version":
            flags.add(flag_names.VERSION_DRIFT)
        if finding.criterion in flag_names.BY_CRITERION:
            flags.add(flag_names.BY_CRITERION[finding.criterion])
    return sorted(flags)


def finding_order(lab: GradingLab) -> dict[str, int]:
    """Where a finding on each part goes in a report: the lab's parts in its order, any other
    part letter of the bundle after them, then the synthesis and the bundle itself."""
    others = [part for part in PARTS if part not in lab.parts]
    return {name: index for index, name in enumerate((*lab.part_ids(), *others, "synthesis", "bundle"))}


def _run_check(check: Check, ctx: GradingContext) -> list[Finding]:
    """A check's findings; where the check itself fails, a ``grader`` finding holding what it was judging.

    This is the boundary where a bug in the grader stops: checks raise nothing for a bad submission,
    so anything escaping one is the grader's own error, never the student's, and never the student's
    gain either.  A :class:`PartCheck` runs part by part, so a failure on one part holds that part
    only; a :class:`SubmissionCheck` that fails holds the synthesis items it judges.  Findings a check
    yielded before it failed are dropped with it.
    """
    if isinstance(check, PartCheck):
        found: list[Finding] = []
        for part in ctx.parts:
            try:
                found += list(check.run(ctx, part))
            except Exception as exc:  # the grader's boundary: see the docstring
                found.append(held(part, _failure(check, exc)))
        return found
    try:
        return list(check.run(ctx))
    except Exception as exc:  # the grader's boundary: see the docstring
        items = check.judges(ctx.rubric)
        return [held("synthesis" if items else "bundle", _failure(check, exc), items)]


def _failure(check: Check, exc: Exception) -> str:
    """What failed, for staff: the check and the error (never shown to the student as advice)."""
    return f"{check.name}: {type(exc).__name__}: {exc}"[:300]


def _excused(findings: Sequence[Finding], excuses: Sequence[Excuse]) -> list[Finding]:
    """``findings`` without the ones an excuse names (by code), each excuse's note after them."""
    kept, notes = list(findings), []
    for excuse in excuses:
        excused = [f for f in kept if f.code == excuse.code]
        if excused:
            kept = [f for f in kept if f.code != excuse.code]
            notes.append(excuse.note(excused))
    return kept + notes


def _contradictions(findings: Sequence[Finding], lab: GradingLab, complete: OnlyWhenComplete | None) -> list[Finding]:
    """The integrity findings a source written only once complete earns from the grade's own findings."""
    if complete is None:
        return []
    sentences = dict(complete.sentences)
    parts = lab.part_ids()
    seen = {f.part for f in findings if f.voids_part and f.criterion in INTEGRITY_CRITERIA}
    found = []
    for finding in findings:
        if finding.part in parts and finding.criterion in sentences and finding.part not in seen:
            seen.add(finding.part)
            found.append(Finding(part=finding.part, criterion="integrity", voids_part=True,
                                 message=f"Part {finding.part} {sentences[finding.criterion]}; {complete.advice}",
                                 expected=finding.expected, actual=finding.actual, code="integrity.edited_export"))
    return found


def grade(bundle: Bundle, lab: GradingLab, rubric: Rubric, replay: Replayer, *, mlsysim_version: str, grader_version: str,
          checks: Sequence[Check] = CHECKS, importer_findings: Sequence[Finding] = (), excuses: Sequence[Excuse] = (),
          only_when_complete: OnlyWhenComplete | None = None) -> GradeReport:
    """Grade one validated bundle with ``checks`` (every registered check by default), replaying its records through
    ``replay``; never raises for a bad submission.

    The importer's ``importer_findings`` join the checks' findings, ``excuses`` remove the findings they name
    (leaving a note), and ``only_when_complete`` reads the result as a source written only once complete; then
    the findings are scored once.
    """
    ctx = build_context(bundle, lab, rubric, replay, mlsysim_version=mlsysim_version, grader_version=grader_version)
    findings = _excused([finding for check in checks for finding in _run_check(check, ctx)], excuses)
    findings += [*importer_findings, *_contradictions(findings, lab, only_when_complete)]
    order = finding_order(lab)
    findings.sort(key=lambda f: order[f.part])
    parts = score(findings, rubric)
    parts["synthesis"] = with_verdicts(parts["synthesis"], rationale_verdicts(ctx))  # from the reading the check made
    return GradeReport(
        lab=bundle.lab,
        track=bundle.track,
        score=round(sum(p.score for p in parts.values()), 6),
        max_score=rubric.max_score,
        parts=parts,
        findings=findings,
        flags=staff_flags(findings),
        content_hash=bundle.content_hash,
        versions={"mlsysim": mlsysim_version, "mlsys_grader": grader_version,
                  "rubric": f"{rubric.lab}-v{rubric.version}-{rubric.digest}",
                  "bundle_mlsysim": bundle.mlsysim_version or "unknown"},
        rationale_spans=ctx.reading.spans if ctx.reading is not None else (),
        template_match=template_match(ctx),
    )


def ungradable_report(lab_id: str, rubric: Rubric, finding: Finding) -> GradeReport:
    """The zero report of a submission that cannot be graded for ``lab_id`` (track ``none``): every part voided,
    ``finding`` (one submission-level sentence saying why and what to do) its one finding, scored and flagged here."""
    parts = score([finding], rubric, void=(*rubric.parts, "synthesis"))
    return GradeReport(lab=lab_id, track="none", score=round(sum(part.score for part in parts.values()), 6),
                       max_score=rubric.max_score, parts=parts, findings=[finding], flags=staff_flags([finding]))
