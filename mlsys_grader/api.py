"""The package's front door: load and grade bundles with the pinned evaluators.

This module wires the pure core to the registered labs and their rubric files; it
is the only place that resolves a lab id to a module and a rubric.  Every edge grades a
read submission through :func:`grade_submission` (``check``, ``grade``, the Gradescope
runner, :func:`grade_file`), so the same file gets the same grade everywhere.  ``solve`` is
staff-only (:mod:`mlsys_grader.staff`, left out of the student build).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ._version import __version__
from .core.grading import grade
from .core.jsonio import MAX_BYTES
from .core.models import Bundle, bundle_from_mapping, load_bundle
from .core.report import GradeReport
from .core.rubric import Rubric, rubric_from_toml
from .errors import UnknownLabError
from .intake import FORMATS, Format, Submission
from .intake import read_submission as _read_submission
from .labs import get_lab, lab_modules, rubric_text
from .replay import Replay


@lru_cache(maxsize=1)
def default_replay() -> Replay:
    """The one live :class:`~mlsys_grader.replay.Replay` grading uses when its caller hands in none (made on first use):
    the only default.  A caller that grades many submissions, or through replay tables, builds and passes its own."""
    return Replay()


@lru_cache(maxsize=1)
def mlsysim_version() -> str:
    """The installed mlsysim version (the one replay uses)."""
    return metadata.version("mlsysim")


def default_rubric(lab_id: str) -> Rubric:
    """The rubric shipped with the package for ``lab_id`` (does not import the evaluators); read anew when
    :func:`~mlsys_grader.labs.register_lab` points the id at another module."""
    return _shipped_rubric(lab_id, lab_modules().get(lab_id, ""))


@lru_cache(maxsize=8)
def _shipped_rubric(lab_id: str, module: str) -> Rubric:
    """``default_rubric``, kept per (lab id, module): a cache keyed by the id alone would go on serving the
    rubric of the module the id named first."""
    return rubric_from_toml(rubric_text(lab_id), expected_lab=lab_id, source=f"{lab_id}.toml")


def load_rubric(path: str | Path, lab_id: str) -> Rubric:
    """A rubric from a TOML file, checked to be for ``lab_id``."""
    return rubric_from_toml(Path(path).read_text(encoding="utf-8"), expected_lab=lab_id, source=str(path))


def _lab_of(bundle: Bundle) -> Any:
    lab = get_lab(bundle.lab)
    if bundle.track not in lab.tracks:
        raise UnknownLabError(f"unknown track {bundle.track!r} for {lab.lab_id}; expected one of {', '.join(lab.tracks)}",
                              lab=lab.lab_id, track=bundle.track, known=tuple(lab.tracks))
    return lab


def grade_bundle(bundle: Bundle | Mapping[str, Any] | bytes | str, rubric: Rubric | None = None, *,
                 replay: Replay | None = None) -> GradeReport:
    """Grade a bundle (or its JSON) through ``replay`` (default: :func:`default_replay`).  Raises
    :class:`BundleFormatError` / :class:`UnknownLabError` only when the submission cannot be read as a bundle for a
    known lab and track."""
    if isinstance(bundle, Mapping):
        bundle = bundle_from_mapping(bundle)
    elif not isinstance(bundle, Bundle):
        bundle = load_bundle(bundle)
    lab = _lab_of(bundle)
    return grade(bundle, lab, rubric or default_rubric(lab.lab_id), replay or default_replay(), mlsysim_version=mlsysim_version(),
                 grader_version=__version__)


def grade_submission(submission: Submission, rubric: Rubric | None = None, *, replay: Replay | None = None) -> GradeReport:
    """Grade a submission read by :func:`read_submission` through ``replay`` (default: :func:`default_replay`): its
    bundle, with the importer's findings, excuses and rules given to the core, which scores it once.  Raises the
    reading's error when it holds no gradable bundle, and :class:`UnknownLabError` for an unknown lab or track."""
    bundle = submission.raise_for_error()
    lab = _lab_of(bundle)
    return grade(bundle, lab, rubric or default_rubric(lab.lab_id), replay or default_replay(),
                 mlsysim_version=mlsysim_version(), grader_version=__version__,
                 importer_findings=submission.findings, excuses=submission.excuses,
                 only_when_complete=submission.only_when_complete)


def read_submission(source: str | Path | bytes, *, name: str | None = None,
                    formats: Iterable[Format] | None = None, replay: Replay | None = None) -> Submission:
    """Read a submission in any accepted form (bundle JSON, Otter export zip, notebook with its bundle beside it or
    saved in its outputs, Gradescope upload folder, marimo JSON snapshot or Markdown report) from a path or bytes;
    never raises for a bad input (see :class:`mlsys_grader.intake.Submission`).  A marimo export's inferred controls
    are planned through ``replay`` (by default a live one of the reader's own)."""
    return _read_submission(source, name=name, formats=FORMATS if formats is None else formats, replay=replay)


def grade_file(path: str | Path, rubric: Rubric | None = None, *, formats: Iterable[Format] | None = None,
               replay: Replay | None = None) -> GradeReport:
    """Read a submission file in any accepted form (bounded reads; see :func:`read_submission`) and grade it.

    Raises what reading it raised (:class:`BundleFormatError` and its kinds, ``OSError``) when it holds no gradable
    bundle, or a form ``formats`` does not accept."""
    replay = replay or default_replay()
    return grade_submission(read_submission(path, formats=formats, replay=replay), rubric, replay=replay)


def read_bundle_bytes(path: str | Path, limit: int | None = None) -> bytes:
    """Read at most ``limit`` + 1 bytes, so an oversized file is rejected without loading it."""
    limit = MAX_BYTES if limit is None else limit
    with open(path, "rb") as handle:
        return handle.read(limit + 1)
