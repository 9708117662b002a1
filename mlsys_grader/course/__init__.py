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

from ._final import FINAL_COLUMNS, build_final, default_final_path
from ._gradebook import BatchOptions, GradebookDB, GradebookResult, grade_paths, gradebook_dataframe, resolve_rubrics
from ._identity import Roster, RosterStudent, read_manifest
from ._late import Course, read_course
from ._rosters import read_roster
from ._summary import render_summary, write_summary

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.labspec import Lab
    from ._feedback import write_feedback, write_lms_feedback
    from ._lms import export_lms
    from ._replay_table import default_cache_dir as replay_table_dir
    from ._replay_table import ensure_tables as ensure_replay_tables
    from ._replay_table import replay_tables
    from ._replay_table import warm as warm_replay_tables
    from ._review import Entry, WholeDecision, add_request, build_queue, decide, export_queue, import_decisions
    from ._review_app import serve as serve_review

_LAZY = {
    "export_lms": ("._lms", "export_lms"),
    "write_feedback": ("._feedback", "write_feedback"),
    "write_lms_feedback": ("._feedback", "write_lms_feedback"),
    "warm_replay_tables": ("._replay_table", "warm"),
    "ensure_replay_tables": ("._replay_table", "ensure_tables"),
    "replay_tables": ("._replay_table", "replay_tables"),
    "replay_table_dir": ("._replay_table", "default_cache_dir"),
    "Entry": ("._review", "Entry"),
    "add_request": ("._review", "add_request"),
    "build_queue": ("._review", "build_queue"),
    "export_queue": ("._review", "export_queue"),
    "import_decisions": ("._review", "import_decisions"),
    "WholeDecision": ("._review", "WholeDecision"),
    "decide": ("._review", "decide"),
    "serve_review": ("._review_app", "serve"),
}
"""Public name → (module, attribute), loaded on first use: ``grade`` (the common command) never needs them, the
review page needs Flask (the ``review`` extra), and the student build leaves the replay table and review modules out."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module, __name__), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def attach_replay_table(lab: Lab, cache_dir: Path | None = None, *, rebuild: bool = True) -> Lab:
    """``lab`` grading through its verified replay table in ``cache_dir`` (:func:`._replay_table.attach`; a missing or
    refused table raises :class:`~mlsys_grader.errors.ReplayTableError` unless ``rebuild``).  Imported on use: the
    student build leaves the table module out."""
    from ._replay_table import attach

    return attach(lab, cache_dir, rebuild=rebuild)


def detach_replay_table(lab: Lab) -> Lab:
    """``lab`` evaluating live again (:func:`._replay_table.detach`)."""
    from ._replay_table import detach

    return detach(lab)


def ensure_table_units(cache_dir: Path | None = None) -> bool:
    """Build the unit file beside the replay tables in ``cache_dir`` when it is missing or does not verify
    (:func:`._replay_table.ensure_units`: the units the labs' tables show); whether a verified one is there now."""
    from ._replay_table import ensure_units, load_units

    ensure_units(cache_dir)
    return load_units(cache_dir) is not None


def use_table_units(cache_dir: Path | None = None) -> bool:
    """Give the rationale reader the verified unit file beside the replay tables in ``cache_dir``, so grading never
    loads pint's registry; False (pint then converts, with the same results) when there is no such file, it does not
    verify, or this process already has unit scales."""
    from ..core.rationale import unit_scales_in_use, use_unit_scales
    from ._replay_table import load_units

    if unit_scales_in_use():
        return False
    scales = load_units(cache_dir)
    if scales is None:
        return False
    use_unit_scales(scales)
    return True


def release_table_units() -> None:
    """Units converted through pint again (after :func:`use_table_units`)."""
    from ..core.rationale import use_unit_scales

    use_unit_scales(None)


__all__ = ["BatchOptions", "Course", "Entry", "FINAL_COLUMNS", "GradebookDB", "GradebookResult", "Roster", "RosterStudent", "WholeDecision", "add_request", "attach_replay_table", "build_final", "build_queue", "decide", "default_final_path", "detach_replay_table", "ensure_replay_tables", "ensure_table_units", "export_lms", "export_queue", "grade_paths", "gradebook_dataframe", "import_decisions", "read_course", "read_manifest", "read_roster", "release_table_units", "render_summary", "replay_table_dir", "replay_tables", "resolve_rubrics", "serve_review", "use_table_units", "warm_replay_tables", "write_feedback", "write_lms_feedback", "write_summary"]
