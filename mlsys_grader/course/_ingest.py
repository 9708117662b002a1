"""Find submissions in files and folders; each is read by the one reader of :mod:`mlsys_grader.intake`.

Two stages, so that the untrusted bytes are only ever opened inside a bounded worker:

* :func:`discover` walks the paths (no symlinks followed, hidden and ``__MACOSX``
  folders skipped) and returns one :class:`Candidate` per *input*: a bundle JSON, a
  marimo export (the JSON snapshot, or the Markdown report ``*report.md``), an Otter
  export zip, a notebook (which claims the ``<lab>-submission.json`` beside it, else is
  read for the bundle saved in its outputs), or one folder of a Gradescope "Export
  Submissions" download (whose ``submission_metadata.yml`` supplies names and emails).
* :func:`load_candidate` reads one candidate with :func:`mlsys_grader.intake.read_submission`
  (hard limits, content decides what it is) and returns its
  :class:`~mlsys_grader.intake.Submission`: the bundle, the content hash that identifies the
  input, its origin, the importer's findings and — when the input cannot be graded — the reason.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.models import submission_filename
from ..errors import BundleFormatError, ErrorKind, GraderError
from ..intake import (
    FORMATS,
    GRADESCOPE_METADATA,
    SKIP_DIRS,
    Format,
    Submission,
    bundle_beside,
    file_digest,
    is_markdown_report,
    is_submission_json,
    lab_hint,
    lab_named,
    lab_names,
    listdir,
    pick_primary,
    read_submission,
    refusal,
    walk_files,
)
from ..replay import Replay

__all__ = ["FORMATS", "Candidate", "Discovery", "Format", "Student", "discover", "discover_all", "file_digest",
           "lab_hint", "labs_named", "load_candidate", "read_gradescope_metadata", "refusal"]

MAX_METADATA_BYTES = 16 * 1024 * 1024

@dataclass(frozen=True)
class Student:
    """Who submitted, as far as the input says (Gradescope metadata); empty strings when unknown."""

    name: str = ""
    email: str = ""
    sid: str = ""
    submitted_at: datetime | None = None
    """Gradescope's ``created_at``: a time the student does not control."""


@dataclass(frozen=True)
class Candidate:
    """One input to grade, found by :func:`discover`; nothing in it has been read yet.

    ``kind`` is ``json`` (a bundle or a marimo JSON snapshot), ``markdown`` (a marimo
    Markdown report), ``zip`` (an Otter export), ``notebook`` (``primary`` is the bundle
    beside it, or None), ``gradescope`` (a submission folder; ``primary`` is the file
    chosen inside it, or None) or ``other`` (a file inside a folder whose name is none of
    the accepted kinds: its content is sniffed, and it is graded if it is a submission,
    else it is an ``unsupported`` row).  The kind only says how the input was found: what
    it holds is decided from its content when it is read (``Submission.origin``).  ``root``
    is the path given on the command line that the input was found under.
    """

    source: str
    kind: str
    primary: str | None
    student: Student = field(default_factory=Student)
    note: str = ""
    root: str = ""


@dataclass
class Discovery:
    """What :func:`discover_all` found: the inputs, and the files ignored by rule (path, why)."""

    candidates: list[Candidate]
    ignored: list[tuple[str, str]] = field(default_factory=list)


# -- discovery ---------------------------------------------------------------------

def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    return "zip" if suffix == ".zip" else "markdown" if suffix == ".md" else "json"


def read_gradescope_metadata(path: Path) -> dict[str, Student]:
    """Folder name → :class:`Student` from a Gradescope ``submission_metadata.yml``.

    Gradescope writes Ruby-symbol keys (``:submitters:``, ``:name:``); group submissions
    list several submitters, whose names and emails are joined with ``; ``.
    """
    import yaml  # PyYAML loads only for a Gradescope export: keeps `import mlsys_grader` fast

    if path.stat().st_size > MAX_METADATA_BYTES:
        raise BundleFormatError(f"{path} is {path.stat().st_size:,} bytes; expected a metadata file under {MAX_METADATA_BYTES:,}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise BundleFormatError(f"{path} is not readable YAML ({exc})") from exc
    if not isinstance(data, Mapping):
        raise BundleFormatError(f"{path}: expected a mapping of submission folders, got {type(data).__name__}")

    def plain(mapping: Any) -> dict[str, Any]:
        return {str(k).strip(":"): v for k, v in mapping.items()} if isinstance(mapping, Mapping) else {}

    students: dict[str, Student] = {}
    for folder, info in data.items():
        submitters = plain(info).get("submitters") or []
        people = [plain(person) for person in submitters if isinstance(person, Mapping)]
        students[str(folder)] = Student(
            name="; ".join(str(p.get("name") or "") for p in people).strip("; "),
            email="; ".join(str(p.get("email") or "") for p in people).strip("; "),
            sid="; ".join(str(p.get("sid") or "") for p in people).strip("; "),
            submitted_at=gradescope_time(plain(info).get("created_at")),
        )
    return students


_RUBY_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d+))?\s*(Z|[+-]\d\d:?\d\d)?$")


