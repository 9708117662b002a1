"""One reader for every form a submission arrives in, used by every edge.

:func:`read_submission` takes a path or the bytes of a file and returns one
:class:`Submission`: the bundle (or None), what the content was read as (``origin``), the
findings the importer made about the file itself, the excuses and rules it hands the core
(:func:`mlsys_grader.core.grading.grade`), and — when the input cannot be graded — why.
What an input is comes from its content, never from its name:

* a **bundle** JSON (``schema_version`` …): origin ``bundle``;
* an **Otter export zip** (``<lab>_<timestamp>.zip`` holding the notebook and
  ``<lab>-submission.json``): the bundle inside, origin ``otter`` (``otter/marimo-json``
  when the zip holds a marimo snapshot under that name);
* a **notebook**: the ``<lab>-submission.json`` beside it (path input; origin ``bundle``),
  else the latest bundle the student API embedded in its outputs (:mod:`mlsys_grader.core.embed`;
  origin ``notebook``);
* a **Gradescope upload folder**: the file chosen inside it (:func:`pick_primary`), read as above;
* the book's **marimo** exports: the JSON snapshot (``marimo-json``) and the Markdown report
  (``marimo-md``), checked against their own seals and copies (:mod:`._marimo`).

Nothing in a submission is executed, imported or unpickled: JSON is parsed strictly, files
are read with bounds and without following symlinks, and zips are read in memory, never
extracted: the archive is bounded in size, members whose names escape the archive root or
that are symlinks make the whole zip refused, and the one member read is bounded in size
and compression ratio (zip bombs).
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
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from ..core.audits import LOCK_TIMES
from ..core.embed import bundle_from_outputs
from ..core.grading import Excuse, OnlyWhenComplete
from ..core.jsonio import MAX_BYTES, loads_strict
from ..core.models import Bundle, bundle_from_mapping, submission_filename
from ..core.replayer import Replayer
from ..core.report import Finding
from ..errors import BundleFormatError, BundleTooLargeError, ErrorKind, GraderError
from ..labs import get_lab, lab_ids
from ._marimo import (
    IMPOSSIBLE,
    export_bundle,
    export_findings,
    export_from_json,
    export_from_markdown,
    is_snapshot,
    looks_like_markdown_report,
)

MAX_ZIP_BYTES = 64 * 1024 * 1024
"""An Otter export zip (notebook, bundle, a few logs) is far below this."""
MAX_ZIP_MEMBERS = 2_000
MAX_ZIP_TOTAL_UNCOMPRESSED = 512 * 1024 * 1024
MAX_COMPRESSION_RATIO = 100
"""Above this ratio a member larger than :data:`RATIO_MIN_BYTES` is treated as a zip bomb."""
RATIO_MIN_BYTES = 1024 * 1024
MAX_NOTEBOOK_BYTES = 8 * MAX_BYTES
"""A notebook carries its outputs (plots, tables) besides the bundle, so it may be larger than one."""
HASH_CAP_BYTES = 64 * 1024 * 1024
"""Files larger than this are identified by the hash of their first 64 MiB plus their size."""
MAX_FOLDER_FILES = 500
"""A Gradescope upload folder with more files than this is looked at only for its first ones."""

GRADESCOPE_METADATA = "submission_metadata.yml"
"""The file at the root of a Gradescope "Export Submissions" download (one folder per submission beside it)."""
SKIP_DIRS = frozenset({"__MACOSX", ".ipynb_checkpoints", "__pycache__", ".git"})
MARKDOWN_REPORT_SUFFIX = "report.md"
"""Inside folders, a Markdown file is an input only when its name ends so (the lab downloads ``<lab_id>_report.md``)."""
ZIP_MAGIC = b"PK\x03\x04"

Format = Literal["bundle", "otter", "marimo"]
FORMATS: tuple[Format, ...] = ("bundle", "otter", "marimo")
"""What a course can accept (``grade --formats``): the notebook's bundle JSON (or the notebook that embeds it),
an Otter export zip, a marimo export."""
ORIGIN_FORMATS: dict[str, frozenset[str]] = {
    "bundle": frozenset({"bundle"}),
    "notebook": frozenset({"bundle"}),
    "otter": frozenset({"otter"}),
    "marimo-json": frozenset({"marimo"}),
    "marimo-md": frozenset({"marimo"}),
    "otter/marimo-json": frozenset({"otter", "marimo"}),
}
"""Each origin a read input can have → the formats a course must accept to grade it."""
ORIGIN_WORDS = {"bundle": "a submission bundle", "notebook": "a notebook's saved bundle", "otter": "an Otter export zip",
                "marimo-json": "a marimo JSON snapshot", "marimo-md": "a marimo Markdown report",
                "otter/marimo-json": "an Otter zip holding a marimo JSON snapshot"}
ACCEPTED_FORMS = ("a submission bundle, an Otter export zip, a notebook with its bundle beside it or saved in its "
                  "outputs, a Gradescope upload folder, or a marimo export")
ACCEPTED_WORDS = {"bundle": "the notebook's <lab>-submission.json bundle", "otter": "an Otter export zip",
                  "marimo": "the book's marimo export (JSON snapshot or *report.md)"}
_MAGIC = ((b"%PDF", "a PDF document"), (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
          (ZIP_MAGIC, "a zip archive"), (b"\xd0\xcf\x11\xe0", "an Office document"))

LOCK_TIME_NOTE = ("Predictions in a marimo export carry no lock time: the lab shows a part's result only after a prediction "
                  "is chosen, so prediction_locked is not charged for this export; nothing to do.")
LOCK_TIME_EXCUSE = Excuse("prediction.no_lock_times", LOCK_TIME_NOTE, expected=LOCK_TIMES, lacking="no lock time")
"""The book's marimo labs show a part's result only after a prediction is chosen and record no times, so their
evidence is not charged for lacking them.  Only an input whose content is a marimo export earns it, and a course that
does not accept marimo exports (``grade --formats bundle,otter``) refuses those, so a hand-converted bundle cannot
borrow it."""
MARIMO_COMPLETE = OnlyWhenComplete((("missing", IMPOSSIBLE["missing"]), ("stale", IMPOSSIBLE["stale"]),
                                    ("contrast", IMPOSSIBLE["contrast"])),
                                   "recapture it in the lab and download the report again.")
"""The book's marimo labs download a report only once every part is captured, current and contrasting."""


