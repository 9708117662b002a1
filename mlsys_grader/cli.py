"""This package as a wheel, and the packages it needs pinned to this environment.

Two outer commands ship the package somewhere else and want what was tested here:
``mlsys-grader autograder`` (the Gradescope image, :mod:`._autograder`) and
``mlsys-grader kit`` (what a student downloads, :mod:`._kit`).  Both build a wheel
from a clean copy of the source tree, and both pin a requirement closure to the versions
installed here; each says in its own words what went wrong, from the data these errors carry.

There are two builds of the one source tree.  :data:`FULL` is the package as it is
(``mlsys-grader``: staff installs, the Gradescope image).  :data:`STUDENT` is the kit's
``mlsys-grader-student``: the same files and version, with the staff-only modules left
out of the copy before it is built (``mlsys_grader/staff/``: ``solve``, the kit and
autograder builders, Otter assign, this module), so a student's install cannot run them.  Its dependencies are the project's
today; a leaner kit is a change of ``STUDENT.dependencies``, nothing else.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..errors import NotInstalledError, VersionConflictError, WheelBuildError

PROJECT_NAME = "mlsys-grader"
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE")


@dataclass(frozen=True)
class WheelSpec:
    """One build of the source tree: its distribution name, what it leaves out, what it depends on."""

    name: str
    """The distribution's name (``mlsys-grader-student``); the import package is ``mlsys_grader`` in every build."""
    leave_out: tuple[str, ...] = ()
    """Paths relative to the repository root, removed from the copy before it is built."""
    dependencies: tuple[str, ...] | None = None
    """The wheel's requirements; ``None`` keeps ``[project] dependencies`` of pyproject.toml."""

    @property
    def wheel_glob(self) -> str:
        """The file name of this build's wheels (``mlsys_grader_student-*.whl``), as a glob."""
        return f"{re.sub(r'[-_.]+', '_', self.name)}-*.whl"


FULL = WheelSpec(PROJECT_NAME)
STUDENT = WheelSpec(
    f"{PROJECT_NAME}-student",
    # NOTE: ``mlsys_grader/__init__.py`` re-exports ``solve`` and ``cli.py`` registers the staff
    # commands only when ``mlsys_grader.staff`` is installed; nothing a student runs imports it
    # (``solve``, Otter assign, the autograder and kit builders, this module: all of staff/).
    # ``gradescope/`` stays whole: it holds only what runs on Gradescope, the notebook embeds its
    # bundle through it (so a bare .ipynb upload carries it), and the runner is the grader's, not a shortcut.
    leave_out=("mlsys_grader/staff", "mlsys_grader/course/_review_app.py", "mlsys_grader/course/_replay_table.py",
               "mlsys_grader/templates/review.html",
               # each lab's hand-written reference answers are solutions (the master's, the references')
               "mlsys_grader/labs/lab07/answers.py", "mlsys_grader/labs/lab11/answers.py"),
)


def project_metadata(pyproject: str, spec: WheelSpec) -> str:
    """``pyproject`` (the file's text) with ``[project]``'s name and dependencies those of ``spec``.

    Only those two keys are rewritten, in place, so everything else (version, scripts,
    package data) is the project's own; the result is read back and checked, so a layout
    this cannot rewrite is a :class:`WheelBuildError`, never a wheel with the wrong metadata.
    """
    project = tomllib.loads(pyproject)["project"]
    text = re.sub(r'(?m)^name = "[^"]*"$', f'name = "{spec.name}"', pyproject, count=1)
    dependencies = list(project["dependencies"] if spec.dependencies is None else spec.dependencies)
    listed = "".join(f'    "{requirement}",\n' for requirement in dependencies)
    text = re.sub(r"(?ms)^dependencies = \[.*?^\]$", lambda _: f"dependencies = [\n{listed}]", text, count=1)
    rewritten = tomllib.loads(text)["project"]
    expected = {**project, "name": spec.name, "dependencies": dependencies}
    if rewritten != expected:
        wrong = sorted(key for key in expected.keys() | rewritten.keys() if rewritten.get(key) != expected.get(key))
        raise WheelBuildError(f"pyproject.toml: could not set [project] name = {spec.name!r} and its dependencies for the "
                              f"{spec.name} build (came out wrong: {', '.join(wrong)})")
    return text