def gradescope_time(value: Any) -> datetime | None:
    """Gradescope's ``created_at`` (a YAML timestamp, or Ruby's ``2026-02-06 23:10:00.123456789 -0800``) as an aware
    datetime; None when absent, unreadable or without an offset (a time without one cannot be compared with a deadline)."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else None
    match = _RUBY_TIME.match(str(value or "").strip())
    if not match or not match[4]:
        return None
    offset = "+00:00" if match[4] == "Z" else match[4] if ":" in match[4] else f"{match[4][:3]}:{match[4][3:]}"
    fraction = f".{match[3][:6]:0<6}" if match[3] else ""
    try:
        return datetime.fromisoformat(f"{match[1]}T{match[2]}{fraction}{offset}")
    except ValueError:
        return None


def _gradescope_candidates(root: Path, found: Discovery, top: str) -> None:
    try:
        students = read_gradescope_metadata(root / GRADESCOPE_METADATA)
        problem = ""
    except (GraderError, OSError) as exc:
        students, problem = {}, f"metadata unreadable: {exc}"
    found.ignored.append((str(root / GRADESCOPE_METADATA), "Gradescope export metadata"))
    entries = listdir(root)
    folders = [e for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
               and e.name not in SKIP_DIRS]
    for entry in entries:
        if entry.is_file(follow_symlinks=False) and entry.name != GRADESCOPE_METADATA and not entry.name.startswith("."):
            found.ignored.append((entry.path, "a file beside the Gradescope submission folders"))
    for entry in folders:
        files = list(walk_files(Path(entry.path)))
        primary = pick_primary(files)
        found.ignored.extend((str(p), "a helper file in a Gradescope submission folder") for p in files if p != primary)
        found.candidates.append(Candidate(source=entry.path, kind="gradescope", primary=str(primary) if primary else None,
                                          student=students.get(entry.name, Student()), note=problem, root=top))


def _walked_folder(entry: os.DirEntry[str]) -> bool:
    """True for a folder discovery walks into: not a symlink, not hidden, not a system folder."""
    return entry.is_dir(follow_symlinks=False) and not entry.is_symlink() and not entry.name.startswith(".") \
        and entry.name not in SKIP_DIRS


def _visible_files(entries: Iterable[os.DirEntry[str]]) -> list[Path]:
    """The regular files among ``entries`` that are neither symlinks nor hidden, in order."""
    return [Path(e.path) for e in entries if e.is_file(follow_symlinks=False) and not e.is_symlink()
            and not e.name.startswith(".")]


def _bundle_for(notebook: Path, bundles: Mapping[str, Path], claimed: set[str]) -> str | None:
    """The name of the unclaimed bundle a notebook pairs with: the one of the lab its name mentions, else the first by
    name; None when there is none."""
    hint = lab_hint(notebook.name)
    names = [submission_filename(hint)] if hint else sorted(bundles)
    return next((n for n in names if n in bundles and n not in claimed), None)


def _notebook_candidates(notebooks: list[Path], bundles: Mapping[str, Path], found: Discovery, top: str) -> set[str]:
    """Adds each notebook with the bundle it claims (or ignores it); returns the names of the bundles claimed."""
    claimed: set[str] = set()
    for notebook in notebooks:
        name = _bundle_for(notebook, bundles, claimed)
        if name is None and bundles:
            # a helper notebook beside a paired one: the bundle is graded once, with its notebook
            found.ignored.append((str(notebook), "a notebook beside a bundle already paired with another notebook"))
            continue
        if name is not None:
            claimed.add(name)
        found.candidates.append(Candidate(source=str(notebook), kind="notebook", primary=str(bundles[name]) if name else None,
                                          root=top))
    return claimed


def _file_candidates(files: list[Path], claimed: set[str], found: Discovery, top: str, staff: frozenset[str]) -> None:
    """Adds every file that is neither a notebook nor a claimed bundle, ignoring the staff files."""
    for path in files:
        suffix = path.suffix.lower()
        if path.name in claimed or suffix == ".ipynb":
            continue
        if staff and os.path.realpath(path) in staff:  # realpath costs a syscall per component: only when there are staff files
            found.ignored.append((str(path), "a staff file (roster, manifest, course file or extensions)"))
            continue
        known = suffix in (".json", ".zip") or is_markdown_report(path.name)
        found.candidates.append(Candidate(source=str(path), kind=_kind(path) if known else "other", primary=str(path), root=top))


def _folder_candidates(root: Path, found: Discovery, top: str, staff: frozenset[str]) -> None:
    if (root / GRADESCOPE_METADATA).is_file():
        _gradescope_candidates(root, found, top)
        return
    entries = listdir(root)
    files = _visible_files(entries)
    notebooks = [p for p in files if p.suffix.lower() == ".ipynb"]
    bundles = {p.name: p for p in files if is_submission_json(p.name)}
    claimed = _notebook_candidates(notebooks, bundles, found, top)
    _file_candidates(files, claimed, found, top, staff)
    for entry in entries:
        if _walked_folder(entry):
            _folder_candidates(Path(entry.path), found, top, staff)


def _notebook_candidate(notebook: Path) -> Candidate:
    """A notebook named on the command line, with the ``<lab>-submission.json`` beside it if there is one."""
    beside = bundle_beside(notebook)
    return Candidate(source=str(notebook), kind="notebook", primary=str(beside) if beside else None)


def discover(paths: Iterable[str | os.PathLike[str]]) -> list[Candidate]:
    """Every input under ``paths`` (see :func:`discover_all`)."""
    return discover_all(paths).candidates


def discover_all(paths: Iterable[str | os.PathLike[str]], staff: frozenset[str] = frozenset()) -> Discovery:
    """Every input under ``paths``, in a stable order, each source once, and the files ignored by rule.

    A file named on the command line is always an input (whatever its name).  Inside
    folders every regular file is an input except the ones ignored by rule: a notebook
    beside a bundle another notebook claimed, the helper files of a Gradescope submission
    folder (one input per folder), the export's ``submission_metadata.yml``, and the
    staff files in ``staff`` (resolved paths).  Hidden files and folders, ``__MACOSX``,
    ``.ipynb_checkpoints``, ``__pycache__`` and ``.git`` are skipped unseen.  Symlinks are
    never followed.
    """
    found = Discovery([])
    for raw in paths:
        path = Path(raw)
        if path.is_symlink():
            found.candidates.append(Candidate(source=str(path), kind="json", primary=None, note="symlink refused", root=str(path)))
        elif path.is_dir():
            _folder_candidates(path, found, str(path), staff)
        elif path.suffix.lower() == ".ipynb":
            found.candidates.append(replace(_notebook_candidate(path), root=str(path)))
        else:
            found.candidates.append(Candidate(source=str(path), kind=_kind(path), primary=str(path), root=str(path)))
    seen: set[str] = set()
    unique = []
    for candidate in found.candidates:
        key = os.path.realpath(candidate.source)
        if key not in seen:
            seen.add(key)
            unique.append(candidate)
    found.candidates = unique
    return found


# -- loading -----------------------------------------------------------------------

def labs_named(candidates: Iterable[Candidate]) -> list[str] | None:
    """The labs a batch's inputs name (:func:`~mlsys_grader.intake.lab_named` of each file), sorted, or None when an
    input names none: a guess made before anything is read, so a batch readies only those labs' replay."""
    names, found = lab_names(), set()
    for candidate in candidates:
        lab = lab_named(candidate.primary or candidate.source, names)
        if lab is None:
            return None
        found.add(lab)
    return sorted(found)


