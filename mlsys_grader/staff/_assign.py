"""Student notebooks from the Otter master notebooks (``otter assign``), kept free of drift.

Layout (relative to the project root)::

    solutions/<lab>/<lab>-master.ipynb   instructor source (Otter assign format): where the
                                         lab's Lab.master_path says, this by default
    assignments/<lab>.ipynb              what students get (generated, committed)

:func:`run_otter_assign` is the one way this package runs ``otter assign``: the
student notebooks here and the autograder zips (:mod:`._autograder`) both come from it.

Otter names everything after the master's file name (``otter.Notebook("<name>")``
in the init cell, the autograder's ``notebook`` setting), so the master is staged as
``<lab>.ipynb`` before ``otter assign`` runs; the student notebook then opens its own
tests by its own name.  :func:`normalise` removes what varies between two runs on
the same master (cell ids, outputs, execution counts), and :func:`regenerate` writes
cell ids derived from position so that regenerating an unchanged master rewrites an
identical file.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import AssignError
from ..labs import get_lab, lab_ids


def master_path(root: str | Path, lab_id: str) -> Path:
    """The lab's Otter master for the source tree at ``root``, as the lab declares it
    (:meth:`~mlsys_grader.core.labspec.Lab.master_path`; by default ``<root>/solutions/<lab>/<lab>-master.ipynb``)."""
    return get_lab(lab_id).master_path(Path(root))


def student_path(root: str | Path, lab_id: str) -> Path:
    """``<root>/assignments/<lab>.ipynb``."""
    return Path(root) / "assignments" / f"{lab_id}.ipynb"


STAGING_IGNORED = ("__pycache__", "dist", "*.zip", "reference-*")
"""What staging leaves out of the master's folder: build output and the executed reference submissions."""


def run_otter_assign(master: str | Path, lab_id: str, out_dir: str | Path, *, run_tests: bool = False) -> Path:
    """Run ``otter assign`` on ``master`` staged as ``<lab>.ipynb``; return ``out_dir`` (with ``student/``, ``autograder/``).

    The master's folder is staged with it (files beside the master stay beside it), and
    Otter names everything after the staged file (``otter.Notebook("<lab>.ipynb")``, the
    autograder's ``notebook`` setting).  Otter's console output is included in the error if it fails.
    """
    master = Path(master)
    if not master.is_file():
        raise AssignError(f"master notebook for {lab_id} not found: expected {master}")
    out_dir = Path(out_dir).resolve()
    with tempfile.TemporaryDirectory(prefix=f"{lab_id}-assign-") as staging:
        work = Path(staging) / lab_id
        shutil.copytree(master.parent, work, ignore=shutil.ignore_patterns(*STAGING_IGNORED))
        staged = work / f"{lab_id}.ipynb"
        shutil.copyfile(master, staged)
        # otter assign runs in a child interpreter, never in this one: it changes the process's working
        # directory while it runs (otter.utils.chdir), sets up its own logging and, with tests on, executes
        # the master; none of that may leak into the CLI, a test session or a grader that called it.
        command = [sys.executable, "-m", "otter", "assign", "--no-pdfs", staged.name, str(out_dir)]
        done = subprocess.run(command + ([] if run_tests else ["--no-run-tests"]), cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        log = (done.stdout + done.stderr).strip()[-3000:]
        raise AssignError(f"otter assign failed on {master} (exit {done.returncode}):\n{log}")
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
    for index, (left, right) in enumerate(zip(expected.cells, actual.cells, strict=True)):
        if left != right:
            return f"cell {index} differs: expected {left.source[:80]!r}, found {right.source[:80]!r}"
    return "notebook metadata differs"