def build_wheel(root: Path, dest: Path, spec: WheelSpec = FULL) -> Path:
    """The wheel of build ``spec``, built into ``dest`` from a clean copy of the source in ``root`` (the tree stays untouched)."""
    with tempfile.TemporaryDirectory(prefix="mlsys-wheel-") as scratch:
        source = Path(scratch) / "src"
        source.mkdir()
        for name in SOURCE_FILES:
            if (root / name).is_file():
                shutil.copy2(root / name, source / name)
        shutil.copytree(root / "mlsys_grader", source / "mlsys_grader", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if spec != FULL:
            pyproject = source / "pyproject.toml"
            pyproject.write_text(project_metadata(pyproject.read_text(encoding="utf-8"), spec), encoding="utf-8")
        for path in map(source.joinpath, spec.leave_out):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        dest.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dest), str(source)],
                              capture_output=True, text=True)
    if done.returncode != 0:
        stderr = done.stderr.strip()
        raise WheelBuildError(f"pip wheel failed (exit {done.returncode}): {stderr[-2000:]}", returncode=done.returncode,
                              stderr=stderr)
    wheels = sorted(dest.glob(spec.wheel_glob))
    if len(wheels) != 1:
        found = tuple(wheel.name for wheel in wheels)
        raise WheelBuildError(f"expected one {spec.name} wheel in {dest}, found {list(found)}", found=found)
    return wheels[0]


@dataclass(frozen=True)
class Pinned:
    """One distribution of a closure, as installed here."""

    key: str
    """The canonical name (``typing-extensions``): what pins are sorted and compared by."""
    distribution: metadata.Distribution

    @property
    def name(self) -> str:
        return self.distribution.metadata["Name"]

    @property
    def version(self) -> str:
        return self.distribution.version

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"


def installed_closure(roots: Iterable[str], *, needed_by: str = PROJECT_NAME) -> dict[str, Pinned]:
    """Every distribution ``roots`` need here, transitively, keyed by canonical name.

    Requirements are read from the installed distributions' metadata, with environment
    markers and extras evaluated here: a dependency only another platform needs is left out.
    Raises :class:`NotInstalledError` or :class:`VersionConflictError` (their data says which
    requirement, needed by what), and ``packaging``'s ``InvalidRequirement`` for a root that
    is not a requirement.
    """
    # packaging is imported here, not at the top: the notebook imports the student kit's module with
    # ``import mlsys_grader``, and packaging's requirement parser would add to that for nothing.
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    installed: dict[str, metadata.Distribution] = {}
    for found in metadata.distributions():
        installed.setdefault(canonicalize_name(found.metadata["Name"] or ""), found)
    queue = [(requirement, frozenset({""}), needed_by) for requirement in map(Requirement, roots)]
    closure: dict[str, Pinned] = {}
    expanded: dict[str, set[str]] = {}
    while queue:
        requirement, extras, dependant = queue.pop(0)
        if requirement.marker is not None and not any(requirement.marker.evaluate({"extra": extra}) for extra in extras):
            continue
        key = canonicalize_name(requirement.name)
        dist = installed.get(key)
        if dist is None:
            raise NotInstalledError(str(requirement), name=requirement.name, needed_by=dependant)
        if requirement.specifier and not requirement.specifier.contains(dist.version, prereleases=True):
            raise VersionConflictError(str(requirement), name=requirement.name, installed=dist.version,
                                       installed_as=dist.metadata["Name"], needed_by=dependant)
        closure[key] = Pinned(key, dist)
        new = ({""} | set(requirement.extras)) - expanded.get(key, set())
        if not new:
            continue
        expanded.setdefault(key, set()).update(new)
        name = dist.metadata["Name"]
        queue += [(Requirement(child), frozenset(new), name) for child in dist.requires or ()]
    return closure
