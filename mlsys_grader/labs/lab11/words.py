"""The words Lab 11's rationale reader uses: triggers, limitations, decisions, candidates, evidence quantities.

Everything here is matched by :mod:`mlsys_grader.core.rationale` on the normalised
text of a student's rationale; nothing imports mlsysim (a track's candidate hardware
comes from the scenarios' data, :func:`.rules.candidates`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import Choice, default_synthesis_choices
from mlsys_grader.core.models import Bundle
from mlsys_grader.core.rationale import RATIO, ChoiceTerms, RecordedArms, compared, device_names, magnitude_in, share

# How people state each trigger and limitation, and name each deployment decision.
# Keywords and phrasings are matched as whole words on text normalised by
# ``mlsys_grader.core.rationale.normalise`` (lower case, hyphens as spaces, American
# spelling), so they are written that way here.  ``{primary}`` / ``{alternative}`` are
# the track's candidates as people write them (``HARDWARE_NICKNAMES``).
_TIGHTENS = r"(tightens|tighten|tightened|drops|drop|shrinks|shrink|falls|fall|is cut|gets cut|gets tighter|is tightened|is reduced|halves)"
TRIGGERS = (
    Choice("latency", "Latency budget tightens", ("latency budget", "latency budget tightens"),
           phrasings=(
               r"(latency|response time|end to end|e2e) (budgets?|targets?|slos?|slas?|requirements?|deadlines?|limits?|constraints?"
               r"|caps?|bounds?|ceilings?|goals?)",
               r"(tighter|stricter|lower|smaller|shorter|reduced|new) (latency|deadline|response time)( (budget|target|limit|slo))?",
               r"(latency|deadline) " + _TIGHTENS)),
    Choice("energy", "Energy budget tightens", ("energy budget", "energy budget tightens"),
           phrasings=(
               r"energy (budgets?|targets?|caps?|limits?|constraints?|requirements?|ceilings?|allowances?|envelopes?)",
               r"(tighter|stricter|lower|smaller|reduced|new) (energy|battery|power)( (budget|cap|limit|allowance|envelope))?",
               r"(battery|power) (budgets?|caps?|limits?|envelopes?|constraints?)", r"(energy|battery life) " + _TIGHTENS,
               r"(energy|millijoules?|mj) per (inference|query|request) (budget|limit|cap|target)")),
    Choice("support", "Execution support changes", ("execution support", "execution support changes"),
           phrasings=(
               r"(operator|op|kernel|runtime|compiler|hardware|native|accelerator|library|tensor unit|contract|scatter|shape|precision)"
               r" support",
               r"support (changes?|changed|improves?|grows?|expands?|shrinks?|is added|arrives|drops?|lands|evolves?)",
               r"support (for|of) (scatter|misaligned|the (scatter|operation|shape|precision)|new operators?|int8|fp16|\w+ shapes?)",
               r"(scatter|misaligned shapes?|the operation|the workload) (becomes?|gets|is) (natively )?(supported|native)",
               r"(contract|supported operations?|supported precisions?|shape multiple) (changes?|grows?|expands?|adds?|drops?)",
               r"(new|updated|better) (kernels?|drivers?|compiler|runtime|sdk|firmware|toolchain|kernel library)")),
)
LIMITATIONS = (
    Choice("contract", "Deployed kernels differ from the scenario contract", ("scenario contract", "deployed kernels", "deployed kernel"),
           phrasings=(
               r"(deployed|real|actual|production|shipped|shipping|vendor|library|hand written|tuned|compiled) kernels? (may |might "
               r"|could |will |can |would |often |probably )?(differ|deviate|behave differently|not match|diverge|vary)",
               r"kernels? (may |might |could |can |will |would |often |probably )?(differ|deviate|diverge) from (the |our |its )?"
               r"(scenario |execution |assumed |illustrative )?contract",
               r"contract (is|was|may be|might be|remains) (only |just |merely )?(an? )?(illustrative|assumed|idealized|optimistic"
               r"|assumption|simplification|hypothetical|scenario|estimate)",
               r"(illustrative|assumed|idealized|hypothetical|optimistic) (execution |tensor unit |accelerator )?contract",
               r"(real|actual|deployed|vendor) (support|contracts?|kernels?) (may |might |could |will )?(differ|not match|deviate)")),
    Choice("power", "Power draw differs from the TDP proxy", ("power draw", "tdp proxy", "power draw differs from the tdp proxy"),
           phrasings=(
               r"tdp (based|estimates?|assumptions?|figures?|numbers?|model)", r"thermal design power",
               r"(assume|assumes|assumed|assuming|uses|used|using) (the |full |constant |a )?tdp",
               r"tdp (is|as) (only |just |merely )?(a |an )?(proxy|estimate|upper bound|assumption|approximation|ceiling)",
               r"tdp (is |was )?(used |taken |treated |assumed )?as (a |an |the )?(proxy|estimate|stand in|approximation|upper bound)",
               r"(real|actual|measured|true|dynamic|average|instantaneous) power( draw| consumption| use| usage)?",
               r"power (consumption|usage|use) (may |might |could |will )?(differ|vary|deviate)",
               r"power (is|was) (only |just )?(a |an )?(proxy|estimate|estimated|assumed|modeled|approximated)",
               r"(energy|power) (figures|numbers|estimates|values|results)? ?(are|is) (only |just )?(proxies|a proxy|estimates"
               r"|estimated|approximate|modeled|assumed|upper bounds)",
               r"(proxy|estimated|modeled|assumed) (power|energy)",
               r"(nobody|no one|never|not|nothing)( \w+){0,3} (measured|metered|profiled|logged|recorded) (the |any |real |actual "
               r"|its |their )*(power|energy)( draw| use| usage| consumption)?",
               r"(power|energy)( draw| use| usage| consumption)? (was|is|were|has been|have been)( never| not)( yet| been)* "
               r"(measured|metered|profiled|logged)")),
    Choice("shape_mix", "Workload shape mix changes", ("shape mix", "workload shape mix", "workload mix"),
           phrasings=(
               r"(workload|shape|input|request|traffic|matrix|tensor) (mix|distribution|profile|variety)( of shapes)?",
               r"mix of (input |tensor |matrix |request |gemm |workload )?shapes",
               r"(production|real|deployed|actual|future|incoming|live|real world) (input |tensor |matrix |request |gemm )?shapes"
               r"( (may|might|could|will|would))? (differ|vary|change|shift)",
               r"(more|other|different|new|varied|varying|irregular) (misaligned |unaligned |irregular )?(input |tensor |matrix |gemm )?"
               r"shapes",
               r"(misaligned|unaligned|irregular) shapes (may |might |could |will |would )?(become|are|get|grow) (more )?(common"
               r"|frequent|typical|likely)",
               r"shapes? (will |may |might |could )?(vary|change|shift|differ) (in production|in deployment|over time"
               r"|across requests|from request to request)")),
)
# Candidate hardware as people write it, beyond the registry's own names (``device_names``).
HARDWARE_NICKNAMES = {
    "Hardware.Tiny.nRF52840": ("nRF52", "nRF52 board", "Cortex-M4", "M4F", "Nordic"),
    "Hardware.Tiny.ESP32_S3": ("ESP32", "S3", "ESP"),
    "Hardware.Mobile.AppleM2": ("M2", "Apple M2", "M2 ANE", "M2 NE", "Apple Neural Engine", "M2 NPU"),
    "Hardware.Mobile.iPhone15Pro": ("iPhone", "iPhone 15", "A17", "A17 Pro", "A17 Pro NPU"),
    "Hardware.Edge.JetsonAGXOrin": ("AGX Orin", "Orin AGX", "AGX", "Jetson AGX"),
    "Hardware.Edge.JetsonOrinNX": ("Orin NX", "NX", "Jetson NX"),
    "Hardware.Cloud.H100": ("H100", "Hopper"),
    "Hardware.Cloud.A100": ("A100", "Ampere"),
}
_NOT_A_ROLE = r"(?! (reason|reasons|cause|concern|bottleneck|driver|factor|goal|objective|metric|risk|limitation|trigger|constraint" \
              r"|effect|lesson|takeaway|issue|question|point|source|view|approach|explanation|reading|way|interpretation|hypothesis))"
DECISIONS = (
    Choice("hold", "No change / hold for more evidence", ("hold", "holding", "no change"),
           decisive=(
               r"(i|we) (would |will |should |must |can |therefore |then )?hold",
               r"hold(ing)? (off|for now|steady|for more evidence|pending|until|our position|(with|on|onto|to) (the )?({primary})"
               r"|the (current|existing|present) (choice|design|plan|deployment|hardware|candidate|accelerator|setup))",
               r"(keep|keeping|stay|staying|stick|sticking|remain|remaining)( with| on)? (the )?(status quo|current (design|deployment"
               r"|plan|hardware|choice|setup|accelerator))",
               r"(make|making|recommend|propose|suggest) no change", r"no change (for now|yet|until|at this point|for the moment)",
               r"defer (the |our )?(decision|switch|change|migration|move)", r"wait (for|until) (more )?(evidence|data|measurements?)",
               r"(do not|will not|would not|not) (switch|change|migrate|move) (yet|for now)")),
    Choice("none", "No feasible design", ("no feasible design", "none", "no feasible"),
           decisive=(
               r"no (feasible|viable|workable|acceptable) (design|candidate|option|accelerator|choice|deployment|plan|hardware)",
               r"neither (candidate|option|design|accelerator|device|chip|board|one|of them|of the (two|candidates|options|designs"
               r"|accelerators))( is| are| can be)? (feasible|viable|acceptable|deployable|passes|fits|survives)",
               r"neither (the )?({primary}) nor (the )?({alternative})",
               r"(no|none of the) (candidates?|options?|designs?|accelerators?) (is |are )?(feasible|viable|survives?|passes|pass"
               r"|fits?|meets?)",
               r"both (candidates?|options?|designs?|accelerators?) (fail|are infeasible|violate|miss|exceed|are over)",
               r"nothing (is feasible|survives|passes|fits)")),
)


_RATIO_KEYS = frozenset({"end_to_end_speedup", "local_speedup", "compute_scale", "bandwidth_scale", "reuse"})
# Fields a student compares between a part's baseline and result outputs, per part.
_COMPARED = {
    "A": ("latency", "compute_time", "memory_time", "arithmetic_intensity", "bytes_moved"),
    "B": ("dram_bytes", "movement_energy", "movement_time", "scratchpad_required"),
    "C": ("latency", "operations", "bytes_moved"),
}
_STAGES = ("host_time", "transfer_time", "launch_time", "kernel_time", "postprocess_time")
_ROW_FIELDS = (("latency", "latency_budget"), ("accelerator_energy", "energy_budget"), ("operating_cost", "cost_budget"))


def _pair(first: Any, second: Any, *, both: bool = False) -> list[tuple[float, str]]:
    """:func:`compared` for two recorded ``{"magnitude", "unit"}`` payloads, in the first one's unit."""
    if not isinstance(first, Mapping) or not isinstance(first.get("unit"), str):
        return []
    return compared(magnitude_in(first, first["unit"]), magnitude_in(second, first["unit"]), first["unit"], both=both)


