"""What a notebook shows for one part's result: the seeds' table, chart and observation.

Each view is a small function of a :class:`~mlsys_grader.core.labspec.PartPlan` and
returns a :class:`View`: table rows (as the seed's ``table(rows)`` shows them), a
chart drawn on a matplotlib ``Axes`` (the seed's plotly figure, redrawn), and the
seed's "Observed analytically" sentence.  That sentence opens with the observed
verdict in the part's own option words, taken from the lab's
:meth:`~mlsys_grader.core.labspec.LabSpec.displayed_prediction` — the one place
that decides it, and a value the grader always accepts.  Nothing here runs an
evaluator: the numbers come from the plan the session already built, so what a
student sees is exactly what the evidence record keeps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.labspec import PartPlan

# The seeds' palette (mlsysim.labs.style.COLORS), by name.
BLUE, ORANGE, GREEN, RED, MUTED = "#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8C8C8C"


@dataclass
class View:
    """A part's rendered result: rows for the table, a chart painter and one observation.

    ``verdict`` is the prediction value the observation states (in its option words).
    """

    rows: list[dict[str, Any]]
    draw: Callable[[Any], None] | None
    observation: str
    kind: str = "info"
    notes: list[str] = field(default_factory=list)
    verdict: str = ""


# A view function: (plan, track, the verdict in the part's option words) -> View whose observation opens with them.
_Render = Callable[[PartPlan, str, str], View]


def _showing_verdict(lab_id: str, part: str, render: _Render) -> Callable[[PartPlan, str], View]:
    """``render`` given the lab's displayed verdict, which the returned view also records."""
    def view(plan: PartPlan, track: str) -> View:
        from ..labs import get_lab

        lab = get_lab(lab_id)
        verdict = lab.displayed_prediction(track, part, plan)
        return dataclasses.replace(render(plan, track, lab.parts[part].predictions[verdict]), verdict=verdict)

    view.__name__ = view.__qualname__ = render.__name__
    view.__doc__ = render.__doc__
    return view


def _q(payload: Mapping[str, Any], unit: str) -> float:
    """A ``{"magnitude", "unit"}`` payload converted to ``unit`` (pint via mlsysim's registry)."""
    from mlsysim.core.units import Q_

    return float(Q_(payload["magnitude"], payload["unit"]).to(unit).magnitude)


# Units chosen for reading: for each kind of quantity, the prefixed units a person writes,
# smallest first ("30.8 µs", "1 kJ", "2.15 GFLOP"); bytes keep the binary prefixes the book uses.
_READABLE_UNITS = (
    ("second", (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0))),
    ("joule", (("nJ", 1e-9), ("µJ", 1e-6), ("mJ", 1e-3), ("J", 1.0), ("kJ", 1e3), ("MJ", 1e6))),
    ("flop", (("FLOP", 1.0), ("kFLOP", 1e3), ("MFLOP", 1e6), ("GFLOP", 1e9), ("TFLOP", 1e12), ("PFLOP", 1e15))),
    ("byte", (("B", 1.0), ("KiB", 2.0 ** 10), ("MiB", 2.0 ** 20), ("GiB", 2.0 ** 30), ("TiB", 2.0 ** 40))),
    ("watt", (("mW", 1e-3), ("W", 1.0), ("kW", 1e3))),
)


_BYTE_UNITS = frozenset({"byte", "B", "KiB", "MiB", "GiB", "TiB", "kB", "MB", "GB", "TB", "kilobyte", "megabyte",
                         "gigabyte", "terabyte", "kibibyte", "mebibyte", "gibibyte", "tebibyte"})


