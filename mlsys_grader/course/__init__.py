"""Course staff's bulk grading: a folder of submissions → gradebook (CSV, SQLite, HTML), no Docker.

Modules (private): ``_ingest`` finds and reads inputs of every kind, ``_identity`` ties each
to a roster student (manifest, Gradescope metadata, LMS download names, folders), ``_pool``
runs them in bounded worker processes, ``_gradebook`` grades and keeps the gradebook,
``_final`` makes one row per student and lab, ``_late`` reads the course file (late policy),
``_migrations`` upgrades an earlier release's gradebook, ``_collusion`` pairs copies,
``_lms`` writes LMS import files, ``_feedback`` the pages to hand back,
``_formative`` shows formative items as such, ``_summary`` renders the HTML report;
staff review: ``_overrides`` (staff decisions, applied before the late penalty), ``_review``
(the queue, decisions, the CSV round trip), ``_spans`` (what the reader used in a rationale),
``_review_app`` (the local review page; Flask, the ``review`` extra; not in the student kit).
"""

from ._final import FINAL_COLUMNS, build_final
from ._gradebook import BatchOptions, GradebookDB, GradebookResult, grade_paths, gradebook_dataframe, resolve_rubrics
from ._identity import Roster, RosterStudent, read_manifest, read_roster
from ._late import Course, read_course
from ._summary import render_summary, write_summary

_LAZY = {"export_lms": "._lms", "write_feedback": "._feedback"}
"""Loaded on first use: ``grade`` (the common command) never needs them."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["BatchOptions", "Course", "FINAL_COLUMNS", "GradebookDB", "GradebookResult", "Roster", "RosterStudent", "build_final", "export_lms", "grade_paths", "gradebook_dataframe", "read_course", "read_manifest", "read_roster", "render_summary", "resolve_rubrics", "write_feedback", "write_summary"]
