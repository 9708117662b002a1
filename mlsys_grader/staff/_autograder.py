"""``mlsys-grader autograder``: build each lab's Gradescope autograder zip from its Otter master.

Steps per lab: copy the master's folder to a scratch directory, run ``otter assign`` there
(the masters stay the single source of the tests), then rewrite the zip it made so that

- ``run_autograder`` is one line that execs this package's grader (:mod:`mlsys_grader.gradescope`) in the
  image's environment — Otter's runner, which executes the notebook as root, is not used;
- ``setup.sh`` is Otter's, without what a PDF-less, conda-kernel-less run never uses (the
  Chromium download, ``nb_conda_kernels``), plus two steps: let the sandbox's user enter
  ``/root`` (where the environment lives) and check the environment;
- the environment is pinned to *this* environment (:mod:`._lock`): the Python version and
  every package the grader and Otter need, at the versions installed here, plus a wheel of
  this package built from the source tree and shipped in the zip, and a wheel of each
  distribution a lab comes from (a course's own lab package: :func:`lab_distribution_wheels`);
- ``otter_config.json`` configures :class:`~mlsys_grader.gradescope.ScoreOfRecordPlugin`
  with the autograder's options (:class:`~mlsys_grader.gradescope.AutograderOptions`), PDFs and grading from the log off.

The build needs the source tree (``pyproject.toml``, ``mlsys_grader/``, ``solutions/``): from
an installed copy of the package it is found in the working directory or given as ``root``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import AssignError, AutograderBuildError, LabDistributionError
from ..gradescope import AutograderOptions, with_options
from ..labs import lab_ids, lab_modules
from . import _packaging
from ._assign import master_path, run_otter_assign
from ._lock import Lock, lock

GRADESCOPE_SOURCE = "/autograder/source"
MINIFORGE_ENVS = "/root/miniforge3/envs"
LOCK_NAME = "requirements-lock.txt"
SANDBOX_PACKAGES = ("ipykernel", "nbclient", "jupyter_client")
"""Roots the sandbox needs beyond the package's own dependencies (the kernel and the notebook client)."""
IMAGE_ALWAYS = ("mlsysim",)
"""Roots pinned whatever grading imports: the image builds its replay tables with mlsysim at ``setup.sh``
(:func:`mlsys_grader.gradescope._runner.build_replay_tables`), and a lab without a table replays live through it, so
it must stay installable even when grading a table-covered bundle no longer imports it (the pin walk of
:func:`imported_distributions` would not see it)."""


@dataclass(frozen=True)
class BuiltAutograder:
    lab: str
    path: Path
    wheel: str
    assign_seconds: float
    pins: int
    lab_wheels: tuple[str, ...] = ()
    """The wheels of the distributions labs come from (a course's own lab package), shipped beside ``wheel``."""


def _is_project(folder: Path) -> bool:
    pyproject = folder / "pyproject.toml"
    return (pyproject.is_file() and (folder / "mlsys_grader").is_dir()
            and re.search(r'^name\s*=\s*"mlsys-grader"', pyproject.read_text(encoding="utf-8"), re.M) is not None)


def project_root(root: str | os.PathLike | None = None) -> Path:
    """The source tree: ``root`` if given, else the working directory, else the tree this package runs from."""
    candidates = [Path(root)] if root else [Path.cwd(), Path(__file__).resolve().parents[2]]
    for folder in candidates:
        if _is_project(folder.resolve()):
            return folder.resolve()
    where = Path(root) if root else Path.cwd()
    raise AutograderBuildError(f"{where} is not the mlsys-grader repository: run this command from the repository root "
                               "(the folder holding pyproject.toml, mlsys_grader/ and solutions/) or pass --root PATH")


def default_masters(root: Path, labs: Iterable[str] | None = None) -> dict[str, Path]:
    """Each lab's Otter master where the lab declares it (:func:`._assign.master_path`), for every registered lab by default."""
    return {lab: master_path(root, lab) for lab in labs or lab_ids()}


def _requirement_lines(text: str) -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [line for line in lines if line]


