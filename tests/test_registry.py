"""Labs come from a registry: shipped labs, installed entry points (group ``mlsys_grader.labs``), register_lab.

A lab is one module, one rubric TOML and one Otter master notebook.  The tests below add
Lab 07 under another id exactly as the "Adding a lab" page (docs/adding-a-lab.md) shows (they read the module and
the entry point from that section) and run it end to end: the notebook API, ``solve``,
``check``, ``grade``, ``assign`` and the Gradescope autograder build.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest

import mlsys_grader
from mlsys_grader import UnknownLabError, grade_bundle, lab_ids, register_lab, solve
from mlsys_grader.api import default_replay
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.labs import ENTRY_POINT_GROUP, get_lab, lab_modules, rubric_text

ROOT = Path(__file__).resolve().parents[1]
COPY = "lab07copy"


def _readme_section() -> str:
    """The documentation's "Adding a lab" page (docs/adding-a-lab.md), the steps every lab takes."""
    page = (ROOT / "docs" / "adding-a-lab.md").read_text(encoding="utf-8")
    assert page.startswith("# Adding a lab\n"), "docs/adding-a-lab.md lacks its title"
    return page


def _readme_block(language: str) -> str:
    """The first fenced ``language`` block of the "Adding a lab" page (docs/adding-a-lab.md) section, dedented."""
    match = re.search(rf"^( *)```{language}\n(.*?)^\1```", _readme_section(), re.S | re.M)
    assert match, f"the 'Adding a lab' page has no {language} block"
    return textwrap.dedent(match.group(2))


def _readme_entry_point() -> tuple[str, str, str]:
    """(group, lab id, module) of the entry point the page declares."""
    points = tomllib.loads(_readme_block("toml"))["project"]["entry-points"]
    (group, declared), = points.items()
    (lab_id, module), = declared.items()
    return group, lab_id, module


def _own_synthesis(lab_id: str, track: str) -> dict:
    """The lab's hand-written synthesis (``Lab.reference_answers``; the copy's numbers are Lab 07's)."""
    return get_lab(lab_id).reference_answers(track)


def _course_package(tmp_path: Path, *, entry_point: bool = False) -> Path:
    """A separate package holding one lab (a copy of Lab 07 under another id) and its rubric, as a course
    would ship it: the module is README's.  With ``entry_point`` it is installed too: README's entry point is
    declared beside it, so any process with the folder on its path lists the copy (only the tests that
    install it ask for that; the others register it).  Returns the folder to put on the path."""
    group, lab_id, module = _readme_entry_point()
    package_name, _, module_name = module.rpartition(".")
    package = tmp_path / package_name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / f"{module_name}.py").write_text(_readme_block("python"))
    rubric = rubric_text("lab07")
    (package / f"{lab_id}.toml").write_text(rubric)
    if not entry_point:
        return tmp_path
    info = tmp_path / f"{package_name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package_name.replace('_', '-')}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{lab_id} = {module}\n")
    return tmp_path


def _forget_course_package() -> None:
    """Drop the course package from the import cache: each test installs its own copy in its own folder."""
    for name in [name for name in sys.modules if name == "course_labs" or name.startswith("course_labs.")]:
        del sys.modules[name]


@pytest.fixture(autouse=True)
def _registry_as_it_was():
    """Every test leaves the registry as it found it: the ids and loaded labs restored, the course package
    forgotten, and the installed labs read again once the test's folders are off the path (this fixture
    asks for no other, so it is torn down after ``monkeypatch`` restores ``sys.path``).  An entry point read
    while a test's package was on the path would otherwise stay listed in this process after the folder is
    gone, and every grading worker started later would die loading it."""
    from mlsys_grader import labs

    ids, registered, loaded = lab_ids(), dict(labs._REGISTERED), dict(labs._LOADED)
    yield
    labs._REGISTERED.clear()
    labs._REGISTERED.update(registered)
    labs._LOADED.clear()
    labs._LOADED.update(loaded)
    labs._entry_points.cache_clear()
    _forget_course_package()
    assert lab_ids() == ids, "a lab of this test is still listed after it"


