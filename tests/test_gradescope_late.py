"""The course's late policy on Gradescope (gradescope/_late.py): course.toml in the autograder zip + submission_metadata.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import solved

from mlsys_grader.gradescope._options import PLUGIN_NAME
from mlsys_grader.gradescope._runner import run_autograder

COURSE = """[labs.lab07]
deadline = 2026-02-06T23:59:00-08:00
grace_minutes = 30
penalty_per_day = 10
cap = 50
"""


def metadata(created_at: str, own_due: str | None = None) -> dict:
    """``submission_metadata.json`` as Gradescope documents it (gradescope-autograders.readthedocs.io, Submission Metadata)."""
    user = {"email": "bo@u.edu", "id": 1234, "name": "Bo Kim"}
    if own_due:
        user["assignment"] = {"due_date": own_due}
    return {"id": 123456, "created_at": created_at,
            "assignment": {"due_date": "2026-02-06T23:59:00.000000-08:00", "late_due_date": None, "id": 25828,
                           "title": "Lab 07", "total_points": "100.0"},
            "submission_method": "upload", "users": [user], "previous_submissions": []}


def layout(root: Path, meta: dict | None, course: str | None = COURSE) -> Path:
    """``/autograder`` as Gradescope lays it out: the zip's files in source/, the upload in submission/."""
    (root / "source" / "tests").mkdir(parents=True)
    (root / "source" / "otter_config.json").write_text(json.dumps({"plugins": [{PLUGIN_NAME: {"lab": "lab07"}}]}))
    if course is not None:
        (root / "source" / "course.toml").write_text(course)
    (root / "submission").mkdir()
    (root / "submission" / "lab07-submission.json").write_text(json.dumps(solved("lab07", "cloud", 1)))
    if meta is not None:
        (root / "submission_metadata.json").write_text(json.dumps(meta))
    return root


def late_line(document: dict) -> dict | None:
    return next((t for t in document["tests"] if t["name"] == "Late penalty"), None)


@pytest.mark.parametrize("created_at, own_due, score, words", [
    ("2026-02-06T20:00:00.000000-08:00", None, 88.0, "on time"),
    ("2026-02-08T10:00:00.365935-08:00", None, 70.4, "2 days late, -20 %"),
    ("2026-02-08T10:00:00.365935-08:00", "2026-02-09T23:59:00.000000-08:00", 88.0, "+ 3 d extension (Gradescope extension)"),
])
def test_the_score_of_record_carries_the_courses_late_penalty(tmp_path, created_at, own_due, score, words):
    document = run_autograder(layout(tmp_path, metadata(created_at, own_due)), log=lambda message: None)
    written = json.loads((tmp_path / "results" / "results.json").read_text())
    assert document["score"] == written["score"] == score
    line = late_line(written)
    assert line is not None and line["visibility"] == "after_published" and words in line["output"]
    [total] = [t for t in written["tests"] if t["name"] == "Total"]
    penalty = 88.0 - score
    assert total["output"] == (f"Total: {score:g} / 100." if not penalty else
                               f"Total: {score:g} / 100, after a late penalty of {penalty:g} points ({line['output']}).")
    assert written["extra_data"]["mlsys_grader"]["late"]["raw_score"] == 88.0


def test_without_a_course_file_nothing_changes_and_a_bad_one_is_a_staff_note(tmp_path):
    plain = run_autograder(layout(tmp_path / "a", metadata("2026-02-08T10:00:00-08:00"), course=None), log=lambda m: None)
    assert plain["score"] == 88.0 and late_line(plain) is None
    bad = run_autograder(layout(tmp_path / "b", metadata("2026-02-08T10:00:00-08:00"), course="[labs.lab07]\ncap = 500\n"),
                           log=lambda m: None)
    assert bad["score"] == 88.0 and late_line(bad) is None
    assert any("late policy not applied" in note and "labs.lab07.cap" in note
               for note in bad["extra_data"]["mlsys_grader"]["notes"])


def test_no_metadata_means_no_trusted_time_and_no_penalty(tmp_path):
    document = run_autograder(layout(tmp_path, None), log=lambda message: None)
    assert document["score"] == 88.0 and "no trusted submission time" in late_line(document)["output"]


def test_the_autograder_build_ships_the_course_file_and_its_extensions(tmp_path):
    """``autograder --course``: the zip holds course.toml and the extensions CSV, and grading from it applies both."""
    import zipfile

    from mlsys_grader.errors import AutograderBuildError
    from mlsys_grader.gradescope._options import AutograderOptions
    from mlsys_grader.staff._autograder import course_files, rewrite_zip
    from mlsys_grader.staff._lock import Lock

    assigned = tmp_path / "assigned.zip"  # what otter assign writes, reduced to what rewrite_zip reads
    with zipfile.ZipFile(assigned, "w") as archive:
        archive.writestr("otter_config.json", json.dumps({"plugins": []}))
        archive.writestr("environment.yml", "name: otter-env\ndependencies: []\n")
        archive.writestr("run_autograder", "#!/bin/bash\n")
        archive.writestr("setup.sh", "mamba install -y nb_conda_kernels\nmamba run -n otter-env playwright install chromium\n")
    (tmp_path / "term").mkdir()
    course = tmp_path / "term" / "term.toml"
    course.write_text('extensions = "ext/extensions.csv"\n' + COURSE)
    (tmp_path / "term" / "ext").mkdir()
    (tmp_path / "term" / "ext" / "extensions.csv").write_text("student,lab,days,reason\nbo@u.edu,lab07,3,illness\n")
    wheel = tmp_path / "mlsys_grader-0-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    target = tmp_path / "lab07-autograder.zip"
    rewrite_zip(assigned, target, AutograderOptions(lab="lab07"), wheel, Lock(("a==1",), "3.11.7"), course_files(course))
    with zipfile.ZipFile(target) as archive:
        assert {"course.toml", "ext/extensions.csv"} <= set(archive.namelist())
        root = tmp_path / "ag"
        archive.extractall(root / "source")
    (root / "source" / "otter_config.json").write_text(json.dumps({"plugins": [{PLUGIN_NAME: {"lab": "lab07"}}]}))
    (root / "source" / "tests").mkdir()
    (root / "submission").mkdir()
    (root / "submission" / "lab07-submission.json").write_text(json.dumps(solved("lab07", "cloud", 1)))
    (root / "submission_metadata.json").write_text(json.dumps(metadata("2026-02-08T10:00:00-08:00")))
    document = run_autograder(root, log=lambda message: None)
    assert document["score"] == 88.0 and "+ 3 d extension (illness)" in late_line(document)["output"]
    (tmp_path / "term" / "bad.toml").write_text('extensions = "../elsewhere.csv"\n' + COURSE)
    (tmp_path / "elsewhere.csv").write_text("student,lab,days,reason\n")
    with pytest.raises(AutograderBuildError, match=r"must be a path inside the course file's folder"):
        course_files(tmp_path / "term" / "bad.toml")


def test_otter_run_applies_the_same_late_policy_through_the_plugin(tmp_path):
    """``otter run`` on a staff machine: the plugin reads the metadata Otter hands it and the zip's course.toml."""
    from mlsys_grader.gradescope._plugin import ScoreOfRecordPlugin

    root = layout(tmp_path, None)
    plugin = ScoreOfRecordPlugin(str(root / "submission" / "lab07.ipynb"), metadata("2026-02-08T10:00:00-08:00"),
                                 {"lab": "lab07"})
    document = plugin._results_without_execution().to_gradescope_dict(None)
    assert document["score"] == 70.4 and "2 days late, -20 %" in late_line(document)["output"]
