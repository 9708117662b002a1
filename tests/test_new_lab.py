"""Adding a lab is proven: a copy of ``labs/lab07/`` under a new id, in its own distribution, served end to end.

The "Adding a lab" steps (docs/adding-a-lab.md), done for real: the copy is a course's own distribution (its
pyproject declares the ``mlsys_grader.labs`` entry point and ships the rubric), installed with
``pip`` into a temporary virtual environment together with this tree, so no other test sees it.
The venv sees this interpreter's packages (a ``.pth`` file naming its site directories: see :func:`_venv`) and
both are installed ``--no-deps``: the interpreter's packages (mlsysim, Otter, …) serve as they are, in about 16 s against about 60 s
for a venv that installs every dependency from the package index (measured on the 2-core
machine).  Then the command line of that environment ``solve``\\s, ``check``\\s and ``grade``\\s
the new lab, writes its master and ``assign``\\s its student notebook, makes the ``kit`` and the
``autograder`` zip, each shipping the lab's own wheel beside this package's, and the zip grades
an upload as Gradescope's ``run_autograder`` does, in an environment whose mlsys-grader and new
lab are the two wheels the zip ships.
"""

from __future__ import annotations

import csv
import email.parser
import json
import os
import re
import shutil
import site
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from mlsys_grader.labs import lab_ids

# One pytest-xdist worker takes the module: its venv with the new lab installed (the module's world) is built once.
pytestmark = pytest.mark.xdist_group("new_lab")

ROOT = Path(__file__).resolve().parents[1]
SOURCE_LAB = ROOT / "mlsys_grader" / "labs" / "lab07"
OLD_ID, NEW_ID = "lab07", "lab07x"
INSTALLED = tuple(sorted([*lab_ids(), NEW_ID]))
"""Every lab the new lab's environments load: the shipped ones and the copy."""
DISTRIBUTION, PACKAGE = "course-lab07x", "course_lab07x"
TIMINGS: dict[str, float] = {}

PYPROJECT = f"""\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{DISTRIBUTION}"
version = "1.0"
dependencies = ["mlsys-grader"]

[project.entry-points."mlsys_grader.labs"]
{NEW_ID} = "{PACKAGE}"

[tool.setuptools]
packages = ["{PACKAGE}"]

[tool.setuptools.package-data]
{PACKAGE} = ["*.toml"]
"""


def copy_lab(source: Path, target: Path, new_id: str) -> list[str]:
    """Step 1 of docs/adding-a-lab.md: ``source`` (a declared lab package) copied to ``target`` under ``new_id``; the
    edits made, in words.

    The id is changed in one place, ``id`` in ``lab.toml``, and nothing else is edited: the rubric follows from the
    declared parts, and the package reaches ``mlsys_grader`` only by absolute imports (the copy is another
    distribution), so nothing else in it holds the old id or reaches out relatively.
    """
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    old_id = source.name
    spec = target / "lab.toml"
    text, count = re.subn(rf"^id = '{old_id}'$", f"id = '{new_id}'", spec.read_text(encoding="utf-8"), flags=re.M)
    assert count == 1, "lab.toml declares the id once"
    spec.write_text(text, encoding="utf-8")
    files = sorted(path for path in target.iterdir() if path.is_file())
    holding = [path.name for path in files if re.search(rf'["\']{old_id}["\']', path.read_text(encoding="utf-8"))]
    assert holding == [], f"the old id is still written in {holding}: the id must live in one place"
    relative = [path.name for path in files if path.suffix == ".py"
                and re.search(r"^\s*from \.\.", path.read_text(encoding="utf-8"), flags=re.M)]
    assert relative == [], f"{relative} import from outside the package relatively: the copy would not import"
    assert sorted(path.name for path in files if path.suffix == ".py") == ["__init__.py", "evaluate.py", "judge.py", "views.py"]
    return [f"lab.toml: id = '{new_id}'"]


def _run(command: list[str], *, cwd: Path, env: dict[str, str], timeout: int = 900, step: str | None = None
         ) -> subprocess.CompletedProcess:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if step:
        TIMINGS[step] = TIMINGS.get(step, 0.0) + time.perf_counter() - started
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _environment(venv: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv), PIP_DISABLE_PIP_VERSION_CHECK="1",
               JUPYTER_DATA_DIR=str(venv / "jupyter-data"))
    return env


def inherited_site_dirs() -> list[str]:
    """The folders this interpreter imports installed packages from: its site directories (a venv's own, plus its base's
    where that venv was made with ``--system-site-packages``) and the user's, where it reads that."""
    found = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    return [folder for folder in dict.fromkeys(found) if Path(folder).is_dir()]


