"""What only code says of Lab 02 (``lab.toml`` declares the rest): each part's arms (part D's designs under part A's
payload and link), the verdicts their numbers give, part D's placement decision and its rules, the synthesis rules
(the recommendation is part D's captured placement), what the book seals part D over, the controls read back from a
record, the reference answers ``solve`` writes and the book's marimo export.

The book's notebook offers each track its own payload and link menus (three values each); the controls are the
track-independent positions ``payload_levels`` / ``connection_levels`` of that track's menu (the spec's constants), so
one notebook serves every track and the recorded inputs hold the book's numbers.  Nothing here imports mlsysim: the
menus, distances and duty cycles are the spec's constants, pinned to the evaluator by ``tests/labs/test_lab02.py``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import ArmInputs, Binding, InferredControls, PartPlan, Problem
from mlsys_grader.core.labspec import arm_inputs as recorded_inputs
from mlsys_grader.labs.declared import missing_answers, read_controls, spec_of

if TYPE_CHECKING:
    from mlsys_grader.core.models import EvidenceRecord
    from mlsys_grader.core.replayer import Replayer
    from mlsys_grader.labs.declared import Lab
    from mlsys_grader.labs.spec import LabSpec


@cache
def candidates() -> tuple[str, ...]:
    """Part D's designs in the book's order: local execution and the three remote filtering choices."""
    return tuple(spec_of(__package__).constant("candidates"))


# -- building ---------------------------------------------------------------
def placement_inputs(spec: LabSpec, track: str, payload_mb: float, connection_mbps: float, *, connectivity: bool = True,
                     filter_id: str = "raw") -> dict[str, Any]:
    """The evaluator inputs of one request's placement accounting, as ``placement_accounting`` records them."""
    return {"track_id": track, "payload_mb": payload_mb, "connection_mbps": connection_mbps,
            "distance_km": spec.constant("distance_km", track), "connectivity_available": connectivity,
            "filter_id": filter_id}


def candidate_inputs(spec: LabSpec, track: str, candidate: str, payload_mb: float, connection_mbps: float,
                     connectivity: bool) -> dict[str, Any]:
    """The evaluator inputs of one of part D's designs, as ``compare_placements`` records them."""
    if candidate == "local":
        return {"track_id": track, "placement": "local"}
    return {**placement_inputs(spec, track, payload_mb, connection_mbps, connectivity=connectivity, filter_id=candidate),
            "placement": "remote"}


def compared_designs(choice: Any, rejected: Any) -> tuple[Any, Any]:
    """(the design part D's result shows, the design its baseline shows), as the book's notebook picks them: the choice
    against the rejected design, or with no feasible design the rejected one against local (raw when it is local)."""
    compared = choice if choice not in (None, "none") else rejected
    baseline = rejected if choice not in (None, "none") else ("local" if compared != "local" else "raw")
    return compared, baseline


