"""Every staff flag, defined once: its name (snake_case) and what it tells course staff.

Flags never change a score by themselves; they point staff at submissions worth a look.
The gradebook, the HTML summary, Gradescope's staff data and the documentation all use these names.
"""

from __future__ import annotations

# --- from grading a bundle (core/grading.py) -----------------------------------------------
INTEGRITY = "integrity"
VERSION_DRIFT = "version_drift"
STALE = "stale"
MISSING = "missing"
GENERATED = "generated"
GRADER_ERROR = "grader_error"

# --- from bulk grading (course/) ------------------------------------------------------------
COLLUSION = "collusion"
WRONG_TRACK = "wrong_track"
NOT_IN_ROSTER = "not_in_roster"

# --- from the Gradescope upload and its optional notebook re-run (gradescope/) -------------
NO_BUNDLE = "no_bundle"
WRONG_LAB = "wrong_lab"
EMPTY_UPLOAD = "empty_upload"
BUNDLE_MISMATCH = "bundle_mismatch"
TESTS_DISAGREE = "tests_disagree"
KERNEL_DISAGREES = "kernel_disagrees"
KERNEL_RESULTS_REJECTED = "kernel_results_rejected"
RESULTS_REWRITTEN = "results_rewritten"
SANDBOX_NOT_EMPTY = "sandbox_not_empty"
DETACHED_PROCESS = "detached_process"
GRADER_FILES_CHANGED = "grader_files_changed"
NOTEBOOK_INCOMPLETE = "notebook_incomplete"
TAMPER_RESULTS = "tamper_results"
TAMPER_SOURCE = "tamper_source"
TAMPER_RUN_AUTOGRADER = "tamper_run_autograder"
TAMPER_GRADER_INSTALL = "tamper_grader_install"
SIGNAL_GRADER = "signal_grader"

#: flag → one line for staff
MEANINGS: dict[str, str] = {
    INTEGRITY: "evidence failed replay, domain or version checks, or the file contradicts itself",
    VERSION_DRIFT: "the evidence looks captured with another mlsysim version",
    STALE: "a part was captured under earlier settings",
    MISSING: "a part or a synthesis field is missing",
    GENERATED: "the rationale is, or holds sentences of, the grader's own template",
    GRADER_ERROR: "the grader failed on a part; its points are held for staff review",
    COLLUSION: "identical capture times with another submission",
    WRONG_TRACK: "graded on another track than the roster assigns",
    NOT_IN_ROSTER: "the student is not in the roster",
    NO_BUNDLE: "the upload held a notebook without its saved bundle",
    WRONG_LAB: "the upload belongs to another lab",
    EMPTY_UPLOAD: "nothing gradable was uploaded",
    BUNDLE_MISMATCH: "the notebook and the bundle beside it disagree",
    TESTS_DISAGREE: "Otter's tests and the score of record disagree",
    KERNEL_DISAGREES: "the notebook's own kernel tests disagree with the score of record",
    KERNEL_RESULTS_REJECTED: "the notebook's kernel gave no usable Otter results",
    RESULTS_REWRITTEN: "results.json changed while the notebook ran",
    SANDBOX_NOT_EMPTY: "the sandbox could not be emptied after the notebook",
    DETACHED_PROCESS: "a process outlived the notebook",
    GRADER_FILES_CHANGED: "files of the grader changed while the notebook ran",
    NOTEBOOK_INCOMPLETE: "the re-run notebook did not finish",
    TAMPER_RESULTS: "the notebook targets the results Gradescope reads",
    TAMPER_SOURCE: "the notebook targets the autograder's source folder",
    TAMPER_RUN_AUTOGRADER: "the notebook targets the run_autograder script",
    TAMPER_GRADER_INSTALL: "the notebook targets the installed grader or Otter",
    SIGNAL_GRADER: "the notebook signals or traces other processes",
}

#: a finding's criterion → the flag it raises (``integrity`` and ``version_drift`` depend on more than the criterion)
BY_CRITERION: dict[str, str] = {"stale": STALE, "missing": MISSING, "generated": GENERATED, "grader": GRADER_ERROR}
