"""This package as a wheel, and the packages it needs pinned to this environment.

Two outer commands ship the package somewhere else and want what was tested here:
``mlsys-grader autograder`` (the Gradescope image, :mod:`._autograder`) and
``mlsys-grader kit`` (what a student downloads, :mod:`._kit`).  Both build a wheel
from a clean copy of the source tree, and both pin a requirement closure to the versions
installed here; each says in its own words what went wrong, from the data these errors carry.

There are three builds of the one source tree.  :data:`FULL` is the package as it is
(``mlsys-grader``: staff installs).  :data:`IMAGE` is the Gradescope image's ``mlsys-grader``,
without what only staff run.  :data:`STUDENT` is the kit's
``mlsys-grader-student``: the same files and version, with the staff-only modules left
out of the copy before it is built (``mlsys_grader/staff/``: ``solve``, the kit and
autograder builders, Otter assign, this module), so a student's install cannot run them.  Its dependencies are what a
student runs (``STUDENT.dependencies``: no Otter-Grader, no pandas) and a Jupyter front end (:data:`FRONT_END`).

A lab may come from another distribution (a course's own lab package, registered through the
``mlsys_grader.labs`` entry point): :func:`lab_distributions` finds those installed here, and
:meth:`LabDistribution.wheel` builds its wheel from the folder it was installed from (or copies
the wheel file), so the zip and the kit ship it beside this package's wheel.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..errors import LabDistributionError, NotInstalledError, VersionConflictError, WheelBuildError

PROJECT_NAME = "mlsys-grader"
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE")
SOURCE_IGNORED = (".git", "__pycache__", "*.pyc", "build", "dist", "*.egg-info", ".venv", "venv")
"""What a lab distribution's source folder is copied without before its wheel is built."""


@dataclass(frozen=True)
class WheelSpec:
    """One build of the source tree: its distribution name, what it leaves out, what it depends on."""

    name: str
    """The distribution's name (``mlsys-grader-student``); the import package is ``mlsys_grader`` in every build."""
    leave_out: tuple[str, ...] = ()
    """Paths relative to the repository root (glob patterns: ``mlsys_grader/labs/*/answers.toml``), removed from the
    copy before it is built; a folder goes with everything in it."""
    dependencies: tuple[str, ...] | None = None
    """The wheel's requirements; ``None`` keeps ``[project] dependencies`` of pyproject.toml."""

    def leaves_out(self, path: str) -> bool:
        """Whether ``path`` (relative to the repository root, ``/``-separated) is not in this build."""
        return any(fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, f"{pattern}/*") for pattern in self.leave_out)

    @property
    def wheel_glob(self) -> str:
        """The file name of this build's wheels (``mlsys_grader_student-*.whl``), as a glob."""
        return f"{re.sub(r'[-_.]+', '_', self.name)}-*.whl"


LAB_ANSWERS = ("answers.toml", "answers.py")
"""The files of a lab package holding its hand-written answers (the masters' and the references' solutions): a
declared lab's ``answers.toml``, or the ``answers.py`` module of a lab written as code; left out of every build a
student or a submission's code can read, and of the lab distributions' wheels shipped with them (``*/answers.toml``)."""
LAB_ANSWER_PATTERNS = tuple(f"*/{name}" for name in LAB_ANSWERS)
""":data:`LAB_ANSWERS` in any package of a wheel, as :func:`retarget_wheel` leaves them out."""

FRONT_END = ("jupyterlab>=4.2,<5",)
"""The student's Jupyter front end (``jupyter lab lab07.ipynb``): JupyterLab, the lightest one (Notebook 7 is
JupyterLab's components plus its own; any front end brings jupyter_server and nbconvert).  Staff's environment need
not have it: the kit resolves what it needs with pip (:func:`mlsys_grader.staff._kit.pinned_requirements`)."""

