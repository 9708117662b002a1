"""``mlsys-grader kit``: the student kit — both notebooks, the student build's wheel, a fully pinned
requirements.txt and a README with the one install command — made after README's quick-start install, and
used by a student in a fresh environment holding nothing but the kit, on every Python the package declares.
The kit's wheel (``mlsys-grader-student``) is the same source without staff's tools: no ``solve``.

The end-to-end tests build real virtual environments with pip (PyPI reachable) and execute the notebooks in
them with nbclient; they are marked ``slow``.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import email.parser
import hashlib
import importlib.util
import itertools
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from mlsys_grader import __version__, cli
from mlsys_grader.api import grade_file
from mlsys_grader.core.embed import BUNDLE_MIME
from mlsys_grader.errors import KitError, LabDistributionError, WheelBuildError
from mlsys_grader.labs import lab_ids
from mlsys_grader.staff import INSTALL_COMMAND
from mlsys_grader.staff._kit import KERNEL_COMMAND, KERNEL_NAME, _installed_pins, pinned_requirements, resolved_pins
from mlsys_grader.staff._packaging import (
    FRONT_END,
    IMAGE,
    LAB_ANSWERS,
    STUDENT,
    installed_closure,
    lab_distributions,
    project_metadata,
    retarget_wheel,
)

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DECLARED = sorted({m.group(1) for c in PYPROJECT["classifiers"] if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))},
                  key=lambda v: int(v.split(".")[1]))
# Each Python runs both labs on its own tracks, so the kit test covers the tracks as well.
TRACKS_BY_PYTHON = {"3.11": ("cloud", "edge"), "3.12": ("tinyml", "mobile"), "3.13": ("edge", "cloud")}
"""The tracks each Python's run works, lab after lab (cycled): every track of the shipped labs is run on some Python."""
KIT_LABS = [lab for lab in lab_ids() if (ROOT / "assignments" / f"{lab}.ipynb").is_file()]
"""The registered labs with a student notebook: what the kit holds."""


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"solutions_{name}", ROOT / "solutions" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- what the package declares ---------------------------------------------------------------------
def test_the_declared_pythons_are_exactly_the_ones_the_kit_is_tested_on():
    supported = SpecifierSet(PYPROJECT["requires-python"])
    assert [f"3.{minor}" for minor in range(6, 20) if f"3.{minor}" in supported] == DECLARED == list(TRACKS_BY_PYTHON)
    assert not any(dep.startswith("tomli") for dep in PYPROJECT["dependencies"])  # 3.10 is not declared: tomllib is there


# -- making the kit -----------------------------------------------------------------------------------
def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


