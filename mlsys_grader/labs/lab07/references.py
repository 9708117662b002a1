"""Lab 07's reference answers: contrasting controls, decisions the rules accept, the synthesis ``solve`` writes.

``reference_rationale`` is the only place the wording of the template rationale lives:
the ``generated`` check re-renders it from a bundle's replayed plans.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import PartPlan, hand_written_answers

from .rules import PARTS
from .words import LIMITATIONS, RECOMMENDATIONS, TRIGGERS

if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab
    from mlsys_grader.core.replayer import Replayer


def sample_controls(lab: Lab, replay: Replayer, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
    """Valid, contrasting controls (part E never the baseline's relu + static); ``None`` gives the defaults."""
    spec = PARTS[part]
    if rng is None:
        controls = spec.defaults()
    else:
        controls = {control.name: control.sample(rng) for control in spec.controls}
    if part == "E":
        while controls["operator"] == "relu" and controls["shape_mode"] == "static":
            controls["operator"] = rng.choice(spec.control("operator").choices[1:]) if rng else "host_callback"
        controls = complete_decision(lab, replay, track, part, controls, rng)
    return controls


def complete_decision(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                      rng: random.Random | None) -> dict[str, Any]:
    """``controls`` with a decision the lab's rules accept (drawn with ``rng``, else the first)."""
    controls = dict(controls)
    if part != "E":
        return controls
    executable = lab.plan(replay, track, "E", {**controls, "decision": "selected"}, {}).result["executable"]
    options = ("selected", "hold") if executable else ("none", "hold")
    controls["decision"] = rng.choice(options) if rng else options[0]
    return controls


def reference_choices(plans: Mapping[str, PartPlan]) -> tuple[str, str]:
    """(recommendation, rejected) that ``solve`` answers for these plans."""
    decision = plans["E"].decision
    if decision in ("none", "hold"):
        return decision, "compiled_fused"
    if plans["B"].result["compilation_repaid"]:
        return "compiled_fused", "eager"
    return "eager", "compiled_fused"


def reference_rationale(lab: Lab, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
    """The rationale ``solve`` writes for these plans, trigger and limitation (values from the lab's lists)."""
    b, c, d, e = plans["B"].result, plans["C"], plans["D"], plans["E"]
    recommendation, rejected = reference_choices(plans)
    rec_label = lab.option(RECOMMENDATIONS, recommendation).label
    rej_label = lab.option(RECOMMENDATIONS, rejected).label
    trigger_words = lab.option(TRIGGERS, trigger).keywords[0]
    risk_label = lab.option(LIMITATIONS, limitation).label
    return (
        f"I recommend {rec_label.lower()} and reject {rej_label.lower()}. "
        f"Evidence from part B: {b['executions']} executions with {b['compilation_count']} compilation(s) give a compiled "
        f"total of {b['compiled_total_ms']:.3f} ms and an eager total of {b['eager_total_ms']:.3f} ms. "
        f"Evidence from part C: with {c.result['graph_breaks']} graph break(s) left, fusion eliminates "
        f"{c.result['eliminated_traffic_mb']:.3f} MB of graph traffic. "
        f"Evidence from part D: the {d.result['policy']} recomputation policy retains {d.result['retained_activation_mb']:.3f} MB "
        f"of activations where retaining all of them needs {d.baseline['retained_activation_mb']:.3f} MB. "
        f"Evidence from part E: the inserted {e.result['operator']} operator with {e.result['shape_mode']} shapes takes the "
        f"{e.result['status']} path. "
        f"Remaining limitation: {risk_label.lower()}. Re-evaluation trigger: the {trigger_words} changes."
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