def _venv(where: Path, *, inherit: bool) -> tuple[Path, dict[str, str]]:
    """A new venv; with ``inherit`` it also sees every package of the interpreter running the tests.

    NOTE: ``--system-site-packages`` would not do: it gives the child the *base* interpreter's packages, so when this
    suite runs in a venv (README's test command, as a newcomer runs it) the child lacked the project's dependencies.
    A ``.pth`` file that adds each of this interpreter's site directories as ``site`` does (their own ``.pth`` files
    read too) gives the child what this interpreter has, in a venv or not; the child's own packages still come first.
    """
    _run([sys.executable, "-m", "venv", str(where)], cwd=where.parent, env=dict(os.environ), step="venvs")
    python = where / "bin" / "python"
    if inherit:
        own = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=where.parent,
                   env=_environment(where)).stdout.strip()
        lines = [f"import site; site.addsitedir({folder!r})" for folder in inherited_site_dirs()]
        (Path(own) / "_inherited_site.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return python, _environment(where)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The course's distribution (a copy of Lab 07 as ``lab07x``), installed in a temporary venv, and a copy of
    this repository's root (so ``assign`` and the builders write there, never into this tree)."""
    base = tmp_path_factory.mktemp("new-lab")
    dist = base / "course-lab07x"
    dist.mkdir()
    (dist / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    edits = copy_lab(SOURCE_LAB, dist / PACKAGE, NEW_ID)
    root = base / "repo"
    root.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, root / name)
    for folder in ("mlsys_grader", "assignments", "solutions", "autograder"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "reference-*"))
    # NOTE: the venv sees this interpreter's packages (mlsysim, Otter, …: nothing to download), but the
    # mlsys-grader installed there may be another tree's, so this tree (copied above) is installed over it.
    python, env = _venv(base / "venv", inherit=True)
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--ignore-installed", str(root), str(dist)], cwd=base, env=env,
         step="install this repository and the lab")
    yield {"base": base, "dist": dist, "python": python, "env": env, "root": root, "edits": edits}
    # how long each step took, for the figure in docs/adding-a-lab.md (shown with pytest -s)
    print("\nnew-lab steps (s): " + ", ".join(f"{step} {seconds:.1f}" for step, seconds in TIMINGS.items()))


