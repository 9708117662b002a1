"""``mlsys-grader kit``: what a student downloads — every lab's notebook, the student build's wheel,
a fully pinned ``requirements.txt`` and a short README: the one install command, the line that
opens a lab (``jupyter lab lab07.ipynb``) and the one that registers the kernel for another Jupyter.

The install holds what a student runs and nothing of Otter-Grader: the notebook API, the
evaluators, JupyterLab and ipykernel (:data:`~mlsys_grader.staff._packaging.STUDENT`).

The wheel is :data:`~mlsys_grader.staff._packaging.STUDENT` (``mlsys-grader-student``): this
package without staff's tools — no ``solve``, no kit or autograder builder — built from
the same source tree at the same version.  A lab that comes from another distribution (a
course's own lab package, registered through the ``mlsys_grader.labs`` entry point) ships as
that distribution's wheel beside it, its requirement on ``mlsys-grader`` retargeted to
``mlsys-grader-student`` (:func:`~mlsys_grader.staff._packaging.retarget_wheel`).

The kit is made from the repository (the notebooks in ``assignments/`` and that wheel built
from the source) by an instructor who installed it as README's quick start says.  Every
package the wheel needs is pinned to the version installed where the kit is made — the
environment the instructor's tests ran in — so a student installs what was tested::

    pip install -r requirements.txt          # inside the kit's folder

The closure is read from the wheel's own requirements through the installed
distributions' metadata, with environment markers evaluated here; a dependency that
only another platform needs (``pywin32`` on Windows) is left to pip to resolve there.
JupyterLab, when this environment lacks it, is resolved by pip with everything installed here
as constraints (:func:`pinned_requirements`).
"""

from __future__ import annotations

import email.parser
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..errors import KitError, KitRootError, LabDistributionError
from ..labs import get_lab, lab_ids
from ._packaging import (
    FRONT_END,
    FULL,
    LAB_ANSWER_PATTERNS,
    PROJECT_NAME,
    STUDENT,
    LabDistribution,
    NotInstalledError,
    VersionConflictError,
    WheelBuildError,
    build_wheel,
    installed_closure,
    lab_distributions,
    retarget_wheel,
)

INSTALL_COMMAND = "pip install -r requirements.txt"


@dataclass(frozen=True)
class Kit:
    """What :func:`build_kit` wrote."""

    directory: Path
    notebooks: tuple[Path, ...]
    wheel: Path
    requirements: Path
    readme: Path
    pins: tuple[str, ...]
    lab_wheels: tuple[Path, ...] = ()
    """The wheels of the distributions the kit's labs come from (a course's own lab package), requiring the student build."""


def repository_root(root: str | Path = ".") -> Path:
    """``root`` when it is this project's repository root (pyproject, package, student notebooks), else :class:`KitRootError`."""
    root = Path(root).resolve()
    pyproject = root / "pyproject.toml"
    notebooks = [root / "assignments" / f"{lab}.ipynb" for lab in _kit_labs(root)]
    is_ours = pyproject.is_file() and f'name = "{PROJECT_NAME}"' in pyproject.read_text(encoding="utf-8")
    if not (is_ours and (root / "mlsys_grader").is_dir() and notebooks):
        raise KitRootError(f"run this from the {PROJECT_NAME} repository root (the folder with pyproject.toml, mlsys_grader/ "
                           f"and assignments/), or pass --root; {root} is not it")
    return root


def _kit_labs(root: Path) -> list[str]:
    return [lab for lab in lab_ids() if (root / "assignments" / f"{lab}.ipynb").is_file()]


def _wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        name = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
        if name is None:
            raise KitError(f"{wheel.name} has no METADATA; rebuild it")
        return email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))


