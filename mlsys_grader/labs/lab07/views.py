"""Lab 07's part views: the seeds' table, chart and "Observed analytically" sentence for each part.

``view_a`` … ``view_e`` are the parts' views.  A chart painter receives the matplotlib ``Axes`` (the notebook
owns the figure), so nothing here imports matplotlib or runs an evaluator for a part's result: the numbers come
from the plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlsys_grader.core.labspec import PartPlan, View
from mlsys_grader.labs.charts import BLUE, ORANGE, RED, bars, plural

from . import judge

if TYPE_CHECKING:
    from mlsys_grader.labs.declared import Lab


def view_a(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def view_b(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def view_c(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Path": label, "Launches": arm["launches"], "Breaks": arm["graph_breaks"],
             "Traffic": f"{arm['total_traffic_mb']:.3f} MB"} for label, arm in (("Unfused", base), ("Selected", result))]

    def draw(ax):
        bars(ax, ["Unfused", "Selected"], [("Traffic", [base["total_traffic_mb"], result["total_traffic_mb"]], BLUE)],
              ylabel="Graph traffic (MB)")

    return View(rows, draw, (
        f"{verdict_words}: the selected path removes {result['eliminated_traffic_mb']:.3f} MB of graph traffic and uses "
        f"{plural(result['launches'], 'launch', 'launches')}. Arithmetic is preserved; each graph break restores a materialized boundary."))


def view_d(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def view_e(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def track_facts(lab: Lab, track: str) -> dict[str, str]:
    """The target device, part D's default training host, how this track recompiles, and the workload."""
    # Words, not evidence: the default part D baseline's host, evaluated once here (no plan, no replay service).
    baseline = judge.arm_inputs(lab, track, "D", lab.parts["D"].defaults(), {}).baseline
    host = lab.evaluate_arm(track, lab.model_id, baseline)["training_host"]
    context = ("offline host rebuild and redeployment count (TinyML compiles ahead-of-time on the host, not via "
               "on-device JIT guards)" if track == "tinyml" else "guard-triggered recompilation count")
    ev = lab.evaluator()
    return {"device": ev.target_name(track), "training_host": host, "recompile_context": context,
            "scenario": ev.workload(track)}

