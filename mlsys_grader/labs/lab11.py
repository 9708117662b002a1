"""Lab 11 — Acceleration That Survives the Whole Path (``v1_11_experiments``).

Arms are shaped as the book's marimo lab shapes them: ``{"inputs": …, "outputs": …}``
with ``model_key`` ``v1_11_experiments.<experiment>``.  Part D's baseline kernel
time is part C's selected result latency, so part D depends on part C.

Two predictions are judgements the book leaves open; their thresholds are defined
here once (``A_*``, ``D_*``), applied by :meth:`Lab11.displayed_prediction` (the
verdict the notebook shows) and :meth:`Lab11.accepted_predictions`, and stated in
the notebook's calculation notes:

* Part A — with ``r`` the latency ratio baseline/changed and ``f`` the factor, the
  realised share is ``q = (r - 1) / (f - 1)``.  If the binding resource switches,
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
from typing import Any, Mapping

from mlsysim.core.units import Q_
from pint.errors import PintError
from mlsysim.labs.experiments import v1_11_experiments as ev

from ..core.labspec import Choice, Control, LabSpec, PartPlan, PartSpec

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
    """Part A's ``(r, f, q)`` from the outputs of both arms: latency ratio, factor, realised share."""
    factor = float(max(result["compute_scale"], result["bandwidth_scale"], result["reuse"]))
    changed = Q_(result["latency"]["magnitude"], result["latency"]["unit"]).to(baseline["latency"]["unit"]).magnitude
    ratio = float(baseline["latency"]["magnitude"]) / float(changed)
    return ratio, factor, (ratio - 1.0) / (factor - 1.0)


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

TRIGGERS = (
    Choice("latency", "Latency budget tightens", ("latency budget", "latency")),
    Choice("energy", "Energy budget tightens", ("energy budget", "energy")),
    Choice("support", "Execution support changes", ("execution support", "support")),
)
LIMITATIONS = (
    Choice("contract", "Deployed kernels differ from the scenario contract", ("scenario contract", "deployed kernel", "contract")),
    Choice("power", "Power draw differs from the TDP proxy", ("power draw", "tdp", "power")),
    Choice("shape_mix", "Workload shape mix changes", ("shape mix", "workload shape", "shape")),
)


# What reading a hand-edited record can raise: missing keys, wrong types, odd units.
_RECORD_SHAPE_ERRORS = (LookupError, TypeError, ValueError, ArithmeticError, AttributeError, PintError)


def _q(payload: Mapping[str, Any]) -> float:
    return float(payload["magnitude"])


