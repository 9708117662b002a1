"""Lab 02's reference answers: contrasting controls, decisions the rules accept, the synthesis ``solve`` writes.

``reference_rationale`` is the only place the wording of the template rationale lives: the ``generated`` check
re-renders it from a bundle's replayed plans.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import PartPlan, hand_written_answers

from .rules import BASELINE_DUTY_CYCLE, CANDIDATES, PARTS
from .words import LIMITATIONS, PLACEMENTS, TRIGGERS

if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab
    from mlsys_grader.core.replayer import Replayer


def sample_controls(lab: Lab, replay: Replayer, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
    """Valid, contrasting controls (never the reference run's own setting); ``None`` gives the defaults."""
    spec = PARTS[part]
    controls = spec.defaults() if rng is None else {control.name: control.sample(rng) for control in spec.controls}
    if part == "A" and (controls["payload"], controls["connection"]) == ("smallest", "fastest"):
        controls["payload"] = rng.choice(("middle", "largest")) if rng else "largest"
    if part == "B" and controls["memory_scale"] == 1.0 and controls["execution_scale"] == 1.0:
        controls["execution_scale"] = 2.0
    if part == "C":
        while controls["duty_cycle"] == BASELINE_DUTY_CYCLE[track]:
            controls["duty_cycle"] = spec.control("duty_cycle").sample(rng) if rng else 0.75
    return complete_decision(lab, replay, track, part, controls, rng)


def complete_decision(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                      rng: random.Random | None) -> dict[str, Any]:
    """``controls`` with a placement decision the lab's rules accept whatever part A's payload and link: local
    execution (every track's local design fits its memory and deadline), rejecting a remote design (drawn with ``rng``,
    else raw input)."""
    controls = dict(controls)
    if part != "D":
        return controls
    controls["choice"] = "local"
    controls["rejected"] = rng.choice(CANDIDATES[1:]) if rng else "raw"
    return controls


def _design(lab: Lab, name: str) -> str:
    return lab.option(PLACEMENTS, name).label.lower()


def reference_rationale(lab: Lab, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
    """The rationale ``solve`` writes for these plans, trigger and limitation (values from the lab's lists).

    The ``generated`` check re-renders it from a bundle's replayed plans, whose part D decision may be anything a
    record held: an unknown choice reads as "none" and an unknown rejected design as raw input.
    """
    a, b, c, d = plans["A"].result, plans["B"].result, plans["C"].result, plans["D"]
    designs = dict(zip(CANDIDATES, d.alternatives, strict=False))
    choice = d.decision if d.decision in (*CANDIDATES, "none") else "none"
    rejected = d.upstream.get("rejected") if isinstance(d.upstream, Mapping) else None
    rejected = rejected if rejected in designs else "raw"
    gone = designs[rejected]
    latency = "unavailable" if gone["latency_ms"] is None else f"{gone['latency_ms']} ms"
    verdict = "satisfies every requirement" if gone["feasible"] else "fails " + " and ".join(gone["violations"])
    return (
        f"I recommend {_design(lab, choice) if choice in designs else 'no feasible design'} and reject "
        f"{_design(lab, rejected)}. "
        f"Evidence from part D: the rejected design came out at latency {latency}, upload {gone['uploaded_payload_mb']} MB, "
        f"information {gone['retained_information_pct']}%, outcome {verdict}. "
        f"Evidence from part A: payload {a['raw_payload_mb']} MB, link {a['connection_mbps']} Mb/s, remote total "
        f"{a['remote_latency_ms']} ms against a deadline of {a['deadline_ms']} ms. "
        f"Evidence from part B: memory needed {b['required_memory_mb']} MB against {b['memory_capacity_mb']} MB, execution "
        f"{b['execution_ms']} ms. "
        f"Evidence from part C: duty setting {c['duty_cycle']}, mean draw {c['average_power_w']} W against an allowed "
        f"{c['average_power_budget_w']} W. "
        f"Remaining limitation: {lab.option(LIMITATIONS, limitation).label.lower()}. "
        f"Re-evaluation trigger: {lab.option(TRIGGERS, trigger).label.lower()}."
    )


def reference_synthesis(lab: Lab, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
    """Synthesis answers a diligent student would give for these plans (the template rationale included): part D's
    captured placement recommended, its rejected design rejected."""
    d = plans["D"]
    trigger, risk = rng.choice(TRIGGERS), rng.choice(LIMITATIONS)
    return {
        "recommendation": d.decision,
        "rejected_alternative": d.upstream["rejected"],
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