@dataclass(frozen=True)
class Submission:
    """What :func:`read_submission` made of one input.

    ``origin`` is what the content is (a key of :data:`ORIGIN_FORMATS`), ``"known"`` when its
    hash was in the caller's ``known`` set (not parsed), or ``""`` when it could not be read.
    ``findings`` are the importer's own findings about the file, ``excuses`` and
    ``only_when_complete`` what the core must know of its kind; all three go to
    :func:`mlsys_grader.core.grading.grade`.  ``input_hash`` identifies the input: the SHA-256
    of the bundle bytes read (inside a zip or a notebook: of that bundle, not of the container).
    When the input cannot be graded ``bundle`` is None, ``error`` one sentence and
    ``error_kind`` the kind: an error class name (``BundleFormatError``), ``MissingBundle``,
    ``Unsupported`` (a file in no accepted form), ``FormatRefused`` (a form the course does not
    accept) or ``Refused``.  ``source`` says where the bundle was found, for messages.
    """

    input_hash: str
    bundle: Bundle | None = None
    origin: str = ""
    error: str | None = None
    findings: tuple[Finding, ...] = ()
    error_kind: ErrorKind | None = None
    excuses: tuple[Excuse, ...] = ()
    only_when_complete: OnlyWhenComplete | None = None
    source: str = ""
    exception: GraderError | OSError | None = field(default=None, compare=False, repr=False)
    """The error behind ``error`` when one was raised while reading (it keeps its data: ``field``, ``expected`` …)."""

    @property
    def gradable(self) -> bool:
        """True when there is a bundle to grade and nothing refused it."""
        return self.bundle is not None and self.error is None

    def raise_for_error(self) -> Bundle:
        """The bundle; raises the reading's own error (a :class:`GraderError` or ``OSError``) when there is none, or
        :class:`BundleFormatError` naming the accepted forms for an input in none of them."""
        if self.exception is not None:
            raise self.exception
        if self.error is not None or self.bundle is None:
            raise BundleFormatError(self.error or "the input holds no bundle", expected=ACCEPTED_FORMS,
                                    got=self.error_kind or self.origin or None)
        return self.bundle


