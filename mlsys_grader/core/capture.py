"""Build evidence records and bundles from controls — what the notebook and ``solve`` share."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

from .labspec import LabSpec, PartPlan
from .models import PARTS, Bundle, EvidenceRecord, Synthesis


def record_from_plan(
    lab: LabSpec, track: str, plan: PartPlan, prediction: str | None, *,
    mlsysim_version: str, grader_version: str,
    prediction_locked_at: datetime | None, result_shown_at: datetime | None, captured_at: datetime | None,
) -> EvidenceRecord:
    """The evidence record the seeds' ``capture_evidence`` would keep, plus provenance."""
    return EvidenceRecord(
        track=track, part=plan.part, prediction=prediction, inputs=plan.upstream,
        baseline=plan.baseline, result=plan.result, alternatives=list(plan.alternatives),
        decision=plan.decision, model_key=plan.model_key, chosen_result=plan.chosen_result,
        result_role=plan.result_role, upstream_fingerprint=lab.fingerprint(track, plan.part, plan.upstream),
        lab=lab.lab_id, mlsysim_version=mlsysim_version, grader_version=grader_version,
        captured_at=captured_at, prediction_locked_at=prediction_locked_at, result_shown_at=result_shown_at,
    )


def plan_all(lab: LabSpec, track: str, controls: Mapping[str, Mapping[str, Any]]) -> dict[str, PartPlan]:
    """Plans for every part, in dependency order."""
    plans: dict[str, PartPlan] = {}
    for part in PARTS:
        upstream = {dep: plans[dep].result for dep in lab.parts[part].depends_on}
        plans[part] = lab.plan(track, part, lab.parts[part].check_controls(controls[part]), upstream)
    return plans


def bundle_from_controls(
    lab: LabSpec, track: str, controls: Mapping[str, Mapping[str, Any]], *, mlsysim_version: str, grader_version: str,
    rng: random.Random | None = None, start: datetime | None = None,
) -> Bundle:
    """A complete bundle for these controls: right predictions, locked first, and a reference synthesis."""
    names = rng or random.Random(0)
    clock = start or datetime(2026, 1, 1, tzinfo=timezone.utc)
    plans = plan_all(lab, track, controls)
    evidence: dict[str, EvidenceRecord] = {}
    for index, part in enumerate(PARTS):
        accepted = sorted(lab.accepted_predictions(track, part, plans[part]))
        locked = clock + timedelta(minutes=10 * index)
        evidence[part] = record_from_plan(
            lab, track, plans[part], names.choice(accepted), mlsysim_version=mlsysim_version, grader_version=grader_version,
            prediction_locked_at=locked, result_shown_at=locked + timedelta(seconds=5), captured_at=locked + timedelta(minutes=2),
        )
    synthesis = Synthesis(**lab.reference_synthesis(track, plans, names))
    bundle = Bundle(lab=lab.lab_id, track=track, controls={part: dict(controls[part]) for part in PARTS},
                    evidence=evidence, synthesis=synthesis, mlsysim_version=mlsysim_version,
                    grader_version=grader_version, created_at=clock + timedelta(hours=1))
    return bundle.sealed()


def solve(lab: LabSpec, track: str, seed: int | None, *, mlsysim_version: str, grader_version: str,
          start: datetime | None = None) -> Bundle:
    """A complete bundle as a diligent student produces it; ``seed`` draws controls across the domain."""
    rng = random.Random(seed) if seed is not None else None
    controls = {part: lab.sample_controls(track, part, rng) for part in PARTS}
    return bundle_from_controls(lab, track, controls, mlsysim_version=mlsysim_version, grader_version=grader_version,
                                rng=random.Random(seed if seed is not None else 0), start=start)
