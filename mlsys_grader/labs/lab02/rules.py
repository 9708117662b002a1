"""Lab 02's domain and rules: parts, controls, how each part's arms are built, the decision rules.

This module is the lab's :class:`~mlsys_grader.core.labspec.PartRules`.  Nothing here imports mlsysim: the arms come
from :func:`evaluator` (the lab's :mod:`.evaluate`, loaded on first use).  ``PAYLOAD_OPTIONS_MB``,
``CONNECTION_OPTIONS_MBPS``, ``DISTANCE_KM`` and ``BASELINE_DUTY_CYCLE`` restate the evaluator's track profiles
(``tests/labs/test_lab02.py`` pins them to ``v1_02_experiments.TRACKS``), so building a part's inputs never imports it.

The book's notebook offers each track its own payload and link menus (three values each); here they are the
track-independent positions ``"smallest"`` / ``"middle"`` / ``"largest"`` and ``"slowest"`` / ``"middle"`` /
``"fastest"`` of that track's menu, so one notebook serves every track and the recorded inputs hold the book's numbers.
Part C's duty cycle moves in steps of 0.01 on every track (the book's TinyML step; its other tracks step by 0.05,
every one of which is allowed here too).

Part D compares every placement under part A's payload and link, so it builds on part A's result (its
``depends_on``) and the book seals it over part A's payload and link with its own connectivity, choice and rejected
design (:func:`upstream_inputs`): changing part A after capturing part D makes part D stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import ArmInputs, Control, InferredControls, PartPlan, PartSpec, Problem
from mlsys_grader.core.labspec import arm_inputs as recorded_inputs
from mlsys_grader.core.models import Bundle, EvidenceRecord
from mlsys_grader.core.values import BuildVariant

from .words import LIMITATIONS, PLACEMENTS, REJECTABLE, TRIGGERS

if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab
    from mlsys_grader.core.replayer import Replayer

MODEL_KEY = "v1_02_experiments"
"""The model key of every part (``v1_02_experiments.MODEL_KEY``)."""
PAYLOAD_OPTIONS_MB = {"tinyml": (0.01, 0.8, 1.6), "mobile": (0.25, 8.0, 16.0), "edge": (0.25, 12.0, 24.0),
                      "cloud": (0.5, 2.0, 4.0)}
"""Track → the book's request-payload menu (``TRACKS[track]["payload_options_mb"]``)."""
CONNECTION_OPTIONS_MBPS = {"tinyml": (1.0, 2.0, 5.0), "mobile": (20.0, 40.0, 100.0), "edge": (50.0, 100.0, 250.0),
                           "cloud": (50.0, 200.0, 1000.0)}
"""Track → the book's connection-rate menu (``TRACKS[track]["connection_options_mbps"]``)."""
DISTANCE_KM = {"tinyml": 1000.0, "mobile": 2000.0, "edge": 300.0, "cloud": 800.0}
"""Track → the fiber distance to the remote system (``TRACKS[track]["distance_km"]``)."""
BASELINE_DUTY_CYCLE = {"tinyml": 0.02, "mobile": 0.15, "edge": 0.35, "cloud": 0.5}
"""Track → part C's reference duty cycle (``TRACKS[track]["baseline_duty_cycle"]``)."""
HORIZON_HOURS = 24.0
"""Part C's horizon (``sustained_operation``'s default)."""
PAYLOAD_LEVELS = ("smallest", "middle", "largest")
CONNECTION_LEVELS = ("slowest", "middle", "fastest")
CANDIDATES = ("local", "raw", "event_filter", "feature_summary")
"""Part D's designs in the book's order: local execution and the three remote filtering choices."""


@cache
def evaluator() -> ModuleType:
    """The lab's :mod:`.evaluate` module, imported on first use with only the mlsysim modules it imports
    (:func:`mlsys_grader.labs.import_evaluator`: the whole package is slow to import)."""
    from mlsys_grader.labs import import_evaluator

    return import_evaluator(f"{__package__}.evaluate")


