"""What a student uploaded to Gradescope, read as data: which notebook, which bundle, or why neither.

Gradescope unpacks an uploaded zip into ``/autograder/submission``; the export cell
(``lab.export()``) makes a zip of the notebook and ``<lab>-submission.json``.  Students
also upload a bare notebook, the bundle alone, a zip they zipped again, the other lab's
work, or nothing.  :func:`inspect_upload` tells these apart without running anything:
files are opened without following symbolic links, read with size limits, and parsed as
strict JSON; a zip inside the upload is read in memory with the one reader's zip limits
(:func:`mlsys_grader.intake.zip_member_bytes`), and the bundle bytes found are read and graded
by :func:`mlsys_grader.intake.read_submission` like every other edge's (:mod:`._record`).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..core import flags as flag_names
from ..core.embed import find_embedded_bundles
from ..core.jsonio import MAX_BYTES
from ..core.models import submission_filename
from ..errors import BundleFormatError
from ..intake import MAX_NOTEBOOK_BYTES, MAX_ZIP_BYTES, zip_member_bytes  # traversal, symlinks, bombs
from ..labs import lab_ids

SKIP_DIRS = frozenset({"__MACOSX", ".ipynb_checkpoints", "__pycache__", ".git"})
MAX_FILES = 500

#: Staff flags for uploads that hold nothing gradable.
FLAG_NO_BUNDLE = flag_names.NO_BUNDLE
FLAG_WRONG_LAB = flag_names.WRONG_LAB
FLAG_EMPTY_UPLOAD = flag_names.EMPTY_UPLOAD
FLAG_BUNDLE_MISMATCH = flag_names.BUNDLE_MISMATCH


def lab_title(lab_id: str) -> str:
    """``lab07`` → ``Lab 07`` (what the book and the notebooks call it)."""
    match = re.fullmatch(r"lab(\d+)", lab_id)
    return f"Lab {match.group(1)}" if match else lab_id


def export_advice(lab_id: str) -> str:
    return (f"upload the zip that the last cell of your {lab_title(lab_id)} notebook (lab.export()) makes, "
            "after running every part's capture cell")


@dataclass(frozen=True)
class Upload:
    """The gradable pieces of one upload.  ``problem`` is one sentence for the student when there is no bundle."""

    lab: str
    notebook: Path | None = None
    bundle: bytes | None = None
    source: str = "none"
    bundle_path: Path | None = None
    problem: str | None = None
    flag: str | None = None
    flags: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    public_notes: tuple[str, ...] = ()


@dataclass
class _Found:
    files: list[Path] = field(default_factory=list)
    truncated: bool = False


def read_regular_file(path: str | os.PathLike, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of a regular file; ``OSError`` for a symlink, FIFO, device or folder.

    Opened without following symlinks and without blocking, and checked on the open
    descriptor, so neither an uploaded symlink nor a FIFO a notebook left behind can make
    the grader read another file or wait forever.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{os.path.basename(path)} is not a regular file")
        return handle.read(limit + 1)


def _files(root: Path, depth: int = 2) -> _Found:
    """Regular files under ``root`` (two folder levels), symlinks and hidden or system folders skipped."""
    found = _Found()

    def walk(folder: Path, level: int) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if len(found.files) >= MAX_FILES:
                found.truncated = True
                return
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if level < depth and entry.name not in SKIP_DIRS and not entry.name.startswith("."):
                    walk(Path(entry.path), level + 1)
            elif entry.is_file(follow_symlinks=False) and not entry.name.startswith("._"):
                found.files.append(Path(entry.path))

    walk(root, 0)
    return found


def read_notebook(path: Path) -> dict | None:
    """The notebook as plain JSON data (bounded read), or None if it is not one."""
    try:
        raw = read_regular_file(path, MAX_NOTEBOOK_BYTES)
        if len(raw) > MAX_NOTEBOOK_BYTES:
            return None
        data = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def notebook_lab(notebook: dict) -> str | None:
    """The lab a notebook was made for (Otter writes ``metadata.otter.assignment_name``)."""
    otter = (notebook.get("metadata") or {}).get("otter") if isinstance(notebook.get("metadata"), dict) else None
    name = otter.get("assignment_name") if isinstance(otter, dict) else None
    return name if isinstance(name, str) else None


def _other_lab(name: str, lab: str) -> str | None:
    for other in lab_ids():
        if other != lab and (name == submission_filename(other) or name == f"{other}.ipynb"):
            return other
    return None


def _pick_notebook(notebooks: list[Path], lab: str) -> Path | None:
    exact = [p for p in notebooks if p.name == f"{lab}.ipynb"]
    if exact:
        return min(exact, key=lambda p: len(p.parts))
    named = [p for p in notebooks if lab in p.name and _other_lab(p.name, lab) is None]
    if len(named) == 1:
        return named[0]
    others = [p for p in notebooks if _other_lab(p.name, lab) is None]
    return others[0] if len(others) == 1 else None


def _wrong_lab(lab: str, other: str, what: str) -> str:
    return (f"This upload is {lab_title(other)} work ({what}), but this assignment is {lab_title(lab)}: "
            f"{export_advice(lab)}.")


@dataclass(frozen=True)
class _ZipLook:
    """What a zip inside the upload holds: this lab's bundle, another lab's, or why neither."""

    bundle: bytes | None = None
    member: str | None = None
    other_lab: str | None = None
    problem: str | None = None


def _from_zip(lab: str, archive: Path) -> _ZipLook:
    try:
        data = read_regular_file(archive, MAX_ZIP_BYTES)
        if len(data) > MAX_ZIP_BYTES:
            return _ZipLook(problem=f"{archive.name} is larger than an export zip can be")
        content, member = zip_member_bytes(data, archive.name)
    except (OSError, BundleFormatError) as exc:
        return _ZipLook(problem=str(exc))
    name = member.rsplit("/", 1)[-1]
    if name == submission_filename(lab):
        return _ZipLook(bundle=content, member=member)
    other = _other_lab(name, lab)
    return _ZipLook(member=member, other_lab=other, problem=None if other else f"{archive.name} holds {name}")


def inspect_upload(submission_dir: str | os.PathLike, lab: str) -> Upload:
    """Classify the upload in ``submission_dir`` for ``lab``; never raises for what a student uploaded."""
    root = Path(submission_dir)
    found = _files(root)
    files = [p for p in found.files if not p.name.startswith(".OTTER_LOG")]  # Otter's log: never read
    notes = [f"the upload holds more than {MAX_FILES} files; only the first {MAX_FILES} were looked at"] if found.truncated else []
    if not files:
        return Upload(lab, problem=f"Your upload is empty: {export_advice(lab)}.", flag=FLAG_EMPTY_UPLOAD, notes=tuple(notes))

    bundles = [p for p in files if p.name == submission_filename(lab) and "tests" not in p.relative_to(root).parts]
    notebooks = [p for p in files if p.suffix == ".ipynb"]
    zips = [p for p in files if p.suffix.lower() == ".zip"]
    notebook = _pick_notebook(notebooks, lab)
    nb_data = read_notebook(notebook) if notebook else None
    if notebook is not None and nb_data is None:
        notes.append(f"{notebook.name} is not a readable notebook (JSON)")
    nb_lab = notebook_lab(nb_data) if nb_data else None

    embedded = find_embedded_bundles(nb_data) if nb_data else []
    if bundles:
        path = min(bundles, key=lambda p: len(p.parts))
        try:
            data = read_regular_file(path, MAX_BYTES)
        except OSError as exc:
            return Upload(lab, notebook=notebook, problem=(f"{path.name} in your upload cannot be read: {export_advice(lab)}."),
                          flag=FLAG_NO_BUNDLE, notes=(*notes, str(exc)))
        flags: list[str] = []
        if embedded:
            flags, note = _compare_with_notebook(data, embedded[-1], path.name)
            if note:
                notes.append(note)
        return Upload(lab, notebook=notebook, bundle=data, source=path.name, bundle_path=path, flags=tuple(flags),
                      notes=tuple(notes))
    if notebook is None:
        wrong = sorted({other for p in files if (other := _other_lab(p.name, lab))})
        if wrong:
            names = ", ".join(p.name for p in files if _other_lab(p.name, lab))
            return Upload(lab, problem=_wrong_lab(lab, wrong[0], names), flag=FLAG_WRONG_LAB, notes=tuple(notes))
        for archive in zips:
            look = _from_zip(lab, archive)
            if look.bundle is not None:
                return Upload(lab, bundle=look.bundle, source=f"{look.member} inside {archive.name}", notes=tuple(notes),
                              public_notes=(f"Your upload held {archive.name}, a zip that was not unpacked; the "
                                            f"{submission_filename(lab)} inside it was graded. Next time upload the "
                                            "export zip itself.",))
            if look.other_lab:
                return Upload(lab, problem=_wrong_lab(lab, look.other_lab, f"{archive.name} holds {look.member}"),
                              flag=FLAG_WRONG_LAB, notes=tuple(notes))
            notes.append(f"{archive.name}: {look.problem}")
        if zips:
            return Upload(lab, problem=(f"Your upload holds {zips[0].name}, but no {submission_filename(lab)} could be read "
                                        f"from it: {export_advice(lab)}, and upload that zip as it is."),
                          flag=FLAG_NO_BUNDLE, notes=tuple(notes))
        names = ", ".join(p.name for p in files[:5])
        return Upload(lab, problem=f"Your upload ({names}) holds no {lab_title(lab)} notebook or bundle: {export_advice(lab)}.",
                      flag=FLAG_NO_BUNDLE, notes=tuple(notes))
    if nb_lab and nb_lab != lab and nb_lab in lab_ids():
        return Upload(lab, problem=_wrong_lab(lab, nb_lab, f"the notebook {notebook.name}"), flag=FLAG_WRONG_LAB,
                      notes=tuple(notes))
    if embedded:
        latest = embedded[-1]
        return Upload(lab, notebook=notebook, bundle=latest.text.encode("utf-8"),
                      source=f"the bundle shown in cell {latest.cell_index} of {notebook.name}", notes=tuple(notes))
    return Upload(lab, notebook=notebook, problem=(f"Your upload has the notebook {notebook.name} but no saved bundle "
                                                   f"({submission_filename(lab)}): {export_advice(lab)}."),
                  flag=FLAG_NO_BUNDLE, notes=tuple(notes))


def _compare_with_notebook(data: bytes, latest, file_name: str) -> tuple[list[str], str | None]:
    """Flags and a staff note when the bundle file and the notebook's latest shown bundle differ.

    Exporting without saving the notebook first leaves an *older* bundle in the notebook:
    honest, so only noted.  A notebook that shows a *later* save than the file means the
    file was swapped for an older or other one: flagged (the file is still what is graded).
    """
    from ._record import bundle_fingerprint, saved_at  # here, not at the top: _record imports this module

    if bundle_fingerprint(latest.text) == bundle_fingerprint(data):
        return [], None
    file_time, shown_time = saved_at(data), latest.created_at
    if file_time and shown_time and shown_time > file_time:
        return [FLAG_BUNDLE_MISMATCH], (f"the notebook shows a bundle saved at {shown_time} (cell {latest.cell_index}), later "
                                        f"than {file_name} ({file_time}); {file_name} was graded")
    return [], (f"{file_name} is newer than the last bundle shown in the notebook (cell {latest.cell_index}): "
                "the notebook was exported without being saved; the file was graded")
