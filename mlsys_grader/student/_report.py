"""The closing "Local evidence report", as the book's labs end: built from the saved bundle.

The seeds close with ``build_lab_report``: track and scenario, learning objectives, each
part's prediction, settings and evidence, the decision and its rationale, the big
takeaways and a source trace.  This is the same report for the notebook, made from what
the student saved (``<lab>-submission.json``) and the grader's public verdicts, so it
shows exactly what will be graded and says plainly what is still missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.grading import RECAPTURE_CRITERIA
from ..core.labspec import PartPlan
from ..core.models import Bundle, EvidenceRecord, PartId, part_key
from ..core.report import render_html
from ._advice import literal
from ._views import VIEWS

if TYPE_CHECKING:
    from ._session import LabSession


@dataclass(frozen=True)
class PartEvidence:
    """One row of the report: what the student chose and what the saved evidence shows."""

    part: str
    question: str
    prediction: str
    settings: str
    evidence: str
    decision: str
    status: str


@dataclass(frozen=True)
class EvidenceReport:
    """The report as data (``parts``, ``decision`` …) with a plain-text and an HTML rendering."""

    title: str
    track: str
    scenario: str
    objectives: tuple[str, ...]
    parts: tuple[PartEvidence, ...]
    decision: tuple[tuple[str, str], ...]
    rationale: str
    takeaways: tuple[str, ...]
    source: str
    missing: tuple[str, ...] = field(default=())

    @property
    def complete(self) -> bool:
        return not self.missing

    def __repr__(self) -> str:
        lines = [f"Local evidence report · {self.title} · track {self.track}", f"Scenario: {self.scenario}",
                 "Learning objectives:", *(f"  - {o}" for o in self.objectives), "Evidence:"]
        for row in self.parts:
            lines += [f"  Part {row.part} · {row.question}", f"    prediction: {row.prediction}",
                      f"    settings: {row.settings}", f"    evidence: {row.evidence}"]
            if row.decision:
                lines.append(f"    decision: {row.decision}")
            lines.append(f"    status: {row.status}")
        lines += ["Decision:", *(f"  {name}: {value}" for name, value in self.decision), f"  rationale: {self.rationale or '—'}",
                  "Big takeaways:", *(f"  - {t}" for t in self.takeaways), f"Source trace: {self.source}"]
        lines.append("Ready to submit." if self.complete else "Still to do: " + "; ".join(self.missing))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return render_html("evidence_report.html", report=self)


def _observation(session: LabSession, part: str, record: EvidenceRecord) -> str:
    """The result sentence the notebook showed for this record, rebuilt from its saved arms."""
    plan = PartPlan(part=part, model_key=record.model_key, upstream=dict(record.inputs), baseline=record.baseline or {},
                    result=record.result or {}, alternatives=list(record.alternatives), decision=record.decision,
                    chosen_result=record.chosen_result, result_role=record.result_role)
    try:
        return VIEWS[(session.lab_id, part)](plan, session.track).observation
    except (KeyError, TypeError, ValueError, IndexError, ArithmeticError):  # a record edited outside the notebook
        return "This record cannot be shown as the notebook shows it; recapture the part."


def _settings(session: LabSession, part: PartId, record: EvidenceRecord, saved: Bundle) -> tuple[str, dict[str, Any]]:
    """(settings the evidence was captured with, as the notebook writes them; the decision controls' values)."""
    spec = session.lab.parts[part]
    inferred = session.lab.infer_controls(session.replay, session.track, part, record)
    controls = inferred[0] if inferred else dict(saved.controls.get(part, {}))
    shown = [f"{c.name} = {literal(controls.get(c.name))}" for c in spec.controls if not c.decision and c.name in controls]
    decisions = {c.name: controls.get(c.name) for c in spec.controls if c.decision}
    upstream = [f"built on part {dep}" for dep in spec.depends_on]
    return ", ".join(shown + upstream), decisions


def _decision_text(session: LabSession, part: str, decisions: dict[str, Any]) -> str:
    words = {name: session.lab.decision_labels.get((part, name), {}).get(value) or literal(value)
             for name, value in decisions.items()}
    if len(words) == 1:
        return next(iter(words.values()))
    return "; ".join(f"{name}: {label}" for name, label in words.items())


def evidence_report(session: LabSession) -> EvidenceReport:
    """The report for ``session``'s saved bundle (an empty bundle gives a report of what is still to do)."""
    saved = session._saved if session._saved is not None else Bundle(lab=session.lab_id, track=session.track)
    public = session._full_report().public()
    missing: list[str] = []
    rows = []
    for part in map(part_key, session.lab.part_ids()):
        spec = session.lab.parts[part]
        record = saved.evidence.get(part)
        findings = public.findings_for(part)
        if record is None:
            rows.append(PartEvidence(part, spec.question, "—", "—", "Not captured yet.", "", "missing"))
            missing.append(f"Part {part}: lock a prediction, run the part and capture it.")
            continue
        settings, decisions = _settings(session, part, record, saved)
        stale = [f for f in findings if f.criterion in RECAPTURE_CRITERIA]
        status = "STALE: recapture" if any(f.criterion == "stale" for f in stale) else \
            "not contrasting: recapture" if stale else "fresh"
        missing += [f"Part {part}: {f.message}" for f in stale]
        rows.append(PartEvidence(part, spec.question, spec.predictions.get(record.prediction or "", "—"), settings,
                                 _observation(session, part, record), _decision_text(session, part, decisions), status))
    options = session.synthesis_options()
    answers = saved.synthesis.model_dump()
    decision = list(session.lab.captured_decision(saved))
    names = {"recommendation": "Recommendation", "rejected_alternative": "Rejected alternative",
             "reevaluation_trigger": "Re-evaluation trigger", "residual_risk": "Remaining limitation"}
    for name, choices in options.items():
        value = answers.get(name)
        decision.append((names.get(name, name), choices.get(value, "—") if value else "—"))
    rationale = (saved.synthesis.rationale or "").strip()
    missing += [f"Synthesis: {f.message}" for f in public.findings_for("synthesis")]
    facts = session.lab.track_facts(session.track)
    return EvidenceReport(
        title=session.lab.title.replace(" — ", ": "), track=session.track, scenario=facts.get("scenario", ""),
        objectives=session.lab.learning_objectives, parts=tuple(rows), decision=tuple(decision),
        rationale=rationale, takeaways=session.lab.big_takeaways,
        source=session.lab.source_trace, missing=tuple(dict.fromkeys(missing)))
