"""Lab 07's notebook text: the Otter master's words, the scenarios the book words per track, its closing report."""

from __future__ import annotations

from mlsys_grader.core.labspec import LabText, NotebookText, PartText

# -- the Otter master's words (the seeds' text, part by part) ----------------------------
# A scenario of None is one the seed words for the track (it names the target device or the
# training host): the notebook shows it with ``lab.scenario(part)`` for the student's track.
NOTEBOOK = NotebookText(
    title="Lab 07: The Framework Tax",
    framing=(
        "**Volume I · Lab 07 · about 50–55 minutes**\n\n*When does an execution path earn its setup and memory costs, and "
        "when does target support make the decision for us?*\n\nOutput: a runtime-path recommendation.\n\nGraph shape, "
        "tensor scale, compilation work, and runtime support are illustrative scenario assumptions. Hardware limits and "
        "runtime overhead anchors come from MLSysIM."
    ),
    parts={
        "A": PartText(
            "A · Why can small operations waste the machine? (9 min)",
            None,
            (
                "Useful time is the larger of arithmetic time and fixed input/output movement time. Total time adds one "
                "registry-backed dispatch cost per launch. The two runs use identical operations and bytes."
            ),
        ),
        "B": PartText(
            "B · When does compilation repay setup? (9 min)",
            None,
            (
                "Compiled total = compilation count × setup time + repetitions × fused execution time. Eager total = "
                "repetitions × unfused execution time. Break-even is the first repetition that recovers all setup work. "
                "Setup time uses a shared illustrative compiler pass assumption (constant framework dispatch tax across "
                "analysis passes, not measured on the named host). For TinyML, compilation is ahead-of-time (AOT) host "
                "compilation; recompilation represents an offline host rebuild and redeployment rather than a dynamic "
                "native JIT.\n\n*How the prediction is judged.* The path with the lower total is right. When the two "
                "totals are equal, \"They are equal\" is accepted, and so is the verdict the result states."
            ),
        ),
        "C": PartText(
            "C · What does fusion eliminate? (9 min)",
            (
                "Sofia, the runtime engineer, compares the same 6-operation graph before and after fusion. Graph breaks "
                "split the fused region."
            ),
            (
                "Each unfused operation reads and writes the tensor. A fused region reads once and writes once, so "
                "every graph boundary adds another full read/write pair. Fusion changes dispatch and intermediate "
                "traffic, not the graph's arithmetic."
            ),
        ),
        "D": PartText(
            "D · Which activations should remain stored? (9 min)",
            None,
            (
                "Training counts one forward pass and a two-forward-equivalent backward pass. A discarded activation "
                "repeats its forward operation during backward. Retained bytes are checked directly against the "
                "selected training host's memory capacity."
            ),
        ),
        "E": PartText(
            "E · Can the runtime execute the actual graph? (9 min)",
            (
                "Priya, the deployment engineer, inserts one operator and shape behavior into a known-native baseline. "
                "Unsupported work must follow a visible fallback path or fail."
            ),
            (
                "Native execution requires both operator and shape support. A fallback materializes one input and one "
                "output through target memory, then uses an illustrative portable CPU path capped by the MLSysIM "
                "reference CPU rate. TinyML has no fallback runtime in this scenario."
            ),
        ),
    },
    synthesis=(
        "Synthesis · Defend one execution plan (5 min)",
        (
            "Choose a tested path, quantify a rejected tested alternative, state the remaining limitation, and name the "
            "condition that would reopen the decision. Use *hold* when the baseline remains viable but evidence is "
            "insufficient (after capturing part E with decision `\"hold\"`), and *no feasible target path* only after an "
            "unsupported part E captured with decision `\"none\"`."
        ),
    ),
    decision_text={
        "E": (
            "Runtime decision, chosen after you see the result: `\"selected\"` (use selected path), `\"hold\"` (hold native "
            "baseline for more evidence) or `\"none\"` (no feasible target path — valid only when the selected path "
            "cannot execute)."
        ),
    },
    labels={
        "recompilations": "guard-triggered recompilations (TinyML: host rebuilds / redeployments)",
    },
)


# -- the words the book fills in from the track, and its closing report ------------------
# Part scenarios the seeds word per track (the parts whose ``NOTEBOOK`` scenario is None);
# placeholders come from ``views.track_facts``.
SCENARIOS = {
    "A": ("Maya, the performance engineer, keeps arithmetic and payload fixed on **{device}** while "
          "changing only the number of dispatches."),
    "B": "Ishan, the compiler engineer, separates repeated execution count from {recompile_context}.",
    "D": ("Noah, the training engineer, runs this track on **{training_host}** and compares saved "
          "activations against repeated forward work."),
}
TRACK_LABELS = {("reevaluation_trigger", "shape_guards"): {"tinyml": "Deployment shapes change", "*": "Shape guards change"}}
DECISION_LABELS = {
    ("E", "decision"): {"selected": "Use selected path", "hold": "Hold native baseline for more evidence",
                        "none": "No feasible target path"},
}
LEARNING_OBJECTIVES = ("Quantify dispatch and compilation overhead across repeated execution",
                       "Compare graph traffic and activation storage across framework policies",
                       "Diagnose native, fallback, and unsupported deployment paths")
BIG_TAKEAWAYS = ("Fine-grained work can spend more time dispatching than computing.",
                 "Compilation and fusion repay costs only when reuse and graph continuity preserve their savings.",
                 "Recomputation and fallback move cost between memory, arithmetic, and portability.")
SOURCE_TRACE = "Illustrative operation graph and support fixture; MLSysIM v1_07_experiments evaluators."


TEXT = LabText(notebook=NOTEBOOK, scenarios=SCENARIOS, track_labels=TRACK_LABELS, decision_labels=DECISION_LABELS, learning_objectives=LEARNING_OBJECTIVES,
               big_takeaways=BIG_TAKEAWAYS, source_trace=SOURCE_TRACE)
"""The lab's words for :class:`~mlsys_grader.core.labspec.Lab`."""
