"""Lab 07 — The Framework Tax (``mlsysim.labs.experiments.v1_07_experiments``).

Everything lab-specific lives here: controls and their domains, how each part's
baseline and intervention are built (as the book's marimo lab builds them), the
decision rules, and the answers derived from replayed numbers.
"""

from __future__ import annotations

import math
import random
from typing import Any, Mapping

from mlsysim.labs.experiments import v1_07_experiments as ev

from ..core.labspec import Choice, Control, LabSpec, PartPlan, PartSpec

MODEL_KEY = ev.MODEL_KEY
OPERATION_COUNT = len(ev.OPERATION_GRAPH)

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

RECOMMENDATIONS = (
    Choice("eager", "Eager execution", ("eager",)),
    Choice("compiled", "Compiled execution", ("compiled execution", "compiled path", "compilation", "compiled")),
    Choice("compiled_fused", "Compiled with fusion", ("compiled with fusion", "fused", "fusion")),
    Choice("hold", "Hold current path for more evidence", ("hold",)),
    Choice("none", "No feasible target path", ("no feasible", "infeasible", "cannot execute", "unsupported")),
)
REJECTABLE = ("eager", "compiled", "compiled_fused")
TRIGGERS = (
    Choice("execution_count", "Execution count changes", ("execution count", "number of executions", "executions change")),
    Choice("shape_guards", "Shape guards change (TinyML: deployment shapes change)", ("shape guard", "deployment shape", "shapes change", "shape")),
    Choice("operator_set", "Operator set changes", ("operator set", "new operator", "operators change")),
    Choice("activation_memory", "Activation memory changes", ("activation memory", "activation")),
)
LIMITATIONS = (
    Choice("timing_assumptions", "Illustrative timing assumptions", ("timing assumption", "illustrative timing", "timing")),
    Choice("operator_interactions", "Unmodeled operator interactions", ("operator interaction", "unmodeled operator", "unmodeled")),
    Choice("target_measurement", "Unmeasured target behavior", ("unmeasured", "target behavior", "target behaviour", "measured on the target", "measurement")),
)

_SUFFIX_UNITS = {"_us": "microsecond", "_ms": "millisecond", "_mb": "megabyte"}
_FLOP_KEYS = {"flops", "repeated_flops", "total_step_flops"}


def _bucket(fraction: float) -> str:
    if fraction < 0.25:
        return "below_25"
    if fraction < 0.5:
        return "25_50"
    if fraction < 0.75:
        return "50_75"
    return "above_75"


