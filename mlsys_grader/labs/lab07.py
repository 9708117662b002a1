"""Lab 07 — The Framework Tax (``mlsysim.labs.experiments.v1_07_experiments``).

Everything lab-specific lives here: controls and their domains, how each part's
baseline and intervention are built (as the book's marimo lab builds them), the
decision rules, the answers derived from replayed numbers, what the notebook shows
for each part (the seeds' tables, charts and observations), the words of the Otter
master notebook and the layout of the book's marimo export.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from functools import cache
from typing import Any

from mlsysim.labs.experiments import v1_07_experiments as ev

from ..core.labspec import (
    Binding,
    Choice,
    Control,
    LabSpec,
    MarimoLayout,
    NotebookText,
    PartPlan,
    PartSpec,
    PartText,
    View,
)
from ..core.rationale import FRACTION, RATIO, UNMEASURED_ON, ChoiceTerms, compared, device_names, share
from ._charts import BLUE, ORANGE, RED, bars, plural

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
               r"(far |many |much |a lot |a few |a handful |a couple )?(once|fewer times|more times|less often|more often|a few times"
               r"|of times|rarely|occasionally|sporadically)",
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
               r"(untested|unverified|unvalidated|unmeasured) on (the |a |an |our )?(real |actual |physical |target )?{device}",
               *UNMEASURED_ON)),
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


# -- what the notebook shows (the seeds' table, chart and "Observed analytically" sentence) --
def _view_a(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    speedup = plan.alternatives[0]["speedup"] if plan.alternatives else base["total_time_us"] / result["total_time_us"]
    rows = [
        {"Path": label, "Dispatches": arm["dispatches"], "Total": f"{arm['total_time_us']:.2f} µs",
         "Dispatch share": f"{arm['dispatch_fraction']:.1%}"}
        for label, arm in (("Fine", base), ("Coarse", result))
    ]

    def draw(ax):
        bars(ax, ["Fine", "Coarse"], [
            ("Useful work", [base["useful_time_us"], result["useful_time_us"]], BLUE),
            ("Dispatch", [base["dispatch_time_us"], result["dispatch_time_us"]], ORANGE),
        ], ylabel="Analytical time (µs)", stacked=True)

    return View(rows, draw, (
        f"{verdict_words}: the fine path spends {base['dispatch_fraction']:.1%} of total time in dispatch. Coarsening to "
        f"{plural(result['dispatches'], 'launch', 'launches')} produces {speedup:.2f}× speedup with identical FLOPs and payload."))


def _view_b(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Executions": result["executions"], "Compilations": result["compilation_count"],
             "Break-even": result["break_even_executions"], "Eager": f"{result['eager_total_ms']:.2f} ms",
             "Compiled": f"{result['compiled_total_ms']:.2f} ms"}]
    rebuild = "Host rebuilds raise" if track == "tinyml" else "Recompilation raises"

    def draw(ax):
        bars(ax, ["One execution", "Selected repetitions"], [
            ("Eager total", [base["eager_total_ms"], result["eager_total_ms"]], BLUE),
            ("Compiled total", [base["compiled_total_ms"], result["compiled_total_ms"]], ORANGE),
        ], ylabel="Cumulative analytical time (ms)")

    return View(rows, draw, (
        f"{verdict_words} at {plural(result['executions'], 'execution')} and {plural(result['compilation_count'], 'compilation')}. "
        f"{rebuild} setup without changing the eager baseline."),
        kind="success" if result["compilation_repaid"] else "warn")


def _view_c(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Path": label, "Launches": arm["launches"], "Breaks": arm["graph_breaks"],
             "Traffic": f"{arm['total_traffic_mb']:.3f} MB"} for label, arm in (("Unfused", base), ("Selected", result))]

    def draw(ax):
        bars(ax, ["Unfused", "Selected"], [("Traffic", [base["total_traffic_mb"], result["total_traffic_mb"]], BLUE)],
              ylabel="Graph traffic (MB)")

    return View(rows, draw, (
        f"{verdict_words}: the selected path removes {result['eliminated_traffic_mb']:.3f} MB of graph traffic and uses "
        f"{plural(result['launches'], 'launch', 'launches')}. Arithmetic is preserved; each graph break restores a materialized boundary."))


def _view_d(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Policy": label, "Stored": f"{arm['retained_activation_mb']:.3f} MB",
             "Repeated ops": arm["recomputed_operation_count"], "Step": f"{arm['step_time_ms']:.3f} ms"}
            for label, arm in (("Retain all", base), (result["policy"], result))]
    feasible = result["memory_feasible"]

    def draw(ax):
        labels = ["Retain all", result["policy"]]
        ax.bar([-0.2, 0.8], [base["retained_activation_mb"], result["retained_activation_mb"]], width=0.4,
               color=BLUE, label="Retained activations")
        ax.set_ylabel("Retained activations (MB)")
        twin = ax.twinx()
        twin.bar([0.2, 1.2], [base["step_time_ms"], result["step_time_ms"]], width=0.4, color=ORANGE, label="Step time")
        twin.set_ylabel("Analytical step time (ms)")
        ax.set_xticks([0, 1], labels)
        handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
        ax.legend(handles, ["Retained activations", "Step time"], loc="upper center",
                  bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)

    return View(rows, draw, (
        f"{verdict_words}: stored activations fall to {result['retained_activation_mb']:.3f} MB, while "
        f"{_repeat(result['recomputed_operation_count'])} and step time becomes {result['step_time_ms']:.3f} ms "
        f"on {result['training_host']}. Memory status: "
        + ("PASS." if feasible else "OOM — training infeasible on this host.")),
        kind="success" if feasible else "danger")


_E_INTERPRETATION = {
    "native": ("success", "Native execution runs directly on the target device without fallback materialization or extra copy penalty."),
    "fallback": ("warn", "A fallback is an executable path, but it fails the native-target requirement and carries explicit copies and execution cost."),
    "unsupported": ("danger", "The workload cannot execute on the target because the operator or shape behavior is unsupported and no fallback runtime exists."),
}


def _view_e(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Path": label, "Operator": arm["operator"], "Shape": arm["shape_mode"], "Status": arm["status"],
             "Copies": f"{arm['fallback_copy_mb']:.3f} MB"} for label, arm in (("Known native", base), ("Selected", result))]
    kind, meaning = _E_INTERPRETATION.get(result["status"], ("info", ""))
    total = "No execution" if result["total_time_us"] is None else f"{result['total_time_us']:.2f} µs"

    def draw(ax):
        values = [base["total_time_us"] or 0.0, result["total_time_us"] or 0.0]
        ax.bar(["Known native", "Selected"], values, color=[BLUE, ORANGE if result["executable"] else RED])
        ax.set_ylabel("Target time (µs)")
        if not result["executable"]:
            ax.annotate("cannot execute", (1, 0), ha="center", va="bottom", color=RED)

    return View(rows, draw, (
        f"{verdict_words} ({result['status'].upper()}). Target result: {total}; fallback materialization: "
        f"{result['fallback_copy_mb']:.3f} MB. {meaning}"), kind=kind)


def _repeat(count: int) -> str:
    return "1 operation repeats" if count == 1 else f"{count} operations repeat"


_VIEWS = {"A": _view_a, "B": _view_b, "C": _view_c, "D": _view_d, "E": _view_e}


# -- the Otter master's words (the seeds' text, part by part) ----------------------------
# A scenario of None is one the seed words for the track (it names the target device or the
# training host): the notebook shows it with ``lab.scenario(part)`` for the student's track.
NOTEBOOK = NotebookText(
    title="Lab 07: The Framework Tax",
    framing=(
        "**Volume I · Lab 07 · about 50–55 minutes**\n\n*When does an execution path earn its setup and memory costs, and "
        "when does target support make the decision for us?*\n\nOutput: a runtime-path recommendation.\n\nGraph shape, "
        "tensor scale, compilation work, and runtime support are illustrative scenario assumptions. Hardware limits and "
        "runtime overhead anchors come from MLSysIM."
    ),
    parts={
        "A": PartText(
            "A · Why can small operations waste the machine? (9 min)",
            None,
            (
                "Useful time is the larger of arithmetic time and fixed input/output movement time. Total time adds one "
                "registry-backed dispatch cost per launch. The two runs use identical operations and bytes."
            ),
        ),
        "B": PartText(
            "B · When does compilation repay setup? (9 min)",
            None,
            (
                "Compiled total = compilation count × setup time + repetitions × fused execution time. Eager total = "
                "repetitions × unfused execution time. Break-even is the first repetition that recovers all setup work. "
                "Setup time uses a shared illustrative compiler pass assumption (constant framework dispatch tax across "
                "analysis passes, not measured on the named host). For TinyML, compilation is ahead-of-time (AOT) host "
                "compilation; recompilation represents an offline host rebuild and redeployment rather than a dynamic "
                "native JIT.\n\n*How the prediction is judged.* The path with the lower total is right. When the two "
                "totals are equal, \"They are equal\" is accepted, and so is the verdict the result states."
            ),
        ),
        "C": PartText(
            "C · What does fusion eliminate? (9 min)",
            (
                "Sofia, the runtime engineer, compares the same 6-operation graph before and after fusion. Graph breaks "
                "split the fused region."
            ),
            (
                "Each unfused operation reads and writes the tensor. A fused region reads once and writes once, so "
                "every graph boundary adds another full read/write pair. Fusion changes dispatch and intermediate "
                "traffic, not the graph's arithmetic."
            ),
        ),
        "D": PartText(
            "D · Which activations should remain stored? (9 min)",
            None,
            (
                "Training counts one forward pass and a two-forward-equivalent backward pass. A discarded activation "
                "repeats its forward operation during backward. Retained bytes are checked directly against the "
                "selected training host's memory capacity."
            ),
        ),
        "E": PartText(
            "E · Can the runtime execute the actual graph? (9 min)",
            (
                "Priya, the deployment engineer, inserts one operator and shape behavior into a known-native baseline. "
                "Unsupported work must follow a visible fallback path or fail."
            ),
            (
                "Native execution requires both operator and shape support. A fallback materializes one input and one "
                "output through target memory, then uses an illustrative portable CPU path capped by the MLSysIM "
                "reference CPU rate. TinyML has no fallback runtime in this scenario."
            ),
        ),
    },
    synthesis=(
        "Synthesis · Defend one execution plan (5 min)",
        (
            "Choose a tested path, quantify a rejected tested alternative, state the remaining limitation, and name the "
            "condition that would reopen the decision. Use *hold* when the baseline remains viable but evidence is "
            "insufficient (after capturing part E with decision `\"hold\"`), and *no feasible target path* only after an "
            "unsupported part E captured with decision `\"none\"`."
        ),
    ),
    decision_text={
        "E": (
            "Runtime decision, chosen after you see the result: `\"selected\"` (use selected path), `\"hold\"` (hold native "
            "baseline for more evidence) or `\"none\"` (no feasible target path — valid only when the selected path "
            "cannot execute)."
        ),
    },
    labels={
        "recompilations": "guard-triggered recompilations (TinyML: host rebuilds / redeployments)",
    },
)


# -- the words the book fills in from the track, and its closing report ------------------
# Part scenarios the seeds word per track (the parts whose ``NOTEBOOK`` scenario is None);
# placeholders come from ``Lab07.track_facts``.
SCENARIOS = {
    "A": ("Maya, the performance engineer, keeps arithmetic and payload fixed on **{device}** while "
          "changing only the number of dispatches."),
    "B": "Ishan, the compiler engineer, separates repeated execution count from {recompile_context}.",
    "D": ("Noah, the training engineer, runs this track on **{training_host}** and compares saved "
          "activations against repeated forward work."),
}
TRACK_LABELS = {("reevaluation_trigger", "shape_guards"): {"tinyml": "Deployment shapes change", "*": "Shape guards change"}}
DECISION_LABELS = {
    ("E", "decision"): {"selected": "Use selected path", "hold": "Hold native baseline for more evidence",
                        "none": "No feasible target path"},
}
LEARNING_OBJECTIVES = ("Quantify dispatch and compilation overhead across repeated execution",
                       "Compare graph traffic and activation storage across framework policies",
                       "Diagnose native, fallback, and unsupported deployment paths")
BIG_TAKEAWAYS = ("Fine-grained work can spend more time dispatching than computing.",
                 "Compilation and fusion repay costs only when reuse and graph continuity preserve their savings.",
                 "Recomputation and fallback move cost between memory, arithmetic, and portability.")
SOURCE_TRACE = "Illustrative operation graph and support fixture; MLSysIM v1_07_experiments evaluators."


# -- the book's marimo export ------------------------------------------------------------
def _chosen_or_result(capture: Mapping[str, Any]) -> Any:
    return capture.get("chosen_result") or capture.get("result") or {}


def _marimo_binding(captures: Mapping[str, Any]) -> Binding:
    """The runtime path of part E's chosen arm, and part D's memory feasibility."""
    found: Binding = {}
    if isinstance(captures.get("E"), Mapping) and isinstance(_chosen_or_result(captures["E"]), Mapping):
        found["runtime_path"] = ("E", "runtime status", _chosen_or_result(captures["E"]).get("status"))
    result = captures["D"].get("result") if isinstance(captures.get("D"), Mapping) else None
    if isinstance(result, Mapping):
        found["activation_memory"] = ("D", "memory status", "PASS" if result.get("memory_feasible") else "OOM")
    return found


MARIMO_LAYOUT = MarimoLayout("v1_07_framework_tax", "recommendation", "rejected_alternative", "reevaluation_trigger",
                             None, _marimo_binding)


class Lab07(LabSpec):
    lab_id = "lab07"
    title = "Lab 07 — The Framework Tax"
    model_id = MODEL_KEY
    parts = PARTS
    triggers = TRIGGERS
    limitations = LIMITATIONS
    synthesis_fields = ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale")
    notebook = NOTEBOOK
    marimo_layout = MARIMO_LAYOUT
    scenarios = SCENARIOS
    track_labels = TRACK_LABELS
    decision_labels = DECISION_LABELS
    learning_objectives = LEARNING_OBJECTIVES
    big_takeaways = BIG_TAKEAWAYS
    source_trace = SOURCE_TRACE

    def _evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return ev.replay(model_key, inputs)

    @staticmethod
    def tensor_elements(track: str) -> int:
        return ev.TRACKS[track].default_elements

    # -- what the notebook shows -----------------------------------------------------
    def synthesis_choices(self) -> dict[str, tuple[Choice, ...]]:
        """The recommendation (any tested path, hold or none), the rejected alternative (a tested path), trigger, limitation."""
        return {"recommendation": RECOMMENDATIONS,
                "rejected_alternative": tuple(c for c in RECOMMENDATIONS if c.value in REJECTABLE),
                **super().synthesis_choices()}

    def render(self, track: str, part: str, plan: PartPlan, verdict_words: str) -> View:
        return _VIEWS[part](plan, track, verdict_words)

    def header_facts(self, track: str) -> list[tuple[str, str]]:
        profile = ev.TRACKS[track]
        return [("Track", profile.display), ("Workload", profile.workload), ("Target", profile.target.name),
                ("Output", "Runtime-path recommendation")]

    def track_facts(self, track: str) -> dict[str, str]:
        """The target device, part D's default training host, how this track recompiles, and the workload."""
        profile = ev.TRACKS[track]
        host = self.plan(track, "D", self.parts["D"].defaults(), {}).baseline["training_host"]
        context = ("offline host rebuild and redeployment count (TinyML compiles ahead-of-time on the host, not via "
                   "on-device JIT guards)" if track == "tinyml" else "guard-triggered recompilation count")
        return {"device": profile.target.name, "training_host": host, "recompile_context": context,
                "scenario": profile.workload}

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
        rec_label = self.option(RECOMMENDATIONS, recommendation).label
        rej_label = self.option(RECOMMENDATIONS, rejected).label
        trigger_words = self.option(TRIGGERS, trigger).keywords[0]
        risk_label = self.option(LIMITATIONS, limitation).label
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
