"""Lab 07's domain and rules: parts, controls, how each part's arms are built, the decision rules.

This module is the lab's :class:`~mlsys_grader.core.labspec.PartRules`.  Nothing here imports mlsysim: the arms come from :func:`evaluator` (the lab's
:mod:`.evaluate`, loaded on first use), so grading code that does not evaluate never
loads it.  ``MODEL_KEY``, ``OPERATION_COUNT``, ``TENSOR_ELEMENTS`` and ``TARGETS`` restate the
evaluator's constants (``tests/labs/test_lab07.py`` pins them to it), so building a part's
inputs, and grading that the replay table answers, never imports mlsysim.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import ArmInputs, Control, InferredControls, PartPlan, PartSpec, Problem
from mlsys_grader.core.labspec import arm_inputs as recorded_inputs
from mlsys_grader.core.models import Bundle, EvidenceRecord
from mlsys_grader.core.values import BuildVariant

from .words import LIMITATIONS, RECOMMENDATIONS, REJECTABLE, TRIGGERS

if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab
    from mlsys_grader.core.replayer import Replayer

MODEL_KEY = "v1_07_experiments"
OPERATION_COUNT = 6
"""Operations in the seed's graph (``len(v1_07_experiments.OPERATION_GRAPH)``): part A's baseline dispatches."""
TENSOR_ELEMENTS = {"tinyml": 16384, "mobile": 524288, "edge": 2097152, "cloud": 8388608}
"""Track → the tensor size every part runs at (``v1_07_experiments.TRACKS[track].default_elements``)."""
TARGETS = {"tinyml": "ESP32-S3 (AI)", "mobile": "Google Pixel 8 (Tensor G3)", "edge": "NVIDIA Jetson Orin Nano",
           "cloud": "NVIDIA T4"}
"""Track → the registry's name of its target device (``v1_07_experiments.TRACKS[track].target.name``)."""


HOSTED_BUILD = "the book's hosted labs (their browser build, \"mlsysim 0.1.2\")"
BUILD_VARIANTS = (
    BuildVariant(
        part="D", field="memory_capacity_mb", tracks=("mobile", "edge"), values=(137438.953472, 128000.0),
        build=HOSTED_BUILD,
        why="the hosted build's hardware registry may keep the older decimal capacity of the training hosts "
            "(MacBookM3Max on mobile, GenericServer on edge: 128 GB = 128000.0 MB) where 0.3.0 gives 128 GiB "
            "(137438.953472 MB); every other number of the lab agrees, and whether a batch fits never changes"),
)
"""Fields another build of the evaluators gives differently (:class:`~mlsys_grader.core.drift.BuildVariant`): the book's
hosted labs install a development build whose v1_07 module is 0.3.0's, so only a hardware registry value can differ."""

@cache
def evaluator() -> ModuleType:
    """The lab's :mod:`.evaluate` module, imported on first use with only the mlsysim modules it imports
    (:func:`mlsys_grader.labs.import_evaluator`: the whole package is slow to import)."""
    from mlsys_grader.labs import import_evaluator

    return import_evaluator(f"{__package__}.evaluate")


PARTS = {
    "A": PartSpec(
        "A", "Why can small operations waste the machine?",
        "What fraction of fine-grained execution time is dispatch?",
        (Control("dispatches", "Intervention granularity (launches)", "choice", 1, choices=(1, 2, 3)),),
        {"below_25": "Below 25%", "25_50": "25–50%", "50_75": "50–75%", "above_75": "Above 75%"},
    ),
    "B": PartSpec(
        "B", "When does compilation repay setup?",
        "Which path has lower total time at these settings?",
        (
            Control("executions", "Repeated executions", "int", 50, minimum=10, maximum=200, step=10),
            Control("recompilations", "Guard-triggered recompilations", "int", 0, minimum=0, maximum=8, step=1),
        ),
        {"eager": "Eager remains faster", "compiled": "Compilation repays setup", "equal": "They are equal"},
    ),
    "C": PartSpec(
        "C", "What does fusion eliminate?",
        "What can fusion eliminate from this graph?",
        (Control("graph_breaks", "Graph breaks", "int", 0, minimum=0, maximum=4, step=1),),
        {"none": "No traffic", "traffic_only": "Some traffic, no launches", "both": "Traffic and launches", "arithmetic": "Arithmetic operations"},
    ),
    "D": PartSpec(
        "D", "Which activations should remain stored?",
        "What does recomputation change?",
        (
            Control("policy", "Recomputation policy", "choice", "alternate", choices=("alternate", "input_only")),
            Control("batch_size", "Training batch", "int", 8, minimum=1, maximum=64, step=1),
        ),
        {"memory_for_time": "Less memory, more step time", "memory_only": "Less memory only", "time_only": "More step time only", "neither": "Neither changes"},
    ),
    "E": PartSpec(
        "E", "Can the runtime execute the actual graph?",
        "How will the selected operator and shape execute?",
        (
            Control("operator", "Inserted operator", "choice", "host_callback",
                    choices=("relu", "layer_norm", "dynamic_slice", "custom_attention", "host_callback")),
            Control("shape_mode", "Shape behavior", "choice", "static", choices=("static", "bounded", "dynamic")),
            Control("decision", "Runtime decision", "choice", None, choices=("selected", "hold", "none"), decision=True),
        ),
        {"native": "Native target path", "fallback": "Portable fallback path", "unsupported": "Cannot execute"},
        has_decision=True,
    ),
}


def _bucket(fraction: float) -> str:
    if fraction < 0.25:
        return "below_25"
    if fraction < 0.5:
        return "25_50"
    if fraction < 0.75:
        return "50_75"
    return "above_75"


