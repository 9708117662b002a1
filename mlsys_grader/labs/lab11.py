"""Lab 11 — Acceleration That Survives the Whole Path (``v1_11_experiments``).

Arms are shaped as the book's marimo lab shapes them: ``{"inputs": …, "outputs": …}``
with ``model_key`` ``v1_11_experiments.<experiment>``.  Part D's baseline kernel
time is part C's selected result latency, so part D depends on part C.

Two predictions are judgements the book leaves open; their thresholds are defined
here once (``A_*``, ``D_*``), applied by :meth:`Lab11.displayed_prediction` (the
verdict the notebook shows) and :meth:`Lab11.accepted_predictions`, and stated in
the notebook's calculation notes:

* Part A — with ``r`` the latency ratio baseline/changed and ``f`` the factor, the
  realised share is ``q = (r - 1) / (f - 1)``, taken to the two decimals the
  notebook shows.  If the binding resource switches,
  "the bottleneck switches" is right (and "falls nearly with the factor" is also
  accepted when ``q >= 0.9``, "barely changes" when ``q <= 0.1``).  Otherwise
  "falls nearly with the factor" when ``q >= 0.5`` and "barely changes" below;
  without a switch the roofline makes ``q`` exactly 1 (the changed resource binds
  before and after) or 0 (it never binds), so that threshold has no knife edge.
* Part D — with ``S`` the end-to-end speedup as the notebook shows it (two
  decimals) and ``L`` the kernel-only speedup, the share of the kernel gain that
  survives is ``g = (S - 1) / (L - 1)``.  "Almost no gain" when ``S < 1.10``;
  otherwise ``g`` decides: "nearly the kernel speedup" when ``g >= 0.5``, "less
  than half" below.  Near a threshold both neighbouring answers are accepted: for
  ``1.05 <= S <= 1.15`` "almost no gain" and the answer ``g`` gives, and for
  ``0.45 <= g <= 0.55`` "nearly the kernel speedup" and "less than half".
  With the pinned mlsysim ``g <= 0.34`` at every allowed setting, so "nearly the
  kernel speedup" is never the answer and the ``g`` band never applies.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeGuard

from mlsysim.core.units import Q_
from mlsysim.labs.experiments import v1_11_experiments as ev
from pint.errors import PintError

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
from ..core.rationale import RATIO, ChoiceTerms, compared, device_names, magnitude_in, share
from ._charts import BLUE, GREEN, MUTED, ORANGE, RED, bars, q, readable_payload

EXPERIMENTS = {"A": "roofline", "B": "tile_mapping", "C": "execution_path", "D": "application_comparison", "E": "accelerator_ranking"}
QUALITY_OBSERVATION = "illustrative matched-task evidence held constant"

# Part A: thresholds on q, the realised share of the factor (see the module docstring).
A_SWITCH_NEAR_FULL = 0.9     # a switch this close to the full factor also "falls nearly with the factor"
A_SWITCH_NEAR_NONE = 0.1     # a switch this close to no change also "barely changes"
A_LARGE_SHARE = 0.5          # without a switch q is exactly 0 or 1; 0.5 only separates the two
# Part D: thresholds on S (end-to-end speedup, as shown) and g (surviving share of the kernel gain).
D_SMALL_GAIN = 1.10          # "almost no gain" below this S
D_SMALL_BAND = (1.05, 1.15)  # S band where "almost no gain" and the answer g gives are both accepted
D_NEAR_SHARE = 0.5           # "nearly the kernel speedup" from this g, "less than half" below
D_NEAR_BAND = (0.45, 0.55)   # g band where both of those are accepted


def roofline_gain(baseline: Mapping[str, Any], result: Mapping[str, Any]) -> tuple[float, float, float]:
    """Part A's ``(r, f, q)`` from the outputs of both arms: latency ratio, factor, realised share.

    ``q`` is rounded to the two decimals the notebook shows, as part D's ``S`` is.
    """
    factor = float(max(result["compute_scale"], result["bandwidth_scale"], result["reuse"]))
    changed = Q_(result["latency"]["magnitude"], result["latency"]["unit"]).to(baseline["latency"]["unit"]).magnitude
    ratio = float(baseline["latency"]["magnitude"]) / float(changed)
    return ratio, factor, float(f"{(ratio - 1.0) / (factor - 1.0):.2f}")


def whole_path_gain(outputs: Mapping[str, Any]) -> tuple[float, float, float]:
    """Part D's ``(S, L, g)`` from the result outputs: end-to-end speedup as shown, kernel speedup, surviving share.

    ``S`` is rounded to the two decimals the notebook shows, so a student who reads
    "1.05×" and applies the calculation notes reaches the grader's answer; ``g`` is
    rounded to 9 decimals so float noise cannot move it across a band edge.
    """
    shown = float(f"{float(outputs['end_to_end_speedup']):.2f}")
    kernel = float(outputs["local_speedup"])
    return shown, kernel, round((shown - 1.0) / (kernel - 1.0), 9)

PARTS = {
    "A": PartSpec(
        "A", "When does faster arithmetic help?", "What happens after the resource change?",
        (
            Control("change", "Resource change", "choice", "compute", choices=("compute", "bandwidth", "reuse")),
            Control("factor", "Change factor", "int", 2, minimum=2, maximum=8, step=1),
        ),
        {"large": "Latency falls nearly with the factor", "small": "Latency barely changes", "switch": "The bottleneck switches"},
    ),
    "B": PartSpec(
        "B", "How much reuse fits locally?", "What will the selected mapping do?",
        (
            Control("tile", "Tile", "choice", "compact", choices=("compact", "baseline", "oversized")),
            Control("fused", "Fuse the following operation", "bool", True),
        ),
        {"fit_less": "Fits and moves fewer bytes", "fit_more": "Fits but moves more bytes", "spill": "Does not fit local memory"},
    ),
    "C": PartSpec(
        "C", "Can the specialized unit execute this workload?", "Which execution path will run?",
        (
            Control("shape", "Shape", "choice", "aligned", choices=("aligned", "misaligned")),
            Control("operation", "Operation", "choice", "gemm", choices=("gemm", "scatter")),
        ),
        {"native": "Native", "padded": "Padded", "fallback": "Fallback"},
    ),
    "D": PartSpec(
        "D", "Why does kernel speedup disappear end to end?", "How much kernel speedup survives end to end?",
        (Control("speedup", "Kernel-only speedup", "int", 10, minimum=2, maximum=50, step=2),),
        {"near": "Nearly the kernel speedup", "under_half": "Less than half", "small": "Almost no gain"},
        depends_on=("C",),
    ),
    "E": PartSpec(
        "E", "Which feasible accelerator should we choose?", "Which candidate survives the budgets and objective?",
        (
            Control("objective", "Objective", "choice", "latency", choices=("latency", "energy", "cost")),
            Control("budget_scale", "Budget scale", "float", 1.0, minimum=0.05, maximum=1.5, step=0.05),
            Control("choice", "Deployment decision", "choice", None, choices=("primary", "alternative", "hold", "none"), decision=True),
            Control("rejected", "Rejected tested candidate", "choice", None, choices=("primary", "alternative"), decision=True),
        ),
        {"primary": "Primary wins", "alternative": "Alternative wins", "none": "Neither is feasible"},
        has_decision=True,
    ),
}

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
               r"kernels? (differ|deviate|diverge) from (the )?(scenario |execution |assumed |illustrative )?contract",
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
    "Hardware.Mobile.AppleM2": ("M2", "Apple M2", "M2 ANE", "Apple Neural Engine", "M2 NPU"),
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
def _track_options(track: str) -> tuple[tuple[Choice, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """The decision options on ``track`` (candidates named by role or hardware) and the slots their phrasings use."""
    try:
        scenario = ev.get_track_scenario(_track(track))
    except (KeyError, ValueError):
        return DECISIONS, (("primary", ("primary",)), ("alternative", ("alternative",)))
    names: dict[str, tuple[str, ...]] = {}
    for role, hardware in (("primary", scenario.hardware), ("alternative", scenario.alternative)):
        ref = ev.to_jsonable(hardware)["registry_ref"] or ""
        names[role] = device_names(hardware.name, *HARDWARE_NICKNAMES.get(ref, ()))
    candidates = tuple(
        Choice(role, role.title(), (f"{role} candidate", f"{role} accelerator", f"{role} design", f"{role} option", *names[role]),
               phrasings=(role + _NOT_A_ROLE,))
        for role in ("primary", "alternative"))
    slots = tuple((role, (role, *names[role])) for role in ("primary", "alternative"))
    return candidates + DECISIONS, slots


# What reading a hand-edited record can raise: missing keys, wrong types, odd units.
_RECORD_SHAPE_ERRORS = (LookupError, TypeError, ValueError, ArithmeticError, AttributeError, PintError)


def _is_track(track: str) -> TypeGuard[ev.Track]:
    return track in ev.TRACK_SCENARIOS


def _track(track: str) -> ev.Track:
    """``track`` as the evaluators type it; ValueError for a track they do not know."""
    if not _is_track(track):
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(ev.TRACK_SCENARIOS)}")
    return track


def _q(payload: Mapping[str, Any]) -> float:
    return float(payload["magnitude"])


def _jsonable(track: str, experiment: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return ev.make_replay_packet(track=_track(track), experiment=experiment, inputs=inputs)["inputs"]


# -- what the notebook shows (the seeds' table, chart and "Observed analytically" sentence) --
def _view_a(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline["outputs"], plan.result["outputs"]
    rows = [{"Run": label, "Intensity": f"{q(arm['arithmetic_intensity'], 'flop/byte'):.1f} FLOP/B",
             "Bottleneck": arm["bottleneck"], "Latency": readable_payload(arm["latency"], 4)}
            for label, arm in (("Baseline", base), ("Changed", result))]

    def draw(ax):
        ax.bar(["Baseline", "Changed"], [q(base["latency"], "ms"), q(result["latency"], "ms")], color=[BLUE, ORANGE])
        ax.set_ylabel("Analytical latency (ms)")

    ratio, factor, share = roofline_gain(base, result)
    return View(rows, draw, (
        f"{verdict_words}: latency improves {ratio:.2f}× for a {factor:g}× change, so q = {share:.2f}. The binding "
        f"limit is {result['bottleneck']} after the change (it was {base['bottleneck']}); improving a nonbinding "
        "resource cannot lower latency."))


def _view_b(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline["outputs"], plan.result["outputs"]
    rows = [{"Run": label, "Tile": str(tuple(arm["tile"])), "Fused": arm["fused"],
             "Local need": readable_payload(arm["scratchpad_required"], 4),
             "Capacity": readable_payload(arm["scratchpad_capacity"], 4),
             "DRAM traffic": readable_payload(arm["dram_bytes"], 4), "Mapping": "FITS" if arm["fits"] else "SPILL"}
            for label, arm in (("Baseline", base), ("Selected", result))]

    def draw(ax):
        ax.bar(["Baseline", "Selected"], [q(base["dram_bytes"], "KiB"), q(result["dram_bytes"], "KiB")], color=[BLUE, GREEN])
        ax.set_ylabel("DRAM traffic (KiB)")

    fits = result["fits"]
    return View(rows, draw, (
        f"{verdict_words}: the selected tile {'fits' if fits else 'does not fit'}. "
        "A failed mapping has no fabricated runtime penalty; it must be remapped."), kind="success" if fits else "danger")


def _view_c(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline["outputs"], plan.result["outputs"]
    rows = [{"Run": label, "Operation": arm["operation"], "Original": str(tuple(arm["original_dimensions"])),
             "Executed": str(tuple(arm["executed_dimensions"])), "Path": arm["path"],
             "Extra work": readable_payload(arm["extra_operations"]), "Latency": readable_payload(arm["latency"], 4)}
            for label, arm in (("Baseline", base), ("Selected", result))]

    def draw(ax):
        colours = {"native": BLUE, "padded": ORANGE, "fallback": RED}
        ax.bar(["Baseline", "Selected"], [q(base["latency"], "ms"), q(result["latency"], "ms")],
               color=[colours.get(base["path"], MUTED), colours.get(result["path"], MUTED)])
        ax.set_ylabel("Kernel latency (ms)")

    hardware = result["hardware_name"] if result["path"] != "fallback" else result["fallback_hardware_name"]
    return View(rows, draw, (
        f"{verdict_words}: the selected case uses the {result['path']} path on {hardware}. "
        "Padding adds counted work; unsupported work names the fallback device."))


def _view_d(plan: PartPlan, track: str, verdict_words: str) -> View:
    out = plan.result["outputs"]
    stages = (("Host", "host_time", BLUE), ("Transfer", "transfer_time", ORANGE), ("Launch", "launch_time", GREEN),
              ("Kernel", "kernel_time", RED), ("Postprocess", "postprocess_time", MUTED))
    rows = [{"Path": label, **{name: readable_payload(path[key], 4) for name, key, _ in stages},
             "Total": readable_payload(path["total_time"], 4)}
            for label, path in (("Baseline", out["baseline"]), ("Accelerated", out["accelerated"]))]

    def draw(ax):
        bars(ax, ["Baseline", "Accelerated"],
              [(name, [q(out["baseline"][key], "ms"), q(out["accelerated"][key], "ms")], colour) for name, key, colour in stages],
              ylabel="Application time (ms)", stacked=True)

    shown, kernel, share = whole_path_gain(out)
    return View(rows, draw, (
        f"{verdict_words}: a {kernel:.0f}× kernel gain becomes {shown:.2f}× end to end because the other stages remain, "
        f"so g = {share:.2f} of the kernel gain survives."))


# Part E's objective: the row field it ranks by, the budget it must meet, the chart's words.
_OBJECTIVES = {
    "latency": ("latency", "latency_budget", "End-to-end latency", "Latency budget"),
    "energy": ("accelerator_energy", "energy_budget", "Accelerator energy", "Energy budget"),
    "cost": ("operating_cost", "cost_budget", "Operating cost", "Cost budget"),
}


def _view_e(plan: PartPlan, track: str, verdict_words: str) -> View:
    ranking = plan.alternatives[0]["outputs"]
    rows = [{"Candidate": row["candidate_id"].title(), "Hardware": row["hardware_name"], "Path": row["execution_path"],
             "Latency": readable_payload(row["latency"]), "Energy": readable_payload(row["accelerator_energy"]),
             "Cost": readable_payload(row["operating_cost"]),
             "Outcome": "FEASIBLE" if row["feasible"] else "FAIL: " + ", ".join(row["violations"])}
            for row in ranking["rows"]]
    recommendation = ranking["recommendation"]["candidate_id"] if ranking["recommendation"] else "no feasible design"
    budgets = (f"Budgets: latency {readable_payload(ranking['latency_budget'])}, energy "
               f"{readable_payload(ranking['energy_budget'])}, cost {readable_payload(ranking['cost_budget'])}.")
    field_name, budget_name, axis, budget_label = _OBJECTIVES.get(ranking["objective"], _OBJECTIVES["latency"])

    def draw(ax):
        # The chart shows what the ranking optimises, in the unit its budget reads best in.
        budget = ranking[budget_name]
        unit = readable_payload(budget).split(" ", 1)[1] if budget["unit"] != "dollar" else "dollar"
        names = [row["candidate_id"].title() for row in ranking["rows"]]
        values = [q(row[field_name], unit) for row in ranking["rows"]]
        ax.bar(names, values, color=[GREEN if row["feasible"] else RED for row in ranking["rows"]])
        ax.axhline(q(budget, unit), color=MUTED, linestyle="--", label=budget_label)
        ax.set_ylabel(f"{axis} ({'$' if unit == 'dollar' else unit})")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)

    return View(rows, draw, (
        f"{verdict_words}: constrained ranking recommends {recommendation} for {ranking['objective']} under the "
        f"displayed illustrative budgets. {budgets}"), kind="success" if ranking["recommendation"] else "danger")


_VIEWS = {"A": _view_a, "B": _view_b, "C": _view_c, "D": _view_d, "E": _view_e}


# -- the Otter master's words (the seeds' text, part by part) ----------------------------
NOTEBOOK = NotebookText(
    title="Lab 11: Acceleration That Survives the Whole Path",
    framing=(
        "**Volume I · Lab 11 · about 50–55 minutes**\n\n*When does specialized hardware improve the application rather "
        "than one attractive kernel?*\n\nDeliverable: a constrained accelerator decision.\n\nThe track's workload and "
        "execution contract are illustrative assumptions. Hardware supply comes from MLSysIM registry entries; results "
        "are analytical, not measured benchmarks."
    ),
    parts={
        "A": PartText(
            "A · When does faster arithmetic help? (9 min)",
            "Change one resource while workload operations and base traffic stay fixed.",
            (
                "Arithmetic intensity = operations / effective off-chip bytes. Reuse lowers traffic. Latency is the "
                "larger of compute time and memory time; compute and bandwidth scales change only their own "
                "ceilings.\n\n*How the prediction is judged.* With r = baseline latency / changed latency and f the "
                "factor, the realised share is q = (r − 1) / (f − 1), to the two decimals the result shows. If the "
                "binding resource switches, \"the bottleneck switches\" is right (\"falls nearly with the factor\" is also "
                "accepted when q ≥ 0.9, \"barely changes\" when q ≤ 0.1). Otherwise \"falls nearly with the factor\" when q "
                "≥ 0.5 and \"barely changes\" below; without a switch q is exactly 1 (the changed resource limits latency "
                "before and after) or 0 (it never does). The result states the verdict these rules give, and that "
                "verdict is always accepted."
            ),
        ),
        "B": PartText(
            "B · How much reuse fits locally? (10 min)",
            "Compare one blocked matrix mapping with the baseline tile and unfused intermediate.",
            (
                "Scratchpad occupancy counts A, B, and C tiles. DRAM traffic counts tiled inputs, output, and an "
                "explicit write/read intermediate when fusion is off. Movement energy uses registry energy per byte."
            ),
        ),
        "C": PartText(
            "C · Can the specialized unit execute this workload? (9 min)",
            (
                "The execution contract is an illustrative scenario assumption. Matched-task quality evidence stays "
                "fixed and cannot accelerate hardware. The baseline is an aligned matrix multiply, so change the shape "
                "or the operation before capturing."
            ),
            (
                "Native execution requires a supported operation, precision, and aligned shape. Padding rounds each "
                "dimension to the contract multiple and recomputes work. Unsupported work executes on the named "
                "fallback hardware."
            ),
        ),
        "D": PartText(
            "D · Why does kernel speedup disappear end to end? (9 min)",
            (
                "Preserve host work, transfer, launches, and postprocessing while changing only kernel time. The "
                "baseline kernel time is **part C's selected result latency**: run part C first, and recapture part D "
                "whenever you recapture part C."
            ),
            (
                "Application time adds host, one-way transfer plus fixed latency, registry dispatch time per launch, "
                "kernel time, and postprocessing. Only kernel time is divided by the local speedup.\n\n*How the "
                "prediction is judged.* With S the end-to-end speedup (to the two decimals the result shows) and L the "
                "kernel-only speedup, g = (S − 1) / (L − 1) is the share of the kernel gain that survives. \"Almost no "
                "gain\" when S < 1.10; otherwise g decides: \"nearly the kernel speedup\" when g ≥ 0.5, \"less than half\" "
                "below. Near a threshold both neighbouring answers are accepted: for 1.05 ≤ S ≤ 1.15 \"almost no gain\" "
                "and the answer g gives, and for 0.45 ≤ g ≤ 0.55 \"nearly the kernel speedup\" and \"less than half\". The "
                "result states the verdict these rules give, and that verdict is always accepted."
            ),
        ),
        "E": PartText(
            "E · Which feasible accelerator should we choose? (9 min)",
            (
                "Both candidates run the same workload and application stages. Filter constraints before optimizing the "
                "selected objective."
            ),
            (
                "Each candidate first passes native support, latency, accelerator energy, and active-time operating "
                "cost budgets. Feasible rows are then sorted by the selected objective. Holding preserves the feasible "
                "primary baseline while recording why the tested alternative was rejected."
            ),
        ),
    },
    synthesis=(
        "Synthesis · Defend the accelerator decision (4 min)",
        (
            "Use saved experiments to name the chosen option, quantify the rejected candidate, state one limitation, "
            "and define a reevaluation trigger. The decision and the rejected candidate are the ones you captured in "
            "part E."
        ),
    ),
    decision_text={
        "E": (
            "Deployment decision, chosen after you see the ranking: `choice` is `\"primary\"`, `\"alternative\"`, `\"hold\"` "
            "(no change / hold for more evidence) or `\"none\"` (no feasible design); `rejected` is the tested candidate "
            "you reject (`\"primary\"` or `\"alternative\"`). Choose a feasible candidate, hold the feasible primary while "
            "rejecting the tested alternative, or choose no feasible design only when both fail."
        ),
    },
)


# -- the book's marimo export ------------------------------------------------------------
def _marimo_binding(captures: Mapping[str, Any]) -> Binding:
    """Each part's outputs of its chosen arm (else its intervention)."""
    found: Binding = {}
    for part in PARTS:
        capture = captures.get(part)
        arm = (capture.get("chosen_result") or capture.get("result") or {}) if isinstance(capture, Mapping) else None
        if isinstance(arm, Mapping):
            found[part] = (part, "outputs", arm.get("outputs"))
    return found


