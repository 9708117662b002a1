"""The words Lab 08's rationale reader uses: option names, triggers, limitations, hosts, evidence quantities.

This module is the lab's :class:`~mlsys_grader.core.labspec.LabWords`.  Everything here is matched by
:mod:`mlsys_grader.core.rationale` on the normalised text of a student's rationale (lower case, hyphens as spaces,
American spelling), so it is written that way; ``{device}`` is the track's development host as people write it.
Recommendation names count only with a recommending or rejecting cue around them ("I recommend …", "… loses");
``decisive`` phrasings state a hold by themselves.  Nothing imports mlsysim.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import Choice, default_synthesis_choices
from mlsys_grader.core.models import Bundle
from mlsys_grader.core.rationale import FRACTION, UNMEASURED_ON, ChoiceTerms, RecordedArms, compared, device_names, share

_INPUT = r"(input|data|data loading|dataloader|data loader|loader|batch loading|input pipeline|input stage)"
RECOMMENDATIONS = (
    Choice("prefetch", "Prefetch input",
           ("prefetch", "prefetching", "prefetch input", "prefetching input", "input prefetch", "input prefetching",
            "prefetched input", "data prefetching"),
           phrasings=(r"prefetch(ing|ed)? (the )?" + _INPUT, _INPUT + r" prefetch(ing)?",
                      r"overlap(ping)? (the )?" + _INPUT + r"( loading| preparation)?( with (compute|the forward pass|training))?",
                      r"(hide|hiding|hidden) (the )?" + _INPUT + r"( time| latency)?",
                      r"(fix|fixing|speed up|speeding up|cut|cutting) (the )?" + _INPUT + r"( stage| pipeline| path)?")),
    Choice("arithmetic", "Faster arithmetic",
           ("faster arithmetic", "faster arithmetic path", "arithmetic path", "faster math", "faster kernels",
            "faster compute path", "arithmetic"),
           phrasings=(r"faster (arithmetic|math|matmul|compute|kernels?|forward( and| /)? backward)( path| kernels?| stages?)?",
                      r"(arithmetic|compute|kernel|math) (path|speedup|fix|upgrade|improvement)",
                      r"(speed|speeding) up (the )?(arithmetic|compute|forward( and backward)?|backward|kernels?)",
                      r"(optimized|tuned|fused|better) (arithmetic|compute|math|kernels?)( path)?")),
    Choice("checkpoint", "Checkpoint activations",
           ("checkpoint activations", "activation checkpointing", "checkpointing", "gradient checkpointing",
            "checkpointing activations", "recomputation", "checkpoint"),
           phrasings=(r"checkpoint(ing|ed)? (the )?activations?", r"activations? (checkpoint(ing)?|recomputation|recompute)",
                      r"(recompute|recomputing|recomputation of) (the )?activations?", r"(full|selective) checkpointing")),
    Choice("none", "No change / hold for more evidence", ("hold", "holding", "no change", "hold for more evidence"),
           decisive=(
               r"(i|we) (would |will |should |must |can |therefore |then )?hold",
               r"hold(ing)? (off|for now|steady|for more evidence|pending|until|the (unchanged |current )?baseline)",
               r"(keep|keeping|stay|staying|stick|sticking|remain|remaining) (with |on )?(the )?(unchanged |current )?baseline",
               r"(make|making|recommend|propose|suggest) no change", r"no change (for now|yet|until|at this point|for the moment)",
               r"(keep|keeping|maintain|maintaining) (the )?status quo",
               r"defer (the |our )?(decision|fix|change|purchase|commitment)",
               r"wait (for|until) (more )?(evidence|data|measurements?)", r"(gather|collect|get) more evidence (before|first)",
               r"(do not|will not|would not|not) (change|commit|fix|switch) (anything )?(yet|for now)")),
)
REJECTABLE = ("prefetch", "arithmetic", "checkpoint")
_CHANGES = (r"change|changes|changed|drop|drops|fall|falls|rise|rises|grow|grows|shrink|shrinks|decrease|decreases|increase"
            r"|increases|slips|slip|worsens|worsen|degrades|degrade")
TRIGGERS = (
    Choice("target_quality", "Target quality is missed", ("target quality", "quality target", "target is missed"),
           phrasings=(
               r"(target|quality|accuracy|held out quality|convergence) (is |gets |was )?(missed|not reached|not met|unreached)",
               r"(miss|misses|missed|missing|fail to reach|fails to reach|fall short of|falls short of|never reach|never reaches"
               r"|does not reach|do not reach|doesn't reach) (the )?(common |target |quality )?(target|quality|accuracy)",
               r"(target|held out|validation) (quality|accuracy|loss) (" + _CHANGES + ")",
               r"(quality|accuracy|convergence) (regresses|regression|stalls|plateaus|plateau|diverges|divergence)",
               r"(updates|steps) to (the )?target (" + _CHANGES + ")",
               r"(convergence|the trace|the convergence trace) (changes|differs|slows|is slower)")),
    Choice("memory", "Training memory exceeds capacity", ("training memory", "memory exceeds capacity", "out of memory"),
           phrasings=(
               r"(training )?memory (exceeds|outgrows|overflows|overruns|tops|passes|crosses|goes over|no longer fits|grows past)"
               r"( the)?( device| accelerator| host| gpu| hbm)?( memory)?( capacity| limit| budget)?",
               r"(exceed|exceeds|exceeding|outgrow|outgrows|overflow|overflows) (the )?(device |accelerator |host |gpu |hbm )?"
               r"(memory|capacity|memory capacity|memory budget)",
               r"(out of memory|oom|ooms|memory pressure|runs out of memory|run out of memory)",
               r"(no longer|does not|doesn't|do not|will not|won't) fit (in|into) (the )?(device |accelerator |host |gpu )?memory",
               r"(larger|bigger) (model|batch|sequence|sequences|resident batch|physical batch|activations)",
               r"(model|batch|sequence length|activations?|activation memory|optimizer state) (grows?|increases?|gets larger|doubles?)")),
    Choice("schedule_cost", "Schedule or cost limit is crossed",
           ("schedule or cost limit", "schedule limit", "cost limit"),
           phrasings=(
               r"(schedule|cost|time|budget|deadline|spend|spending|price|dollar|hourly) (limits?|budgets?|caps?|ceilings?"
               r"|constraints?|targets?)( (is|are|get|gets) (crossed|exceeded|broken|missed|blown|hit))?",
               r"(cross|crosses|crossed|crossing|exceed|exceeds|exceeded|blow|blows|blew|break|breaks|miss|misses|missed|hit|hits"
               r"|go over|goes over) (the |our )?(schedule|cost|time|budget|deadline)( limits?| budgets?| caps?)?",
               r"(training|wall clock|run|job) (time|cost|hours|bill) (" + _CHANGES + r"|exceeds|grows too large|goes over)",
               r"(takes|costs|runs) (too long|too much|longer than|more than) (the |our )?(schedule|budget|allowed|limit)",
               r"(host|gpu|instance|cloud) (price|prices|cost|costs|rate|rates|hourly rate) (" + _CHANGES + ")",
               r"over (the )?(schedule|budget)")),
)
LIMITATIONS = (
    Choice("convergence", "Convergence may not transfer", ("convergence may not transfer", "convergence"),
           phrasings=(
               r"(convergence|the convergence trace|convergence traces|learning curves?|updates to target|the trace|traces|quality"
               r" curves?)( \w+)? (may|might|could|will|can|would)( not|n't)? (transfer|generalize|hold|carry over|apply|differ"
               r"|change)",
               r"(convergence|traces?|learning curves?)( \w+)? (is|are|were|was|remain|stay) (only |purely |just )?(illustrative"
               r"|assumed|supplied|synthetic|fixtures?|scenario evidence|hypothetical|not measured|not universal)",
               r"(illustrative|assumed|supplied|synthetic|fixture|fixed|scenario) (convergence|traces?|learning curves?|quality"
               r" curves?|updates to target)",
               r"(real|actual|the real|our real|production) (model|teacher|task|workload|data|dataset|run)s? (may|might|could|will"
               r"|can|would) (converge|train|behave|learn) (differently|slower|faster|otherwise)",
               r"not a (universal )?convergence law")),
    Choice("timing", "Stage timing may change", ("stage timing may change", "stage timing", "stage timings"),
           phrasings=(
               r"(stage )?(timings?|times|stage times|update times|step times|latencies|durations|numbers|figures)( \w+)? (are|is|were"
               r"|was|remain|stay) (only |purely |just )?(illustrative|assumed|analytical|estimated|estimates|modeled|synthetic"
               r"|idealized|approximate|approximations|not measured|not benchmarks|scenario assumptions|hypothetical|simulated"
               r"|fixtures?|supplied)",
               r"(illustrative|assumed|analytical|estimated|modeled|synthetic|idealized|approximate|simulated|supplied|fixture)"
               r" (stage )?(timings?|times|stage times|update times|step times|latencies)",
               r"(stage|update|step|input|data loading|compute) (timings?|times)( \w+)? (may|might|could|will|can|would) (change"
               r"|differ|shift|vary|move)",
               r"(timings?|times) (may|might|could|will|can|would) (change|differ|shift|vary) (on|with|under) (real|actual|other"
               r"|different|the real|production)",
               r"(no|not|without) (real|actual|measured) (timings?|benchmarks?|profiling|wall clock)",
               *UNMEASURED_ON)),
    Choice("numerical", "Replay may miss rare instability",
           ("replay may miss rare instability", "rare instability", "numerical instability", "instability"),
           phrasings=(
               r"(rare|occasional|intermittent|hidden|unseen|long tail|tail) (numerical )?(instabilit(y|ies)|overflows?|underflows?"
               r"|divergences?|nans?|infs?|spikes?|failures?|events)",
               r"(numerical|numeric) (instabilit(y|ies)|issues?|problems?|errors?|overflow|underflow|stability|replay)",
               r"(replay|the replay|numerical replay|a finite replay|1000 updates)( \w+)? (may|might|could|can|would) (miss|not catch"
               r"|not see|overlook|fail to catch)",
               r"(nan|nans|inf|infs|non finite|nonfinite) (values?|updates?|gradients?|losses?)",
               r"(overflow|underflow)s? (in|of|during) (fp16|fp8|bf16|low precision|half precision|training|the gradients?)",
               r"(loss scaling|loss scale) (may|might|could|can|would) (fail|break|miss)")),
)
# Hosts as people write them, beyond the registry's own names (``device_names``).
HOST_NICKNAMES = {"NVIDIA A100": ("A100", "A100 GPU", "A100s"), "NVIDIA H100": ("H100", "H100 GPU", "H100s", "Hopper")}
DEVICE_WORDS = ("development host", "host", "training host", "dev host", "gpu", "accelerator", "hardware", "device", "machine",
                "cluster", "node", "target", "target device")


@cache
def devices(track: str) -> tuple[str, ...]:
    """What ``{device}`` stands for on ``track``: host words and the development host as registered and as people write it."""
    from .rules import HOSTS  # rules imports this module

    name = HOSTS.get(track)
    registered = () if name is None else device_names(name, *HOST_NICKNAMES.get(name, ()))
    return DEVICE_WORDS + registered


# Evidence a rationale may cite (see ``evidence_quantities``): every field with a unit, the finite-update fraction and
# memory utilisation, and what a student derives from them.
_SUFFIX_UNITS = {"_ms": "millisecond", "_gb": "GB", "_seconds": "second", "_hours": "hour"}
_DIMENSIONLESS = {"finite_fraction": FRACTION, "memory_utilization": FRACTION}
# Compared between a record's baseline and result (and between alternatives of one part): the fields a student reads off
# the table, by where they sit in an arm.
_COMPARED = (
    (("total_time_seconds",), "second"), (("timing", "update_time_ms"), "millisecond"),
    (("memory", "total_memory_gb"), "GB"), (("total_memory_gb",), "GB"), (("activations_gb",), "GB"),
    (("memory", "activations_gb"), "GB"), (("cost_usd",), None), (("timing", "samples_per_second"), None),
)
# A part and its total within one arm.
_SHARES = ((("memory", "optimizer_state_gb"), ("memory", "total_memory_gb")), (("optimizer_state_gb",), ("total_memory_gb",)),
           (("memory", "total_memory_gb"), ("memory", "available_memory_gb")), (("total_memory_gb",), ("available_memory_gb",)),
           (("timing", "optimizer_ms"), ("timing", "update_time_ms")))


if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab


def synthesis_choices(lab: Lab) -> dict[str, tuple[Choice, ...]]:
    """The recommendation (a tested fix or hold), the rejected alternative (a tested fix), trigger, limitation."""
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


def _at(arm: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(arm, dict):
            return None
        arm = arm.get(key)
    return arm


def _arms_of(value: Any) -> list[dict[str, Any]]:
    """The time-to-target arms and memory ledgers inside one recorded arm (a part E comparison holds two)."""
    if not isinstance(value, dict):
        return []
    nested = [value[key] for key in ("baseline", "result") if isinstance(value.get(key), dict)]
    return nested or [value]


def evidence_quantities(record: RecordedArms) -> list[tuple[float, str]]:
    """Every field with a unit in every arm (magnitudes: a change of -74.4 ms is cited as 74.4 ms), the finite-update
    fraction and memory utilisation, and what a student derives: each ``_COMPARED`` field baseline vs result and
    between any two arms of the record, and each ``_SHARES`` part of its total."""
    found: list[tuple[float, str]] = []

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                if name != "inputs":
                    walk(item, name)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            unit = next((u for suffix, u in _SUFFIX_UNITS.items() if key.endswith(suffix)), None) or _DIMENSIONLESS.get(key)
            if unit is not None:
                found.append((abs(float(value)), unit))

    top = [arm for arm in (record.baseline, record.result) if isinstance(arm, dict)]
    for arm in (*top, *record.alternatives):
        walk(arm)
    arms: list[dict[str, Any]] = []
    for arm in (*top, *record.alternatives):
        for inner in _arms_of(arm):
            if inner not in arms:
                arms.append(inner)
    for i, first in enumerate(arms):
        for second in arms[i + 1:]:
            for path, unit in _COMPARED:
                found += compared(_at(first, path), _at(second, path), unit, both=True)
    for arm in arms:
        for part, total in _SHARES:
            found += share(_at(arm, part), _at(arm, total))
    return found