def evaluate(track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """One arm through the pinned evaluator (``track`` is in the inputs already)."""
    return evaluator().replay(model_key, inputs)


# -- building ---------------------------------------------------------------
def plan(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
         upstream: Mapping[str, Any]) -> PartPlan:
    """A part's plan: its baseline, result and alternative arms, evaluated through ``replay``, and part E's decision."""
    arms = arm_inputs(track, part, controls, TENSOR_ELEMENTS[track])
    baseline = replay.evaluate(lab, track, MODEL_KEY, arms.baseline)
    result = replay.evaluate(lab, track, MODEL_KEY, arms.result)
    return PartPlan(
        part=part,
        model_key=MODEL_KEY,
        upstream=arms.upstream,
        baseline=baseline,
        result=result,
        alternatives=tuple(replay.evaluate(lab, track, MODEL_KEY, item) for item in arms.alternatives),
        **decide(part, controls, baseline, result),
    )


def infer_controls(lab: Lab, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
    """The controls a record's result arm was built from (no part depends on another), or None."""
    result_inputs = recorded_inputs(record.result) if record.result else None
    if not isinstance(result_inputs, Mapping):
        return None
    controls = inferred_controls(part, result_inputs, record.decision)
    return None if controls is None else InferredControls(controls, {})


def arm_inputs(track: str, part: str, c: Mapping[str, Any], tensor_elements: int) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c``, and the upstream inputs its record keeps."""
    base = {"track_id": track, "tensor_elements": tensor_elements}
    if part == "A":
        return ArmInputs(
            {**base, "dispatches": OPERATION_COUNT},
            {**base, "dispatches": c["dispatches"]},
            ({**base, "baseline_dispatches": OPERATION_COUNT, "intervention_dispatches": c["dispatches"]},),
            {"baseline_dispatches": OPERATION_COUNT, "intervention_dispatches": c["dispatches"]},
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
            {**base, **fusion, "graph_breaks": OPERATION_COUNT - 1},
            {**base, **fusion, "graph_breaks": c["graph_breaks"]},
            (),
            {"baseline_breaks": OPERATION_COUNT - 1, "intervention_breaks": c["graph_breaks"]},
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


def decide(part: str, controls: Mapping[str, Any], baseline: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The decision fields of a part's plan: part E keeps the baseline on "hold", else the tested result."""
    if part != "E":
        return {}
    hold = controls["decision"] == "hold"
    return {"decision": controls["decision"], "chosen_result": baseline if hold else result,
            "result_role": "rejected alternative" if hold else "tested intervention"}


def inferred_controls(part: str, result_inputs: Mapping[str, Any], decision: Any) -> dict[str, Any] | None:
    """The controls a record's result inputs were built from (part E: with the record's decision), or None."""
    names = [control.name for control in PARTS[part].controls if control.name != "decision"]
    if not all(name in result_inputs for name in names):
        return None
    controls = {name: result_inputs[name] for name in names}
    if part == "E":
        controls["decision"] = decision
    return controls



def build_variants() -> tuple[BuildVariant, ...]:
    """:data:`BUILD_VARIANTS`, the lab's table of values another build of the evaluators gives."""
    return BUILD_VARIANTS


def upstream_inputs(part: str, inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the book's notebook seals a capture over (its ``upstream_inputs``): each part's own ``inputs``.

    No part of this lab builds on another in the book (part E's are ``{operator, shape_mode, decision}``, nothing of
    part A), so no capture goes stale when another part changes.
    """
    return inputs

# -- judging ----------------------------------------------------------------
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
    expected_chosen = "baseline" if decision == "hold" else "result"
    chosen = record.chosen_result
    if chosen is None or recorded_inputs(chosen) != recorded_inputs(getattr(record, expected_chosen) or {}):
        problems.append(Problem(f"With decision {decision!r} the chosen result must be the {expected_chosen} arm; recapture part E.",
                                expected_chosen, "missing" if chosen is None else "another arm"))
    return problems


def synthesis_problems(bundle: Bundle) -> list[Problem]:
    """The synthesis rules: a listed recommendation, a different tested rejected path, hold / none only after part E said so."""
    s = bundle.synthesis
    problems: list[Problem] = []
    values = [choice.value for choice in RECOMMENDATIONS]
    if s.recommendation not in values:
        problems.append(Problem("Choose a recommended execution plan.", values, s.recommendation))
    if s.rejected_alternative not in REJECTABLE:
        problems.append(Problem("Choose the tested alternative you reject (eager, compiled or compiled with fusion).",
                                list(REJECTABLE), s.rejected_alternative))
    elif s.recommendation == s.rejected_alternative:
        problems.append(Problem("The rejected alternative must differ from the recommendation.",
                                "a different option", s.rejected_alternative))
    e = bundle.evidence.get("E")
    if s.recommendation == "none":
        supported = e is not None and e.decision == "none" and isinstance(e.result, Mapping) and e.result.get("executable") is False
        if not supported:
            problems.append(Problem("Recommend 'no feasible target path' only after capturing an unsupported part E with decision 'none'.",
                                    "part E decision 'none' on an unsupported path", getattr(e, "decision", None)))
    if s.recommendation == "hold" and (e is None or e.decision != "hold"):
        problems.append(Problem("Recommend 'hold' only after capturing part E with decision 'hold'.",
                                "part E decision 'hold'", getattr(e, "decision", None)))
    for field, options, what in (("reevaluation_trigger", TRIGGERS, "re-evaluation trigger"),
                                 ("residual_risk", LIMITATIONS, "remaining limitation")):
        value = getattr(s, field)
        if value not in [option.value for option in options]:
            problems.append(Problem(f"Choose a {what} from the lab's list.", [option.value for option in options], value))
    return problems
