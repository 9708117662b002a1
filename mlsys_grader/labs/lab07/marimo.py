"""Lab 07's mapping of the book's marimo export: where its report puts the answers, what ``binding_constraints`` repeat."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.labspec import Binding, MarimoLayout


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


MARIMO_LAYOUT = MarimoLayout("v1_07_framework_tax", "recommendation", "rejected_alternative", "reevaluation_trigger",
                             None, binding)


