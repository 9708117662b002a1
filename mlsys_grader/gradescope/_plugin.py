"""The Otter plugin that makes the score of record, computed outside the student's kernel, the reported score.

Configured in the autograder's ``otter_config.json`` (``mlsys-grader autograder`` writes it)::

    {"plugins": [{"mlsys_grader.gradescope.ScoreOfRecordPlugin": {"lab": "lab07"}}]}

Events, all in Otter's runner process:

``before_grading``   before any student code runs: close the pickle channels
                     (:mod:`.hardening`), then read the submitted bundle and grade it —
                     this is the score of record.
``before_execution`` returns the notebook unchanged (the record is already fixed).
``after_grading``    reads what the kernel-side tests reported (safely), compares it
                     with the record, and makes the record the reported result; any
                     disagreement flags the submission for staff.
"""

from __future__ import annotations

import os
from typing import Any

from otter.plugins import AbstractOtterPlugin
from otter.test_files import GradingResults

from ..labs import lab_ids
from . import _hardening as hardening
from ._results import (
    FLAG_BUNDLE_REWRITTEN,
    KernelComparison,
    compare_kernel,
    gradescope_results,
)
from ._record import ScoreOfRecord, file_fingerprint, score_of_record

PLUGIN_NAME = "mlsys_grader.gradescope.ScoreOfRecordPlugin"


class RecordGradingResults(GradingResults):
    """Otter's results object whose Gradescope rendering is the score of record.

    Otter's runner pickles this object and calls ``to_gradescope_dict`` on it; the
    record is kept as plain JSON data, so that pickle holds nothing executable.
    """

    _mlsys_results: dict[str, Any]

    def to_gradescope_dict(self, ag_config: Any) -> dict[str, Any]:  # noqa: ARG002 — layout is fixed
        return self._mlsys_results

    @property
    def total(self) -> float:
        return self._mlsys_results["score"]

    @property
    def possible(self) -> float:
        return self._mlsys_results["extra_data"]["mlsys_grader"]["max_score"]

    def summary(self, public_only: bool = False) -> str:
        return "\n\n".join(test.get("output", "") for test in self._mlsys_results["tests"]
                           if not public_only or test.get("visibility") == "visible")


def kernel_scores(results: GradingResults) -> tuple[dict[str, tuple[float, float]] | None, str | None]:
    """Per question (score, possible) from the kernel-side results, or None and why not."""
    error = results.catastrophic_error
    if error is not None:
        return None, f"{type(error).__name__}: {error}"
    try:
        return {str(name): (float(test.score), float(test.possible)) for name, test in results.results.items()}, None
    except Exception as exc:  # noqa: BLE001 — the object came from student-controlled bytes
        return None, f"unreadable kernel results ({type(exc).__name__}: {exc})"


def fallback_results(record: ScoreOfRecord, error: str) -> dict[str, Any]:
    """The bare score of record, for when the full rendering failed (flagged ``grader-error``)."""
    report = record.report
    return {
        "score": round(report.score, 5),
        "output": f"{report.lab}: {report.score:g} / {report.max_score:g} (score of record; detailed feedback failed to render).",
        "tests": [{"name": "Staff review", "visibility": "hidden", "status": "failed",
                   "output": f"flags: grader-error; rendering the results failed: {error}"}],
        "extra_data": {"mlsys_grader": {"flags": sorted(set(record.all_flags) | {"grader-error"}),
                                        "max_score": report.max_score, "source": record.source}},
    }


class ScoreOfRecordPlugin(AbstractOtterPlugin):
    """Grade the submitted bundle before the notebook runs and report that score."""

    def __init__(self, submission_path: str, submission_metadata: dict, plugin_config: dict):
        super().__init__(submission_path, submission_metadata, plugin_config or {})
        lab = self.plugin_config.get("lab")
        if lab not in lab_ids():
            raise ValueError(f"ScoreOfRecordPlugin needs plugin config 'lab' set to one of {', '.join(lab_ids())} (got {lab!r})")
        self.lab: str = lab
        self.question_parts: dict[str, str] = dict(self.plugin_config.get("question_parts") or {})
        self.record: ScoreOfRecord | None = None
        self.bundle_digest_before: str | None = None
        self.notes: list[str] = []

    # -- before any student code ---------------------------------------------------
    def _fix_record(self) -> ScoreOfRecord:
        if self.record is None:
            submission_dir = os.path.dirname(os.path.abspath(self.submission_path))
            self.record = score_of_record(self.lab, submission_dir, self.submission_path)
            self.bundle_digest_before = file_fingerprint(self.record.bundle_path)
        return self.record

    def before_grading(self, config: Any) -> None:
        submission_dir = os.path.dirname(os.path.abspath(self.submission_path))
        hardening.install(os.path.dirname(submission_dir),  # the autograder folder holds the submission
                          cell_timeout_s=float(self.plugin_config.get("cell_timeout_s", hardening.DEFAULT_CELL_TIMEOUT_S)))
        if hardening.quarantine_otter_log(submission_dir):
            self.notes.append(".OTTER_LOG was set aside unread (the runner never unpickles submitted files)")
        config.grade_from_log = False
        self._fix_record()

    def before_execution(self, submission: Any) -> Any:
        self._fix_record()  # no-op when before_grading ran; the record predates student code either way
        return submission

    # -- after the student's notebook ran ------------------------------------------
    def after_grading(self, results: GradingResults) -> None:
        record = self._fix_record()
        extra_flags = []
        try:
            scores, error = kernel_scores(results)
            kernel: KernelComparison | None = compare_kernel(record.report, scores, error, self.question_parts)
        except Exception as exc:  # noqa: BLE001
            kernel = KernelComparison(error=repr(exc), flags=["kernel-results-rejected"], disagreements=[repr(exc)])
        if record.bundle_path and file_fingerprint(record.bundle_path) != self.bundle_digest_before:
            extra_flags.append(FLAG_BUNDLE_REWRITTEN)
            self.notes.append(f"{os.path.basename(record.bundle_path)} was rewritten while the notebook ran; "
                              "the bundle read before execution was graded")
        try:
            document = gradescope_results(record, kernel, extra_flags=extra_flags, extra_notes=self.notes)
        except Exception as exc:  # noqa: BLE001 — a rendering bug must not cost the student the score
            document = fallback_results(record, f"{type(exc).__name__}: {exc}")
        results.__class__ = RecordGradingResults
        results._mlsys_results = document
        results._catastrophic_error = None
        results.all_hidden = False

    def generate_report(self) -> str:
        if self.record is None:
            return "score of record: not computed"
        report = self.record.report
        flags = ", ".join(self.record.all_flags) or "none"
        return f"score of record: {report.score:g} / {report.max_score:g} from {self.record.source}; flags: {flags}"