def refusal(origin: str, formats: Iterable[str]) -> str | None:
    """Why a course accepting ``formats`` refuses an input of ``origin``, or None when it accepts it."""
    accepted = set(formats)
    needed = ORIGIN_FORMATS.get(origin, frozenset())
    if not needed or needed <= accepted:
        return None
    return (f"{ORIGIN_WORDS.get(origin, origin)} is not accepted by this course (--formats {','.join(f for f in FORMATS if f in accepted)}); "
            "submit the lab's <lab>-submission.json bundle from the course notebook instead")


def unsupported_reason(path: str, data: bytes, formats: Iterable[str] = FORMATS) -> str:
    """Why a file in no accepted format is not graded, naming what it looks like and the formats accepted."""
    looks = next((words for magic, words in _MAGIC if data.startswith(magic)), None)
    if looks is None:
        looks = "a text file" if data and b"\x00" not in data[:4096] else "an empty file" if not data else "a binary file"
    accepted = "; ".join(ACCEPTED_WORDS[f] for f in FORMATS if f in set(formats))
    return f"{Path(path).name} is {looks}, not a submission in an accepted format ({accepted})"


def expected_bundles() -> str:
    """``lab07-submission.json or lab11-submission.json``: the bundle names of every registered lab."""
    return " or ".join(submission_filename(lab) for lab in lab_ids())


# -- files and folders -------------------------------------------------------------

def is_submission_json(name: str) -> bool:
    """True for ``<lab>-submission.json`` of a registered lab."""
    return any(name == submission_filename(lab) for lab in lab_ids())


def is_markdown_report(name: str) -> bool:
    return name.lower().endswith(MARKDOWN_REPORT_SUFFIX)


def lab_hint(name: str) -> str | None:
    """The lab a file or folder name mentions (``lab07.ipynb`` → ``lab07``), or None."""
    return next((lab for lab in lab_ids() if lab in name.lower()), None)


SNIFF_BYTES = 1024 * 1024
"""How much of a file :func:`lab_named` looks at: a bundle names its lab in its first line; a notebook, wherever its
saved bundle sits in the first MiB."""
_LAB_FIELD = re.compile(rb'"lab(?:_id)?"\s*:\s*"([A-Za-z0-9_.-]{1,64})"|^- Lab ID: ([A-Za-z0-9_.-]{1,64})\r?$', re.M)
"""A bundle's ``"lab": "lab07"``, a marimo snapshot's ``"lab_id": "v1_07_framework_tax"``, its report's ``- Lab ID:``."""


def lab_names() -> dict[str, str]:
    """Every name a file may give a registered lab by → its lab id: the id itself and, for a lab with a marimo export,
    the book's lab id (``v1_07_framework_tax``)."""
    names = {lab_id: lab_id for lab_id in lab_ids()}
    for lab_id in list(names):
        try:
            layout = get_lab(lab_id).marimo_layout
        except Exception:  # a lab that does not load: its inputs say so when they are read
            continue
        if layout is not None:
            names[layout.book_lab_id] = lab_id
    return names


def lab_named(path: str | os.PathLike[str], names: Mapping[str, str] | None = None) -> str | None:
    """The registered lab the file at ``path`` names in its first :data:`SNIFF_BYTES` (a bundle's or a notebook's saved
    bundle's ``lab``, the book's lab id in a marimo export; ``names``: :func:`lab_names`, passed by a caller that asks
    about many files), else the one its name mentions (:func:`lab_hint`), else None; never raises, never blocks.
    Nothing is parsed: it is a guess made before any input is read, which only chooses the labs a batch readies before
    its workers start; what an input holds is decided when it is read."""
    names = lab_names() if names is None else names
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                for match in _LAB_FIELD.finditer(handle.read(SNIFF_BYTES)):
                    if (named := names.get((match.group(1) or match.group(2)).decode("ascii"))) is not None:
                        return named
    except OSError:
        pass
    return lab_hint(os.path.basename(path))