@pytest.mark.slow
def test_the_kit_holds_the_notebooks_the_wheel_pinned_requirements_and_a_readme(tmp_path, capsys):
    out = tmp_path / "kit"
    assert cli.main(["kit", "-o", str(out), "--root", str(ROOT)]) == 0
    printed = capsys.readouterr().out
    assert f"students run, inside that folder: {INSTALL_COMMAND}" in printed
    wheels = list(out.glob("mlsys_grader_student-*-py3-none-any.whl"))
    assert len(wheels) == 1 and sorted(p.name for p in out.iterdir()) == sorted(
        ["README.md", *(f"{lab}.ipynb" for lab in KIT_LABS), "requirements.txt", wheels[0].name])
    for lab in KIT_LABS:
        assert (out / f"{lab}.ipynb").read_bytes() == (ROOT / "assignments" / f"{lab}.ipynb").read_bytes()
    lines = _lines(out / "requirements.txt")
    assert lines[0] == f"./{wheels[0].name}"
    pins = dict(line.split("==") for line in lines[1:])
    assert len(pins) == len(lines) - 1 >= 50 and all(re.fullmatch(r"[A-Za-z0-9._-]+", name) for name in pins)
    here = {name: version for name in pins if (version := _installed_version(name))}
    assert here == {name: pins[name] for name in here}  # what this test environment runs, at its versions
    ours = installed_closure([line for line in STUDENT.dependencies if line not in FRONT_END])
    assert {(p.name, p.version) for p in ours.values()} <= set(pins.items())  # all but the front end: as installed here
    assert pins["mlsysim"] == "0.3.0" and {"ipykernel", "jupyterlab", "jupyter_server", "nbclient"} <= set(pins)
    assert not {"otter-grader", "pandas", "playwright", "sphinx", "python-on-whales"} & {n.lower() for n in pins}
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert f"    {INSTALL_COMMAND}\n" in readme and f"    jupyter lab {KIT_LABS[0]}.ipynb\n" in readme
    assert f"    {KERNEL_COMMAND}\n" in readme and "`lab.export()`" in readme and "grader." not in readme
    assert f"Python {DECLARED[0]} to {DECLARED[-1]}" in readme
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
    rubrics = {str(p.relative_to(ROOT)) for p in (ROOT / "mlsys_grader" / "labs").rglob("*.toml") if p.name not in LAB_ANSWERS}
    assert rubrics and rubrics <= set(names) and "mlsys_grader/student/_session.py" in names  # declarations, not answers
    assert not [name for name in names if STUDENT.leaves_out(name)]


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# -- the student build ----------------------------------------------------------------------------------------
# NOTE: the tests run in an editable install, whose import hook would find ``mlsys_grader.staff`` in this
# repository for a wheel unpacked elsewhere; the probe drops that hook so only the unpacked wheel is seen.
PROBE = """\
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
import mlsys_grader, mlsys_grader.student
from mlsys_grader import cli
assert mlsys_grader.__file__.startswith(sys.argv[1]), mlsys_grader.__file__
import mlsys_grader.core.embed  # the notebook embeds its bundle through it
for name in ("mlsys_grader.staff", "mlsys_grader.replay._table"):
    try:
        __import__(name)
    except ModuleNotFoundError as exc:
        assert exc.name == name, exc
    else:
        raise SystemExit(name + " is importable")
try:
    from mlsys_grader import solve
except ImportError as exc:
    print("no solve:", exc)
assert "solve" not in mlsys_grader.__all__ and not cli.staff_installed()
print("commands:", " ".join(a for action in cli.build_parser()._subparsers._group_actions for a in action.choices))
sys.exit(cli.main(["solve", "--lab", "lab07", "--track", "cloud", "-o", "solved.json"]))
"""


@pytest.fixture(scope="module")
def student_wheel(built_wheel) -> Path:
    return built_wheel(STUDENT)


@pytest.mark.slow  # builds the student wheel (once per source digest)
def test_the_student_build_is_the_same_version_under_its_own_name_without_staff_modules(student_wheel):
    assert student_wheel.name == f"mlsys_grader_student-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(student_wheel) as wheel:
        names = wheel.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(wheel.read(info).decode("utf-8"))
        entry_points = wheel.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode("utf-8")
    assert (meta["Name"], meta["Version"]) == ("mlsys-grader-student", __version__)
    assert SpecifierSet(meta["Requires-Python"]) == SpecifierSet(PYPROJECT["requires-python"])
    requires = [Requirement(line) for line in meta.get_all("Requires-Dist")]
    # what a student runs (issue 20): no Otter-Grader (Playwright, Sphinx, python-on-whales), no pandas, with JupyterLab
    assert [str(r) for r in requires if r.marker is None] == [str(Requirement(line)) for line in STUDENT.dependencies]
    assert not {"otter-grader", "pandas", "pebble", "nbformat"} & {r.name for r in requires}
    assert [line for line in STUDENT.dependencies if line not in PYPROJECT["dependencies"]] == list(FRONT_END) == [
        "jupyterlab>=4.2,<5"]  # every other specifier is the project's own
    assert "[console_scripts]\nmlsys-grader = mlsys_grader.cli:main" in entry_points
    modules = {name for name in names if name.endswith(".py")}
    assert not {m for m in modules if m.startswith("mlsys_grader/staff/")}  # solve, assign, the autograder and kit builders
    assert not any("solve" in m or "_kit" in m for m in modules)
    built_from = {str(p.relative_to(ROOT)) for p in (ROOT / "mlsys_grader").rglob("*.py")}
    assert modules == {m for m in built_from if not STUDENT.leaves_out(m)}  # everything else, from this tree
    answers = {str(p.relative_to(ROOT)) for name in LAB_ANSWERS for p in (ROOT / "mlsys_grader" / "labs").glob(f"*/{name}")}
    assert answers and not answers & set(names)  # every lab's hand-written answers are solutions
    for name in ("core/generated.py", "core/capture.py", "student/_session.py", "cli.py", "templates/self_check.html",
                 "core/embed.py", "gradescope/_runner.py"):
        assert f"mlsys_grader/{name}" in names
    rubrics = {str(p.relative_to(ROOT)) for p in (ROOT / "mlsys_grader" / "labs").rglob("*.toml")} - answers
    assert rubrics and rubrics <= set(names)  # each lab's declaration (or rubric) ships beside its code


