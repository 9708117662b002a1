"""What only code says of Lab 08 (``lab.toml`` declares the rest): each part's arms, the decision every part records,
the controls a record was built from, the verdicts its numbers give, part E's fix-or-hold rules, the synthesis rules
tied to part E, the reference answers ``solve`` writes, and what the book's marimo export repeats.

Arms are shaped as the book's marimo lab captures them: flat dictionaries of plain numbers with their ``inputs``, each
part under its own experiment (its declared ``model_key``).  Part D's one alternative (``checkpoint_experiment``) and
part E's three (the ``bottleneck_experiment`` comparisons) keep no inputs; :mod:`.evaluate` computes them.  An arm
that fails a limit (``feasible`` false, with its ``violations``: memory, target quality, schedule, cost) is evidence
like any other: a resident batch of 32 that runs out of memory, or the largest accumulated batch that never reaches
the target quality, is a valid failing contrast.

The book seals every capture over ``{}`` (``seal = "empty"``): no part builds on another, and a capture's seal binds
only its track; its settings are still compared with the final ones (the staleness check reads the record's
``inputs``).  What the book gates, the domain leaves out: part B's strategies are the four that differ from the
baseline batch (the book's capture button is disabled on the baseline), and a part E hold that names no tested
alternative builds an intervention identical to its baseline, so the notebook never captures it and a record of one
reads no controls (:func:`infer_controls`): part E is void.

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

Nothing here imports mlsysim: the constants the arms need (each track's physical and probe batch, the fixes' ranking)
are the spec's, pinned to the evaluator by ``tests/labs/test_lab08.py``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import ArmInputs, Binding, DecisionCopy, InferredControls, PartPlan, Problem
from mlsys_grader.core.labspec import arm_inputs as recorded_inputs
from mlsys_grader.labs.declared import chosen_arm_problems, missing_answers, read_controls, spec_of

if TYPE_CHECKING:
    from mlsys_grader.core.models import EvidenceRecord
    from mlsys_grader.core.replayer import Replayer
    from mlsys_grader.labs.declared import Lab
    from mlsys_grader.labs.spec import LabSpec


@cache
def declaration() -> LabSpec:
    """The lab's ``lab.toml``, for what the core asks without the lab (verdicts, decision rules, the marimo export)."""
    return spec_of(__package__)


def _decision(spec: LabSpec) -> tuple[str, list[str], str]:
    """Part E's declared decision: its control (the fix, ``intervention``), the values that hold ("none") and the control
    naming the tested alternative a hold rejects (``rejected_alternative``)."""
    decision = spec.parts["E"].decision
    assert decision is not None and decision.control is not None and decision.alternative_control is not None
    return decision.control, decision.hold, decision.alternative_control


def fixes(spec: LabSpec) -> tuple[str, ...]:
    """Part E's tested fixes, in the book's order (its comparisons' order): the menu of the tested alternative."""
    alternative = next(c for c in spec.parts["E"].controls if c.name == _decision(spec)[2])
    return tuple(str(choice) for choice in alternative.choices)


