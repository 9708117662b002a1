"""``mlsys-grader kit``: the student kit — both notebooks, the wheel, a fully pinned requirements.txt and a
README with the one install command — made after README's quick-start install, and used by a student in a
fresh environment holding nothing but the kit, on every Python the package declares.

The end-to-end tests build real virtual environments with pip (PyPI reachable) and execute the notebooks in
them with nbclient; they are marked ``slow``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.specifiers import SpecifierSet

from mlsys_grader import cli
from mlsys_grader.api import grade_file
from mlsys_grader.student._kit import INSTALL_COMMAND, KitError, pinned_requirements

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DECLARED = sorted({m.group(1) for c in PYPROJECT["classifiers"] if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))},
                  key=lambda v: int(v.split(".")[1]))
# Each Python runs both labs on its own tracks, so the kit test covers the tracks as well.
TRACKS_BY_PYTHON = {"3.11": ("cloud", "edge"), "3.12": ("tinyml", "mobile"), "3.13": ("edge", "cloud")}


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
    wheels = list(out.glob("mlsys_grader-*-py3-none-any.whl"))
    assert len(wheels) == 1 and sorted(p.name for p in out.iterdir()) == sorted(
        ["README.md", "lab07.ipynb", "lab11.ipynb", "requirements.txt", wheels[0].name])
    for lab in ("lab07", "lab11"):
        assert (out / f"{lab}.ipynb").read_bytes() == (ROOT / "assignments" / f"{lab}.ipynb").read_bytes()
    lines = _lines(out / "requirements.txt")
    assert lines[0] == f"./{wheels[0].name}"
    pins = dict(line.split("==") for line in lines[1:])
    assert len(pins) == len(lines) - 1 >= 50 and all(re.fullmatch(r"[A-Za-z0-9._-]+", name) for name in pins)
    assert {name: metadata.version(name) for name in pins} == pins  # the versions this test environment runs
    assert pins["mlsysim"] == "0.3.0" and pins["otter-grader"] == "7.0.0" and "ipykernel" in pins and "packaging" in pins
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert f"    {INSTALL_COMMAND}\n" in readme and "`lab07.ipynb` or `lab11.ipynb`" in readme
    assert f"Python {DECLARED[0]} to {DECLARED[-1]}" in readme
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
    assert "mlsys_grader/labs/lab07.toml" in names and "mlsys_grader/student/_session.py" in names


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


DRIVER = """\
import sys
import nbformat
from nbclient import NotebookClient

path, workdir = sys.argv[1], sys.argv[2]
notebook = nbformat.read(path, as_version=4)
NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": workdir}}).execute()
nbformat.write(notebook, path)
"""


@pytest.mark.slow
@pytest.mark.parametrize("version", DECLARED)
def test_a_fresh_environment_with_only_the_kit_installs_and_runs_both_notebooks_to_full_marks(kit, tmp_path, version):
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed on this machine")
    student = tmp_path / "download"
    shutil.copytree(kit, student)
    bin_dir, env = _venv(python, tmp_path / "venv")
    _run([str(bin_dir / "pip"), "install", "--quiet", "-r", "requirements.txt"], cwd=student, env=env)  # README's one command
    (tmp_path / "run.py").write_text(DRIVER, encoding="utf-8")
    references = _script("make_references")
    for lab, track in zip(("lab07", "lab11"), TRACKS_BY_PYTHON[version], strict=True):
        answers = references.answers(lab, track)  # the synthesis is a student's own (reference_rationales.toml)
        notebook = references.fill(nbformat.read(student / f"{lab}.ipynb", as_version=4), answers)
        nbformat.write(notebook, student / f"{lab}.ipynb")
        _run([str(bin_dir / "python"), str(tmp_path / "run.py"), str(student / f"{lab}.ipynb"), str(student)], cwd=student, env=env)
        executed = nbformat.read(student / f"{lab}.ipynb", as_version=4)
        assert [o for c in executed.cells for o in c.get("outputs", []) if o.output_type == "error"] == []
        bundle = student / f"{lab}-submission.json"
        report = grade_file(bundle)
        assert (report.track, report.score, report.findings, report.flags) == (track, 100, [], [])
        theirs = json.loads(_run([str(bin_dir / "mlsys-grader"), "check", str(bundle), "--all", "--json"], cwd=student, env=env).stdout)
        assert (theirs["score"], theirs["findings"]) == (100, [])
        exports = list(student.glob(f"{lab}_*.zip"))
        assert len(exports) == 1, exports
        with zipfile.ZipFile(exports[0]) as export:
            assert {f"{lab}.ipynb", f"{lab}-submission.json"} <= set(export.namelist())
    installed = _run([str(bin_dir / "python"), "-c", "import mlsys_grader, sys; print(mlsys_grader.__file__)"], cwd=tmp_path, env=env)
    assert installed.stdout.startswith(str(tmp_path / "venv"))  # the kit's wheel, not this repository
