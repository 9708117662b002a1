"""Gradescope's ``run_autograder``: the score of record first, the notebook (if at all) in a sandbox, then the final results.

The zip's ``run_autograder`` is one line, ``exec <env>/bin/python -I -m mlsys_grader.gradescope
/autograder``: bash reads nothing after it, and ``-I`` keeps the working directory and any
``PYTHON*`` variable out of the import path.  :func:`run_autograder` then drives the grading
pipeline (:mod:`._pipeline`, the steps ``otter run``'s plugin drives too) in this one root process:

1. reads the options (``otter_config.json``), makes the autograder folder root's and not
   writable by others, builds its Replay on the lab's replay table that ``setup.sh`` built (verified, and only
   when root's: else live replay, said in the log), reads the upload as data (:mod:`._upload`) and
   grades the submitted bundle — the score of record — and **writes results.json** before any
   student code runs;
2. runs Otter's test files against the graded bundle in this process (no notebook, no student
   code): Otter's per-item results, checked against the score of record;
3. only with ``rerun_notebook`` on, or for a notebook uploaded without its bundle: runs the
   notebook in the sandbox (:mod:`._sandbox`), kills every process it started, and reads what
   it left — a regenerated bundle becomes the score of record, the kernel's Otter results are
   compared with it, everything else only raises staff flags (:mod:`._watch`);
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
from pathlib import Path
from typing import Any

from ..api import default_rubric
from ..core import flags as flag_names
from ..errors import GraderError, OptionsError
from ..labs import get_lab, lab_ids
from . import _sandbox as sandbox
from . import _watch as watch
from ._late import read_metadata
from ._options import read_options
from ._otter_tests import import_test_files
from ._pipeline import Pipeline
from ._record import FLAG_GRADER_ERROR, REPLAY_DIR, replay_for
from ._upload import FLAG_NO_BUNDLE, Upload, inspect_upload, read_notebook

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

    def write(self, document: dict[str, Any]) -> None:
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


def _notebook_phase(autograder: Path, pipeline: Pipeline, upload: Upload, writer: ResultsWriter, log: Log, *,
                    regenerate: bool) -> None:
    """Run the notebook in the sandbox and hand what it left to the pipeline (a regenerated record, the kernel's results)."""
    options, review = pipeline.options, pipeline.review
    if upload.notebook is None:
        review.notes.append("the upload holds no notebook to run")
        return
    files = watch.grader_files(autograder)
    before = watch.snapshot(files)
    log(f"running the notebook in the sandbox ({'to regenerate its bundle' if regenerate else 're-run option'}; "
        f"budget {options.notebook_budget_s:g} s)")
    record = pipeline.record
    try:
        run = sandbox.run_notebook(upload.notebook, options.lab, pipeline.tests_dir, uid=options.sandbox_uid,
                                   budget_s=options.notebook_budget_s, cell_timeout_s=options.cell_timeout_s,
                                   bundle=None if regenerate or record is None else record.bundle)
    except sandbox.GraderError as exc:  # processes that survived SIGKILL
        review.flag(FLAG_SANDBOX_NOT_EMPTY, f"the sandbox could not be emptied: {exc}")
        return
    review.run = {"mode": "regenerate" if regenerate else "rerun", **run.summary()}
    if not run.started:
        log(f"the notebook was not run: {run.why_not}")
        review.notes.append(f"the notebook was not run: {run.why_not}")
        return
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
        pipeline.regenerate(run.bundle, timed_out=run.timed_out)
    pipeline.compare_kernel(run.kernel, run.why_not)


def loaded(*modules: str) -> str:
    """Which of ``modules`` this process has imported so far, for the staff log (``mlsysim no, pint yes``)."""
    return ", ".join(f"{name} {'yes' if name in sys.modules else 'no'}" for name in modules)


LOGGED_MODULES = ("mlsysim", "pint", "otter")


def run_autograder(autograder_dir: str | os.PathLike = "/autograder", *, log: Log | None = None,
                     own_process: bool = False, replay_dir: Path | None = REPLAY_DIR) -> dict[str, Any]:
    """Grade the submission in ``autograder_dir`` as Gradescope lays it out; return the final results document.

    The steps are :class:`._pipeline.Pipeline`'s; this function adds what only Gradescope has:
    the autograder folder made root's, results.json written after each step, the sandbox.
    ``own_process``: this process does nothing else (``run_autograder``), so Otter's package
    ``__init__`` may be skipped when its test files are loaded (see :func:`._otter_tests.import_test_files`).
    ``replay_dir``: the image's replay tables (:data:`._record.REPLAY_DIR`, built by ``setup.sh``); this submission is
    graded through a :class:`~mlsys_grader.replay.Replay` on the lab's verified table (same grades as live replay,
    without importing mlsysim), and a missing, unverified or untrusted one leaves it on live replay — the staff log
    says which (:func:`._record.replay_for`).
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
    replay, verdict = replay_for(options.lab, replay_dir)
    pipeline = Pipeline(options, source / "tests", read_metadata(autograder), own_process=own_process, replay=replay)
    if os.geteuid() == 0:
        for change in sandbox.protect_autograder(autograder):
            log(change)
    try:
        log(verdict)
        upload = inspect_upload(autograder / "submission", options.lab)
        record = pipeline.grade_upload(upload)
        writer.write(pipeline.results())
        log(f"score of record {record.report.score:g} / {record.report.max_score:g} from {record.source}; "
            f"flags: {', '.join(record.all_flags) or 'none'}; results.json written")
        log(f"imported so far: {loaded(*LOGGED_MODULES)}")
        tests = pipeline.run_otter_tests()
        log(f"Otter's tests ran on the graded bundle: {tests.by_question()}")
        log(f"imported so far: {loaded(*LOGGED_MODULES)}")
        regenerate = record.problem is not None and upload.flag == FLAG_NO_BUNDLE and upload.notebook is not None
        if options.rerun_notebook or regenerate:
            writer.write(pipeline.results())
            _notebook_phase(autograder, pipeline, upload, writer, log, regenerate=regenerate)
            if regenerate and pipeline.record is not None and pipeline.record.bundle is not None:
                pipeline.run_otter_tests()
    except Exception as exc:
        pipeline.fail(exc)
    document = pipeline.results()
    writer.write(document)
    log(f"final results.json written: {document['score']:g} / 100; flags: "
        f"{', '.join(document['extra_data']['mlsys_grader']['flags']) or 'none'}")
    return document


def build_replay_tables(directory: Path = REPLAY_DIR) -> list[str]:
    """Build (or verify) every lab's replay table in ``directory`` through the image's pinned mlsysim; problems.

    Run by :func:`check_image` in ``setup.sh``: as root, before any student code exists, into a folder of the
    environment that only root writes.  Each table is then checked as grading checks it (:func:`._record.replay_for`);
    a lab whose domain is over the table's cap stays on live replay, which is not a problem.
    """
    from ..replay import load_table

    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    problems = []
    for lab_id in lab_ids():
        started = time.perf_counter()
        try:
            load_table(get_lab(lab_id), directory, rebuild=True)
        except GraderError as exc:  # over the cap: this lab grades by live replay
            print(f"mlsys-grader image check: {lab_id}: no replay table ({exc}); it grades by live replay")
            continue
        _, verdict = replay_for(lab_id, directory)
        print(f"mlsys-grader image check: {lab_id}: {verdict} ({time.perf_counter() - started:.1f} s)")
        if not verdict.startswith("replay: verified"):
            problems.append(f"{lab_id}: the replay table just built is not usable ({verdict})")
    return problems


def check_image() -> int:
    """``setup.sh``'s last step: the grading environment imports, loads every lab, builds their replay tables
    (:func:`build_replay_tables`) and is not writable by others."""
    for lab in lab_ids():
        get_lab(lab)
        default_rubric(lab)
    problems = build_replay_tables()
    import_test_files()
    # Imported here, not at the top: they are what this check verifies (the sandbox's kernel and notebook
    # client), and grading never imports them in this process — the score of record is written without them.
    import ipykernel  # noqa: F401
    import nbclient  # noqa: F401

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
    run_autograder(args.autograder_dir, own_process=True)
    return 0
