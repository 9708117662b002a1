"""Course staff's bulk grading: a folder of submissions → gradebook (CSV, SQLite, HTML), no Docker.

Modules (private): ``_ingest`` finds and reads inputs of every kind, ``_identity`` ties each
to a roster student (manifest, Gradescope metadata, LMS download names, folders), ``_pool``
runs them in bounded worker processes, ``_gradebook`` grades and keeps the gradebook,
``_final`` makes one row per student and lab, ``_late`` reads the course file (late policy),
``_migrations`` upgrades an earlier release's gradebook, ``_collusion`` pairs copies,
``_lms`` writes LMS import files, ``_feedback`` the pages to hand back,
``_formative`` shows formative items as such, ``_summary`` renders the HTML report,
``_replay_table`` the replay tables (``attach_replay_table`` / ``detach_replay_table``: one lab on its verified
table, as the Gradescope runner grades the score of record);
staff review: ``_overrides`` (staff decisions, applied before the late penalty), ``_review``
(the queue, decisions, the CSV round trip), ``_spans`` (what the reader used in a rationale),
``_review_app`` (the local review page; Flask, the ``review`` extra; not in the student kit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._final import FINAL_COLUMNS, build_final
from ._gradebook import BatchOptions, GradebookDB, GradebookResult, grade_paths, gradebook_dataframe, resolve_rubrics
from ._identity import Roster, RosterStudent, read_manifest, read_roster
from ._late import Course, read_course
from ._summary import render_summary, write_summary

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.labspec import LabSpec

_LAZY = {"export_lms": "._lms", "write_feedback": "._feedback"}
"""Loaded on first use: ``grade`` (the common command) never needs them."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def attach_replay_table(lab: LabSpec, cache_dir: Path | None = None, *, rebuild: bool = True) -> LabSpec:
    """``lab`` grading through its verified replay table in ``cache_dir`` (:func:`._replay_table.attach`; a missing or
    refused table raises :class:`~mlsys_grader.errors.ReplayTableError` unless ``rebuild``).  Imported on use: the
    student build leaves the table module out."""
    from ._replay_table import attach

    return attach(lab, cache_dir, rebuild=rebuild)


def detach_replay_table(lab: LabSpec) -> LabSpec:
    """``lab`` evaluating live again (:func:`._replay_table.detach`)."""
    from ._replay_table import detach

    return detach(lab)


__all__ = ["BatchOptions", "Course", "FINAL_COLUMNS", "GradebookDB", "GradebookResult", "Roster", "RosterStudent", "attach_replay_table", "build_final", "detach_replay_table", "export_lms", "grade_paths", "gradebook_dataframe", "read_course", "read_manifest", "read_roster", "render_summary", "resolve_rubrics", "write_feedback", "write_summary"]
