"""What only course staff run, on a staff machine: everything that *builds* something to hand out.

- ``_solve``      — ``solve``: a full-marks bundle without a notebook (the tests' and the instructor's tool);
- ``_generate``   — ``mlsys-grader generate``: masters, student notebooks and reference submissions from the labs;
- ``_assign``     — ``otter assign``: masters → student notebooks (``mlsys-grader assign``);
- ``_autograder`` — ``mlsys-grader autograder``: each lab's Gradescope zip, pinned by ``_lock``;
- ``_kit``        — ``mlsys-grader kit``: what a student downloads;
- ``_packaging``  — the wheel builds (this package, full or student; a lab's own distribution)
  and the pinning walk the zip and the kit share.

What runs *on* Gradescope is :mod:`mlsys_grader.gradescope`, which never imports this package
(an import-linter contract in pyproject.toml).  The student build of the package
(``mlsys-grader-student``, the wheel inside the kit) leaves this package out
(:data:`mlsys_grader.staff._packaging.STUDENT`): a student's install has no ``solve`` to
import and the command line no staff command to run; the Gradescope image's build
(:data:`~mlsys_grader.staff._packaging.IMAGE`) leaves it out too, since nothing that runs
there needs it.  Staff installs (the quick start's) keep it.

The builders load on first access (they import subprocess, zip, packaging and Otter's
configuration): ``import mlsys_grader`` imports this package for ``solve``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ._kit import INSTALL_COMMAND, Kit, build_kit
from ._solve import bundle_from_controls, solve, solve_spec

# name → the private module defining it, imported on first access
_LAZY = {
    "LOCK_NAME": "._autograder",
    "build_autograders": "._autograder",
    "drift": "._assign",
    "generate": "._generate",
    "regenerate": "._assign",
}

__all__ = ["INSTALL_COMMAND", "Kit", "LOCK_NAME", "build_autograders", "build_kit", "bundle_from_controls", "drift", "generate",
           "regenerate", "solve", "solve_spec"]

for _name in ("Kit", "build_kit", "bundle_from_controls", "solve", "solve_spec"):
    globals()[_name].__module__ = __name__
del _name


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