@pytest.fixture
def registered(tmp_path, monkeypatch):
    """The copy registered with :func:`register_lab` (this process only)."""
    from mlsys_grader import labs

    _forget_course_package()
    monkeypatch.syspath_prepend(str(_course_package(tmp_path)))
    register_lab(COPY, f"course_labs.{COPY}")
    yield tmp_path
    labs._REGISTERED.pop(COPY, None)
    labs._LOADED.pop(COPY, None)
    _forget_course_package()


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The copy installed: its entry point is on the path of this process and of every process it starts."""
    from mlsys_grader import labs

    _forget_course_package()
    site = _course_package(tmp_path, entry_point=True)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    labs._entry_points.cache_clear()
    labs._LOADED.pop(COPY, None)
    yield tmp_path
    labs._LOADED.pop(COPY, None)
    labs._entry_points.cache_clear()
    _forget_course_package()


def _solved_with_own_rationale(lab_id: str, track: str) -> str:
    """``solve``'s bundle with the hand-written synthesis of Lab 07 on ``track``, resealed."""
    data = json.loads(solve(lab_id, track).to_json())
    data["synthesis"] = {**data["synthesis"], **_own_synthesis("lab07", track)}
    data["content_hash"] = None
    return bundle_from_mapping(data).sealed().to_json()


def test_shipped_labs_are_registered():
    assert {"lab07", "lab11"} <= set(lab_ids())
    assert lab_modules()["lab11"] == "mlsys_grader.labs.lab11"


def test_register_lab_adds_a_lab_that_solves_and_grades(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_course_package(tmp_path)))
    register_lab("lab07copy", "course_labs.lab07copy")
    try:
        assert "lab07copy" in lab_ids()
        bundle = solve("lab07copy", "edge", 3)
        assert bundle.lab == "lab07copy" and all(r.lab == "lab07copy" for r in bundle.evidence.values())
        report = grade_bundle(bundle.to_json())
        assert report.lab == "lab07copy" and report.versions["rubric"].startswith("lab07copy-")
        evidence = sum(p.score for name, p in report.parts.items() if name != "synthesis")
        assert evidence == 84  # every part verified; the synthesis is solve's template (flagged generated)
    finally:
        from mlsys_grader import labs

        labs._REGISTERED.pop("lab07copy", None)
        labs._LOADED.pop("lab07copy", None)


