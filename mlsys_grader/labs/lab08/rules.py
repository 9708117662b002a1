"""Lab 08's domain and rules: parts, controls, how each part's arms are built, the judgements and the decision rules.

This module is the lab's :class:`~mlsys_grader.core.labspec.PartRules`.  Arms are shaped as the book's marimo lab
captures them: flat dictionaries of plain numbers with their ``inputs``, each part keyed by its own experiment
(``model_key`` ``v1_08_experiments.<experiment>``).  An arm that fails a limit (``feasible`` false, with its
``violations``: memory, target quality, schedule, cost) is evidence like any other: a resident batch of 32 that runs
out of memory, or the largest accumulated batch that never reaches the target quality, is a valid failing contrast.

The book seals every capture with ``upstream_inputs={}`` (:func:`upstream_inputs`): no part builds on another, and
a capture's seal binds only its track.  Its settings are still compared with the final ones (the staleness check
reads the record's ``inputs``).

What the book gates, the domain leaves out: part B's strategies are the four that differ from the baseline batch
(the book's capture button is disabled on the baseline), and a part E hold without a tested alternative builds an
intervention identical to its baseline, so it is never captured (the notebook refuses it) and never contrasts.

Nothing here imports mlsysim: the scenario constants below restate the evaluator's (``tests/labs/test_lab08.py``
pins them to it), and the evaluator (:mod:`.evaluate`) loads on first use through :func:`evaluator`.

The predictions the notebook shows as observed, from the replayed arms:

* A — the largest of AdamW's weights, gradients and optimizer state (every tied largest is accepted).
* B — which of the four offered strategies reaches the common target soonest within every limit (the baseline is
  the reference, not an answer): the resident batch of 32, the largest effective batch (512), or an accumulated
  middle batch (effective 32 or 128); "All finish equally" when the feasible ones tie.  A strategy that runs out of
  memory, misses the target, or crosses the schedule or cost limit never finishes.
* C — which narrower formats (BF16, FP16, FP8) reach the common target: all of them, BF16 and FP16 only, or none
  ("Only FP32").  Speed never decides.
* D — whether the chosen policy's memory at the probe batch falls below no checkpointing, and whether its update
  time (the policy's ``checkpoint_experiment``) rises.
* E — the fix whose comparison cuts update time the most.
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

MODEL_ID = "v1_08_experiments"
"""The evaluators' module id; a part's model key is ``<MODEL_ID>.<experiment>``."""
EXPERIMENTS = {"A": "optimizer_experiment", "B": "batch_experiment", "C": "precision_experiment", "D": "memory_outcome",
               "E": "bottleneck_experiment"}
CHECKPOINT_TIMING_KEY = f"{MODEL_ID}.checkpoint_experiment"
"""What part D's one alternative is computed by (``checkpoint_experiment(track, checkpointing=…)``, no inputs kept)."""
COMPARISON_KEY = f"{MODEL_ID}.bottleneck_experiment:comparison"
"""What part E's three alternatives are computed by (``bottleneck_experiment(track, intervention=…)``, no inputs kept);
not a key of the book's dispatcher, which replays only the arms inside them."""

PHYSICAL_BATCH = {"tinyml": 4, "mobile": 8, "edge": 8, "cloud": 4}
"""Track → its default physical batch (``v1_08_experiments.TRACKS[track]["physical_batch"]``)."""
PROBE_BATCH = {"tinyml": 256, "mobile": 64, "edge": 32, "cloud": 32}
"""Track → part D's resident probe batch (``TRACKS[track]["checkpoint_probe_batch"]``)."""
HOSTS = {"tinyml": "NVIDIA A100", "mobile": "NVIDIA A100", "edge": "NVIDIA A100", "cloud": "NVIDIA H100"}
"""Track → the development host's registry name (``TRACKS[track]["hardware"].name``)."""
TASKS = {
    "tinyml": "Upstream teacher adaptation for a compact wake-word model",
    "mobile": "Upstream assistant adaptation for a mobile deployment",
    "edge": "Upstream language adaptation for an edge inspection service",
    "cloud": "Continuous language-model training on a cloud development host",
}
"""Track → the book's task (``TRACKS[track]["task"]``)."""
TARGET_QUALITY = 0.80
"""The common target quality every arm is judged against (the evaluator's ``target_quality``)."""

