"""What only code says of Lab 11 (``lab.toml`` declares the rest): each part's arms over the track scenarios' data
(:mod:`.domain`), the controls a record was built from, the verdicts its numbers give, part E's deployment decision,
the rationale reader's candidates and evidence, the reference answers ``solve`` writes and the marimo export's copies.

Arms are shaped as the book's marimo lab shapes them: ``{"inputs": …, "outputs": …}``, each part under its own
model key (``lab.toml``: ``v1_11_experiments.<experiment>``).  Part D's baseline kernel time is part C's selected
result latency, so part D depends on part C (its ``upstream``).

Nothing here imports mlsysim: the arms' inputs are built from :mod:`.domain` (written from mlsysim and checked
against the seed's construction over the whole domain), and the evaluator (:mod:`.evaluate`) is loaded only where
a recorded quantity is in a unit the data does not hold (:func:`evaluator`).

Two predictions are judgements the book leaves open; their thresholds are defined here once (``A_*``, ``D_*``),
applied by :func:`displayed_prediction` (the verdict the notebook shows) and :func:`accepted_predictions`, and stated
in the notebook's calculation notes (``lab.toml``):

* Part A — with ``r`` the latency ratio baseline/changed and ``f`` the factor, the realised share is
  ``q = (r - 1) / (f - 1)``, taken to the two decimals the notebook shows.  If the binding resource switches, "the
  bottleneck switches" is right (and "falls nearly with the factor" is also accepted when ``q >= 0.9``, "barely
  changes" when ``q <= 0.1``).  Otherwise "falls nearly with the factor" when ``q >= 0.5`` and "barely changes"
  below; without a switch the roofline makes ``q`` exactly 1 (the changed resource binds before and after) or 0 (it
  never binds), so that threshold has no knife edge.
* Part D — with ``S`` the end-to-end speedup as the notebook shows it (two decimals) and ``L`` the kernel-only
  speedup, the share of the kernel gain that survives is ``g = (S - 1) / (L - 1)``.  "Almost no gain" when
  ``S < 1.10``; otherwise ``g`` decides: "nearly the kernel speedup" when ``g >= 0.5``, "less than half" below.
  Near a threshold both neighbouring answers are accepted: for ``1.05 <= S <= 1.15`` "almost no gain" and the
  answer ``g`` gives, and for ``0.45 <= g <= 0.55`` "nearly the kernel speedup" and "less than half".  With the
  pinned mlsysim ``g <= 0.34`` at every allowed setting, so "nearly the kernel speedup" is never the answer and the
  ``g`` band never applies.

Part E's decision keeps the plan's evaluated ranking when it keeps neither candidate (:func:`decide`), and
:func:`complete_decision` draws its two controls (the choice and the rejected candidate) together.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from mlsys_grader._mlsysim import pint_errors
from mlsys_grader.core.labspec import ArmInputs, Binding, Choice, ChoiceTerms, DecisionCopy, InferredControls, PartPlan, Problem
from mlsys_grader.core.rationale import RATIO, compared, device_names, magnitude_in, share
from mlsys_grader.labs import import_evaluator
from mlsys_grader.labs.declared import choice_of, declared_synthesis_problems
from mlsys_grader.labs.spec import OptionSpec

from .domain import SCENARIOS

if TYPE_CHECKING:
    from mlsys_grader.core.models import Bundle, EvidenceRecord
    from mlsys_grader.core.rationale import RecordedArms
    from mlsys_grader.core.replayer import Replayer
    from mlsys_grader.labs.declared import Lab
    from mlsys_grader.labs.spec import LabSpec

PARTS = ("A", "B", "C", "D", "E")

# Part A: thresholds on q, the realised share of the factor (see the module docstring).
A_SWITCH_NEAR_FULL = 0.9     # a switch this close to the full factor also "falls nearly with the factor"
A_SWITCH_NEAR_NONE = 0.1     # a switch this close to no change also "barely changes"
A_LARGE_SHARE = 0.5          # without a switch q is exactly 0 or 1; 0.5 only separates the two
# Part D: thresholds on S (end-to-end speedup, as shown) and g (surviving share of the kernel gain).
D_SMALL_GAIN = 1.10          # "almost no gain" below this S
D_SMALL_BAND = (1.05, 1.15)  # S band where "almost no gain" and the answer g gives are both accepted
D_NEAR_SHARE = 0.5           # "nearly the kernel speedup" from this g, "less than half" below
D_NEAR_BAND = (0.45, 0.55)   # g band where both of those are accepted


def evaluator() -> ModuleType:
    """The lab's :mod:`.evaluate` (mlsysim), loaded on first use: by the views' track facts, and here only for a unit
    or a budget scale the scenarios' data does not hold."""
    return import_evaluator(f"{__package__}.evaluate")