@pytest.mark.slow
def test_an_installed_entry_point_adds_a_lab_to_the_command_line(tmp_path):
    site = _course_package(tmp_path, entry_point=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "copy.json"
    solved = subprocess.run([sys.executable, "-m", "mlsys_grader", "solve", "--lab", "lab07copy", "--track", "cloud", "-o", str(out)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert solved.returncode == 0, solved.stderr
    checked = subprocess.run([sys.executable, "-m", "mlsys_grader", "check", str(out), "--json"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["lab"] == "lab07copy"


def test_a_module_that_implements_another_lab_is_refused(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_course_package(tmp_path)))
    register_lab("lab99", "course_labs.lab07copy")
    try:
        with pytest.raises(UnknownLabError, match="implements lab 'lab07copy', registered as 'lab99'"):
            mlsys_grader.get_lab("lab99")
    finally:
        from mlsys_grader import labs

        labs._REGISTERED.pop("lab99", None)


def test_unknown_lab_names_the_registered_ones():
    with pytest.raises(UnknownLabError, match=f"unknown lab 'lab42'; expected one of {', '.join(lab_ids())}"):
        mlsys_grader.get_lab("lab42")


# -- a third lab, end to end (docs/adding-a-lab.md) -----------------------------------------------
def test_readme_adding_a_lab_shows_the_module_entry_point_and_commands_the_tests_use():
    group, lab_id, module = _readme_entry_point()
    assert (group, lab_id, module) == (ENTRY_POINT_GROUP, COPY, f"course_labs.{COPY}")
    source = _readme_block("python")
    assert f'lab_id="{COPY}"' in source and '\nLAB = get_lab("lab07").replace(' in source and "master=lambda root:" in source
    section = _readme_section()
    for named in (f'register_lab("{COPY}", "{module}")', f"course_labs/{COPY}.toml", f'lab = "{COPY}"', "`lab.toml`",
                  "`id` in `lab.toml`", "judge.py", "answers.toml",
                  f"mlsys-grader generate masters --lab {COPY}", f"mlsys-grader assign --lab {COPY}", "mlsys-grader autograder"):
        assert named in section, named


def test_a_registered_lab_shows_its_own_views_header_and_synthesis_options(registered):
    from mlsys_grader.student import open_lab

    lab = get_lab(COPY)
    assert lab.module == f"course_labs.{COPY}" and lab.judge is get_lab("lab07").judge and lab.spec is get_lab("lab07").spec
    assert lab.master_path(ROOT) == registered / "solutions" / f"{COPY}-master.ipynb"
    session = open_lab(COPY, "cloud", directory=registered)
    assert session.synthesis_options().keys() == {"recommendation", "rejected_alternative", "reevaluation_trigger",
                                                  "residual_risk"}
    assert "Runtime-path recommendation" in session._repr_html_()
    session.predict("A", "above_75", dispatches=1)
    shown = session.run("A", dispatches=1)
    plan = lab.plan(default_replay(), "cloud", "A", {"dispatches": 1}, {})
    assert shown.observation == get_lab("lab07").view("cloud", "A", plan).observation
    assert shown.observation.startswith(lab.parts["A"].predictions[lab.displayed_prediction("cloud", "A", plan)] + ":")
    assert session.capture("A").kind == "success"
    assert json.loads((registered / f"{COPY}-submission.json").read_text())["lab"] == COPY


def test_a_registered_lab_solved_with_a_hand_written_rationale_scores_full_marks_and_checks(registered, capsys):
    from mlsys_grader import cli

    text = _solved_with_own_rationale(COPY, "cloud")
    report = grade_bundle(text)
    assert (report.lab, report.score, report.max_score, report.findings, report.flags) == (COPY, 100, 100, (), ())
    path = registered / "s.json"
    path.write_text(text)
    assert cli.main(["check", str(path), "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["lab"] == COPY and checked["findings"] == []


@pytest.mark.slow
def test_an_installed_lab_solves_checks_and_grades_on_the_command_line(installed):
    """Through its entry point only, in fresh processes (``grade`` also in its worker processes)."""
    def run(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "mlsys_grader", *args], capture_output=True, text=True,
                              cwd=installed, timeout=600)
        assert done.returncode == 0, done.stderr
        return done

    run("solve", "--lab", COPY, "--track", "edge", "-o", "solved.json")
    data = json.loads((installed / "solved.json").read_text())
    assert data["lab"] == COPY
    (installed / "submissions").mkdir()
    (installed / "submissions" / f"{COPY}-submission.json").write_text(_solved_with_own_rationale(COPY, "edge"))
    checked = json.loads(run("check", f"submissions/{COPY}-submission.json", "--json").stdout)
    assert checked["lab"] == COPY and checked["findings"] == []
    run("grade", "submissions", "-o", "grades.csv", "--no-db", "--jobs", "1", "--quiet")
    with open(installed / "grades.csv", newline="", encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["lab"], row["status"], float(row["score"]), row["flags"]) == (COPY, "graded", 100.0, "")


@pytest.mark.slow
def test_an_installed_lab_gets_its_student_notebook_and_autograder_from_its_master(installed):
    """The master written from the module's words, where the module says; ``mlsys-grader assign`` and the
    autograder build find it there; otter assign runs the master's tests (in a kernel that finds the lab by
    its entry point); the zip grades a full-marks upload 100 as Gradescope runs it."""
    from mlsys_grader.gradescope._runner import run_autograder
    from mlsys_grader.staff._autograder import build_autograders, default_masters

    master = get_lab(COPY).master_path(ROOT)
    assert master == installed / "solutions" / f"{COPY}-master.ipynb"
    def run(*args: str) -> None:
        done = subprocess.run([sys.executable, "-m", "mlsys_grader", *args], cwd=installed, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stderr

    run("generate", "masters", "--lab", COPY)  # with the synthesis CourseLab inherits: Lab 07's own words
    assert "I would revisit the decision as soon as the operator set changes" in master.read_text(encoding="utf-8")
    run("generate", "masters", "--lab", COPY, "--check")
    run("assign", "--lab", COPY)
    student = nbformat.read(installed / "assignments" / f"{COPY}.ipynb", as_version=4)
    sources = "\n".join(cell.source for cell in student.cells)
    assert f"open_lab('{COPY}', track=TRACK)" in sources and "# SOLUTION" not in sources and "assert_item" not in sources

    (built,) = build_autograders(installed / "dist", default_masters(ROOT, [COPY]), run_tests=True, root=ROOT)
    assert built.path == installed / "dist" / f"{COPY}-autograder.zip"
    with zipfile.ZipFile(built.path) as archive:
        names = archive.namelist()
        config = json.loads(archive.read("otter_config.json"))
        tests = {name: archive.read(name).decode() for name in names if name.startswith("tests/") and name.endswith(".py")}
    assert config["plugins"] == [{"mlsys_grader.gradescope.ScoreOfRecordPlugin": {"lab": COPY, "rerun_notebook": False}}]
    assert sorted(Path(name).stem for name in tests) == ["A", "B", "C", "D", "E", "synthesis"]
    assert all(f"assert_item('{COPY}'" in text for text in tests.values())

    root = installed / "ag"
    (root / "results").mkdir(parents=True)
    (root / "submission").mkdir()
    with zipfile.ZipFile(built.path) as archive:
        archive.extractall(root / "source")
    (root / "submission" / f"{COPY}-submission.json").write_text(_solved_with_own_rationale(COPY, "cloud"))
    results = run_autograder(root, log=lambda message: None)
    assert results["score"] == 100, results.get("output")


def test_a_registered_lab_speaks_the_words_of_the_lab_it_extends(registered):
    """The track-worded scenario, option labels and closing report words are the lab's attributes, so a
    subclass shows them under its own id (nothing outside the lab module is keyed by lab id)."""
    from mlsys_grader.student import open_lab

    own, copy = get_lab("lab07"), get_lab(COPY)
    session = open_lab(COPY, "tinyml", directory=registered)
    scenario = session.scenario("A")
    assert scenario is not None and scenario.markdown == own.scenario("tinyml", "A")
    assert scenario.markdown.startswith("Maya, the performance engineer, keeps arithmetic and payload fixed on **ESP32")
    assert session.scenario("C") is None
    assert session.synthesis_options()["reevaluation_trigger"]["shape_guards"] == "Deployment shapes change"
    assert open_lab(COPY, "cloud", directory=registered / "cloud").synthesis_options()["reevaluation_trigger"][
        "shape_guards"] == "Shape guards change"
    report = session.report()
    assert (report.objectives, report.takeaways, report.source) == (own.learning_objectives, own.big_takeaways, own.source_trace)
    assert report.scenario == copy.track_facts("tinyml")["scenario"] != ""


BACKWARDS = '''
from mlsys_grader.labs import get_lab

LAB_07 = get_lab("lab07")
LAB = LAB_07.replace(lab_id="lab07back", parts={part: LAB_07.parts[part] for part in reversed(LAB_07.parts)})
'''


def test_the_core_follows_the_labs_own_parts_in_its_order(tmp_path, monkeypatch):
    """A lab whose parts come in another order: ``solve`` works them in that order, the grader reports
    them in that order, and the grades are the same."""
    from mlsys_grader import labs

    site = _course_package(tmp_path)
    (site / "course_labs" / "lab07back.py").write_text(BACKWARDS)
    rubric = rubric_text("lab07")
    (site / "course_labs" / "lab07back.toml").write_text(rubric)
    _forget_course_package()
    monkeypatch.syspath_prepend(str(site))
    register_lab("lab07back", "course_labs.lab07back")
    try:
        assert get_lab("lab07back").part_ids() == ("E", "D", "C", "B", "A")
        solved = solve("lab07back", "edge")
        locked = [solved.evidence[part].prediction_locked_at for part in ("E", "D", "C", "B", "A")]
        assert locked == sorted(locked), "part E is worked first, part A last"
        report = grade_bundle(_solved_with_own_rationale("lab07back", "edge"))
        assert (report.score, report.findings, report.flags) == (100, (), ())
        empty = grade_bundle(mlsys_grader.Bundle(lab="lab07back", track="edge").sealed().to_json())
        missing = [f.part for f in empty.findings if f.criterion == "missing"]
        assert missing == ["E", "D", "C", "B", "A"]
        parts = [f.part for f in empty.findings]
        assert parts[:len(missing)] == missing and set(parts[len(missing):]) <= {"synthesis", "bundle"}
        assert empty.score == grade_bundle(mlsys_grader.Bundle(lab="lab07", track="edge").sealed().to_json()).score
    finally:
        labs._REGISTERED.pop("lab07back", None)
        labs._LOADED.pop("lab07back", None)
        _forget_course_package()


# -- a process that registers labs and grades: what it caches follows the registry ----------------
def test_a_lab_id_pointed_at_another_module_gets_that_modules_rubric(tmp_path, monkeypatch):
    """``register_lab`` replacing a lab: the rubric (and the grade) are the new module's, not the one the id
    named when its rubric was first read."""
    monkeypatch.syspath_prepend(str(_course_package(tmp_path)))
    register_lab(COPY, f"course_labs.{COPY}")
    first = grade_bundle(solve(COPY, "edge").to_json())
    other = tmp_path / "other_labs"
    other.mkdir()
    (other / "__init__.py").write_text("")
    shutil.copyfile(tmp_path / "course_labs" / f"{COPY}.py", other / f"{COPY}.py")
    rubric = (tmp_path / "course_labs" / f"{COPY}.toml").read_text()
    assert '\nversion = "2"\n' in rubric
    (other / f"{COPY}.toml").write_text(rubric.replace('\nversion = "2"\n', '\nversion = "3"\n'))
    register_lab(COPY, f"other_labs.{COPY}")
    try:
        second = grade_bundle(solve(COPY, "edge").to_json())
        assert first.versions["rubric"].startswith(f"{COPY}-v2-"), first.versions
        assert second.versions["rubric"].startswith(f"{COPY}-v3-"), second.versions
    finally:
        for name in [name for name in sys.modules if name == "other_labs" or name.startswith("other_labs.")]:
            del sys.modules[name]


BROKEN = "raise ImportError('this lab needs a package that is not installed')\n"


def test_a_lab_that_does_not_import_fails_only_its_own_submissions(tmp_path, monkeypatch):
    """A registered (or installed) lab whose module raises on import: a batch still grades every other lab's
    submissions, and each of its own ends in an error that says why.  The workers load every lab before
    their first task; one failing there killed them all (every row a crash, or a batch that never ended)."""
    from mlsys_grader.course import BatchOptions, grade_paths
    from mlsys_grader.replay import Replay

    package = tmp_path / "broken_labs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "labbroken.py").write_text(BROKEN)
    (package / "labbroken.toml").write_text(rubric_text("lab07"))
    monkeypatch.syspath_prepend(str(tmp_path))
    register_lab("labbroken", "broken_labs.labbroken")
    down = tmp_path / "down"
    (down / "a").mkdir(parents=True)
    (down / "b").mkdir()
    (down / "a" / "lab07-submission.json").write_text(solve("lab07", "edge").to_json())
    (down / "b" / "labbroken-submission.json").write_text(mlsys_grader.Bundle(lab="labbroken", track="edge").sealed().to_json())
    try:
        Replay().prepare()  # what each grading worker runs before its first task
        rows = {row.lab: row for row in grade_paths([down], BatchOptions(jobs=1, db=None)).rows}
    finally:
        for name in [name for name in sys.modules if name == "broken_labs" or name.startswith("broken_labs.")]:
            del sys.modules[name]
    assert rows["lab07"].status == "graded" and rows["lab07"].score > 0, rows["lab07"].reasons
    assert rows["labbroken"].status == "error", (rows["labbroken"].status, rows["labbroken"].reasons)
    assert "this lab needs a package that is not installed" in rows["labbroken"].reasons