FULL = WheelSpec(PROJECT_NAME)
"""The package as it is: staff installs (``pip install .``)."""
IMAGE = WheelSpec(
    PROJECT_NAME,
    # NOTE: nothing that runs on Gradescope imports staff/ (a lint-imports contract: only cli.py and the package's
    # root do, and both do without it): the runner, the image check, Otter's tests and a re-run notebook need
    # neither solve nor a builder; the review page is staff's, and the answers are solutions.
    leave_out=("mlsys_grader/staff", "mlsys_grader/course/_review_app.py", "mlsys_grader/templates/review.html",
               *(f"mlsys_grader/labs/*/{name}" for name in LAB_ANSWERS)),
)
"""The Gradescope image's ``mlsys-grader``: the same name, version and dependencies (a course lab's requirement on
``mlsys-grader`` is met by it), without what only staff run."""
STUDENT = WheelSpec(
    f"{PROJECT_NAME}-student",
    # NOTE: ``mlsys_grader/__init__.py`` re-exports ``solve`` and ``cli.py`` registers the staff
    # commands only when ``mlsys_grader.staff`` is installed; nothing a student runs imports it
    # (``solve``, Otter assign, the autograder and kit builders, this module: all of staff/).
    # ``gradescope/`` stays whole: it holds only what runs on Gradescope, none of it staff's, and the runner
    # is the grader's, not a shortcut (the notebook embeds its bundle through ``core/embed.py``).
    leave_out=("mlsys_grader/staff", "mlsys_grader/course/_review_app.py", "mlsys_grader/replay/_table.py",
               "mlsys_grader/templates/review.html",
               # each lab's hand-written reference answers are solutions (the master's, the references')
               *(f"mlsys_grader/labs/*/{name}" for name in LAB_ANSWERS)),
    # NOTE: what a student runs, measured by benchmarks/kit.py (issue 20): the notebook API and its charts
    # (matplotlib), the evaluators (mlsysim, pint, pyyaml), the grader's models and pages (pydantic, jinja2), the
    # check command (rich), the replay service's bounded caches (cachetools), a kernel (ipykernel) and a front end
    # (FRONT_END).  Not Otter-Grader (its hard
    # requirements pull Playwright, Sphinx and python-on-whales; the notebook checks with lab.check and exports
    # with lab.export), not pandas (the notebook's tables are its own), not what only a batch or the Gradescope
    # runner needs (pebble, nbformat, platformdirs, packaging).  Each specifier is the project's own.
    dependencies=("mlsysim==0.3.0", "pydantic>=2,<3", "pint>=0.23", "matplotlib>=3.8", "ipykernel>=6", "pyyaml>=6",
                  "rich>=13", "jinja2>=3.1", "cachetools>=5,<9", *FRONT_END),
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
        for path in [found for pattern in spec.leave_out for found in sorted(source.glob(pattern))]:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        dest.mkdir(parents=True, exist_ok=True)
        return _pip_wheel(source, dest, spec.wheel_glob, spec.name)


def _pip_wheel(source: Path, dest: Path, wheel_glob: str, name: str) -> Path:
    """``pip wheel --no-deps`` of the project in ``source`` into ``dest``; the one wheel named ``wheel_glob`` there."""
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dest), str(source)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        stderr = done.stderr.strip()
        raise WheelBuildError(f"pip wheel failed (exit {done.returncode}): {stderr[-2000:]}", returncode=done.returncode,
                              stderr=stderr)
    wheels = sorted(dest.glob(wheel_glob))
    if len(wheels) != 1:
        found = tuple(wheel.name for wheel in wheels)
        raise WheelBuildError(f"expected one {name} wheel in {dest}, found {list(found)}", found=found)
    return wheels[0]


# -- the distributions labs come from -------------------------------------------------------------
ENTRY_POINT_GROUP = "mlsys_grader.labs"
"""The entry point group labs are registered in (:data:`mlsys_grader.labs.ENTRY_POINT_GROUP`; repeated here so
this module reads the installed metadata without importing the registry)."""