def plain_number(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, written without an exponent when it reads well (0.000123, 1230);
    below a millionth (a TinyML inference's dollar cost, where no unit prefix helps) as ``1.28e-08``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    text = f"{value:.{digits}g}"
    if "e" not in text or not 1e-6 <= abs(value) < 1e12:
        return text
    places = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{round(value, places):.{max(0, places)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def readable(magnitude: float, unit: str, digits: int = 3) -> str:
    """A quantity as people read it: the prefixed unit that keeps the number between 1 and 1000
    ("30.8 µs" for 0.0308 ms, "1 kJ" for 1e6 mJ), to ``digits`` significant digits; dollars as "$0.00123"."""
    from mlsysim.core.units import Q_

    quantity = Q_(float(magnitude), unit)
    if unit in ("dollar", "USD", "$"):
        return "$" + plain_number(float(magnitude), digits)
    name = format(quantity.units, "D")
    for base, scales in _READABLE_UNITS:
        if "/" in name or "*" in name or quantity.dimensionality != Q_(1.0, base).dimensionality:
            continue  # compound units (FLOP/B) keep their own
        if (base == "byte") != (name in _BYTE_UNITS):
            continue  # mlsysim's byte is dimensionless: only a unit named as bytes is one
        value = float(quantity.to(base).magnitude)
        if value == 0:  # zero keeps the unit it was recorded in, written the family's way
            factor = float(Q_(1.0, unit).to(base).magnitude)
            return "0 " + next((symbol for symbol, size in scales if abs(size - factor) <= 1e-9 * size), scales[0][0])
        index = 0
        for position, (_, size) in enumerate(scales):
            if abs(value) >= size * (1 - 1e-12):
                index = position
        # Rounding can carry into the next unit (999.96 ms reads as 1 s, not 1000 ms).
        if index + 1 < len(scales) and abs(float(f"{value / scales[index][1]:.{digits}g}")) >= 1000:
            index += 1
        symbol, scale = scales[index]
        return f"{plain_number(value / scale, digits)} {symbol}"
    return f"{plain_number(float(magnitude), digits)} {quantity.units:~P}".strip()


def readable_payload(payload: Mapping[str, Any], digits: int = 3) -> str:
    """:func:`readable` for a ``{"magnitude", "unit"}`` payload as the evaluators record it."""
    return readable(payload["magnitude"], payload["unit"], digits)


def plural(count: Any, one: str, many: str | None = None) -> str:
    """``1 launch``, ``2 launches``."""
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _bars(ax, labels, series, *, ylabel: str, stacked: bool = False) -> None:
    """Grouped or stacked bars; ``series`` is [(name, values, colour)]."""
    count = len(series)
    width = 0.7 if stacked or count == 1 else 0.8 / count
    bottoms = [0.0] * len(labels)
    for index, (name, values, colour) in enumerate(series):
        if stacked or count == 1:
            positions = list(range(len(labels)))
        else:
            positions = [i - 0.4 + width * (index + 0.5) for i in range(len(labels))]
        ax.bar(positions, values, width=width, color=colour, label=name, bottom=bottoms if stacked else None)
        if stacked:
            bottoms = [b + v for b, v in zip(bottoms, values)]
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel(ylabel)
    if count > 1:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=min(count, 5), frameon=False)


# -- Lab 07 --------------------------------------------------------------------------
def lab07_a(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    speedup = plan.alternatives[0]["speedup"] if plan.alternatives else base["total_time_us"] / result["total_time_us"]
    rows = [
        {"Path": label, "Dispatches": arm["dispatches"], "Total": f"{arm['total_time_us']:.2f} µs",
         "Dispatch share": f"{arm['dispatch_fraction']:.1%}"}
        for label, arm in (("Fine", base), ("Coarse", result))
    ]

    def draw(ax):
        _bars(ax, ["Fine", "Coarse"], [
            ("Useful work", [base["useful_time_us"], result["useful_time_us"]], BLUE),
            ("Dispatch", [base["dispatch_time_us"], result["dispatch_time_us"]], ORANGE),
        ], ylabel="Analytical time (µs)", stacked=True)

    return View(rows, draw, (
        f"{verdict_words}: the fine path spends {base['dispatch_fraction']:.1%} of total time in dispatch. Coarsening to "
        f"{plural(result['dispatches'], 'launch', 'launches')} produces {speedup:.2f}× speedup with identical FLOPs and payload."))


def lab07_b(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Executions": result["executions"], "Compilations": result["compilation_count"],
             "Break-even": result["break_even_executions"], "Eager": f"{result['eager_total_ms']:.2f} ms",
             "Compiled": f"{result['compiled_total_ms']:.2f} ms"}]
    rebuild = "Host rebuilds raise" if track == "tinyml" else "Recompilation raises"

    def draw(ax):
        _bars(ax, ["One execution", "Selected repetitions"], [
            ("Eager total", [base["eager_total_ms"], result["eager_total_ms"]], BLUE),
            ("Compiled total", [base["compiled_total_ms"], result["compiled_total_ms"]], ORANGE),
        ], ylabel="Cumulative analytical time (ms)")

    return View(rows, draw, (
        f"{verdict_words} at {plural(result['executions'], 'execution')} and {plural(result['compilation_count'], 'compilation')}. "
        f"{rebuild} setup without changing the eager baseline."),
        kind="success" if result["compilation_repaid"] else "warn")


def lab07_c(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline, plan.result
    rows = [{"Path": label, "Launches": arm["launches"], "Breaks": arm["graph_breaks"],
             "Traffic": f"{arm['total_traffic_mb']:.3f} MB"} for label, arm in (("Unfused", base), ("Selected", result))]

    def draw(ax):
        _bars(ax, ["Unfused", "Selected"], [("Traffic", [base["total_traffic_mb"], result["total_traffic_mb"]], BLUE)],
              ylabel="Graph traffic (MB)")

    return View(rows, draw, (
        f"{verdict_words}: the selected path removes {result['eliminated_traffic_mb']:.3f} MB of graph traffic and uses "
        f"{plural(result['launches'], 'launch', 'launches')}. Arithmetic is preserved; each graph break restores a materialized boundary."))


def lab07_d(plan: PartPlan, track: str, verdict_words: str) -> View:
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


def lab07_e(plan: PartPlan, track: str, verdict_words: str) -> View:
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


# -- Lab 11 --------------------------------------------------------------------------
def lab11_a(plan: PartPlan, track: str, verdict_words: str) -> View:
    from ..labs.lab11 import roofline_gain

    base, result = plan.baseline["outputs"], plan.result["outputs"]
    rows = [{"Run": label, "Intensity": f"{_q(arm['arithmetic_intensity'], 'flop/byte'):.1f} FLOP/B",
             "Bottleneck": arm["bottleneck"], "Latency": readable_payload(arm["latency"], 4)}
            for label, arm in (("Baseline", base), ("Changed", result))]

    def draw(ax):
        ax.bar(["Baseline", "Changed"], [_q(base["latency"], "ms"), _q(result["latency"], "ms")], color=[BLUE, ORANGE])
        ax.set_ylabel("Analytical latency (ms)")

    ratio, factor, share = roofline_gain(base, result)
    return View(rows, draw, (
        f"{verdict_words}: latency improves {ratio:.2f}× for a {factor:g}× change, so q = {share:.2f}. The binding "
        f"limit is {result['bottleneck']} after the change (it was {base['bottleneck']}); improving a nonbinding "
        "resource cannot lower latency."))


def lab11_b(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline["outputs"], plan.result["outputs"]
    rows = [{"Run": label, "Tile": str(tuple(arm["tile"])), "Fused": arm["fused"],
             "Local need": readable_payload(arm["scratchpad_required"], 4),
             "Capacity": readable_payload(arm["scratchpad_capacity"], 4),
             "DRAM traffic": readable_payload(arm["dram_bytes"], 4), "Mapping": "FITS" if arm["fits"] else "SPILL"}
            for label, arm in (("Baseline", base), ("Selected", result))]

    def draw(ax):
        ax.bar(["Baseline", "Selected"], [_q(base["dram_bytes"], "KiB"), _q(result["dram_bytes"], "KiB")], color=[BLUE, GREEN])
        ax.set_ylabel("DRAM traffic (KiB)")

    fits = result["fits"]
    return View(rows, draw, (
        f"{verdict_words}: the selected tile {'fits' if fits else 'does not fit'}. "
        "A failed mapping has no fabricated runtime penalty; it must be remapped."), kind="success" if fits else "danger")


def lab11_c(plan: PartPlan, track: str, verdict_words: str) -> View:
    base, result = plan.baseline["outputs"], plan.result["outputs"]
    rows = [{"Run": label, "Operation": arm["operation"], "Original": str(tuple(arm["original_dimensions"])),
             "Executed": str(tuple(arm["executed_dimensions"])), "Path": arm["path"],
             "Extra work": readable_payload(arm["extra_operations"]), "Latency": readable_payload(arm["latency"], 4)}
            for label, arm in (("Baseline", base), ("Selected", result))]

    def draw(ax):
        colours = {"native": BLUE, "padded": ORANGE, "fallback": RED}
        ax.bar(["Baseline", "Selected"], [_q(base["latency"], "ms"), _q(result["latency"], "ms")],
               color=[colours.get(base["path"], MUTED), colours.get(result["path"], MUTED)])
        ax.set_ylabel("Kernel latency (ms)")

    hardware = result["hardware_name"] if result["path"] != "fallback" else result["fallback_hardware_name"]
    return View(rows, draw, (
        f"{verdict_words}: the selected case uses the {result['path']} path on {hardware}. "
        "Padding adds counted work; unsupported work names the fallback device."))


def lab11_d(plan: PartPlan, track: str, verdict_words: str) -> View:
    from ..labs.lab11 import whole_path_gain

    out = plan.result["outputs"]
    stages = (("Host", "host_time", BLUE), ("Transfer", "transfer_time", ORANGE), ("Launch", "launch_time", GREEN),
              ("Kernel", "kernel_time", RED), ("Postprocess", "postprocess_time", MUTED))
    rows = [{"Path": label, **{name: readable_payload(path[key], 4) for name, key, _ in stages},
             "Total": readable_payload(path["total_time"], 4)}
            for label, path in (("Baseline", out["baseline"]), ("Accelerated", out["accelerated"]))]

    def draw(ax):
        _bars(ax, ["Baseline", "Accelerated"],
              [(name, [_q(out["baseline"][key], "ms"), _q(out["accelerated"][key], "ms")], colour) for name, key, colour in stages],
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


def lab11_e(plan: PartPlan, track: str, verdict_words: str) -> View:
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
        values = [_q(row[field_name], unit) for row in ranking["rows"]]
        ax.bar(names, values, color=[GREEN if row["feasible"] else RED for row in ranking["rows"]])
        ax.axhline(_q(budget, unit), color=MUTED, linestyle="--", label=budget_label)
        ax.set_ylabel(f"{axis} ({'$' if unit == 'dollar' else unit})")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)

    return View(rows, draw, (
        f"{verdict_words}: constrained ranking recommends {recommendation} for {ranking['objective']} under the "
        f"displayed illustrative budgets. {budgets}"), kind="success" if ranking["recommendation"] else "danger")


_RENDERERS: dict[tuple[str, str], _Render] = {
    ("lab07", "A"): lab07_a, ("lab07", "B"): lab07_b, ("lab07", "C"): lab07_c, ("lab07", "D"): lab07_d, ("lab07", "E"): lab07_e,
    ("lab11", "A"): lab11_a, ("lab11", "B"): lab11_b, ("lab11", "C"): lab11_c, ("lab11", "D"): lab11_d, ("lab11", "E"): lab11_e,
}
# What the notebook calls: (plan, track) -> View, the observation opening with the displayed verdict.
VIEWS: dict[tuple[str, str], Callable[[PartPlan, str], View]] = {
    key: _showing_verdict(*key, render) for key, render in _RENDERERS.items()
}


def header_facts(lab_id: str, track: str) -> list[tuple[str, str]]:
    """The seed header's meta boxes (track, workload/machine, deliverable) for ``track``."""
    if lab_id == "lab07":
        from mlsysim.labs.experiments import v1_07_experiments as ev

        profile = ev.TRACKS[track]
        return [("Track", profile.display), ("Workload", profile.workload), ("Target", profile.target.name),
                ("Output", "Runtime-path recommendation")]
    from mlsysim.labs.experiments import v1_11_experiments as ev

    scenario = ev.get_track_scenario(track)
    return [("Machine", scenario.hardware.name), ("Track", scenario.track.title()),
            ("Deliverable", "Constrained accelerator decision"), ("Assumptions", scenario.assumption_label.capitalize())]