def _derived(part: str, outputs: list[dict]) -> list[tuple[float, str]]:
    """What a student derives within one record of ``part`` (see ``Lab11.evidence_quantities``)."""
    found: list[tuple[float, str]] = []
    if part in _COMPARED and len(outputs) >= 2:
        for key in _COMPARED[part]:
            found += _pair(outputs[0].get(key), outputs[1].get(key))
    if part == "B":
        for out in outputs:
            required, capacity = out.get("scratchpad_required"), out.get("scratchpad_capacity")
            if isinstance(required, Mapping) and isinstance(capacity, Mapping) and isinstance(capacity.get("unit"), str):
                found += share(magnitude_in(required, capacity["unit"]), magnitude_in(capacity, capacity["unit"]))
    if part == "D" and outputs:
        paths = [path for path in (outputs[-1].get("baseline"), outputs[-1].get("accelerated")) if isinstance(path, Mapping)]
        if len(paths) == 2:
            found += _pair(paths[0].get("total_time"), paths[1].get("total_time"))
            found += _pair(paths[0].get("kernel_time"), paths[1].get("kernel_time"))
        for path in paths:
            total = path.get("total_time")
            unit = total.get("unit") if isinstance(total, Mapping) else None
            if isinstance(unit, str):
                for stage in _STAGES:
                    found += share(magnitude_in(path.get(stage), unit), magnitude_in(total, unit))
    if part == "E" and outputs:
        ranking = outputs[-1]
        rows = {row.get("candidate_id"): row for row in ranking.get("rows", ()) if isinstance(row, Mapping)}
        if "primary" in rows and "alternative" in rows:
            for key, _ in _ROW_FIELDS:
                found += _pair(rows["primary"].get(key), rows["alternative"].get(key), both=True)
        for row in rows.values():
            for key, budget in _ROW_FIELDS:
                found += _pair(row.get(key), ranking.get(budget))
    return found


