"""Course staff's bulk grading: a folder of submissions → gradebook (CSV, SQLite, HTML), no Docker.

Modules (private): ``_ingest`` finds and reads inputs of every kind, ``_identity`` ties each
to a roster student (manifest, Gradescope metadata, LMS download names, folders), ``_pool``
runs them in bounded worker processes; the gradebook in parts: ``_options`` (how a batch runs, its rubrics and
columns), ``_worker`` (one input graded, in a worker), ``_store`` (the SQLite gradebook), ``_gradebook`` (the
pipeline that joins them); ``_final`` makes one row per student and lab, ``_late`` the late penalty (the course file is read by
:func:`mlsys_grader.intake.read_course`),
``_migrations`` upgrades an earlier release's gradebook, ``_collusion`` pairs copies,
``_lms`` writes LMS import files, ``_feedback`` the pages to hand back,
``_formative`` shows formative items as such, ``_summary`` renders the HTML report (replay, its tables
included, is :mod:`mlsys_grader.replay`'s);
staff review: ``_overrides`` (staff decisions, applied before the late penalty), ``_review``
(the queue, decisions, the CSV round trip; a rationale's highlighted spans are the grade's own reading),
``_review_app`` (the local review page; Flask, the ``review`` extra; not in the student kit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._final import FINAL_COLUMNS, build_final, default_final_path
from ._gradebook import GradebookResult, grade_paths, gradebook_dataframe, labs_to_grade
from ._identity import Roster, RosterStudent, read_manifest
from ._late import Course, read_course
from ._options import BatchOptions, resolve_rubrics
from ._rosters import read_roster
from ._store import GradebookDB
from ._summary import render_summary, write_summary

if TYPE_CHECKING:
    from ._feedback import write_feedback, write_lms_feedback
    from ._lms import export_lms
    from ._review import (
        Entry,
        WholeDecision,
        add_request,
        build_queue,
        decide,
        decide_code,
        export_queue,
        import_decisions,
        queue_codes,
    )
    from ._review_app import serve as serve_review

_LAZY = {
    "export_lms": ("._lms", "export_lms"),
    "write_feedback": ("._feedback", "write_feedback"),
    "write_lms_feedback": ("._feedback", "write_lms_feedback"),
    "Entry": ("._review", "Entry"),
    "add_request": ("._review", "add_request"),
    "build_queue": ("._review", "build_queue"),
    "export_queue": ("._review", "export_queue"),
    "import_decisions": ("._review", "import_decisions"),
    "WholeDecision": ("._review", "WholeDecision"),
    "decide": ("._review", "decide"),
    "decide_code": ("._review", "decide_code"),
    "queue_codes": ("._review", "queue_codes"),
    "serve_review": ("._review_app", "serve"),
}
"""Public name → (module, attribute), loaded on first use: ``grade`` (the common command) never needs them, the
review page needs Flask (the ``review`` extra), and the student build leaves the review modules out."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module, __name__), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BatchOptions", "Course", "Entry", "FINAL_COLUMNS", "GradebookDB", "GradebookResult", "Roster", "RosterStudent", "WholeDecision", "add_request", "build_final", "build_queue", "decide", "decide_code", "default_final_path", "export_lms", "export_queue", "grade_paths", "gradebook_dataframe", "import_decisions", "labs_to_grade", "queue_codes", "read_course", "read_manifest", "read_roster", "render_summary", "resolve_rubrics", "serve_review", "write_feedback", "write_lms_feedback", "write_summary"]
