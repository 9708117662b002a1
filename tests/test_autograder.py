"""The Gradescope autograder: the upload, the score of record, the results, the runner, the build, ``otter run``.

Fast tests cover the pieces directly.  Slow tests build both zips once per session with
``mlsys-grader autograder`` and then grade uploads as Gradescope's ``run_autograder`` does,
on a temporary ``/autograder`` layout, in the default mode (no student code runs, so this is
safe outside a container); and run ``otter run`` for the plugin.  The notebook sandbox and
the attacks on the container itself run in the Gradescope emulator
(``tests/test_gradescope_emulator.py``).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import needs
import pytest

from mlsys_grader import get_lab, grade_bundle, load_bundle, solve
from mlsys_grader.api import default_rubric
from mlsys_grader.core.embed import BUNDLE_MIME, bundle_display_data, bundle_from_outputs, find_embedded_bundles
from mlsys_grader.core.report import HIDDEN_ITEMS
from mlsys_grader.errors import LockError, OptionsError
from mlsys_grader.gradescope import _hardening as hardening
from mlsys_grader.gradescope._options import PLUGIN_NAME, options_from_mapping, plugin_block, with_options
from mlsys_grader.gradescope._otter_tests import (
    CaseResult,
    OtterResults,
    case_names,
    disagreements,
    question_part,
    run_tests_on_bundle,
    with_case_names,
)
from mlsys_grader.gradescope._record import ScoreOfRecord, file_fingerprint, grade_bytes, grade_upload, score_of_record
from mlsys_grader.gradescope._results import Review, gradescope_results, public_summary
from mlsys_grader.gradescope._upload import inspect_upload
from mlsys_grader.gradescope._watch import scan_code, scan_errors
from mlsys_grader.staff._autograder import (
    AutograderBuildError,
    environment_yml,
    project_root,
    run_autograder_script,
    setup_sh,
)
from mlsys_grader.staff._lock import Lock, lock

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "hostile"
sys.path.insert(0, str(HOSTILE))
import make_hostile  # noqa: E402
from conftest import LABS  # noqa: E402  (the registered labs)

TRACKS = ("tinyml", "mobile", "edge", "cloud")
HOSTILE_TRACK = "cloud"
PART_TITLES = {"A": "Part A", "B": "Part B", "C": "Part C", "D": "Part D", "E": "Part E", "synthesis": "Synthesis"}


def _bundle(lab: str = "lab07", track: str = "cloud", drop: tuple[str, ...] = ()) -> bytes:
    from mlsys_grader import Bundle

    data = solve(lab, track).model_dump(mode="json")
    for part in drop:
        data["evidence"].pop(part)
    return Bundle.model_validate(data).sealed().to_json().encode()


def _notebook(lab: str = "lab07", bundles: tuple[bytes, ...] = ()) -> dict:
    cells = [{"cell_type": "code", "source": "lab.capture('A')", "metadata": {}, "execution_count": None,
              "outputs": [{"output_type": "display_data", "metadata": {}, "data": bundle_display_data(b.decode())}]}
             for b in bundles]
    return {"cells": cells, "metadata": {"otter": {"assignment_name": lab}}, "nbformat": 4, "nbformat_minor": 5}


# -- fast: the channels into Otter's runner ---------------------------------------------------
class _Payload:
    def __reduce__(self):
        return (os.system, ("echo should-never-run",))


def test_safe_results_loader_refuses_a_pickle_that_would_run_code():
    data = pickle.dumps(_Payload())
    with pytest.raises(pickle.UnpicklingError, match=r"refused to load (posix|os)\.system"):
        hardening.safe_load_results(io.BytesIO(data))


def test_safe_results_loader_accepts_genuine_otter_results_only_as_grading_results():
    from otter.test_files import GradingResults

    loaded = hardening.safe_load_results(io.BytesIO(pickle.dumps(GradingResults([]))))
    assert type(loaded) is GradingResults
    with pytest.raises(pickle.UnpicklingError, match="must be a GradingResults; got dict"):
        hardening.safe_load_results(io.BytesIO(pickle.dumps({"score": 100})))


def test_log_socket_loader_takes_plain_data_only():
    assert hardening.safe_loads_plain(pickle.dumps({"msg": "hi", "levelno": 10})) == {"msg": "hi", "levelno": 10}
    with pytest.raises(pickle.UnpicklingError, match="expected only plain data"):
        hardening.safe_loads_plain(pickle.dumps(_Payload()))


def test_import_paths_a_student_could_write_to_are_dropped(tmp_path, monkeypatch):
    autograder = tmp_path / "autograder"
    monkeypatch.setattr(sys, "path", ["", str(autograder / "source"), "/usr/lib/python3.11", str(tmp_path / "elsewhere")])
    removed = hardening.drop_writable_import_paths(autograder)
    assert removed == ["", str(autograder / "source")]
    assert sys.path == ["/usr/lib/python3.11", str(tmp_path / "elsewhere")]


def test_cells_get_a_time_limit_and_the_sandbox_interrupts_instead_of_stopping():
    from nbconvert.preprocessors import ExecutePreprocessor

    original = ExecutePreprocessor.__init__
    try:
        hardening.limit_cell_time(12.0)
        assert ExecutePreprocessor().timeout == 12.0 and not ExecutePreprocessor().interrupt_on_timeout
        assert ExecutePreprocessor(timeout=5).timeout == 5
        hardening.limit_cell_time(20.0, interrupt=True)  # re-installing wraps the original, not the wrapper
        assert ExecutePreprocessor().timeout == 20.0 and ExecutePreprocessor().interrupt_on_timeout
    finally:
        ExecutePreprocessor.__init__ = original


def test_bundle_replaced_by_a_fifo_is_reported_gone_without_blocking(tmp_path):
    path = tmp_path / "lab07-submission.json"
    path.write_bytes(_bundle())
    before = file_fingerprint(str(path))
    assert before is not None and before.startswith("bundle:")
    path.unlink()
    os.mkfifo(path)
    assert file_fingerprint(str(path)) is None  # returns at once: no writer, no wait


def test_submitted_otter_log_is_set_aside_unread(tmp_path):
    (tmp_path / ".OTTER_LOG").write_bytes(pickle.dumps(_Payload()))
    assert hardening.quarantine_otter_log(tmp_path) is True
    assert not (tmp_path / ".OTTER_LOG").exists() and (tmp_path / ".OTTER_LOG.not-loaded").exists()
    assert hardening.quarantine_otter_log(tmp_path) is False


# -- fast: options -------------------------------------------------------------------------
def test_options_name_the_invalid_field_and_the_plugin_block_round_trips():
    with pytest.raises(OptionsError, match=rf"lab: Value error, lab must be one of {', '.join(LABS)} \(got 'lab99'\)"):
        options_from_mapping({"lab": "lab99"})
    with pytest.raises(OptionsError, match=r"notebook_budget_s: Input should be less than or equal to 420"):
        options_from_mapping({"lab": "lab07", "notebook_budget_s": 900})
    with pytest.raises(OptionsError, match=r"rerun: Extra inputs are not permitted"):
        options_from_mapping({"lab": "lab07", "rerun": True})
    options = options_from_mapping({"lab": "lab11", "rerun_notebook": True, "notebook_budget_s": 60})
    config = with_options({"plugins": [PLUGIN_NAME, "other.Plugin"], "pdf": False}, options)
    assert config["plugins"][0] == "other.Plugin"
    assert plugin_block(config) == {"lab": "lab11", "rerun_notebook": True, "notebook_budget_s": 60.0}
    assert options_from_mapping(plugin_block(config)) == options
    default = with_options({}, options_from_mapping({"lab": "lab07"}))
    assert plugin_block(default) == {"lab": "lab07", "rerun_notebook": False}


def test_the_package_exports_its_embedding_helpers_and_every_lazily_loaded_name():
    import mlsys_grader.gradescope as gradescope

    eager = {"BUNDLE_MIME", "bundle_display_data", "display_bundle", "find_embedded_bundles"}
    assert gradescope.__all__ == sorted(eager | set(gradescope._LAZY))


# -- fast: what was uploaded ------------------------------------------------------------------
def test_empty_upload_gets_one_sentence_and_the_full_maximum(tmp_path):
    record = grade_upload(inspect_upload(tmp_path, "lab07"))
    assert record.problem == ("Your upload is empty: upload the zip that the last cell of your Lab 07 notebook "
                              "(lab.export()) makes, after running every part's capture cell.")
    assert "empty_upload" in record.all_flags
    document = gradescope_results(record)
    assert sum(t.get("max_score", 0) for t in document["tests"]) == 100
    assert document["score"] == 0 and document["output"].startswith("Lab 07: Your upload is empty")


def test_an_ungradable_upload_voids_every_rubric_item_with_one_submission_level_sentence(tmp_path):
    record = grade_upload(inspect_upload(tmp_path, "lab11"))
    report, rubric = record.report, default_rubric("lab11")
    assert (report.score, report.max_score, report.track) == (0.0, rubric.max_score, "none")
    assert report.flags == ("missing",) and record.all_flags == ["empty_upload", "missing"]
    assert [(f.part, f.criterion, f.message) for f in report.findings] == [("bundle", "missing", record.problem)]
    expected = {name: dict(items) for name, items in [*rubric.parts.items(), ("synthesis", rubric.synthesis)]}
    assert {name: {i.item: i.max_points for i in part.items} for name, part in report.parts.items()} == expected
    assert all(item.points == 0 and not item.held for part in report.parts.values() for item in part.items)


@pytest.mark.parametrize("files", [("lab11-submission.json",), ("lab11.ipynb",), ("lab11.ipynb", "lab11-submission.json")])
def test_other_labs_work_is_named_as_the_wrong_lab(tmp_path, files):
    for name in files:
        (tmp_path / name).write_bytes(_bundle("lab11") if name.endswith(".json") else json.dumps(_notebook("lab11")).encode())
    record = grade_upload(inspect_upload(tmp_path, "lab07"))
    assert record.problem.startswith(f"This upload is Lab 11 work ({', '.join(sorted(files))}), but this assignment is Lab 07")
    assert record.all_flags == ["missing", "wrong_lab"] and record.report.score == 0


def test_notebook_of_another_lab_under_this_labs_name_is_the_wrong_lab(tmp_path):
    (tmp_path / "lab07.ipynb").write_text(json.dumps(_notebook("lab11")))
    record = grade_upload(inspect_upload(tmp_path, "lab07"))
    assert record.problem.startswith("This upload is Lab 11 work (the notebook lab07.ipynb), but this assignment is Lab 07")


def test_bundle_of_another_lab_in_this_labs_file_is_the_wrong_lab(tmp_path):
    (tmp_path / "lab07-submission.json").write_bytes(_bundle("lab11"))
    record = grade_upload(inspect_upload(tmp_path, "lab07"))
    assert record.problem.startswith("This upload is Lab 11 work (lab07-submission.json is a lab11 bundle)")
    assert "wrong_lab" in record.all_flags


def test_zip_inside_the_upload_is_graded_with_a_note(tmp_path):
    bundle = _bundle(drop=("E",))
    with zipfile.ZipFile(tmp_path / "lab07_2026_11_29.zip", "w") as archive:
        archive.writestr("lab07.ipynb", json.dumps(_notebook()))
        archive.writestr("lab07-submission.json", bundle)
    record = grade_upload(inspect_upload(tmp_path, "lab07"))
    assert record.problem is None and record.report.score == grade_bundle(bundle).score
    assert record.source == "lab07-submission.json inside lab07_2026_11_29.zip"
    assert record.public_notes == ("Your upload held lab07_2026_11_29.zip, a zip that was not unpacked; the "
                                   "lab07-submission.json inside it was graded. Next time upload the export zip itself.",)


def test_zip_inside_the_upload_with_the_other_labs_bundle_is_the_wrong_lab(tmp_path):
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:
        archive.writestr("lab11-submission.json", _bundle("lab11"))
    record = grade_upload(inspect_upload(tmp_path, "lab07"))
    assert record.problem.startswith("This upload is Lab 11 work (export.zip holds lab11-submission.json), but this "
                                     "assignment is Lab 07")
    assert "wrong_lab" in record.all_flags


def test_zip_inside_the_upload_without_a_bundle_gets_one_sentence(tmp_path):
    with zipfile.ZipFile(tmp_path / "work.zip", "w") as archive:
        archive.writestr("notes.txt", "hello")
    record = grade_upload(inspect_upload(tmp_path, "lab07"))
    assert record.problem.startswith("Your upload holds work.zip, but no lab07-submission.json could be read from it")
    assert "no_bundle" in record.all_flags


def test_symlinked_bundle_is_not_followed(tmp_path):
    secret = tmp_path / "elsewhere.json"
    secret.write_bytes(_bundle())
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "lab07-submission.json").symlink_to(secret)
    record = grade_upload(inspect_upload(upload, "lab07"))
    assert record.problem.startswith("Your upload is empty")
    assert record.report.score == 0


def test_export_without_saving_the_notebook_is_a_note_and_a_later_notebook_save_is_a_flag(tmp_path):
    older = load_bundle(_bundle(drop=("E",)))  # the notebook saved again after part E was captured
    full = load_bundle(_bundle())
    newer = full.model_copy(update={"created_at": older.created_at.replace(year=older.created_at.year + 1)}).sealed()
    older_raw, newer_raw = older.to_json().encode(), newer.to_json().encode()
    honest, swapped = tmp_path / "honest", tmp_path / "swapped"
    for folder, file_bytes, shown in ((honest, newer_raw, older_raw), (swapped, older_raw, newer_raw)):
        folder.mkdir()
        (folder / "lab07-submission.json").write_bytes(file_bytes)
        (folder / "lab07.ipynb").write_text(json.dumps(_notebook("lab07", (shown,))))
    record = grade_upload(inspect_upload(honest, "lab07"))
    assert "bundle_mismatch" not in record.all_flags
    assert any("exported without being saved" in note for note in record.notes), record.notes
    flagged = grade_upload(inspect_upload(swapped, "lab07"))
    assert "bundle_mismatch" in flagged.all_flags
    assert flagged.report.content_hash == older.content_hash  # the file is what is graded


def test_embedded_bundle_round_trips_and_latest_save_wins(tmp_path):
    early = load_bundle(_bundle())
    late = early.model_copy(update={"created_at": early.created_at.replace(year=early.created_at.year + 1)}).sealed()
    notebook = {"cells": [
        {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": bundle_display_data(late.to_json())}]},
        {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": bundle_display_data(early.to_json())}]},
    ]}
    found = find_embedded_bundles(notebook)
    assert [item.cell_index for item in found] == [1, 0]
    assert bundle_from_outputs(notebook) == found[-1] and bundle_from_outputs({"cells": [{"cell_type": "code"}]}) is None
    assert BUNDLE_MIME in notebook["cells"][0]["outputs"][0]["data"]
    (tmp_path / "lab07.ipynb").write_text(json.dumps(notebook))
    record = score_of_record("lab07", tmp_path)
    assert record.source == "the bundle shown in cell 0 of lab07.ipynb"
    assert record.report.content_hash == late.content_hash
    assert record.report.score == grade_bundle(late).score


# -- fast: what Gradescope shows --------------------------------------------------------------
def test_gradescope_layout_explains_every_lost_point_and_hides_hidden_items():
    bundle = _bundle(drop=("B",))
    report = grade_bundle(bundle)
    record = ScoreOfRecord("lab07", report, "lab07-submission.json")
    review = Review()
    kernel = OtterResults([CaseResult("B", "test_B_captured", 3, False, True)])
    for line in disagreements(report, kernel):
        review.flag("kernel_disagrees", f"kernel test vs score of record: {line}")
    document = gradescope_results(record, review)
    assert document["score"] == report.score
    tests = {test["name"]: test for test in document["tests"]}
    assert tests["Public checks"]["visibility"] == "visible" and "score" not in tests["Public checks"]
    for part, title in PART_TITLES.items():
        entry = tests[title]
        assert entry["visibility"] == "after_published"
        assert (entry["score"], entry["max_score"]) == (report.parts[part].score, report.parts[part].max_score)
    assert tests["Part B"]["output"].startswith("-16 (all items): Part B has no captured evidence")
    assert tests["Staff review"]["visibility"] == "hidden"
    assert "kernel_disagrees" in document["extra_data"]["mlsys_grader"]["flags"]
    assert "B: the tests of captured (0 / 3 on record) passed" in tests["Staff review"]["output"]
    public = tests["Public checks"]["output"]
    assert not any(f" {item}:" in public for item in HIDDEN_ITEMS), public
    assert "Part B: 0 / 10 — Part B has no captured evidence" in public


def test_public_summary_is_one_line_per_part_names_the_track_and_never_repeats_a_sentence():
    record = grade_bytes("lab07", _bundle(track="edge", drop=("B", "C", "D")), "lab07-submission.json")
    summary, clean = public_summary(record)
    lines = summary.splitlines()
    assert not clean
    assert lines[0].startswith("Lab 07, track edge: public checks ")
    assert [line.split(":")[0] for line in lines[1:]] == list(PART_TITLES.values())
    assert lines[2] == "Part B: 0 / 10 — Part B has no captured evidence; lock a prediction, run the part and capture it."
    assert lines[3] == lines[4].replace("Part D", "Part C") == "Part C: 0 / 10 — As for Part B."
    sentences = [s for line in lines for s in line.split(" — ", 1)[-1].split(". ") if len(s) > 30]
    assert len(sentences) == len(set(sentences))


def test_hand_edited_bundle_fails_the_public_checks_that_say_so():
    data = json.loads(_bundle())
    data["track"] = data["track"]  # unchanged content, but the seal is broken below
    data["content_hash"] = "0" * 64
    record = grade_bytes("lab07", json.dumps(data).encode(), "lab07-submission.json")
    document = gradescope_results(record)
    public = document["tests"][0]
    assert "edited after it was saved" in public["output"]
    assert public["status"] == "failed"
    assert "integrity" in document["extra_data"]["mlsys_grader"]["flags"]


def test_reference_bundle_results_report_the_bundles_own_flags():
    record = grade_bytes("lab07", _reference("lab07", "cloud")[1].encode(), "lab07-submission.json")
    document = gradescope_results(record)
    report = grade_bundle(_reference("lab07", "cloud")[1].encode())
    assert document["score"] == report.score
    assert document["extra_data"]["mlsys_grader"]["flags"] == sorted(report.flags)
    assert document["output"] == ("Lab 07, track cloud: graded from lab07-submission.json. The replay of your evidence, whether "
                                  "your predictions were supported, each part's points and your total are shown when grades "
                                  "are published."), "the top-level output never states the total"
    assert document["visibility"] == "after_published"
    total = next(t for t in document["tests"] if t["name"] == "Total")
    assert total == {"name": "Total", "visibility": "after_published", "output": f"Total: {report.score:g} / 100."}


# -- fast: Otter's tests in the grading process ------------------------------------------------
OTTER_TEST_FILE = '''from otter.test_files import test_case

OK_FORMAT = False

name = "{part}"
points = None
{cases}'''
OTTER_CASE = '''
@test_case(points={points}, hidden={hidden})
def test_{part}_{item}():
    from mlsys_grader.student import assert_item
    assert_item('lab07', '{part}', '{item}')
'''


def _test_files(folder: Path, items: dict[str, list[str]]) -> Path:
    folder.mkdir(exist_ok=True)
    for part, names in items.items():
        cases = "".join(OTTER_CASE.format(points=2, hidden=name == "replay", part=part, item=name) for name in names)
        (folder / f"{part}.py").write_text(OTTER_TEST_FILE.format(part=part, cases=cases))
    return folder


def test_otter_tests_run_on_the_graded_bundle_item_by_item_and_agree_with_the_record(tmp_path):
    tests = _test_files(tmp_path / "tests", {"A": ["captured", "replay"], "B": ["captured", "fresh"]})
    bundle = _bundle(drop=("B",))
    run = run_tests_on_bundle(tests, "lab07", bundle)
    assert run.error is None
    assert run.by_question() == {"A": {"score": 4.0, "possible": 4.0, "failed": []},
                                 "B": {"score": 0.0, "possible": 4.0, "failed": ["test_B_captured", "test_B_fresh"]}}
    assert disagreements(grade_bundle(bundle), run) == []
    assert not (Path.cwd() / "lab07-submission.json").exists()  # ran in a private folder


def test_otter_tests_in_the_grading_process_grade_through_the_replay_they_are_given(tmp_path):
    """The test files call ``assert_item`` alone; the pipeline hands them the score of record's replay for their run.
    A replay whose table holds an edited arm for part A's result makes their replay case fail (the lookup is what they
    compare with), the live default does not, and after the run the default is live again."""
    from mlsys_grader.core.jsonio import canonical_dumps
    from mlsys_grader.labs import get_lab
    from mlsys_grader.otter import _REPLAY
    from mlsys_grader.replay import Replay

    tests = _test_files(tmp_path / "tests", {"A": ["captured", "replay"]})
    data = json.loads(solve("lab07", "edge", 3).to_json())
    arm = data["evidence"]["A"]["result"]
    key = canonical_dumps(["edge", data["evidence"]["A"]["model_key"], arm["inputs"]])
    edited = {**arm, "dispatch_time_us": arm["dispatch_time_us"] * 2 + 1.0}
    bundle = json.dumps(data).encode()
    through_edit = run_tests_on_bundle(tests, "lab07", bundle, replay=Replay({get_lab("lab07"): {key: edited}}))
    assert through_edit.by_question()["A"]["failed"] == ["test_A_captured", "test_A_replay"]  # a part that fails replay earns nothing
    assert _REPLAY.get() is None
    assert run_tests_on_bundle(tests, "lab07", bundle + b" ").by_question()["A"]["failed"] == []  # other bytes: graded anew


def test_otter_tests_that_drifted_from_the_rubric_are_listed():
    report = grade_bundle(_bundle())
    drifted = OtterResults([CaseResult("A", "test_A_speed", 2, False, True), CaseResult("Q", "test_Q_x", 1, False, True),
                       CaseResult("A", "test_A_fresh", 3, False, False)])
    assert disagreements(report, drifted) == ["A: test test_A_speed matches no rubric item",
                                              "Otter question 'Q' matches no rubric part",
                                              "A: the tests of fresh (3 / 3 on record) failed"]


PLUGIN_DRIVER = """\
import json, sys, types
from mlsys_grader.gradescope._plugin import ScoreOfRecordPlugin
root = sys.argv[1]
plugin = ScoreOfRecordPlugin(root + "/submission/lab07.ipynb", json.load(open(root + "/submission_metadata.json")),
                             {"lab": "lab07"})
