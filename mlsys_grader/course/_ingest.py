"""Find submissions in files and folders and turn each into a bundle to grade.

Two stages, so that the untrusted bytes are only ever opened inside a bounded worker:

* :func:`discover` walks the paths (no symlinks followed, hidden and ``__MACOSX``
  folders skipped) and returns one :class:`Candidate` per *input*: a bundle JSON, a
  marimo export (the JSON snapshot, or the Markdown report ``*report.md``), an Otter
  export zip, a notebook (which claims the ``<lab>-submission.json`` beside it), or one
  folder of a Gradescope "Export Submissions" download (whose
  ``submission_metadata.yml`` supplies names and emails).
* :func:`load_candidate` reads one candidate with hard limits and returns a
  :class:`Loaded`: the bundle, the content hash that identifies the input, its origin
  (what the content is, whatever the file is called), the findings the importer made
  about the file itself (a marimo export checked against its own seals and copies, see
  :mod:`mlsys_grader.intake._marimo`), and — when the input cannot be graded — the reason.

Zips are read in memory, never extracted: the archive is bounded in size, members
whose names escape the archive root or that are symlinks make the whole zip refused,
and the one member read is bounded in size and compression ratio (zip bombs).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from ..core.jsonio import MAX_BYTES, loads_strict
from ..core.models import Bundle, bundle_from_mapping, submission_filename
from ..core.report import Finding
from ..errors import BundleFormatError, GraderError
from ..intake._marimo import (
    export_bundle,
    export_findings,
    export_from_json,
    export_from_markdown,
    is_snapshot,
    looks_like_markdown_report,
)
from ..labs import lab_ids

MAX_ZIP_BYTES = 64 * 1024 * 1024
"""An Otter export zip (notebook, bundle, a few logs) is far below this."""
MAX_ZIP_MEMBERS = 2_000
MAX_ZIP_TOTAL_UNCOMPRESSED = 512 * 1024 * 1024
MAX_COMPRESSION_RATIO = 100
"""Above this ratio a member larger than :data:`RATIO_MIN_BYTES` is treated as a zip bomb."""
RATIO_MIN_BYTES = 1024 * 1024
MAX_METADATA_BYTES = 16 * 1024 * 1024
HASH_CAP_BYTES = 64 * 1024 * 1024
"""Files larger than this are identified by the hash of their first 64 MiB plus their size."""

SKIP_DIRS = frozenset({"__MACOSX", ".ipynb_checkpoints", "__pycache__", ".git"})
GRADESCOPE_METADATA = "submission_metadata.yml"
MARKDOWN_REPORT_SUFFIX = "report.md"
"""Inside folders, a Markdown file is an input only when its name ends so (the lab downloads ``<lab_id>_report.md``)."""

Format = Literal["bundle", "otter", "marimo"]
FORMATS: tuple[Format, ...] = ("bundle", "otter", "marimo")
"""What a course can accept (``grade --formats``): the notebook's bundle JSON, an Otter export zip, a marimo export."""
ORIGIN_FORMATS: dict[str, frozenset[str]] = {
    "bundle": frozenset({"bundle"}),
    "otter": frozenset({"otter"}),
    "marimo-json": frozenset({"marimo"}),
    "marimo-md": frozenset({"marimo"}),
    "otter/marimo-json": frozenset({"otter", "marimo"}),
}
"""Each origin a loaded input can have → the formats a course must accept to grade it."""
ORIGIN_WORDS = {"bundle": "a submission bundle", "otter": "an Otter export zip", "marimo-json": "a marimo JSON snapshot",
                "marimo-md": "a marimo Markdown report", "otter/marimo-json": "an Otter zip holding a marimo JSON snapshot"}


def refusal(origin: str, formats: Iterable[str]) -> str | None:
    """Why a course accepting ``formats`` refuses an input of ``origin``, or None when it accepts it."""
    accepted = set(formats)
    needed = ORIGIN_FORMATS.get(origin, frozenset())
    if not needed or needed <= accepted:
        return None
    return (f"{ORIGIN_WORDS.get(origin, origin)} is not accepted by this course (--formats {','.join(f for f in FORMATS if f in accepted)}); "
            "submit the lab's <lab>-submission.json bundle from the course notebook instead")


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
    it holds is decided from its content when it is read (``Loaded.origin``).  ``root``
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


