"""Lab 11's reference answers: contrasting controls, decisions the rules accept, the synthesis ``solve`` writes.

``reference_rationale`` is the only place the wording of the template rationale lives:
the ``generated`` check re-renders it from a bundle's replayed plans.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import PartPlan, hand_written_answers

from .rules import PARTS, feasible_candidates
from .words import LIMITATIONS, TRIGGERS, candidate_terms

if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab
    from mlsys_grader.core.replayer import Replayer


def sample_controls(lab: Lab, replay: Replayer, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
    """Valid, contrasting controls (never the baseline's own setting); ``None`` gives the defaults."""
    spec = PARTS[part]
    draw = (lambda control: control.sample(rng)) if rng else (lambda control: control.default)
    controls = {control.name: draw(control) for control in spec.controls}
    if part == "B":
        while controls["tile"] == "baseline" and not controls["fused"]:
            controls["fused"] = True
    if part == "C" and controls["shape"] == "aligned" and controls["operation"] == "gemm":
        controls = {"shape": "misaligned", "operation": "gemm"} if rng is None else rng.choice(
            [{"shape": "misaligned", "operation": "gemm"}, {"shape": "aligned", "operation": "scatter"},
             {"shape": "misaligned", "operation": "scatter"}])
    return complete_decision(lab, replay, track, part, controls, rng)


def complete_decision(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                      rng: random.Random | None) -> dict[str, Any]:
    """``controls`` with a decision the lab's rules accept (drawn with ``rng``, else the first)."""
    controls = dict(controls)
    if part != "E":
        return controls
    probe = lab.plan(replay, track, "E", {**controls, "choice": "none", "rejected": "primary"}, {})
    feasible = feasible_candidates(probe)
    options = [(name, "alternative" if name == "primary" else "primary") for name, ok in feasible.items() if ok]
    if feasible.get("primary"):
        options.append(("hold", "alternative"))
    if not options:
        options = [("none", "primary"), ("none", "alternative")]
    controls["choice"], controls["rejected"] = rng.choice(options) if rng else options[0]
    return controls


def reference_rationale(lab: Lab, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
    """The rationale ``solve`` writes for these plans, trigger and limitation (values from the lab's lists).

    The ``generated`` check re-renders it from a bundle's replayed plans, whose part E
    decision may be anything a record held: an unknown choice reads as "none" and an
    unknown rejected candidate as the first ranked one.
    """
    e, d, c = plans["E"], plans["D"].result["outputs"], plans["C"].result["outputs"]
    decision = e.decision if isinstance(e.decision, Mapping) else {}
    choice, rejected = decision.get("recommendation"), decision.get("rejected")
    choice = choice if choice in ("primary", "alternative", "hold", "none") else "none"
    rows = {row["candidate_id"]: row for row in e.alternatives[0]["outputs"]["rows"]}
    rejected = rejected if isinstance(rejected, str) and rejected in rows else next(iter(rows))
    chosen_words = candidate_terms(track, choice)
    rejected_row = rows[rejected]
    latency, energy = rejected_row["latency"], rejected_row["accelerator_energy"]
    verdict = "within every budget" if rejected_row["feasible"] else "over its " + " and ".join(rejected_row["violations"]) + " budget"
    return (
        f"I choose {chosen_words[0]} ({' / '.join(chosen_words[1:2]) or 'current plan'}) and reject the {rejected} candidate "
        f"({rejected_row['hardware_name']}). "
        f"Evidence from part E: under the {e.alternatives[0]['outputs']['objective']} objective the rejected candidate takes "
        f"{latency['magnitude']:.4g} {latency['unit']} end to end and {energy['magnitude']:.4g} {energy['unit']} of accelerator "
        f"energy, {verdict}. "
        f"Evidence from part D: a {d['local_speedup']:.0f}x kernel-only speedup yields {d['end_to_end_speedup']:.3f}x end to end "
        f"once host, transfer, launch and postprocessing time are added back. "
        f"Evidence from part C: the {c['operation']} workload takes the {c['path']} path in "
        f"{c['latency']['magnitude']:.4g} {c['latency']['unit']}. "
        f"Remaining limitation: {lab.option(LIMITATIONS, limitation).label.lower()}. "
        f"Re-evaluation trigger: {lab.option(TRIGGERS, trigger).label.lower()}."
    )


def reference_synthesis(lab: Lab, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
    """Synthesis answers a diligent student would give for these plans (the template rationale included)."""
    trigger, risk = rng.choice(TRIGGERS), rng.choice(LIMITATIONS)
    return {"reevaluation_trigger": trigger.value, "residual_risk": risk.value,
            "rationale": reference_rationale(lab, track, plans, trigger.value, risk.value)}


def _answers() -> Mapping[str, Mapping[str, Any]]:
    from .answers import ANSWERS  # left out of the student build and the Gradescope image

    return ANSWERS


def reference_answers(lab: Lab, track: str) -> dict[str, Any]:
    """The hand-written synthesis answers for the default bundle on ``track`` (:mod:`.answers`), in schema order."""
    return hand_written_answers(lab.lab_id, track, _answers)
