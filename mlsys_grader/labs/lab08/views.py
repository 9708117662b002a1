"""Lab 08's part views: the book's table, chart and result sentence for each part.

``view_a`` … ``view_e`` are the parts' views.  A chart painter receives the matplotlib ``Axes`` (the notebook owns the
figure), so nothing here imports matplotlib or runs an evaluator for a part's result: the numbers come from the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import PartPlan, View
from mlsys_grader.labs.charts import BLUE, GREEN, ORANGE, RED, bars

from . import judge

if TYPE_CHECKING:
    from mlsys_grader.labs.declared import Lab


def status(arm: Mapping[str, Any]) -> str:
    """The book's outcome cell: PASS, or FAIL with the violated limits."""
    return "PASS" if arm["feasible"] else "FAIL · " + ", ".join(arm.get("violations") or ["memory"])


def _seconds(arm: Mapping[str, Any]) -> str:
    return "—" if arm["total_time_seconds"] is None else f"{arm['total_time_seconds']:.1f}"


def view_a(plan: PartPlan, track: str, verdict_words: str) -> View:
    names = ("SGD", "ADAM", "ADAMW")
    rows = [{"Optimizer": name, "Weights (GB)": f"{arm['memory']['weights_gb']:.1f}",
             "Gradients (GB)": f"{arm['memory']['gradients_gb']:.1f}",
             "Optimizer state (GB)": f"{arm['memory']['optimizer_state_gb']:.1f}",
             "Total (GB)": f"{arm['memory']['total_memory_gb']:.1f}", "Updates to target": arm["updates_to_target"]}
            for name, arm in zip(names, plan.alternatives, strict=True)]
    adamw, chosen = plan.alternatives[2], plan.result
    host = judge.declaration().constant("target", track)

    def draw(ax: Any) -> None:
        bars(ax, ["SGD", "Adam", "AdamW"], [
            (label, [arm["memory"][key] for arm in plan.alternatives], colour)
            for label, key, colour in (("Weights", "weights_gb", BLUE), ("Gradients", "gradients_gb", ORANGE),
                                       ("Optimizer", "optimizer_state_gb", GREEN), ("Activations", "activations_gb", RED))
        ], ylabel="Training memory (GB)", stacked=True)

    return View(rows, draw, (
        f"{verdict_words}: on the {host} development host, AdamW optimizer state is "
        f"{adamw['memory']['optimizer_state_gb']:.1f} GB; inference weights alone are {adamw['memory']['inference_weights_gb']:.1f} GB. "
        f"Your optimizer conclusion is {plan.decision}, with {chosen['updates_to_target']} illustrative updates to target."))


def _batch_row(label: str, arm: Mapping[str, Any]) -> dict[str, Any]:
    timing = arm["timing"]
    return {"Design": label, "Physical batch": timing["physical_batch"], "Accumulation": timing["accumulation_steps"],
            "Effective batch": timing["effective_batch"],
            "Updates": arm["updates_to_target"] if arm["updates_to_target"] is not None else "target missed",
            "Samples presented": arm["samples_presented"] if arm["samples_presented"] is not None else "—",
            "Update time (ms)": f"{timing['update_time_ms']:.1f}", "Total time (s)": _seconds(arm), "Outcome": status(arm)}


def view_b(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [_batch_row("Baseline", base), _batch_row("Intervention", result)]
    memory = result["memory"]
    if not memory["feasible"]:
        feedback = (f"Execution failed ({status(result)}): resident physical batch {result['timing']['physical_batch']} requires "
                    f"{memory['total_memory_gb']:.1f} GB, exceeding accelerator capacity ({memory['available_memory_gb']:.1f} GB) "
                    f"with {memory['activations_gb']:.1f} GB of resident activations alone (out of memory). Gradient "
                    "accumulation enables larger effective batches without blowing up resident activation memory.")
    elif not result["reached_target"]:
        feedback = (f"Target missed ({status(result)}): the design fits in memory but does not reach target quality "
                    f"({result['target_quality']}) within the update horizon.")
    elif not result["feasible"]:
        feedback = f"Constraint violated ({status(result)}): the design reached target quality but violated schedule or cost limits."
    else:
        feedback = "The design is feasible and reached the common target."

    def draw(ax: Any) -> None:
        for label, arm, colour in (("Baseline", base, ORANGE), ("Intervention", result, BLUE)):
            ax.plot([p[0] for p in arm["trace"]], [p[1] for p in arm["trace"]], marker="o", color=colour,
                    label=f"{label} (eff {arm['timing']['effective_batch']})")
        ax.axhline(result["target_quality"], linestyle="--", color="#8C8C8C", label="Common target")
        ax.set_xlabel("Optimizer updates")
        ax.set_ylabel("Illustrative held-out quality")
        ax.legend(loc="lower right", frameon=False)

    presented = result["samples_presented"] or "no completed target run"
    return View(rows, draw, (
        f"{verdict_words} among the offered strategies. The selected design uses physical batch "
        f"{result['timing']['physical_batch']} and effective batch {result['timing']['effective_batch']}; it presents "
        f"{presented} samples before the target result. {feedback}"),
        kind="success" if result["feasible"] and result["reached_target"] else "danger")


def view_c(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Format": arm["memory"]["precision"].upper(), "Memory (GB)": f"{arm['memory']['total_memory_gb']:.1f}",
             "Update time (ms)": f"{arm['timing']['update_time_ms']:.1f}", "Optimizer stage (ms)": f"{arm['timing']['optimizer_ms']:.1f}",
             "Finite replay": f"{arm['numerical_replay']['finite_fraction']:.1%}",
             "Target": "reached" if arm["reached_target"] else "missed", "Outcome": status(arm)} for arm in (base, result)]
    name = result["memory"]["precision"].upper()

    def draw(ax: Any) -> None:
        bars(ax, ["FP32", name], [("Update time", [base["timing"]["update_time_ms"], result["timing"]["update_time_ms"]], BLUE)],
             ylabel="Update time (ms)")

    return View(rows, draw, (
        f"{verdict_words}: {name} {'reaches' if result['reached_target'] else 'does not reach'} the common target. Its FP32 "
        f"optimizer stage remains {result['timing']['optimizer_ms']:.1f} ms."),
        kind="success" if result["reached_target"] else "danger")


