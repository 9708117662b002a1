"""Lab 07 — The Framework Tax (``mlsysim.labs.experiments.v1_07_experiments``).

Everything lab-specific lives here: controls and their domains, how each part's
baseline and intervention are built (as the book's marimo lab builds them), the
decision rules, and the answers derived from replayed numbers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from functools import cache
from typing import Any

from mlsysim.labs.experiments import v1_07_experiments as ev

from ..core.labspec import Choice, Control, LabSpec, PartPlan, PartSpec
from ..core.rationale import FRACTION, RATIO, ChoiceTerms, compared, device_names, share

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

# How people name each option and state each limitation and trigger.  Keywords and
# phrasings are matched as whole words on text normalised by
# ``mlsys_grader.core.rationale.normalise`` (lower case, hyphens as spaces, American
# spelling), so they are written that way here; ``{device}`` is the target of the
# bundle's track as people write it (``DEVICE_NICKNAMES``) or a word for a device.
# Recommendation names count only with a recommending or rejecting cue around them
# ("I recommend …", "… loses"); ``decisive`` phrasings state hold / none by themselves.
_COMPILE = r"(compiled|compilation|compiling|compile)( (path|execution|graph|mode|runtime|plan|pipeline))?"
RECOMMENDATIONS = (
    Choice("eager", "Eager execution",
           ("eager", "eager execution", "eager mode", "eager path", "eager runtime", "eager baseline", "eager dispatch"),
           phrasings=(r"(uncompiled|interpreted|op by op|operator by operator) (execution|path|mode|dispatch)",)),
    Choice("compiled", "Compiled execution",
           ("compiled execution", "compiled path", "compilation", "compiled", "compiled mode", "compiled graph", "compile",
            "compiling", "compiled runtime"),
           phrasings=(_COMPILE + r" (alone|only|without fusion|without fusing|but unfused|with no fusion|and no fusion|minus fusion)",
                      r"(unfused|plain|non fused|fusion free) " + _COMPILE)),
    Choice("compiled_fused", "Compiled with fusion",
           ("compiled with fusion", "fused", "fusion", "compiled and fused", "fused compiled", "fusing", "kernel fusion",
            "operator fusion", "graph fusion"),
           phrasings=(_COMPILE + r" (with|and|plus|including) (full |kernel |operator |graph )?(fusion|fused|fusing)"
                      r"( (kernels?|operators?|graph|path|execution|regions?))?",
                      r"(fused|fusion|fusing)( and| plus| with)? " + _COMPILE,
                      r"fully fused( (path|graph|execution|plan))?", r"fused (path|graph|kernels?|execution|plan|region)")),
    Choice("hold", "Hold current path for more evidence", ("hold", "holding", "hold current path for more evidence"),
           decisive=(
               r"(i|we) (would |will |should |must |can |therefore |then )?hold",
               r"hold(ing)? (off|for now|steady|for more evidence|pending|until|our position|(the |our )?(current|existing|native"
               r"|baseline|present|known native)( (path|baseline|plan|runtime|graph|setup|execution path|choice|configuration))?)",
               r"(keep|keeping|stay|staying|stick|sticking|remain|remaining|retain|retaining)( with| on)? (the |our )?(current|existing"
               r"|native|known native|present|relu)( static)? (path|baseline|plan|runtime|graph|setup|execution path|configuration)",
               r"(stay|staying|stick|sticking|remain|remaining) (with|on) (the |our )?baseline",
               r"(make|making|recommend|propose|suggest) no change", r"no change (for now|yet|until|at this point|for the moment)",
               r"(keep|keeping|maintain|maintaining) (the )?status quo",
               r"defer (the |our )?(decision|switch|change|migration|move|commitment)",
               r"wait (for|until) (more )?(evidence|data|measurements?)", r"(gather|collect|get) more evidence (before|first)",
               r"(do not|will not|would not|not) (switch|change|commit|migrate|move) (yet|for now)")),
    Choice("none", "No feasible target path", ("no feasible target path", "no feasible path", "none"),
           decisive=(
               r"no (feasible|viable|workable|executable) (target )?(path|plan|design|option|runtime|execution path|deployment|route)",
               r"(no|none of the) (paths?|plans?|options?|execution paths?|candidates?) (is |are |can be )?(feasible|viable|executable"
               r"|deployable)",
               r"nothing (is |can be )?(feasible|viable|executable|deployable|run)",
               r"(can not|could not) (be )?(run|execute|executed|deployed|deploy) (at all |anywhere )?(on|to) (the |this |our )?{device}",
               r"(target|deployment|target path) (path )?is (infeasible|not feasible|impossible)",
               r"infeasible (on|for) (the |this |our )?{device}",
               r"(declare|declaring|mark|marking|call|calling) (the (target|deployment|path) |it )?(infeasible|not feasible)")),
)
REJECTABLE = ("eager", "compiled", "compiled_fused")
_CHANGES = r"change|changes|changed|drop|drops|fall|falls|rise|rises|grow|grows|shrink|shrinks|decrease|decreases|increase|increases"
_WHEN_CHANGES = f"({_CHANGES})"
TRIGGERS = (
    Choice("execution_count", "Execution count changes", ("execution count", "number of executions", "executions change"),
           phrasings=(
               r"(execution|run|repetition|invocation|call|inference|request|iteration) (counts?|numbers?|rates?|volumes?)",
               r"number of (executions?|runs?|repetitions?|invocations?|calls|inferences|requests|iterations|times (it|the graph|we) runs?)",
               r"(fewer|more|less) (executions?|runs?|repetitions?|invocations?|calls|inferences|requests|iterations)",
               r"(executions?|runs?|repetitions?|invocations?|workload volume) " + _WHEN_CHANGES,
               r"(run|runs|running|executed|executes|execute|invoked|called)( it| this| the graph| the model| the workload)? (only )?"
               r"(once|fewer times|more times|less often|more often|a few times)",
               r"how (many times|often) (it|the graph|the model|the workload|we) (runs?|executes?|is run|is executed|run|execute)",
               r"(one|single) (shot|off) (runs?|executions?|use|jobs?)", r"below (the )?break even")),
    Choice("shape_guards", "Shape guards change (TinyML: deployment shapes change)",
           ("shape guard", "deployment shape", "shapes change"),
           phrasings=(
               r"shape guards?", r"guards? (fire|fires|firing|trip|trips|change|changes|trigger|triggers|break|breaks)",
               r"(deployment|input|tensor|request|batch|sequence|runtime|model) shapes? " + _WHEN_CHANGES,
               r"(new|dynamic|different|changing|varying|unseen|variable) (input |tensor |deployment |request )?shapes",
               r"shapes? (vary|varies|become dynamic|becomes dynamic|" + _CHANGES + ")",
               r"(guard triggered )?recompil(e|es|ation|ations)", r"(host )?(rebuilds?|redeployments?)",
               r"shape (mode|behavior|behaviors) " + _WHEN_CHANGES)),
    Choice("operator_set", "Operator set changes", ("operator set", "new operator", "operators change"),
           phrasings=(
               r"(operator|op|ops|operators|kernel) (set|mix|coverage|support|list|library)( " + _WHEN_CHANGES + r")?",
               r"(new|another|additional|different|unsupported|custom|extra) (operators?|ops?|layers?|kernels?)",
               r"(add|adds|added|adding|insert|inserts|inserted|inserting|introduce|introduces|introducing) (an? |another |new |more )?"
               r"(operators?|ops?|layers?|host callbacks?|custom attention|dynamic slices?|layer norms?)",
               r"(operators?|ops|layers) " + _WHEN_CHANGES,
               r"(operators?|ops?|layers?) (is |are |gets |get )?(added|inserted|introduced|swapped|replaced|removed)",
               r"(model|graph) (architecture )?" + _WHEN_CHANGES + r" (its )?operators")),
    Choice("activation_memory", "Activation memory changes", ("activation memory",),
           phrasings=(
               r"activation (memory|footprint|budget|size|sizes|storage|bytes)",
               r"(stored|retained|saved) activations?",
               r"activations? (grow|grows|change|changes|shrink|shrinks|exceed|exceeds|no longer fit|fit)",
               r"(memory|training memory|device memory|host memory|memory capacity|memory budget|available memory) "
               r"(changes?|shrinks?|grows?|tightens?|drops?|falls?|is reduced|gets smaller|gets tighter)",
               r"(batch size|batch|training batch) " + _WHEN_CHANGES + r"|(larger|bigger|smaller|different) (batch(es)?|batch sizes?)",
               r"out of memory|oom|memory pressure")),
)
LIMITATIONS = (
    Choice("timing_assumptions", "Illustrative timing assumptions",
           ("timing assumption", "illustrative timing", "timing assumptions", "illustrative timings"),
           phrasings=(
               r"(timings?|times|latencies|durations|costs?|numbers|figures|results|setup times?|compile times?|dispatch costs?"
               r"|overheads?|step times?)( \w+)? (are|is|were|was|remain|stay) (only |purely |just )?(illustrative|assumed|analytical"
               r"|estimated|estimates|modeled|synthetic|idealized|approximate|approximations|not measured|not benchmarks"
               r"|scenario assumptions|hypothetical|simulated)",
               r"(illustrative|assumed|analytical|estimated|modeled|synthetic|idealized|approximate|simulated) (timings?|times|latencies"
               r"|setup( times?| costs?)?|compile( times?| costs?)|compiler pass(es)?|dispatch (costs?|overheads?|tax)|cost model"
               r"|timing model|numbers|time model|step times?)",
               r"(timing|time|cost|latency) (model|assumptions?|estimates?)", r"not measured (framework )?benchmarks",
               r"(no|not|without) (real|actual|measured) (timings?|benchmarks?|profiling|wall clock)")),
    Choice("operator_interactions", "Unmodeled operator interactions",
           ("operator interaction", "operator interactions", "unmodeled operator interactions"),
           phrasings=(
               r"unmodeled (operator |op |kernel |layer )?(interactions?|interplay|effects|coupling|dependencies)",
               r"(operator|op|kernel|layer) (interactions?|interplay|coupling|interference|dependencies)",
               r"interactions? (between|among|across) (the )?(operators?|ops|kernels?|layers|fused regions)",
               r"(operators?|ops|kernels?|layers) (interact|interfere)",
               r"(each|every|one) (operator|op|kernel|layer) (is )?(modeled|treated|costed|evaluated|timed) (in isolation|separately"
               r"|independently|alone)",
               r"(operators?|ops|kernels?) (are |were )?(modeled|treated|costed|evaluated|timed) (in isolation|separately|independently)",
               r"cross (operator|op|kernel|layer) effects", r"(cache|memory) (contention|interference) between (operators?|kernels?)")),
    Choice("target_measurement", "Unmeasured target behavior", ("unmeasured target behavior", "unmeasured"),
           phrasings=(
               r"(not|never|nothing|none of (this|it|these|those|them|the)( \w+)?)( (was|were|is|are|has|have|had))?( been| yet)? (measured"
               r"|profiled|benchmarked|tested|validated|run|timed|verified|checked)( (it|this|them|these|that|the \w+))? (on|with|against)"
               r" (a |an |the |our |any |this )?(real |actual |physical |target |deployed |production )?{device}",
               r"(target|device|on device|on target|hardware|real world|deployed|runtime|real) (behavior|performance|timings?"
               r"|measurements?|numbers|results)( is| are| remains?| was| stays?)? (unmeasured|unknown|untested|unverified|not measured"
               r"|unvalidated|not yet measured)",
               r"(no|without) (on device|on target|device|target|hardware|real|physical) (measurements?|profiling|benchmarks?|timings?"
               r"|runs?|validation|testing)",
               r"measur(e|ed|ing) (it |this |them |the graph |the model |the workload )?on (the |a |an |our )?(real |actual |physical "
               r"|target )?{device}",
               r"(real|actual|physical) {device} (may|might|could|will|can|would) (behave|perform|differ|run)",
               r"(untested|unverified|unvalidated|unmeasured) on (the |a |an |our )?(real |actual |physical |target )?{device}")),
)
# Devices as people write them, beyond the registry's own names (``device_names``).
DEVICE_NICKNAMES = {
    "tinyml": ("ESP32", "ESP32-S3", "S3", "ESP", "Espressif"),
    "mobile": ("Pixel 8", "Pixel", "Tensor G3", "G3", "Tensor", "Google Pixel"),
    "edge": ("Orin Nano", "Jetson Orin Nano", "Jetson", "Nano", "Orin"),
    "cloud": ("T4", "Tesla T4"),
}
DEVICE_WORDS = ("target", "target device", "device", "devices", "phone", "handset", "smartphone", "board", "hardware",
                "microcontroller", "mcu", "chip", "soc", "gpu", "accelerator", "edge device", "silicon")


@cache
def _devices(track: str) -> tuple[str, ...]:
    """What ``{device}`` stands for on ``track``: device words and the target as registered and as people write it."""
    profile = ev.TRACKS.get(track)
    registered = () if profile is None else device_names(profile.target.name)
    return DEVICE_WORDS + registered + DEVICE_NICKNAMES.get(track, ())

# Evidence a rationale may cite (see ``evidence_quantities``): every field with a unit,
# the two dimensionless fields people quote, and the derivations a student makes.
_SUFFIX_UNITS = {"_us": "microsecond", "_ms": "millisecond", "_mb": "megabyte"}
_FLOP_KEYS = {"flops", "repeated_flops", "total_step_flops"}
_DIMENSIONLESS = {"dispatch_fraction": FRACTION, "speedup": RATIO}
# The same field in a record's baseline and result arms (None: a count, compared by ratio only).
_COMPARED = {"total_time_us": "microsecond", "dispatch_time_us": "microsecond", "dispatch_fraction": FRACTION,
             "eager_total_ms": "millisecond", "compiled_total_ms": "millisecond", "total_traffic_mb": "megabyte",
             "launches": None, "retained_activation_mb": "megabyte", "step_time_ms": "millisecond"}
# Two paths one arm compares side by side (part B's table: eager vs compiled totals).
_PATHS = (("eager_total_ms", "compiled_total_ms", "millisecond"),)
# A part and its total within one arm.
_SHARES = (("dispatch_time_us", "total_time_us"), ("useful_time_us", "total_time_us"), ("setup_time_ms", "compiled_total_ms"),
           ("retained_activation_mb", "memory_capacity_mb"), ("eliminated_traffic_mb", "unfused_traffic_mb"),
           ("fallback_time_us", "total_time_us"))


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

    def final_choice_terms(self, bundle: Any) -> ChoiceTerms:
        """The synthesis options; the recommendation and rejected alternative are the synthesis answers."""
        s = bundle.synthesis
        recommended = {c.value for c in RECOMMENDATIONS if c.value == s.recommendation}
        rejected = {value for value in REJECTABLE if value == s.rejected_alternative}
        return ChoiceTerms(f"{self.lab_id}:{bundle.track}", RECOMMENDATIONS, frozenset(recommended), frozenset(rejected),
                           slots=(("device", _devices(bundle.track)),))

    def evidence_quantities(self, record: Any) -> list[tuple[float, str]]:
        """Every field with a unit in every arm, the dispatch share and speedup, and what a student
        derives within the record: each ``_COMPARED`` field baseline vs result, eager vs compiled
        totals within an arm, and each ``_SHARES`` part of its total."""
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
                unit = unit or ("flop" if key in _FLOP_KEYS else _DIMENSIONLESS.get(key))
                if unit is not None:
                    found.append((float(value), unit))

        arms = [arm for arm in (record.baseline, record.result) if isinstance(arm, dict)]
        for arm in (*arms, *record.alternatives):
            walk(arm)
        if len(arms) == 2:
            for key, unit in _COMPARED.items():
                found += compared(arms[0].get(key), arms[1].get(key), unit)
        for arm in arms:
            for first, second, unit in _PATHS:
                found += compared(arm.get(first), arm.get(second), unit, both=True)
            for part, total in _SHARES:
                found += share(arm.get(part), arm.get(total))
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
            f"Evidence from part B: {b['executions']} executions with {b['compilation_count']} compilation(s) give a compiled "
            f"total of {b['compiled_total_ms']:.3f} ms and an eager total of {b['eager_total_ms']:.3f} ms. "
            f"Evidence from part C: with {c.result['graph_breaks']} graph break(s) left, fusion eliminates "
            f"{c.result['eliminated_traffic_mb']:.3f} MB of graph traffic. "
            f"Evidence from part D: the {d.result['policy']} recomputation policy retains {d.result['retained_activation_mb']:.3f} MB "
            f"of activations where retaining all of them needs {d.baseline['retained_activation_mb']:.3f} MB. "
            f"Evidence from part E: the inserted {e.result['operator']} operator with {e.result['shape_mode']} shapes takes the "
            f"{e.result['status']} path. "
            f"Remaining limitation: {risk_label.lower()}. Re-evaluation trigger: the {trigger_words} changes."
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
