"""Stable codes for the kinds of finding, in the manner of a linter's rule codes: ``<criterion>.<kind>``.

Every :class:`~mlsys_grader.core.report.Finding` carries one (``replay.mismatch``, ``rationale.cite_compare``…), so the
review queue, the summary, the feedback and the LMS comments can group findings by kind and staff can decide every
entry of one kind at once (``review --decide-code``).  The generic codes, those any lab can raise, are declared here
with one line each; a lab declares its own in its spec (``[problems]`` in ``lab.toml``: ``synthesis.rejected_unlisted``
…, and the codes its judge raises).  ``docs/grading.md``'s table of codes is generated from :data:`CODES`
(:func:`codes_table`) and checked by a test.

An uncertain verdict of the rationale reader is not a finding (it may cost nothing); its kind in the queue is read from
its reason (:func:`verdict_code`), so results stored before codes existed group the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

_DECLARED = {
    # the bundle as a file
    "format.no_hash": "The bundle has no content hash: it was not saved by the notebook.",
    "format.hash_mismatch": "The bundle was edited after it was saved: its content hash does not match.",
    "format.part_label": "A record stored under one part says it is another part.",
    "format.lab_label": "A record comes from another lab.",
    "missing.part": "A part has no captured evidence.",
    # what the evaluators give for the recorded inputs
    "domain.no_arms": "A record lacks its baseline or its intervention result: nothing can be replayed.",
    "domain.inputs": "A record's inputs are not what any allowed control setting produces on the track.",
    "domain.track_relabelled": "A record labelled with another track holds this track's inputs: the label was edited.",
    "domain.final_settings": "The bundle's final settings for a part are not allowed on the track.",
    "domain.rule": "A record breaks a rule of the lab about its inputs.",
    "replay.mismatch": "A recorded number is not what the evaluators compute for the recorded inputs.",
    "replay.other_setting": "A record's numbers are what the evaluators compute for another setting than its inputs.",
    "version.mismatch": "A record's numbers differ throughout, as when another mlsysim version computed them.",
    "version.build_variant": "One number is what a known build of the evaluators gives; everything else replays exactly.",
    "version.label": "A record is labelled with another mlsysim version and replays exactly under this one.",
    # the path of work
    "stale.track": "A part was captured on another track than the submission's.",
    "stale.no_settings": "The bundle has no final settings for a part.",
    "stale.settings": "A part's evidence no longer matches the final settings.",
    "stale.upstream": "A part builds on an upstream result other than the one captured.",
    "contrast.missing": "A part lacks its baseline or its intervention inputs.",
    "contrast.identical": "A part's intervention is identical to its baseline.",
    "prediction.missing": "A part has no prediction.",
    "prediction.unlisted": "A prediction is not one of the lab's choices.",
    "prediction.no_lock_times": "A part records no lock time and no time the result was shown.",
    "prediction.locked_late": "A prediction was locked after the result was shown.",
    "prediction.first_run": "The prediction is judged against the first run after locking, not the captured one.",
    "prediction.excused": "Findings of one kind the importer excused, named in one note (a marimo export records no lock "
                          "times).",
    "prediction.incorrect": "The replayed numbers support another prediction (formative).",
    "decision.unreplayed": "A part's decision cannot be checked because its evidence does not replay.",
    "decision.chosen_arm": "A part's chosen result is not the arm its decision keeps (a hold keeps the baseline).",
    "decision.gate": "A part was captured outside the condition the notebook captures it under.",
    "decision.rule": "A part's decision breaks a rule of the lab.",
    "synthesis.rule": "The synthesis choices break a rule of the lab.",
    "synthesis.recommendation_unlisted": "The recommendation is not one of the lab's options.",
    "synthesis.rejected_unlisted": "The rejected alternative is not one of the options that may be rejected.",
    "synthesis.rejected_equals_recommended": "The rejected alternative is the recommendation.",
    "synthesis.recommendation_part_missing": "The part whose decision is the recommendation is not captured.",
    "synthesis.recommendation_not_decision": "The recommendation is not the decision saved in its part.",
    "synthesis.hold_rejected_untested": "On a hold, the rejected alternative is not the one the part tested.",
    "synthesis.rejected_not_tested": "The rejected alternative is not the one the part tested.",
    "synthesis.hold_without_hold": "'hold' is recommended without a part that held.",
    "synthesis.trigger_unlisted": "The re-evaluation trigger is not one of the lab's.",
    "synthesis.limitation_unlisted": "The limitation is not one of the lab's.",
    # the rationale
    "rationale.empty": "No rationale.",
    "rationale.short": "The rationale is shorter than the minimum.",
    "rationale.blanks": "The rationale keeps a template's blanks.",
    "rationale.labels": "The rationale restates the choices' labels and cites no number.",
    "rationale.list": "The rationale is a list of labels and numbers, not sentences.",
    "rationale.not_english": "The rationale is not in English; staff read it.",
    "rationale.cite": "No number of the saved evidence is cited.",
    "rationale.cite_untied": "Numbers of the evidence are cited, tied to no option or comparison.",
    "rationale.cite_compare": "Numbers of the evidence are tied to an option, but the rejected alternative is not "
                              "quantified (half the item).",
    "rationale.cite_foreign": "Most cited numbers are not in this submission's evidence.",
    "rationale.contradiction": "The rationale argues for the rejected alternative, against the recommendation, or "
                               "withdraws it.",
    "rationale.recommendation": "The rationale does not recommend the recommended option.",
    "rationale.recommendation_unchosen": "No recommendation is chosen.",
    "rationale.rejected": "The rationale does not reject the rejected alternative.",
    "rationale.rejected_unchosen": "No rejected alternative is chosen.",
    "rationale.limitation": "The rationale does not state the chosen limitation.",
    "rationale.limitation_unchosen": "No limitation is chosen.",
    "rationale.trigger": "The rationale does not state the chosen re-evaluation trigger.",
    "rationale.trigger_unchosen": "No trigger is chosen.",
    "generated.chat": "The rationale is a chat assistant's reply.",
    "generated.template": "The rationale is the lab's generated template, or a close paraphrase of it.",
    "generated.partly": "Some sentences of the rationale are the lab's generated template.",
    # files that contradict themselves, and the grader's own failures
    "integrity.edited_export": "A file the book writes only when complete shows an incomplete part: it was edited.",
    "integrity.export": "A marimo export contradicts itself (a capture against its own fingerprint or its copies).",
    "grader.error": "The grader failed on a check (its own error): the points wait for staff.",
    "missing.submission": "No submission could be read for the lab.",
}

CODES: Mapping[str, str] = MappingProxyType(_DECLARED)
"""Every generic code and its meaning, in one line."""

NOTES = frozenset({"prediction.excused", "version.label", "version.build_variant"})
"""Findings that cost nothing and ask nothing (an excuse the importer made, a number another build gives, a version
label): shown as notes, never under "What to do"."""

# An uncertain verdict's reason, as the reader words it, → its kind (the first prefix that matches; the reason may
# carry a prefix of its own, "partly not English: …").
_VERDICT_KINDS = (
    ("not read: not english", "uncertain.not_english"),
    ("partly not english", "uncertain.partly_english"),
    ("option named, no stance cue", "uncertain.no_stance_cue"),
    ("option recommended only with a hedge", "uncertain.hedged"),
    ("option rejected only with a hedge", "uncertain.hedged"),
    ("quantity matched only", "uncertain.rounding"),
    ("named only in a sentence listing", "uncertain.keyword_list"),
    ("trigger named without a condition", "uncertain.no_condition"),
)
VERDICT_CODES: Mapping[str, str] = MappingProxyType({
    "uncertain.not_english": "The rationale was not read: not English.",
    "uncertain.partly_english": "The rationale is partly in another language; what the reader did not find is for staff.",
    "uncertain.no_stance_cue": "An option is named with no stance the reader knows: the item is lost until staff read it.",
    "uncertain.hedged": "An option is recommended or rejected only with a hedge.",
    "uncertain.rounding": "A quantity matched only after rounding or with a decimal comma.",
    "uncertain.keyword_list": "A limitation or trigger is named only in a keyword list.",
    "uncertain.no_condition": "A trigger is named without a condition or a change.",
    "uncertain.other": "The reader is not sure, for a reason of its own.",
})


def verdict_code(reason: str | None) -> str:
    """The code of an uncertain verdict from its reason (``uncertain.other`` for a reason not listed)."""
    text = (reason or "").lower()
    for prefix, code in _VERDICT_KINDS:
        if text.startswith(prefix):
            return code
    for prefix, code in _VERDICT_KINDS:  # a reason with a prefix of its own ("partly not English: option named, …")
        if prefix in text:
            return code
    return "uncertain.other"


def is_code(code: str) -> bool:
    """True for a well-formed code: lower-case words joined by one dot or more (``replay.mismatch``)."""
    parts = code.split(".")
    return len(parts) >= 2 and all(part and part.replace("_", "").isalnum() and part.islower() for part in parts)


def codes_table(lab_codes: Mapping[str, Iterable[str]] = MappingProxyType({})) -> str:
    """The Markdown table of every code: the generic ones with their meaning, then each lab's own."""
    lines = ["| code | meaning |", "|---|---|"]
    lines += [f"| `{code}` | {meaning} |" for code, meaning in sorted(CODES.items())]
    lines += [f"| `{code}` | {meaning} |" for code, meaning in sorted(VERDICT_CODES.items())]
    for lab, codes in sorted(lab_codes.items()):
        own = sorted(set(codes) - set(CODES))
        if own:
            lines.append(f"| {lab}: {', '.join(f'`{code}`' for code in own)} | declared by the lab (`lab.toml` `[problems]`) |")
    return "\n".join(lines)
