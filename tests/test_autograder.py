"""The Gradescope autograder: built zips, the score of record under ``otter run``, hostile notebooks.

Slow tests run the real thing — ``otter assign`` (once per session) and ``otter run`` in a
subprocess — so each ``otter run`` costs seconds; the set is kept small on purpose: one
track per lab for the references, the unanswered notebook, and the four hostile notebooks.
The fast tests at the top cover the pieces (safe unpickling, the Gradescope layout) directly.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mlsys_grader import grade_bundle, solve
from mlsys_grader.core.report import HIDDEN_ITEMS
from mlsys_grader.gradescope import _hardening as hardening
from mlsys_grader.gradescope._embed import (
    BUNDLE_MIME,
    bundle_display_data,
    find_embedded_bundles,
)
from mlsys_grader.gradescope._results import (
    compare_kernel,
    gradescope_results,
    question_part,
)
from mlsys_grader.gradescope._record import ScoreOfRecord, score_of_record

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "hostile"
sys.path.insert(0, str(HOSTILE))
import make_hostile  # noqa: E402

LABS = ("lab07", "lab11")
TRACKS = ("tinyml", "mobile", "edge", "cloud")
# Every track of both labs by default (about 3.5 min of otter runs); MLSYS_AUTOGRADER_TRACKS=cloud
# (or another comma list) runs fewer while iterating.
_tracks = os.environ.get("MLSYS_AUTOGRADER_TRACKS", "all")
REFERENCE_TRACKS = TRACKS if _tracks == "all" else tuple(t.strip() for t in _tracks.split(",") if t.strip())
HOSTILE_TRACK = "cloud"
PART_TITLES = {"A": "Part A", "B": "Part B", "C": "Part C", "D": "Part D", "E": "Part E", "synthesis": "Synthesis"}


# -- fast: the pieces ------------------------------------------------------------------------
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


def test_cells_get_a_time_limit_when_otter_sets_none():
    from nbconvert.preprocessors import ExecutePreprocessor

    original = ExecutePreprocessor.__init__
    try:
        hardening.limit_cell_time(12.0)
        assert ExecutePreprocessor().timeout == 12.0
        assert ExecutePreprocessor(timeout=5).timeout == 5
        hardening.limit_cell_time(20.0)  # re-installing wraps the original, not the wrapper
        assert ExecutePreprocessor().timeout == 20.0
    finally:
        ExecutePreprocessor.__init__ = original


def test_bundle_replaced_by_a_fifo_is_reported_gone_without_blocking(tmp_path):
    from mlsys_grader.gradescope._record import file_fingerprint

    path = tmp_path / "lab07-submission.json"
    path.write_text(solve("lab07", "cloud").to_json())
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


@pytest.mark.parametrize(("name", "part"), [("A", "A"), ("part_b", "B"), ("q_c", "C"), ("lab07_part_e", "E"),
                                            ("synthesis", "synthesis"), ("Synthesis", "synthesis"), ("qa", None)])
def test_question_names_map_to_rubric_parts(name, part):
    assert question_part(name) == part


def test_embedded_bundle_round_trips_and_latest_save_wins(tmp_path):
    early = solve("lab07", "cloud")
    late = early.model_copy(update={"created_at": early.created_at.replace(year=early.created_at.year + 1)}).sealed()
    notebook = {"cells": [
        {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": bundle_display_data(late.to_json())}]},
        {"cell_type": "code", "outputs": [{"output_type": "display_data", "data": bundle_display_data(early.to_json())}]},
    ]}
    found = find_embedded_bundles(notebook)
    assert [item.cell_index for item in found] == [1, 0]
    assert BUNDLE_MIME in notebook["cells"][0]["outputs"][0]["data"]
    path = tmp_path / "lab07.ipynb"
    path.write_text(json.dumps(notebook))
    record = score_of_record("lab07", tmp_path, path)
    assert record.source == "notebook output in cell 0"
    assert record.report.content_hash == late.content_hash
    assert record.report.score == record.report.max_score


def test_gradescope_layout_explains_every_lost_point_and_hides_hidden_items():
    bundle = solve("lab07", "cloud")
    broken = bundle.model_copy(update={"evidence": {k: v for k, v in bundle.evidence.items() if k != "B"}}).sealed()
    report = grade_bundle(broken)
    record = ScoreOfRecord("lab07", report, "test")
    document = gradescope_results(record, compare_kernel(report, {"A": (16, 16), "B": (16, 16)}, None))
    assert document["score"] == report.score
    tests = {test["name"]: test for test in document["tests"]}
    assert tests["Public checks"]["visibility"] == "visible" and "score" not in tests["Public checks"]
    for part, title in PART_TITLES.items():
        entry = tests[title]
        assert entry["visibility"] == "after_published"
        assert (entry["score"], entry["max_score"]) == (report.parts[part].score, report.parts[part].max_score)
    assert tests["Part B"]["output"].startswith("-16 (all items): Part B has no captured evidence")
    assert tests["Staff review"]["visibility"] == "hidden"
    assert "kernel-disagrees" in document["extra_data"]["mlsys_grader"]["flags"]
    assert "Part B: kernel tests gave 16, score of record is 0" in tests["Staff review"]["output"]
    public = tests["Public checks"]["output"]
    assert not any(f" {item}:" in public for item in HIDDEN_ITEMS), public
    assert "-3 captured: " not in public and "-9 (all items): Part B has no captured evidence" in public


def test_autograder_command_names_a_bad_master_spec_and_a_missing_master(tmp_path, capsys, monkeypatch):
    from mlsys_grader.cli import EXIT_UNGRADABLE, EXIT_USAGE, main
    from mlsys_grader.gradescope import _build as build

    assert main(["autograder", "-o", str(tmp_path), "--master", "lab99=x.ipynb"]) == EXIT_USAGE
    assert "--master expects LAB=PATH with LAB in lab07, lab11 (got 'lab99=x.ipynb')" in capsys.readouterr().err
    # the master is checked before anything is assigned; no need to build a real wheel for that
    monkeypatch.setattr(build, "build_wheel", lambda dest, root=None: dest / "mlsys_grader-0-py3-none-any.whl")
    missing = tmp_path / "nowhere" / "lab07-master.ipynb"
    assert main(["autograder", "-o", str(tmp_path), "--master", f"lab07={missing}"]) == EXIT_UNGRADABLE
    assert f"lab07: expected an Otter master notebook at {missing}, found none" in capsys.readouterr().err


# -- slow: the real autograder -------------------------------------------------------------
def _masters() -> dict[str, Path]:
    masters = {lab: ROOT / "solutions" / lab / f"{lab}-master.ipynb" for lab in LABS}
    missing = [str(path.relative_to(ROOT)) for path in masters.values() if not path.is_file()]
    if missing:
        pytest.fail(f"Otter masters missing: {missing}; run solutions/build_masters.py")
    return masters


@pytest.fixture(scope="session")
def autograders(tmp_path_factory) -> dict[str, Path]:
    """Both autograder zips, built once per session with ``mlsys-grader autograder``."""
    out = tmp_path_factory.mktemp("autograders")
    command = [sys.executable, "-m", "mlsys_grader", "autograder", "-o", str(out), "--no-run-tests"]
    for lab, master in _masters().items():
        command += ["--master", f"{lab}={master}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, f"mlsys-grader autograder failed:\n{done.stdout}\n{done.stderr}"
    zips = {lab: out / f"{lab}-autograder.zip" for lab in LABS}
    for lab, path in zips.items():
        names = zipfile.ZipFile(path).namelist()
        assert any(name.startswith("mlsys_grader-") and name.endswith(".whl") for name in names), names
        config = json.loads(zipfile.ZipFile(path).read("otter_config.json"))
        assert config["plugins"] == [{"mlsys_grader.gradescope.ScoreOfRecordPlugin": {"lab": lab}}]
        environment = zipfile.ZipFile(path).read("environment.yml").decode()
        assert "mlsysim==0.3.0" in environment and "otter-grader[grading,plugins]==7.0.0" in environment
    return zips


def otter_run(autograder: Path, submission: Path, workdir: Path, env: dict[str, str] | None = None) -> dict:
    """``otter run`` in a subprocess, as staff would; the results.json it wrote."""
    out = workdir / "otter-out"
    out.mkdir()
    done = subprocess.run([sys.executable, "-m", "otter", "run", "-a", str(autograder), "-o", str(out), str(submission)],
                          capture_output=True, text=True, cwd=workdir, env={**os.environ, **(env or {})}, timeout=900)
    assert done.returncode == 0, f"otter run failed on {submission.name}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads((out / "results.json").read_text())


def export_zip(notebook: Path, bundle_text: str | None, target: Path, lab: str, extra: dict[str, bytes] | None = None) -> Path:
    """A submission zip as ``grader.export()`` makes it: the notebook and ``<lab>-submission.json``."""
    with zipfile.ZipFile(target, "w") as archive:
        archive.write(notebook, arcname=f"{lab}.ipynb")
        if bundle_text is not None:
            archive.writestr(f"{lab}-submission.json", bundle_text)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return target


def part_scores(results: dict) -> dict[str, tuple[float, float]]:
    titles = {title: part for part, title in PART_TITLES.items()}
    return {titles[t["name"]]: (t["score"], t["max_score"]) for t in results["tests"] if t["name"] in titles}


def assert_reports_record(results: dict, bundle_text: str) -> None:
    """The reported scores, total and per part, are the score of record of ``bundle_text``."""
    record = grade_bundle(bundle_text.encode())
    assert results["score"] == pytest.approx(record.score), results["extra_data"]
    assert part_scores(results) == {name: (part.score, part.max_score) for name, part in record.parts.items()}


def _reference(lab: str, track: str) -> tuple[Path, str]:
    notebook = ROOT / "solutions" / lab / f"reference-{track}.ipynb"
    bundle = notebook.with_name(f"reference-{track}-submission.json")
    if not notebook.is_file() or not bundle.is_file():
        pytest.fail(f"{notebook.relative_to(ROOT)} and its bundle are missing; run solutions/make_references.py")
    return notebook, bundle.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("track", REFERENCE_TRACKS)
@pytest.mark.parametrize("lab", LABS)
def test_reference_export_zip_gets_the_full_rubric_score(lab, track, autograders, tmp_path):
    notebook, bundle = _reference(lab, track)
    results = otter_run(autograders[lab], export_zip(notebook, bundle, tmp_path / "submission.zip", lab), tmp_path)
    assert results["score"] == 100.0, results["extra_data"]
    assert_reports_record(results, bundle)
    assert results["extra_data"]["mlsys_grader"]["flags"] == []
    assert all(t["status"] == "passed" for t in results["tests"])


@pytest.mark.slow
@pytest.mark.parametrize("track", REFERENCE_TRACKS)
@pytest.mark.parametrize("lab", LABS)
def test_reference_notebook_alone_gets_the_full_rubric_score_from_its_embedded_bundle(lab, track, autograders, tmp_path):
    notebook, bundle = _reference(lab, track)
    embedded = find_embedded_bundles(json.loads(notebook.read_text(encoding="utf-8")))
    assert embedded, (f"{notebook.name} holds no bundle output ({BUNDLE_MIME}); regenerate the references "
                      "with solutions/make_references.py after the student API displays the bundle on save")
    submission = tmp_path / f"{lab}.ipynb"
    submission.write_bytes(notebook.read_bytes())
    results = otter_run(autograders[lab], submission, tmp_path)
    assert results["score"] == 100.0, results["extra_data"]
    assert_reports_record(results, embedded[-1].text)
    assert results["extra_data"]["mlsys_grader"]["source"].startswith("notebook output")
    assert results["extra_data"]["mlsys_grader"]["flags"] == []


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_unanswered_student_notebook_scores_low_with_feedback_for_every_part(lab, autograders, tmp_path):
    student = ROOT / "assignments" / f"{lab}.ipynb"
    if not student.is_file():
        pytest.fail(f"assignments/{lab}.ipynb is missing; run mlsys-grader assign")
    submission = tmp_path / f"{lab}.ipynb"
    submission.write_bytes(student.read_bytes())
    results = otter_run(autograders[lab], submission, tmp_path)
    assert results["score"] <= 10, results["extra_data"]
    scores = part_scores(results)
    assert set(scores) == set(PART_TITLES)
    for test in results["tests"]:
        if test["name"] in PART_TITLES.values() and test["score"] < test["max_score"]:
            lines = test["output"].splitlines()
            assert lines and all(line.startswith("-") and line.rstrip().endswith(".") for line in lines), test
    public = next(t for t in results["tests"] if t["name"] == "Public checks")
    assert public["visibility"] == "visible" and "Part A:" in public["output"]


HOSTILE_FLAGS = {
    "monkeypatch-grader-and-edit-numbers": {"integrity", "kernel-disagrees"},
    "replace-otter-test-runner": {"kernel-disagrees"},
    "forge-bundle-and-results": {"kernel-disagrees", "bundle-rewritten-during-grading"},
    "pickle-payload-for-runner": {"kernel-results-rejected"},
    "kill-kernel-mid-run": {"kernel-results-rejected"},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_FLAGS))
def test_hostile_notebook_gets_the_score_of_record_of_its_bundle_and_is_flagged(name, autograders, tmp_path):
    lab = make_hostile.LAB
    _, reference_bundle = _reference(lab, HOSTILE_TRACK)
    bundle = make_hostile.submitted_bundle(name, reference_bundle)
    marker = tmp_path / "pickle-payload-ran"
    extra = {".OTTER_LOG": pickle.dumps(_MarkerPayload(str(marker)))} if name == "pickle-payload-for-runner" else None
    submission = export_zip(HOSTILE / f"{name}.ipynb", bundle, tmp_path / "submission.zip", lab, extra)
    results = otter_run(autograders[lab], submission, tmp_path, env={"MLSYS_HOSTILE_MARKER": str(marker)})
    assert_reports_record(results, bundle)
    assert results["score"] < 100
    flags = set(results["extra_data"]["mlsys_grader"]["flags"])
    assert HOSTILE_FLAGS[name] <= flags, flags
    staff = next(t for t in results["tests"] if t["name"] == "Staff review")
    assert staff["visibility"] == "hidden"
    assert not marker.exists(), marker.read_text()


class _MarkerPayload:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (exec, (f"import pathlib; pathlib.Path({self.path!r}).write_text('OTTER_LOG payload ran')",))


@pytest.mark.slow
def test_notebook_that_never_finishes_times_out_and_still_gets_its_score_of_record(autograders, tmp_path):
    lab = make_hostile.LAB
    _, reference_bundle = _reference(lab, HOSTILE_TRACK)
    bundle = make_hostile.submitted_bundle("never-finishes", reference_bundle)
    quick = tmp_path / "quick-timeout.zip"  # the session's zip with a 5 s cell limit instead of 300 s
    with zipfile.ZipFile(autograders[lab]) as source, zipfile.ZipFile(quick, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name == "otter_config.json":
                config = json.loads(data)
                config["plugins"][0]["mlsys_grader.gradescope.ScoreOfRecordPlugin"]["cell_timeout_s"] = 5
                data = json.dumps(config).encode()
            out.writestr(name, data)
    submission = export_zip(HOSTILE / "never-finishes.ipynb", bundle, tmp_path / "submission.zip", lab)
    results = otter_run(quick, submission, tmp_path)
    assert_reports_record(results, bundle)
    assert "kernel-results-rejected" in results["extra_data"]["mlsys_grader"]["flags"]
    assert any("CellTimeoutError" in note for note in results["extra_data"]["mlsys_grader"]["notes"])