def view_d(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result, timing = plan.baseline, plan.result, plan.alternatives[0]
    rows = [{"Policy": label, "Activations (GB)": f"{arm['activations_gb']:.1f}", "Total (GB)": f"{arm['total_memory_gb']:.1f}",
             "Capacity (GB)": f"{arm['available_memory_gb']:.1f}", "Fits": "yes" if arm["feasible"] else "NO"}
            for label, arm in (("None", base), (str(result["checkpointing"]).title(), result))]

    def draw(ax: Any) -> None:
        ax.bar(["No checkpoint", str(result["checkpointing"]).title()], [base["total_memory_gb"], result["total_memory_gb"]],
               color=[RED, GREEN])
        ax.axhline(base["available_memory_gb"], linestyle="--", color="#8C8C8C", label="Capacity")
        ax.set_ylabel("Training memory (GB)")

    return View(rows, draw, (
        f"{verdict_words}: the selected policy saves {timing['activation_memory_saved_gb']:.1f} GB at the default batch and adds "
        f"{timing['added_update_time_ms']:.1f} ms per update. The probe batch of {result['physical_batch']} changes from "
        f"{'fit' if base['feasible'] else 'OOM'} to {'fit' if result['feasible'] else 'OOM'}."),
        kind="success" if result["feasible"] else "danger")


def view_e(plan: PartPlan, track: str, verdict_words: str) -> View:
    rows = [{"Fix": comparison["intervention"].title(), "Update-time change (ms)": f"{comparison['delta_update_time_ms']:+.1f}",
             "Memory change (GB)": f"{comparison['delta_memory_gb']:+.1f}", "Total time (s)": _seconds(comparison["result"]),
             "Dominant stage": comparison["result"]["timing"]["dominant_stage"], "Outcome": status(comparison["result"])}
            for comparison in plan.alternatives]

    def draw(ax: Any) -> None:
        ax.bar([c["intervention"].title() for c in plan.alternatives], [c["delta_update_time_ms"] for c in plan.alternatives],
               color=[BLUE, GREEN, ORANGE])
        ax.axhline(0.0, color="#8C8C8C")
        ax.set_ylabel("Change in update time (ms)")

    fix = judge.selected_fix({"intervention": plan.decision, "rejected_alternative": (plan.upstream or {}).get("rejected_alternative")})
    if fix is None:
        decided = "Choose the first fix (or hold, naming the tested alternative you reject) when you capture."
    else:
        chosen = next(c for c in plan.alternatives if c["intervention"] == fix)
        held = "hold the unchanged baseline" if plan.decision == "none" else f"choose {fix}"
        decided = (f"You {held} after testing {fix}, which changes update time by {chosen['delta_update_time_ms']:+.1f} ms and "
                   f"memory by {chosen['delta_memory_gb']:+.1f} GB. Convergence is unchanged.")
    return View(rows, draw, f"{verdict_words} cuts update time the most against the identical baseline. {decided}")


def track_facts(lab: Lab, track: str) -> dict[str, str]:
    """The development host, the track's label and task, and part D's probe batch."""
    spec = lab.spec
    return {"device": spec.constant("target", track), "label": spec.constant("label", track),
            "probe_batch": str(spec.constant("probe_batch", track)), "scenario": spec.constant("task", track)}
