"""Lab 02's part views: the book's table, chart and result sentence for each part.

``view_a`` … ``view_d`` are the parts' views.  A chart painter receives the matplotlib ``Axes`` (the notebook owns
the figure), so nothing here imports matplotlib or runs an evaluator for a part's result: the numbers come from the
plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import PartPlan, View
from mlsys_grader.labs.charts import BLUE, GREEN, MUTED, ORANGE, RED, bars

from . import judge

if TYPE_CHECKING:
    from mlsys_grader.labs.declared import Lab

DESIGN_LABELS = {"local": "Local", "raw": "Raw remote", "event_filter": "Event filter", "feature_summary": "Feature summary"}
"""Part D's designs as the book's chart and table name them."""


def status(feasible: Any, violations: Any) -> str:
    """``PASS`` or ``FAIL · <violations>``, as the book's tables state an outcome."""
    return "PASS" if feasible else "FAIL · " + ", ".join(violations or ())


def view_a(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Run": label, "Payload": f"{arm['raw_payload_mb']:.2f} MB", "Link": f"{arm['connection_mbps']:.1f} Mb/s",
             "Remote latency": f"{arm['remote_latency_ms']:.1f} ms", "Deadline": f"{arm['deadline_ms']:.1f} ms",
             "Boundary payload": f"{arm['deadline_boundary_payload_mb']:.2f} MB"}
            for label, arm in (("Reference", base), ("Selected", result))]
    stages = (("Request upload", "request_upload_ms", BLUE), ("Fiber round trip", "propagation_rtt_ms", ORANGE),
              ("Remote execution", "remote_execution_ms", GREEN), ("Response download", "response_download_ms", MUTED))

    def draw(ax):
        bars(ax, ["Reference", "Selected"], [(name, [base[key], result[key]], colour) for name, key, colour in stages],
             ylabel="Remote request latency (ms)", stacked=True)
        ax.axhline(result["deadline_ms"], color=RED, linestyle="--", label="Deadline")

    missed = "deadline" in result["violations"]
    return View(rows, draw, (
        f"{verdict_words}: the selected request takes {result['remote_latency_ms']:.1f} ms against a "
        f"{result['deadline_ms']:.1f} ms deadline (local execution: {result['local_latency_ms']:.1f} ms). The missed-deadline "
        f"boundary at this link is {result['deadline_boundary_payload_mb']:.2f} MB."), kind="danger" if missed else "success")


def view_b(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Run": label, "Memory": f"{arm['required_memory_mb']:.2f} / {arm['memory_capacity_mb']:.2f} MB",
             "Execution": f"{arm['execution_ms']:.1f} / {arm['deadline_ms']:.1f} ms",
             "Outcome": status(arm["feasible"], arm["violations"])}
            for label, arm in (("Reference", base), ("Selected", result))]

    def draw(ax):
        bars(ax, ["Reference", "Selected"], [
            ("Memory capacity used", [base["memory_utilization_pct"], result["memory_utilization_pct"]], BLUE),
            ("Execution budget used", [base["execution_budget_utilization_pct"], result["execution_budget_utilization_pct"]],
             ORANGE)], ylabel="Requirement used (%)")
        ax.axhline(100, color=MUTED, linestyle="--", label="Hard limit")

    return View(rows, draw, (
        f"{verdict_words}: {status(result['feasible'], result['violations'])}. Changing memory demand does not change "
        "execution time; changing sequential work does not change memory."), kind="success" if result["feasible"] else "danger")


def view_c(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    low = plan.alternatives[0] if plan.alternatives else base
    runs = (("Reference", base), ("Selected", result), ("Always off", low))
    rows = [{"Run": label, "Duty cycle": f"{arm['duty_cycle']:.0%}", "Energy / day": f"{arm['energy_wh']:.3f} Wh",
             "Observation": f"{arm['active_observation_hours']:.2f} / {arm['minimum_observation_hours']:.2f} h",
             "Outcome": status(arm["sustained_feasible"], arm["violations"])} for label, arm in runs]

    def draw(ax):
        ax.bar([label for label, _ in runs], [arm["average_power_w"] for _, arm in runs], color=[BLUE, ORANGE, GREEN])
        ax.axhline(base["average_power_budget_w"], color=MUTED, linestyle="--", label="Average-power budget")
        ax.set_ylabel("Average power (W)")

    return View(rows, draw, (
        f"{verdict_words}: {status(result['sustained_feasible'], result['violations'])} at a "
        f"{result['duty_cycle']:.0%} duty cycle ({result['average_power_w']:.3g} W against a "
        f"{result['average_power_budget_w']:.3g} W budget). Lower duty saves energy, but too little active observation "
        "fails the mission."), kind="success" if result["sustained_feasible"] else "danger")


def view_d(plan: PartPlan, track: str, verdict_words: str) -> View:
    designs = dict(zip(judge.candidates(), plan.alternatives, strict=False))
    rows = [{"Design": DESIGN_LABELS[name],
             "Latency": "Unavailable" if arm["latency_ms"] is None else f"{arm['latency_ms']:.1f} ms",
             "Upload": f"{arm['uploaded_payload_mb']:.3f} MB", "Information retained": f"{arm['retained_information_pct']:.1f}%",
             "Outcome": status(arm["feasible"], arm["violations"])} for name, arm in designs.items()]

    def draw(ax):
        ax.bar([DESIGN_LABELS[name] for name in designs], [arm["latency_ms"] or 0.0 for arm in designs.values()],
               color=[GREEN if arm["feasible"] else RED for arm in designs.values()])
        ax.set_ylabel("Request latency (ms)")

    feasible = judge.feasible_designs(plan)
    named = ", ".join(DESIGN_LABELS[name].lower() for name in feasible) if feasible else "no design"
    return View(rows, draw, (
        f"{verdict_words}: {named} {'satisfies' if len(feasible) <= 1 else 'satisfy'} every stated requirement under "
        f"these payload and link conditions. Filtering reduces request bytes and adds local preprocessing; retained "
        "information is a supplied observation."), kind="success" if feasible else "danger")


def track_facts(lab: Lab, track: str) -> dict[str, str]:
    """The track's context, and part A's payload and link menus in the book's words."""
    spec = lab.spec
    payloads, rates = spec.constant("payload_options_mb", track), spec.constant("connection_options_mbps", track)
    return {"scenario": lab.evaluator().scenario(track),
            "payloads": ", ".join(f'`"{level}"` {value:g} MB'
                                  for level, value in zip(spec.constant("payload_levels"), payloads, strict=True)),
            "rates": ", ".join(f'`"{level}"` {value:g} Mb/s'
                               for level, value in zip(spec.constant("connection_levels"), rates, strict=True)),
            "reference_payload": f"{payloads[0]:g} MB", "reference_rate": f"{rates[-1]:g} Mb/s",
            "reference_duty": f"{spec.constant('baseline_duty_cycle', track):.0%}"}
