"""Lab 11's mapping of the book's marimo export: where its report puts the answers, what ``binding_constraints`` repeat.

The recommendation and the rejected candidate are part E's captured decision, not synthesis answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsys_grader.core.labspec import Binding, DecisionCopy, MarimoLayout

from .rules import PARTS


def binding(captures: Mapping[str, Any]) -> Binding:
    """Each part's outputs of its chosen arm (else its intervention)."""
    found: Binding = {}
    for part in PARTS:
        capture = captures.get(part)
        arm = (capture.get("chosen_result") or capture.get("result") or {}) if isinstance(capture, Mapping) else None
        if isinstance(arm, Mapping):
            found[part] = (part, "outputs", arm.get("outputs"))
    return found


def answers(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The trigger and the limitation: the recommendation and the rejected candidate are part E's decision."""
    return {"reevaluation_trigger": snapshot.get("trigger"), "residual_risk": snapshot.get("residual_risk")}


def decision_copies(captures: Mapping[str, Any], snapshot: Mapping[str, Any]) -> list[DecisionCopy]:
    """Part E's captured recommendation and rejected candidate, and the snapshot's copies of them."""
    capture = captures.get("E")
    decision = capture.get("decision") if isinstance(capture, Mapping) else None
    if not isinstance(decision, Mapping):
        return []
    return [DecisionCopy("E", key, decision.get(key), snapshot.get(key)) for key in ("recommendation", "rejected")]


def missing(snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
    """An empty trigger or limitation, and the rationale."""
    given = {"reevaluation_trigger": snapshot.get("trigger"), "residual_risk": snapshot.get("residual_risk")}
    return [name for name, value in given.items() if not value] + ([] if has_rationale else ["rationale"])


MARIMO_LAYOUT = MarimoLayout("v1_11_hardware_roofline", "recommendation", "rejected", "trigger", "E", binding,
                             answers, decision_copies, missing)
