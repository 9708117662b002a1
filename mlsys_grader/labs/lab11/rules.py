"""Lab 11's domain and rules: parts, controls, how each part's arms are built, the judgements' thresholds,
the decision rules.  This module is the lab's :class:`~mlsys_grader.core.labspec.PartRules`.

Arms are shaped as the book's marimo lab shapes them: ``{"inputs": …, "outputs": …}`` with
``model_key`` ``v1_11_experiments.<experiment>``.  Part D's baseline kernel time is part C's
selected result latency, so part D depends on part C.

Nothing here imports mlsysim: the arms' inputs are built from the track scenarios' data
(:mod:`.domain`, written from mlsysim and checked against the seed's construction over the
whole domain), and the evaluator (:mod:`.evaluate`) loads on first use through
:func:`evaluator`, so grading that the replay table answers never loads it.

Two predictions are judgements the book leaves open; their thresholds are defined
here once (``A_*``, ``D_*``), applied by :func:`displayed_prediction` (the verdict
the notebook shows) and :func:`accepted_predictions`, and stated in the notebook's
calculation notes:

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

import json
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from mlsys_grader._mlsysim import pint_errors
from mlsys_grader.core.labspec import ArmInputs, Control, InferredControls, PartPlan, PartSpec, Problem
from mlsys_grader.core.models import Bundle, EvidenceRecord
from mlsys_grader.core.values import BuildVariant

from .domain import SCENARIOS
from .words import LIMITATIONS, TRIGGERS

if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab
    from mlsys_grader.core.replayer import Replayer

MODEL_ID = "v1_11_experiments"
"""The evaluators' module id (``v1_11_experiments.MODEL_ID``); a part's model key is ``<MODEL_ID>.<experiment>``."""


@cache
def evaluator() -> ModuleType:
    """The lab's :mod:`.evaluate` module, imported on first use with only the mlsysim modules it imports
    (:func:`mlsys_grader.labs.import_evaluator`: the whole package is slow to import)."""
    from mlsys_grader.labs import import_evaluator

    return import_evaluator(f"{__package__}.evaluate")


def model_key(part: str) -> str:
    return f"{MODEL_ID}.{EXPERIMENTS[part]}"


def evaluate(track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """One arm through the pinned evaluator of ``track``."""
    return evaluator().replay(track, model_key, inputs)


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

    ``S`` is rounded to the two decimals the notebook shows, so a student who reads
    "1.05×" and applies the calculation notes reaches the grader's answer; ``g`` is
    rounded to 9 decimals so float noise cannot move it across a band edge.
    """
    shown = float(f"{float(outputs['end_to_end_speedup']):.2f}")
    kernel = float(outputs["local_speedup"])
    return WholePathGain(shown, kernel, round((shown - 1.0) / (kernel - 1.0), 9))


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


def _q(payload: Mapping[str, Any]) -> float:
    return float(payload["magnitude"])


def _in_unit(payload: Mapping[str, Any], unit: str) -> Any:
    """A recorded ``{"magnitude", "unit"}`` payload's magnitude in ``unit``: as recorded when it is in that unit (pint's
    conversion returns it unchanged), else converted by the evaluator's registry."""
    if payload["unit"] == unit:
        return payload["magnitude"]
    return evaluator().magnitude(payload, unit)


# -- building (the seed's cell that computes every arm, over the scenarios' data) --------------
def plan(lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
         upstream: Mapping[str, Any]) -> PartPlan:
    """A part's plan: its arms evaluated through ``replay`` (part D on part C's result in ``upstream``), and part E's decision."""
    key = model_key(part)
    arms = arm_inputs(track, part, controls, upstream)
    baseline = replay.evaluate(lab, track, key, arms.baseline)
    result = replay.evaluate(lab, track, key, arms.result)
    alternatives = tuple(replay.evaluate(lab, track, key, item) for item in arms.alternatives)
    return PartPlan(part=part, model_key=key, upstream=arms.upstream, baseline=baseline, result=result,
                    alternatives=alternatives, **decide(part, controls, baseline, result, alternatives))


def infer_controls(lab: Lab, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
    """The controls a record was built from and (part D) the part C result it builds on, or None."""
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


def scenario(track: str) -> dict[str, Any]:
    """``track``'s scenario data (:mod:`.domain`); ValueError for a track the evaluators do not know."""
    if track not in SCENARIOS:
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(SCENARIOS)}")
    return SCENARIOS[track]


def _fresh(value: Any) -> Any:
    """A copy sharing nothing with :mod:`.domain` (as each of the seed's ``to_jsonable`` calls makes)."""
    return json.loads(json.dumps(value))


def arm_inputs(track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]) -> ArmInputs:
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
                      precision=sc["precision"], quality_observation=QUALITY_OBSERVATION)
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


def candidates(track: str) -> dict[str, tuple[str, str]]:
    """Role (``primary``, ``alternative``) → (hardware name, registry reference) of ``track``'s candidates.

    ValueError for a track the evaluators do not know.
    """
    sc = scenario(track)
    return {role: (sc[key]["hardware_name"], sc[key]["registry_ref"] or "")
            for role, key in (("primary", "hardware"), ("alternative", "alternative"))}


def decide(part: str, controls: Mapping[str, Any], baseline: dict[str, Any], result: dict[str, Any],
           alternatives: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """The decision fields of a part's plan: part E keeps the ranking its choice picks."""
    if part != "E":
        return {}
    choice, rejected = controls["choice"], controls["rejected"]
    return {"decision": {"recommendation": choice, "rejected": rejected},
            "chosen_result": (baseline if choice in ("primary", "hold") else result if choice == "alternative" else alternatives[0]),
            "result_role": "chosen candidate" if choice == "alternative" else "rejected alternative"}



def build_variants() -> tuple[BuildVariant, ...]:
    """None: the hosted labs' build of v1_11 differs from 0.3.0's only in import lines, and a sweep of every control on
    every track agrees with it exactly."""
    return ()


def upstream_inputs(part: str, inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the book's notebook seals a capture over (its ``upstream_inputs``): each part's own ``inputs``.

    Part D's inputs hold part C's selected result latency, so D's seal covers the part C result it builds on.
    """
    return inputs

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


def synthesis_problems(bundle: Bundle) -> list[Problem]:
    """A listed trigger and limitation, and part E captured with the decision the synthesis defends."""
    s = bundle.synthesis
    problems: list[Problem] = []
    for field, options, what in (("reevaluation_trigger", TRIGGERS, "re-evaluation trigger"),
                                 ("residual_risk", LIMITATIONS, "remaining limitation")):
        value = getattr(s, field)
        if value not in [option.value for option in options]:
            problems.append(Problem(f"Choose a {what} from the lab's list.", [option.value for option in options], value))
    e = bundle.evidence.get("E")
    decision = e.decision if e is not None and isinstance(e.decision, Mapping) else None
    if decision is None:
        problems.append(Problem("Capture part E with a deployment decision; the synthesis defends that decision.",
                         "part E decision", None))
    return problems