def image_roots(root: Path) -> list[str]:
    """What the image needs: the package's dependencies (pyproject), ``autograder/requirements.txt``, the sandbox's,
    and :data:`IMAGE_ALWAYS`."""
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    roots = list(project.get("dependencies", []))
    extra = root / "autograder" / "requirements.txt"
    if extra.is_file():
        roots += _requirement_lines(extra.read_text(encoding="utf-8"))
    return roots + list(SANDBOX_PACKAGES) + list(IMAGE_ALWAYS)


def imported_distributions() -> list[str]:
    """Distributions the grader imports when it grades (optional imports included, e.g. scipy by mlsysim).

    Measured in a fresh interpreter that grades a solved bundle of every lab, so the image
    has whatever changes the grader's behaviour here.
    """
    script = ("import json, sys\nfrom importlib import metadata\nfrom mlsys_grader import grade_bundle, solve\n"
              "from mlsys_grader.labs import lab_ids\n"
              "for lab in lab_ids():\n    grade_bundle(solve(lab, 'cloud').to_json())\n"
              "owners = metadata.packages_distributions()\n"
              "print(json.dumps(sorted({d for m in list(sys.modules) for d in owners.get(m.split('.')[0], [])})))\n")
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True)
    if done.returncode != 0:
        raise AutograderBuildError(f"grading a solved bundle failed while pinning the image:\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def build_wheel(dest: Path, root: Path) -> Path:
    """Build the image's wheel of this package (:data:`~mlsys_grader.staff._packaging.IMAGE`: without staff/, the
    review page and the labs' answers) into ``dest`` from a clean copy of the source."""
    try:
        return _packaging.build_wheel(root, dest, _packaging.IMAGE)
    except _packaging.WheelBuildError as exc:
        raise AutograderBuildError(str(exc)) from exc


def environment_yml(original: str, pinned: Lock, wheel_name: str, lab_wheels: Sequence[str] = ()) -> tuple[str, str]:
    """(environment.yml, its name): Otter's environment with the Python version and every pip package pinned, then
    this package's wheel and the wheels of the distributions labs come from (``lab_wheels``), all shipped in the zip."""
    import yaml

    environment = yaml.safe_load(original) or {}
    if not isinstance(environment, dict) or not isinstance(environment.get("dependencies", []), list):
        raise AutograderBuildError(f"environment.yml from otter assign is not a conda environment: {original[:200]!r}")
    name = str(environment.get("name") or "otter-env")
    environment["dependencies"] = [f"python={pinned.python}", f"pip={pinned.pip}" if pinned.pip else "pip",
                                   {"pip": [*pinned.pins, *(f"{GRADESCOPE_SOURCE}/{name}" for name in (wheel_name, *lab_wheels))]}]
    return yaml.safe_dump(environment, sort_keys=False), name


def run_autograder_script(env_name: str) -> str:
    return ("#!/usr/bin/env bash\n"
            "# mlsys-grader grades the upload in one process (see autograder/README.md): the score of record is\n"
            "# written before any student code could run, and no student code runs as root. exec: bash reads no\n"
            "# further line of this file.\n"
            f"exec {MINIFORGE_ENVS}/{env_name}/bin/python -I -m mlsys_grader.gradescope /autograder\n")


SETUP_DROPS = (
    re.compile(r"^mamba install .*nb_conda_kernels.*$", re.M),  # the notebook runs in the environment's own kernel
    re.compile(r"^mamba run .*playwright install.*$", re.M),    # a browser for PDFs; PDFs are off
)


def setup_sh(original: str, env_name: str) -> str:
    """Otter's ``setup.sh`` without the browser download and conda kernels, plus the sandbox's two steps."""
    text = original
    for pattern in SETUP_DROPS:
        text, count = pattern.subn("", text)
        if count != 1:
            raise AutograderBuildError(f"setup.sh from otter assign changed: expected one line matching {pattern.pattern}")
    python = f"{MINIFORGE_ENVS}/{env_name}/bin/python"
    return (text.rstrip("\n") + "\n\n"
            "# mlsys-grader: a notebook re-run executes as an unprivileged user, which must be able to start this\n"
            "# environment's Python under /root: others may enter /root (not list or write it).\n"
            "chmod 711 /root\n"
            "# The check also builds each lab's replay table through the pinned mlsysim, as root and before any student\n"
            "# code exists, into the environment (root's): the score of record is then a lookup, without importing mlsysim.\n"
            f"{python} -I -m mlsys_grader.gradescope --check-image\n")


def course_files(course: str | os.PathLike | None) -> list[tuple[Path, str]]:
    """(file, name in the zip) for the course file and the extensions CSV it names, checked now (a bad one fails
    the build, not every upload); the course file is always ``course.toml``, the CSV keeps its relative path."""
    if course is None:
        return []
    from ..course import read_course  # the course package loads only when a course file ships
    from ..errors import CourseFileError

    try:
        read = read_course(course)
    except CourseFileError as exc:
        raise AutograderBuildError(f"--course: {exc}") from exc
    files = [(Path(course), "course.toml")]
    if read.file.extensions:
        relative = Path(read.file.extensions)
        if relative.is_absolute() or ".." in relative.parts:
            raise AutograderBuildError(f"--course: {course} names extensions {read.file.extensions!r}; to ship it in the "
                                       "autograder zip it must be a path inside the course file's folder")
        files.append((Path(course).resolve().parent / relative, relative.as_posix()))
    return files


def rewrite_zip(assigned: Path, target: Path, options: AutograderOptions, wheel: Path, pinned: Lock,
                extra: Sequence[tuple[Path, str]] = (), *, lab_wheels: Sequence[Path] = ()) -> None:
    """Copy ``assigned`` to ``target`` with our run_autograder, setup.sh, pinned environment, options and wheel,
    the wheels of the distributions labs come from (``lab_wheels``, installed after it), and ``extra`` files, such
    as the course file, at the zip's root: Gradescope puts them in /autograder/source."""
    with zipfile.ZipFile(assigned) as source:
        names = source.namelist()
        for required in ("otter_config.json", "environment.yml", "run_autograder", "setup.sh"):
            if required not in names:
                raise AutograderBuildError(f"{assigned.name}: expected {required} from otter assign; the zip holds {names}")
        environment, env_name = environment_yml(source.read("environment.yml").decode(), pinned, wheel.name,
                                                [lab_wheel.name for lab_wheel in lab_wheels])
        replaced = {
            "environment.yml": environment.encode(),
            "setup.sh": setup_sh(source.read("setup.sh").decode(), env_name).encode(),
            "run_autograder": run_autograder_script(env_name).encode(),
            "otter_config.json": json.dumps(_otter_config(json.loads(source.read("otter_config.json")), options),
                                            indent=2).encode(),
            "requirements.txt": pinned.text(f"Pinned from the build environment (Python {pinned.python}); "
                                            "installed through environment.yml").encode()
                                + "".join(f"{GRADESCOPE_SOURCE}/{shipped.name}\n" for shipped in (wheel, *lab_wheels)).encode(),
        }
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
            for name in names:
                info = source.getinfo(name)
                out.writestr(info, replaced.pop(name) if name in replaced else source.read(name))
            for name, data in replaced.items():
                out.writestr(name, data)
            for shipped in (wheel, *lab_wheels):
                out.write(shipped, arcname=shipped.name)
            for path, name in extra:
                out.write(path, arcname=name)


def _otter_config(original: dict, options: AutograderOptions) -> dict:
    config = with_options(original, options)
    config["grade_from_log"] = False
    config["pdf"] = False
    return config


def assign(master: Path, lab: str, scratch: Path, *, run_tests: bool) -> Path:
    """Run ``otter assign`` on the master (:func:`._assign.run_otter_assign`, the one way it runs); the zip it wrote."""
    if not master.is_file():
        raise AutograderBuildError(f"{lab}: expected an Otter master notebook at {master}, found none")
    try:
        dist = run_otter_assign(master, lab, scratch / lab / "dist", run_tests=run_tests)
    except AssignError as exc:
        raise AutograderBuildError(f"{lab}: {exc}") from exc
    zips = sorted((dist / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise AutograderBuildError(f"{lab}: expected one autograder zip from otter assign, found {[z.name for z in zips]}")
    return zips[0]


def build_autograders(output_dir: str | os.PathLike, masters: dict[str, Path] | None = None, *, run_tests: bool = True,
                      wheel: Path | None = None, root: str | os.PathLike | None = None,
                      options: dict | None = None, course: str | os.PathLike | None = None) -> list[BuiltAutograder]:
    """Build ``<lab>-autograder.zip`` and ``requirements-lock.txt`` in ``output_dir``.

    ``masters`` default to every registered lab's master (:func:`default_masters`);
    ``options`` are :class:`~mlsys_grader.gradescope.AutograderOptions` fields other than ``lab``; ``course`` is a course
    file (late policy, :func:`mlsys_grader.course.read_course`) shipped in every zip with its extensions CSV.
    """
    tree = project_root(root)
    masters = masters or default_masters(tree)
    for lab, master in masters.items():  # fail on a missing master, or a lab the zip cannot ship, before the slow steps
        if not Path(master).is_file():
            raise AutograderBuildError(f"{lab}: expected an Otter master notebook at {master}, found none")
    unshippable = sorted(set(masters) - shippable_labs())
    if unshippable:
        raise AutograderBuildError(f"{', '.join(unshippable)}: registered in this process only (register_lab), so the "
                                   "image could not load it; install the distribution it comes from "
                                   "(docs/adding-a-lab.md) and build again")
    lab_options = {lab: AutograderOptions(lab=lab, **(options or {})) for lab in masters}
    shipped = course_files(course)
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    built = []
    with tempfile.TemporaryDirectory(prefix="mlsys-autograder-") as scratch_name:
        scratch = Path(scratch_name)
        lab_wheels, from_index = lab_distribution_wheels(scratch / "labs")
        # a lab distribution shipped as a wheel is walked for its requirements but not pinned (it is not on an index)
        pinned = lock(image_roots(tree) + imported_distributions() + from_index,
                      exclude=(_packaging.PROJECT_NAME, *(name for name, _ in lab_wheels)))
        (output / LOCK_NAME).write_text(pinned.text(f"mlsys-grader autograder image, Python {pinned.python}"), encoding="utf-8")
        wheel = wheel or build_wheel(scratch / "wheel", tree)
        shipped_labs = [path for _, path in lab_wheels]
        for lab, master in masters.items():
            started = time.perf_counter()
            assigned = assign(Path(master).resolve(), lab, scratch, run_tests=run_tests)
            target = output / f"{lab}-autograder.zip"
            rewrite_zip(assigned, target, lab_options[lab], wheel, pinned, shipped, lab_wheels=shipped_labs)
            built.append(BuiltAutograder(lab, target, wheel.name, time.perf_counter() - started, len(pinned.pins),
                                         tuple(path.name for path in shipped_labs)))
    return built


def shippable_labs() -> set[str]:
    """The registered labs a zip can ship: this package's own and those of installed distributions (entry points)."""
    own = {lab for lab, module in lab_modules().items() if module.split(".")[0] == __name__.split(".")[0]}
    return own | {lab for distribution in _packaging.lab_distributions() for lab in distribution.labs}


def lab_distribution_wheels(dest: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """([(distribution, its wheel in ``dest``)], [pins]) for the distributions labs come from
    (:func:`mlsys_grader.staff._packaging.lab_distributions`): a wheel for each one installed from a folder or a
    wheel file; ``name==version`` for one installed from an index, which the image installs from there.
    Every zip ships all of them: the image check loads every registered lab."""
    wheels: list[tuple[str, Path]] = []
    pins: list[str] = []
    for distribution in _packaging.lab_distributions():
        try:
            built = distribution.wheel(dest / "built")
        except (_packaging.WheelBuildError, LabDistributionError) as exc:
            raise AutograderBuildError(f"labs {', '.join(distribution.labs)} ({distribution.name}): {exc}") from exc
        if built is None:
            pins.append(f"{distribution.name}=={distribution.version}")
        else:  # without its answers, as this package's own labs ship in the image
            wheels.append((distribution.name, _packaging.retarget_wheel(built, dest, {}, _packaging.LAB_ANSWER_PATTERNS)))
    return wheels, pins
