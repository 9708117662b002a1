"""Lab 08's mapping of the book's marimo export: where its report puts the answers, what ``binding_constraints`` repeat.

The recommendation and the rejected alternative are synthesis answers (the snapshot's own keys, as in Lab 07), and the
book downloads its report only once the recommendation equals part E's saved decision (and, on a hold, the rejected
alternative equals the one part E tested): those two copies must agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsys_grader.core.labspec import Binding, DecisionCopy, MarimoLayout

from .rules import PARTS


def binding(captures: Mapping[str, Any]) -> Binding:
    """Each part's violations of its chosen arm (else its intervention): a memory ledger keeps none, so an infeasible one
    binds on memory, as the book writes it."""
    found: Binding = {}
    for part in PARTS:
        capture = captures.get(part)
        arm = (capture.get("chosen_result") or capture.get("result")) if isinstance(capture, Mapping) else None
        if isinstance(arm, Mapping):
            violations = arm.get("violations", ["memory"] if not arm.get("feasible", True) else [])
            found[part] = (part, "violations", list(violations) if isinstance(violations, (list, tuple)) else violations)
    return found


def answers(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The trigger, the limitation, the recommendation and the rejected alternative, as the snapshot holds them."""
    return {"reevaluation_trigger": snapshot.get("reevaluation_trigger"), "residual_risk": snapshot.get("residual_risk"),
            "recommendation": snapshot.get("recommendation"), "rejected_alternative": snapshot.get("rejected_alternative")}


def decision_copies(captures: Mapping[str, Any], snapshot: Mapping[str, Any]) -> list[DecisionCopy]:
    """Part E's saved decision against the recommendation and, on a hold, its tested alternative against the rejected one."""
    capture = captures.get("E")
    if not isinstance(capture, Mapping):
        return []
    copies = [DecisionCopy("E", "recommendation", capture.get("decision"), snapshot.get("recommendation"))]
    inputs = capture.get("inputs")
    if capture.get("decision") == "none" and isinstance(inputs, Mapping):
        copies.append(DecisionCopy("E", "rejected_alternative", inputs.get("rejected_alternative"),
                                   snapshot.get("rejected_alternative")))
    return copies


def missing(snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
    """Each empty answer, the rationale, and a rejected alternative equal to a recommended fix."""
    recommendation, rejected = snapshot.get("recommendation"), snapshot.get("rejected_alternative")
    given = {"recommendation": recommendation, "rejected_alternative": rejected,
             "reevaluation_trigger": snapshot.get("reevaluation_trigger"), "residual_risk": snapshot.get("residual_risk")}
    lacking = [name for name, value in given.items() if not value]
    if not has_rationale:
        lacking.append("rationale")
    if recommendation and recommendation != "none" and recommendation == rejected:
        lacking.append("a rejected alternative different from the recommendation")
    return lacking


MARIMO_LAYOUT = MarimoLayout("v1_08_training_gauntlet", "recommendation", "rejected_alternative", "reevaluation_trigger",
                             None, binding, answers, decision_copies, missing)