# The recommendation and the rejected candidate are part E's captured decision, not synthesis answers.
# -- the book's radio labels and its closing report ---------------------------------------
DECISION_LABELS = {
    ("E", "choice"): {"primary": "Primary", "alternative": "Alternative", "hold": "No change / hold for more evidence",
                      "none": "No feasible design"},
    ("E", "rejected"): {"primary": "Primary", "alternative": "Alternative"},
}
LEARNING_OBJECTIVES = ("Identify the binding roofline resource", "Test local-memory and execution-support boundaries",
                       "Compare kernel and application speedup", "Rank feasible accelerators under explicit budgets")
BIG_TAKEAWAYS = ("Peak arithmetic helps only when compute binds.", "Local capacity and execution support can force remapping.",
                 "Host, transfer, and launch stages cap application speedup.",
                 "Selection filters constraints before optimizing an objective.")
SOURCE_TRACE = "MLSysIM registry hardware; analytical MLSysIM Chapter 11 experiment models, not measured benchmarks."


MARIMO_LAYOUT = MarimoLayout("v1_11_hardware_roofline", "recommendation", "rejected", "trigger", "E", _marimo_binding)


class Lab11(LabSpec):
    lab_id = "lab11"
    title = "Lab 11 — Acceleration That Survives the Whole Path"
    model_id = ev.MODEL_ID
    parts = PARTS
    triggers = TRIGGERS
    limitations = LIMITATIONS
    notebook = NOTEBOOK
    marimo_layout = MARIMO_LAYOUT
    decision_labels = DECISION_LABELS
    learning_objectives = LEARNING_OBJECTIVES
    big_takeaways = BIG_TAKEAWAYS
    source_trace = SOURCE_TRACE

    def _evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        result = ev.replay_experiment({"track_id": track, "model_key": model_key, "inputs": inputs})
        return {"inputs": inputs, "outputs": ev.to_jsonable(result)}

    @staticmethod
    def model_key(part: str) -> str:
        return f"{ev.MODEL_ID}.{EXPERIMENTS[part]}"

    # -- what the notebook shows -----------------------------------------------------
    def render(self, track: str, part: str, plan: PartPlan, verdict_words: str) -> View:
        return _VIEWS[part](plan, track, verdict_words)

    def header_facts(self, track: str) -> list[tuple[str, str]]:
        scenario = ev.get_track_scenario(_track(track))
        return [("Machine", scenario.hardware.name), ("Track", scenario.track.title()),
                ("Deliverable", "Constrained accelerator decision"), ("Assumptions", scenario.assumption_label.capitalize())]

    def track_facts(self, track: str) -> dict[str, str]:
        """The track's accelerator and the investigation in one line."""
        scenario = ev.get_track_scenario(_track(track))
        return {"device": scenario.hardware.name, "scenario": f"{scenario.hardware.name} analytical accelerator-fit investigation"}

    def captured_decision(self, bundle: Any) -> list[tuple[str, str]]:
        """Part E's captured recommendation and rejected candidate, in the book's radio labels."""
        record = bundle.evidence.get("E")
        chosen = record.decision if record is not None else None
        if not isinstance(chosen, Mapping):
            return []
        labels = DECISION_LABELS[("E", "choice")]
        return [("Recommendation (part E)", labels.get(chosen.get("recommendation") or "", "—")),
                ("Rejected candidate (part E)", labels.get(chosen.get("rejected") or "", "—"))]

    # -- building (mirrors the seed's cell that computes every arm) --------------
    def _arm_inputs(self, track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]):
        sc = ev.get_track_scenario(_track(track))
        experiment = EXPERIMENTS[part]
        alternatives: list[dict] = []
        if part == "A":
            demand = ev.scenario_gemm_demand(_track(track))
            base = dict(hardware=sc.hardware, operations=demand.operations, base_bytes_moved=demand.bytes_moved,
                        precision=sc.precision, reuse=1.0, compute_scale=1.0, bandwidth_scale=1.0)
            key = {"compute": "compute_scale", "bandwidth": "bandwidth_scale", "reuse": "reuse"}[c["change"]]
            result = dict(base, **{key: float(c["factor"])})
        elif part == "B":
            tiles = ev.scenario_tile_choices(_track(track))
            common = dict(hardware=sc.hardware, m=sc.dimensions[0], n=sc.dimensions[1], k=sc.dimensions[2],
                          precision=sc.precision, scratchpad_capacity=sc.local_capacity)
            bt, st = tiles["baseline"], tiles[c["tile"]]
            base = dict(common, tile_m=bt[0], tile_n=bt[1], tile_k=bt[2], fused=False)
            result = dict(common, tile_m=st[0], tile_n=st[1], tile_k=st[2], fused=c["fused"])
        elif part == "C":
            bd = ev.scenario_execution_dimensions(_track(track), aligned=True)
            sd = ev.scenario_execution_dimensions(_track(track), aligned=c["shape"] == "aligned")
            common = dict(hardware=sc.hardware, fallback_hardware=sc.fallback, contract=sc.contract,
                          precision=sc.precision, quality_observation=QUALITY_OBSERVATION)
            base = dict(common, operation="gemm", m=bd[0], n=bd[1], k=bd[2])
            result = dict(common, operation=c["operation"], m=sd[0], n=sd[1], k=sd[2])
        elif part == "D":
            latency = upstream["C"]["outputs"]["latency"]
            base = dict(hardware=sc.hardware, baseline_kernel_time=Q_(latency["magnitude"], latency["unit"]),
                        local_speedup=1.0, host_time=sc.host_time, transfer_bytes=sc.transfer_bytes,
                        transfer_fixed_latency=sc.transfer_fixed_latency, launches=sc.launches,
                        postprocess_time=sc.postprocess_time)
            result = dict(base, local_speedup=float(c["speedup"]))
        else:
            candidates = ev.scenario_candidates(_track(track))
            latency_budget, energy_budget, cost_budget = ev.scenario_budgets(_track(track), scale=c["budget_scale"])
            common = dict(fallback_hardware=sc.fallback, operation="gemm", precision=sc.precision,
                          m=sc.dimensions[0], n=sc.dimensions[1], k=sc.dimensions[2], host_time=sc.host_time,
                          transfer_bytes=sc.transfer_bytes, transfer_fixed_latency=sc.transfer_fixed_latency,
                          launches=sc.launches, postprocess_time=sc.postprocess_time, objective=c["objective"],
                          latency_budget=latency_budget, energy_budget=energy_budget, cost_budget=cost_budget)
            base = dict(common, candidates=(candidates[0],))
            result = dict(common, candidates=(candidates[1],))
            alternatives = [_jsonable(track, experiment, dict(common, candidates=candidates))]
        return _jsonable(track, experiment, base), _jsonable(track, experiment, result), alternatives

    def _plan(self, track: str, part: str, controls: Mapping[str, Any], upstream: Mapping[str, Any]) -> PartPlan:
        key = self.model_key(part)
        base_in, result_in, alternatives_in = self._arm_inputs(track, part, controls, upstream)
        plan = PartPlan(
            part=part, model_key=key,
            upstream={"baseline": base_in, "result": result_in},
            baseline=self.evaluate(track, key, base_in),
            result=self.evaluate(track, key, result_in),
            alternatives=[self.evaluate(track, key, item) for item in alternatives_in],
        )
        if part == "E":
            choice, rejected = controls["choice"], controls["rejected"]
            plan.upstream = {"ranking": alternatives_in[0], "choice": choice, "rejected": rejected}
            plan.decision = {"recommendation": choice, "rejected": rejected}
            plan.chosen_result = (plan.baseline if choice in ("primary", "hold")
                                  else plan.result if choice == "alternative" else plan.alternatives[0])
            plan.result_role = "chosen candidate" if choice == "alternative" else "rejected alternative"
        return plan

    def infer_controls(self, track: str, part: str, record: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        try:
            found = self._infer(track, part, record)
        except _RECORD_SHAPE_ERRORS:  # hostile inputs (odd units, wrong shapes) mean "no allowed setting"
            return None
        if part != "D" or found is None:
            return found
        # Part D builds on a part C result: find the C setting whose latency it records.
        # Outside the try above, so an error in building part C is the grader's, not the record's.
        controls, kernel = found
        for shape in ("aligned", "misaligned"):
            for operation in ("gemm", "scatter"):
                c_result = self.plan(track, "C", {"shape": shape, "operation": operation}, {}).result
                if c_result["outputs"]["latency"] == kernel:
                    return controls, {"C": c_result}
        return None

    def _infer(self, track: str, part: str, record: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        sc = ev.get_track_scenario(_track(track))
        inputs = record.result["inputs"]
        if part == "A":
            changed = [(name, inputs[key]) for name, key in (("compute", "compute_scale"), ("bandwidth", "bandwidth_scale"), ("reuse", "reuse")) if inputs[key] != 1.0]
            if len(changed) != 1:
                return None
            return {"change": changed[0][0], "factor": changed[0][1]}, {}
        if part == "B":
            tile = (inputs["tile_m"], inputs["tile_n"], inputs["tile_k"])
            names = [name for name, dims in ev.scenario_tile_choices(_track(track)).items() if tuple(dims) == tile]
            return ({"tile": names[0], "fused": inputs["fused"]}, {}) if names else None
        if part == "C":
            shape = "aligned" if inputs["m"] == sc.dimensions[0] else "misaligned"
            return {"shape": shape, "operation": inputs["operation"]}, {}
        if part == "D":
            return {"speedup": inputs["local_speedup"]}, inputs["baseline_kernel_time"]
        ranking = record.inputs["ranking"]
        scale = round(_q(ranking["latency_budget"]) / sc.latency_budget.to(ranking["latency_budget"]["unit"]).magnitude, 2)
        decision = record.decision if isinstance(record.decision, Mapping) else {}
        return {"objective": ranking["objective"], "budget_scale": scale,
                "choice": decision.get("recommendation"), "rejected": decision.get("rejected")}, {}

    # -- judging ----------------------------------------------------------------
    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str:
        """The verdict the notebook shows; parts A and D apply the module docstring's thresholds."""
        base, result = plan.baseline["outputs"], plan.result["outputs"]
        if part == "A":
            if base["bottleneck"] != result["bottleneck"]:
                return "switch"
            return "large" if roofline_gain(base, result)[2] >= A_LARGE_SHARE else "small"
        if part == "B":
            if not result["fits"]:
                return "spill"
            return "fit_less" if _q(result["dram_bytes"]) < _q(base["dram_bytes"]) else "fit_more"
        if part == "C":
            return result["path"]
        if part == "D":
            shown, _, share = whole_path_gain(result)
            if shown < D_SMALL_GAIN:
                return "small"
            return "near" if share >= D_NEAR_SHARE else "under_half"
        recommendation = plan.alternatives[0]["outputs"]["recommendation"]
        return recommendation["candidate_id"] if recommendation else "none"

    def accepted_predictions(self, track: str, part: str, plan: PartPlan) -> frozenset[str]:
        """The displayed verdict and, inside a judgement's band, its neighbour (see the module docstring)."""
        accepted = {self.displayed_prediction(track, part, plan)}
        base, result = plan.baseline["outputs"], plan.result["outputs"]
        if part == "A" and base["bottleneck"] != result["bottleneck"]:
            share = roofline_gain(base, result)[2]
            if share >= A_SWITCH_NEAR_FULL:
                accepted.add("large")
            if share <= A_SWITCH_NEAR_NONE:
                accepted.add("small")
        if part == "D":
            shown, _, share = whole_path_gain(result)
            if D_SMALL_BAND[0] <= shown <= D_SMALL_BAND[1]:
                accepted.update({"small", "near" if share >= D_NEAR_SHARE else "under_half"})
            if D_NEAR_BAND[0] <= share <= D_NEAR_BAND[1]:
                accepted.update({"near", "under_half"})
        return frozenset(accepted)

    @staticmethod
    def _feasible(plan: PartPlan) -> dict[str, bool]:
        return {row["candidate_id"]: row["feasible"] for row in plan.alternatives[0]["outputs"]["rows"]}

    def decision_problems(self, track: str, part: str, plan: PartPlan, record: Any) -> list[tuple[str, Any, Any]]:
        if part != "E":
            return []
        decision = record.decision if isinstance(record.decision, Mapping) else {}
        choice, rejected = decision.get("recommendation"), decision.get("rejected")
        if choice not in ("primary", "alternative", "hold", "none") or rejected not in ("primary", "alternative"):
            return [("Record a deployment decision (primary, alternative, hold or none) and a rejected tested candidate.",
                     {"recommendation": "primary|alternative|hold|none", "rejected": "primary|alternative"}, record.decision)]
        feasible = self._feasible(plan)
        problems: list[tuple[str, Any, Any]] = []
        if choice == rejected:
            problems.append(("The rejected candidate must differ from the chosen one.", "a different candidate", rejected))
        any_feasible = any(feasible.values())
        if choice in ("primary", "alternative") and not feasible.get(choice, False):
            problems.append((f"The {choice} candidate fails the budgets or support under this objective; choose a feasible "
                             "candidate, hold a feasible primary, or 'none' only when neither is feasible.",
                             "a feasible candidate", choice))
        elif choice == "hold" and not (feasible.get("primary", False) and rejected == "alternative"):
            problems.append(("'Hold' keeps a feasible primary while rejecting the alternative; here the primary is "
                             f"{'feasible' if feasible.get('primary') else 'not feasible'} and the rejected candidate is {rejected}.",
                             "feasible primary, rejected alternative", {"primary_feasible": feasible.get("primary"), "rejected": rejected}))
        elif choice == "none" and any_feasible:
            names = [name for name, ok in feasible.items() if ok]
            problems.append(("'No feasible design' is valid only when no candidate is feasible; "
                             f"{' and '.join(names)} {'is' if len(names) == 1 else 'are'} feasible here.", "no feasible candidate", choice))
        expected = plan.chosen_result if choice is not None else None
        if record.chosen_result is None or expected is None or record.chosen_result.get("inputs") != expected.get("inputs"):
            problems.append((f"With decision {choice!r} the chosen result must be the matching ranking; recapture part E.",
                             "the ranking for the chosen candidate", "missing" if record.chosen_result is None else "another ranking"))
        return problems

    def synthesis_problems(self, bundle: Any) -> list[tuple[str, Any, Any]]:
        s = bundle.synthesis
        problems: list[tuple[str, Any, Any]] = []
        for field, options, what in (("reevaluation_trigger", TRIGGERS, "re-evaluation trigger"),
                                     ("residual_risk", LIMITATIONS, "remaining limitation")):
            value = getattr(s, field)
            if value not in [option.value for option in options]:
                problems.append((f"Choose a {what} from the lab's list.", [option.value for option in options], value))
        e = bundle.evidence.get("E")
        decision = e.decision if e is not None and isinstance(e.decision, Mapping) else None
        if decision is None:
            problems.append(("Capture part E with a deployment decision; the synthesis defends that decision.",
                             "part E decision", None))
        return problems

    def _candidate_terms(self, track: str, candidate: str | None) -> tuple[str, ...]:
        sc = ev.get_track_scenario(_track(track))
        hardware = {"primary": sc.hardware, "alternative": sc.alternative}.get(candidate or "")
        if candidate == "none":
            return ("no feasible", "neither", "none")
        if candidate == "hold":
            return ("hold",)
        if candidate is None or hardware is None:
            return ()
        ref = ev.to_jsonable(hardware)["registry_ref"] or ""
        return (candidate, hardware.name.lower(), ref.rsplit(".", 1)[-1].lower().replace("_", "-"))

    def final_choice_terms(self, bundle: Any) -> ChoiceTerms:
        """Part E's captured decision: the chosen option (a hold also stands for keeping the
        primary) and the rejected candidate, named by role or hardware on the bundle's track."""
        e = bundle.evidence.get("E")
        decision = e.decision if e is not None and isinstance(e.decision, Mapping) else {}
        choice, rejected = decision.get("recommendation"), decision.get("rejected")
        recommended = {choice} if choice in ("primary", "alternative", "hold", "none") else set()
        if choice == "hold":
            recommended.add("primary")
        options, slots = _track_options(bundle.track)
        return ChoiceTerms(f"{self.lab_id}:{bundle.track}", options, frozenset(recommended),
                           frozenset({rejected} if rejected in ("primary", "alternative") else ()), slots)

    def evidence_quantities(self, record: Any) -> list[tuple[float, str]]:
        """Every quantity in every arm's outputs, the speedups and scales, and what a student derives
        within the record (``_DERIVED``): the part's fields baseline vs result, each whole-path
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

    # -- reference answers ------------------------------------------------------
    def sample_controls(self, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
        spec = PARTS[part]
        draw = (lambda control: control.sample(rng)) if rng else (lambda control: control.default)
        controls = {control.name: draw(control) for control in spec.controls}
        if part == "B":
            while controls["tile"] == "baseline" and not controls["fused"]:
                controls["fused"] = True
        if part == "C" and controls["shape"] == "aligned" and controls["operation"] == "gemm":
            controls = {"shape": "misaligned", "operation": "gemm"} if rng is None else rng.choice(
                [{"shape": "misaligned", "operation": "gemm"}, {"shape": "aligned", "operation": "scatter"},
                 {"shape": "misaligned", "operation": "scatter"}])
        return self.complete_decision(track, part, controls, rng)

    def complete_decision(self, track: str, part: str, controls: Mapping[str, Any], rng: random.Random | None) -> dict[str, Any]:
        """``controls`` with a decision the lab's rules accept (drawn with ``rng``, else the first)."""
        controls = dict(controls)
        if part != "E":
            return controls
        probe = self.plan(track, "E", {**controls, "choice": "none", "rejected": "primary"}, {})
        feasible = self._feasible(probe)
        options = [(name, "alternative" if name == "primary" else "primary") for name, ok in feasible.items() if ok]
        if feasible.get("primary"):
            options.append(("hold", "alternative"))
        if not options:
            options = [("none", "primary"), ("none", "alternative")]
        controls["choice"], controls["rejected"] = rng.choice(options) if rng else options[0]
        return controls

    def reference_rationale(self, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
        """The rationale ``solve`` writes for these plans, trigger and limitation (values from the lab's lists).

        The ``generated`` check re-renders it from a bundle's replayed plans, whose part E
        decision may be anything a record held: an unknown choice reads as "none" and an
        unknown rejected candidate as the first ranked one.
        """
        e, d, c = plans["E"], plans["D"].result["outputs"], plans["C"].result["outputs"]
        decision = e.decision if isinstance(e.decision, Mapping) else {}
        choice, rejected = decision.get("recommendation"), decision.get("rejected")
        choice = choice if choice in ("primary", "alternative", "hold", "none") else "none"
        rows = {row["candidate_id"]: row for row in e.alternatives[0]["outputs"]["rows"]}
        rejected = rejected if isinstance(rejected, str) and rejected in rows else next(iter(rows))
        chosen_words = self._candidate_terms(track, choice)
        rejected_row = rows[rejected]
        latency, energy = rejected_row["latency"], rejected_row["accelerator_energy"]
        verdict = "within every budget" if rejected_row["feasible"] else "over its " + " and ".join(rejected_row["violations"]) + " budget"
        return (
            f"I choose {chosen_words[0]} ({' / '.join(chosen_words[1:2]) or 'current plan'}) and reject the {rejected} candidate "
            f"({rejected_row['hardware_name']}). "
            f"Evidence from part E: under the {e.alternatives[0]['outputs']['objective']} objective the rejected candidate takes "
            f"{latency['magnitude']:.4g} {latency['unit']} end to end and {energy['magnitude']:.4g} {energy['unit']} of accelerator "
            f"energy, {verdict}. "
            f"Evidence from part D: a {d['local_speedup']:.0f}x kernel-only speedup yields {d['end_to_end_speedup']:.3f}x end to end "
            f"once host, transfer, launch and postprocessing time are added back. "
            f"Evidence from part C: the {c['operation']} workload takes the {c['path']} path in "
            f"{c['latency']['magnitude']:.4g} {c['latency']['unit']}. "
            f"Remaining limitation: {self.option(LIMITATIONS, limitation).label.lower()}. "
            f"Re-evaluation trigger: {self.option(TRIGGERS, trigger).label.lower()}."
        )

    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        trigger, risk = rng.choice(TRIGGERS), rng.choice(LIMITATIONS)
        return {"reevaluation_trigger": trigger.value, "residual_risk": risk.value,
                "rationale": self.reference_rationale(track, plans, trigger.value, risk.value)}


LAB = Lab11()