def listdir(path: Path) -> list[os.DirEntry]:
    """The entries of ``path`` sorted by name; empty when it cannot be listed."""
    try:
        with os.scandir(path) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:
        return []


def walk_files(root: Path) -> Iterable[Path]:
    """Regular files under ``root`` (sorted, depth first), skipping symlinks, hidden entries and system folders."""
    for entry in listdir(root):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in SKIP_DIRS:
                yield from walk_files(Path(entry.path))
        elif entry.is_file(follow_symlinks=False):
            yield Path(entry.path)


def pick_primary(files: list[Path]) -> Path | None:
    """The file to grade in a Gradescope submission folder: a ``<lab>-submission.json``, else a zip, else any JSON,
    else a marimo Markdown report, else a notebook (its saved bundle)."""
    for test in (lambda p: is_submission_json(p.name), lambda p: p.suffix.lower() == ".zip",
                 lambda p: p.suffix.lower() == ".json", lambda p: is_markdown_report(p.name),
                 lambda p: p.suffix.lower() == ".ipynb"):
        chosen = [p for p in files if test(p)]
        if chosen:
            return chosen[0]
    return None


def bundle_beside(notebook: Path) -> Path | None:
    """The ``<lab>-submission.json`` beside a notebook (the lab its name mentions, else any lab's), or None."""
    hint = lab_hint(notebook.name)
    names = [submission_filename(hint)] if hint else [submission_filename(lab) for lab in lab_ids()]
    return next((notebook.parent / n for n in names
                 if (notebook.parent / n).is_file() and not (notebook.parent / n).is_symlink()), None)


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


def read_bounded(path: str | os.PathLike[str], limit: int, what: str) -> tuple[bytes, str, str | None]:
    """(bytes, SHA-256 of the file, error) reading at most ``limit`` + 1 bytes; a symlink, FIFO, device or folder is
    refused (``OSError``), without blocking.  On an error no bytes are kept."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{os.path.basename(path)} is not a regular file")
        size = info.st_size
        if size > limit:
            bound = "a bundle" if what == "submission" else "it"  # as the JSON reader says it (core.jsonio)
            return b"", file_digest(path), f"{what} is {size:,} bytes; {bound} must be at most {limit:,} bytes"
        data = handle.read(limit + 1)
    if len(data) > limit:
        return b"", file_digest(path), f"{what} grew past {limit:,} bytes while being read"
    return data, hashlib.sha256(data).hexdigest(), None


# -- zips --------------------------------------------------------------------------

def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or "\\" in name or ".." in parts or (parts and ":" in parts[0]):
        return f"member {name!r} escapes the archive root (path traversal)"
    if stat.S_ISLNK(info.external_attr >> 16):
        return f"member {name!r} is a symbolic link"
    return None


def zip_member_bytes(data: bytes, source: str) -> tuple[bytes, str]:
    """(content, member name) of the ``<lab>-submission.json`` inside an Otter export zip, read in memory with limits.

    Raises :class:`BundleFormatError` for an unreadable or hostile zip (path traversal, symlinks, bombs, too many
    members) and for one that holds no bundle, naming what it holds.
    """
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
        nested = [info for info in files if is_submission_json(info.filename.rsplit("/", 1)[-1])]
        chosen = nested[0] if len(nested) == 1 else None
    if chosen is None:
        names = ", ".join(info.filename for info in files[:6]) or "nothing"
        raise BundleFormatError(f"zip holds no {expected_bundles()} at its root (found: {names}); export again after saving the bundle")
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


# -- content -----------------------------------------------------------------------

def is_notebook(value: Any) -> bool:
    """True for a parsed ``.ipynb`` (a JSON object with a list of ``cells`` and an ``nbformat`` number)."""
    return isinstance(value, Mapping) and isinstance(value.get("cells"), list) and "nbformat" in value


def notebook_bundle_text(notebook: Mapping[str, Any]) -> str | None:
    """The JSON text of the latest bundle embedded in a parsed notebook's outputs, or None (untrusted: parse it)."""
    latest = bundle_from_outputs(notebook)
    return latest.text if latest is not None else None