def _jsonable(track: str, experiment: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return ev.make_replay_packet(track=track, experiment=experiment, inputs=inputs)["inputs"]


class Lab11(LabSpec):
    lab_id = "lab11"
    title = "Lab 11 — Acceleration That Survives the Whole Path"
    model_id = ev.MODEL_ID
    parts = PARTS
    triggers = TRIGGERS
    limitations = LIMITATIONS

    def _evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        result = ev.replay_experiment({"track_id": track, "model_key": model_key, "inputs": inputs})
        return {"inputs": inputs, "outputs": ev.to_jsonable(result)}

    @staticmethod
    def model_key(part: str) -> str:
        return f"{ev.MODEL_ID}.{EXPERIMENTS[part]}"

    # -- building (mirrors the seed's cell that computes every arm) --------------
    def _arm_inputs(self, track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]):
        sc = ev.get_track_scenario(track)
        experiment = EXPERIMENTS[part]
        alternatives: list[dict] = []
        if part == "A":
            demand = ev.scenario_gemm_demand(track)
            base = dict(hardware=sc.hardware, operations=demand.operations, base_bytes_moved=demand.bytes_moved,
                        precision=sc.precision, reuse=1.0, compute_scale=1.0, bandwidth_scale=1.0)
            key = {"compute": "compute_scale", "bandwidth": "bandwidth_scale", "reuse": "reuse"}[c["change"]]
            result = dict(base, **{key: float(c["factor"])})
        elif part == "B":
            tiles = ev.scenario_tile_choices(track)
            common = dict(hardware=sc.hardware, m=sc.dimensions[0], n=sc.dimensions[1], k=sc.dimensions[2],
                          precision=sc.precision, scratchpad_capacity=sc.local_capacity)
            bt, st = tiles["baseline"], tiles[c["tile"]]
            base = dict(common, tile_m=bt[0], tile_n=bt[1], tile_k=bt[2], fused=False)
            result = dict(common, tile_m=st[0], tile_n=st[1], tile_k=st[2], fused=c["fused"])
        elif part == "C":
            bd = ev.scenario_execution_dimensions(track, aligned=True)
            sd = ev.scenario_execution_dimensions(track, aligned=c["shape"] == "aligned")
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
            candidates = ev.scenario_candidates(track)
            latency_budget, energy_budget, cost_budget = ev.scenario_budgets(track, scale=c["budget_scale"])
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
        sc = ev.get_track_scenario(track)
        inputs = record.result["inputs"]
        if part == "A":
            changed = [(name, inputs[key]) for name, key in (("compute", "compute_scale"), ("bandwidth", "bandwidth_scale"), ("reuse", "reuse")) if inputs[key] != 1.0]
            if len(changed) != 1:
                return None
            return {"change": changed[0][0], "factor": changed[0][1]}, {}
        if part == "B":
            tile = (inputs["tile_m"], inputs["tile_n"], inputs["tile_k"])
            names = [name for name, dims in ev.scenario_tile_choices(track).items() if tuple(dims) == tile]
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
        sc = ev.get_track_scenario(track)
        hardware = {"primary": sc.hardware, "alternative": sc.alternative}.get(candidate)
        if candidate == "none":
            return ("no feasible", "neither", "none")
        if candidate == "hold":
            return ("hold",)
        if hardware is None:
            return ()
        ref = ev.to_jsonable(hardware)["registry_ref"] or ""
        return (candidate, hardware.name.lower(), ref.rsplit(".", 1)[-1].lower().replace("_", "-"))

    def final_choice_terms(self, bundle: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        e = bundle.evidence.get("E")
        decision = e.decision if e is not None and isinstance(e.decision, Mapping) else {}
        return (self._candidate_terms(bundle.track, decision.get("recommendation")),
                self._candidate_terms(bundle.track, decision.get("rejected")))

    def evidence_quantities(self, record: Any) -> list[tuple[float, str]]:
        found: list[tuple[float, str]] = []

        def walk(value: Any) -> None:
            if isinstance(value, dict):
                if len(value) == 2 and "magnitude" in value and "unit" in value:
                    if isinstance(value["magnitude"], (int, float)) and isinstance(value["unit"], str):
                        found.append((float(value["magnitude"]), value["unit"]))
                    return
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                found.append((float(value), "dimensionless"))

        for arm in (record.baseline, record.result, *record.alternatives):
            if isinstance(arm, dict):
                walk(arm.get("outputs"))
        return found

    # -- reference answers ------------------------------------------------------
    def sample_controls(self, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
        spec = PARTS[part]
        draw = (lambda control: control.sample(rng)) if rng else (lambda control: control.default)
        controls = {control.name: draw(control) for control in spec.controls}
        if part == "B":
            while controls["tile"] == "baseline" and not controls["fused"]:
                controls["fused"] = True
        if part == "C":
            if controls["shape"] == "aligned" and controls["operation"] == "gemm":
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
        e, d = plans["E"], plans["D"].result["outputs"]
        decision = e.decision if isinstance(e.decision, Mapping) else {}
        choice, rejected = decision.get("recommendation"), decision.get("rejected")
        choice = choice if choice in ("primary", "alternative", "hold", "none") else "none"
        rows = {row["candidate_id"]: row for row in e.alternatives[0]["outputs"]["rows"]}
        rejected = rejected if isinstance(rejected, str) and rejected in rows else next(iter(rows))
        chosen_words = self._candidate_terms(track, choice)
        rejected_row = rows[rejected]
        latency = rejected_row["latency"]
        verdict = "feasible" if rejected_row["feasible"] else "failing " + ", ".join(rejected_row["violations"])
        return (
            f"I choose {chosen_words[0]} ({' / '.join(chosen_words[1:2]) or 'current plan'}) and reject the {rejected} candidate "
            f"({rejected_row['hardware_name']}), which reaches {latency['magnitude']:.4g} {latency['unit']} end to end, {verdict}, "
            f"under the {e.alternatives[0]['outputs']['objective']} objective. "
            f"A {d['local_speedup']:.0f}x kernel-only gain became only {d['end_to_end_speedup']:.3f}x end to end, "
            f"so the whole path decides. The remaining limitation is that {self.choice(LIMITATIONS, limitation).label.lower()}; "
            f"I would re-evaluate when the {self.choice(TRIGGERS, trigger).label.lower()}."
        )

    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        trigger, risk = rng.choice(TRIGGERS), rng.choice(LIMITATIONS)
        return {"reevaluation_trigger": trigger.value, "residual_risk": risk.value,
                "rationale": self.reference_rationale(track, plans, trigger.value, risk.value)}


LAB = Lab11()
