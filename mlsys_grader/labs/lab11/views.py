"""Lab 11's part views: the seeds' table, chart and "Observed analytically" sentence for each part.

``view_a`` … ``view_e`` are the parts' views.  A chart painter receives the matplotlib ``Axes`` (the notebook
owns the figure), so nothing here imports matplotlib or runs an evaluator for a part's result: the numbers come
from the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mlsys_grader.core.labspec import PartPlan, View
from mlsys_grader.labs.charts import BLUE, GREEN, MUTED, ORANGE, RED, bars, q, readable_payload

from .judge import evaluator, roofline_gain, whole_path_gain

if TYPE_CHECKING:
    from mlsys_grader.core.models import Bundle
    from mlsys_grader.labs.declared import Lab


def view_a(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def view_b(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def view_c(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def view_d(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def view_e(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def track_facts(lab: Lab, track: str) -> dict[str, str]:
    """The track's accelerator and the investigation in one line."""
    return evaluator().track_facts(track)


def captured_decision(lab: Lab, bundle: Bundle) -> list[tuple[str, str]]:
    """Part E's captured recommendation and rejected candidate, in the book's radio labels."""
    record = bundle.evidence.get("E")
    chosen = record.decision if record is not None else None
    if not isinstance(chosen, Mapping):
        return []
    labels = lab.decision_labels[("E", "choice")]
    return [("Recommendation (part E)", labels.get(chosen.get("recommendation") or "", "—")),
            ("Rejected candidate (part E)", labels.get(chosen.get("rejected") or "", "—"))]
