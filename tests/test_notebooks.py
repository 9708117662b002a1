"""The notebooks themselves: masters → student notebooks without drift, real execution, HTML export.

Tests that run ``otter assign`` (a child interpreter per lab) or execute the real student
notebooks in a python3 kernel (nbclient) are marked ``slow``, as is the HTML export of every
reference beyond one per lab.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import LAB_TRACKS, LABS, executed_tracks, sweep

from mlsys_grader import cli
from mlsys_grader.api import default_rubric, grade_file
from mlsys_grader.core.report import HIDDEN_ITEMS
from mlsys_grader.labs import get_lab
from mlsys_grader.staff._assign import drift, master_path, run_otter_assign, student_path

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"solutions_{name}", ROOT / "solutions" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


references = _script("make_references")


def _html(notebook) -> str:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(notebook)
    return body


def _errors(notebook) -> list[str]:
    return [f"cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" for o in cell.get("outputs", []) if o.output_type == "error"]


# -- masters and generated student notebooks ------------------------------------------------
@pytest.mark.slow
def test_committed_student_notebooks_match_their_masters():
    """Runs ``otter assign`` on each master (a child interpreter per lab)."""
    assert drift(ROOT) == {}


@pytest.mark.slow
def test_an_edited_student_notebook_is_reported_as_drift(tmp_path):
    for lab_id in LABS:
        master = master_path(tmp_path, lab_id)
        master.parent.mkdir(parents=True)
        shutil.copyfile(master_path(ROOT, lab_id), master)
    (tmp_path / "assignments").mkdir()
    for lab_id in set(LABS) - {"lab07"}:  # every other lab's notebook as committed
        shutil.copyfile(student_path(ROOT, lab_id), student_path(tmp_path, lab_id))
    notebook = nbformat.read(student_path(ROOT, "lab07"), as_version=4)
    part_a = next(i for i, cell in enumerate(notebook.cells) if cell.source.startswith("## Part A"))
    notebook.cells[part_a].source = notebook.cells[part_a].source.replace("Part A", "Part Z")
    nbformat.write(notebook, student_path(tmp_path, "lab07"))
    found = drift(tmp_path)
    assert list(found) == ["lab07"]
    assert found["lab07"].startswith(f"cell {part_a} differs: expected '## Part A")
    assert cli.main(["assign", "--root", str(tmp_path), "--check"]) == 1
    assert cli.main(["assign", "--root", str(tmp_path), "--lab", "lab07"]) == 0
    assert drift(tmp_path) == {}


@pytest.fixture(scope="module")
def assigned(tmp_path_factory):
    out = tmp_path_factory.mktemp("assign")
    return {lab_id: run_otter_assign(master_path(ROOT, lab_id), lab_id, out / lab_id) for lab_id in LABS}


@pytest.mark.parametrize("lab_id", LABS)
def test_student_notebook_has_no_solutions_and_no_hidden_tests(lab_id):
    student = nbformat.read(student_path(ROOT, lab_id), as_version=4)
    text = "\n".join(cell.source for cell in student.cells)
    assert "SOLUTION" not in text and "BEGIN TESTS" not in text and "assert_item" not in text
    assert re.findall(r"^prediction_([A-E]) = \.\.\.$", text, flags=re.M) == list(get_lab(lab_id).part_ids())
    # no Otter in the student's kernel: the checks are lab.check, the export is lab.export (the kit installs no Otter)
    assert "otter" not in text and not re.search(r"\bgrader\.", text) and "lab.export()" in text
    for tests in student.metadata["otter"]["tests"].values():
        assert "hidden=True" not in tests
        for item in HIDDEN_ITEMS:
            assert f"'{item}')" not in tests


@pytest.mark.slow
@pytest.mark.parametrize("lab_id", LABS)
def test_autograder_tests_carry_the_rubric_points_and_hide_the_hidden_items(assigned, lab_id):
    autograder = nbformat.read(assigned[lab_id] / "autograder" / f"{lab_id}.ipynb", as_version=4)
    tests = autograder.metadata["otter"]["tests"]
    rubric = default_rubric(lab_id)
    assert set(tests) == {*get_lab(lab_id).part_ids(), "synthesis"}
    total = 0.0
    for name, source in tests.items():
        items = rubric.parts.get(name, rubric.synthesis)
        cases = re.findall(r"@test_case\(points=([\d.]+), hidden=(True|False)\)\ndef test_\w+\(\):\n.*\n    assert_item\('"
                           + lab_id + r"', '" + name + r"', '(\w+)'\)", source)
        assert {item: (float(points), hidden == "True") for points, hidden, item in cases} == \
            {item: (points, item in HIDDEN_ITEMS) for item, points in items.items() if points}  # formative items: no test
        total += sum(float(points) for points, _, _ in cases)
    assert total == rubric.max_score == 100


@pytest.mark.parametrize("lab_id", LABS)
def test_student_notebook_is_faithful_to_the_seed(lab_id):
    """The book's words that are fixed text live in the cells; those that name the track's device or
    host are rendered by ``lab.scenario`` / ``lab.synthesis_options`` (checked in the executed references)."""
    text = "\n".join(cell.source for cell in nbformat.read(student_path(ROOT, lab_id), as_version=4).cells)
    expected = {
        "lab02": ["Where Should Inference Run?", "When does distance rule out remote inference?",
                  "memory_scale = 2.0  # resident-memory demand: 0.5..3 in steps of 0.25",
                  "duty_cycle = 0.75  # active observation fraction: 0..1 in steps of 0.01", "lab.scenario('A')",
                  "lab.scenario('C')", "you set in Part A", "Defend the placement and its boundary"],
        "lab07": ["The Framework Tax", "executions = 50  # repeated executions: 10..200 in steps of 10", "Calculation notes.",
                  "Defend one execution plan", "lab.scenario('A')", "lab.scenario('B')", "lab.scenario('D')"],
        "lab08": ["Train for the Target, Not the Counter", "Does a larger batch finish sooner?", "lab.scenario('A')",
                  "lab.scenario('D')", 'strategy = "accumulate_32"', "Defend a time-to-target decision",
                  "The fix that cuts update time the most is right."],
        "lab11": ["Acceleration That Survives the Whole Path", "When does faster arithmetic help?",
                  "How much reuse fits locally?", "speedup = 10  # kernel-only speedup: 2..50 in steps of 2",
                  "budget_scale = 1.0  # budget scale: 0.05..1.5 in steps of 0.05", "q = (r − 1) / (f − 1)",
                  "S < 1.10", "0.45 ≤ g ≤ 0.55", "Defend the accelerator decision"],
    }[lab_id]
    for phrase in [*expected, 'TRACK = "tinyml"  # one of "tinyml", "mobile", "edge", "cloud"', "lab.progress()", "lab.export()",
                   "lab.synthesis_options()", "lab.report()"]:
        assert phrase in text, phrase


@pytest.mark.parametrize("lab_id, phrases", [
    ("lab02", ["A regional document-understanding service", "Payload exceeds saved boundary",
               "Filtering evidence may not transfer", "Hold: no feasible design", "Remote crosses the deadline"]),
    ("lab07", ["Maya, the performance engineer", "Ishan, the compiler engineer", "Sofia, the runtime engineer",
               "Noah, the training engineer", "Priya, the deployment engineer", "Execution count changes"]),
    ("lab11", ["Power draw differs from the TDP proxy", "Workload shape mix changes"]),
    ("lab08", ["On the upstream development host (**NVIDIA H100**)", "The resident physical-batch probe is **32**",
               "Schedule or cost limit is crossed"]),
])
def test_executed_references_show_the_books_words(lab_id, phrases):
    notebook = nbformat.read(ROOT / "solutions" / lab_id / "reference-cloud.ipynb", as_version=4)
    shown = json.dumps([cell.get("outputs", []) for cell in notebook.cells], ensure_ascii=False)
    text = "\n".join(cell.source for cell in notebook.cells) + shown
    for phrase in phrases:
        assert phrase in text, phrase


# -- reference submissions -------------------------------------------------------------------
@pytest.mark.parametrize("lab_id, track", sweep(LAB_TRACKS, fast=[("lab07", "cloud"), ("lab11", "tinyml")]))
def test_reference_notebook_is_executed_and_its_bundle_earns_full_marks(lab_id, track):
    notebook = nbformat.read(ROOT / "solutions" / lab_id / f"reference-{track}.ipynb", as_version=4)
    assert _errors(notebook) == []
    assert all(cell.execution_count for cell in notebook.cells if cell.cell_type == "code")
    assert f'TRACK = "{track}"' in notebook.cells[1].source
    report = grade_file(ROOT / "examples" / "submissions" / f"{lab_id}-{track}.json")
    assert (report.score, report.max_score, report.findings) == (100, 100, ())
    page = _html(notebook)
    assert page.count("data:image/png;base64,") >= 5 and page.count("mlsys-table") >= 6


# -- real execution (slow) --------------------------------------------------------------------
# Appended to the executed notebook: how often checking again grades the saved bundle (Otter's check, as the
# autograder's re-run calls its tests; the student notebook itself has no Otter), and the self-check.
REUSE_CELL = """\
import json as _json
import otter
grader = otter.Notebook(LAB_ID + ".ipynb")
from mlsys_grader.otter import _graded
_report, _before = lab._full_report(), _graded.cache_info()
grader.check("A"); grader.check("A")
_after = _graded.cache_info()
lab.check("A"); lab.check()
print("REUSE " + _json.dumps({"gradings": _after.misses - _before.misses,
                              "lookups": _after.hits + _after.misses - _before.hits - _before.misses,
                              "report_reused": lab._full_report() is _report}))