class Lab07(LabSpec):
    lab_id = "lab07"
    title = "Lab 07 — The Framework Tax"
    model_id = MODEL_KEY
    parts = PARTS
    triggers = TRIGGERS
    limitations = LIMITATIONS
    recommendations = RECOMMENDATIONS

    def _evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return ev.replay(model_key, inputs)

    @staticmethod
    def tensor_elements(track: str) -> int:
        return ev.TRACKS[track].default_elements

    # -- building ---------------------------------------------------------------
    def _arm_inputs(self, track: str, part: str, c: Mapping[str, Any]) -> tuple[dict, dict, list[dict], dict]:
        te = self.tensor_elements(track)
        base = {"track_id": track, "tensor_elements": te}
        if part == "A":
            return (
                {**base, "dispatches": OPERATION_COUNT},
                {**base, "dispatches": c["dispatches"]},
                [{**base, "baseline_dispatches": OPERATION_COUNT, "intervention_dispatches": c["dispatches"]}],
                {"baseline_dispatches": OPERATION_COUNT, "intervention_dispatches": c["dispatches"]},
            )
        if part == "B":
            return (
                {**base, "executions": 1, "recompilations": 0},
                {**base, "executions": c["executions"], "recompilations": c["recompilations"]},
                [],
                {"executions": c["executions"], "recompilations": c["recompilations"]},
            )
        if part == "C":
            fusion = {"unsupported_operator": None, "shape_mode": "static"}
            return (
                {**base, **fusion, "graph_breaks": OPERATION_COUNT - 1},
                {**base, **fusion, "graph_breaks": c["graph_breaks"]},
                [],
                {"baseline_breaks": OPERATION_COUNT - 1, "intervention_breaks": c["graph_breaks"]},
            )
        if part == "D":
            return (
                {**base, "policy": "retain_all", "batch_size": c["batch_size"]},
                {**base, "policy": c["policy"], "batch_size": c["batch_size"]},
                [],
                {"batch_size": c["batch_size"], "policy": c["policy"]},
            )
        return (
            {**base, "operator": "relu", "shape_mode": "static"},
            {**base, "operator": c["operator"], "shape_mode": c["shape_mode"]},
            [],
            {"operator": c["operator"], "shape_mode": c["shape_mode"], "decision": c["decision"]},
        )

    def _plan(self, track: str, part: str, controls: Mapping[str, Any], upstream: Mapping[str, Any]) -> PartPlan:
        baseline_in, result_in, alternatives_in, upstream_inputs = self._arm_inputs(track, part, controls)
        plan = PartPlan(
            part=part,
            model_key=MODEL_KEY,
            upstream=upstream_inputs,
            baseline=self.evaluate(track, MODEL_KEY, baseline_in),
            result=self.evaluate(track, MODEL_KEY, result_in),
            alternatives=[self.evaluate(track, MODEL_KEY, item) for item in alternatives_in],
        )
        if part == "E":
            hold = controls["decision"] == "hold"
            plan.decision = controls["decision"]
            plan.chosen_result = plan.baseline if hold else plan.result
            plan.result_role = "rejected alternative" if hold else "tested intervention"
        return plan

    def infer_controls(self, track: str, part: str, record: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        result_inputs = self.arm_inputs(record.result) if record.result else None
        if not isinstance(result_inputs, Mapping):
            return None
        names = [control.name for control in PARTS[part].controls if control.name != "decision"]
        if not all(name in result_inputs for name in names):
            return None
        controls = {name: result_inputs[name] for name in names}
        if part == "E":
            controls["decision"] = record.decision
        return controls, {}

    # -- judging ----------------------------------------------------------------
    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str:
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

    def accepted_predictions(self, track: str, part: str, plan: PartPlan) -> frozenset[str]:
        """The displayed verdict; in part B, when the two totals tie, "They are equal" too."""
        accepted = {self.displayed_prediction(track, part, plan)}
        if part == "B" and math.isclose(plan.result["eager_total_ms"], plan.result["compiled_total_ms"], rel_tol=1e-12):
            accepted.add("equal")
        return frozenset(accepted)

    def decision_problems(self, track: str, part: str, plan: PartPlan, record: Any) -> list[tuple[str, Any, Any]]:
        if part != "E":
            return []
        decision = record.decision
        problems: list[tuple[str, Any, Any]] = []
        if decision not in ("selected", "hold", "none"):
            return [("Choose a runtime decision: use the selected path, hold the native baseline, or no feasible target path.",
                     ["selected", "hold", "none"], decision)]
        if decision == "none" and plan.result["executable"]:
            problems.append(("'No feasible target path' is valid only when the selected path cannot execute; this one runs "
                             f"({plan.result['status']}), so use it or hold the baseline.", "selected or hold", decision))
        expected_chosen = "baseline" if decision == "hold" else "result"
        chosen = record.chosen_result
        if chosen is None or self.arm_inputs(chosen) != self.arm_inputs(getattr(record, expected_chosen) or {}):
            problems.append((f"With decision {decision!r} the chosen result must be the {expected_chosen} arm; recapture part E.",
                             expected_chosen, "missing" if chosen is None else "another arm"))
        return problems

    def synthesis_problems(self, bundle: Any) -> list[tuple[str, Any, Any]]:
        s = bundle.synthesis
        problems: list[tuple[str, Any, Any]] = []
        values = [choice.value for choice in RECOMMENDATIONS]
        if s.recommendation not in values:
            problems.append(("Choose a recommended execution plan.", values, s.recommendation))
        if s.rejected_alternative not in REJECTABLE:
            problems.append(("Choose the tested alternative you reject (eager, compiled or compiled with fusion).",
                             list(REJECTABLE), s.rejected_alternative))
        elif s.recommendation == s.rejected_alternative:
            problems.append(("The rejected alternative must differ from the recommendation.",
                             "a different option", s.rejected_alternative))
        e = bundle.evidence.get("E")
        if s.recommendation == "none":
            supported = e is not None and e.decision == "none" and isinstance(e.result, Mapping) and e.result.get("executable") is False
            if not supported:
                problems.append(("Recommend 'no feasible target path' only after capturing an unsupported part E with decision 'none'.",
                                 "part E decision 'none' on an unsupported path", getattr(e, "decision", None)))
        if s.recommendation == "hold" and (e is None or e.decision != "hold"):
            problems.append(("Recommend 'hold' only after capturing part E with decision 'hold'.",
                             "part E decision 'hold'", getattr(e, "decision", None)))
        for field, options, what in (("reevaluation_trigger", TRIGGERS, "re-evaluation trigger"),
                                     ("residual_risk", LIMITATIONS, "remaining limitation")):
            value = getattr(s, field)
            if value not in [option.value for option in options]:
                problems.append((f"Choose a {what} from the lab's list.", [option.value for option in options], value))
        return problems

    def final_choice_terms(self, bundle: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        s = bundle.synthesis
        rec = self.choice(RECOMMENDATIONS, s.recommendation)
        rej = self.choice(RECOMMENDATIONS, s.rejected_alternative)
        return (rec.keywords if rec else ()), (rej.keywords if rej else ())

    def evidence_quantities(self, record: Any) -> list[tuple[float, str]]:
        found: list[tuple[float, str]] = []

        def walk(value: Any, key: str = "") -> None:
            if isinstance(value, dict):
                for name, item in value.items():
                    walk(item, name)
            elif isinstance(value, list):
                for item in value:
                    walk(item, key)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                unit = next((u for suffix, u in _SUFFIX_UNITS.items() if key.endswith(suffix)), None)
                if unit is None:
                    unit = "flop" if key in _FLOP_KEYS else "dimensionless"
                found.append((float(value), unit))

        for arm in (record.baseline, record.result, *record.alternatives):
            walk(arm)
        return found

    # -- reference answers ------------------------------------------------------
    def sample_controls(self, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
        spec = PARTS[part]
        if rng is None:
            controls = spec.defaults()
        else:
            controls = {control.name: control.sample(rng) for control in spec.controls}
        if part == "E":
            while controls["operator"] == "relu" and controls["shape_mode"] == "static":
                controls["operator"] = rng.choice(spec.control("operator").choices[1:]) if rng else "host_callback"
            controls = self.complete_decision(track, part, controls, rng)
        return controls

    def complete_decision(self, track: str, part: str, controls: Mapping[str, Any], rng: random.Random | None) -> dict[str, Any]:
        """``controls`` with a decision the lab's rules accept (drawn with ``rng``, else the first)."""
        controls = dict(controls)
        if part != "E":
            return controls
        executable = self.plan(track, "E", {**controls, "decision": "selected"}, {}).result["executable"]
        options = ("selected", "hold") if executable else ("none", "hold")
        controls["decision"] = rng.choice(options) if rng else options[0]
        return controls

    @staticmethod
    def _reference_choices(plans: Mapping[str, PartPlan]) -> tuple[str, str]:
        """(recommendation, rejected) that ``solve`` answers for these plans."""
        decision = plans["E"].decision
        if decision in ("none", "hold"):
            return decision, "compiled_fused"
        if plans["B"].result["compilation_repaid"]:
            return "compiled_fused", "eager"
        return "eager", "compiled_fused"

    def reference_rationale(self, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
        """The rationale ``solve`` writes for these plans, trigger and limitation (values from the lab's lists).

        The ``generated`` check re-renders it from a bundle's replayed plans, so this is
        the only place its wording lives.
        """
        b, c, d, e = plans["B"].result, plans["C"], plans["D"], plans["E"]
        recommendation, rejected = self._reference_choices(plans)
        rec_label = self.choice(RECOMMENDATIONS, recommendation).label
        rej_label = self.choice(RECOMMENDATIONS, rejected).label
        trigger_words = self.choice(TRIGGERS, trigger).keywords[0]
        risk_label = self.choice(LIMITATIONS, limitation).label
        return (
            f"I recommend {rec_label.lower()} and reject {rej_label.lower()}. "
            f"At {b['executions']} executions with {b['compilation_count']} compilation(s), the compiled total is "
            f"{b['compiled_total_ms']:.3f} ms against {b['eager_total_ms']:.3f} ms for eager execution. "
            f"Fusion with {c.result['graph_breaks']} graph break(s) removes {c.result['eliminated_traffic_mb']:.3f} MB of graph traffic, "
            f"and recomputation ({d.result['policy']}) stores {d.result['retained_activation_mb']:.3f} MB instead of "
            f"{d.baseline['retained_activation_mb']:.3f} MB. The inserted operator runs on the {e.result['status']} path. "
            f"The remaining limitation is {risk_label.lower()}, and I would re-evaluate when the {trigger_words} changes."
        )

    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        recommendation, rejected = self._reference_choices(plans)
        trigger = rng.choice(TRIGGERS)
        risk = rng.choice(LIMITATIONS)
        return {
            "recommendation": recommendation,
            "rejected_alternative": rejected,
            "reevaluation_trigger": trigger.value,
            "residual_risk": risk.value,
            "rationale": self.reference_rationale(track, plans, trigger.value, risk.value),
        }


LAB = Lab07()
