"""Evidence records from a lab's plans — what the notebook, the generated-text check and staff's ``solve`` share.

Writing a whole bundle from controls (``solve``) is staff-only and lives in
:mod:`mlsys_grader.staff`, which the student build of the package leaves out; what the
public self-check needs (the plans the grader's template is rendered from) stays here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .models import EvidenceRecord, part_key
from .replayer import Replayer
from .roles import LabRules
from .seal import BOOK_RESULT_ROLE, FIRST_BOOK_SEALED_SCHEMA, legacy_fingerprint
from .values import PartPlan


def record_from_plan(
    lab: LabRules, track: str, plan: PartPlan, prediction: str | None, *,
    mlsysim_version: str, grader_version: str,
    prediction_locked_at: datetime | None, result_shown_at: datetime | None, captured_at: datetime | None,
) -> EvidenceRecord:
    """The evidence record the book's ``capture_evidence`` keeps (its default ``result_role``, its seal), plus provenance."""
    return EvidenceRecord(
        track=track, part=part_key(plan.part), prediction=prediction, inputs=dict(plan.upstream),
        baseline=plan.baseline, result=plan.result, alternatives=list(plan.alternatives),
        decision=plan.decision, model_key=plan.model_key, chosen_result=plan.chosen_result,
        result_role=plan.result_role or BOOK_RESULT_ROLE, upstream_fingerprint=lab.fingerprint(track, plan.part, plan.upstream),
        lab=lab.lab_id, mlsysim_version=mlsysim_version, grader_version=grader_version,
        captured_at=captured_at, prediction_locked_at=prediction_locked_at, result_shown_at=result_shown_at,
    )


def book_sealed(lab: LabRules, read_version: int, record: EvidenceRecord) -> EvidenceRecord:
    """A record of a bundle written with schema ``read_version``, sealed as the book seals a capture.

    A record of a bundle before schema 3 whose own fingerprint (:func:`.seal.legacy_fingerprint`) verifies over its
    inputs gets the book's seal of them (what the book would have sealed at capture); any other record is returned as
    it is, so a record whose seal does not cover its inputs stays stale.
    """
    if read_version >= FIRST_BOOK_SEALED_SCHEMA or record.upstream_fingerprint != legacy_fingerprint(
            lab.lab_id, record.track, record.part, record.inputs):
        return record
    return record.model_copy(update={"upstream_fingerprint": lab.fingerprint(record.track, record.part, record.inputs)})


def plan_all(lab: LabRules, replay: Replayer, track: str, controls: Mapping[str, Mapping[str, Any]]) -> dict[str, PartPlan]:
    """Plans for every part of the lab, in its order (a part depends only on parts before it), through ``replay``."""
    plans: dict[str, PartPlan] = {}
    for part in lab.part_ids():
        upstream = {dep: plans[dep].result for dep in lab.parts[part].depends_on}
        plans[part] = lab.plan(replay, track, part, lab.parts[part].check_controls(controls[part]), upstream)
    return plans
