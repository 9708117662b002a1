"""Lab 07's mapping of the book's marimo export: where its report puts the answers, what ``binding_constraints`` repeat.

The recommendation and the rejected alternative are synthesis answers (the snapshot's own keys), not a part's decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsys_grader.core.labspec import Binding, DecisionCopy, MarimoLayout


def _chosen_or_result(capture: Mapping[str, Any]) -> Any:
    return capture.get("chosen_result") or capture.get("result") or {}


def binding(captures: Mapping[str, Any]) -> Binding:
    """The runtime path of part E's chosen arm, and part D's memory feasibility."""
    found: Binding = {}
    if isinstance(captures.get("E"), Mapping) and isinstance(_chosen_or_result(captures["E"]), Mapping):
        found["runtime_path"] = ("E", "runtime status", _chosen_or_result(captures["E"]).get("status"))
    result = captures["D"].get("result") if isinstance(captures.get("D"), Mapping) else None
    if isinstance(result, Mapping):
        found["activation_memory"] = ("D", "memory status", "PASS" if result.get("memory_feasible") else "OOM")
    return found


def answers(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The trigger, the limitation, the recommendation and the rejected alternative, as the snapshot holds them."""
    return {"reevaluation_trigger": snapshot.get("reevaluation_trigger"), "residual_risk": snapshot.get("residual_risk"),
            "recommendation": snapshot.get("recommendation"), "rejected_alternative": snapshot.get("rejected_alternative")}


def decision_copies(captures: Mapping[str, Any], snapshot: Mapping[str, Any]) -> list[DecisionCopy]:
    """None: no part's captured decision holds a synthesis answer."""
    return []


def missing(snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
    """Each empty answer (the recommendation, the rejected alternative, the trigger, the limitation), the rationale,
    and a rejected alternative equal to the recommendation."""
    recommendation, rejected = snapshot.get("recommendation"), snapshot.get("rejected_alternative")
    given = {"recommendation": recommendation, "rejected_alternative": rejected,
             "reevaluation_trigger": snapshot.get("reevaluation_trigger"), "residual_risk": snapshot.get("residual_risk")}
    lacking = [name for name, value in given.items() if not value]
    if not has_rationale:
        lacking.append("rationale")
    if recommendation and recommendation == rejected:
        lacking.append("a rejected alternative different from the recommendation")
    return lacking


MARIMO_LAYOUT = MarimoLayout("v1_07_framework_tax", "recommendation", "rejected_alternative", "reevaluation_trigger",
                             None, binding, answers, decision_copies, missing)


