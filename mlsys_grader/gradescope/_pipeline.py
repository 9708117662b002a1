"""The one grading pipeline on Gradescope: the score of record, Otter's tests beside it, the kernel's results, the document.

Two drivers run these steps, in this order, and nothing else grades:

- :func:`mlsys_grader.gradescope._runner.run_autograder` (``run_autograder``): it runs the
  notebook, when it runs at all, in the sandbox between steps 2 and 3;
- :class:`mlsys_grader.gradescope._plugin.ScoreOfRecordPlugin` (``otter run`` on a staff
  machine): Otter's hooks ``before_grading`` (steps 1–2) and ``after_grading`` (3–4), all in
  Otter's runner process; Otter executes the notebook between them, or not at all.

Steps (each a method of :class:`Pipeline`):

1. :meth:`~Pipeline.grade_upload` — the submitted bundle graded by the core: the score of
   record, fixed before any student code runs;
2. :meth:`~Pipeline.run_otter_tests` — the master's Otter test files run in this process on the
   graded bytes (no notebook, no student code) and compared with the record, item by item;
3. :meth:`~Pipeline.compare_kernel` — the per-item results of the notebook's own kernel, when
   it ran, compared the same way (:meth:`~Pipeline.regenerate` first, when the upload had no
   bundle and the run saved one: that bundle becomes the score of record);
4. :meth:`~Pipeline.results` — the Gradescope results document, with the course's late policy.

Every disagreement raises a staff flag; the reported score is always the record's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..replay import Replay
from ._late import apply_late_policy
from ._options import AutograderOptions
from ._otter_tests import OtterResults, case_names, disagreements, run_tests_on_bundle, with_case_names
from ._record import FLAG_GRADER_ERROR, ScoreOfRecord, grade_bytes, grade_upload, grader_failed, score_of_record
from ._results import (
    FLAG_KERNEL_DISAGREES,
    FLAG_KERNEL_RESULTS_REJECTED,
    FLAG_TESTS_DISAGREE,
    Review,
    gradescope_results,
)
from ._upload import Upload, export_advice


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


@dataclass
class Pipeline:
    """One submission's way through the steps; ``record`` and ``review`` are what the results document reports.

    ``tests_dir`` is the master's Otter test files (the autograder's ``source/tests``); the
    course file, when the autograder ships one, is beside it (``source/course.toml``).
    ``metadata`` is Gradescope's ``submission_metadata.json`` (the late policy's times).
    ``own_process``: nothing else runs in this process (``run_autograder``), so Otter's package
    ``__init__`` may be skipped when its test files are loaded (:func:`._otter_tests.import_test_files`).
    ``replay``: the replay service every grade of this submission goes through (the runner and the plugin build one
    from the image's table folder, :func:`._record.replay_for`; None: :func:`mlsys_grader.api.default_replay`).
    """

    options: AutograderOptions
    tests_dir: Path
    metadata: Mapping[str, Any] | None = None
    own_process: bool = False
    record: ScoreOfRecord | None = None
    review: Review = field(default_factory=Review)
    replay: Replay | None = None

    @property
    def lab(self) -> str:
        return self.options.lab

    # -- 1. the score of record --------------------------------------------------------------
    def grade_upload(self, upload: Upload) -> ScoreOfRecord:
        """The score of record of an inspected upload (raises only for the grader's own errors)."""
        self.record = grade_upload(upload, replay=self.replay)
        return self.record

    def grade_folder(self, submission_dir: str | os.PathLike[str]) -> ScoreOfRecord:
        """The score of record of the upload in ``submission_dir``, once; never raises (a grader error is recorded)."""
        if self.record is None:
            self.record = score_of_record(self.lab, submission_dir, replay=self.replay)
        return self.record

    # -- 2. Otter's tests on the graded bundle -----------------------------------------------
    def run_otter_tests(self) -> OtterResults:
        """Run the test files on the record's bytes in this process and flag where they and the record differ."""
        record = self._record()
        try:
            tests = run_tests_on_bundle(self.tests_dir, self.lab, record.bundle, skip_package_init=self.own_process,
                                        replay=self.replay)
        except Exception as exc:  # Otter's own code on the master's files: whatever fails is reported, not raised
            tests = OtterResults(error=f"{type(exc).__name__}: {exc}"[:500])
        self.review.otter_tests = tests
        if tests.error is not None:
            self.review.flag(FLAG_TESTS_DISAGREE, f"Otter's tests did not run in the grading process: {tests.error}")
        for line in disagreements(record.report, tests, self.options.question_parts):
            self.review.flag(FLAG_TESTS_DISAGREE, f"Otter test vs score of record: {line}")
        return tests

    # -- 3. after the notebook ran -------------------------------------------------------------
    def regenerate(self, bundle: bytes | None, *, timed_out: bool) -> ScoreOfRecord:
        """The upload had no bundle and the notebook was run for one: ``bundle`` (None: it saved none) is graded instead."""
        record = self._record()
        if bundle is None:
            record = record.noted("the notebook ran in the sandbox but saved no bundle")
            self.record = record.with_problem(f"Your upload has no saved bundle, and running your notebook saved none "
                                              f"either: {export_advice(self.lab)}.")
            return self.record
        public = ["Your upload had no saved bundle, so the autograder ran your notebook and graded the bundle it saved; "
                  "next time upload the export zip."]
        if timed_out:
            public.append(f"Your notebook did not finish within {self.options.notebook_budget_s:g} seconds; the parts it "
                          "captured before then were graded.")
        new = grade_bytes(self.lab, bundle, "the bundle your notebook saved when the autograder ran it",
                          replay=self.replay).noted(
            "the upload had no bundle: the notebook was run in the sandbox and the bundle it saved is graded", public=public)
        self.review.otter_tests = None  # they ran on the old record: run them again on this one
        self.record = new
        return new

    def compare_kernel(self, kernel: OtterResults | None, why_not: str | None = None) -> None:
        """Compare the kernel's per-item results with the record; ``kernel`` None (``why_not``) or in error is rejected."""
        record = self._record()
        if kernel is None or kernel.error is not None:
            why = why_not or (kernel.error if kernel is not None else None) or "the kernel left no report"
            self.review.flag(FLAG_KERNEL_RESULTS_REJECTED, f"no usable Otter results from the notebook's kernel: {why}")
            return
        self.review.kernel_tests = with_case_names(kernel, case_names(self.tests_dir))
        for line in disagreements(record.report, self.review.kernel_tests, self.options.question_parts):
            self.review.flag(FLAG_KERNEL_DISAGREES, f"kernel test vs score of record: {line}")

    def fail(self, exc: BaseException) -> None:
        """The grader itself failed: keep the record if there is one (else a zero held for staff) and flag it."""
        if self.record is None:
            self.record = grader_failed(self.lab, exc)
        self.review.flag(FLAG_GRADER_ERROR, f"the autograder failed: {type(exc).__name__}: {exc}")

    # -- 4. the document -----------------------------------------------------------------------
    def results(self) -> dict[str, Any]:
        """The Gradescope results of the record and the review, with the course's late policy when it ships."""
        record = self._record()
        try:
            document = gradescope_results(record, self.review)
        except Exception as exc:  # rendering is ours; the score of record still goes out, flagged
            document = fallback_results(record, f"{type(exc).__name__}: {exc}")
        return apply_late_policy(document, self.tests_dir.parent, self.lab, self.metadata)

    def _record(self) -> ScoreOfRecord:
        if self.record is None:
            raise RuntimeError("the pipeline has no score of record yet: grade the upload first")
        return self.record