@cache
def track_options(track: str) -> tuple[tuple[Choice, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """The decision options on ``track`` (candidates named by role or hardware) and the slots their phrasings use."""
    from . import rules  # rules imports this module

    try:
        hardware = rules.candidates(track)
    except (KeyError, ValueError):
        return DECISIONS, (("primary", ("primary",)), ("alternative", ("alternative",)))
    names: dict[str, tuple[str, ...]] = {}
    for role, (name, ref) in hardware.items():
        names[role] = device_names(name, *HARDWARE_NICKNAMES.get(ref, ()))
    candidates = tuple(
        Choice(role, role.title(), (f"{role} candidate", f"{role} accelerator", f"{role} design", f"{role} option", *names[role],
                                    *(("alt",) if role == "alternative" else ())),
               phrasings=(role + _NOT_A_ROLE,))
        for role in ("primary", "alternative"))
    slots = tuple((role, (role, *names[role])) for role in ("primary", "alternative"))
    return candidates + DECISIONS, slots


def candidate_terms(track: str, candidate: str | None) -> tuple[str, ...]:
    """How the template rationale names ``candidate`` on ``track``: its role, hardware name and registry name."""
    from . import rules  # rules imports this module

    hardware = rules.candidates(track).get(candidate or "")
    if candidate == "none":
        return ("no feasible", "neither", "none")
    if candidate == "hold":
        return ("hold",)
    if candidate is None or hardware is None:
        return ()
    name, ref = hardware
    return (candidate, name.lower(), ref.rsplit(".", 1)[-1].lower().replace("_", "-"))


if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab


def synthesis_choices(lab: Lab) -> dict[str, tuple[Choice, ...]]:
    """The trigger and the limitation (part E's captured decision holds the recommendation)."""
    return default_synthesis_choices(lab)


def final_choice_terms(lab: Lab, bundle: Bundle) -> ChoiceTerms:
    """Part E's captured decision: the chosen option (a hold also stands for keeping the
    primary) and the rejected candidate, named by role or hardware on the bundle's track."""
    e = bundle.evidence.get("E")
    decision = e.decision if e is not None and isinstance(e.decision, Mapping) else {}
    choice, rejected = decision.get("recommendation"), decision.get("rejected")
    recommended = {choice} if choice in ("primary", "alternative", "hold", "none") else set()
    if choice == "hold":
        recommended.add("primary")
    options, slots = track_options(bundle.track)
    return ChoiceTerms(f"{lab.lab_id}:{bundle.track}", options, frozenset(recommended),
                       frozenset({rejected} if rejected in ("primary", "alternative") else ()), slots)


def evidence_quantities(record: RecordedArms) -> list[tuple[float, str]]:
    """Every quantity in every arm's outputs, the speedups and scales, and what a student derives
    within the record (``_derived``): the part's fields baseline vs result, each whole-path
    stage against its total (part D), and the two candidates and each budget (part E)."""
    found: list[tuple[float, str]] = []

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            if len(value) == 2 and "magnitude" in value and "unit" in value:
                if isinstance(value["magnitude"], (int, float)) and isinstance(value["unit"], str):
                    found.append((float(value["magnitude"]), value["unit"]))
                return
            for name, item in value.items():
                walk(item, name)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and key in _RATIO_KEYS:
            found.append((float(value), RATIO))

    arms = [arm.get("outputs") for arm in (record.baseline, record.result, *record.alternatives) if isinstance(arm, dict)]
    outputs = [out for out in arms if isinstance(out, dict)]
    for out in outputs:
        walk(out)
    found += _derived(record.part, outputs)
    return found