STRATEGIES = ("accumulate_32", "resident_32", "accumulate_128", "accumulate_512")
"""Part B's strategies: the book's menu without its baseline, by what they do on every track."""
FIXES = ("prefetch", "arithmetic", "checkpoint")
"""Part E's tested fixes, in the book's order (its comparisons' order)."""
PRECISIONS = ("fp32", "bf16", "fp16", "fp8")


def batch_menu(track: str) -> dict[str, tuple[int, int]]:
    """The book's batch menu on ``track`` in its order: ``"baseline"`` and each strategy → (physical batch, accumulation
    steps), as ``batch_policy`` derives them from the track's physical batch ``p``: ``p × 8/p``, ``p × 32/p``, ``32 × 1``,
    ``p × 128/p``, ``p × 512/p``."""
    p = PHYSICAL_BATCH[track]
    return {"baseline": (p, 8 // p), "accumulate_32": (p, 32 // p), "resident_32": (32, 1),
            "accumulate_128": (p, 128 // p), "accumulate_512": (p, 512 // p)}


@cache
def evaluator() -> ModuleType:
    """The lab's :mod:`.evaluate` module, imported on first use with only the mlsysim modules it imports."""
    from mlsys_grader.labs import import_evaluator

    return import_evaluator(f"{__package__}.evaluate")


def model_key(part: str) -> str:
    return f"{MODEL_ID}.{EXPERIMENTS[part]}"


def evaluate(track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """One arm through the pinned evaluator (``track`` is in the inputs already)."""
    return evaluator().replay(model_key, inputs)


PARTS = {
    "A": PartSpec(
        "A", "Why does inference fit while training fails?", "Which allocation is largest under AdamW?",
        (Control("optimizer", "Optimizer conclusion", "choice", "adamw", choices=("adam", "adamw")),),
        {"weights": "Weights dominate", "gradients": "Gradients dominate", "optimizer": "Optimizer state dominates"},
    ),
    "B": PartSpec(
        "B", "Does a larger batch finish sooner?", "Which strategy reaches target soonest?",
        (Control("strategy", "Batch strategy", "choice", "accumulate_32", choices=STRATEGIES),),
        {"largest": "Largest effective batch", "resident32": "Resident batch 32", "middle": "Accumulated middle batch",
         "equal": "All finish equally"},
    ),
    "C": PartSpec(
        "C", "When does lower precision help?", "Which precision evidence remains acceptable?",
        (Control("precision", "Precision candidate", "choice", "bf16", choices=("bf16", "fp16", "fp8")),),
        {"all": "Every narrower format", "mixed": "BF16/FP16 only", "fp32": "Only FP32", "speed": "Speed alone decides"},
    ),
    "D": PartSpec(
        "D", "When is recomputation worth paying for?", "What does activation checkpointing change?",
        (Control("checkpointing", "Checkpoint policy", "choice", "full", choices=("selective", "full")),),
        {"tradeoff": "Memory falls; time rises", "free": "Both fall", "optimizer": "Only optimizer state changes",
         "none": "Nothing changes"},
    ),
    "E": PartSpec(
        "E", "What should we fix before buying hardware?", "Which fix should be tested before buying hardware?",
        (
            Control("intervention", "First systems fix", "choice", None, choices=(*FIXES, "none"), decision=True),
            Control("rejected_alternative", "Tested alternative if you hold", "choice", None, choices=FIXES, decision=True),
        ),
        {"prefetch": "Prefetch input", "arithmetic": "Faster arithmetic", "checkpoint": "Checkpoint activations"},
        has_decision=True,
    ),
}


# -- building ---------------------------------------------------------------
def _compare(track: str, family: str, key: Any, **changes: Any) -> dict[str, Any]:
    """The inputs of one time-to-target arm (``compare_time_to_target``'s keys), the track's defaults otherwise."""
    p = PHYSICAL_BATCH[track]
    inputs = {"track_id": track, "evidence_family": family, "evidence_key": key, "physical_batch": p,
              "accumulation_steps": 32 // p, "precision": "bf16", "optimizer": "adamw", "checkpointing": "none",
              "input_policy": "baseline", "compute_policy": "baseline"}
    return {**inputs, **changes}


def _memory(track: str, checkpointing: str) -> dict[str, Any]:
    """The inputs of part D's memory ledger at the track's probe batch (``memory_outcome``'s keys)."""
    return {"track_id": track, "physical_batch": PROBE_BATCH[track], "accumulation_steps": 1, "precision": "bf16",
            "optimizer": "adamw", "checkpointing": checkpointing}


_FIX_CHANGES = {"prefetch": {"input_policy": "prefetch"}, "arithmetic": {"compute_policy": "faster_arithmetic"},
                "checkpoint": {"checkpointing": "full"}}


def selected_fix(controls: Mapping[str, Any]) -> str | None:
    """The comparison part E keeps: the chosen fix, or on a hold the tested alternative (None: nothing tested)."""
    intervention, rejected = controls.get("intervention"), controls.get("rejected_alternative")
    if intervention in FIXES:
        return str(intervention)
    if intervention == "none" and rejected in FIXES:
        return str(rejected)
    return None


def arm_inputs(track: str, part: str, c: Mapping[str, Any]) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c``, and the ``inputs`` its record keeps."""
    if part == "A":
        optimizers = ("sgd", "adam", "adamw")
        arms = {name: _compare(track, "optimizer", name, optimizer=name) for name in optimizers}
        return ArmInputs(arms["sgd"], arms[c["optimizer"]], tuple(arms[name] for name in optimizers),
                         {"optimizer_choice": c["optimizer"]})
    if part == "B":
        menu = {name: _compare(track, "effective_batch", p * a, physical_batch=p, accumulation_steps=a)
                for name, (p, a) in batch_menu(track).items()}
        p, a = batch_menu(track)[c["strategy"]]
        return ArmInputs(menu["baseline"], menu[c["strategy"]], tuple(menu.values()),
                         {"physical_batch": p, "accumulation_steps": a})
    if part == "C":
        arms = {name: _compare(track, "precision", name, precision=name) for name in PRECISIONS}
        return ArmInputs(arms["fp32"], arms[c["precision"]], tuple(arms.values()), {"precision": c["precision"]})
    if part == "D":
        return ArmInputs(_memory(track, "none"), _memory(track, c["checkpointing"]),
                         ({"track_id": track, "checkpointing": c["checkpointing"]},),
                         {"physical_batch": PROBE_BATCH[track], "checkpointing": c["checkpointing"]})
    baseline = _compare(track, "effective_batch", 32)
    fix = selected_fix(c)
    result = baseline if fix is None else {**baseline, **_FIX_CHANGES[fix]}
    return ArmInputs(baseline, result, tuple({"track_id": track, "intervention": name} for name in FIXES),
                     {"intervention": c["intervention"], "rejected_alternative": c["rejected_alternative"]})


ROLES = {"A": "chosen optimizer", "B": "chosen batch strategy", "C": "chosen precision", "D": "chosen checkpoint policy",
         "E": "chosen systems intervention"}


def plan(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
         upstream: Mapping[str, Any]) -> PartPlan:
    """A part's plan: its arms evaluated through ``replay``, its decision and chosen result as the book captures them."""
    key = model_key(part)
    arms = arm_inputs(track, part, controls)
    baseline = replay.evaluate(lab, track, key, arms.baseline)
    result = replay.evaluate(lab, track, key, arms.result)
    other = {"D": CHECKPOINT_TIMING_KEY, "E": COMPARISON_KEY}.get(part, key)
    alternatives = tuple(replay.evaluate(lab, track, other, item) for item in arms.alternatives)
    if part == "A":
        decision: Any = controls["optimizer"]
    elif part == "B":
        decision = "{}x{}".format(*batch_menu(track)[controls["strategy"]])
    elif part == "C":
        decision = controls["precision"]
    elif part == "D":
        decision = controls["checkpointing"]
    else:
        decision = controls["intervention"]
    hold = part == "E" and decision == "none"
    return PartPlan(part=part, model_key=key, upstream=arms.upstream, baseline=baseline, result=result,
                    alternatives=alternatives, decision=decision, chosen_result=baseline if hold else result,
                    result_role="rejected alternative" if hold else ROLES[part])


def record_shape_errors() -> tuple[type[BaseException], ...]:
    """What reading a hand-edited record can raise (missing keys, wrong types), for an ``except`` clause."""
    return (LookupError, TypeError, ValueError, AttributeError)


def inferred_controls(track: str, part: str, record: EvidenceRecord) -> dict[str, Any] | None:
    """The controls a record's arms were built from, or None; may raise :func:`record_shape_errors`."""
    if part == "E":
        inputs = record.inputs
        if not isinstance(inputs, Mapping) or set(inputs) != {"intervention", "rejected_alternative"}:
            return None
        if inputs["intervention"] == "none" and inputs["rejected_alternative"] not in FIXES:
            return None  # a hold that names no tested alternative: the book never captures it (its button is disabled)
        return {"intervention": inputs["intervention"], "rejected_alternative": inputs["rejected_alternative"]}
    result = recorded_inputs(record.result)
    if not isinstance(result, Mapping):
        return None
    if part == "A":
        return {"optimizer": result["optimizer"]}
    if part == "B":
        found = [name for name, batch in batch_menu(track).items()
                 if batch == (result["physical_batch"], result["accumulation_steps"]) and name != "baseline"]
        return {"strategy": found[0]} if found else None
    if part == "C":
        return {"precision": result["precision"]}
    return {"checkpointing": result["checkpointing"]}


def infer_controls(lab: Lab, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
    """The controls a record was built from (no part builds on another), or None."""
    if track not in PHYSICAL_BATCH:
        return None
    try:
        controls = inferred_controls(track, part, record)
    except record_shape_errors():
        return None
    return None if controls is None else InferredControls(controls, {})


def build_variants() -> tuple[BuildVariant, ...]:
    """None: the export's numbers (the book's hosted build) replay exactly under 0.3.0."""
    return ()


def upstream_inputs(part: str, inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the book's notebook seals a capture over: ``{}`` for every part (its ``common_upstream``), so every capture
    of one notebook run shares one seal of the track alone; a capture's own settings are checked against the final ones."""
    return {}


# -- judging ----------------------------------------------------------------
def _finishes(arm: Mapping[str, Any]) -> bool:
    return bool(arm["feasible"]) and arm["total_time_seconds"] is not None


def _largest_allocations(arm: Mapping[str, Any]) -> set[str]:
    memory = arm["memory"]
    sizes = {"weights": memory["weights_gb"], "gradients": memory["gradients_gb"], "optimizer": memory["optimizer_state_gb"]}
    top = max(sizes.values())
    return {name for name, size in sizes.items() if math.isclose(size, top, rel_tol=1e-12)}


def _soonest(track: str, plan: PartPlan) -> set[str]:
    """Part B: the verdicts of the offered strategies that reach the target soonest within every limit."""
    verdict = {"resident_32": "resident32", "accumulate_512": "largest", "accumulate_32": "middle",
               "accumulate_128": "middle"}
    names = list(batch_menu(track))
    finished = {name: arm["total_time_seconds"] for name, arm in zip(names, plan.alternatives, strict=True)
                if name != "baseline" and _finishes(arm)}
    if not finished:  # no offered strategy finishes (never with the pinned evaluator): they tie at never
        return {"equal"}
    best = min(finished.values())
    soonest = {verdict[name] for name, seconds in finished.items() if math.isclose(seconds, best, rel_tol=1e-12)}
    if len(finished) > 1 and all(math.isclose(seconds, best, rel_tol=1e-12) for seconds in finished.values()):
        soonest.add("equal")
    return soonest


def _acceptable_formats(plan: PartPlan) -> str:
    reached = [arm["reached_target"] for arm in plan.alternatives[1:]]
    if all(reached):
        return "all"
    return "mixed" if reached[0] and reached[1] else "fp32"


def _checkpoint_verdict(plan: PartPlan) -> str:
    memory_falls = plan.result["total_memory_gb"] < plan.baseline["total_memory_gb"]
    added = plan.alternatives[0]["added_update_time_ms"]
    if memory_falls:
        return "tradeoff" if added > 0 else "free"
    return "none"


def _best_fixes(plan: PartPlan) -> set[str]:
    deltas = {comparison["intervention"]: comparison["delta_update_time_ms"] for comparison in plan.alternatives}
    best = min(deltas.values())
    return {name for name, delta in deltas.items() if math.isclose(delta, best, rel_tol=1e-12, abs_tol=1e-9)}


def _verdicts(track: str, part: str, plan: PartPlan) -> list[str]:
    """Every verdict the numbers support, the displayed one first (in the part's option order)."""
    options = list(PARTS[part].predictions)
    if part == "A":
        found = _largest_allocations(plan.alternatives[2])
    elif part == "B":
        found = _soonest(track, plan)
    elif part == "C":
        found = {_acceptable_formats(plan)}
    elif part == "D":
        found = {_checkpoint_verdict(plan)}
    else:
        found = _best_fixes(plan)
    return [option for option in options if option in found]


def displayed_prediction(track: str, part: str, plan: PartPlan) -> str:
    """The verdict the notebook shows (the module docstring's rules)."""
    return _verdicts(track, part, plan)[0]


def accepted_predictions(track: str, part: str, plan: PartPlan) -> frozenset[str]:
    """The displayed verdict and any other the numbers equally support (a tie)."""
    return frozenset(_verdicts(track, part, plan))


def decision_problems(track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]:
    """Part E's first systems fix: a tested fix, or a hold naming the tested alternative it rejects; the captured
    decision is the recorded fix, and the chosen result is the fix's result (the unchanged baseline on a hold)."""
    if part != "E":
        return []
    inputs = record.inputs if isinstance(record.inputs, Mapping) else {}
    intervention, rejected = inputs.get("intervention"), inputs.get("rejected_alternative")
    if intervention not in (*FIXES, "none"):
        return [Problem("Choose the first systems fix (prefetch, arithmetic or checkpoint) or hold ('none') for more evidence.",
                        [*FIXES, "none"], intervention)]
    problems: list[Problem] = []
    if intervention == "none" and rejected not in FIXES:
        problems.append(Problem("A hold must name the tested alternative it rejects (prefetch, arithmetic or checkpoint); "
                                "choose it and recapture part E.", list(FIXES), rejected))
    if record.decision != intervention:
        problems.append(Problem("Part E's captured decision must be the fix its inputs record; recapture part E.",
                                intervention, record.decision))
    expected = "baseline" if intervention == "none" else "result"
    chosen = record.chosen_result
    if chosen is None or recorded_inputs(chosen) != recorded_inputs(getattr(record, expected) or {}):
        problems.append(Problem(f"With decision {intervention!r} the chosen result must be the {expected} arm; recapture part E.",
                                expected, "missing" if chosen is None else "another arm"))
    return problems


def synthesis_problems(bundle: Bundle) -> list[Problem]:
    """A listed recommendation equal to part E's saved decision, a tested rejected alternative different from it (on a
    hold: the alternative part E tested), a listed trigger and limitation."""
    s = bundle.synthesis
    problems: list[Problem] = []
    values = [choice.value for choice in RECOMMENDATIONS]
    if s.recommendation not in values:
        problems.append(Problem("Choose a recommendation: one tested fix, or hold for more evidence.", values, s.recommendation))
    if s.rejected_alternative not in REJECTABLE:
        problems.append(Problem("Choose the tested alternative you reject (prefetch, arithmetic or checkpoint).",
                                list(REJECTABLE), s.rejected_alternative))
    elif s.recommendation == s.rejected_alternative:
        problems.append(Problem("The rejected alternative must differ from the recommendation.", "a different fix",
                                s.rejected_alternative))
    e = bundle.evidence.get("E")
    saved = e.decision if e is not None else None
    if s.recommendation in values and s.recommendation != saved:
        problems.append(Problem("The recommendation must be the decision you saved in part E; recapture part E with it or "
                                "change the recommendation.", saved, s.recommendation))
    elif s.recommendation == "none" and e is not None:
        tested = e.inputs.get("rejected_alternative") if isinstance(e.inputs, Mapping) else None
        if s.rejected_alternative != tested:
            problems.append(Problem("When you hold, the rejected alternative must be the one you tested in part E.",
                                    tested, s.rejected_alternative))
    for field, options, what in (("reevaluation_trigger", TRIGGERS, "re-evaluation trigger"),
                                 ("residual_risk", LIMITATIONS, "remaining limitation")):
        value = getattr(s, field)
        if value not in [option.value for option in options]:
            problems.append(Problem(f"Choose a {what} from the lab's list.", [option.value for option in options], value))
    return problems