def pinned_requirements(requires: list[str]) -> list[str]:
    """``name==version`` for every distribution ``requires`` needs, transitively: the versions installed here.

    The front end (:data:`~mlsys_grader.staff._packaging.FRONT_END`, JupyterLab) is pinned from here too when it is
    installed; staff's environment need not have it, and then pip resolves the whole closure for this Python and
    platform with every distribution installed here as a constraint (:func:`resolved_pins`), so only what this
    environment lacks comes from the index.  Raises :class:`KitError` when anything else is not installed, or
    installed at a version its dependant does not accept: the kit pins what this environment has.
    """
    front = {_requirement_name(line) for line in FRONT_END}
    ours = [line for line in requires if _requirement_name(line) not in front]
    theirs = [line for line in requires if _requirement_name(line) in front]
    try:
        closure = installed_closure(ours, needed_by=PROJECT_NAME)
    except NotInstalledError as exc:
        raise KitError(f"{exc.name} (needed by {exc.needed_by}) is not installed here; install the project first "
                       f"(`pip install .`) so the kit pins what you tested") from exc
    except VersionConflictError as exc:
        raise KitError(f"{exc.needed_by} needs {exc.requirement}, but {exc.name} {exc.installed} is installed here; "
                       "reinstall the project (`pip install .`) before making the kit") from exc
    pins = [pinned.pin for _, pinned in sorted(closure.items())]
    if not theirs:
        return pins
    try:
        front_closure = installed_closure(theirs, needed_by=STUDENT.name)
    except (NotInstalledError, VersionConflictError):
        # every distribution installed here is a constraint: what the front end shares with this environment
        # (requests, urllib3 …) is pinned to the version here as well, and only what is missing comes from the index
        return resolved_pins(requires, _installed_pins())
    return [pinned.pin for _, pinned in sorted({**closure, **front_closure}.items())]


def _installed_pins() -> list[str]:
    """``name==version`` of every distribution installed here (the first found of each name, as imports find it)."""
    from packaging.utils import canonicalize_name  # here: see installed_closure

    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonicalize_name(name), f"{name}=={dist.version}")
    return [pin for _, pin in sorted(found.items())]


def resolved_pins(requires: list[str], constraints: list[str]) -> list[str]:
    """pip's resolution of ``requires`` for this Python and platform, each of ``constraints`` (``name==version``) kept,
    as ``name==version`` sorted by canonical name (``pip install --dry-run --ignore-installed --report``)."""
    from packaging.utils import canonicalize_name  # here: see installed_closure

    with tempfile.TemporaryDirectory(prefix="mlsys-kit-resolve-") as scratch:
        folder = Path(scratch)
        (folder / "requirements.txt").write_text("".join(f"{line}\n" for line in requires), encoding="utf-8")
        (folder / "constraints.txt").write_text("".join(f"{line}\n" for line in constraints), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                               "--disable-pip-version-check", "--report", str(folder / "report.json"),
                               "-r", str(folder / "requirements.txt"), "-c", str(folder / "constraints.txt")],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise KitError(f"pip could not resolve the kit's requirements with the versions installed here (exit "
                           f"{done.returncode}): {done.stderr.strip()[-800:]}")
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    found = {canonicalize_name(item["metadata"]["name"]): f"{item['metadata']['name']}=={item['metadata']['version']}"
             for item in report["install"]}
    return [pin for _, pin in sorted(found.items())]


def _python_words(requires_python: str | None) -> str:
    """``Python 3.11 to 3.13`` for ``>=3.11,<3.14``; the specifier itself otherwise."""
    # packaging here, not at the top: ``import mlsys_grader`` loads this module for the notebook (see installed_closure)
    from packaging.specifiers import SpecifierSet

    if not requires_python:
        return "Python 3"
    specifiers = {spec.operator: spec.version for spec in SpecifierSet(requires_python)}
    low, high = specifiers.get(">="), specifiers.get("<")
    if low and high and low.count(".") == 1 and high.count(".") == 1 and low.split(".")[0] == high.split(".")[0]:
        major, newest = high.split(".")[0], int(high.split(".")[1]) - 1
        return f"Python {low} to {major}.{newest}"
    return f"Python {requires_python}"


KERNEL_NAME = "mlsys-lab"
KERNEL_COMMAND = f'python -m ipykernel install --user --name {KERNEL_NAME} --display-name "MLSys lab (kit)"'
"""The kit README's one line that registers the kit environment's kernel for another Jupyter (VS Code, a JupyterLab
installed elsewhere); ``jupyter lab`` from the kit's environment needs none (ipykernel's own ``python3`` is there)."""

README = """\
# {labs} notebooks (MLSysBook)

Install everything once, from a terminal inside this folder ({python}; a fresh virtual
environment is best): the labs' packages, JupyterLab and a Python kernel.

    {command}

Then open a lab, from the same terminal (its browser tab opens by itself):

    {open}

Set `TRACK` in the first code cell to your track and run the cells from the top: predict, run,
capture, part by part. Each notebook saves `<lab>-submission.json` next to itself. Save the
notebook (File > Save), then run its last cell, `lab.export()`: it says what is still missing
and writes `<lab>_<timestamp>.zip`, the file you upload.

To use this environment from another Jupyter instead (VS Code, a JupyterLab you already have),
register its kernel once, then pick the kernel "MLSys lab (kit)":

    {kernel}
"""


