"""The words Lab 07's rationale reader uses: option names, triggers, limitations, devices, evidence quantities.

This module is the lab's :class:`~mlsys_grader.core.labspec.LabWords`.

Everything here is matched by :mod:`mlsys_grader.core.rationale` on the normalised
text of a student's rationale; nothing imports mlsysim (the track's device name is
:data:`.rules.TARGETS`, pinned to the evaluator by ``tests/labs/test_lab07.py``).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import Choice, default_synthesis_choices
from mlsys_grader.core.models import Bundle
from mlsys_grader.core.rationale import FRACTION, RATIO, UNMEASURED_ON, ChoiceTerms, RecordedArms, compared, device_names, share

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
           ("compiled with fusion", "compiled fused", "fused", "fusion", "compiled and fused", "fused compiled", "fusing", "kernel fusion",
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
               r"(timings?|times|latencies|numbers) (only |purely |just )?(illustrative|assumed|estimated|modeled|not measured)",
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
def devices(track: str) -> tuple[str, ...]:
    """What ``{device}`` stands for on ``track``: device words and the target as registered and as people write it."""
    from .rules import TARGETS  # rules imports this module

    name = TARGETS.get(track)
    registered = () if name is None else device_names(name)
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


if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab


def synthesis_choices(lab: Lab) -> dict[str, tuple[Choice, ...]]:
    """The recommendation (any tested path, hold or none), the rejected alternative (a tested path), trigger, limitation."""
    return {"recommendation": RECOMMENDATIONS,
            "rejected_alternative": tuple(c for c in RECOMMENDATIONS if c.value in REJECTABLE),
            **default_synthesis_choices(lab)}


def final_choice_terms(lab: Lab, bundle: Bundle) -> ChoiceTerms:
    """The synthesis options; the recommendation and rejected alternative are the synthesis answers."""
    s = bundle.synthesis
    recommended = {c.value for c in RECOMMENDATIONS if c.value == s.recommendation}
    rejected = {value for value in REJECTABLE if value == s.rejected_alternative}
    return ChoiceTerms(f"{lab.lab_id}:{bundle.track}", RECOMMENDATIONS, frozenset(recommended), frozenset(rejected),
                       slots=(("device", devices(bundle.track)),))


def evidence_quantities(record: RecordedArms) -> list[tuple[float, str]]:
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
