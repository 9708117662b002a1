"""Gradescope's ``run_autograder``: the score of record first, the notebook (if at all) in a sandbox, then the final results.

The zip's ``run_autograder`` is one line, ``exec <env>/bin/python -I -m mlsys_grader.gradescope
/autograder``: bash reads nothing after it, and ``-I`` keeps the working directory and any
``PYTHON*`` variable out of the import path.  :func:`grade_submission` then, in this one root process:

1. reads the options (``otter_config.json``), makes the autograder folder root's and not
   writable by others, reads the upload as data (:mod:`._upload`) and grades the submitted
   bundle — the score of record — and **writes results.json** before any student code runs;
2. runs Otter's test files against the graded bundle in this process (no notebook, no student
   code): Otter's per-item results, checked against the score of record;
3. only with ``rerun_notebook`` on, or for a notebook uploaded without its bundle: runs the
   notebook in the sandbox (:mod:`._sandbox`), kills every process it started, and reads what
   it left — a regenerated bundle becomes the score of record, everything else only raises
   staff flags (:mod:`._watch`);
4. writes the final results.json (atomically, in a folder only root can write).

Each write is the whole Gradescope document, so a run that is killed between two writes
still leaves the score of record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..api import default_rubric
from ..core import flags as flag_names
from ..errors import OptionsError
from ..labs import get_lab, lab_ids
from . import _sandbox as sandbox
from . import _watch as watch
from ._late import apply_late_policy, read_metadata
from ._options import AutograderOptions, read_options
from ._otter_tests import OtterResults, case_names, disagreements, import_test_files, run_tests_on_bundle, with_case_names
from ._record import FLAG_GRADER_ERROR, ScoreOfRecord, grade_bytes, grade_upload, grader_failed
from ._results import (
    FLAG_KERNEL_DISAGREES,
    FLAG_KERNEL_RESULTS_REJECTED,
    FLAG_TESTS_DISAGREE,
    Review,
    gradescope_results,
)
from ._upload import FLAG_NO_BUNDLE, Upload, export_advice, inspect_upload, read_notebook

# Everything above is light enough to load before the score of record; Otter loads later, inside
# _otter_tests (after the first results.json), and only check_image imports the kernel's packages.

FLAG_RESULTS_REWRITTEN = flag_names.RESULTS_REWRITTEN
FLAG_SANDBOX_NOT_EMPTY = flag_names.SANDBOX_NOT_EMPTY


class ResultsWriter:
    """Writes ``results/results.json`` whole and atomically; remembers the digest of what it wrote."""

    def __init__(self, path: Path):
        self.path = path
        self.digest: str | None = None
        self.writes = 0
        self.adjust: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        """Applied to every document before it is written (the course's late policy, :mod:`._late`)."""

    def write(self, document: dict[str, Any]) -> None:
        if self.adjust is not None:
            document = self.adjust(document)
        data = json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        self.digest = hashlib.sha256(data).hexdigest()
        self.writes += 1

    def unchanged(self) -> bool:
        try:
            with open(self.path, "rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest() == self.digest
        except OSError:
            return False


class Log:
    """Lines for Gradescope's "Autograder Output" (hidden from students), with the time since start."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, message: str) -> None:
        print(f"[{time.monotonic() - self.started:6.2f} s] {message}", flush=True)


def config_error_results(error: Exception) -> dict[str, Any]:
    """Results when the autograder itself is misconfigured: score 0 of 100, a staff note, a plain sentence."""
    return {
        "score": 0.0,
        "output": "The autograder for this assignment is misconfigured (not your error); course staff will regrade your upload.",
        "stdout_visibility": "hidden",
        "tests": [{"name": "Autograder configuration", "score": 0.0, "max_score": 100.0, "status": "failed",
                   "visibility": "visible", "output": "Course staff will regrade this upload once the autograder is fixed."},
                  {"name": "Staff review", "visibility": "hidden", "status": "failed",
                   "output": f"flags: {FLAG_GRADER_ERROR}\n- {error}"}],
        "extra_data": {"mlsys_grader": {"flags": [FLAG_GRADER_ERROR], "notes": [str(error)]}},
    }


def _otter_tests(source: Path, record: ScoreOfRecord, review: Review, options: AutograderOptions, fast: bool) -> None:
    try:
        review.otter_tests = run_tests_on_bundle(source / "tests", record.lab, record.bundle, skip_package_init=fast)
    except Exception as exc:
        review.otter_tests = OtterResults(error=f"{type(exc).__name__}: {exc}"[:500])
    if review.otter_tests.error is not None:
        review.flag(FLAG_TESTS_DISAGREE, f"Otter's tests did not run in the grading process: {review.otter_tests.error}")
    for line in disagreements(record.report, review.otter_tests, options.question_parts):
        review.flag(FLAG_TESTS_DISAGREE, f"Otter test vs score of record: {line}")


def _notebook_phase(autograder: Path, options: AutograderOptions, upload: Upload, record: ScoreOfRecord, review: Review,
                    writer: ResultsWriter, log: Log, *, regenerate: bool) -> ScoreOfRecord:
    """Run the notebook in the sandbox; return the (possibly regenerated) score of record and fill ``review``."""
    if upload.notebook is None:
        review.notes.append("the upload holds no notebook to run")
        return record
    files = watch.grader_files(autograder)
    before = watch.snapshot(files)
    log(f"running the notebook in the sandbox ({'to regenerate its bundle' if regenerate else 're-run option'}; "
        f"budget {options.notebook_budget_s:g} s)")
    try:
        run = sandbox.run_notebook(upload.notebook, options.lab, autograder / "source" / "tests", uid=options.sandbox_uid,
                                   budget_s=options.notebook_budget_s, cell_timeout_s=options.cell_timeout_s,
                                   bundle=None if regenerate else record.bundle)
    except sandbox.GraderError as exc:  # processes that survived SIGKILL
        review.flag(FLAG_SANDBOX_NOT_EMPTY, f"the sandbox could not be emptied: {exc}")
        return record
    review.run = {"mode": "regenerate" if regenerate else "rerun", **run.summary()}
    if not run.started:
        log(f"the notebook was not run: {run.why_not}")
        review.notes.append(f"the notebook was not run: {run.why_not}")
        return record
    log(f"notebook run ended after {run.seconds:.1f} s (timed out: {run.timed_out}); "
        f"{run.killed} process(es) of the notebook's user killed; none left")
    changed = before.changed(watch.snapshot(files))
    if changed:
        review.flag(watch.FLAG_FILES_CHANGED, "files of the grader changed while the notebook ran: " + ", ".join(changed[:10]))
    if not writer.unchanged():
        review.flag(FLAG_RESULTS_REWRITTEN, "results.json changed while the notebook ran; it is written again now")
    notebook = read_notebook(upload.notebook) or {}
    for flag, note in watch.scan_code(notebook) + watch.scan_errors(run.cell_errors):
        review.flag(flag, note)
    if run.outlived:
        review.flag(watch.FLAG_DETACHED, "process(es) still running when the notebook ended, killed before results were "
                                         "written: " + "; ".join(" ".join(p.command.split())[:160] for p in run.outlived[:5]))
    interrupted = [error.split(":", 1)[0] for error in run.cell_errors if ": KeyboardInterrupt" in error]
    if interrupted:
        review.flag(watch.FLAG_NOTEBOOK_INCOMPLETE, f"{', '.join(interrupted)} ran past the {options.cell_timeout_s:g} s "
                                                    "cell limit and was interrupted")
    if run.timed_out or not run.finished:
        reason = (f"the notebook did not finish within {options.notebook_budget_s:g} s and was killed" if run.timed_out
                  else f"the notebook stopped before its last cell ({run.why_not or (run.kernel and run.kernel.error)})")
        review.flag(watch.FLAG_NOTEBOOK_INCOMPLETE, reason)
    if regenerate:
        record = _regenerated(options, upload, record, run, review)
    if run.kernel is None or run.kernel.error is not None:
        why = run.why_not or (run.kernel.error if run.kernel is not None else None) or "the kernel left no report"
        review.flag(FLAG_KERNEL_RESULTS_REJECTED, f"no usable Otter results from the notebook's kernel: {why}")
    else:
        review.kernel_tests = with_case_names(run.kernel, case_names(autograder / "source" / "tests"))
        for line in disagreements(record.report, review.kernel_tests, options.question_parts):
            review.flag(FLAG_KERNEL_DISAGREES, f"kernel test vs score of record: {line}")
    return record


def _regenerated(options: AutograderOptions, upload: Upload, record: ScoreOfRecord, run, review: Review) -> ScoreOfRecord:
    if run.bundle is None:
        record.notes.append("the notebook ran in the sandbox but saved no bundle")
        record.problem = (f"Your upload has no saved bundle, and running your notebook saved none either: "
                          f"{export_advice(options.lab)}.")
        record.report.findings[0] = record.report.findings[0].model_copy(update={"message": record.problem})
        return record
    new = grade_bytes(options.lab, run.bundle, "the bundle your notebook saved when the autograder ran it")
    new.notes.append("the upload had no bundle: the notebook was run in the sandbox and the bundle it saved is graded")
    new.public_notes.append("Your upload had no saved bundle, so the autograder ran your notebook and graded the bundle "
                            "it saved; next time upload the export zip.")
    if run.timed_out:
        new.public_notes.append(f"Your notebook did not finish within {options.notebook_budget_s:g} seconds; the parts "
                                "it captured before then were graded.")
    review.otter_tests = None  # run again on the regenerated bundle
    return new


def grade_submission(autograder_dir: str | os.PathLike = "/autograder", *, log: Log | None = None,
                     own_process: bool = False) -> dict[str, Any]:
    """Grade the submission in ``autograder_dir`` as Gradescope lays it out; return the final results document.

    ``own_process``: this process does nothing else (``run_autograder``), so Otter's package
    ``__init__`` may be skipped when its test files are loaded (see :func:`._otter_tests.import_test_files`).
    """
    log = log or Log()
    autograder = Path(autograder_dir)
    source = autograder / "source"
    writer = ResultsWriter(autograder / "results" / "results.json")
    try:
        options = read_options(source)
    except OptionsError as exc:
        document = config_error_results(exc)
        writer.write(document)
        log(f"misconfigured: {exc}")
        return document
    metadata = read_metadata(autograder)
    writer.adjust = lambda document: apply_late_policy(document, source, options.lab, metadata)
    if os.geteuid() == 0:
        for change in sandbox.protect_autograder(autograder):
            log(change)
    record: ScoreOfRecord | None = None
    review = Review()
    try:
        upload = inspect_upload(autograder / "submission", options.lab)
        record = grade_upload(upload)
        writer.write(gradescope_results(record, review))
        log(f"score of record {record.report.score:g} / {record.report.max_score:g} from {record.source}; "
            f"flags: {', '.join(record.all_flags) or 'none'}; results.json written")
        _otter_tests(source, record, review, options, own_process)
        log(f"Otter's tests ran on the graded bundle: {review.otter_tests.by_question() if review.otter_tests else {}}")
        regenerate = record.problem is not None and upload.flag == FLAG_NO_BUNDLE and upload.notebook is not None
        if options.rerun_notebook or regenerate:
            writer.write(gradescope_results(record, review))
            record = _notebook_phase(autograder, options, upload, record, review, writer, log, regenerate=regenerate)
            if regenerate and record.bundle is not None:
                _otter_tests(source, record, review, options, own_process)
        document = gradescope_results(record, review)
    except Exception as exc:
        record = record if record is not None else grader_failed(options.lab, exc)
        review.flag(FLAG_GRADER_ERROR, f"the autograder failed: {type(exc).__name__}: {exc}")
        document = gradescope_results(record, review)
    writer.write(document)
    log(f"final results.json written: {document['score']:g} / 100; flags: "
        f"{', '.join(document['extra_data']['mlsys_grader']['flags']) or 'none'}")
    return document


def check_image() -> int:
    """``setup.sh``'s last step: the grading environment imports, loads both labs and is not writable by others."""
    for lab in lab_ids():
        get_lab(lab)
        default_rubric(lab)
    import_test_files()
    # Imported here, not at the top: they are what this check verifies (the sandbox's kernel and notebook
    # client), and grading never imports them in this process — the score of record is written without them.
    import ipykernel  # noqa: F401
    import nbclient  # noqa: F401

    problems = []
    fixed = 0
    for folder, dirs, files in os.walk(sys.prefix):
        for name in dirs + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if not stat.S_ISLNK(info.st_mode) and info.st_mode & stat.S_IWOTH:
                os.chmod(path, stat.S_IMODE(info.st_mode) & ~stat.S_IWOTH)
                fixed += 1
    blocked = sandbox.not_traversable(Path(sys.executable).parent) + sandbox.not_traversable(Path(sys.prefix))
    if blocked:
        problems.append("other users cannot enter " + ", ".join(blocked) + " (the notebook sandbox needs chmod 711 /root)")
    print(f"mlsys-grader image check: labs {', '.join(lab_ids())} load; {fixed} world-writable path(s) in {sys.prefix} fixed")
    for problem in problems:
        print(f"mlsys-grader image check: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlsys_grader.gradescope",
                                     description="Grade one Gradescope submission (run_autograder calls this).")
    parser.add_argument("autograder_dir", nargs="?", default="/autograder")
    parser.add_argument("--check-image", action="store_true", help="check the grading environment (setup.sh runs this)")
    args = parser.parse_args(argv)
    if args.check_image:
        return check_image()
    grade_submission(args.autograder_dir, own_process=True)
    return 0
