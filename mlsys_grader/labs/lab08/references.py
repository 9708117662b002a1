"""Lab 08's reference answers: contrasting controls, decisions the rules accept, the synthesis ``solve`` writes.

``reference_rationale`` is the only place the wording of the template rationale lives: the ``generated`` check
re-renders it from a bundle's replayed plans.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import PartPlan, hand_written_answers

from .rules import FIXES, PARTS
from .words import LIMITATIONS, RECOMMENDATIONS, TRIGGERS

if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab
    from mlsys_grader.core.replayer import Replayer


def sample_controls(lab: Lab, replay: Replayer, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
    """Valid, contrasting controls (every offered setting differs from its part's baseline); ``None`` gives the defaults."""
    spec = PARTS[part]
    controls = spec.defaults() if rng is None else {control.name: control.sample(rng) for control in spec.controls}
    return complete_decision(lab, replay, track, part, controls, rng)


def ranked_fixes(lab: Lab, replay: Replayer, track: str) -> list[str]:
    """Part E's fixes, the one cutting update time most first (from the comparisons every part E plan holds)."""
    comparisons = lab.plan(replay, track, "E", {"intervention": None, "rejected_alternative": None}, {}).alternatives
    return [c["intervention"] for c in sorted(comparisons, key=lambda c: c["delta_update_time_ms"])]


def complete_decision(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                      rng: random.Random | None) -> dict[str, Any]:
    """``controls`` with part E's fix (or a hold) and a different tested alternative: drawn with ``rng``, else the fix
    that cuts update time most, rejecting the runner-up."""
    controls = dict(controls)
    if part != "E":
        return controls
    if rng is None:
        ranked = ranked_fixes(lab, replay, track)
        controls["intervention"], controls["rejected_alternative"] = ranked[0], ranked[1]
        return controls
    intervention = rng.choice((*FIXES, "none"))
    controls["intervention"] = intervention
    controls["rejected_alternative"] = rng.choice([fix for fix in FIXES if fix != intervention])
    return controls


def reference_choices(plans: Mapping[str, PartPlan]) -> tuple[str, str]:
    """(recommendation, rejected) that ``solve`` answers: part E's saved decision and the alternative it names, else the
    tested fix other than the chosen one that cuts update time most (a hold that names none, which the book never
    captures, included: its template still names a tested fix, so the ``generated`` check reads it like any other)."""
    e = plans["E"]
    decision, rejected = e.decision, (e.upstream or {}).get("rejected_alternative")
    if rejected in FIXES and rejected != decision:
        return str(decision), str(rejected)
    others = sorted((c for c in e.alternatives if c["intervention"] != decision), key=lambda c: c["delta_update_time_ms"])
    return str(decision), str(others[0]["intervention"])


def reference_rationale(lab: Lab, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
    """The rationale ``solve`` writes for these plans, trigger and limitation (values from the lab's lists)."""
    a, b, c, d, e = (plans[p] for p in "ABCDE")
    recommendation, rejected = reference_choices(plans)
    rec_label = lab.option(RECOMMENDATIONS, recommendation).label
    rej_label = lab.option(RECOMMENDATIONS, rejected).label
    trigger_label = lab.option(TRIGGERS, trigger).label
    risk_label = lab.option(LIMITATIONS, limitation).label
    comparison = {x["intervention"]: x for x in e.alternatives}
    rej = comparison[rejected]
    b_time = b.result["total_time_seconds"]
    b_text = f"{b_time:.3f} s" if b_time is not None else "none (the target is missed)"
    return (
        f"I recommend {rec_label.lower()} and reject {rej_label.lower()}. "
        f"Evidence from part A: the AdamW arm records optimizer_state_gb = {a.alternatives[2]['memory']['optimizer_state_gb']:.3f} GB "
        f"and total_memory_gb = {a.alternatives[2]['memory']['total_memory_gb']:.3f} GB. "
        f"Evidence from part B: the {b.result['timing']['physical_batch']} x {b.result['timing']['accumulation_steps']} arm "
        f"records update_time_ms = {b.result['timing']['update_time_ms']:.3f} ms and a time to target of {b_text}. "
        f"Evidence from part C: the {c.result['memory']['precision']} arm records total_memory_gb = "
        f"{c.result['memory']['total_memory_gb']:.3f} GB against {c.baseline['memory']['total_memory_gb']:.3f} GB for fp32. "
        f"Evidence from part D: the {d.result['checkpointing']} ledger records total_memory_gb = {d.result['total_memory_gb']:.3f} GB "
        f"against {d.baseline['total_memory_gb']:.3f} GB without checkpointing. "
        f"Evidence from part E: the {rejected} comparison records delta_update_time_ms = {rej['delta_update_time_ms']:.3f} ms. "
        f"Remaining limitation: {risk_label.lower()}. Re-evaluation trigger: {trigger_label.lower()}."
    )


def reference_synthesis(lab: Lab, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
    """Synthesis answers a diligent student would give for these plans (the template rationale included)."""
    recommendation, rejected = reference_choices(plans)
    trigger = rng.choice(TRIGGERS)
    risk = rng.choice(LIMITATIONS)
    return {
        "recommendation": recommendation,
        "rejected_alternative": rejected,
        "reevaluation_trigger": trigger.value,
        "residual_risk": risk.value,
        "rationale": reference_rationale(lab, track, plans, trigger.value, risk.value),
    }


def _answers() -> Mapping[str, Mapping[str, Any]]:
    from .answers import ANSWERS  # left out of the student build and the Gradescope image

    return ANSWERS


def reference_answers(lab: Lab, track: str) -> dict[str, Any]:
    """The hand-written synthesis answers for the default bundle on ``track`` (:mod:`.answers`), in schema order."""
    return hand_written_answers(lab.lab_id, track, _answers)