def _no_saved_bundle(where: str) -> str:
    return (f"{where} has no {expected_bundles()} beside it and no bundle saved in its outputs; "
            "run its save cell and submit the bundle too")


def parse_submission(data: bytes, *, notebook: bool = False, digest: str | None = None,
                     replay: Replayer | None = None) -> Submission:
    """A :class:`Submission` from the bytes of a bundle JSON, a marimo export or a notebook; raises
    :class:`GraderError` (naming every accepted form) when the bytes are none of them.

    ``input_hash`` is the SHA-256 of ``data`` (of the embedded bundle, for a notebook).  ``notebook``: the file is
    named as a notebook, so a JSON object that is neither a bundle nor a marimo export is read as one (with no
    saved bundle unless its outputs hold one).  ``digest``: the SHA-256 of ``data`` when the caller has it.
    ``replay``: what a marimo export's inferred controls are planned through (the caller's; by default a live one).
    """
    digest = digest or hashlib.sha256(data).hexdigest()
    if looks_like_markdown_report(data):
        export = export_from_markdown(data)
        return _marimo(digest, export, replay)
    if len(data) > MAX_BYTES:  # a notebook may be larger than a bundle: parsed as one only if it is one
        value = loads_strict(data, max_bytes=MAX_NOTEBOOK_BYTES)
        if not is_notebook(value):
            loads_strict(data)  # raises the bundle's own size error
    else:
        value = loads_strict(data)
    if isinstance(value, Mapping) and "schema_version" in value:
        return Submission(digest, bundle_from_mapping(value), "bundle")
    if is_snapshot(value):
        return _marimo(digest, export_from_json(value), replay)
    if is_notebook(value) or (notebook and isinstance(value, Mapping)):
        text = notebook_bundle_text(value)
        if text is None:
            return Submission(digest, error=_no_saved_bundle("notebook"), error_kind=ErrorKind.MISSING_BUNDLE)
        inner = text.encode("utf-8")
        return Submission(hashlib.sha256(inner).hexdigest(), _bundle_of(inner), "notebook",
                          source="the bundle saved in the notebook's outputs")
    keys = sorted(value)[:8] if isinstance(value, Mapping) else type(value).__name__
    raise BundleFormatError(
        "JSON is neither a submission bundle (schema_version, lab, track, evidence), a notebook with a saved bundle, "
        f"nor a marimo lab export (result_snapshot.captures, or the Markdown report that embeds it); got {keys}",
        expected=ACCEPTED_FORMS, got=str(keys))


def _bundle_of(data: bytes) -> Bundle:
    return bundle_from_mapping(loads_strict(data))


def _marimo(digest: str, export: Any, replay: Replayer | None) -> Submission:
    return Submission(digest, export_bundle(export, replay), export.origin, findings=tuple(export_findings(export)),
                      excuses=(LOCK_TIME_EXCUSE,), only_when_complete=MARIMO_COMPLETE)


def _read_bytes(data: bytes, name: str, formats: Iterable[str], known: frozenset[str], sniffed: bool,
                digest: str | None = None, replay: Replayer | None = None) -> Submission:
    """Read in-memory bytes (``name`` for messages; ``digest``: their SHA-256 when the caller has it); ``sniffed``: the
    bytes came under a name that is no accepted kind."""
    digest = digest or hashlib.sha256(data).hexdigest()
    is_zip = data.startswith(ZIP_MAGIC) or name.lower().endswith(".zip")
    try:
        if is_zip:
            data, member = zip_member_bytes(data, name)
            digest = hashlib.sha256(data).hexdigest()  # the bundle inside identifies the input, not the zip's timestamps
        if digest in known:
            return Submission(digest, origin="known")
        read = parse_submission(data, notebook=name.lower().endswith(".ipynb"), digest=digest, replay=replay)
    except GraderError as exc:
        if sniffed:
            return Submission(digest, error=unsupported_reason(name, data, formats), error_kind=ErrorKind.UNSUPPORTED)
        return Submission(digest, error=str(exc), error_kind=ErrorKind.of(exc), exception=exc)
    if is_zip:
        origin = "otter" if read.origin in ("bundle", "notebook") else f"otter/{read.origin}"
        read = replace(read, origin=origin, source=f"{member} inside {Path(name).name}")
    refused = refusal(read.origin, formats) if read.bundle is not None else None
    if refused is not None:
        return replace(read, bundle=None, error=refused, error_kind=ErrorKind.FORMAT_REFUSED)
    return read