def build_kit(output: str | Path, root: str | Path = ".") -> Kit:
    """Write the student kit into ``output`` (created if needed; earlier kit files there are replaced)."""
    root = repository_root(root)
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    notebooks = []
    for lab in _kit_labs(root):
        target = output / f"{lab}.ipynb"
        shutil.copyfile(root / "assignments" / f"{lab}.ipynb", target)
        notebooks.append(target)
    distributions = [d for d in lab_distributions() if set(d.labs) & {path.stem for path in notebooks}]
    with tempfile.TemporaryDirectory(prefix="mlsys-kit-") as scratch:
        try:
            built = build_wheel(root, Path(scratch), STUDENT)
        except WheelBuildError as exc:
            if exc.returncode is not None:
                raise KitError(f"the wheel did not build (pip wheel exit {exc.returncode}): {exc.stderr[-500:]}") from exc
            raise KitError(str(exc)) from exc
        labs = [_lab_wheel(distribution, Path(scratch) / "labs") for distribution in distributions]
        for old in (*output.glob(FULL.wheel_glob), *output.glob(STUDENT.wheel_glob)):  # a kit made before the student build
            old.unlink()
        wheel = output / built.name
        shutil.copyfile(built, wheel)
        lab_wheels = []
        for lab_wheel in labs:
            for old in output.glob(f"{lab_wheel.name.split('-', 1)[0]}-*.whl"):  # this distribution's, from an earlier kit
                old.unlink()
            lab_wheels.append(output / lab_wheel.name)
            shutil.copyfile(lab_wheel, lab_wheels[-1])
    info = _wheel_metadata(wheel)
    # the lab wheels' own requirements are pinned too, except the one on this package (the student build, beside them)
    own = {PROJECT_NAME, STUDENT.name}
    lab_requires = [line for path in lab_wheels for line in _wheel_metadata(path).get_all("Requires-Dist") or []
                    if _requirement_name(line) not in own]
    pins = pinned_requirements([*(info.get_all("Requires-Dist") or []), *lab_requires])
    requirements = output / "requirements.txt"
    requirements.write_text(
        f"# The labs' packages, pinned to the versions they were tested with. Inside this folder run:\n"
        f"#   {INSTALL_COMMAND}\n./{wheel.name}\n" + "".join(f"./{path.name}\n" for path in lab_wheels)
        + "".join(f"{pin}\n" for pin in pins), encoding="utf-8")
    readme = output / "README.md"
    readme.write_text(README.format(labs=_lab_words(path.stem for path in notebooks),
                                    python=_python_words(info.get("Requires-Python")), command=INSTALL_COMMAND,
                                    open=open_command(notebooks[0].name), kernel=KERNEL_COMMAND), encoding="utf-8")
    return Kit(output, tuple(notebooks), wheel, requirements, readme, tuple(pins), tuple(lab_wheels))


def open_command(notebook: str) -> str:
    """The kit README's second line: ``jupyter lab lab07.ipynb``."""
    return f"jupyter lab {notebook}"


def _lab_words(labs: Iterable[str]) -> str:
    """``Lab 07 and Lab 11``: each lab's title up to its dash (the whole title when it has none), joined."""
    names = [get_lab(lab).title.split(" — ")[0].strip() for lab in labs]
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def _requirement_name(line: str) -> str:
    from packaging.requirements import Requirement  # here: see installed_closure
    from packaging.utils import canonicalize_name

    return canonicalize_name(Requirement(line).name)


def _lab_wheel(distribution: LabDistribution, scratch: Path) -> Path:
    """The lab distribution's wheel, requiring the student build instead of this package (the kit installs that),
    without the lab's hand-written answers (solutions, left out of the student build's own labs too)."""
    try:
        built = distribution.wheel(scratch / "built")
    except WheelBuildError as exc:
        raise KitError(f"the wheel of {distribution.name} (labs {', '.join(distribution.labs)}) did not build: "
                       f"{exc.stderr[-500:] or exc}") from exc
    except LabDistributionError as exc:
        raise KitError(str(exc)) from exc
    if built is None:
        raise KitError(f"{distribution.name} {distribution.version} (labs {', '.join(distribution.labs)}) is installed from "
                       f"an index, so the kit cannot ship it built for {STUDENT.name}: install it from its folder or "
                       "wheel file (pip install PATH) and make the kit again")
    return retarget_wheel(built, scratch / "student", {PROJECT_NAME: STUDENT.name}, LAB_ANSWER_PATTERNS)