PARTS = {
    "A": PartSpec(
        "A", "When does distance rule out remote inference?",
        "What will the selected payload and link do?",
        (
            Control("payload", "Request payload", "choice", "largest", choices=PAYLOAD_LEVELS),
            Control("connection", "Connection rate", "choice", "middle", choices=CONNECTION_LEVELS),
        ),
        {"pass": "Remote stays within the deadline", "fail": "Remote crosses the deadline", "tie": "Local and remote tie"},
    ),
    "B": PartSpec(
        "B", "Does the workload fit here?",
        "Which local constraint will fail?",
        (
            Control("memory_scale", "Resident-memory demand", "float", 2.0, minimum=0.5, maximum=3.0, step=0.25),
            Control("execution_scale", "Sequential execution work", "float", 2.0, minimum=0.5, maximum=20.0, step=0.5),
        ),
        {"memory": "Memory fails first", "execution_time": "Execution time fails first", "both": "Both fail",
         "neither": "Both pass"},
    ),
    "C": PartSpec(
        "C", "Can a fast demonstration run continuously?",
        "What will the selected duty cycle violate?",
        (Control("duty_cycle", "Active observation fraction", "float", 0.75, minimum=0.0, maximum=1.0, step=0.01),),
        {"average_power": "Power budget only", "observation_time": "Observation requirement only",
         "both": "Both requirements", "neither": "Neither requirement"},
    ),
    "D": PartSpec(
        "D", "Where should the local/remote boundary fall?",
        "Which placement will satisfy every stated requirement?",
        (
            Control("connectivity_available", "Remote connection available", "bool", True),
            Control("choice", "Placement decision", "choice", None, choices=(*CANDIDATES, "none"), decision=True),
            Control("rejected", "Rejected alternative", "choice", None, choices=CANDIDATES, decision=True),
        ),
        {"local": "Local execution", "raw": "Raw remote", "event_filter": "Event filtering plus remote",
         "feature_summary": "Feature summary plus remote", "none": "No design is feasible"},
        depends_on=("A",),
        has_decision=True,
    ),
}


