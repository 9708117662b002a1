"""Lab 02's notebook text: the Otter master's words, the scenarios the book words per track, its closing report."""

from __future__ import annotations

from mlsys_grader.core.labspec import LabText, NotebookText, PartText

# -- the Otter master's words (the book's text, part by part) ----------------------------
# A scenario of None is one the book words for the track (its payload and link menus, its reference duty cycle):
# the notebook shows it with ``lab.scenario(part)`` for the student's track.
NOTEBOOK = NotebookText(
    title="Lab 02: Where Should Inference Run?",
    framing=(
        "**Volume I · Lab 02 · about 45–50 minutes**\n\n*Which placement survives latency, memory, power, connectivity, "
        "and information requirements?*\n\nDeliverable: a placement decision with a reversal trigger.\n\nAll workloads, "
        "power envelopes, and retained-information observations are illustrative scenario assumptions. Inspect each "
        "Calculation Notes panel before treating a result as evidence."
    ),
    parts={
        "A": PartText("A · When does distance rule out remote inference? (10 min)", None, (
            "Remote latency adds request upload, fiber round-trip propagation, fixed remote execution, and response "
            "download. The selected rate is assumed symmetric. The model excludes queueing and tail latency.\n\n*How the "
            "prediction is judged.* \"Remote crosses the deadline\" when the selected request's remote latency exceeds the "
            "deadline, \"Remote stays within the deadline\" otherwise; \"Local and remote tie\" is also accepted when the "
            "two latencies are equal to the one decimal the table shows.")),
        "B": PartText("B · Does the workload fit here? (10 min)", (
            "Memory capacity and execution deadline are separate hard constraints. Scale each demand independently "
            "(the reference run is 1.0× on both)."), (
            "Required memory is compared directly with capacity. Local execution time is compared directly with the "
            "request deadline. Passing one check cannot compensate for failing the other.")),
        "C": PartText("C · Can a fast demonstration run continuously? (10 min)", None, (
            "Average power is the duty-weighted active and idle power. Energy is average power over 24 hours. The minimum "
            "observation fraction is a supplied mission requirement, not a law of physics. No thermal behavior is "
            "simulated. The duty cycle moves in steps of 0.01 (the book's TinyML step; its other tracks step by 0.05).")),
        "D": PartText("D · Where should the local/remote boundary fall? (12 min)", (
            "Compare local execution, raw transfer, event filtering, and a feature summary under the request payload and "
            "link speed **you set in Part A**: run part A first, and recapture part D whenever you change part A. "
            "Filtering observations apply only to this matched illustrative task."), (
            "Part D evaluates baseline local feasibility (1.0× model demand) alongside remote filtering options under the "
            "link conditions set in Part A. Filtering reduces request bytes and adds local preprocessing; remote execution "
            "and response bytes stay fixed. Retained-information percentages are supplied observations, not a formula. An "
            "unavailable connection is a hard failure for every remote design.\n\n*How the prediction is judged.* Any "
            "design that satisfies every stated requirement is a right answer; \"No design is feasible\" only when none "
            "does.")),
    },
    synthesis=(
        "Synthesis · Defend the placement and its boundary (6 min)",
        ("Use saved evidence to state one placement, quantify a rejected alternative, name a remaining limitation, and "
         "choose the condition that would reverse your decision. The recommendation is the placement you captured in "
         "part D; reject a different placement."),
    ),
    labels={"payload": "request payload (this track's menu: see the scenario above)",
            "connection": "connection rate (this track's menu: see the scenario above)"},
    decision_text={
        "D": (
            "Placement decision, chosen after you see the comparison: `choice` is `\"local\"` (run locally), `\"raw\"` "
            "(send raw input), `\"event_filter\"` (filter events, then send), `\"feature_summary\"` (send a feature "
            "summary) or `\"none\"` (no feasible design); `rejected` is a different tested design you reject. Choose a "
            "design that satisfies every requirement, or `\"none\"` only when none does; with `\"none\"` the saved "
            "comparison uses the rejected design."
        ),
    },
)

SCENARIOS = {
    "A": ("The remote system's execution time and fiber round trip stay fixed. Change only the request payload "
          "({payloads}) and the connection rate ({rates}); the reference request sends {reference_payload} at "
          "{reference_rate}. Context: {scenario}."),
    "C": ("The supplied mission requires a minimum fraction of active observation. Test whether a duty cycle can meet "
          "that service requirement and the average-power budget together; the reference runs at {reference_duty}."),
}
DECISION_LABELS = {
    ("D", "choice"): {"local": "Run locally", "raw": "Send raw input", "event_filter": "Filter events, then send",
                      "feature_summary": "Send feature summary", "none": "No feasible design"},
    ("D", "rejected"): {"local": "Run locally", "raw": "Send raw input", "event_filter": "Filter events, then send",
                        "feature_summary": "Send feature summary"},
}
LEARNING_OBJECTIVES = ("Find when transfer and distance make remote inference miss a deadline",
                       "Check memory, execution, and sustained-power requirements independently",
                       "Defend a local, remote, or filtered placement with a reversal trigger")
BIG_TAKEAWAYS = ("Remote latency includes transfer, propagation, execution, and response time.",
                 "Memory fit, execution time, power, and observation service are separate requirements.",
                 "Filtering trades transmitted bytes and latency against supplied information evidence.")
SOURCE_TRACE = ("Illustrative matched-task assumptions; not a branded hardware benchmark. Placement path, capacity, and "
                "duty-cycle equations with explicit units.")

TEXT = LabText(notebook=NOTEBOOK, scenarios=SCENARIOS, decision_labels=DECISION_LABELS,
               learning_objectives=LEARNING_OBJECTIVES, big_takeaways=BIG_TAKEAWAYS, source_trace=SOURCE_TRACE)
"""The lab's words for :class:`~mlsys_grader.core.labspec.Lab`."""