@pytest.mark.slow  # builds the full wheel (once per source digest)
def test_the_full_build_for_staff_keeps_every_module(built_wheel):
    full = built_wheel()
    assert full.name == f"mlsys_grader-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(full) as wheel:
        modules = {name for name in wheel.namelist() if name.endswith(".py")}
    assert modules == {str(p.relative_to(ROOT)) for p in (ROOT / "mlsys_grader").rglob("*.py")}
    assert {"mlsys_grader/staff/_solve.py", "mlsys_grader/staff/_packaging.py", "mlsys_grader/staff/_autograder.py"} <= modules


@pytest.mark.slow  # builds the image's wheel (once per source digest)
def test_the_gradescope_image_build_is_mlsys_grader_without_staff_the_review_page_and_the_answers(built_wheel):
    image = built_wheel(IMAGE)  # what `mlsys-grader autograder` ships (staff/_autograder.py)
    assert image.name == f"mlsys_grader-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(image) as wheel:
        names = set(wheel.namelist())
        meta = email.parser.Parser().parsestr(wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    assert (meta["Name"], [str(Requirement(r)) for r in meta.get_all("Requires-Dist") if "extra ==" not in r]) == (
        "mlsys-grader", [str(Requirement(line)) for line in PYPROJECT["dependencies"]])
    tree = {str(p.relative_to(ROOT)) for p in (ROOT / "mlsys_grader").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    left_out = {"mlsys_grader/course/_review_app.py", "mlsys_grader/templates/review.html"}
    left_out |= {name for name in tree if name.startswith("mlsys_grader/staff/") or name.endswith(("/answers.py", "/answers.toml"))}
    assert {name for name in names if name.startswith("mlsys_grader/")} == tree - left_out
    assert {"mlsys_grader/gradescope/_runner.py", "mlsys_grader/replay/_table.py", "mlsys_grader/otter.py"} <= names


@pytest.mark.slow  # builds the student wheel (once per source digest)
def test_the_student_build_imports_and_its_command_line_has_no_solve(student_wheel, tmp_path):
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(student_wheel) as wheel:
        wheel.extractall(unpacked)
    env = {**os.environ, "PYTHONPATH": str(unpacked)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(unpacked)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stdout.splitlines() == ["no solve: cannot import name 'solve' from 'mlsys_grader' "
                                        f"({unpacked / 'mlsys_grader' / '__init__.py'})", "commands: check schema rubric ledger"]
    assert done.stderr == ("mlsys-grader: `solve` is a course-staff command, not part of the student kit; "
                           "this install has check, schema, rubric, ledger\n")
    assert not (tmp_path / "solved.json").exists()


def test_the_student_metadata_changes_only_the_name_and_the_dependencies():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = tomllib.loads(text)["project"]
    leaner = tomllib.loads(project_metadata(text, replace(STUDENT, dependencies=("mlsysim==0.3.0", "pydantic>=2,<3"))))
    assert leaner["project"] == {**project, "name": "mlsys-grader-student", "dependencies": ["mlsysim==0.3.0", "pydantic>=2,<3"]}
    assert {k: v for k, v in leaner.items() if k != "project"} == {k: v for k, v in tomllib.loads(text).items() if k != "project"}
    odd = text.replace("dependencies = [", "dependencies   =   [", 1)  # valid TOML this rewrite does not recognise
    with pytest.raises(WheelBuildError, match=r"^pyproject.toml: could not set \[project\] name = 'mlsys-grader-student' "
                                              r"and its dependencies for the mlsys-grader-student build \(came out wrong: dependencies\)$"):
        project_metadata(odd, replace(STUDENT, dependencies=("pydantic>=2,<3",)))


def test_outside_the_repository_the_kit_says_what_to_do_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["kit", "-o", "kit"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith(
        "mlsys-grader kit: run this from the mlsys-grader repository root (the folder with pyproject.toml, mlsys_grader/ "
        "and assignments/), or pass --root;")
    assert not (tmp_path / "kit").exists()


def test_pins_come_from_this_environment_and_refuse_what_it_lacks():
    assert pinned_requirements(["tomli>=2; python_version < '3.11'"]) == []  # a marker false here pins nothing
    pins = pinned_requirements(["pydantic>=2,<3"])
    assert f"pydantic=={metadata.version('pydantic')}" in pins and any(p.startswith("pydantic_core==") for p in pins)
    with pytest.raises(KitError, match=r"^not-a-package-xyz \(needed by mlsys-grader\) is not installed here; install the "
                                       r"project first \(`pip install \.`\)"):
        pinned_requirements(["not-a-package-xyz>=1"])
    with pytest.raises(KitError, match=r"^mlsys-grader needs numpy<1, but numpy \S+ is installed here"):
        pinned_requirements(["numpy<1"])




@pytest.mark.slow
def test_the_front_ends_resolution_keeps_every_version_installed_here():
    """What the kit asks pip for when JupyterLab is not installed here: with this environment's versions as
    constraints, pip's resolution of requirements installed here is exactly their installed closure; a requirement
    the constraints exclude is refused in one KitError naming pip's reason (pip reaches its index)."""
    requires = ["pydantic>=2,<3", "jinja2>=3.1"]
    assert resolved_pins(requires, _installed_pins()) == pinned_requirements(requires)
    with pytest.raises(KitError, match=r"^pip could not resolve the kit's requirements with the versions installed here "
                                       r"\(exit 1\): .*pydantic"):
        resolved_pins(["pydantic<2"], _installed_pins())


# -- labs from another distribution (a course's own lab package) ---------------------------------------------
def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _tiny_wheel(folder: Path) -> Path:
    """A wheel as pip builds one: a module, METADATA (with a description after the headers) and a RECORD that matches."""
    members = {
        "course_x/__init__.py": b"LAB = None\n",
        "course_x/answers.py": b"ANSWERS = {}\n",
        "course_x-1.0.dist-info/METADATA": (b"Metadata-Version: 2.1\nName: course-x\nVersion: 1.0\n"
                                            b"Requires-Dist: mlsys-grader>=0.1\nRequires-Dist: numpy\n"
                                            b"Requires-Dist: mlsys_grader[review]; extra == \"staff\"\n\n"
                                            b"Requires-Dist: mlsys-grader (the description says so; left alone)\n"),
        "course_x-1.0.dist-info/entry_points.txt": b"[mlsys_grader.labs]\nlabx = course_x\n",
    }
    record = "".join(f"{_record_line(name, data)}\n" for name, data in members.items()) + "course_x-1.0.dist-info/RECORD,,\n"
    wheel = folder / "course_x-1.0-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in {**members, "course_x-1.0.dist-info/RECORD": record.encode()}.items():
            archive.writestr(name, data)
    return wheel


def test_a_lab_wheel_is_retargeted_to_the_student_build_and_its_record_still_matches(tmp_path):
    original = _tiny_wheel(tmp_path / "built")
    retargeted = retarget_wheel(original, tmp_path / "kit", {"mlsys-grader": STUDENT.name}, ("*/answers.py",))
    assert retargeted == tmp_path / "kit" / original.name
    with zipfile.ZipFile(original) as before, zipfile.ZipFile(retargeted) as after:
        assert [name for name in before.namelist() if name != "course_x/answers.py"] == after.namelist()
        info = after.read("course_x-1.0.dist-info/METADATA")
        assert info.decode().splitlines()[3:6] == ["Requires-Dist: mlsys-grader-student>=0.1", "Requires-Dist: numpy",
                                                    'Requires-Dist: mlsys-grader-student[review]; extra == "staff"']
        assert info.decode().endswith("\n\nRequires-Dist: mlsys-grader (the description says so; left alone)\n")
        record = after.read("course_x-1.0.dist-info/RECORD").decode().splitlines()
        assert record[1] == _record_line("course_x-1.0.dist-info/METADATA", info)
        assert record[0] == before.read("course_x-1.0.dist-info/RECORD").decode().splitlines()[0]
        assert not [row for row in record if row.startswith("course_x/answers.py,")] and len(record) == 4
        assert after.read("course_x/__init__.py") == before.read("course_x/__init__.py")
    with pytest.raises(WheelBuildError, match="would overwrite itself"):
        retarget_wheel(original, original.parent, {"mlsys-grader": STUDENT.name})


def _installed_lab_distribution(site: Path, direct_url: dict | None) -> None:
    info = site / "course_x-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: course-x\nVersion: 1.0\nRequires-Dist: mlsys-grader\n")
    (info / "entry_points.txt").write_text("[mlsys_grader.labs]\nlaby = course_x.laby\nlabx = course_x.labx\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))


def test_the_distributions_labs_come_from_are_found_by_their_entry_points(tmp_path, monkeypatch):
    assert lab_distributions() == []  # this environment: the shipped labs are this package's own, not entry points
    gone = tmp_path / "gone"
    _installed_lab_distribution(tmp_path / "site", {"url": gone.as_uri(), "dir_info": {"editable": True}})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    (found,) = lab_distributions()
    assert (found.name, found.version, found.labs, found.key, found.url) == ("course-x", "1.0", ("labx", "laby"), "course-x",
                                                                             gone.as_uri())
    with pytest.raises(LabDistributionError) as raised:
        found.wheel(tmp_path / "out")
    assert (raised.value.distribution, raised.value.labs, raised.value.url) == ("course-x", ("labx", "laby"), gone.as_uri())
    assert str(raised.value).startswith(f"course-x 1.0 (labs labx, laby) was installed from {gone.as_uri()}, which is not there")

    wheel = _tiny_wheel(tmp_path / "wheels")
    (tmp_path / "site" / "course_x-1.0.dist-info" / "direct_url.json").write_text(
        json.dumps({"url": wheel.as_uri(), "archive_info": {}}))
    copied = found.wheel(tmp_path / "out")
    assert copied == tmp_path / "out" / wheel.name and copied.read_bytes() == wheel.read_bytes()


def test_the_kit_refuses_a_lab_distribution_it_cannot_build_for_the_student_package(tmp_path, monkeypatch):
    from mlsys_grader.staff._kit import _lab_wheel

    _installed_lab_distribution(tmp_path / "site", None)  # from an index: no direct_url.json
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    (found,) = lab_distributions()
    assert found.url is None and found.wheel(tmp_path / "out") is None
    with pytest.raises(KitError, match=r"^course-x 1\.0 \(labs labx, laby\) is installed from an index, so the kit cannot "
                                       r"ship it built for mlsys-grader-student: install it from its folder or wheel file"):
        _lab_wheel(found, tmp_path / "scratch")

# -- a student with nothing but the kit (slow) ------------------------------------------------------------
def _run(command: list[str], *, cwd: Path, env: dict | None = None, timeout: int = 1800) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _interpreter(version: str) -> str | None:
    """A working ``python<version>``: on PATH, or installed by pyenv."""
    candidates = [shutil.which(f"python{version}")]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p) for p in pyenv.glob(f"{version}.*/bin/python{version}"))
    if sys.version.startswith(version + "."):
        candidates.insert(0, sys.executable)
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def _venv(python: str, where: Path) -> tuple[Path, dict]:
    _run([python, "-m", "venv", str(where)], cwd=where.parent)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PATH=f"{where / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(where),
               JUPYTER_DATA_DIR=str(where / "jupyter-data"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    return where / "bin", env


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> Path:
    """README's quick start in a fresh venv — ``pip install .`` from a copy of the repository (not editable), with
    this test environment's versions — then ``mlsys-grader kit -o DIR`` from the repository root."""
    base = tmp_path_factory.mktemp("instructor")
    source = base / "mlsys-grader"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for folder in ("mlsys_grader", "assignments"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    requires = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    (base / "constraints.txt").write_text("\n".join(pinned_requirements(requires)) + "\n", encoding="utf-8")
    bin_dir, env = _venv(sys.executable, base / "venv")
    _run([str(bin_dir / "pip"), "install", "--quiet", ".", "-c", str(base / "constraints.txt")], cwd=source, env=env)
    elsewhere = subprocess.run([str(bin_dir / "mlsys-grader"), "kit", "-o", "kit"], cwd=base, env=env, capture_output=True, text=True)
    assert elsewhere.returncode == 2 and elsewhere.stderr.count("\n") == 1 and "repository root" in elsewhere.stderr
    _run([str(bin_dir / "mlsys-grader"), "kit", "-o", str(base / "kit")], cwd=source, env=env)
    return base / "kit"


# A student's run of one notebook in the kit's kernel: every cell in order, the notebook saved before the export cell
# (as README says), then the export cell, then saved again.
DRIVER = """\
import sys
import nbformat
from nbclient import NotebookClient

path, workdir, kernel = sys.argv[1:4]
notebook = nbformat.read(path, as_version=4)
client = NotebookClient(notebook, timeout=900, kernel_name=kernel, resources={"metadata": {"path": workdir}})
with client.setup_kernel():
    for index, cell in enumerate(notebook.cells):
        if cell.source.strip().endswith("lab.export()"):
            nbformat.write(notebook, path)
        client.execute_cell(cell, index)
nbformat.write(notebook, path)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (urllib.error.URLError, ConnectionError):  # not listening yet
        return 0, b""


@contextlib.contextmanager
def _jupyter_lab(bin_dir: Path, env: dict, folder: Path):
    """JupyterLab from the kit's environment, headless on a free port; yields its base URL and token once
    ``/api/status`` answers (the server's log is in the assertion message when it does not)."""
    port, token = _free_port(), secrets.token_hex(16)
    log = (folder.parent / "jupyter.log").open("w")
    server = subprocess.Popen([str(bin_dir / "jupyter"), "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}",
                               # CI runs as root, which JupyterLab refuses unless told; a student's account is not root
                               *(["--allow-root"] if os.geteuid() == 0 else [])],
                              cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while _get(f"{base}/api/status?token={token}")[0] != 200:
            assert server.poll() is None and time.monotonic() < deadline, (folder.parent / "jupyter.log").read_text()
            time.sleep(0.5)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def kit_labs_run_on(version: str) -> list[str]:
    """The labs whose notebooks the kit test runs on Python ``version``: every lab on the oldest declared Python, one on
    each later one (a different lab each, in turn).  What a later Python changes is the interpreter and the wheels the
    kit's one install command resolves for it, the same for every lab; what a lab changes, its notebook in the kit's
    kernel, runs once per lab.  So a lab adds one kit notebook run, not one per Python."""
    index = DECLARED.index(version)
    return list(KIT_LABS) if index == 0 else [KIT_LABS[(index - 1) % len(KIT_LABS)]]


def test_every_kit_lab_runs_in_the_kit_and_every_declared_python_runs_one():
    assert kit_labs_run_on(DECLARED[0]) == KIT_LABS
    later = [lab for version in DECLARED[1:] for lab in kit_labs_run_on(version)]
    assert len(later) == len(DECLARED) - 1 and len(set(later)) == min(len(later), len(KIT_LABS))


@pytest.mark.slow
@pytest.mark.xdist_group("kit")  # the module's kit (a fresh venv and `mlsys-grader kit`, about a minute) is built once
@pytest.mark.parametrize("version", DECLARED)
def test_a_fresh_environment_with_only_the_kit_installs_and_runs_both_notebooks_to_full_marks(kit, tmp_path, version):
    """README's lines in a fresh venv: the one install command, the kernel registered by its one line, JupyterLab
    served headless with that kernel; the labs' notebooks (:func:`kit_labs_run_on`) run in it to 100 with hand-written
    rationales, exported with lab.export() and graded from the zip by staff's ``mlsys-grader grade``."""
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed on this machine (ls ~/.pyenv/versions)")
    student = tmp_path / "download"
    shutil.copytree(kit, student)
    bin_dir, env = _venv(python, tmp_path / "venv")
    _run([str(bin_dir / "pip"), "install", "--quiet", "-r", "requirements.txt"], cwd=student, env=env)  # README's one command
    listed = json.loads(_run([str(bin_dir / "pip"), "list", "--format=json"], cwd=student, env=env).stdout)
    assert not {"otter-grader", "pandas", "playwright", "sphinx", "python-on-whales"} & {p["name"].lower() for p in listed}
    _run(shlex.split(KERNEL_COMMAND), cwd=student, env=env)  # README's kernel line (JUPYTER_DATA_DIR: this venv's)
    (tmp_path / "run.py").write_text(DRIVER, encoding="utf-8")
    references = _script("make_references")
    with _jupyter_lab(bin_dir, env, student) as (base, token):
        specs = json.loads(_get(f"{base}/api/kernelspecs?token={token}")[1])
        assert specs["kernelspecs"][KERNEL_NAME]["spec"]["display_name"] == "MLSys lab (kit)"
        assert Path(specs["kernelspecs"][KERNEL_NAME]["spec"]["argv"][0]).parent == bin_dir  # the kit's Python
        status, page = _get(f"{base}/lab/tree/{KIT_LABS[0]}.ipynb?token={token}")
        assert status == 200 and b"JupyterLab" in page  # the front end the README's second line opens
        for lab, track in zip(kit_labs_run_on(version), itertools.cycle(TRACKS_BY_PYTHON[version])):
            answers = references.answers(lab, track)  # the synthesis is a student's own (reference_rationales.toml)
            notebook = references.fill(nbformat.read(student / f"{lab}.ipynb", as_version=4), answers)
            nbformat.write(notebook, student / f"{lab}.ipynb")
            _run([str(bin_dir / "python"), str(tmp_path / "run.py"), str(student / f"{lab}.ipynb"), str(student), KERNEL_NAME],
                 cwd=student, env=env)
            opened = json.loads(_get(f"{base}/api/contents/{lab}.ipynb?token={token}")[1])  # the server reads what was saved
            assert opened["type"] == "notebook" and opened["content"]["metadata"]["kernelspec"]["name"] == "python3"
            executed = nbformat.read(student / f"{lab}.ipynb", as_version=4)
            assert [o for c in executed.cells for o in c.get("outputs", []) if o.output_type == "error"] == []
            # the bundle rides in the notebook (core.embed is in the student build), so a bare .ipynb upload carries it
            assert any(BUNDLE_MIME in o.get("data", {}) for c in executed.cells for o in c.get("outputs", []))
            (export,) = student.glob(f"{lab}_*.zip")
            shown = next(c for c in executed.cells if c.source.strip().endswith("lab.export()")).outputs
            assert [o.data["text/plain"] for o in shown] == [
                f"[success] Exported {export.name} (your notebook and {lab}-submission.json): upload that zip as it is."]
            with zipfile.ZipFile(export) as archive:
                assert archive.namelist() == [f"{lab}.ipynb", f"{lab}-submission.json", "__zip_filename__"]
                assert archive.read(f"{lab}-submission.json") == (student / f"{lab}-submission.json").read_bytes()
            theirs = json.loads(_run([str(bin_dir / "mlsys-grader"), "check", str(export), "--all", "--json"], cwd=student,
                                     env=env).stdout)
            assert (theirs["score"], theirs["findings"]) == (100, [])  # the kit's own check of the zip, hidden items too
            graded = tmp_path / f"{lab}-graded"
            graded.mkdir()
            shutil.copy2(export, graded / export.name)
            assert cli.main(["grade", str(graded), "-o", str(graded / "grades.csv"), "--no-db", "-q", "--jobs", "1"]) == 0
            (row,) = csv.DictReader((graded / "grades.csv").open(encoding="utf-8"))  # staff's grade of the zip
            assert (row["lab"], row["track"], row["status"], float(row["score"]), float(row["max_score"])) == (
                lab, track, "graded", 100.0, 100.0), row
            assert grade_file(export).flags == ()
    installed = _run([str(bin_dir / "python"), "-c", "import mlsys_grader, sys; print(mlsys_grader.__file__)"], cwd=tmp_path, env=env)
    assert installed.stdout.startswith(str(tmp_path / "venv"))  # the kit's wheel, not this repository
    # solve is staff's: no command, nothing to import (the kit installs mlsys-grader-student)
    solve = subprocess.run([str(bin_dir / "mlsys-grader"), "solve", "--lab", "lab07", "--track", "cloud", "-o", "solved.json"],
                           cwd=student, env=env, capture_output=True, text=True)
    assert (solve.returncode, solve.stdout, solve.stderr) == (2, "", "mlsys-grader: `solve` is a course-staff command, not part of "
                                                                     "the student kit; this install has check, schema, rubric, ledger\n")
    assert not (student / "solved.json").exists()
    for command in cli.STAFF_COMMANDS:  # every staff command, the builders and the review app included
        refused = subprocess.run([str(bin_dir / "mlsys-grader"), command], cwd=student, env=env, capture_output=True, text=True)
        assert (refused.returncode, refused.stderr) == (2, cli.format_staff_only(command) + "\n"), command
    assert "review" in cli.STAFF_COMMANDS and "kit" in cli.STAFF_COMMANDS and "solve" in cli.STAFF_COMMANDS
    for statement, error in (("from mlsys_grader import solve", "ImportError: cannot import name 'solve' from 'mlsys_grader'"),
                             ("import mlsys_grader.staff", "ModuleNotFoundError: No module named 'mlsys_grader.staff'"),
                             ("import mlsys_grader.staff._autograder", "ModuleNotFoundError: No module named 'mlsys_grader.staff'"),
                             ("import mlsys_grader.course._review_app",
                              "ModuleNotFoundError: No module named 'mlsys_grader.course._review_app'")):
        tried = subprocess.run([str(bin_dir / "python"), "-c", statement], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert tried.returncode == 1 and error in tried.stderr.splitlines()[-1], (statement, tried.stderr)
    shown = _run([str(bin_dir / "pip"), "show", "mlsys-grader-student"], cwd=tmp_path, env=env).stdout
    assert "Name: mlsys-grader-student\n" in shown
    assert subprocess.run([str(bin_dir / "pip"), "show", "mlsys-grader"], cwd=tmp_path, env=env, capture_output=True).returncode == 1
