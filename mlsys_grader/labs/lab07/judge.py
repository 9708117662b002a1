"""What only code says of Lab 07 (``lab.toml`` declares the rest): each part's arms, the verdicts its numbers give,
part E's runtime decision, the "no feasible path" synthesis rule, and the reference answers ``solve`` writes.

Nothing here imports mlsysim: the constants the arms need (the operation count, each track's tensor size) are the
spec's, pinned to the evaluator by ``tests/labs/test_lab07.py``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import ArmInputs, Binding, PartPlan, Problem
from mlsys_grader.labs.declared import chosen_arm_problems

if TYPE_CHECKING:
    from mlsys_grader.core.models import Bundle, EvidenceRecord
    from mlsys_grader.core.replayer import Replayer
    from mlsys_grader.labs.declared import Lab
    from mlsys_grader.labs.spec import LabSpec


# -- building ---------------------------------------------------------------
def arm_inputs(lab: Lab, track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c``, and the upstream inputs its record keeps
    (no part builds on another)."""
    operations = lab.spec.constant("operation_count")
    base = {"track_id": track, "tensor_elements": lab.spec.constant("tensor_elements", track)}
    if part == "A":
        return ArmInputs(
            {**base, "dispatches": operations},
            {**base, "dispatches": c["dispatches"]},
            ({**base, "baseline_dispatches": operations, "intervention_dispatches": c["dispatches"]},),
            {"baseline_dispatches": operations, "intervention_dispatches": c["dispatches"]},
        )
    if part == "B":
        return ArmInputs(
            {**base, "executions": 1, "recompilations": 0},
            {**base, "executions": c["executions"], "recompilations": c["recompilations"]},
            (),
            {"executions": c["executions"], "recompilations": c["recompilations"]},
        )
    if part == "C":
        fusion = {"unsupported_operator": None, "shape_mode": "static"}
        return ArmInputs(
            {**base, **fusion, "graph_breaks": operations - 1},
            {**base, **fusion, "graph_breaks": c["graph_breaks"]},
            (),
            {"baseline_breaks": operations - 1, "intervention_breaks": c["graph_breaks"]},
        )
    if part == "D":
        return ArmInputs(
            {**base, "policy": "retain_all", "batch_size": c["batch_size"]},
            {**base, "policy": c["policy"], "batch_size": c["batch_size"]},
            (),
            {"batch_size": c["batch_size"], "policy": c["policy"]},
        )
    return ArmInputs(
        {**base, "operator": "relu", "shape_mode": "static"},
        {**base, "operator": c["operator"], "shape_mode": c["shape_mode"]},
        (),
        {"operator": c["operator"], "shape_mode": c["shape_mode"], "decision": c["decision"]},
    )


# -- judging ----------------------------------------------------------------
def _bucket(fraction: float) -> str:
    if fraction < 0.25:
        return "below_25"
    if fraction < 0.5:
        return "25_50"
    if fraction < 0.75:
        return "50_75"
    return "above_75"


def displayed_prediction(track: str, part: str, plan: PartPlan) -> str:
    """The verdict the notebook shows; part B's is the seed's ``compilation_repaid`` outcome."""
    base, result = plan.baseline, plan.result
    if part == "A":
        return _bucket(base["dispatch_fraction"])
    if part == "B":
        # As the seed words it: a tie is not "repaid" there, so it reads "Eager remains faster".
        return "compiled" if result["compilation_repaid"] else "eager"
    if part == "C":
        traffic = result["total_traffic_mb"] < base["total_traffic_mb"]
        launches = result["launches"] < base["launches"]
        return "both" if traffic and launches else "traffic_only" if traffic else "none"
    if part == "D":
        memory = result["retained_activation_mb"] < base["retained_activation_mb"]
        time = result["step_time_ms"] > base["step_time_ms"]
        return ("memory_for_time" if memory and time else "memory_only" if memory
                else "time_only" if time else "neither")
    return result["status"]


def accepted_predictions(track: str, part: str, plan: PartPlan) -> frozenset[str]:
    """The displayed verdict; in part B, when the two totals tie, "They are equal" too."""
    accepted = {displayed_prediction(track, part, plan)}
    if part == "B" and math.isclose(plan.result["eager_total_ms"], plan.result["compiled_total_ms"], rel_tol=1e-12):
        accepted.add("equal")
    return frozenset(accepted)


