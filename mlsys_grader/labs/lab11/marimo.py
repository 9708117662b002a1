"""Lab 11's mapping of the book's marimo export: where its report puts the answers, what ``binding_constraints`` repeat.

The recommendation and the rejected candidate are part E's captured decision, not synthesis answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.labspec import Binding, MarimoLayout
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


MARIMO_LAYOUT = MarimoLayout("v1_11_hardware_roofline", "recommendation", "rejected", "trigger", "E", binding)
