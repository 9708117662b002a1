"""Student notebooks from the Otter master notebooks (``otter assign``), kept free of drift.

Layout (relative to the project root)::

    solutions/<lab>/<lab>-master.ipynb   instructor source (Otter assign format)
    assignments/<lab>.ipynb              what students get (generated, committed)

Otter names everything after the master's file name (``otter.Notebook("<name>")``
in the init cell, the autograder's ``notebook`` setting), so the master is staged as
``<lab>.ipynb`` before ``otter assign`` runs; the student notebook then opens its own
tests by its own name.  :func:`normalise` removes what varies between two runs on
the same master (cell ids, outputs, execution counts), and :func:`regenerate` writes
cell ids derived from position so that regenerating an unchanged master rewrites an
identical file.
"""

from __future__ import annotations

import contextlib
import copy
import io
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import GraderError
from ..labs import lab_ids


class AssignError(GraderError, RuntimeError):
    """Raised when a master notebook is missing or ``otter assign`` fails on it."""


def master_path(root: str | Path, lab_id: str) -> Path:
    """``<root>/solutions/<lab>/<lab>-master.ipynb``."""
    return Path(root) / "solutions" / lab_id / f"{lab_id}-master.ipynb"


def student_path(root: str | Path, lab_id: str) -> Path:
    """``<root>/assignments/<lab>.ipynb``."""
    return Path(root) / "assignments" / f"{lab_id}.ipynb"


def run_otter_assign(master: str | Path, lab_id: str, out_dir: str | Path, *, run_tests: bool = False) -> Path:
    """Run ``otter assign`` on ``master`` staged as ``<lab>.ipynb``; return ``out_dir`` (with ``student/``, ``autograder/``).

    Otter's own console output is captured and included in the error if it fails.
    """
    from otter.assign import main as otter_assign

    master = Path(master)
    if not master.is_file():
        raise AssignError(f"master notebook for {lab_id} not found: expected {master}")
    out_dir = Path(out_dir)
    with tempfile.TemporaryDirectory(prefix=f"{lab_id}-assign-") as staging:
        staged = Path(staging) / f"{lab_id}.ipynb"
        shutil.copyfile(master, staged)
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                otter_assign(str(staged), str(out_dir), no_pdfs=True, no_run_tests=not run_tests)
        except Exception as exc:  # otter raises many types; name the master and keep its log
            raise AssignError(f"otter assign failed on {master}: {type(exc).__name__}: {exc}\n{log.getvalue()[-2000:]}") from exc
    student = out_dir / "student" / f"{lab_id}.ipynb"
    if not student.is_file():
        raise AssignError(f"otter assign on {master} produced no student notebook (expected {student})")
    return out_dir


def normalise(notebook):
    """A copy without what varies between runs: cell ids, outputs, execution counts."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        cell.pop("id", None)
        if cell.cell_type == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    notebook.metadata.pop("widgets", None)
    return notebook


def _stable(notebook, lab_id: str):
    """Normalised, with cell ids from position (nbformat 4.5 requires ids)."""
    notebook = normalise(notebook)
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"{lab_id}-student-{index:03d}"
    return notebook


def generate_student(root: str | Path, lab_id: str, *, run_tests: bool = False):
    """The student notebook ``otter assign`` makes from the lab's master, normalised with stable ids."""
    import nbformat

    with tempfile.TemporaryDirectory(prefix=f"{lab_id}-dist-") as out:
        run_otter_assign(master_path(root, lab_id), lab_id, Path(out) / "dist", run_tests=run_tests)
        notebook = nbformat.read(Path(out) / "dist" / "student" / f"{lab_id}.ipynb", as_version=4)
    return _stable(notebook, lab_id)


def regenerate(root: str | Path = ".", labs: Iterable[str] | None = None, *, run_tests: bool = False) -> list[Path]:
    """Write ``assignments/<lab>.ipynb`` for each lab from its master; return the paths written."""
    import nbformat

    written = []
    for lab_id in labs or lab_ids():
        target = student_path(root, lab_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(generate_student(root, lab_id, run_tests=run_tests), target)
        written.append(target)
    return written


def drift(root: str | Path = ".", labs: Iterable[str] | None = None) -> dict[str, str]:
    """Labs whose committed student notebook differs from what the master generates: lab → first difference."""
    import nbformat

    found = {}
    for lab_id in labs or lab_ids():
        target = student_path(root, lab_id)
        if not target.is_file():
            found[lab_id] = f"{target} is missing"
            continue
        committed = normalise(nbformat.read(target, as_version=4))
        expected = normalise(generate_student(root, lab_id))
        if committed != expected:
            found[lab_id] = _first_difference(expected, committed)
    return found


def _first_difference(expected, actual) -> str:
    if len(expected.cells) != len(actual.cells):
        return f"{len(actual.cells)} cells, the master generates {len(expected.cells)}"
    for index, (left, right) in enumerate(zip(expected.cells, actual.cells)):
        if left != right:
            return f"cell {index} differs: expected {left.source[:80]!r}, found {right.source[:80]!r}"
    return "notebook metadata differs"
