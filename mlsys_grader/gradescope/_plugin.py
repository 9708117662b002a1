"""The Otter plugin: ``otter run`` drives the grading pipeline (:mod:`._pipeline`) from Otter's hooks.

Configured in the autograder's ``otter_config.json`` (``mlsys-grader autograder`` writes it;
the options are :class:`~._options.AutograderOptions`)::

    {"plugins": [{"mlsys_grader.gradescope.ScoreOfRecordPlugin": {"lab": "lab07", "rerun_notebook": false}}]}

On Gradescope the zip's ``run_autograder`` does not start Otter's runner at all (see
:mod:`._runner`); this plugin is what ``otter run -a <lab>-autograder.zip`` uses on a staff
machine.  It adds only what is Otter's; the steps are the pipeline's.  Events, all in Otter's
runner process:

``before_grading``   before any student code runs: close the pickle channels
                     (:mod:`._hardening`), build the Replay on the lab's verified replay table where this
                     machine keeps one (:func:`staff_replay_dir`), then the pipeline's score of
                     record and Otter's tests on the graded bundle.  Unless ``rerun_notebook`` is on, the notebook
                     is not executed (:func:`._hardening.skip_execution`).
``after_grading``    the kernel's per-item results (with the re-run on) compared with the
                     record, and the pipeline's results document made the reported result.

With ``rerun_notebook`` on, ``otter run`` executes the notebook as the user who runs it —
there is no sandbox on a staff machine; run untrusted uploads through Gradescope (or its
emulator) instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from otter.plugins import AbstractOtterPlugin
from otter.test_files import GradingResults

from . import _hardening as hardening
from ._options import PLUGIN_NAME, AutograderOptions, options_from_mapping
from ._otter_tests import OtterResults, from_grading_results
from ._pipeline import Pipeline
from ._record import REPLAY_DIR, ScoreOfRecord, replay_for

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


def staff_replay_dir() -> Path:
    """Where ``otter run`` looks for replay tables: the environment's own (``setup.sh``'s, :data:`._record.REPLAY_DIR`)
    when it has them, else the user's cache directory, where ``mlsys-grader warm`` and ``grade`` build them.  Either is
    trusted only as the runner trusts the image's: this user's and writable by no one else, and verified by digest."""
    if REPLAY_DIR.is_dir():
        return REPLAY_DIR
    try:
        from ..replay import table_dir

        return table_dir()
    except ImportError:  # a build without the replay table module: the environment's folder, which it lacks (live)
        return REPLAY_DIR


class ScoreOfRecordPlugin(AbstractOtterPlugin):
    """Grade the submitted bundle before any student code runs and report that score."""

    def __init__(self, submission_path: str, submission_metadata: dict, plugin_config: dict):
        super().__init__(submission_path, submission_metadata, plugin_config or {})
        self.options: AutograderOptions = options_from_mapping(self.plugin_config)
        self.lab: str = self.options.lab
        self.pipeline = Pipeline(self.options, Path(self.tests_dir), self.submission_metadata)

    @property
    def record(self) -> ScoreOfRecord | None:
        return self.pipeline.record

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
    def before_grading(self, config: Any) -> None:
        hardening.install(os.path.dirname(self.submission_dir),  # the autograder folder holds the submission
                          cell_timeout_s=self.options.cell_timeout_s)
        if hardening.quarantine_otter_log(self.submission_dir):
            self.pipeline.review.notes.append(".OTTER_LOG was set aside unread (the runner never unpickles submitted files)")
        config.grade_from_log = False
        # Otter's runner prints its own log; this line says, like run_autograder's, how replay ran (same grades either way).
        self.pipeline.replay, verdict = replay_for(self.lab, staff_replay_dir())
        print(f"mlsys-grader: {verdict}", file=sys.stderr)
        self.pipeline.grade_folder(self.submission_dir)
        self.pipeline.run_otter_tests()
        if not self.options.rerun_notebook:
            hardening.skip_execution(self._results_without_execution)

    def _results_without_execution(self) -> GradingResults:
        """What Otter's runner gets instead of executing the notebook: no kernel results (nothing ran)."""
        results = GradingResults([])
        self._report(results)
        return results

    def before_execution(self, submission: Any) -> Any:
        self.pipeline.grade_folder(self.submission_dir)  # no-op after before_grading; the record predates student code
        return submission

    # -- after the student's notebook ran ------------------------------------------
    def after_grading(self, results: GradingResults) -> None:
        try:
            kernel = from_grading_results(results)
        except Exception as exc:  # Otter's object, built in the runner from what the kernel left: refuse, never raise
            kernel = OtterResults(error=f"unreadable kernel results ({type(exc).__name__}: {exc})")
        self.pipeline.grade_folder(self.submission_dir)
        self.pipeline.compare_kernel(kernel)
        self._report(results)

    def _report(self, results: GradingResults) -> None:
        """Make ``results`` render as the pipeline's document (the score of record)."""
        self.pipeline.grade_folder(self.submission_dir)
        results.__class__ = RecordGradingResults
        results._mlsys_results = self.pipeline.results()
        results._catastrophic_error = None
        results.all_hidden = False

    def generate_report(self) -> str:
        record = self.pipeline.record
        if record is None:
            return "score of record: not computed"
        report = record.report
        flags = ", ".join(sorted(set(record.all_flags) | set(self.pipeline.review.flags))) or "none"
        return f"score of record: {report.score:g} / {report.max_score:g} from {record.source}; flags: {flags}"