def load_candidate(candidate: Candidate, known: frozenset[str] = frozenset(), formats: Iterable[Format] = FORMATS,
                   replay: Replay | None = None) -> Submission:
    """Read one candidate with the one reader; never raises for a bad input (the reason is in ``error``).

    When the input's hash is in ``known`` it is not parsed: ``origin`` is ``"known"``.  A form the course does
    not accept (``formats``) is refused (``error_kind`` ``FormatRefused``), keeping its origin.  A marimo export's
    inferred controls are planned through ``replay`` (the worker's own).
    """
    primary = candidate.primary
    if primary is None and candidate.kind == "notebook":
        primary = candidate.source  # no bundle beside it: the bundle saved in its outputs, if any
    if primary is None:
        digest = hashlib.sha256(f"missing:{candidate.source}".encode()).hexdigest()
        if candidate.kind == "gradescope":
            return Submission(digest, error="Gradescope submission folder holds no bundle JSON, Otter export zip or notebook",
                              error_kind=ErrorKind.MISSING_BUNDLE)
        return Submission(digest, error=f"input refused: {candidate.note or 'nothing to read'}", error_kind=ErrorKind.REFUSED)
    return read_submission(primary, formats=tuple(formats), known=known, sniff=candidate.kind == "other", replay=replay)