@dataclass
class Loaded:
    """What :func:`load_candidate` made of a candidate.

    ``origin`` is what the content is: ``bundle``, ``otter`` (a zip holding a bundle),
    ``marimo-json``, ``marimo-md`` or ``otter/marimo-json`` (see :data:`ORIGIN_FORMATS`).
    ``findings`` are the importer's own findings about the file, merged into its grade
    report by :func:`mlsys_grader.course._gradebook.grade_loaded`.
    """

    input_hash: str
    bundle: Bundle | None = None
    origin: str = ""
    error: str | None = None
    findings: tuple[Finding, ...] = ()
    error_kind: str = ""
    """The kind of failure when ``error`` is set: an error class name (``BundleFormatError``), or ``Unsupported``."""


# -- discovery ---------------------------------------------------------------------

def _is_submission_json(name: str) -> bool:
    return any(name == submission_filename(lab) for lab in lab_ids())


def lab_hint(name: str) -> str | None:
    """The lab a file or folder name mentions (``lab07.ipynb`` → ``lab07``), or None."""
    return next((lab for lab in lab_ids() if lab in name.lower()), None)


def _listdir(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:
        return []


def _walk_files(root: Path) -> Iterable[Path]:
    """Regular files under ``root`` (sorted, depth first), skipping symlinks and hidden entries."""
    for entry in _listdir(root):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in SKIP_DIRS:
                yield from _walk_files(Path(entry.path))
        elif entry.is_file(follow_symlinks=False):
            yield Path(entry.path)


def _is_markdown_report(name: str) -> bool:
    return name.lower().endswith(MARKDOWN_REPORT_SUFFIX)


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    return "zip" if suffix == ".zip" else "markdown" if suffix == ".md" else "json"


def _pick_primary(files: list[Path]) -> Path | None:
    """The file to grade in a Gradescope folder: a ``<lab>-submission.json``, else a zip, else any JSON,
    else a marimo Markdown report."""
    for test in (lambda p: _is_submission_json(p.name), lambda p: p.suffix.lower() == ".zip",
                 lambda p: p.suffix.lower() == ".json", lambda p: _is_markdown_report(p.name)):
        chosen = [p for p in files if test(p)]
        if chosen:
            return chosen[0]
    return None


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
    entries = _listdir(root)
    folders = [e for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
               and e.name not in SKIP_DIRS]
    for entry in entries:
        if entry.is_file(follow_symlinks=False) and entry.name != GRADESCOPE_METADATA and not entry.name.startswith("."):
            found.ignored.append((entry.path, "a file beside the Gradescope submission folders"))
    for entry in folders:
        files = list(_walk_files(Path(entry.path)))
        primary = _pick_primary(files)
        found.ignored.extend((str(p), "a helper file in a Gradescope submission folder") for p in files if p != primary)
        found.candidates.append(Candidate(source=entry.path, kind="gradescope", primary=str(primary) if primary else None,
                                          student=students.get(entry.name, Student()), note=problem, root=top))


def _folder_candidates(root: Path, found: Discovery, top: str, staff: frozenset[str]) -> None:
    if (root / GRADESCOPE_METADATA).is_file():
        _gradescope_candidates(root, found, top)
        return
    entries = _listdir(root)
    files = [Path(e.path) for e in entries if e.is_file(follow_symlinks=False) and not e.is_symlink()
             and not e.name.startswith(".")]
    notebooks = [p for p in files if p.suffix.lower() == ".ipynb"]
    bundles = {p.name: p for p in files if _is_submission_json(p.name)}
    claimed: set[str] = set()
    for notebook in notebooks:
        hint = lab_hint(notebook.name)
        names = [submission_filename(hint)] if hint else sorted(bundles)
        name = next((n for n in names if n in bundles and n not in claimed), None)
        if name is None and bundles:
            # a helper notebook beside a paired one: the bundle is graded once, with its notebook
            found.ignored.append((str(notebook), "a notebook beside a bundle already paired with another notebook"))
            continue
        if name is not None:
            claimed.add(name)
        found.candidates.append(Candidate(source=str(notebook), kind="notebook", primary=str(bundles[name]) if name else None,
                                          root=top))
    for path in files:
        suffix = path.suffix.lower()
        if path.name in claimed or suffix == ".ipynb":
            continue
        if staff and os.path.realpath(path) in staff:  # realpath costs a syscall per component: only when there are staff files
            found.ignored.append((str(path), "a staff file (roster, manifest, course file or extensions)"))
            continue
        known = suffix in (".json", ".zip") or _is_markdown_report(path.name)
        found.candidates.append(Candidate(source=str(path), kind=_kind(path) if known else "other", primary=str(path), root=top))
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and not entry.is_symlink() and not entry.name.startswith(".") \
                and entry.name not in SKIP_DIRS:
            _folder_candidates(Path(entry.path), found, top, staff)


def _notebook_candidate(notebook: Path) -> Candidate:
    """A notebook named on the command line, with the ``<lab>-submission.json`` beside it if there is one."""
    hint = lab_hint(notebook.name)
    names = [submission_filename(hint)] if hint else [submission_filename(lab) for lab in lab_ids()]
    beside = next((notebook.parent / n for n in names
                   if (notebook.parent / n).is_file() and not (notebook.parent / n).is_symlink()), None)
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

def file_digest(path: str | os.PathLike[str], cap: int = HASH_CAP_BYTES) -> str:
    """SHA-256 of a file's bytes (of its first ``cap`` bytes plus its size when larger)."""
    digest = hashlib.sha256()
    read = 0
    with open(path, "rb") as handle:
        while read < cap:
            chunk = handle.read(min(1 << 20, cap - read))
            if not chunk:
                break
            digest.update(chunk)
            read += len(chunk)
        if handle.read(1):
            digest.update(f"|size={os.fstat(handle.fileno()).st_size}".encode())
    return digest.hexdigest()


def _read_bounded(path: str, limit: int, what: str) -> tuple[bytes, str, str | None]:
    """(bytes, SHA-256 of the file, error) reading at most ``limit`` + 1 bytes; symlinks refused.  On an error
    no bytes are kept."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            return b"", file_digest(path), f"{what} is {size:,} bytes; it must be at most {limit:,} bytes"
        data = handle.read(limit + 1)
    if len(data) > limit:
        return b"", file_digest(path), f"{what} grew past {limit:,} bytes while being read"
    return data, hashlib.sha256(data).hexdigest(), None


def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or "\\" in name or ".." in parts or (parts and ":" in parts[0]):
        return f"member {name!r} escapes the archive root (path traversal)"
    if stat.S_ISLNK(info.external_attr >> 16):
        return f"member {name!r} is a symbolic link"
    return None


def _zip_member_bytes(data: bytes, source: str) -> tuple[bytes, str]:
    """The bundle (or report) JSON inside an Otter export zip, read in memory with limits."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        raise BundleFormatError(f"{source} is not a readable zip archive ({exc}); expected an Otter export zip") from exc
    if len(infos) > MAX_ZIP_MEMBERS:
        raise BundleFormatError(f"zip holds {len(infos):,} members; an Otter export has at most {MAX_ZIP_MEMBERS:,}")
    total = 0
    for info in infos:
        problem = _unsafe_member(info)
        if problem:
            raise BundleFormatError(f"hostile zip refused: {problem}")
        total += info.file_size
        ratio = info.file_size / info.compress_size if info.compress_size else float("inf")
        if info.file_size > RATIO_MIN_BYTES and ratio > MAX_COMPRESSION_RATIO:
            raise BundleFormatError(
                f"zip bomb refused: member {info.filename!r} expands {info.compress_size:,} bytes to {info.file_size:,} "
                f"(ratio {ratio:,.0f}; at most {MAX_COMPRESSION_RATIO} allowed)")
    if total > MAX_ZIP_TOTAL_UNCOMPRESSED:
        raise BundleFormatError(f"zip bomb refused: members expand to {total:,} bytes; at most {MAX_ZIP_TOTAL_UNCOMPRESSED:,} allowed")
    files = [info for info in infos if not info.is_dir()]
    root = {info.filename: info for info in files if "/" not in info.filename}
    chosen = next((root[submission_filename(lab)] for lab in lab_ids() if submission_filename(lab) in root), None)
    if chosen is None:
        nested = [info for info in files if _is_submission_json(info.filename.rsplit("/", 1)[-1])]
        chosen = nested[0] if len(nested) == 1 else None
    if chosen is None:
        names = ", ".join(info.filename for info in files[:6]) or "nothing"
        expected = " or ".join(submission_filename(lab) for lab in lab_ids())
        raise BundleFormatError(f"zip holds no {expected} at its root (found: {names}); export again after saving the bundle")
    if chosen.file_size > MAX_BYTES:
        raise BundleFormatError(f"zip member {chosen.filename!r} is {chosen.file_size:,} bytes; a bundle is at most {MAX_BYTES:,}")
    try:
        with archive.open(chosen) as handle:
            content = handle.read(MAX_BYTES + 1)
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError, OSError, ValueError) as exc:
        raise BundleFormatError(f"zip member {chosen.filename!r} cannot be read ({exc})") from exc
    if len(content) > MAX_BYTES:
        raise BundleFormatError(f"zip member {chosen.filename!r} expands past {MAX_BYTES:,} bytes (its header claimed less)")
    return content, chosen.filename


