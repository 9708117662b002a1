"""The book's words that a notebook can only show once it knows the track.

Most of a lab's text is the same on every track and lives in the notebooks themselves
(``solutions/build_masters.py`` writes it from the seeds).  What the seeds fill in from
the track — a device's or host's name, a TinyML-specific sentence or label — is here,
next to the learning objectives and takeaways of the seeds' closing "Local evidence
report", so the session can render them in the book's wording for the student's track.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

from ..core.labspec import LabSpec

if TYPE_CHECKING:
    from mlsysim.labs.experiments.v1_11_experiments import Track

# Part scenarios whose words depend on the track (seed: the part's ``intro`` markdown).
# Placeholders are filled by :func:`track_facts`.
SCENARIOS: Mapping[tuple[str, str], str] = {
    ("lab07", "A"): ("Maya, the performance engineer, keeps arithmetic and payload fixed on **{device}** while "
                     "changing only the number of dispatches."),
    ("lab07", "B"): "Ishan, the compiler engineer, separates repeated execution count from {recompile_context}.",
    ("lab07", "D"): ("Noah, the training engineer, runs this track on **{training_host}** and compares saved "
                     "activations against repeated forward work."),
}

# Labels the seeds word differently on one track: (lab, what, value) -> {track: label, "*": every other track}.
TRACK_LABELS: Mapping[tuple[str, str, str], Mapping[str, str]] = {
    ("lab07", "reevaluation_trigger", "shape_guards"): {"tinyml": "Deployment shapes change", "*": "Shape guards change"},
}

# The seeds' radio labels for each part's decision: (lab, part, control) -> {value: label}.
DECISION_LABELS: Mapping[tuple[str, str, str], Mapping[str, str]] = {
    ("lab07", "E", "decision"): {"selected": "Use selected path", "hold": "Hold native baseline for more evidence",
                                 "none": "No feasible target path"},
    ("lab11", "E", "choice"): {"primary": "Primary", "alternative": "Alternative",
                               "hold": "No change / hold for more evidence", "none": "No feasible design"},
    ("lab11", "E", "rejected"): {"primary": "Primary", "alternative": "Alternative"},
}

# The seeds' ``build_lab_report(learning_objectives=…, big_takeaways=…)``.
LEARNING_OBJECTIVES: Mapping[str, tuple[str, ...]] = {
    "lab07": ("Quantify dispatch and compilation overhead across repeated execution",
              "Compare graph traffic and activation storage across framework policies",
              "Diagnose native, fallback, and unsupported deployment paths"),
    "lab11": ("Identify the binding roofline resource", "Test local-memory and execution-support boundaries",
              "Compare kernel and application speedup", "Rank feasible accelerators under explicit budgets"),
}
BIG_TAKEAWAYS: Mapping[str, tuple[str, ...]] = {
    "lab07": ("Fine-grained work can spend more time dispatching than computing.",
              "Compilation and fusion repay costs only when reuse and graph continuity preserve their savings.",
              "Recomputation and fallback move cost between memory, arithmetic, and portability."),
    "lab11": ("Peak arithmetic helps only when compute binds.", "Local capacity and execution support can force remapping.",
              "Host, transfer, and launch stages cap application speedup.",
              "Selection filters constraints before optimizing an objective."),
}
# The seeds' ``source_trace``.
SOURCE_TRACE: Mapping[str, str] = {
    "lab07": "Illustrative operation graph and support fixture; MLSysIM v1_07_experiments evaluators.",
    "lab11": "MLSysIM registry hardware; analytical MLSysIM Chapter 11 experiment models, not measured benchmarks.",
}


def label_for(lab_id: str, what: str, value: str, track: str, default: str) -> str:
    """The label the book shows on ``track`` for ``value`` of ``what`` (``default`` when it has no track wording)."""
    labels = TRACK_LABELS.get((lab_id, what, value))
    if not labels:
        return default
    return labels.get(track, labels.get("*", default))


def _lab07_facts(track: str, lab: LabSpec) -> dict[str, str]:
    from mlsysim.labs.experiments import v1_07_experiments as ev  # mlsysim loads on first use (seconds)

    profile = ev.TRACKS[track]
    defaults = lab.parts["D"].defaults()
    host = lab.plan(track, "D", defaults, {}).baseline["training_host"]
    context = ("offline host rebuild and redeployment count (TinyML compiles ahead-of-time on the host, not via "
               "on-device JIT guards)" if track == "tinyml" else "guard-triggered recompilation count")
    return {"device": profile.target.name, "training_host": host, "recompile_context": context,
            "scenario": profile.workload}


def _lab11_facts(track: str, lab: LabSpec) -> dict[str, str]:
    from mlsysim.labs.experiments import v1_11_experiments as ev  # mlsysim loads on first use (seconds)

    scenario = ev.get_track_scenario(cast("Track", track))  # the session only opens the lab's own tracks
    return {"device": scenario.hardware.name, "scenario": f"{scenario.hardware.name} analytical accelerator-fit investigation"}


_FACTS: Mapping[str, Callable[[str, LabSpec], dict[str, str]]] = {"lab07": _lab07_facts, "lab11": _lab11_facts}


def track_facts(lab_id: str, track: str, lab: LabSpec) -> dict[str, str]:
    """What the seeds fill in from the track (device, training host, scenario…); empty for a lab without any."""
    facts = _FACTS.get(lab_id)
    return facts(track, lab) if facts else {}


def scenario_text(lab_id: str, part: str, track: str, lab: LabSpec) -> str | None:
    """The part's scenario in the book's words for ``track`` (Markdown), or None when it does not depend on the track."""
    template = SCENARIOS.get((lab_id, part))
    return template.format(**track_facts(lab_id, track, lab)) if template else None