def decision_problems(track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]:
    """Part E's runtime decision: one of the three, "none" only for a path that cannot execute, the matching arm kept."""
    if part != "E":
        return []
    decision = record.decision
    problems: list[Problem] = []
    if decision not in ("selected", "hold", "none"):
        return [Problem("Choose a runtime decision: use the selected path, hold the native baseline, or no feasible target path.",
                        ["selected", "hold", "none"], decision)]
    if decision == "none" and plan.result["executable"]:
        problems.append(Problem("'No feasible target path' is valid only when the selected path cannot execute; this one runs "
                                f"({plan.result['status']}), so use it or hold the baseline.", "selected or hold", decision))
    return problems + chosen_arm_problems(record, decision, decision == "hold")


def more_synthesis_problems(spec: LabSpec, bundle: Bundle) -> list[Problem]:
    """"No feasible target path" only after part E captured an unsupported path with decision "none"."""
    s, e = bundle.synthesis, bundle.evidence.get("E")
    if s.recommendation != "none":
        return []
    supported = e is not None and e.decision == "none" and isinstance(e.result, Mapping) and e.result.get("executable") is False
    if supported:
        return []
    return [Problem("Recommend 'no feasible target path' only after capturing an unsupported part E with decision 'none'.",
                    "part E decision 'none' on an unsupported path", getattr(e, "decision", None))]


# -- reference answers --------------------------------------------------------
def contrast(lab: Lab, track: str, part: str, controls: dict[str, Any], rng: random.Random | None) -> dict[str, Any]:
    """Part E never tests the baseline's relu + static."""
    if part == "E":
        while controls["operator"] == "relu" and controls["shape_mode"] == "static":
            controls["operator"] = rng.choice(lab.parts[part].control("operator").choices[1:]) if rng else "host_callback"
    return controls


def decision_options(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any]) -> tuple[str, ...]:
    """The runtime decisions the rules accept for part E's path: use it or hold when it runs, else none or hold."""
    executable = lab.plan(replay, track, "E", {**controls, "decision": "selected"}, {}).result["executable"]
    return ("selected", "hold") if executable else ("none", "hold")


def reference_choices(lab: Lab, plans: Mapping[str, PartPlan]) -> tuple[str, str]:
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
    recommendation, rejected = reference_choices(lab, plans)
    recommendations = lab.synthesis_choices()["recommendation"]
    rec_label = lab.option(recommendations, recommendation).label
    rej_label = lab.option(recommendations, rejected).label
    trigger_words = lab.option(lab.triggers, trigger).keywords[0]
    risk_label = lab.option(lab.limitations, limitation).label
    return (
        f"I recommend {rec_label.lower()} and reject {rej_label.lower()}. "
        f"Evidence from part B: {b['executions']} executions with {b['compilation_count']} compilation(s) give a compiled "
        f"total of {b['compiled_total_ms']:.3f} ms against an eager total of {b['eager_total_ms']:.3f} ms. "
        f"Evidence from part C: with {c.result['graph_breaks']} graph break(s) left, fusion eliminates "
        f"{c.result['eliminated_traffic_mb']:.3f} MB of graph traffic. "
        f"Evidence from part D: the {d.result['policy']} recomputation policy retains {d.result['retained_activation_mb']:.3f} MB "
        f"of activations where retaining all of them needs {d.baseline['retained_activation_mb']:.3f} MB. "
        f"Evidence from part E: the inserted {e.result['operator']} operator with {e.result['shape_mode']} shapes takes the "
        f"{e.result['status']} path. "
        f"Remaining limitation: {risk_label.lower()}. Re-evaluation trigger: the {trigger_words} changes."
    )


# -- the book's marimo export ---------------------------------------------------
def _chosen_or_result(capture: Mapping[str, Any]) -> Any:
    return capture.get("chosen_result") or capture.get("result") or {}


def marimo_binding(captures: Mapping[str, Any]) -> Binding:
    """What the export's ``binding_constraints`` repeat: part E's chosen runtime path, part D's memory feasibility."""
    found: Binding = {}
    if isinstance(captures.get("E"), Mapping) and isinstance(_chosen_or_result(captures["E"]), Mapping):
        found["runtime_path"] = ("E", "runtime status", _chosen_or_result(captures["E"]).get("status"))
    result = captures["D"].get("result") if isinstance(captures.get("D"), Mapping) else None
    if isinstance(result, Mapping):
        found["activation_memory"] = ("D", "memory status", "PASS" if result.get("memory_feasible") else "OOM")
    return found