def evaluate(track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """One arm through the pinned evaluator (``track`` is in the inputs already)."""
    return evaluator().replay(model_key, inputs)


# -- building ---------------------------------------------------------------
def placement_inputs(track: str, payload_mb: float, connection_mbps: float, *, connectivity: bool = True,
                     filter_id: str = "raw") -> dict[str, Any]:
    """The evaluator inputs of one request's placement accounting, as ``placement_accounting`` records them."""
    return {"track_id": track, "payload_mb": payload_mb, "connection_mbps": connection_mbps,
            "distance_km": DISTANCE_KM[track], "connectivity_available": connectivity, "filter_id": filter_id}


def candidate_inputs(track: str, candidate: str, payload_mb: float, connection_mbps: float, connectivity: bool) -> dict[str, Any]:
    """The evaluator inputs of one of part D's designs, as ``compare_placements`` records them."""
    if candidate == "local":
        return {"track_id": track, "placement": "local"}
    return {**placement_inputs(track, payload_mb, connection_mbps, connectivity=connectivity, filter_id=candidate),
            "placement": "remote"}


def compared_designs(choice: Any, rejected: Any) -> tuple[Any, Any]:
    """(the design part D's result shows, the design its baseline shows), as the book's notebook picks them: the choice
    against the rejected design, or with no feasible design the rejected one against local (raw when it is local)."""
    compared = choice if choice not in (None, "none") else rejected
    baseline = rejected if choice not in (None, "none") else ("local" if compared != "local" else "raw")
    return compared, baseline


def arm_inputs(track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c`` (``upstream``: part D's part A result arm),
    and the inputs its record keeps (what the book's notebook passes as the capture's ``inputs``)."""
    if part == "A":
        payload = PAYLOAD_OPTIONS_MB[track][PAYLOAD_LEVELS.index(c["payload"])]
        rate = CONNECTION_OPTIONS_MBPS[track][CONNECTION_LEVELS.index(c["connection"])]
        return ArmInputs(placement_inputs(track, PAYLOAD_OPTIONS_MB[track][0], CONNECTION_OPTIONS_MBPS[track][-1]),
                         placement_inputs(track, payload, rate), (), {"payload_mb": payload, "connection_mbps": rate})
    if part == "B":
        return ArmInputs({"track_id": track, "memory_scale": 1.0, "execution_scale": 1.0},
                         {"track_id": track, "memory_scale": float(c["memory_scale"]),
                          "execution_scale": float(c["execution_scale"])},
                         (), {"memory_scale": float(c["memory_scale"]), "execution_scale": float(c["execution_scale"])})
    if part == "C":
        duty = float(c["duty_cycle"])
        return ArmInputs({"track_id": track, "duty_cycle": BASELINE_DUTY_CYCLE[track], "horizon_hours": HORIZON_HOURS},
                         {"track_id": track, "duty_cycle": duty, "horizon_hours": HORIZON_HOURS},
                         ({"track_id": track, "duty_cycle": 0.0, "horizon_hours": HORIZON_HOURS},),
                         {"duty_cycle": duty})
    a_inputs = upstream["A"]["inputs"]
    payload, rate, connectivity = a_inputs["payload_mb"], a_inputs["connection_mbps"], c["connectivity_available"]
    designs = {name: candidate_inputs(track, name, payload, rate, connectivity) for name in CANDIDATES}
    compared, baseline = compared_designs(c["choice"], c["rejected"])
    # The book's fallbacks for a design it does not offer (a decision outside its choices is judged by the rules).
    baseline_in = designs[baseline] if isinstance(baseline, str) and baseline in designs else designs["local"]
    compared_in = designs[compared] if isinstance(compared, str) and compared in designs else designs["event_filter"]
    return ArmInputs(baseline_in, compared_in,
                     tuple(designs.values()),
                     {"payload_mb": payload, "connection_mbps": rate, "connectivity_available": connectivity,
                      "choice": c["choice"], "rejected": c["rejected"], "compared_design": compared})


def plan(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
         upstream: Mapping[str, Any]) -> PartPlan:
    """A part's plan: its baseline, result and alternative arms, evaluated through ``replay``, and part D's decision."""
    arms = arm_inputs(track, part, controls, upstream)
    alternatives = tuple(replay.evaluate(lab, track, MODEL_KEY, item) for item in arms.alternatives)
    plan = PartPlan(part=part, model_key=MODEL_KEY, upstream=arms.upstream,
                    baseline=replay.evaluate(lab, track, MODEL_KEY, arms.baseline),
                    result=replay.evaluate(lab, track, MODEL_KEY, arms.result), alternatives=alternatives)
    if part != "D":
        return plan
    choice = controls["choice"]
    chosen = alternatives[CANDIDATES.index(choice)] if choice in CANDIDATES else None
    return PartPlan(part=part, model_key=MODEL_KEY, upstream=plan.upstream, baseline=plan.baseline, result=plan.result,
                    alternatives=alternatives, decision=choice, chosen_result=chosen,
                    result_role="rejected alternative" if choice == "none" else "chosen placement")


def _level(levels: tuple[str, ...], options: tuple[float, ...], value: Any) -> str | None:
    """The menu position of a recorded value, or None (compared by value and type: ``True`` is not 1.0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return next((level for level, option in zip(levels, options, strict=True) if option == value), None)


def infer_controls(lab: Lab, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
    """The controls a record was built from and (part D) the part A result it builds on, or None."""
    if track not in PAYLOAD_OPTIONS_MB:
        return None
    if part == "D":
        inputs = record.inputs if isinstance(record.inputs, Mapping) else {}
        payload = _level(PAYLOAD_LEVELS, PAYLOAD_OPTIONS_MB[track], inputs.get("payload_mb"))
        connection = _level(CONNECTION_LEVELS, CONNECTION_OPTIONS_MBPS[track], inputs.get("connection_mbps"))
        connectivity = inputs.get("connectivity_available")
        if payload is None or connection is None or not isinstance(connectivity, bool):
            return None
        a_result = lab.plan(replay, track, "A", {"payload": payload, "connection": connection}, {}).result
        return InferredControls({"connectivity_available": connectivity, "choice": record.decision,
                                 "rejected": inputs.get("rejected")}, {"A": a_result})
    result = recorded_inputs(record.result) if record.result else None
    if not isinstance(result, Mapping):
        return None
    if part == "A":
        payload = _level(PAYLOAD_LEVELS, PAYLOAD_OPTIONS_MB[track], result.get("payload_mb"))
        connection = _level(CONNECTION_LEVELS, CONNECTION_OPTIONS_MBPS[track], result.get("connection_mbps"))
        return None if payload is None or connection is None else InferredControls(
            {"payload": payload, "connection": connection}, {})
    names = [control.name for control in PARTS[part].controls]
    if not all(name in result for name in names):
        return None
    return InferredControls({name: result[name] for name in names}, {})


def build_variants() -> tuple[BuildVariant, ...]:
    """None: the book's hosted build of v1_02 gives 0.3.0's numbers (the genuine exports replay exactly)."""
    return ()


def upstream_inputs(part: str, inputs: Any) -> Any:
    """What the book's notebook seals a capture over (its ``upstream_inputs``): parts A–C their own ``inputs``; part D
    its ``inputs`` without ``compared_design`` (part A's payload and link, the connectivity, the choice and the
    rejected design), so a change to part A after part D was captured leaves part D stale."""
    if part == "D" and isinstance(inputs, Mapping):
        return {key: value for key, value in inputs.items() if key != "compared_design"}
    return inputs


# -- judging ----------------------------------------------------------------
def feasible_designs(plan: PartPlan) -> list[str]:
    """Part D's designs that satisfy every stated requirement, in the book's order."""
    return [name for name, arm in zip(CANDIDATES, plan.alternatives, strict=False) if arm.get("feasible") is True]


def displayed_prediction(track: str, part: str, plan: PartPlan) -> str:
    """The verdict the notebook shows: each follows from the selected result's violations (part D: the first design,
    in the book's order, that satisfies every requirement, or "none")."""
    result = plan.result
    if part == "A":
        return "fail" if "deadline" in result["violations"] else "pass"
    if part == "B":
        memory, execution = "memory" in result["violations"], "execution_time" in result["violations"]
        return "both" if memory and execution else "memory" if memory else "execution_time" if execution else "neither"
    if part == "C":
        power, observation = "average_power" in result["violations"], "observation_time" in result["violations"]
        return ("both" if power and observation else "average_power" if power
                else "observation_time" if observation else "neither")
    feasible = feasible_designs(plan)
    return feasible[0] if feasible else "none"


def accepted_predictions(track: str, part: str, plan: PartPlan) -> frozenset[str]:
    """The displayed verdict; in part A "Local and remote tie" too when the two latencies the notebook shows (one
    decimal) are equal; in part D every design that satisfies every requirement."""
    accepted = {displayed_prediction(track, part, plan)}
    if part == "A":
        remote, local = plan.result["remote_latency_ms"], plan.result["local_latency_ms"]
        if remote is not None and f"{remote:.1f}" == f"{local:.1f}":
            accepted.add("tie")
    if part == "D":
        accepted.update(feasible_designs(plan))
    return frozenset(accepted)


def decision_problems(track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]:
    """Part D's placement decision: a feasible design (or "none" only when no design is feasible), a different tested
    design rejected, and the chosen design's arm kept."""
    if part != "D":
        return []
    choice = record.decision
    rejected = record.inputs.get("rejected") if isinstance(record.inputs, Mapping) else None
    if choice not in (*CANDIDATES, "none") or rejected not in CANDIDATES:
        return [Problem("Record a placement decision (local, raw, event_filter, feature_summary or none) and a different "
                        "tested design you reject.", {"choice": [*CANDIDATES, "none"], "rejected": list(CANDIDATES)},
                        {"choice": choice, "rejected": rejected})]
    problems: list[Problem] = []
    feasible = feasible_designs(plan)
    if choice == rejected:
        problems.append(Problem("The rejected design must differ from the chosen placement.", "a different design", rejected))
    if choice == "none" and feasible:
        problems.append(Problem(f"'No feasible design' is valid only when no design satisfies every requirement; "
                                f"{', '.join(feasible)} {'does' if len(feasible) == 1 else 'do'} here.", "a feasible design",
                                choice))
    elif choice != "none" and choice not in feasible:
        problems.append(Problem(f"The {choice} placement fails a stated requirement here; choose a design that satisfies "
                                "every requirement, or 'none' only when none does.", feasible or ["none"], choice))
    expected = plan.chosen_result
    chosen = record.chosen_result
    if (expected is None) != (chosen is None) or (
            expected is not None and recorded_inputs(chosen) != recorded_inputs(expected)):
        problems.append(Problem(f"With decision {choice!r} the chosen result must be "
                                f"{'empty' if expected is None else 'that design'}; recapture part D.",
                                recorded_inputs(expected) if expected is not None else None,
                                "missing" if chosen is None else recorded_inputs(chosen)))
    return problems


def synthesis_problems(bundle: Bundle) -> list[Problem]:
    """The synthesis rules: a listed placement recommended that is part D's captured decision, a different tested
    design rejected, a listed trigger and limitation."""
    s = bundle.synthesis
    problems: list[Problem] = []
    values = [choice.value for choice in PLACEMENTS]
    if s.recommendation not in values:
        problems.append(Problem("Choose a recommended placement.", values, s.recommendation))
    if s.rejected_alternative not in REJECTABLE:
        problems.append(Problem("Choose the tested placement you reject (local, raw, event_filter or feature_summary).",
                                list(REJECTABLE), s.rejected_alternative))
    elif s.recommendation == s.rejected_alternative:
        problems.append(Problem("The rejected alternative must differ from the recommendation.", "a different placement",
                                s.rejected_alternative))
    d = bundle.evidence.get("D")
    decision = d.decision if d is not None else None
    if d is None:
        problems.append(Problem("Capture part D with a placement decision; the recommendation is that decision.",
                                "part D decision", None))
    elif s.recommendation in values and s.recommendation != decision:
        problems.append(Problem(f"The recommendation must be the placement decision you captured in part D ({decision!r}); "
                                "change the recommendation or recapture part D.", decision, s.recommendation))
    for field, options, what in (("reevaluation_trigger", TRIGGERS, "reversal trigger"),
                                 ("residual_risk", LIMITATIONS, "residual risk")):
        value = getattr(s, field)
        if value not in [option.value for option in options]:
            problems.append(Problem(f"Choose a {what} from the lab's list.", [option.value for option in options], value))
    return problems