class RooflineGain(NamedTuple):
    """Part A's judgement inputs: the latency ratio baseline/changed ``r``, the factor ``f``, the realised share ``q``."""

    ratio: float
    factor: float
    share: float


class WholePathGain(NamedTuple):
    """Part D's judgement inputs: the end-to-end speedup as shown ``S``, the kernel speedup ``L``, the surviving share ``g``."""

    shown: float
    kernel: float
    share: float


def roofline_gain(baseline: Mapping[str, Any], result: Mapping[str, Any]) -> RooflineGain:
    """Part A's ``(r, f, q)`` from the outputs of both arms: latency ratio, factor, realised share.

    ``q`` is rounded to the two decimals the notebook shows, as part D's ``S`` is.
    """
    factor = float(max(result["compute_scale"], result["bandwidth_scale"], result["reuse"]))
    changed = _in_unit(result["latency"], baseline["latency"]["unit"])
    ratio = float(baseline["latency"]["magnitude"]) / float(changed)
    return RooflineGain(ratio, factor, float(f"{(ratio - 1.0) / (factor - 1.0):.2f}"))


def whole_path_gain(outputs: Mapping[str, Any]) -> WholePathGain:
    """Part D's ``(S, L, g)`` from the result outputs: end-to-end speedup as shown, kernel speedup, surviving share.

    ``S`` is rounded to the two decimals the notebook shows, so a student who reads "1.05×" and applies the
    calculation notes reaches the grader's answer; ``g`` is rounded to 9 decimals so float noise cannot move it
    across a band edge.
    """
    shown = float(f"{float(outputs['end_to_end_speedup']):.2f}")
    kernel = float(outputs["local_speedup"])
    return WholePathGain(shown, kernel, round((shown - 1.0) / (kernel - 1.0), 9))


def _q(payload: Mapping[str, Any]) -> float:
    return float(payload["magnitude"])


def _in_unit(payload: Mapping[str, Any], unit: str) -> Any:
    """A recorded ``{"magnitude", "unit"}`` payload's magnitude in ``unit``: as recorded when it is in that unit (pint's
    conversion returns it unchanged), else converted by the evaluator's registry."""
    if payload["unit"] == unit:
        return payload["magnitude"]
    return evaluator().magnitude(payload, unit)


# -- building (the seed's cell that computes every arm, over the scenarios' data) --------------
def scenario(track: str) -> dict[str, Any]:
    """``track``'s scenario data (:mod:`.domain`); ValueError for a track the evaluators do not know."""
    if track not in SCENARIOS:
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(SCENARIOS)}")
    return SCENARIOS[track]


def _fresh(value: Any) -> Any:
    """A copy sharing nothing with :mod:`.domain` (as each of the seed's ``to_jsonable`` calls makes)."""
    return json.loads(json.dumps(value))


