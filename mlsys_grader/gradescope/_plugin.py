"""The Otter plugin: the score of record, computed outside the student's kernel, is the reported score under ``otter run``.

Configured in the autograder's ``otter_config.json`` (``mlsys-grader autograder`` writes it;
the options are :class:`~._options.AutograderOptions`)::

    {"plugins": [{"mlsys_grader.gradescope.ScoreOfRecordPlugin": {"lab": "lab07", "rerun_notebook": false}}]}

On Gradescope the zip's ``run_autograder`` does not start Otter's runner at all (see
:mod:`._runner`); this plugin is what ``otter run -a <lab>-autograder.zip`` uses on a staff
machine.  Events, all in Otter's runner process:

``before_grading``   before any student code runs: close the pickle channels
                     (:mod:`._hardening`), read the upload and grade the submitted bundle —
                     the score of record.  Unless ``rerun_notebook`` is on, the notebook is
                     not executed: Otter's tests run against the graded bundle instead.
``after_grading``    compares Otter's per-item results (the kernel's, with the re-run on)
                     with the record and makes the record the reported result; any
                     disagreement flags the submission for staff.

With ``rerun_notebook`` on, ``otter run`` executes the notebook as the user who runs it —
there is no sandbox on a staff machine; run untrusted uploads through Gradescope (or its
emulator) instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from otter.plugins import AbstractOtterPlugin
from otter.test_files import GradingResults

from . import _hardening as hardening
from ._late import apply_late_policy
from ._options import PLUGIN_NAME, AutograderOptions, options_from_mapping
from ._otter_tests import OtterResults, case_names, disagreements, from_grading_results, run_tests_on_bundle, with_case_names
from ._record import FLAG_GRADER_ERROR, ScoreOfRecord, score_of_record
from ._results import FLAG_KERNEL_DISAGREES, FLAG_KERNEL_RESULTS_REJECTED, FLAG_TESTS_DISAGREE, Review, gradescope_results

__all__ = ["PLUGIN_NAME", "RecordGradingResults", "ScoreOfRecordPlugin"]


class RecordGradingResults(GradingResults):
    """Otter's results object whose Gradescope rendering is the score of record.

    Otter's runner pickles this object and calls ``to_gradescope_dict`` on it; the
    record is kept as plain JSON data, so that pickle holds nothing executable.
    """

    _mlsys_results: dict[str, Any]

    def to_gradescope_dict(self, ag_config: Any) -> dict[str, Any]:
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


def fallback_results(record: ScoreOfRecord, error: str) -> dict[str, Any]:
    """The bare score of record, for when the full rendering failed (flagged ``grader_error``)."""
    report = record.report
    return {
        "score": round(report.score, 5),
        "output": f"{report.lab}: {report.score:g} / {report.max_score:g} (detailed feedback failed to render).",
        "tests": [{"name": "Score of record", "score": round(report.score, 5), "max_score": report.max_score,
                   "visibility": "visible", "output": "Detailed feedback will follow after a staff regrade."},
                  {"name": "Staff review", "visibility": "hidden", "status": "failed",
                   "output": f"flags: {FLAG_GRADER_ERROR}; rendering the results failed: {error}"}],
        "extra_data": {"mlsys_grader": {"flags": sorted(set(record.all_flags) | {FLAG_GRADER_ERROR}),
                                        "max_score": report.max_score, "source": record.source}},
    }


class ScoreOfRecordPlugin(AbstractOtterPlugin):
    """Grade the submitted bundle before any student code runs and report that score."""

    def __init__(self, submission_path: str, submission_metadata: dict, plugin_config: dict):
        super().__init__(submission_path, submission_metadata, plugin_config or {})
        self.options: AutograderOptions = options_from_mapping(self.plugin_config)
        self.lab: str = self.options.lab
        self.record: ScoreOfRecord | None = None
        self.review = Review()

    @property
    def submission_dir(self) -> str:
        return os.path.dirname(os.path.abspath(self.submission_path))

    @property
    def tests_dir(self) -> str:
        """The master's test files: the autograder's ``source/tests`` (Otter also copies them into the submission)."""
        for candidate in (os.path.join(os.path.dirname(self.submission_dir), "source", "tests"),
                          os.path.join(self.submission_dir, "tests")):
            if os.path.isdir(candidate):
                return candidate
        return os.path.join(self.submission_dir, "tests")

    # -- before any student code ---------------------------------------------------
    def _fix_record(self) -> ScoreOfRecord:
        if self.record is None:
            self.record = score_of_record(self.lab, self.submission_dir)
        return self.record

    def before_grading(self, config: Any) -> None:
        hardening.install(os.path.dirname(self.submission_dir),  # the autograder folder holds the submission
                          cell_timeout_s=self.options.cell_timeout_s)
        if hardening.quarantine_otter_log(self.submission_dir):
            self.review.notes.append(".OTTER_LOG was set aside unread (the runner never unpickles submitted files)")
        config.grade_from_log = False
        record = self._fix_record()
        try:
            self.review.otter_tests = run_tests_on_bundle(self.tests_dir, self.lab, record.bundle)
        except Exception as exc:
            self.review.otter_tests = OtterResults(error=f"{type(exc).__name__}: {exc}"[:500])
        for line in disagreements(record.report, self.review.otter_tests, self.options.question_parts):
            self.review.flag(FLAG_TESTS_DISAGREE, f"Otter test vs score of record: {line}")
        if not self.options.rerun_notebook:
            hardening.skip_execution(self._results_without_execution)

    def _results_without_execution(self) -> GradingResults:
        """What Otter's runner gets instead of executing the notebook: no kernel results (nothing ran)."""
        results = GradingResults([])
        self._report(results, executed=False)
        return results

    def before_execution(self, submission: Any) -> Any:
        self._fix_record()  # no-op when before_grading ran; the record predates student code either way
        return submission

    # -- after the student's notebook ran ------------------------------------------
    def after_grading(self, results: GradingResults) -> None:
        self._report(results, executed=True)

    def _report(self, results: GradingResults, *, executed: bool) -> None:
        record = self._fix_record()
        if executed:
            try:
                kernel = with_case_names(from_grading_results(results), case_names(self.tests_dir))
            except Exception as exc:
                kernel = OtterResults(error=f"unreadable kernel results ({type(exc).__name__}: {exc})")
            if kernel.error is not None:
                self.review.flag(FLAG_KERNEL_RESULTS_REJECTED, f"the kernel's results were not accepted: {kernel.error}")
            else:
                self.review.kernel_tests = kernel
                for line in disagreements(record.report, kernel, self.options.question_parts):
                    self.review.flag(FLAG_KERNEL_DISAGREES, f"kernel test vs score of record: {line}")
        try:
            document = gradescope_results(record, self.review)
        except Exception as exc:
            document = fallback_results(record, f"{type(exc).__name__}: {exc}")
        # The course's late policy when course.toml ships in the autograder (source/ holds the tests folder).
        document = apply_late_policy(document, Path(self.tests_dir).parent, self.lab, self.submission_metadata)
        results.__class__ = RecordGradingResults
        results._mlsys_results = document
        results._catastrophic_error = None
        results.all_hidden = False

    def generate_report(self) -> str:
        if self.record is None:
            return "score of record: not computed"
        report = self.record.report
        flags = ", ".join(sorted(set(self.record.all_flags) | set(self.review.flags))) or "none"
        return f"score of record: {report.score:g} / {report.max_score:g} from {self.record.source}; flags: {flags}"