def _head(path: Path) -> bytes:
    """The first 4 bytes of a regular file; ``OSError`` for a symlink, FIFO, device or folder (never blocks)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return handle.read(4)


def _read_path(path: Path, formats: Iterable[str], known: frozenset[str], sniff: bool,
               replay: Replayer | None = None) -> Submission:
    name = str(path)
    try:
        if path.is_symlink():
            return Submission(hashlib.sha256(f"symlink:{path}".encode()).hexdigest(), error="input refused: symlink refused",
                              error_kind=ErrorKind.REFUSED)
        if path.is_dir():
            if (path / GRADESCOPE_METADATA).is_file():
                return Submission(hashlib.sha256(f"export:{path}".encode()).hexdigest(), error_kind=ErrorKind.REFUSED,
                                  error=f"{path} is a Gradescope export of many submissions ({GRADESCOPE_METADATA}); "
                                        "grade it with `mlsys-grader grade`, or check one submission folder in it")
            primary = pick_primary(list(islice(walk_files(path), MAX_FOLDER_FILES)))
            if primary is None:
                return Submission(hashlib.sha256(f"missing:{path}".encode()).hexdigest(),
                                  error="Gradescope submission folder holds no bundle JSON, Otter export zip or notebook",
                                  error_kind=ErrorKind.MISSING_BUNDLE)
            return _read_path(primary, formats, known, sniff=False, replay=replay)
        if path.suffix.lower() == ".ipynb":
            beside = bundle_beside(path)
            if beside is not None:
                return _read_path(beside, formats, known, sniff=False, replay=replay)
        is_zip = path.suffix.lower() == ".zip" or _head(path) == ZIP_MAGIC
        is_notebook_file = path.suffix.lower() == ".ipynb"
        limit = MAX_ZIP_BYTES if is_zip else MAX_NOTEBOOK_BYTES if is_notebook_file else MAX_BYTES
        what = "zip" if is_zip else "notebook" if is_notebook_file else "submission"
        data, digest, problem = read_bounded(path, limit, what)
    except OSError as exc:
        digest = hashlib.sha256(f"unreadable:{path}".encode()).hexdigest()
        return Submission(digest, error=f"cannot read {path}: {exc.strerror or exc}", error_kind=ErrorKind.OS_ERROR, exception=exc)
    if problem is not None:
        if sniff:
            return Submission(digest, error=problem, error_kind=ErrorKind.UNSUPPORTED)
        return Submission(digest, error=problem, error_kind=ErrorKind.BUNDLE_TOO_LARGE,
                          exception=BundleTooLargeError(problem, limit=limit))
    return _read_bytes(data, name, formats, known, sniff, digest, replay)


def read_submission(source: str | os.PathLike[str] | bytes, *, name: str | None = None,
                    formats: Iterable[Format] = FORMATS, known: frozenset[str] = frozenset(),
                    sniff: bool = False, replay: Replayer | None = None) -> Submission:
    """Read one submission in any accepted form (see the module docstring); never raises for a bad input.

    ``source`` is a path (a file, a notebook, a Gradescope upload folder) or the bytes of one file
    (``name`` then names it in messages).  An input whose form the course does not accept
    (``formats``) comes back with ``error_kind`` ``FormatRefused`` and its origin.  When the hash of
    the bundle read is in ``known`` nothing is parsed: ``origin`` is ``"known"``.  ``sniff``: the
    input came under a name that is no accepted kind (a file inside a folder), so a file that is no
    submission is ``Unsupported``, named by what it looks like.  ``replay``: what a marimo export's inferred
    controls are planned through, the caller's own (by default a live one; reading never depends on what ran before).
    """
    if isinstance(source, bytes | bytearray):
        return _read_bytes(bytes(source), name or "submission", formats, known, sniff, replay=replay)
    return _read_path(Path(source), formats, known, sniff, replay)