def arm_inputs(lab: Lab, track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c`` (``upstream``: part D's part A result arm),
    and the inputs its record keeps (what the book's notebook passes as the capture's ``inputs``)."""
    spec = lab.spec
    if part == "A":
        payloads, rates = spec.constant("payload_options_mb", track), spec.constant("connection_options_mbps", track)
        payload = payloads[spec.constant("payload_levels").index(c["payload"])]
        rate = rates[spec.constant("connection_levels").index(c["connection"])]
        return ArmInputs(placement_inputs(spec, track, payloads[0], rates[-1]), placement_inputs(spec, track, payload, rate),
                         (), {"payload_mb": payload, "connection_mbps": rate})
    if part == "B":
        return ArmInputs({"track_id": track, "memory_scale": 1.0, "execution_scale": 1.0},
                         {"track_id": track, "memory_scale": float(c["memory_scale"]),
                          "execution_scale": float(c["execution_scale"])},
                         (), {"memory_scale": float(c["memory_scale"]), "execution_scale": float(c["execution_scale"])})
    if part == "C":
        duty, horizon = float(c["duty_cycle"]), spec.constant("horizon_hours")
        return ArmInputs({"track_id": track, "duty_cycle": spec.constant("baseline_duty_cycle", track), "horizon_hours": horizon},
                         {"track_id": track, "duty_cycle": duty, "horizon_hours": horizon},
                         ({"track_id": track, "duty_cycle": 0.0, "horizon_hours": horizon},),
                         {"duty_cycle": duty})
    a_inputs = upstream["A"]["inputs"]
    payload, rate, connectivity = a_inputs["payload_mb"], a_inputs["connection_mbps"], c["connectivity_available"]
    designs = {name: candidate_inputs(spec, track, name, payload, rate, connectivity) for name in candidates()}
    compared, baseline = compared_designs(c["choice"], c["rejected"])
    # The book's fallbacks for a design it does not offer (a decision outside its choices is judged by the rules).
    baseline_in = designs[baseline] if isinstance(baseline, str) and baseline in designs else designs["local"]
    compared_in = designs[compared] if isinstance(compared, str) and compared in designs else designs["event_filter"]
    return ArmInputs(baseline_in, compared_in, tuple(designs.values()),
                     {"payload_mb": payload, "connection_mbps": rate, "connectivity_available": connectivity,
                      "choice": c["choice"], "rejected": c["rejected"], "compared_design": compared})


def decide(lab: Lab, part: str, controls: Mapping[str, Any], baseline: dict[str, Any], result: dict[str, Any],
           alternatives: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Part D's decision: the chosen design's arm (the result, which shows it), none with no feasible design (the
    result is then the rejected design)."""
    if part != "D":
        return {}
    choice = controls["choice"]
    return {"decision": choice, "chosen_result": result if choice in candidates() else None,
            "result_role": "rejected alternative" if choice == "none" else "chosen placement"}


def _level(levels: list[str], options: list[float], value: Any) -> str | None:
    """The menu position of a recorded value, or None (compared by value and type: ``True`` is not 1.0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return next((level for level, option in zip(levels, options, strict=True) if option == value), None)


def infer_controls(lab: Lab, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
    """The controls a record was built from (parts A and D: the menu positions of its payload and link) and, for part
    D, the part A result it builds on; or None."""
    spec = lab.spec
    if track not in spec.constants["payload_options_mb"]:
        return None
    payloads, rates = spec.constant("payload_options_mb", track), spec.constant("connection_options_mbps", track)
    payload_levels, connection_levels = spec.constant("payload_levels"), spec.constant("connection_levels")
    if part == "D":
        inputs = record.inputs if isinstance(record.inputs, Mapping) else {}
        payload = _level(payload_levels, payloads, inputs.get("payload_mb"))
        connection = _level(connection_levels, rates, inputs.get("connection_mbps"))
        connectivity = inputs.get("connectivity_available")
        if payload is None or connection is None or not isinstance(connectivity, bool):
            return None
        a_result = lab.plan(replay, track, "A", {"payload": payload, "connection": connection}, {}).result
        return InferredControls({"connectivity_available": connectivity, "choice": record.decision,
                                 "rejected": inputs.get("rejected")}, {"A": a_result})
    if part != "A":
        return read_controls(spec, part, record)
    result = recorded_inputs(record.result) if record.result else None
    if not isinstance(result, Mapping):
        return None
    payload = _level(payload_levels, payloads, result.get("payload_mb"))
    connection = _level(connection_levels, rates, result.get("connection_mbps"))
    return None if payload is None or connection is None else InferredControls(
        {"payload": payload, "connection": connection}, {})


# -- judging ----------------------------------------------------------------
def feasible_designs(plan: PartPlan) -> list[str]:
    """Part D's designs that satisfy every stated requirement, in the book's order."""
    return [name for name, arm in zip(candidates(), plan.alternatives, strict=False) if arm.get("feasible") is True]


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
    designs = candidates()
    choice = record.decision
    rejected = record.inputs.get("rejected") if isinstance(record.inputs, Mapping) else None
    if choice not in (*designs, "none") or rejected not in designs:
        return [Problem("Record a placement decision (local, raw, event_filter, feature_summary or none) and a different "
                        "tested design you reject.", {"choice": [*designs, "none"], "rejected": list(designs)},
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


# -- reference answers --------------------------------------------------------
def contrast(lab: Lab, track: str, part: str, controls: dict[str, Any], rng: random.Random | None) -> dict[str, Any]:
    """Never the reference run's own setting; part D rejects a remote design (drawn with ``rng``, else raw input)."""
    spec = lab.spec
    if part == "A":
        payload_levels, connection_levels = spec.constant("payload_levels"), spec.constant("connection_levels")
        if (controls["payload"], controls["connection"]) == (payload_levels[0], connection_levels[-1]):
            controls["payload"] = rng.choice(payload_levels[1:]) if rng else payload_levels[-1]
    if part == "B" and controls["memory_scale"] == 1.0 and controls["execution_scale"] == 1.0:
        controls["execution_scale"] = 2.0
    if part == "C":
        while controls["duty_cycle"] == spec.constant("baseline_duty_cycle", track):
            controls["duty_cycle"] = lab.parts[part].control("duty_cycle").sample(rng) if rng else 0.75
    if part == "D":
        controls["rejected"] = rng.choice(candidates()[1:]) if rng else "raw"
    return controls


def decision_options(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any]) -> tuple[str, ...]:
    """Local execution, the placement the rules accept whatever part A's payload and link: every track's local design
    fits its memory and deadline."""
    return ("local",)


def reference_choices(lab: Lab, plans: Mapping[str, PartPlan]) -> tuple[str, str]:
    """(recommendation, rejected) that ``solve`` answers: part D's captured placement and its rejected design."""
    d = plans["D"]
    return d.decision, d.upstream["rejected"]


def _design(lab: Lab, name: str) -> str:
    return lab.option(lab.synthesis_choices()["recommendation"], name).label.lower()


def reference_rationale(lab: Lab, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
    """The rationale ``solve`` writes for these plans, trigger and limitation (values from the lab's lists).

    The ``generated`` check re-renders it from a bundle's replayed plans, whose part D decision may be anything a
    record held: an unknown choice reads as "none" and an unknown rejected design as raw input.
    """
    a, b, c, d = plans["A"].result, plans["B"].result, plans["C"].result, plans["D"]
    designs = dict(zip(candidates(), d.alternatives, strict=False))
    choice = d.decision if d.decision in (*candidates(), "none") else "none"
    rejected = d.upstream.get("rejected") if isinstance(d.upstream, Mapping) else None
    rejected = rejected if rejected in designs else "raw"
    gone = designs[rejected]
    latency = "unavailable" if gone["latency_ms"] is None else f"{gone['latency_ms']} ms"
    verdict = "satisfies every requirement" if gone["feasible"] else "fails " + " and ".join(gone["violations"])
    return (
        f"I recommend {_design(lab, choice) if choice in designs else 'no feasible design'} and reject "
        f"{_design(lab, rejected)}. "
        f"Evidence from part D: the rejected design came out at latency {latency}, upload {gone['uploaded_payload_mb']} MB, "
        f"information {gone['retained_information_pct']}%, outcome {verdict}. "
        f"Evidence from part A: payload {a['raw_payload_mb']} MB, link {a['connection_mbps']} Mb/s, remote total "
        f"{a['remote_latency_ms']} ms against a deadline of {a['deadline_ms']} ms. "
        f"Evidence from part B: memory needed {b['required_memory_mb']} MB against {b['memory_capacity_mb']} MB, execution "
        f"{b['execution_ms']} ms. "
        f"Evidence from part C: duty setting {c['duty_cycle']}, mean draw {c['average_power_w']} W against an allowed "
        f"{c['average_power_budget_w']} W. "
        f"Remaining limitation: {lab.option(lab.limitations, limitation).label.lower()}. "
        f"Re-evaluation trigger: {lab.option(lab.triggers, trigger).label.lower()}."
    )


# -- the book's marimo export ---------------------------------------------------
def marimo_binding(captures: Mapping[str, Any]) -> Binding:
    """Each part's violations of its chosen arm (else its result), as ``binding_constraints`` repeats them."""
    found: Binding = {}
    for part in spec_of(__package__).parts:
        capture = captures.get(part)
        arm = (capture.get("chosen_result") or capture.get("result") or {}) if isinstance(capture, Mapping) else None
        if isinstance(arm, Mapping):
            found[part] = (part, "violations", arm.get("violations"))
    return found


def marimo_missing(snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
    """Each empty answer, the rationale, a rejected alternative equal to the recommendation, and a recommendation other
    than part D's captured placement (the book's lab downloads nothing until each is right)."""
    marimo = spec_of(__package__).marimo
    assert marimo is not None
    lacking = missing_answers(marimo, snapshot, has_rationale)
    recommendation = snapshot.get(marimo.recommendation)
    if recommendation and recommendation == snapshot.get(marimo.rejected):
        lacking.append("a rejected alternative different from the recommendation")
    captures = snapshot.get("captures")
    d = captures.get("D") if isinstance(captures, Mapping) else None
    if recommendation and isinstance(d, Mapping) and d.get("decision") != recommendation:
        lacking.append("a recommendation that is the part D placement decision")
    return lacking