plugin.before_grading(types.SimpleNamespace(grade_from_log=True))  # Otter's hooks, in Otter's runner process
print(json.dumps(plugin._results_without_execution().to_gradescope_dict(None)))
"""


def test_run_autograder_and_the_otter_plugin_drive_one_pipeline_to_the_same_results(tmp_path):
    """The same upload through run_autograder() and through the plugin's hooks (before_grading, then
    Otter's runner asking for results without executing the notebook): the same document, disagreements and late
    policy included."""
    from mlsys_grader.gradescope._runner import run_autograder

    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    _test_files(root / "source" / "tests", {"A": ["captured", "replay", "speed"], "B": ["captured", "fresh"]})
    (root / "source" / "otter_config.json").write_text(json.dumps({"plugins": [{PLUGIN_NAME: {"lab": "lab07"}}]}))
    (root / "source" / "course.toml").write_text('[labs.lab07]\ndeadline = 2026-02-06T23:59:00-08:00\npenalty_per_day = 10\n')
    (root / "submission").mkdir()
    (root / "submission" / "lab07-submission.json").write_bytes(_bundle(drop=("B",)))
    (root / "submission_metadata.json").write_text(json.dumps({"created_at": "2026-02-08T10:00:00-08:00", "users": []}))
    by_runner = run_autograder(root, log=lambda message: None)
    done = subprocess.run([sys.executable, "-c", PLUGIN_DRIVER, str(root)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    by_plugin = json.loads(done.stdout.splitlines()[-1])
    assert by_plugin == by_runner
    mlsys = by_runner["extra_data"]["mlsys_grader"]
    assert "tests_disagree" in mlsys["flags"] and mlsys["late"]["percent"] == 20
    assert any("test_A_speed matches no rubric item" in note for note in mlsys["notes"]), mlsys["notes"]


@pytest.mark.slow
def test_the_otter_plugin_on_a_staff_machine_grades_through_the_users_verified_replay_table(tmp_path):
    """``otter run`` on a staff machine: with the user's tables built (``mlsys-grader warm``) the plugin grades through
    them without importing mlsysim, and says so; with none it replays live; the results are the same document."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    _test_files(root / "source" / "tests", {"A": ["captured", "replay"], "B": ["captured", "fresh"]})
    (root / "source" / "otter_config.json").write_text(json.dumps({"plugins": [{PLUGIN_NAME: {"lab": "lab07"}}]}))
    (root / "submission").mkdir()
    (root / "submission" / "lab07-submission.json").write_bytes(_bundle())
    (root / "submission_metadata.json").write_text(json.dumps({"created_at": "2026-02-01T10:00:00-08:00", "users": []}))
    driver = PLUGIN_DRIVER + 'print(json.dumps("mlsysim" in sys.modules))\n'
    runs = {}
    for name in ("warmed", "empty"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / name)}
        if name == "warmed":
            subprocess.run([sys.executable, "-m", "mlsys_grader", "warm", "lab07"], env=env, check=True, capture_output=True,
                           timeout=900)
        done = subprocess.run([sys.executable, "-c", driver, str(root)], capture_output=True, text=True, timeout=300,
                              cwd=ROOT, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        *_, document, imported = done.stdout.splitlines()
        runs[name] = (json.loads(document), json.loads(imported), done.stderr)
    warmed, empty = runs["warmed"], runs["empty"]
    assert f"mlsys-grader: replay: verified table in {tmp_path / 'warmed' / 'mlsys-grader' / 'replay'}" in warmed[2]
    assert warmed[1] is False, "the table answered: mlsysim was never imported"
    assert "mlsys-grader: replay: live — the table is not used: there is no table folder" in empty[2] and empty[1] is True
    assert warmed[0] == empty[0] and warmed[0]["score"] > 0


def test_kernel_case_names_are_restored_from_the_test_files(tmp_path):
    tests = _test_files(tmp_path / "tests", {"A": ["captured", "replay"]})
    assert case_names(tests) == {"A": ["test_A_captured", "test_A_replay"]}
    run = OtterResults([CaseResult("A", "A - 2", 6, True, False), CaseResult("A", "A - 9", 1, False, True)])
    assert [c.name for c in with_case_names(run, case_names(tests)).cases] == ["test_A_replay", "A - 9"]


@pytest.mark.parametrize(("name", "part"), [("A", "A"), ("part_b", "B"), ("q_c", "C"), ("lab07_part_e", "E"),
                                            ("synthesis", "synthesis"), ("Synthesis", "synthesis"), ("qa", None)])
def test_question_names_map_to_rubric_parts(name, part):
    assert question_part(name) == part


# -- fast: what a re-run tried ---------------------------------------------------------------
EXPECTED_ATTEMPTS = {
    "detached-process-rewrites-results": {"detached_process", "tamper_results"},
    "edit-autograder-source": {"tamper_source"},
    "edit-run-autograder": {"tamper_run_autograder"},
    "edit-grader-install": {"tamper_grader_install"},
    "signal-grader": {"signal_grader"},
    "forge-bundle-and-results": {"tamper_results"},
}


@pytest.mark.parametrize("name", sorted(make_hostile.ATTACKS))
def test_hostile_code_is_named_by_the_attempt_it_makes(name):
    flags = {flag for flag, _ in scan_code(json.loads((HOSTILE / f"{name}.ipynb").read_text()))}
    assert EXPECTED_ATTEMPTS.get(name, set()) <= flags, flags


@pytest.mark.parametrize("notebook", sorted([*ROOT.glob("solutions/*/reference-*.ipynb"), *ROOT.glob("assignments/*.ipynb")]),
                         ids=lambda p: p.name)
def test_honest_notebooks_attempt_nothing(notebook):
    assert scan_code(json.loads(notebook.read_text())) == []


def test_refused_writes_in_error_outputs_name_the_attempt():
    found = scan_errors(["cell 42: PermissionError: [Errno 13] Permission denied: '/autograder/source/otter_config.json'",
                         "cell 3: NameError: name 'x' is not defined"])
    assert found == [("tamper_source", "the re-run tried the autograder's source folder and was refused: cell 42: "
                                       "PermissionError: [Errno 13] Permission denied: '/autograder/source/otter_config.json'")]


# -- fast: the sandbox's process and file rules (root only) -------------------------------------
def _need_root():
    needs.root("the sandbox switches to another user id")


def test_every_process_of_the_sandbox_user_is_killed_even_a_detached_forking_one():
    from mlsys_grader.gradescope._sandbox import kill_all, processes_of

    _need_root()
    uid = 64199
    assert processes_of(uid) == []
    forker = "while :; do sleep 30 & sleep 0.2; done"  # keeps starting children in its own session
    for _ in range(2):
        subprocess.Popen(["/bin/sh", "-c", forker], user=uid, group=uid, extra_groups=[], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
    subprocess.Popen(["/bin/sleep", "300"], user=uid, group=uid, extra_groups=[], start_new_session=True, cwd="/")
    import time

    deadline = time.monotonic() + 10
    while len(processes_of(uid)) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = processes_of(uid)
    assert len(alive) >= 4 and all(p.command for p in alive)
    assert kill_all(uid, uid) >= 4
    assert processes_of(uid) == []


def test_autograder_folder_is_made_roots_and_not_writable_by_others(tmp_path):
    from mlsys_grader.gradescope._sandbox import protect_autograder

    _need_root()
    for sub in ("results", "source/tests", "submission"):
        (tmp_path / sub).mkdir(parents=True)
    (tmp_path / "run_autograder").write_text("#!/bin/bash\n")
    (tmp_path / "source" / "tests" / "A.py").write_text("")
    for path in (tmp_path, tmp_path / "results", tmp_path / "run_autograder", tmp_path / "source" / "tests" / "A.py"):
        os.chmod(path, 0o777)
    os.chown(tmp_path / "results", 1234, 1234)
    changes = protect_autograder(tmp_path)
    assert f"chown root {tmp_path / 'results'}" in changes
    for path in (tmp_path, tmp_path / "results", tmp_path / "run_autograder", tmp_path / "source" / "tests" / "A.py"):
        info = os.stat(path)
        assert info.st_uid == 0 and not info.st_mode & 0o022, path


# -- fast: the build's pieces ------------------------------------------------------------------
def test_lock_pins_the_installed_closure_and_names_what_is_missing():
    from importlib import metadata

    pinned = lock(["mlsysim==0.3.0", "otter-grader==7.0.0", "nbclient"])
    assert "mlsysim==0.3.0" in pinned.pins and "otter-grader==7.0.0" in pinned.pins
    assert f"numpy=={metadata.version('numpy')}" in pinned.pins  # a dependency of a dependency, as installed here
    assert all("==" in pin for pin in pinned.pins) and not any(p.lower().startswith("mlsys-grader") for p in pinned.pins)
    assert pinned.python == ".".join(map(str, sys.version_info[:3]))
    with pytest.raises(LockError, match=r"the autograder needs no-such-package-xyz but it is not installed here"):
        lock(["no-such-package-xyz"])
    with pytest.raises(LockError, match=r"the autograder needs mlsysim==9.9 but mlsysim 0.3.0 is installed here"):
        lock(["mlsysim==9.9"])


def test_environment_and_scripts_are_pinned_and_run_the_grader_not_otters_runner():
    pinned = Lock(("mlsysim==0.3.0", "numpy==2.0.0"), "3.11.7", "23.2.1")
    environment, name = environment_yml("name: otter-env\ndependencies:\n- python=3.11\n- pip\n- jupyter_server\n- pip:\n"
                                        "  - otter-grader[grading,plugins]==7.0.0\n", pinned, "mlsys_grader-0.1.0-py3-none-any.whl")
    assert name == "otter-env"
    assert environment.splitlines()[2:] == ["- python=3.11.7", "- pip=23.2.1", "- pip:", "  - mlsysim==0.3.0",
                                            "  - numpy==2.0.0", "  - /autograder/source/mlsys_grader-0.1.0-py3-none-any.whl"]
    script = run_autograder_script(name).splitlines()
    assert script[-1] == "exec /root/miniforge3/envs/otter-env/bin/python -I -m mlsys_grader.gradescope /autograder"
    otter_setup = ("set -e\nmamba env create -f /autograder/source/environment.yml\n"
                   "mamba install -n otter-env -c conda-forge nb_conda_kernels\n"
                   'mamba run -n otter-env bash -c "playwright install-deps && playwright install chromium"\n'
                   "mamba shell init --shell bash\n")
    setup = setup_sh(otter_setup, name)
    assert "playwright" not in setup and "nb_conda_kernels" not in setup
    steps = [line for line in setup.splitlines() if line.strip() and not line.startswith("#")]
    assert "replay table" in setup  # the image check's comment: it builds the tables
    assert steps[-2:] == ["chmod 711 /root",
                                                "/root/miniforge3/envs/otter-env/bin/python -I -m mlsys_grader.gradescope --check-image"]
    with pytest.raises(AutograderBuildError, match=r"setup\.sh from otter assign changed: expected one line matching"):
        setup_sh("set -e\n", name)


def test_build_needs_the_source_tree_and_says_where_to_run_it(tmp_path, capsys, monkeypatch):
    from mlsys_grader.cli import EXIT_UNGRADABLE, main

    assert project_root(ROOT) == ROOT
    with pytest.raises(AutograderBuildError, match=rf"{tmp_path} is not the mlsys-grader repository: run this command "
                                                   r"from the repository root .* or pass --root PATH"):
        project_root(tmp_path)
    assert main(["autograder", "-o", str(tmp_path / "dist"), "--root", str(tmp_path)]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "run this command from the repository root" in err


def test_autograder_command_names_a_bad_master_spec_and_a_missing_master(tmp_path, capsys):
    from mlsys_grader.cli import EXIT_UNGRADABLE, EXIT_USAGE, main

    assert main(["autograder", "-o", str(tmp_path), "--master", "lab99=x.ipynb"]) == EXIT_USAGE
    assert f"--master expects LAB=PATH with LAB in {', '.join(LABS)} (got 'lab99=x.ipynb')" in capsys.readouterr().err
    missing = tmp_path / "nowhere" / "lab07-master.ipynb"
    assert main(["autograder", "-o", str(tmp_path), "--root", str(ROOT), "--master", f"lab07={missing}"]) == EXIT_UNGRADABLE
    assert f"lab07: expected an Otter master notebook at {missing}, found none" in capsys.readouterr().err


# -- slow: the real zips, graded as Gradescope's run_autograder does -------------------------------
def _masters() -> dict[str, Path]:
    masters = {lab: ROOT / "solutions" / lab / f"{lab}-master.ipynb" for lab in LABS}
    missing = [str(path.relative_to(ROOT)) for path in masters.values() if not path.is_file()]
    if missing:
        pytest.fail(f"Otter masters missing: {missing}; run solutions/build_masters.py")
    return masters


@pytest.fixture(scope="session")
def autograders() -> dict[str, Path]:
    """Both autograder zips, built once per session with ``mlsys-grader autograder`` (default options)."""
    import emulator

    _masters()
    try:
        built = emulator.autograder_zips()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    assert "packages pinned from this environment; notebook re-run off" in built.stdout
    out = built.zips["lab07"].parent
    zips = {lab: out / f"{lab}-autograder.zip" for lab in LABS}
    lock_lines = (out / "requirements-lock.txt").read_text().splitlines()
    assert "mlsysim==0.3.0" in lock_lines and "otter-grader==7.0.0" in lock_lines
    for lab, path in zips.items():
        archive = zipfile.ZipFile(path)
        names = archive.namelist()
        assert any(name.startswith("mlsys_grader-") and name.endswith(".whl") for name in names), names
        config = json.loads(archive.read("otter_config.json"))
        assert config["plugins"] == [{PLUGIN_NAME: {"lab": lab, "rerun_notebook": False}}]
        assert config["pdf"] is False and config["grade_from_log"] is False
        environment = archive.read("environment.yml").decode()
        pins = [line.strip()[2:] for line in environment.splitlines() if "==" in line]
        assert pins == [line for line in lock_lines if "==" in line and not line.startswith("#")]
        assert "playwright install" not in archive.read("setup.sh").decode()
        assert archive.read("run_autograder").decode().endswith("-I -m mlsys_grader.gradescope /autograder\n")
    return zips


def grade_as_gradescope(autograder: Path, upload: Path | bytes, workdir: Path, name: str = "ag") -> dict:
    """Lay out ``/autograder`` as Gradescope does (source = the zip, submission = the upload) and grade it in-process."""
    from mlsys_grader.gradescope._runner import run_autograder

    root = workdir / name
    (root / "results").mkdir(parents=True)
    with zipfile.ZipFile(autograder) as archive:
        archive.extractall(root / "source")
    submission = root / "submission"
    if isinstance(upload, Path) and upload.is_dir():
        shutil.copytree(upload, submission)
    else:
        submission.mkdir()
        with zipfile.ZipFile(io.BytesIO(upload) if isinstance(upload, bytes) else upload) as archive:
            archive.extractall(submission)  # Gradescope unpacks an uploaded zip
    document = run_autograder(root, log=lambda message: None)
    written = json.loads((root / "results" / "results.json").read_text())
    assert written == document
    return document


def export_zip(notebook: Path, bundle_text: str | None, lab: str, extra: dict[str, bytes] | None = None) -> bytes:
    """A submission zip as ``lab.export()`` makes it: the notebook and ``<lab>-submission.json``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(notebook, arcname=f"{lab}.ipynb")
        if bundle_text is not None:
            archive.writestr(f"{lab}-submission.json", bundle_text)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def part_scores(results: dict) -> dict[str, tuple[float, float]]:
    titles = {title: part for part, title in PART_TITLES.items()}
    return {titles[t["name"]]: (t["score"], t["max_score"]) for t in results["tests"] if t["name"] in titles}


def assert_reports_record(results: dict, bundle_text: str | bytes) -> None:
    """The reported scores, total and per part, are the score of record of ``bundle_text``; the maximum is 100."""
    record = grade_bundle(bundle_text.encode() if isinstance(bundle_text, str) else bundle_text)
    assert results["score"] == pytest.approx(record.score), results["extra_data"]
    assert part_scores(results) == {name: (part.score, part.max_score) for name, part in record.parts.items()}
    assert sum(t.get("max_score", 0) for t in results["tests"]) == 100


def _reference(lab: str, track: str) -> tuple[Path, str]:
    notebook = ROOT / "solutions" / lab / f"reference-{track}.ipynb"
    bundle = ROOT / "examples" / "submissions" / f"{lab}-{track}.json"
    if not notebook.is_file() or not bundle.is_file():
        pytest.fail(f"{notebook.relative_to(ROOT)} and its bundle are missing; run solutions/make_references.py")
    return notebook, bundle.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("lab", LABS)
def test_reference_export_zip_gets_the_score_of_record_of_its_bundle(lab, track, autograders, tmp_path):
    notebook, bundle = _reference(lab, track)
    results = grade_as_gradescope(autograders[lab], export_zip(notebook, bundle, lab), tmp_path)
    assert_reports_record(results, bundle)
    mlsys = results["extra_data"]["mlsys_grader"]
    assert mlsys["flags"] == sorted(grade_bundle(bundle.encode()).flags)
    assert mlsys["track"] == track and results["output"].startswith(f"Lab {lab[3:]}, track {track}: ")
    assert mlsys["otter_tests"]["error"] is None and "notebook_run" not in mlsys  # default mode: the notebook never ran
    assert set(mlsys["otter_tests"]["questions"]) == {*get_lab(lab).part_ids(), "synthesis"}


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_reference_notebook_alone_is_graded_from_its_embedded_bundle(lab, autograders, tmp_path):
    notebook, _ = _reference(lab, HOSTILE_TRACK)
    embedded = find_embedded_bundles(json.loads(notebook.read_text(encoding="utf-8")))
    assert embedded, (f"{notebook.name} holds no bundle output ({BUNDLE_MIME}); regenerate the references "
                      "with solutions/make_references.py after the student API displays the bundle on save")
    upload = tmp_path / "upload"
    upload.mkdir()
    shutil.copy(notebook, upload / f"{lab}.ipynb")
    results = grade_as_gradescope(autograders[lab], upload, tmp_path)
    assert_reports_record(results, embedded[-1].text)
    assert results["extra_data"]["mlsys_grader"]["source"].startswith("the bundle shown in cell ")


@pytest.mark.slow
def test_unusable_uploads_get_one_clear_sentence_and_a_maximum_of_100(autograders, tmp_path):
    lab11_notebook, lab11_bundle = _reference("lab11", "cloud")
    uploads = {
        "empty": (b"", "Your upload is empty: "),
        "wrong-lab": (export_zip(lab11_notebook, lab11_bundle, "lab11"), "This upload is Lab 11 work ("),
    }
    for name, (data, start) in uploads.items():
        folder = tmp_path / f"{name}-upload"
        folder.mkdir()
        if data:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                archive.extractall(folder)
        results = grade_as_gradescope(autograders["lab07"], folder, tmp_path, name)
        public = results["tests"][0]["output"].splitlines()
        assert public[0].startswith(start) and public[0].endswith("after running every part's capture cell."), public
        assert results["output"] == f"Lab 07: {public[0]}"
        assert results["score"] == 0 and sum(t.get("max_score", 0) for t in results["tests"]) == 100
        assert public[0] not in "\n".join(public[1:])  # said once


@pytest.mark.slow
def test_export_zip_uploaded_inside_a_zip_is_graded(autograders, tmp_path):
    notebook, bundle = _reference("lab07", HOSTILE_TRACK)
    folder = tmp_path / "upload"
    folder.mkdir()
    (folder / "lab07_export.zip").write_bytes(export_zip(notebook, bundle, "lab07"))
    results = grade_as_gradescope(autograders["lab07"], folder, tmp_path)
    assert_reports_record(results, bundle)
    assert "Your upload held lab07_export.zip, a zip that was not unpacked" in results["tests"][0]["output"]


def _hostile_upload(name: str) -> tuple[bytes, str]:
    _, reference_bundle = _reference(make_hostile.LAB, HOSTILE_TRACK)
    bundle = make_hostile.submitted_bundle(name, reference_bundle)
    extra = {".OTTER_LOG": pickle.dumps(_MarkerPayload("/tmp/mlsys-never"))} if name == "pickle-payload-for-runner" else None
    return export_zip(HOSTILE / f"{name}.ipynb", bundle, make_hostile.LAB, extra), bundle


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(make_hostile.ATTACKS))
def test_hostile_notebook_has_no_effect_at_all_in_the_default_mode(name, autograders, tmp_path):
    """Nothing of the notebook runs: the results are those of the same bundle with the honest reference notebook."""
    upload, bundle = _hostile_upload(name)
    reference_notebook, _ = _reference(make_hostile.LAB, HOSTILE_TRACK)
    results = grade_as_gradescope(autograders[make_hostile.LAB], upload, tmp_path, "hostile")
    clean = grade_as_gradescope(autograders[make_hostile.LAB], export_zip(reference_notebook, bundle, make_hostile.LAB),
                                tmp_path, "clean")
    assert_reports_record(results, bundle)
    assert results["score"] < 100
    # identical, except where a staff note says in which cell the notebook shows its bundle (attack cells move it)
    assert re.sub(r"cell \d+", "cell N", json.dumps(results)) == re.sub(r"cell \d+", "cell N", json.dumps(clean))


class _MarkerPayload:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (exec, (f"import pathlib; pathlib.Path({self.path!r}).write_text('OTTER_LOG payload ran')",))


@pytest.mark.slow
def test_grader_entry_point_runs_as_run_autograder_does(autograders, tmp_path):
    """``python -I -m mlsys_grader.gradescope DIR``: the score of record is written first, then the final results."""
    notebook, bundle = _reference("lab07", HOSTILE_TRACK)
    root = tmp_path / "autograder"
    (root / "results").mkdir(parents=True)
    zipfile.ZipFile(autograders["lab07"]).extractall(root / "source")
    zipfile.ZipFile(io.BytesIO(export_zip(notebook, bundle, "lab07"))).extractall(root / "submission")
    done = subprocess.run([sys.executable, "-I", "-m", "mlsys_grader.gradescope", str(root)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line.split("] ", 1)[1] for line in done.stdout.splitlines()]
    assert lines[0].startswith("replay: ")  # which table the record is graded through (none in this interpreter's prefix)
    assert lines[1].startswith("score of record ") and lines[1].endswith("results.json written")
    assert lines[-1].startswith("final results.json written: ")
    assert_reports_record(json.loads((root / "results" / "results.json").read_text()), bundle)


# -- slow: otter run with the plugin (a staff machine) --------------------------------------------
def otter_run(autograder: Path, submission: Path, workdir: Path, env: dict[str, str] | None = None) -> dict:
    """``otter run`` in a subprocess, as staff would; the results.json it wrote."""
    out = workdir / "otter-out"
    out.mkdir()
    done = subprocess.run([sys.executable, "-m", "otter", "run", "-a", str(autograder), "-o", str(out), str(submission)],
                          capture_output=True, text=True, cwd=workdir, env={**os.environ, **(env or {})}, timeout=900)
    assert done.returncode == 0, f"otter run failed on {submission.name}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads((out / "results.json").read_text())


def _with_options(autograder: Path, target: Path, **options) -> Path:
    with zipfile.ZipFile(autograder) as source, zipfile.ZipFile(target, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name == "otter_config.json":
                config = json.loads(data)
                config["plugins"][0][PLUGIN_NAME].update(options)
                data = json.dumps(config).encode()
            out.writestr(name, data)
    return target


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_otter_run_reports_the_score_of_record_without_running_the_notebook(lab, autograders, tmp_path):
    notebook, bundle = _reference(lab, HOSTILE_TRACK)
    submission = tmp_path / "submission.zip"
    submission.write_bytes(export_zip(notebook, bundle, lab))
    results = otter_run(autograders[lab], submission, tmp_path)
    assert_reports_record(results, bundle)
    mlsys = results["extra_data"]["mlsys_grader"]
    assert "kernel_tests" not in mlsys and mlsys["otter_tests"]["error"] is None
    assert mlsys["flags"] == sorted(grade_bundle(bundle.encode()).flags)


KERNEL_FLAGS = {
    "monkeypatch-grader-and-edit-numbers": {"integrity", "kernel_disagrees"},
    "replace-otter-test-runner": {"kernel_disagrees"},
    "forge-bundle-and-results": {"kernel_disagrees"},
    "pickle-payload-for-runner": {"kernel_results_rejected"},
    "kill-kernel-mid-run": {"kernel_results_rejected"},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KERNEL_FLAGS))
def test_otter_run_with_the_rerun_reports_the_score_of_record_and_flags_the_kernel(name, autograders, tmp_path):
    lab = make_hostile.LAB
    _, reference_bundle = _reference(lab, HOSTILE_TRACK)
    bundle = make_hostile.submitted_bundle(name, reference_bundle)
    marker = tmp_path / "pickle-payload-ran"
    extra = {".OTTER_LOG": pickle.dumps(_MarkerPayload(str(marker)))} if name == "pickle-payload-for-runner" else None
    submission = tmp_path / "submission.zip"
    submission.write_bytes(export_zip(HOSTILE / f"{name}.ipynb", bundle, lab, extra))
    rerun = _with_options(autograders[lab], tmp_path / "rerun.zip", rerun_notebook=True)
    results = otter_run(rerun, submission, tmp_path, env={"MLSYS_HOSTILE_MARKER": str(marker)})
    assert_reports_record(results, bundle)
    assert results["score"] < 100
    flags = set(results["extra_data"]["mlsys_grader"]["flags"])
    assert KERNEL_FLAGS[name] <= flags, flags
    staff = next(t for t in results["tests"] if t["name"] == "Staff review")
    assert staff["visibility"] == "hidden"
    assert not marker.exists(), marker.read_text()


@pytest.mark.slow
def test_otter_run_notebook_that_never_finishes_times_out_and_still_gets_its_score_of_record(autograders, tmp_path):
    lab = make_hostile.LAB
    _, reference_bundle = _reference(lab, HOSTILE_TRACK)
    bundle = make_hostile.submitted_bundle("never-finishes", reference_bundle)
    quick = _with_options(autograders[lab], tmp_path / "quick.zip", rerun_notebook=True, cell_timeout_s=5)
    submission = tmp_path / "submission.zip"
    submission.write_bytes(export_zip(HOSTILE / "never-finishes.ipynb", bundle, lab))
    results = otter_run(quick, submission, tmp_path)
    assert_reports_record(results, bundle)
    assert "kernel_results_rejected" in results["extra_data"]["mlsys_grader"]["flags"]
    assert any("CellTimeoutError" in note for note in results["extra_data"]["mlsys_grader"]["notes"])


# -- the score of record through the image's replay table (issue 19) ------------------------------------------------

@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory, replay_tables_dir) -> Path:
    """Lab 07's replay table as ``setup.sh`` leaves the image's (:func:`build_replay_tables`): here it finds the session's
    table (built live through mlsysim once per content, :func:`conftest.replay_tables_dir`) and verifies it as the image
    check does; the build itself is tested in ``tests/test_replay_table.py`` and by the Gradescope emulator."""
    from mlsys_grader.gradescope._runner import build_replay_tables
    from mlsys_grader.replay._table import table_key

    where = tmp_path_factory.mktemp("replay") / "tables"
    where.mkdir()
    name = table_key(get_lab("lab07")).filename()
    shutil.copy(replay_tables_dir / name, where / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("mlsys_grader.gradescope._runner.lab_ids", lambda: ("lab07",))
        assert build_replay_tables(where) == []
    return where


def _gradescope_folder(root: Path, bundle: bytes) -> Path:
    (root / "source").mkdir(parents=True)
    _test_files(root / "source" / "tests", {"A": ["captured", "replay"], "E": ["captured", "decision"]})
    (root / "source" / "otter_config.json").write_text(json.dumps({"plugins": [{PLUGIN_NAME: {"lab": "lab07"}}]}))
    (root / "submission").mkdir()
    (root / "submission" / "lab07-submission.json").write_bytes(bundle)
    return root


def _graded(root: Path, replay: Path | None) -> tuple[dict, bytes, list[str]]:
    from mlsys_grader.gradescope._runner import run_autograder

    lines: list[str] = []
    document = run_autograder(root, log=lines.append, replay_dir=replay)
    return document, (root / "results" / "results.json").read_bytes(), lines


def test_the_score_of_record_through_the_verified_table_is_byte_identical_to_live_replay(replay_dir, tmp_path):
    _, reference = _reference("lab07", HOSTILE_TRACK)
    for name, bundle in (("reference", reference.encode()), ("partial", _bundle(drop=("B", "D")))):
        by_table, table_bytes, table_log = _graded(_gradescope_folder(tmp_path / f"{name}-table", bundle), replay_dir)
        live, live_bytes, live_log = _graded(_gradescope_folder(tmp_path / f"{name}-live", bundle), None)
        assert table_bytes == live_bytes and by_table == live
        assert table_log[0].startswith(f"replay: verified table in {replay_dir} (") and "evaluations" in table_log[0]
        assert live_log[0] == "replay: live (no replay table folder configured)"
    assert by_table["score"] < 100 and reference  # the partial bundle really lost points


def test_a_missing_tampered_or_untrusted_table_leaves_live_replay_and_the_staff_log_says_why(replay_dir, tmp_path):
    from mlsys_grader.gradescope._record import replay_for
    from mlsys_grader.labs import get_lab

    table = next(replay_dir.glob("lab07-*.replay"))
    tampered = tmp_path / "tampered"
    shutil.copytree(replay_dir, tampered)
    copy = tampered / table.name
    head, _, payload = copy.read_bytes().partition(b"\n")
    copy.write_bytes(head + b"\n" + payload.replace(b"cloud", b"cl0ud", 1))  # the header's digest no longer matches
    writable = tmp_path / "writable"
    shutil.copytree(replay_dir, writable)
    writable.chmod(0o777)
    expected = {tmp_path / "absent": "there is no table folder", tampered: "(truncated or tampered)",
                writable: "is writable by others (mode 777)", tmp_path / "empty": "no replay table at"}
    (tmp_path / "empty").mkdir()
    for folder, why in expected.items():
        replay, verdict = replay_for("lab07", folder)
        assert verdict.startswith("replay: live — the table is not used: ") and why in verdict, verdict
        assert replay.table(get_lab("lab07")) is None
    bundle = _bundle()
    document, _, lines = _graded(_gradescope_folder(tmp_path / "ag", bundle), tampered)
    assert "(truncated or tampered)" in lines[0] and document["score"] == grade_bundle(bundle).score


FRESH_GRADER = """
import sys
from pathlib import Path
from mlsys_grader.gradescope._runner import run_autograder
document = run_autograder(sys.argv[1], replay_dir=Path(sys.argv[2]), own_process=True)
print("pint imported:", "pint" in sys.modules)
print("mlsysim imported:", "mlsysim" in sys.modules)
"""


@pytest.mark.slow
def test_a_fresh_runner_grades_through_the_table_without_importing_mlsysim(replay_dir, tmp_path):
    _, reference = _reference("lab07", HOSTILE_TRACK)
    root = _gradescope_folder(tmp_path / "ag", reference.encode())
    done = subprocess.run([sys.executable, "-I", "-c", FRESH_GRADER, str(root), str(replay_dir)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "imported so far: mlsysim no, pint no" in done.stdout and done.stdout.rstrip().endswith("mlsysim imported: False"), done.stdout
    assert "pint imported: False" in done.stdout, done.stdout  # the reader's units: the package's checked-in scales
    live, _, _ = _graded(_gradescope_folder(tmp_path / "live", reference.encode()), None)
    assert json.loads((root / "results" / "results.json").read_text()) == live


def test_the_image_lock_pins_mlsysim_even_when_nothing_grading_imports_needs_it():
    from mlsys_grader.staff._autograder import IMAGE_ALWAYS, image_roots

    assert "mlsysim" in IMAGE_ALWAYS and set(IMAGE_ALWAYS) <= set(image_roots(ROOT))
    pinned = lock([*IMAGE_ALWAYS])
    from importlib.metadata import version

    assert f"mlsysim=={version('mlsysim')}" in pinned.pins
    assert not any(pin.startswith("mlsysim==") for pin in lock(["pydantic"]).pins)  # the pin comes from IMAGE_ALWAYS
