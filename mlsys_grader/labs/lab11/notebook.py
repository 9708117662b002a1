"""Lab 11's notebook text: the Otter master's words, the book's radio labels and its closing report."""

from __future__ import annotations

from mlsys_grader.core.labspec import LabText, NotebookText, PartText

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


TEXT = LabText(notebook=NOTEBOOK, decision_labels=DECISION_LABELS, learning_objectives=LEARNING_OBJECTIVES,
               big_takeaways=BIG_TAKEAWAYS, source_trace=SOURCE_TRACE)
"""The lab's words for :class:`~mlsys_grader.core.labspec.Lab`."""