def _cli(world, *args: str, step: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return _run([str(world["python"]), "-m", "mlsys_grader", *args], cwd=world["base"], env=world["env"], step=step,
                timeout=timeout)


def _solved_with_own_rationale(world, track: str) -> str:
    """``solve``'s bundle for the new lab with its hand-written synthesis for ``track`` (the copy's: Lab 07's words),
    resealed (in the venv)."""
    script = ("import json\n"
              "from mlsys_grader import get_lab, solve\n"
              "from mlsys_grader.core.models import bundle_from_mapping\n"
              f"data = json.loads(solve({NEW_ID!r}, {track!r}).to_json())\n"
              f"data['synthesis'] = {{**data['synthesis'], **get_lab({NEW_ID!r}).reference_answers({track!r})}}\n"
              "data['content_hash'] = None\n"
              "print(bundle_from_mapping(data).sealed().to_json())\n")
    return _run([str(world["python"]), "-c", script], cwd=world["base"], env=world["env"], step="solve").stdout


@pytest.mark.slow
def test_the_copy_changes_the_id_in_one_place_and_is_seen_only_in_its_environment(world):
    assert world["edits"] == [f"lab.toml: id = '{NEW_ID}'"]  # the one edit
    listed = _run([str(world["python"]), "-c", "from mlsys_grader.labs import lab_ids; print(' '.join(lab_ids()))"],
                  cwd=world["base"], env=world["env"]).stdout.split()
    assert NEW_ID in listed and OLD_ID in listed
    from mlsys_grader.labs import lab_ids

    assert NEW_ID not in lab_ids()  # this process (every other test) never sees it


@pytest.mark.slow
def test_the_new_lab_solves_checks_and_grades_on_the_command_line(world):
    base = world["base"]
    _cli(world, "solve", "--lab", NEW_ID, "--track", "edge", "-o", "solved.json", step="solve")
    solved = json.loads((base / "solved.json").read_text())
    assert solved["lab"] == NEW_ID and {record["lab"] for record in solved["evidence"].values()} == {NEW_ID}
    submissions = base / "submissions"
    submissions.mkdir()
    (submissions / f"{NEW_ID}-submission.json").write_text(_solved_with_own_rationale(world, "edge"))
    checked = json.loads(_cli(world, "check", f"submissions/{NEW_ID}-submission.json", "--json", "--all", step="check").stdout)
    assert (checked["lab"], checked["score"], checked["findings"]) == (NEW_ID, 100, [])
    assert checked["versions"]["rubric"].startswith(f"{NEW_ID}-")
    _cli(world, "grade", "submissions", "-o", "grades.csv", "--no-db", "--jobs", "1", "--quiet", step="grade")
    with open(base / "grades.csv", newline="", encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["lab"], row["status"], float(row["score"]), row["flags"]) == (NEW_ID, "graded", 100.0, "")


@pytest.fixture(scope="module")
def assigned(world) -> Path:
    """``mlsys-grader generate masters``: the new lab's master written from its words where the lab says
    (``solutions/<lab>/<lab>-master.ipynb`` of the root); then ``mlsys-grader assign`` on it; the master's path."""
    root = world["root"]
    master = root / "solutions" / NEW_ID / f"{NEW_ID}-master.ipynb"
    printed = _cli(world, "generate", "masters", "--lab", NEW_ID, "--root", str(root), step="master").stdout
    assert str(master) in printed and master.is_file()
    assert "I would revisit the decision as soon as the operator set changes" in master.read_text(encoding="utf-8")
    _cli(world, "assign", "--root", str(root), "--lab", NEW_ID, step="assign")
    return master


@pytest.mark.slow
def test_assign_writes_the_new_labs_student_notebook_from_its_master(world, assigned):
    import nbformat

    student = nbformat.read(world["root"] / "assignments" / f"{NEW_ID}.ipynb", as_version=4)
    sources = "\n".join(cell.source for cell in student.cells)
    assert f"open_lab('{NEW_ID}', track=TRACK)" in sources and "# SOLUTION" not in sources
    assert not (ROOT / "assignments" / f"{NEW_ID}.ipynb").exists()


def _metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(archive.read(name).decode("utf-8")), archive.namelist()


@pytest.mark.slow
def test_the_kit_ships_the_new_labs_notebook_and_its_own_wheel_built_for_the_student_package(world, assigned):
    kit = world["base"] / "kit"
    printed = _cli(world, "kit", "-o", str(kit), "--root", str(world["root"]), step="kit").stdout
    (lab_wheel,) = kit.glob("course_lab07x-1.0-*.whl")
    (student_wheel,) = kit.glob("mlsys_grader_student-*.whl")
    assert lab_wheel.name in printed and (kit / f"{NEW_ID}.ipynb").is_file()
    info, names = _metadata(lab_wheel)
    assert (info["Name"], info.get_all("Requires-Dist")) == (DISTRIBUTION, ["mlsys-grader-student"])
    assert f"{PACKAGE}/lab.toml" in names and f"{PACKAGE}/judge.py" in names
    assert f"{PACKAGE}/answers.toml" not in names  # the hand-written answers are solutions, as in the student build
    requirements = (kit / "requirements.txt").read_text().splitlines()
    assert requirements[2:4] == [f"./{student_wheel.name}", f"./{lab_wheel.name}"]
    titles = [f"Lab {lab_id[3:5]}" for lab_id in INSTALLED]
    assert (kit / "README.md").read_text().splitlines()[0] == f"# {', '.join(titles[:-1])} and {titles[-1]} notebooks (MLSysBook)"
    # a student's environment: both wheels resolve against each other (pip sees the new lab's requirement met)
    python, env = _venv(world["base"] / "student-venv", inherit=False)
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(student_wheel), str(lab_wheel)], cwd=kit, env=env,
         step="kit install (no deps)")
    check = subprocess.run([str(python), "-m", "pip", "check"], cwd=kit, env=env, capture_output=True, text=True)
    problems = check.stdout.splitlines()
    assert any(line.startswith("mlsys-grader-student ") and "mlsysim" in line for line in problems), problems
    assert not [line for line in problems if DISTRIBUTION in line], problems
    points = _run([str(python), "-c", "from importlib.metadata import entry_points; "
                   "print([(p.name, p.value, p.dist.name) for p in entry_points(group='mlsys_grader.labs')])"],
                  cwd=kit, env=env).stdout.strip()
    assert points == f"[('{NEW_ID}', '{PACKAGE}', '{DISTRIBUTION}')]"


