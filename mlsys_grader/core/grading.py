"""Run every check on a bundle and score the findings against the rubric."""

from __future__ import annotations

from .audits import CHECKS
from .context import build_context
from .labspec import LabSpec
from .models import PARTS, Bundle
from .report import INTEGRITY_CRITERIA, Finding, GradeReport, ItemScore, PartScore
from .rubric import Rubric

FLAG_CRITERIA = {"stale": "stale", "missing": "missing", "version": "version_drift"}


def score(findings: list[Finding], rubric: Rubric) -> dict[str, PartScore]:
    """Points per part: an item earns its points unless a finding costs it; a missing part earns nothing."""
    lost = {(f.part, f.rubric_item) for f in findings if f.rubric_item}
    missing = {f.part for f in findings if f.criterion == "missing"}
    parts: dict[str, PartScore] = {}
    for name, items in [*rubric.parts.items(), ("synthesis", rubric.synthesis)]:
        scored = [
            ItemScore(item=item, points=0.0 if name in missing or (name, item) in lost else points, max_points=points)
            for item, points in items.items()
        ]
        parts[name] = PartScore(part=name, score=sum(i.points for i in scored), max_score=sum(i.max_points for i in scored), items=scored)
    return parts


def staff_flags(findings: list[Finding]) -> list[str]:
    """Flags for staff: ``integrity`` for replay/domain/version failures or an edited bundle;
    ``version_drift`` too when evidence came from another mlsysim; then ``stale``, ``missing``."""
    flags = set()
    for finding in findings:
        if finding.criterion in INTEGRITY_CRITERIA or (finding.part == "bundle" and finding.criterion == "format"):
            flags.add("integrity")
        if finding.criterion in FLAG_CRITERIA:
            flags.add(FLAG_CRITERIA[finding.criterion])
    return sorted(flags)


def grade(bundle: Bundle, lab: LabSpec, rubric: Rubric, *, mlsysim_version: str, grader_version: str) -> GradeReport:
    """Grade one validated bundle; never raises for a bad submission."""
    ctx = build_context(bundle, lab, rubric, mlsysim_version=mlsysim_version, grader_version=grader_version)
    findings = [finding for check in CHECKS for finding in check(ctx)]
    order = {name: index for index, name in enumerate((*PARTS, "synthesis", "bundle"))}
    findings.sort(key=lambda f: order[f.part])
    parts = score(findings, rubric)
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
    )
