"""Lab 02's mapping of the book's marimo export: where its report puts the answers, what ``binding_constraints`` repeat.

The recommendation and the rejected alternative are synthesis answers (the snapshot's ``recommendation`` and
``rejected``); the book downloads a report only when the recommendation is part D's captured placement.  Its
reflections name the trigger ``reversal_trigger``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsys_grader.core.labspec import Binding, DecisionCopy, MarimoLayout

from .rules import PARTS


def binding(captures: Mapping[str, Any]) -> Binding:
    """Each part's violations of its chosen arm (else its result), as ``binding_constraints`` repeats them."""
    found: Binding = {}
    for part in PARTS:
        capture = captures.get(part)
        arm = (capture.get("chosen_result") or capture.get("result") or {}) if isinstance(capture, Mapping) else None
        if isinstance(arm, Mapping):
            found[part] = (part, "violations", arm.get("violations"))
    return found


def answers(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The recommendation, the rejected alternative, the trigger and the limitation, as the snapshot holds them."""
    return {"recommendation": snapshot.get("recommendation"), "rejected_alternative": snapshot.get("rejected"),
            "reevaluation_trigger": snapshot.get("trigger"), "residual_risk": snapshot.get("residual_risk")}


def decision_copies(captures: Mapping[str, Any], snapshot: Mapping[str, Any]) -> list[DecisionCopy]:
    """None: the recommendation is a synthesis answer (that it is part D's placement is a rule, :func:`missing`)."""
    return []


def missing(snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
    """Each empty answer, the rationale, a rejected alternative equal to the recommendation, and a recommendation other
    than part D's captured placement (the book's lab downloads nothing until each is right)."""
    recommendation, rejected = snapshot.get("recommendation"), snapshot.get("rejected")
    given = {"recommendation": recommendation, "rejected_alternative": rejected,
             "reevaluation_trigger": snapshot.get("trigger"), "residual_risk": snapshot.get("residual_risk")}
    lacking = [name for name, value in given.items() if not value]
    if not has_rationale:
        lacking.append("rationale")
    if recommendation and recommendation == rejected:
        lacking.append("a rejected alternative different from the recommendation")
    captures = snapshot.get("captures")
    d = captures.get("D") if isinstance(captures, Mapping) else None
    if recommendation and isinstance(d, Mapping) and d.get("decision") != recommendation:
        lacking.append("a recommendation that is the part D placement decision")
    return lacking


MARIMO_LAYOUT = MarimoLayout("v1_02_physics_of_deployment", "recommendation", "rejected", "trigger", None, binding,
                             answers, decision_copies, missing, reflections_trigger="reversal_trigger")
