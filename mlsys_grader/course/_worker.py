"""Grading one input, as a worker process does: read it, grade it in the core, and keep what the gradebook stores of it
(the report's summary, what collusion and the review page need, the evidence numbers feedback shows)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..api import default_replay, grade_submission
from ..core import flags as flag_names
from ..core.models import Bundle
from ..core.report import GradeReport
from ..core.rubric import Rubric
from ..errors import ErrorKind, GraderError
from ..intake import Submission, read_submission
from ..replay import Replay
from ._collusion import part_times, work_path
from ._ingest import FORMATS, Candidate, Format, load_candidate
from ._row import Result

CHOICE_FIELDS = ("recommendation", "rejected_alternative", "residual_risk", "reevaluation_trigger")
"""The synthesis choices a stored result keeps, for the review page."""


# -- one submission (runs in a worker) ---------------------------------------------

SUMMARY_KEYS = ("lab", "track", "score", "max_score", "parts", "items", "flags", "findings", "hidden", "item_max", "rubric",
                "held", "certainty")
"""What a row reads of a graded report: a view computed from the stored report (:func:`summary_of`), never stored."""


def summary_of(report: Mapping[str, Any]) -> Result:
    """The view of a graded report that rows, the review queue and feedback read, from the report as stored
    (``GradeReport.model_dump(mode="json")``): its flags are the report's own, whatever the input's origin, so
    ``check`` and the gradebook say the same."""
    parts = report["parts"]
    keyed = [(f"{name}.{item['item']}", item) for name, part in parts.items() for item in part["items"]]
    findings = report["findings"]
    return {
        "lab": report["lab"], "track": report["track"], "score": report["score"], "max_score": report["max_score"],
        "parts": {name: part["score"] for name, part in parts.items()}, "items": {key: item["points"] for key, item in keyed},
        "flags": list(report["flags"]),
        "findings": [[f["part"], f["criterion"], f.get("rubric_item") or "", f["message"]] for f in findings],
        "hidden": [index for index, f in enumerate(findings) if f.get("hidden")],  # withheld from feedback until release
        "item_max": {key: item["max_points"] for key, item in keyed},
        "rubric": (report.get("versions") or {}).get("rubric", ""),
        # For the review queue (:mod:`._review`): the items held for staff, and the reader's certainty per judged item.
        "held": [key for key, item in keyed if item.get("held")],
        "certainty": {key: [item["certainty"], item.get("certainty_reason") or ""] for key, item in keyed if item.get("certainty")},
    }


def summarize(report: GradeReport) -> Result:
    """:func:`summary_of` a report as it would be stored."""
    return summary_of(report.model_dump(mode="json"))


def record_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """What the gradebook stores of a result: a graded one's report (the record of the grade) and what collusion,
    review and feedback need of its bundle, without the view computed from the report; an input with no report
    (error, unsupported) as it is."""
    if "report" not in result:
        return dict(result)
    return {key: value for key, value in result.items() if key not in SUMMARY_KEYS}


def view_of(record: Mapping[str, Any]) -> Result:
    """A stored record as the result rows read: the report's view (:func:`summary_of`) joined to it.  A result
    stored before the report was kept already holds its view and is returned as it is."""
    if "report" not in record:
        return dict(record)  # type: ignore[return-value]
    return {**record, **summary_of(record["report"])}  # type: ignore[typeddict-item]


def grade_loaded(loaded: Submission, rubric: Rubric | None = None, *, replay: Replay | None = None) -> GradeReport:
    """The grade report of a read input (raises its reading's error when it cannot be graded).

    The core grades the bundle with what the reader found about the file (a marimo export's own
    findings, the lock-time excuse, the rule that the lab downloads only complete reports) and scores
    it once (:func:`mlsys_grader.api.grade_submission`).  ``check`` and the gradebook both come here.
    """
    return grade_submission(loaded, rubric, replay=replay)


def check_file(path: str | os.PathLike[str], rubric: Rubric | None = None, *, replay: Replay | None = None) -> GradeReport:
    """The report ``mlsys-grader check`` prints for one file in any accepted form (bundle, Otter export zip,
    notebook, Gradescope upload folder, marimo export), exactly as the gradebook grades it.  Raises the reading's
    error (:class:`GraderError` or ``OSError``) when the file cannot be graded."""
    replay = replay or default_replay()
    return grade_loaded(read_submission(path, replay=replay), rubric, replay=replay)


def grade_candidate(candidate: Candidate, rubrics: Mapping[str, Rubric], reuse: frozenset[str] = frozenset(),
                    formats: Iterable[Format] = FORMATS, *, replay: Replay | None = None) -> Result:
    """Grade one input; the result for the row (never raises for a bad input).

    When the input's hash is in ``reuse`` the stored result is used instead and only
    ``{"status": "reuse", "input_hash": ...}`` comes back.  An input whose content is a
    format the course does not accept (``formats``) is an ``error`` row that says so and
    keeps its origin.
    """
    replay = replay or default_replay()
    loaded = load_candidate(candidate, reuse, formats, replay)
    if loaded.origin == "known" or loaded.input_hash in reuse:
        return {"status": "reuse", "input_hash": loaded.input_hash}
    result: Result = {"input_hash": loaded.input_hash, "origin": loaded.origin}
    bundle = loaded.bundle
    if loaded.error is not None or bundle is None:
        status = "unsupported" if loaded.error_kind is ErrorKind.UNSUPPORTED else "error"
        reason = loaded.error or "the input holds no bundle"
        if candidate.primary and candidate.primary not in reason and not reason.startswith(os.path.basename(candidate.primary)):
            reason = f"{os.path.basename(candidate.primary)}: {reason}"  # the file a person opens to see what went wrong
        return {**result, "status": status, "reason": file_neutral(reason, candidate.primary),
                "error_kind": str(loaded.error_kind or ErrorKind.GRADER_ERROR)}
    try:
        report = grade_loaded(loaded, rubrics.get(bundle.lab), replay=replay)
    except GraderError as exc:
        return {**result, "status": "error", "reason": str(exc), "error_kind": str(ErrorKind.of(exc))}
    return {**result, **graded_result(report, bundle, loaded.origin)}


def graded_result(report: GradeReport, bundle: Bundle, origin: str = "") -> Result:
    """The result of a graded bundle: its status, the report (stored as the record of the grade) and its view
    (:func:`summary_of`), what collusion needs and the rationale spans the review page highlights (the reading's own, :attr:`GradeReport.rationale_spans`).

    Status ``regrade`` when the grader failed on part of it (flag ``grader_error``), else ``graded``.
    """
    stored = report.model_dump(mode="json")
    summary = summary_of(stored)
    status = "regrade" if flag_names.GRADER_ERROR in summary["flags"] else "graded"
    return {"status": status, "report": stored, **summary, "part_times": part_times(bundle), "work_path": work_path(bundle),
            "rationale": bundle.synthesis.rationale or "",
            "evidence": evidence_numbers(bundle), "spans": [list(span) for span in report.rationale_spans],
            "choices": {name: getattr(bundle.synthesis, name, None) for name in CHOICE_FIELDS},
            # the final settings of every part, shown beside a collusion partner's on the review page
            "controls": {str(part): dict(values) for part, values in (getattr(bundle, "controls", None) or {}).items()},
            **_template_shown(report)}  # type: ignore[typeddict-item]


def _template_shown(report: GradeReport) -> dict[str, Any]:
    """The template a rationale flagged ``generated`` (or partly the template's) was matched against, kept for the
    review page, which marks what the two share when it shows them; nothing for any other rationale."""
    match = report.template_match
    if match is None:
        return {}
    return {"template": {"text": match.template, "sentences": list(match.sentences)}}


def evidence_numbers(bundle: Bundle) -> dict[str, dict[str, Any]]:
    """Part → the numbers its evidence record holds (``inputs.executions`` …), for the feedback file."""
    shown: dict[str, dict[str, Any]] = {}
    for part, record in (getattr(bundle, "evidence", None) or {}).items():
        values = getattr(record, "result", None)
        if not isinstance(values, Mapping):
            continue
        flat: dict[str, Any] = {}
        for key, value in values.items():
            if isinstance(value, Mapping):
                flat.update({f"{key}.{k}": v for k, v in value.items() if isinstance(v, int | float | str | bool)})
            elif isinstance(value, int | float | str | bool):
                flat[key] = value
        shown[str(part)] = flat
    return shown


# -- rows --------------------------------------------------------------------------

_PATH, _NAME = "\x00path\x00", "\x00name\x00"
"""Where a stored reason named its file (a NUL is in no file name): a result is stored once per content hash and
reused for every input with those bytes, so each row names its own file (:func:`file_named`)."""


def file_neutral(reason: str, path: str | None) -> str:
    """``reason`` with the input's path and file name replaced by placeholders, as it is stored."""
    if not path:
        return reason
    reason = reason.replace(path, _PATH)
    name = os.path.basename(path)
    # the reader names a file by its name only at the start of a sentence ("scan.pdf is a PDF document, …"):
    # replaced there alone, so that a short name ("a") never replaces letters of the words
    return _NAME + reason[len(name):] if name and reason.startswith((f"{name} ", f"{name}:")) else reason


def file_named(reason: str, path: str | None) -> str:
    """A stored reason naming ``path`` (the row's own input) where it named the input it was graded from."""
    return reason.replace(_PATH, path or "").replace(_NAME, os.path.basename(path or ""))
