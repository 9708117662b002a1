"""Lab 08's notebook text: the Otter master's words, the scenarios the book words per track, its closing report."""

from __future__ import annotations

from mlsys_grader.core.labspec import LabText, NotebookText, PartText

# -- the Otter master's words (the book's text, part by part) ----------------------------
# A scenario of None is one the book words per track (it names the development host or the probe batch): the notebook
# shows it with ``lab.scenario(part)`` for the student's track.
NOTEBOOK = NotebookText(
    title="Lab 08: Train for the Target, Not the Counter",
    framing=(
        "**Volume I · Lab 08 · about 50–55 minutes**\n\n*Which training design reaches a common quality target within "
        "memory, schedule, and cost limits?*\n\nOutput: a training design recommendation.\n\nDevice tracks study upstream "
        "teacher training or adaptation; GPT-2 is not deployed on the constrained target. Convergence, numerical replay, "
        "stage timing, and internal host rates are finite illustrative scenario evidence, not benchmark measurements. "
        "Training memory is computed by MLSysIM."
    ),
    parts={
        "A": PartText(
            "A · Why does inference fit while training fails? (8 min)",
            None,
            (
                "Training memory sums weights, gradients, optimizer state, retained activations, and buffers. The simulator "
                "computes the allocations; convergence traces are supplied scenario observations.\n\n*How the prediction is "
                "judged.* The largest of AdamW's weights, gradients and optimizer state in the table is right."
            ),
        ),
        "B": PartText(
            "B · Does a larger batch finish sooner? (10 min)",
            (
                "Physical batch controls resident activations. Accumulation repeats microsteps before one optimizer update. "
                "Compare time to the same target quality."
            ),
            (
                "Update time repeats input + forward + backward + recomputation for every accumulated microbatch, followed "
                "by one optimizer step. The simulator multiplies supplied updates-to-target by update time and separately "
                "counts sample presentations. A design that runs out of memory or misses the target quality is a failing "
                "result, and it is valid evidence.\n\n*How the prediction is judged.* Among the four offered strategies (not "
                "the baseline), the one reaching the common target soonest while fitting in memory and within the schedule "
                "and cost limits is right: the resident batch of 32, the largest effective batch (512), or an accumulated "
                "middle batch (effective 32 or 128). \"All finish equally\" is right only when they tie."
            ),
        ),
        "C": PartText(
            "C · When does lower precision help? (10 min)",
            (
                "Narrower compute can shorten stages and reduce tensors, while high-precision optimizer state remains. "
                "Independent numerical and convergence replays decide acceptance."
            ),
            (
                "Precision selects finite forward/backward observations and tensor widths. Optimizer time is a separate "
                "FP32-state fixture. Numerical replay and convergence are not functions of throughput.\n\n*How the "
                "prediction is judged.* A narrower format is acceptable when it reaches the common target: every narrower "
                "format, BF16 and FP16 only, or none of them (only FP32)."
            ),
        ),
        "D": PartText(
            "D · When is recomputation worth paying for? (10 min)",
            None,
            (
                "The memory model reduces retained activations. The stage model adds supplied recomputation work to each "
                "physical microstep; convergence does not improve automatically.\n\n*How the prediction is judged.* Memory "
                "at the probe batch against no checkpointing, and the policy's added update time."
            ),
        ),
        "E": PartText(
            "E · What should we fix before buying hardware? (8 min)",
            "Compare input prefetch, a supplied faster arithmetic path, and activation checkpointing against the identical baseline.",
            (
                "Each intervention selects one supplied causal path. Prefetch changes visible input time; faster arithmetic "
                "changes forward/backward stages; checkpointing changes retained activations and adds recomputation.\n\n"
                "*How the prediction is judged.* The fix that cuts update time the most is right."
            ),
        ),
    },
    synthesis=(
        "Synthesis · Defend a time-to-target decision (5 min)",
        (
            "Choose one tested fix or hold for more evidence, quantify a rejected tested alternative, name the remaining "
            "limitation, and state the reevaluation trigger. The recommendation must match the decision you saved in part E; "
            "if you hold, the rejected alternative must be the one you tested there."
        ),
    ),
    decision_text={
        "E": (
            "First systems fix, chosen after you see the comparisons: `\"prefetch\"`, `\"arithmetic\"`, `\"checkpoint\"`, or "
            "`\"none\"` (no change / hold for more evidence). `rejected_alternative` is the tested alternative you reject "
            "(`\"prefetch\"`, `\"arithmetic\"` or `\"checkpoint\"`); a hold is captured only with one, and it is the "
            "comparison part E keeps."
        ),
    },
    labels={
        "strategy": "batch strategy (resident_32: resident batch 32; accumulate_N: effective batch N by accumulation)",
    },
)


# -- the words the book fills in from the track, and its closing report ------------------
# Part scenarios the book words per track (the parts whose ``NOTEBOOK`` scenario is None); placeholders come from
# ``views.track_facts``.
SCENARIOS = {
    "A": ("On the upstream development host (**{device}**) used for {label} teacher adaptation, single-batch inference "
          "fits easily while full training allocates substantial additional state. Predict the largest AdamW allocation "
          "before opening the training-memory ledger."),
    "D": ("The resident physical-batch probe is **{probe_batch}**. Without checkpointing it crosses the memory boundary. "
          "Predict both memory and time directions."),
}
DECISION_LABELS = {
    ("E", "intervention"): {"prefetch": "Prefetch input", "arithmetic": "Faster arithmetic path",
                            "checkpoint": "Checkpoint activations", "none": "No change / hold for more evidence"},
    ("E", "rejected_alternative"): {"prefetch": "Prefetch input", "arithmetic": "Faster arithmetic",
                                    "checkpoint": "Checkpoint activations"},
}
LEARNING_OBJECTIVES = ("Decompose training memory and optimizer state",
                       "Compare physical batch, effective batch, and time to target",
                       "Defend precision, checkpointing, and bottleneck interventions with evidence")
BIG_TAKEAWAYS = ("Training memory includes state inference never retains.",
                 "Step throughput and convergence jointly determine time to target.",
                 "Checkpointing and lower precision need adverse-outcome evidence.")
SOURCE_TRACE = ("Illustrative convergence, numerical, timing, and internal-cost fixtures; training-memory and stage-time "
                "experiment model (MLSysIM v1_08_experiments).")


TEXT = LabText(notebook=NOTEBOOK, scenarios=SCENARIOS, decision_labels=DECISION_LABELS, learning_objectives=LEARNING_OBJECTIVES,
               big_takeaways=BIG_TAKEAWAYS, source_trace=SOURCE_TRACE)
"""The lab's words for :class:`~mlsys_grader.core.labspec.Lab`."""
