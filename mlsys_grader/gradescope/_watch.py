"""What a notebook tried against the grader, where that can be observed — for staff flags only.

In the sandbox every such attempt fails (the notebook's user cannot write the grader's
files or signal its processes), so attempts are observed where they leave a trace:

- the notebook's code names the grader's files or processes (read as text, never run);
- an error output of the re-run names them (a write refused with "Permission denied");
- a process started by the notebook was still alive when the notebook's time ended;
- a file the grader relies on changed while the notebook ran (a sandbox breach; never expected).

None of this changes a score; each observation is a flag and a note naming the cell.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core import flags as flag_names

FLAG_DETACHED = flag_names.DETACHED_PROCESS
FLAG_FILES_CHANGED = flag_names.GRADER_FILES_CHANGED
FLAG_NOTEBOOK_INCOMPLETE = flag_names.NOTEBOOK_INCOMPLETE

#: flag → (what it targets, how its code or its errors name it)
ATTEMPTS: dict[str, tuple[str, re.Pattern[str]]] = {
    flag_names.TAMPER_RESULTS: ("the results Gradescope reads", re.compile(r"/autograder/results|results\.json")),
    flag_names.TAMPER_SOURCE: ("the autograder's source folder", re.compile(r"/autograder/source")),
    flag_names.TAMPER_RUN_AUTOGRADER: ("the run_autograder script", re.compile(r"run_autograder")),
    flag_names.TAMPER_GRADER_INSTALL: ("the installed grader or Otter", re.compile(
        r"site-packages|dist-packages|miniforge3|(?:mlsys_grader|otter)[\w.]*\.__(?:file|path)__|sys\.prefix|"
        r"metadata\.(?:files|distribution)")),
    flag_names.SIGNAL_GRADER: ("other processes (signals, tracing)", re.compile(
        r"os\.kill|os\.killpg|pthread_kill|\bpkill\b|\bkillall\b|\bkill\s+-|ptrace|/proc/(?:\d|\{|\"|')|"
        r"listdir\(\s*['\"]/proc")),
    FLAG_DETACHED: ("a process that outlives the notebook", re.compile(
        r"start_new_session|setsid|os\.fork\b|\bnohup\b|\bdisown\b|os\.daemon|double[- ]fork")),
}
MAX_SNAPSHOT_FILES = 5000


def _code_cells(notebook: Mapping[str, Any]) -> Iterable[tuple[int, str]]:
    cells = notebook.get("cells")
    for index, cell in enumerate(cells if isinstance(cells, list) else []):
        if isinstance(cell, Mapping) and cell.get("cell_type") == "code":
            source = cell.get("source")
            text = "".join(source) if isinstance(source, list) else source
            if isinstance(text, str):
                yield index, text


def scan_code(notebook: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(flag, note) for every kind of attempt the notebook's code names, with the first cell naming it."""
    found = []
    for flag, (target, pattern) in ATTEMPTS.items():
        for index, text in _code_cells(notebook):
            match = pattern.search(text)
            if match:
                found.append((flag, f"cell {index} of the notebook targets {target} (its code names {match.group(0)!r})"))
                break
    return found


def scan_errors(errors: Iterable[str]) -> list[tuple[str, str]]:
    """(flag, note) for error outputs of the re-run that name the grader's files (refused writes)."""
    found = []
    for flag, (target, pattern) in ATTEMPTS.items():
        if flag == FLAG_DETACHED:
            continue
        hit = next((error for error in errors if pattern.search(error)), None)
        if hit:
            found.append((flag, f"the re-run tried {target} and was refused: {hit[:200]}"))
    return found


@dataclass(frozen=True)
class Snapshot:
    """SHA-256 of every file the grader relies on after the notebook ran."""

    digests: dict[str, str]

    def changed(self, later: Snapshot) -> list[str]:
        names = set(self.digests) | set(later.digests)
        return sorted(name for name in names if self.digests.get(name) != later.digests.get(name))


def _digest(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


def grader_files(autograder_dir: str | os.PathLike, distributions: Iterable[str] = ("mlsys-grader", "otter-grader")) -> list[Path]:
    """``run_autograder``, the autograder's source folder and the installed files of the grader and Otter."""
    root = Path(autograder_dir)
    files = [root / "run_autograder"]
    source = root / "source"
    if source.is_dir():
        files += sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink())
    for name in distributions:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        files += sorted(Path(str(dist.locate_file(f))) for f in dist.files or () if not str(f).endswith(".pyc"))
    return files[:MAX_SNAPSHOT_FILES]


def snapshot(files: Iterable[Path]) -> Snapshot:
    return Snapshot({str(path): _digest(path) for path in files})
