"""Build evidence records and bundles from controls — what the notebook and ``solve`` share."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .labspec import LabSpec, PartPlan
from .models import Bundle, EvidenceRecord, PartId, PartRun, Scalar, Synthesis, part_key


def record_from_plan(
    lab: LabSpec, track: str, plan: PartPlan, prediction: str | None, *,
    mlsysim_version: str, grader_version: str,
    prediction_locked_at: datetime | None, result_shown_at: datetime | None, captured_at: datetime | None,
) -> EvidenceRecord:
    """The evidence record the seeds' ``capture_evidence`` would keep, plus provenance."""
    return EvidenceRecord(
        track=track, part=part_key(plan.part), prediction=prediction, inputs=plan.upstream,
        baseline=plan.baseline, result=plan.result, alternatives=list(plan.alternatives),
        decision=plan.decision, model_key=plan.model_key, chosen_result=plan.chosen_result,
        result_role=plan.result_role, upstream_fingerprint=lab.fingerprint(track, plan.part, plan.upstream),
        lab=lab.lab_id, mlsysim_version=mlsysim_version, grader_version=grader_version,
        captured_at=captured_at, prediction_locked_at=prediction_locked_at, result_shown_at=result_shown_at,
    )


def plan_all(lab: LabSpec, track: str, controls: Mapping[str, Mapping[str, Any]]) -> dict[str, PartPlan]:
    """Plans for every part of the lab, in its order (a part depends only on parts before it)."""
    plans: dict[str, PartPlan] = {}
    for part in lab.part_ids():
        upstream = {dep: plans[dep].result for dep in lab.parts[part].depends_on}
        plans[part] = lab.plan(track, part, lab.parts[part].check_controls(controls[part]), upstream)
    return plans


# A session as a student works it: a few minutes reading before each part's prediction is
# locked, seconds until the run shows the result, minutes exploring before the capture.
READ_BEFORE_LOCK_S = (90, 480)
LOCK_TO_SHOWN_S = (3, 90)
SHOWN_TO_CAPTURE_S = (45, 540)
WRITING_SYNTHESIS_S = (240, 1200)


def _seconds(rng: random.Random, bounds: tuple[int, int]) -> timedelta:
    """A random span within ``bounds`` seconds, to the microsecond (as a notebook's clock stamps)."""
    return timedelta(seconds=rng.uniform(*bounds))


def session_start(rng: random.Random) -> datetime:
    """A plausible time to open the notebook: some day of a four-week term, between 08:00 and 22:00 UTC."""
    return datetime(2026, 1, 5, 8, tzinfo=UTC) + timedelta(days=rng.randrange(28), seconds=rng.uniform(0, 14 * 3600))


def session_times(rng: random.Random, start: datetime,
                  parts: Iterable[str]) -> tuple[dict[PartId, tuple[datetime, datetime, datetime]], datetime]:
    """Per part of ``parts`` (locked, shown, captured), in that order, and when the bundle is written."""
    times: dict[PartId, tuple[datetime, datetime, datetime]] = {}
    moment = start
    for part in map(part_key, parts):
        locked = moment + _seconds(rng, READ_BEFORE_LOCK_S)
        shown = locked + _seconds(rng, LOCK_TO_SHOWN_S)
        moment = shown + _seconds(rng, SHOWN_TO_CAPTURE_S)
        times[part] = (locked, shown, moment)
    return times, moment + _seconds(rng, WRITING_SYNTHESIS_S)


def _run_controls(lab: LabSpec, part: str, controls: Mapping[str, Any]) -> dict[str, Scalar]:
    """The controls a run takes (``lab.run``): the part's own, without the decisions set at capture."""
    return {control.name: controls[control.name] for control in lab.parts[part].controls if not control.decision}


def bundle_from_controls(
    lab: LabSpec, track: str, controls: Mapping[str, Mapping[str, Any]], *, mlsysim_version: str, grader_version: str,
    rng: random.Random | None = None, start: datetime | None = None, session_rng: random.Random | None = None,
) -> Bundle:
    """A complete bundle for these controls: right predictions, locked first, and a reference synthesis.

    ``rng`` draws the predictions and the synthesis answers; ``session_rng`` draws the
    session's times (by default seeded from ``rng``, after those draws), starting at
    ``start`` if given.
    Each part's run log says what the record implies: the first run after the lock used
    the captured controls and showed the result at ``result_shown_at``.
    """
    names = rng or random.Random(0)
    plans = plan_all(lab, track, controls)
    parts = [part_key(part) for part in lab.part_ids()]
    predictions = {part: names.choice(sorted(lab.accepted_predictions(track, part, plans[part]))) for part in parts}
    synthesis = Synthesis(**lab.reference_synthesis(track, plans, names))
    session_rng = session_rng or random.Random(names.getrandbits(64))
    times, created = session_times(session_rng, start if start is not None else session_start(session_rng), parts)
    evidence: dict[PartId, EvidenceRecord] = {}
    runs: dict[PartId, PartRun] = {}
    for part in parts:
        locked, shown, captured = times[part]
        evidence[part] = record_from_plan(
            lab, track, plans[part], predictions[part], mlsysim_version=mlsysim_version, grader_version=grader_version,
            prediction_locked_at=locked, result_shown_at=shown, captured_at=captured,
        )
        upstream = {part_key(dep): _run_controls(lab, dep, controls[dep]) for dep in lab.parts[part].depends_on}
        runs[part] = PartRun(prediction=predictions[part], prediction_locked_at=locked, first_shown_at=shown,
                             first_run_controls=_run_controls(lab, part, controls[part]), first_run_at=shown,
                             first_run_upstream=upstream or None)
    bundle = Bundle(lab=lab.lab_id, track=track, controls={part: dict(controls[part]) for part in parts},
                    evidence=evidence, synthesis=synthesis, runs=runs, mlsysim_version=mlsysim_version,
                    grader_version=grader_version, created_at=created)
    return bundle.sealed()


def solve(lab: LabSpec, track: str, seed: int | None, *, mlsysim_version: str, grader_version: str,
          start: datetime | None = None) -> Bundle:
    """A complete bundle as a diligent student produces it; ``seed`` draws controls across the domain.

    The session's times come from the lab, track and seed too, so two seeds (or two tracks)
    are two sessions, never one session's copy; ``seed=None`` gives the defaults and its own
    fixed session per lab and track.
    """
    rng = random.Random(seed) if seed is not None else None
    controls: dict[str, dict[str, Any]] = {part: lab.sample_controls(track, part, rng) for part in lab.part_ids()}
    # A string seed is hashed with SHA-512 by ``random``: the same session in every run.
    session_rng = random.Random(f"mlsys-grader solve session {lab.lab_id} {track} {seed}")
    return bundle_from_controls(lab, track, controls, mlsysim_version=mlsysim_version, grader_version=grader_version,
                                rng=random.Random(seed if seed is not None else 0), start=start, session_rng=session_rng)
