"""What a student reads about a check: each rubric item in the lab's words, and each thing to do said once.

The grader's findings are written for every reader, so one missing answer can appear
twice: "Choose a recommended execution plan." (the choice) and "Choose your recommendation
first, then say in the rationale why you recommend it." (the rationale item that needs
the choice), and an empty rationale also misses its cited number.  :func:`to_do` keeps the
finding that names the missing thing and drops those that only follow from it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.codes import NOTES
from ..core.report import Finding
from ._advice import dedupe

ITEM_WORDS = {
    "captured": "evidence captured",
    "replay": "every number replays",
    "fresh": "evidence matches your final settings",
    "contrast": "baseline and intervention differ",
    "prediction_locked": "prediction locked before the result was shown",
    "prediction_correct": "prediction matches the numbers",
    "decision": "decision follows the lab's rule",
    "choices_valid": "answers chosen from the lab's lists",
    "rationale_length": "rationale long enough, in your own words",
    "rationale_cites_evidence": "rationale cites a saved number with its unit",
    "rationale_names_recommendation": "rationale says why you recommend your choice",
    "rationale_names_rejected": "rationale says why you reject the alternative",
    "rationale_names_limitation": "rationale states the remaining limitation",
    "rationale_names_trigger": "rationale states the re-evaluation trigger",
}
"""Rubric item → how the notebook names it (the rubric table's wording is written for staff)."""

SYNTHESIS_WORDS = {
    "recommendation": "recommendation",
    "rejected_alternative": "rejected alternative",
    "reevaluation_trigger": "re-evaluation trigger",
    "residual_risk": "remaining limitation",
    "rationale": "rationale",
}
"""Synthesis answer → how the notebook names it."""


def notes(findings: Iterable[Finding]) -> list[str]:
    """The findings that cost nothing and ask nothing (:data:`~mlsys_grader.core.codes.NOTES`), each once."""
    return dedupe([finding.message for finding in findings if finding.code in NOTES])


def to_do(findings: Iterable[Finding]) -> list[str]:
    """The sentences a student acts on, each once: a rationale item that only waits for a missing choice,
    or for a rationale not yet written, is said by the finding that names that missing thing."""
    findings = list(findings)
    choice_missing = any(f.criterion == "decision" and f.actual is None for f in findings if f.part == "synthesis")
    rationale_empty = any(f.rubric_item == "rationale_length" and f.actual == 0 for f in findings)
    kept = []
    for finding in findings:
        if finding.code in NOTES:  # costs nothing, asks nothing: a note (:func:`notes`)
            continue
        follows = rationale_empty or (choice_missing and finding.actual is None)
        if follows and finding.part == "synthesis" and finding.criterion == "rationale" and finding.rubric_item != "rationale_length":
            continue
        kept.append(finding.message)
    return dedupe(kept)