print("REPORT " + lab.check().model_dump_json())"""


def _run(notebook, lab_id: str, workdir: Path):
    notebook.cells.append(nbformat.v4.new_code_cell(f"LAB_ID = {lab_id!r}\n" + REUSE_CELL))
    references.execute(notebook, lab_id, workdir)
    printed = "".join(o.get("text", "") for o in notebook.cells[-1].outputs if o.output_type == "stream")
    reuse = json.loads(re.search(r"^REUSE (.*)$", printed, re.M).group(1))
    report = json.loads(re.search(r"^REPORT (.*)$", printed, re.M).group(1))
    return reuse, report


@pytest.mark.slow
@pytest.mark.parametrize("lab_id, track", [(lab_id, track) for lab_id in LABS for track in executed_tracks(lab_id, 2)])
def test_completed_student_notebook_runs_top_to_bottom(tmp_path, capsys, lab_id, track):
    """Filled in for ``track``, the notebook runs without errors, saves a full-marks bundle, checks again without
    grading again (Otter's tests share one grading of the saved bundle; ``lab.check`` reuses its report), agrees
    with ``mlsys-grader check``, and exports to HTML with its tables and charts as images.  Two tracks per lab, the
    labs together every track (:func:`conftest.executed_tracks` says why no more)."""
    notebook = references.fill(nbformat.read(student_path(ROOT, lab_id), as_version=4), references.answers(lab_id, track))
    reuse, report = _run(notebook, lab_id, tmp_path)
    assert _errors(notebook) == []
    assert reuse["lookups"] >= 2 and reuse["gradings"] <= 1 and reuse["report_reused"], reuse
    bundle = tmp_path / f"{lab_id}-submission.json"
    full = grade_file(bundle)
    assert (full.score, full.findings) == (100, ())
    assert cli.main(["check", str(bundle), "--json"]) == 0
    cli_report = json.loads(capsys.readouterr().out)
    assert (cli_report["score"], cli_report["findings"], cli_report["parts"]) == (report["score"], report["findings"], report["parts"])
    page = _html(notebook)
    assert page.count("data:image/png;base64,") >= 5
    assert page.count("mlsys-table") >= 6  # five part tables and the progress table
    for part in [*get_lab(lab_id).part_ids(), "synthesis"]:  # the check cell of every part and the synthesis
        score = report["parts"][part]
        where = "Synthesis" if part == "synthesis" else f"Part {part}"
        assert f"{where}: {score['max_score']:g} / {score['max_score']:g} on the public checks" in page, part
    assert "Still missing" not in page


@pytest.mark.slow
@pytest.mark.parametrize("lab_id, track", [(lab_id, track) for lab_id in LABS for track in executed_tracks(lab_id, 1)])
def test_unanswered_student_notebook_runs_top_to_bottom(tmp_path, lab_id, track):
    """As handed out (only the track chosen), "Run all" finishes: every part refuses politely.  One track per lab, the
    labs together every track (:func:`conftest.executed_tracks`)."""
    notebook = references.fill(nbformat.read(student_path(ROOT, lab_id), as_version=4), {"TRACK": track})
    _, report = _run(notebook, lab_id, tmp_path)
    assert _errors(notebook) == []
    assert report["score"] == 0 and report["track"] == track
    page = _html(notebook)
    assert "stays hidden until you lock a prediction" in page
    assert "no prediction yet" in page


@pytest.mark.slow
@pytest.mark.parametrize("lab_id", LABS)
def test_master_solutions_pass_every_test_under_otter_assign(tmp_path, lab_id):
    """``otter assign`` executes the master and raises if any public or hidden test fails on its solutions."""
    dist = run_otter_assign(master_path(ROOT, lab_id), lab_id, tmp_path / "dist", run_tests=True)
    assert (dist / "autograder" / f"{lab_id}.ipynb").is_file()


def test_a_missing_master_is_named(tmp_path):
    from mlsys_grader.errors import AssignError

    with pytest.raises(AssignError, match=r"master notebook for lab07 not found: expected .*solutions/lab07/lab07-master\.ipynb"):
        run_otter_assign(master_path(tmp_path, "lab07"), "lab07", tmp_path / "dist")
    assert cli.main(["assign", "--root", str(tmp_path), "--lab", "lab07"]) == 1