@pytest.mark.slow
def test_the_autograder_zip_ships_the_labs_wheel_and_grades_as_gradescope_runs_it(world, assigned):
    out = world["base"] / "dist"
    printed = _cli(world, "autograder", "-o", str(out), "--root", str(world["root"]), "--no-run-tests",
                   "--master", f"{NEW_ID}={assigned}", step="autograder", timeout=1200).stdout
    zip_path = out / f"{NEW_ID}-autograder.zip"
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        environment = archive.read("environment.yml").decode()
        requirements = archive.read("requirements.txt").decode().splitlines()
        config = json.loads(archive.read("otter_config.json"))
    (lab_wheel,) = [name for name in names if name.startswith("course_lab07x-1.0-") and name.endswith(".whl")]
    (own_wheel,) = [name for name in names if name.startswith("mlsys_grader-") and name.endswith(".whl")]
    with zipfile.ZipFile(zip_path) as archive:
        archive.extract(own_wheel, out)
        archive.extract(lab_wheel, out)
    assert not [name for name in _metadata(out / own_wheel)[1] if name.startswith("mlsys_grader/staff/")]
    assert f"{PACKAGE}/answers.toml" not in _metadata(out / lab_wheel)[1] and f"{PACKAGE}/judge.py" in _metadata(out / lab_wheel)[1]
    assert f"ships {own_wheel} and {lab_wheel}" in printed
    assert config["plugins"] == [{"mlsys_grader.gradescope.ScoreOfRecordPlugin": {"lab": NEW_ID, "rerun_notebook": False}}]
    assert requirements[-2:] == [f"/autograder/source/{own_wheel}", f"/autograder/source/{lab_wheel}"]
    assert environment.index(f"/autograder/source/{own_wheel}") < environment.index(f"/autograder/source/{lab_wheel}")
    assert not [line for line in requirements if line.lower().startswith(("course-lab07x==", "course_lab07x=="))]
    lock = (out / "requirements-lock.txt").read_text().splitlines()
    assert "mlsysim==0.3.0" in lock and not [line for line in lock if "lab07x" in line]

    # Gradescope: /autograder/source is the zip; the image's mlsys-grader and the new lab are the zip's two wheels
    image, env = _venv(world["base"] / "image-venv", inherit=True)
    root = world["base"] / "autograder"
    (root / "results").mkdir(parents=True)
    (root / "submission").mkdir()
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
    _run([str(image), "-m", "pip", "install", "--quiet", "--no-deps", "--ignore-installed", str(root / "source" / own_wheel),
          str(root / "source" / lab_wheel)], cwd=root, env=env, step="install the zip's wheels")
    (root / "submission" / f"{NEW_ID}-submission.json").write_text(_solved_with_own_rationale(world, "cloud"))
    done = _run([str(image), "-I", "-m", "mlsys_grader.gradescope", str(root)], cwd=root, env=env, step="run_autograder")
    assert done.stdout.splitlines()[-1].split("] ", 1)[1].startswith("final results.json written: ")
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 100, results.get("output")
    # setup.sh's last step loads every lab of the image (its exit status also says whether other users can enter the
    # folders above the environment, which pytest's private temporary folders do not let them: not asserted here)
    checked = subprocess.run([str(image), "-I", "-m", "mlsys_grader.gradescope", "--check-image"], cwd=root, env=env,
                             capture_output=True, text=True, timeout=300)
    assert f"labs {', '.join(INSTALLED)} load;" in checked.stdout, checked.stderr
    # the image has no builders and no solve.  NOTE: an editable install of this tree in the interpreter the venv
    # sees has an import hook that would find mlsys_grader.staff here; the probe drops it, so only the wheel counts
    probe = ("import sys\n"
             "sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]\n"
             "import mlsys_grader\n"
             f"assert mlsys_grader.__file__.startswith({str(world['base'] / 'image-venv')!r}), mlsys_grader.__file__\n"
             "import mlsys_grader.staff\n")
    staff = subprocess.run([str(image), "-I", "-c", probe], cwd=root, env=env, capture_output=True, text=True)
    assert staff.stderr.splitlines()[-1:] == ["ModuleNotFoundError: No module named 'mlsys_grader.staff'"], staff.stderr


def test_a_lab_registered_in_this_process_only_is_refused_before_the_build_starts(tmp_path, monkeypatch):
    """register_lab reaches this process alone: the zip could not ship the lab, so the build says so at once."""
    from mlsys_grader import labs, register_lab
    from mlsys_grader.errors import AutograderBuildError
    from mlsys_grader.staff import build_autograders

    master = tmp_path / "labz-master.ipynb"
    master.write_text("{}")
    monkeypatch.setitem(labs._REGISTERED, "labz", "course_only.labz")  # so the registration is undone after the test
    register_lab("labz", "course_only.labz")  # never imported: the build stops before it loads a lab
    with pytest.raises(AutograderBuildError, match=r'^labz: registered in this process only \(register_lab\), so the image '
                                                   r'could not load it; install the distribution it comes from'):
        build_autograders(tmp_path / "dist", {"labz": master, "lab07": master}, root=ROOT)
    assert not (tmp_path / "dist").exists()