def read_submission(data: bytes) -> tuple[Bundle, str, tuple[Finding, ...]]:
    """(bundle, origin, importer findings) from the bytes of a bundle JSON or a marimo export.

    What the bytes are is read from their content, never from a file name: a submission
    bundle (``schema_version`` …), a marimo JSON snapshot (``result_snapshot.captures``)
    or a marimo Markdown report (its embedded snapshot).  Raises :class:`BundleFormatError`
    naming all three when it is none of them.
    """
    if looks_like_markdown_report(data):
        export = export_from_markdown(data)
        return export_bundle(export), export.origin, tuple(export_findings(export))
    value = loads_strict(data)
    if isinstance(value, Mapping) and "schema_version" in value:
        return bundle_from_mapping(value), "bundle", ()
    if is_snapshot(value):
        export = export_from_json(value)
        return export_bundle(export), export.origin, tuple(export_findings(export))
    keys = sorted(value)[:8] if isinstance(value, Mapping) else type(value).__name__
    raise BundleFormatError(
        "JSON is neither a submission bundle (schema_version, lab, track, evidence) nor a marimo lab export "
        f"(result_snapshot.captures, or the Markdown report that embeds it); got {keys}")


def load_candidate(candidate: Candidate, known: frozenset[str] = frozenset(), formats: Iterable[str] = FORMATS) -> Loaded:
    """Read and parse one candidate; never raises for a bad input (the reason is in ``error``).

    When the input's hash is in ``known`` it is not parsed: ``origin`` is ``"known"``.
    """
    primary = candidate.primary
    if primary is None:
        digest = hashlib.sha256(f"missing:{candidate.source}".encode()).hexdigest()
        if candidate.kind == "notebook":
            expected = " or ".join(submission_filename(lab) for lab in lab_ids())
            return Loaded(digest, error=f"notebook has no {expected} beside it; run its save cell and submit the bundle too",
                          error_kind="MissingBundle")
        if candidate.kind == "gradescope":
            return Loaded(digest, error="Gradescope submission folder holds no bundle JSON or Otter export zip",
                          error_kind="MissingBundle")
        return Loaded(digest, error=f"input refused: {candidate.note or 'nothing to read'}", error_kind="Refused")
    other = candidate.kind == "other"
    is_zip = primary.lower().endswith(".zip")
    try:
        if other:
            with open(primary, "rb") as handle:
                is_zip = handle.read(4) == b"PK\x03\x04"  # a zip under another name is read as one
        data, digest, problem = _read_bounded(primary, MAX_ZIP_BYTES if is_zip else MAX_BYTES, "zip" if is_zip else "submission")
    except OSError as exc:
        digest = hashlib.sha256(f"unreadable:{primary}".encode()).hexdigest()
        return Loaded(digest, error=f"cannot read {primary}: {exc.strerror or exc}", error_kind="OSError")
    if problem is not None:
        return Loaded(digest, error=problem, error_kind="Unsupported" if other else "BundleTooLargeError")
    try:
        if is_zip:
            data, _member = _zip_member_bytes(data, primary)
            digest = hashlib.sha256(data).hexdigest()  # the bundle inside identifies the input, not the zip's timestamps
        if digest in known:
            return Loaded(digest, origin="known")
        bundle, origin, findings = read_submission(data)
        return Loaded(digest, bundle, f"otter/{origin}".replace("otter/bundle", "otter") if is_zip else origin, findings=findings)
    except GraderError as exc:
        if other:
            return Loaded(digest, error=unsupported_reason(primary, data, formats), error_kind="Unsupported")
        return Loaded(digest, error=str(exc), error_kind=type(exc).__name__)


ACCEPTED_WORDS = {"bundle": "the notebook's <lab>-submission.json bundle", "otter": "an Otter export zip",
                  "marimo": "the book's marimo export (JSON snapshot or *report.md)"}
_MAGIC = ((b"%PDF", "a PDF document"), (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
          (b"PK\x03\x04", "a zip archive"), (b"\xd0\xcf\x11\xe0", "an Office document"))


def unsupported_reason(path: str, data: bytes, formats: Iterable[str] = FORMATS) -> str:
    """Why a file in no accepted format is not graded, naming what it looks like and the formats accepted."""
    looks = next((words for magic, words in _MAGIC if data.startswith(magic)), None)
    if looks is None:
        looks = "a text file" if data and b"\x00" not in data[:4096] else "an empty file" if not data else "a binary file"
    accepted = "; ".join(ACCEPTED_WORDS[f] for f in FORMATS if f in set(formats))
    return f"{Path(path).name} is {looks}, not a submission in an accepted format ({accepted})"