@dataclass(frozen=True)
class LabDistribution:
    """An installed distribution other than this package that registers labs through entry points: a course's
    own lab package.  The autograder zip and the kit ship it as a wheel beside this package's."""

    name: str
    version: str
    labs: tuple[str, ...]
    """The lab ids its entry points register, sorted."""
    distribution: metadata.Distribution

    @property
    def key(self) -> str:
        """The canonical name (``course-labs``), as pins are compared."""
        return re.sub(r"[-_.]+", "-", self.name).lower()

    @property
    def url(self) -> str | None:
        """Where pip installed it from (``direct_url.json``): a folder or a wheel file; None for an index."""
        raw = self.distribution.read_text("direct_url.json")
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            return None
        return data.get("url") if isinstance(data, dict) else None

    def wheel(self, dest: Path) -> Path | None:
        """Its wheel in ``dest``: built from its source folder (an editable or local install), or the wheel file it
        was installed from, copied; None when it came from an index (then it is pinned like any other dependency).

        Raises :class:`LabDistributionError` when the folder or file it was installed from is not there any more,
        and :class:`WheelBuildError` when its source does not build.
        """
        url = self.url
        if url is None or not url.startswith("file:"):
            return None
        path = Path(unquote(urlparse(url).path))
        dest.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            # built from a clean copy, as this package is: pip would leave build/ and *.egg-info in the course's tree
            with tempfile.TemporaryDirectory(prefix="mlsys-lab-wheel-") as scratch:
                source = Path(scratch) / "src"
                shutil.copytree(path, source, ignore=shutil.ignore_patterns(*SOURCE_IGNORED))
                return _pip_wheel(source, dest, f"{re.sub(r'[-_.]+', '_', self.name)}-*.whl", self.name)
        if path.is_file() and path.suffix == ".whl":
            target = dest / path.name
            shutil.copyfile(path, target)
            return target
        raise LabDistributionError(
            f"{self.name} {self.version} (labs {', '.join(self.labs)}) was installed from {url}, which is not there any "
            "more: reinstall it (pip install PATH) so its wheel can be built", distribution=self.name, labs=self.labs, url=url)


def lab_distributions() -> list[LabDistribution]:
    """Every installed distribution other than this package whose entry points register labs, sorted by name.

    Labs registered in one process only (:func:`mlsys_grader.register_lab`) have no distribution to ship.
    """
    found: dict[str, tuple[metadata.Distribution, set[str]]] = {}
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = point.dist
        if dist is None:
            continue
        name = dist.metadata["Name"] or ""
        if re.sub(r"[-_.]+", "-", name).lower() in {PROJECT_NAME, f"{PROJECT_NAME}-student"}:
            continue
        found.setdefault(name, (dist, set()))[1].add(point.name)
    return [LabDistribution(name, dist.version, tuple(sorted(labs)), dist) for name, (dist, labs) in sorted(found.items())]


def retarget_wheel(wheel: Path, dest: Path, renames: Mapping[str, str], leave_out: tuple[str, ...] = ()) -> Path:
    """A copy of ``wheel`` in ``dest`` whose requirements on the distributions ``renames`` names (canonical name →
    new name) require the new names instead, version specifiers and markers kept, without the members matching
    ``leave_out`` (glob patterns); its RECORD is rewritten to match.

    The kit's use: a course lab's wheel requires ``mlsys-grader``, and the kit installs ``mlsys-grader-student``;
    the kit and the zip leave a lab's answers out (:data:`LAB_ANSWERS`).
    """
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    def retargeted(line: str) -> str:
        if not line.startswith("Requires-Dist:"):
            return line
        requirement = Requirement(line.split(":", 1)[1].strip())
        new = renames.get(canonicalize_name(requirement.name))
        if new is None:
            return line
        requirement.name = new
        return f"Requires-Dist: {requirement}"

    dest.mkdir(parents=True, exist_ok=True)
    target = dest / wheel.name
    if target.resolve() == wheel.resolve():
        raise WheelBuildError(f"retarget_wheel: {wheel} would overwrite itself; pass another folder")
    with zipfile.ZipFile(wheel) as source:
        names = source.namelist()
        info = next((n for n in names if n.endswith(".dist-info/METADATA") and n.count("/") == 1), None)
        record = next((n for n in names if n.endswith(".dist-info/RECORD") and n.count("/") == 1), None)
        if info is None or record is None:
            raise WheelBuildError(f"{wheel.name} has no METADATA or RECORD; rebuild it", found=tuple(names))
        text = source.read(info).decode("utf-8")
        head, sep, body = text.partition("\n\n")  # headers, then the long description (kept as it is)
        metadata_bytes = ("\n".join(map(retargeted, head.split("\n"))) + sep + body).encode("utf-8")
        digest = base64.urlsafe_b64encode(hashlib.sha256(metadata_bytes).digest()).rstrip(b"=").decode("ascii")
        dropped = {name for name in names if any(fnmatch.fnmatchcase(name, pattern) for pattern in leave_out)}
        rows = [f"{info},sha256={digest},{len(metadata_bytes)}" if row.split(",", 1)[0] == info else row
                for row in source.read(record).decode("utf-8").splitlines() if row.split(",", 1)[0] not in dropped]
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
            for name in (name for name in names if name not in dropped):
                data = metadata_bytes if name == info else ("\n".join(rows) + "\n").encode() if name == record else source.read(name)
                out.writestr(source.getinfo(name), data)
    return target


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