def batch_menu(spec: LabSpec, track: str) -> dict[str, tuple[int, int]]:
    """The book's batch menu on ``track`` in its order: ``"baseline"`` and each strategy → (physical batch, accumulation
    steps), as ``batch_policy`` derives them from the track's physical batch ``p``: ``p × 8/p``, ``p × 32/p``, ``32 × 1``,
    ``p × 128/p``, ``p × 512/p``."""
    p = spec.constant("physical_batch", track)
    return {"baseline": (p, 8 // p), "accumulate_32": (p, 32 // p), "resident_32": (32, 1),
            "accumulate_128": (p, 128 // p), "accumulate_512": (p, 512 // p)}


# -- building ---------------------------------------------------------------
def _compare(spec: LabSpec, track: str, family: str, key: Any, **changes: Any) -> dict[str, Any]:
    """The inputs of one time-to-target arm (``compare_time_to_target``'s keys), the track's defaults otherwise."""
    p = spec.constant("physical_batch", track)
    inputs = {"track_id": track, "evidence_family": family, "evidence_key": key, "physical_batch": p,
              "accumulation_steps": 32 // p, "precision": "bf16", "optimizer": "adamw", "checkpointing": "none",
              "input_policy": "baseline", "compute_policy": "baseline"}
    return {**inputs, **changes}


def _memory(spec: LabSpec, track: str, checkpointing: str) -> dict[str, Any]:
    """The inputs of part D's memory ledger at the track's probe batch (``memory_outcome``'s keys)."""
    return {"track_id": track, "physical_batch": spec.constant("probe_batch", track), "accumulation_steps": 1,
            "precision": "bf16", "optimizer": "adamw", "checkpointing": checkpointing}


_FIX_CHANGES = {"prefetch": {"input_policy": "prefetch"}, "arithmetic": {"compute_policy": "faster_arithmetic"},
                "checkpoint": {"checkpointing": "full"}}
PRECISIONS = ("fp32", "bf16", "fp16", "fp8")


def selected_fix(controls: Mapping[str, Any]) -> str | None:
    """The comparison part E keeps: the chosen fix, or on a hold the tested alternative (None: nothing tested)."""
    control, hold, alternative = _decision(declaration())
    intervention, rejected = controls.get(control), controls.get(alternative)
    tested = fixes(declaration())
    if intervention in tested:
        return str(intervention)
    if intervention in hold and rejected in tested:
        return str(rejected)
    return None


def arm_inputs(lab: Lab, track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c``, and the ``inputs`` its record keeps."""
    spec = lab.spec
    if part == "A":
        optimizers = ("sgd", "adam", "adamw")
        arms = {name: _compare(spec, track, "optimizer", name, optimizer=name) for name in optimizers}
        return ArmInputs(arms["sgd"], arms[c["optimizer"]], tuple(arms[name] for name in optimizers),
                         {"optimizer_choice": c["optimizer"]})
    if part == "B":
        menu = {name: _compare(spec, track, "effective_batch", p * a, physical_batch=p, accumulation_steps=a)
                for name, (p, a) in batch_menu(spec, track).items()}
        p, a = batch_menu(spec, track)[c["strategy"]]
        return ArmInputs(menu["baseline"], menu[c["strategy"]], tuple(menu.values()),
                         {"physical_batch": p, "accumulation_steps": a})
    if part == "C":
        arms = {name: _compare(spec, track, "precision", name, precision=name) for name in PRECISIONS}
        return ArmInputs(arms["fp32"], arms[c["precision"]], tuple(arms.values()), {"precision": c["precision"]})
    if part == "D":
        return ArmInputs(_memory(spec, track, "none"), _memory(spec, track, c["checkpointing"]),
                         ({"track_id": track, "checkpointing": c["checkpointing"]},),
                         {"physical_batch": spec.constant("probe_batch", track), "checkpointing": c["checkpointing"]})
    baseline = _compare(spec, track, "effective_batch", 32)
    fix = selected_fix(c)
    result = baseline if fix is None else {**baseline, **_FIX_CHANGES[fix]}
    return ArmInputs(baseline, result, tuple({"track_id": track, "intervention": name} for name in fixes(spec)),
                     {"intervention": c["intervention"], "rejected_alternative": c["rejected_alternative"]})


_DECIDED_BY = {"A": "optimizer", "C": "precision", "D": "checkpointing", "E": "intervention"}
_ROLES = {"A": "chosen optimizer", "B": "chosen batch strategy", "C": "chosen precision", "D": "chosen checkpoint policy",
          "E": "chosen systems intervention"}


def decide(lab: Lab, part: str, controls: Mapping[str, Any], baseline: dict[str, Any], result: dict[str, Any],
           alternatives: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every part records its choice as the book's notebook words it (part B as physical batch × accumulation steps) and
    keeps its chosen arm; part E's declared hold keeps the unchanged baseline, the tested arm its rejected alternative."""
    if part == "B":
        inputs = recorded_inputs(result)
        decision: Any = f"{inputs['physical_batch']}x{inputs['accumulation_steps']}"
    else:
        decision = controls[_DECIDED_BY[part]]
    declared = lab.spec.parts[part].decision
    hold = declared is not None and decision in declared.hold
    return {"decision": decision, "chosen_result": baseline if hold else result,
            "result_role": "rejected alternative" if hold else _ROLES[part]}


def infer_controls(lab: Lab, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
    """The controls a record was built from (no part builds on another), or None, whatever the record holds: parts A, C
    and D read their one control from the result's inputs, part B finds its strategy in the track's menu, and part E
    reads the fix and the tested alternative from the record's inputs (None for a hold naming no tested alternative)."""
    if track not in lab.tracks:
        return None
    try:
        if part == "E":
            control, hold, alternative = _decision(lab.spec)
            inputs = record.inputs
            if not isinstance(inputs, Mapping) or set(inputs) != {control, alternative}:
                return None
            if inputs[control] in hold and inputs[alternative] not in fixes(lab.spec):
                return None  # a hold that names no tested alternative: the book never captures it (its button is disabled)
            return InferredControls({control: inputs[control], alternative: inputs[alternative]}, {})
        if part == "B":
            result = recorded_inputs(record.result)
            if not isinstance(result, Mapping):
                return None
            found = [name for name, batch in batch_menu(lab.spec, track).items()
                     if batch == (result["physical_batch"], result["accumulation_steps"]) and name != "baseline"]
            return InferredControls({"strategy": found[0]}, {}) if found else None
        return read_controls(lab.spec, part, record)
    except (LookupError, TypeError, ValueError, AttributeError):  # a hand-edited record: missing keys, wrong types
        return None


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
    names = list(batch_menu(declaration(), track))
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
    options = list(declaration().parts[part].predictions)
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
    tested = list(fixes(declaration()))
    inputs = record.inputs if isinstance(record.inputs, Mapping) else {}
    intervention, rejected = inputs.get("intervention"), inputs.get("rejected_alternative")
    if intervention not in (*tested, "none"):
        return [Problem("Choose the first systems fix (prefetch, arithmetic or checkpoint) or hold ('none') for more evidence.",
                        [*tested, "none"], intervention)]
    problems: list[Problem] = []
    if intervention == "none" and rejected not in tested:
        problems.append(Problem("A hold must name the tested alternative it rejects (prefetch, arithmetic or checkpoint); "
                                "choose it and recapture part E.", tested, rejected))
    if record.decision != intervention:
        problems.append(Problem("Part E's captured decision must be the fix its inputs record; recapture part E.",
                                intervention, record.decision))
    return problems + chosen_arm_problems(record, intervention, intervention == "none")


def _message(spec: LabSpec, code: str) -> str:
    return spec.problems[code].message


# -- reference answers --------------------------------------------------------
def ranked_fixes(lab: Lab, replay: Replayer, track: str) -> list[str]:
    """Part E's fixes, the one cutting update time most first (from the comparisons every part E plan holds)."""
    comparisons = lab.plan(replay, track, "E", {"intervention": None, "rejected_alternative": None}, {}).alternatives
    return [c["intervention"] for c in sorted(comparisons, key=lambda c: c["delta_update_time_ms"])]


def complete_decision(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                      rng: random.Random | None) -> dict[str, Any]:
    """``controls`` with part E's fix (or a hold) and a different tested alternative: drawn with ``rng``, else the fix
    that cuts update time most, rejecting the runner-up."""
    controls = dict(controls)
    if part != "E":
        return controls
    if rng is None:
        ranked = ranked_fixes(lab, replay, track)
        controls["intervention"], controls["rejected_alternative"] = ranked[0], ranked[1]
        return controls
    intervention = rng.choice(lab.parts["E"].control("intervention").choices)
    controls["intervention"] = intervention
    controls["rejected_alternative"] = rng.choice([fix for fix in fixes(lab.spec) if fix != intervention])
    return controls


def reference_choices(lab: Lab, plans: Mapping[str, PartPlan]) -> tuple[str, str]:
    """(recommendation, rejected) that ``solve`` answers: part E's saved decision and the alternative it names, else the
    tested fix other than the chosen one that cuts update time most (a hold that names none, which the book never
    captures, included: its template still names a tested fix, so the ``generated`` check reads it like any other)."""
    e = plans["E"]
    decision, rejected = e.decision, (e.upstream or {}).get("rejected_alternative")
    if rejected in fixes(lab.spec) and rejected != decision:
        return str(decision), str(rejected)
    others = sorted((c for c in e.alternatives if c["intervention"] != decision), key=lambda c: c["delta_update_time_ms"])
    return str(decision), str(others[0]["intervention"])


def reference_rationale(lab: Lab, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
    """The rationale ``solve`` writes for these plans, trigger and limitation (values from the lab's lists)."""
    a, b, c, d, e = (plans[p] for p in "ABCDE")
    recommendation, rejected = reference_choices(lab, plans)
    recommendations = lab.synthesis_choices()["recommendation"]
    rec_label = lab.option(recommendations, recommendation).label
    rej_label = lab.option(recommendations, rejected).label
    trigger_label = lab.option(lab.triggers, trigger).label
    risk_label = lab.option(lab.limitations, limitation).label
    comparison = {x["intervention"]: x for x in e.alternatives}
    rej = comparison[rejected]
    b_time = b.result["total_time_seconds"]
    b_text = f"{b_time:.3f} s" if b_time is not None else "none (the target is missed)"
    return (
        f"I recommend {rec_label.lower()} and reject {rej_label.lower()}. "
        f"Evidence from part A: the AdamW arm records optimizer_state_gb = {a.alternatives[2]['memory']['optimizer_state_gb']:.3f} GB "
        f"and total_memory_gb = {a.alternatives[2]['memory']['total_memory_gb']:.3f} GB. "
        f"Evidence from part B: the {b.result['timing']['physical_batch']} x {b.result['timing']['accumulation_steps']} arm "
        f"records update_time_ms = {b.result['timing']['update_time_ms']:.3f} ms and a time to target of {b_text}. "
        f"Evidence from part C: the {c.result['memory']['precision']} arm records total_memory_gb = "
        f"{c.result['memory']['total_memory_gb']:.3f} GB against {c.baseline['memory']['total_memory_gb']:.3f} GB for fp32. "
        f"Evidence from part D: the {d.result['checkpointing']} ledger records total_memory_gb = {d.result['total_memory_gb']:.3f} GB "
        f"against {d.baseline['total_memory_gb']:.3f} GB without checkpointing. "
        f"Evidence from part E: the {rejected} comparison records delta_update_time_ms = {rej['delta_update_time_ms']:.3f} ms. "
        f"Remaining limitation: {risk_label.lower()}. Re-evaluation trigger: {trigger_label.lower()}."
    )


# -- the book's marimo export ---------------------------------------------------
def marimo_binding(captures: Mapping[str, Any]) -> Binding:
    """Each part's violations of its chosen arm (else its intervention): a memory ledger keeps none, so an infeasible one
    binds on memory, as the book writes it."""
    found: Binding = {}
    for part in declaration().parts:
        capture = captures.get(part)
        arm = (capture.get("chosen_result") or capture.get("result")) if isinstance(capture, Mapping) else None
        if isinstance(arm, Mapping):
            violations = arm.get("violations", ["memory"] if not arm.get("feasible", True) else [])
            found[part] = (part, "violations", list(violations) if isinstance(violations, (list, tuple)) else violations)
    return found


def marimo_decision_copies(captures: Mapping[str, Any], snapshot: Mapping[str, Any]) -> list[DecisionCopy]:
    """The book downloads its report only once the recommendation equals part E's saved decision (and, on a hold, the
    rejected alternative equals the one part E tested): part E's saved decision against the recommendation and, on a
    hold, its tested alternative against the rejected one."""
    capture = captures.get("E")
    if not isinstance(capture, Mapping):
        return []
    copies = [DecisionCopy("E", "recommendation", capture.get("decision"), snapshot.get("recommendation"))]
    inputs = capture.get("inputs")
    if capture.get("decision") == "none" and isinstance(inputs, Mapping):
        copies.append(DecisionCopy("E", "rejected_alternative", inputs.get("rejected_alternative"),
                                   snapshot.get("rejected_alternative")))
    return copies


def marimo_missing(snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
    """Each empty answer, the rationale, and a rejected alternative equal to a recommended fix (not to a hold)."""
    marimo = declaration().marimo
    assert marimo is not None
    lacking = missing_answers(marimo, snapshot, has_rationale)
    recommendation = snapshot.get(marimo.recommendation)
    if recommendation and recommendation != "none" and recommendation == snapshot.get(marimo.rejected):
        lacking.append("a rejected alternative different from the recommendation")
    return lacking