def arm_inputs(lab: Lab, track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c`` (``upstream``: dependency part → result arm).

    The same JSON, key order included, as the seed's construction through mlsysim
    (:func:`.evaluate.seed_arm_inputs`; ``tests/labs/test_lab11.py`` compares them over the whole domain).
    """
    sc = scenario(track)
    alternatives: list[dict[str, Any]] = []
    m, n, k = sc["dimensions"]
    if part == "A":
        base = dict(hardware=sc["hardware"], operations=sc["operations"], base_bytes_moved=sc["bytes_moved"],
                    precision=sc["precision"], reuse=1.0, compute_scale=1.0, bandwidth_scale=1.0)
        key = {"compute": "compute_scale", "bandwidth": "bandwidth_scale", "reuse": "reuse"}[c["change"]]
        result = dict(base, **{key: float(c["factor"])})
    elif part == "B":
        common = dict(hardware=sc["hardware"], m=m, n=n, k=k, precision=sc["precision"], scratchpad_capacity=sc["local_capacity"])
        bt, st = sc["tiles"]["baseline"], sc["tiles"][c["tile"]]
        base = dict(common, tile_m=bt[0], tile_n=bt[1], tile_k=bt[2], fused=False)
        result = dict(common, tile_m=st[0], tile_n=st[1], tile_k=st[2], fused=c["fused"])
    elif part == "C":
        sd = sc["dimensions"] if c["shape"] == "aligned" else sc["misaligned"]
        common = dict(hardware=sc["hardware"], fallback_hardware=sc["fallback"], contract=sc["contract"],
                      precision=sc["precision"], quality_observation=lab.spec.constant("quality_observation"))
        base = dict(common, operation="gemm", m=m, n=n, k=k)
        result = dict(common, operation=c["operation"], m=sd[0], n=sd[1], k=sd[2])
    elif part == "D":
        latency = upstream["C"]["outputs"]["latency"]
        base = dict(hardware=sc["hardware"], baseline_kernel_time={"magnitude": latency["magnitude"], "unit": latency["unit"]},
                    local_speedup=1.0, host_time=sc["host_time"], transfer_bytes=sc["transfer_bytes"],
                    transfer_fixed_latency=sc["transfer_fixed_latency"], launches=sc["launches"],
                    postprocess_time=sc["postprocess_time"])
        result = dict(base, local_speedup=float(c["speedup"]))
    else:
        budgets = sc["budgets"].get(str(c["budget_scale"]))
        if budgets is None:  # not an allowed scale (checked controls always are): the evaluator scales it
            budgets = evaluator().scaled_budgets(track, c["budget_scale"])
        latency_budget, energy_budget, cost_budget = budgets
        common = dict(fallback_hardware=sc["fallback"], operation="gemm", precision=sc["precision"], m=m, n=n, k=k,
                      host_time=sc["host_time"], transfer_bytes=sc["transfer_bytes"],
                      transfer_fixed_latency=sc["transfer_fixed_latency"], launches=sc["launches"],
                      postprocess_time=sc["postprocess_time"], objective=c["objective"],
                      latency_budget=latency_budget, energy_budget=energy_budget, cost_budget=cost_budget)
        base = dict(common, candidates=sc["candidates"][:1])
        result = dict(common, candidates=sc["candidates"][1:2])
        alternatives = [_fresh(dict(common, candidates=sc["candidates"]))]
    base_in, result_in = _fresh(base), _fresh(result)
    if part == "E":
        upstream_inputs = {"ranking": alternatives[0], "choice": c["choice"], "rejected": c["rejected"]}
    else:
        upstream_inputs = {"baseline": base_in, "result": result_in}
    return ArmInputs(base_in, result_in, tuple(alternatives), upstream_inputs)


def decide(lab: Lab, part: str, controls: Mapping[str, Any], baseline: dict[str, Any], result: dict[str, Any],
           alternatives: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The decision fields of a part's plan: part E's choice and rejected candidate, and the ranking its choice keeps
    (the baseline for the declared holds, the tested alternative's for "alternative", else the full ranking)."""
    decision = lab.spec.parts[part].decision
    if decision is None:
        return {}
    choice, rejected = controls[str(decision.control)], controls[str(decision.alternative_control)]
    chosen = baseline if choice in decision.hold else result if choice == "alternative" else alternatives[0]
    return {"decision": {"recommendation": choice, "rejected": rejected}, "chosen_result": chosen,
            "result_role": "chosen candidate" if choice == "alternative" else "rejected alternative"}


def record_shape_errors() -> tuple[type[BaseException], ...]:
    """What reading a hand-edited record can raise (missing keys, wrong types, odd units), for an ``except`` clause."""
    return (LookupError, TypeError, ValueError, ArithmeticError, AttributeError, *pint_errors())


def infer(track: str, part: str, record: EvidenceRecord) -> tuple[dict[str, Any], Any] | None:
    """The controls a record's arms were built from, and (part D) the kernel time it builds on; may raise
    :func:`record_shape_errors` on a hand-edited record."""
    sc = scenario(track)
    inputs = (record.result or {})["inputs"]  # a record without a result has no setting (KeyError, caught)
    if part == "A":
        changed = [(name, inputs[key]) for name, key in (("compute", "compute_scale"), ("bandwidth", "bandwidth_scale"), ("reuse", "reuse")) if inputs[key] != 1.0]
        if len(changed) != 1:
            return None
        return {"change": changed[0][0], "factor": changed[0][1]}, {}
    if part == "B":
        tile = (inputs["tile_m"], inputs["tile_n"], inputs["tile_k"])
        names = [name for name, dims in sc["tiles"].items() if tuple(dims) == tile]
        return ({"tile": names[0], "fused": inputs["fused"]}, {}) if names else None
    if part == "C":
        shape = "aligned" if inputs["m"] == sc["dimensions"][0] else "misaligned"
        return {"shape": shape, "operation": inputs["operation"]}, {}
    if part == "D":
        return {"speedup": inputs["local_speedup"]}, inputs["baseline_kernel_time"]
    ranking = record.inputs["ranking"]
    recorded = _q(ranking["latency_budget"])
    unit = ranking["latency_budget"]["unit"]
    budget = sc["latency_budget"]["magnitude"] if unit == sc["latency_budget"]["unit"] else evaluator().budget_magnitude(track, unit)
    scale = round(recorded / budget, 2)
    decision = record.decision if isinstance(record.decision, Mapping) else {}
    return {"objective": ranking["objective"], "budget_scale": scale,
            "choice": decision.get("recommendation"), "rejected": decision.get("rejected")}, {}


def infer_controls(lab: Lab, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
    """The controls a record was built from and (part D) the part C result it builds on, or None: part A's setting is
    the one scale that is not 1, part B's tile is named by its dimensions, part E's budget scale is read back from its
    latency budget, and part D's upstream is the part C setting whose latency it records."""
    try:
        found = infer(track, part, record)
    except record_shape_errors():  # hostile inputs (odd units, wrong shapes) mean "no allowed setting"
        return None
    if found is None:
        return None
    if part != "D":
        return InferredControls(*found)
    # Part D builds on a part C result: find the C setting whose latency it records.
    # Outside the try above, so an error in building part C is the grader's, not the record's.
    controls, kernel = found
    for shape in ("aligned", "misaligned"):
        for operation in ("gemm", "scatter"):
            c_result = lab.plan(replay, track, "C", {"shape": shape, "operation": operation}, {}).result
            if c_result["outputs"]["latency"] == kernel:
                return InferredControls(controls, {"C": c_result})
    return None


def candidates(track: str) -> dict[str, tuple[str, str]]:
    """Role (``primary``, ``alternative``) → (hardware name, registry reference) of ``track``'s candidates.

    ValueError for a track the evaluators do not know.
    """
    sc = scenario(track)
    return {role: (sc[key]["hardware_name"], sc[key]["registry_ref"] or "")
            for role, key in (("primary", "hardware"), ("alternative", "alternative"))}


# -- judging ----------------------------------------------------------------
def displayed_prediction(track: str, part: str, plan: PartPlan) -> str:
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


def accepted_predictions(track: str, part: str, plan: PartPlan) -> frozenset[str]:
    """The displayed verdict and, inside a judgement's band, its neighbour (see the module docstring)."""
    accepted = {displayed_prediction(track, part, plan)}
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


def feasible_candidates(plan: PartPlan) -> dict[str, bool]:
    """Candidate → whether it survives the budgets and support, from part E's full ranking."""
    return {row["candidate_id"]: row["feasible"] for row in plan.alternatives[0]["outputs"]["rows"]}


def decision_problems(track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]:
    """Part E's deployment decision: a feasible choice (or a hold of a feasible primary rejecting the alternative,
    or "none" only when no candidate is feasible), a different rejected candidate, the matching ranking kept."""
    if part != "E":
        return []
    decision = record.decision if isinstance(record.decision, Mapping) else {}
    choice, rejected = decision.get("recommendation"), decision.get("rejected")
    if choice not in ("primary", "alternative", "hold", "none") or rejected not in ("primary", "alternative"):
        return [Problem("Record a deployment decision (primary, alternative, hold or none) and a rejected tested candidate.",
                 {"recommendation": "primary|alternative|hold|none", "rejected": "primary|alternative"}, record.decision)]
    feasible = feasible_candidates(plan)
    problems: list[Problem] = []
    if choice == rejected:
        problems.append(Problem("The rejected candidate must differ from the chosen one.", "a different candidate", rejected))
    any_feasible = any(feasible.values())
    if choice in ("primary", "alternative") and not feasible.get(choice, False):
        problems.append(Problem(f"The {choice} candidate fails the budgets or support under this objective; choose a feasible "
                         "candidate, hold a feasible primary, or 'none' only when neither is feasible.",
                         "a feasible candidate", choice))
    elif choice == "hold" and not (feasible.get("primary", False) and rejected == "alternative"):
        problems.append(Problem("'Hold' keeps a feasible primary while rejecting the alternative; here the primary is "
                         f"{'feasible' if feasible.get('primary') else 'not feasible'} and the rejected candidate is {rejected}.",
                         "feasible primary, rejected alternative", {"primary_feasible": feasible.get("primary"), "rejected": rejected}))
    elif choice == "none" and any_feasible:
        names = [name for name, ok in feasible.items() if ok]
        problems.append(Problem("'No feasible design' is valid only when no candidate is feasible; "
                         f"{' and '.join(names)} {'is' if len(names) == 1 else 'are'} feasible here.", "no feasible candidate", choice))
    expected = plan.chosen_result if choice is not None else None
    if record.chosen_result is None or expected is None or record.chosen_result.get("inputs") != expected.get("inputs"):
        problems.append(Problem(f"With decision {choice!r} the chosen result must be the matching ranking; recapture part E.",
                         "the ranking for the chosen candidate", "missing" if record.chosen_result is None else "another ranking"))
    return problems


def synthesis_problems(spec: LabSpec, bundle: Bundle) -> list[Problem]:
    """The declared rules (a listed trigger and limitation), then part E captured with the decision the synthesis
    defends: the lab's recommendation is that decision, so it has no recommendation of its own to check."""
    problems = declared_synthesis_problems(spec, bundle)
    e = bundle.evidence.get("E")
    decision = e.decision if e is not None and isinstance(e.decision, Mapping) else None
    if decision is None:
        problems.append(Problem(spec.problems["synthesis.part_e_decision_missing"].message, "part E decision", None))
    return problems


# -- the rationale reader's words ---------------------------------------------------------
_NOT_A_ROLE = r"(?! (reason|reasons|cause|concern|bottleneck|driver|factor|goal|objective|metric|risk|limitation|trigger|constraint" \
              r"|effect|lesson|takeaway|issue|question|point|source|view|approach|explanation|reading|way|interpretation|hypothesis))"


@cache
def track_options(lab: Lab, track: str) -> tuple[tuple[Choice, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """The decision options on ``track`` (candidates named by role or hardware, then the declared "hold" and "none")
    and the slots their phrasings use."""
    decisions = tuple(choice_of(OptionSpec.model_validate(item)) for item in lab.spec.constant("decisions"))
    try:
        hardware = candidates(track)
    except (KeyError, ValueError):
        return decisions, (("primary", ("primary",)), ("alternative", ("alternative",)))
    nicknames = lab.spec.constant("hardware_nicknames")
    names: dict[str, tuple[str, ...]] = {}
    for role, (name, ref) in hardware.items():
        names[role] = device_names(name, *nicknames.get(ref, ()))
    roles = tuple(
        Choice(role, role.title(), (f"{role} candidate", f"{role} accelerator", f"{role} design", f"{role} option", *names[role],
                                    *(("alt",) if role == "alternative" else ())),
               phrasings=(role + _NOT_A_ROLE,))
        for role in ("primary", "alternative"))
    slots = tuple((role, (role, *names[role])) for role in ("primary", "alternative"))
    return roles + decisions, slots


def candidate_terms(track: str, candidate: str | None) -> tuple[str, ...]:
    """How the template rationale names ``candidate`` on ``track``: its role, hardware name and registry name."""
    hardware = candidates(track).get(candidate or "")
    if candidate == "none":
        return ("no feasible", "neither", "none")
    if candidate == "hold":
        return ("hold",)
    if candidate is None or hardware is None:
        return ()
    name, ref = hardware
    return (candidate, name.lower(), ref.rsplit(".", 1)[-1].lower().replace("_", "-"))


def final_choice_terms(lab: Lab, bundle: Bundle) -> ChoiceTerms:
    """Part E's captured decision: the chosen option (a hold also stands for keeping the
    primary) and the rejected candidate, named by role or hardware on the bundle's track."""
    e = bundle.evidence.get("E")
    decision = e.decision if e is not None and isinstance(e.decision, Mapping) else {}
    choice, rejected = decision.get("recommendation"), decision.get("rejected")
    recommended = {choice} if choice in ("primary", "alternative", "hold", "none") else set()
    if choice == "hold":
        recommended.add("primary")
    options, slots = track_options(lab, bundle.track)
    return ChoiceTerms(f"{lab.lab_id}:{bundle.track}", options, frozenset(recommended),
                       frozenset({rejected} if rejected in ("primary", "alternative") else ()), slots)


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
    """What a student derives within one record of ``part`` (see :func:`evidence_quantities`)."""
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


def evidence_quantities(record: RecordedArms) -> list[tuple[float, str]]:
    """Every quantity in every arm's outputs (``{"magnitude", "unit"}`` payloads), the speedups and scales, and what a
    student derives within the record (``_derived``): the part's fields baseline vs result, each whole-path stage
    against its total (part D), and the two candidates and each budget (part E)."""
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


# -- reference answers --------------------------------------------------------
def contrast(lab: Lab, track: str, part: str, controls: dict[str, Any], rng: random.Random | None) -> dict[str, Any]:
    """Never the baseline's own setting: part B's baseline tile is fused, part C leaves the aligned matrix multiply."""
    if part == "B":
        while controls["tile"] == "baseline" and not controls["fused"]:
            controls["fused"] = True
    if part == "C" and controls["shape"] == "aligned" and controls["operation"] == "gemm":
        controls = {"shape": "misaligned", "operation": "gemm"} if rng is None else rng.choice(
            [{"shape": "misaligned", "operation": "gemm"}, {"shape": "aligned", "operation": "scatter"},
             {"shape": "misaligned", "operation": "scatter"}])
    return controls


def complete_decision(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                      rng: random.Random | None) -> dict[str, Any]:
    """``controls`` with a part E decision the rules accept and its rejected candidate, drawn together with ``rng`` (else
    the first): a feasible candidate rejecting the other, a hold of a feasible primary rejecting the alternative, else
    "none" rejecting either."""
    controls = dict(controls)
    if part != "E":
        return controls
    probe = lab.plan(replay, track, "E", {**controls, "choice": "none", "rejected": "primary"}, {})
    feasible = feasible_candidates(probe)
    options = [(name, "alternative" if name == "primary" else "primary") for name, ok in feasible.items() if ok]
    if feasible.get("primary"):
        options.append(("hold", "alternative"))
    if not options:
        options = [("none", "primary"), ("none", "alternative")]
    controls["choice"], controls["rejected"] = rng.choice(options) if rng else options[0]
    return controls


def reference_rationale(lab: Lab, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
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
    chosen_words = candidate_terms(track, choice)
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
        f"Remaining limitation: {lab.option(lab.limitations, limitation).label.lower()}. "
        f"Re-evaluation trigger: {lab.option(lab.triggers, trigger).label.lower()}."
    )


def reference_synthesis(lab: Lab, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
    """Synthesis answers a diligent student would give for these plans (the template rationale included): a trigger
    and a limitation only, since part E's captured decision is the recommendation."""
    trigger, risk = rng.choice(lab.triggers), rng.choice(lab.limitations)
    return {"reevaluation_trigger": trigger.value, "residual_risk": risk.value,
            "rationale": reference_rationale(lab, track, plans, trigger.value, risk.value)}


# -- the book's marimo export ---------------------------------------------------
def marimo_binding(captures: Mapping[str, Any]) -> Binding:
    """Each part's outputs of its chosen arm (else its intervention)."""
    found: Binding = {}
    for part in PARTS:
        capture = captures.get(part)
        arm = (capture.get("chosen_result") or capture.get("result") or {}) if isinstance(capture, Mapping) else None
        if isinstance(arm, Mapping):
            found[part] = (part, "outputs", arm.get("outputs"))
    return found


def marimo_answers(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The trigger and the limitation: the recommendation and the rejected candidate are part E's decision."""
    return {"reevaluation_trigger": snapshot.get("trigger"), "residual_risk": snapshot.get("residual_risk")}


def marimo_decision_copies(captures: Mapping[str, Any], snapshot: Mapping[str, Any]) -> list[DecisionCopy]:
    """Part E's captured recommendation and rejected candidate, and the snapshot's copies of them."""
    capture = captures.get("E")
    decision = capture.get("decision") if isinstance(capture, Mapping) else None
    if not isinstance(decision, Mapping):
        return []
    return [DecisionCopy("E", key, decision.get(key), snapshot.get(key)) for key in ("recommendation", "rejected")]


def marimo_missing(snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
    """An empty trigger or limitation, and the rationale."""
    given = {"reevaluation_trigger": snapshot.get("trigger"), "residual_risk": snapshot.get("residual_risk")}
    return [name for name, value in given.items() if not value] + ([] if has_rationale else ["rationale"])
