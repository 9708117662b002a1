"""A course term end to end: a folder built like real downloads, a roster, a manifest, a course file.

The folder holds a Gradescope export (with ``submission_metadata.yml`` and its times), Canvas
and Moodle download names (one marked late by Canvas), per-student folders, a staff manifest
with submission times, duplicates, a non-submitter, a PDF, and late submissions with and
without an extension.  Real bundles (``solve``), real grading, real SQLite.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from conftest import solved

from mlsys_grader.cli import EXIT_OK, EXIT_UNGRADABLE, main
from mlsys_grader.course import BatchOptions, grade_paths, read_manifest, read_roster
from mlsys_grader.course._late import read_course
from mlsys_grader.course._migrations import SCHEMA_VERSION
from mlsys_grader.errors import CourseFileError

ROSTER = """name,email,sid,sis_id,canvas_id,moodle_id,section,track
Ada Lovelace,ada@u.edu,2001,SIS2001,,,A,cloud
Bo Kim,bo@u.edu,2002,SIS2002,,,A,edge
Cy Lee,cy@u.edu,2003,SIS2003,3003,,B,mobile
Dee Park,dee@u.edu,2004,SIS2004,,4004,B,tinyml
Eve Stone,eve@u.edu,2005,SIS2005,3005,,A,cloud
Fay Wu,fay@u.edu,2006,SIS2006,3006,4006,B,edge
Gus Hill,gus@u.edu,2007,SIS2007,3007,4007,A,mobile
"""
COURSE = """extensions = "extensions.csv"
[labs.lab07]
deadline = 2026-02-06T23:59:00-08:00
grace_minutes = 30
penalty_per_day = {per_day}
cap = 50
canvas_assignment_id = 123456
[labs.lab11]
deadline = 2026-03-06T23:59:00-08:00
canvas_assignment_id = 123457
"""


def write(path: Path, data: dict | bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def build_term(root: Path, per_day: int = 10) -> dict[str, Path]:
    """The course folder under ``root / "downloads"`` and the staff files beside it; returns the named paths."""
    down = root / "downloads"
    gs = down / "gradescope_lab07"
    write(gs / "submission_101" / "lab07-submission.json", solved("lab07", "cloud", 1))
    write(gs / "submission_101" / "lab07.ipynb", "{}")  # helper beside the bundle: ignored by rule
    write(gs / "submission_102" / "lab07-submission.json", solved("lab07", "edge", 2))
    meta = {
        "submission_101": {":submitters": [{":name": "Ada Lovelace", ":sid": "2001", ":email": "ada@u.edu"}],
                           ":created_at": "2026-02-06 20:00:00.123456789 -08:00", ":score": 0.0},
        "submission_102": {":submitters": [{":name": "Bo Kim", ":sid": "2002", ":email": "bo@u.edu"}],
                           ":created_at": "2026-02-08 10:00:00.000000000 -08:00", ":score": 0.0},  # 2 started days late
    }
    write(gs / "submission_metadata.yml", yaml.safe_dump(meta))
    canvas = down / "canvas_lab07"
    paths = {
        "cy": write(canvas / "leecy_3003_77001_lab07-submission.json", solved("lab07", "mobile", 3)),
        "cy_late": write(canvas / "leecy_late_3003_77002_lab07-submission-1.json", solved("lab07", "mobile", 4)),
        "stranger": write(canvas / "nobodyx_9999_77003_lab07-submission.json", solved("lab07", "cloud", 5)),
        "dee": write(down / "moodle_lab07" / "Dee Park_4004_assignsubmission_file_" / "lab07-submission.json",
                     solved("lab07", "tinyml", 6)),
        "eve07": write(down / "folders" / "eve@u.edu" / "lab07-submission.json", solved("lab07", "cloud", 7)),
        "eve11": write(down / "folders" / "eve@u.edu" / "lab11-submission.json", solved("lab11", "cloud", 8)),
        "pdf": write(down / "folders" / "eve@u.edu" / "writeup.pdf", b"%PDF-1.4\n%fake but typical\n"),
        "fay_v1": write(down / "staff_uploads" / "fay-first.json", solved("lab07", "edge", 9)),
        "fay_v2": write(down / "staff_uploads" / "fay-second.json", solved("lab07", "edge", 10)),
    }
    write(root / "roster.csv", ROSTER)
    write(root / "manifest.csv", "path,student,submitted_at\n"
                                 "downloads/staff_uploads/fay-first.json,fay@u.edu,2026-02-05T10:00:00-08:00\n"
                                 "downloads/staff_uploads/fay-second.json,2006,2026-02-08T12:00:00-08:00\n")
    write(root / "extensions.csv", "student,lab,days,reason\nfay@u.edu,lab07,3,illness\n")
    write(root / "course.toml", COURSE.format(per_day=per_day))
    return {**paths, "down": down, "gs": gs}


def options(root: Path, db: Path | None, **more) -> BatchOptions:
    return BatchOptions(jobs=2, db=str(db) if db else None, roster=str(root / "roster.csv"),
                        manifest=str(root / "manifest.csv"), course=str(root / "course.toml"), **more)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = tmp_path_factory.mktemp("term")
    paths = build_term(root)
    db = root / "gradebook.sqlite"
    return root, paths, db, grade_paths([paths["down"]], options(root, db))


def final_of(result, student: str, lab: str) -> dict:
    [row] = [r for r in result.final if r["student"] == student and r["lab"] == lab]
    return row


def test_every_input_is_a_row_and_ignored_files_are_counted(term):
    _, paths, _, result = term
    by_path = {Path(row["path"]): row for row in result.rows}
    inputs = {paths[k] for k in ("cy", "cy_late", "stranger", "dee", "eve07", "eve11", "pdf", "fay_v1", "fay_v2")}
    inputs |= {paths["gs"] / "submission_101", paths["gs"] / "submission_102"}
    moodle_bundle = paths["dee"]
    assert set(by_path) == inputs and len(result.rows) == len(inputs), "one row per input, nothing more"
    pdf = by_path[paths["pdf"]]
    assert (pdf["status"], pdf["error_kind"], pdf["score"]) == ("unsupported", "Unsupported", 0)
    assert pdf["reasons"].startswith("writeup.pdf is a PDF document, not a submission in an accepted format (the notebook's "
                                     "<lab>-submission.json bundle; an Otter export zip; the book's marimo export")
    assert by_path[moodle_bundle]["identity_source"] == "moodle"
    assert sorted(why for _, why in result.ignored) == ["Gradescope export metadata", "a helper file in a Gradescope submission folder"]


def test_identity_comes_from_each_source_and_the_roster_fills_every_column(term):
    _, paths, _, result = term
    by_path = {Path(row["path"]): row for row in result.rows}
    expect = {paths["gs"] / "submission_101": ("gradescope", "2001"), paths["cy"]: ("canvas", "2003"),
              paths["cy_late"]: ("canvas", "2003"), paths["dee"]: ("moodle", "2004"), paths["eve07"]: ("folder", "2005"),
              paths["pdf"]: ("folder", "2005"), paths["fay_v1"]: ("manifest", "2006"), paths["fay_v2"]: ("manifest", "2006")}
    for path, (source, sid) in expect.items():
        row = by_path[path]
        assert (row["identity_source"], row["student"], row["student_id"]) == (source, sid, sid), path
        assert row["sis_id"] == f"SIS{sid}" and row["student_email"] and row["student_name"] and row["section"], row
        assert "not_in_roster" not in row["flags"]
    ada = by_path[paths["gs"] / "submission_101"]
    assert (ada["student_name"], ada["student_email"], ada["submitted_at"]) == (
        "Ada Lovelace", "ada@u.edu", "2026-02-06T20:00:00.123456-08:00")
    assert by_path[paths["cy_late"]]["late"] == "yes" and by_path[paths["cy"]]["late"] == ""
    assert by_path[paths["cy"]]["canvas_id"] == "3003" and by_path[paths["dee"]]["moodle_id"] == "4004"


def test_an_unmatched_submission_says_what_was_read_and_tried(term):
    _, paths, _, result = term
    [row] = [r for r in result.rows if Path(r["path"]) == paths["stranger"]]
    assert "not_in_roster" in row["flags"].split(";")
    assert row["reasons"].startswith(
        f"not in roster {Path(paths['down']).parent / 'roster.csv'}: Canvas download name "
        "'nobodyx_9999_77003_lab07-submission.json' gives name 'nobodyx', user id 9999; no roster student has canvas_id 9999")
    assert row["student"] == "canvas:9999" and row["canvas_id"] == "9999"


def test_every_roster_student_has_exactly_one_final_row_per_lab(term):
    _, paths, _, result = term
    keys = [(r["student"], r["lab"]) for r in result.final]
    assert len(keys) == len(set(keys)), "one final row per student and lab"
    roster = {f"{2000 + i}" for i in range(1, 8)}
    assert {(s, lab) for s in roster for lab in ("lab07", "lab11")} <= set(keys)
    assert set(keys) - {(s, lab) for s in roster for lab in ("lab07", "lab11")} == {("canvas:9999", "lab07")}
    gus = final_of(result, "2007", "lab07")
    assert (gus["status"], gus["score"], gus["max_score"], gus["student_email"], gus["canvas_id"]) == (
        "missing", 0.0, 100.0, "gus@u.edu", "3007")
    eve = final_of(result, "2005", "lab11")
    assert (eve["status"], eve["score"], Path(eve["path"])) == ("graded", 88.0, paths["eve11"])
    assert final_of(result, "2001", "lab11")["status"] == "missing"


def test_the_counting_submission_and_the_late_policy(term):
    _, paths, _, result = term
    ada = final_of(result, "2001", "lab07")
    assert (ada["raw_score"], ada["late_penalty"], ada["score"], ada["late"]) == (88.0, 0.0, 88.0, "")
    assert ada["rule"].endswith("submitted 2026-02-06T20:00:00.123456-08:00: on time")
    bo = final_of(result, "2002", "lab07")  # Gradescope time 2026-02-08 10:00 -08:00: 2 started days after 23:59 + 30 min
    assert (bo["raw_score"], bo["late_penalty"], bo["score"], bo["late"]) == (88.0, 17.6, 70.4, "yes")
    assert bo["rule"] == ("due 2026-02-06T23:59:00-08:00 + 30 min grace; 10 % per started day, cap 50 %; "
                          "submitted 2026-02-08T10:00:00-08:00: 2 days late, -20 %")
    fay = final_of(result, "2006", "lab07")  # the later manifest time counts; 3-day extension: on time
    assert (Path(fay["path"]), fay["late_penalty"], fay["score"]) == (paths["fay_v2"], 0.0, 88.0)
    assert Path(fay["other_submissions"]) == paths["fay_v1"]
    assert "+ 3 d extension (illness)" in fay["rule"] and fay["rule"].endswith(": on time")
    assert fay["rule"].startswith("latest by trusted time of 2 submissions")
    cy = final_of(result, "2003", "lab07")  # no trusted times, equal scores: the tie goes by path; the late marker is no penalty
    assert (Path(cy["path"]), Path(cy["other_submissions"])) == (paths["cy_late"], paths["cy"])
    assert (cy["late"], cy["late_penalty"], cy["score"]) == ("yes", 0.0, 88.0)
    assert cy["rule"].endswith("no trusted submission time; LMS marked it late: no penalty")


def test_sqlite_final_table_is_keyed_by_student_and_lab(term):
    _, _, db, result = term
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT student, lab, status, score FROM final ORDER BY student, lab").fetchall()
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert len(rows) == len(result.final) == 15 and version == (str(SCHEMA_VERSION),)
    assert ("2002", "lab07", "graded", 70.4) in rows and ("2007", "lab11", "missing", 0.0) in rows


def test_rerun_regrades_nothing_and_a_new_course_file_recomputes_only_penalties(term):
    root, paths, db, first = term
    again = grade_paths([paths["down"]], options(root, db))
    assert (again.graded, again.reused) == (0, len(first.rows)), "every input, the PDF included, is reused"
    assert again.final == first.final or [
        {k: v for k, v in r.items() if k != "changes"} for r in again.final] == [
        {k: v for k, v in r.items() if k != "changes"} for r in first.final]
    write(root / "course.toml", COURSE.format(per_day=5))
    try:
        changed = grade_paths([paths["down"]], options(root, db))
    finally:
        write(root / "course.toml", COURSE.format(per_day=10))
    assert changed.graded == 0
    bo = final_of(changed, "2002", "lab07")
    assert (bo["raw_score"], bo["late_penalty"], bo["score"]) == (88.0, 8.8, 79.2)
    same = lambda row: {k: v for k, v in row.items() if k not in ("rule", "changes")}  # noqa: E731
    assert same(final_of(changed, "2001", "lab07")) == same(final_of(first, "2001", "lab07"))
    assert "; 5 % per started day" in final_of(changed, "2001", "lab07")["rule"]


def test_cli_writes_final_csv_beside_the_output_and_exits_1_only_when_nothing_grades(term, tmp_path, capsys):
    root, paths, _, _ = term
    out = tmp_path / "grades.csv"
    code = main(["grade", str(paths["down"]), "-o", str(out), "--db", str(tmp_path / "g.sqlite"), "--jobs", "2",
                 "--roster", str(root / "roster.csv"), "--manifest", str(root / "manifest.csv"), "--course", str(root / "course.toml")])
    assert code == EXIT_OK
    printed = capsys.readouterr().out
    assert "2 file(s) ignored by rule" in printed and f"final gradebook (15 rows, one per student and lab) written to {tmp_path / 'final.csv'}" in printed
    with open(tmp_path / "final.csv", newline="", encoding="utf-8") as handle:
        final = list(csv.DictReader(handle))
    assert len(final) == 15 and {r["status"] for r in final} == {"graded", "missing"}
    only_pdf = tmp_path / "pdf_only"
    write(only_pdf / "scan.pdf", b"%PDF-1.7\n")
    assert main(["grade", str(only_pdf), "-o", str(tmp_path / "p.csv"), "--no-db", "-q"]) == EXIT_UNGRADABLE
    assert "no input could be graded (1 row(s)" in capsys.readouterr().err
    with open(tmp_path / "p.csv", newline="", encoding="utf-8") as handle:
        [row] = list(csv.DictReader(handle))
    assert (row["status"], row["error_kind"]) == ("unsupported", "Unsupported")


@pytest.mark.parametrize("name, text, words", [
    ("roster.csv", "name,email,track\nA,a@u.edu,cloud,extra\n", "roster.csv, line 2: roster row has 4 cells; the header has 3"),
    ("roster.csv", "track\ncloud\n", "roster.csv, line 1: expected a roster header of one of these layouts: Canvas gradebook "
                                     "export (Student, ID, SIS User ID, SIS Login ID, Section, …)"),
    ("manifest.csv", "path,student,submitted_at\nx.json,a@u.edu,2026-02-06T10:00:00\n",
     "manifest.csv, line 2: submitted_at '2026-02-06T10:00:00' has no UTC offset; add one, e.g. 2026-02-06T10:00:00-08:00"),
    ("manifest.csv", "path,who\nx.json,a@u.edu\n", "manifest.csv, line 1: expected a manifest header with path and student"),
    ("course.toml", "[labs.lab07]\ndeadline = 2026-02-06T23:59:00\n", "course.toml: labs.lab07.deadline: Value error, deadline "
                                                                       "2026-02-06T23:59:00 has no UTC offset"),
    ("course.toml", "[labs.lab07]\ncap = 150\n", "course.toml: labs.lab07.cap: Input should be less than or equal to 100 (got 150)"),
    ("course.toml", "[labs.lab07\n", "course.toml: expected TOML (Expected ']' at the end of a table declaration (at line 1"),
])
def test_a_bad_staff_file_names_file_line_expected_and_got_and_touches_no_database(tmp_path, name, text, words):
    write(tmp_path / "x.json", solved("lab07", "cloud"))
    path = write(tmp_path / name, text)
    db = tmp_path / "g.sqlite"
    kinds = {"roster.csv": "roster", "manifest.csv": "manifest", "course.toml": "course"}
    with pytest.raises(CourseFileError) as caught:
        grade_paths([tmp_path / "x.json"], BatchOptions(jobs=1, db=str(db), **{kinds[name]: str(path)}))
    assert str(caught.value).startswith(f"{path}".removesuffix(name)) and words in str(caught.value)
    assert not db.exists(), "the run stopped before opening the gradebook"


def test_extensions_must_name_roster_students(tmp_path):
    write(tmp_path / "roster.csv", ROSTER)
    write(tmp_path / "extensions.csv", "student,lab,days,reason\nzed@u.edu,lab07,2,flu\n")
    write(tmp_path / "course.toml", COURSE.format(per_day=10))
    with pytest.raises(CourseFileError, match=r"extensions.csv, line 2: student 'zed@u.edu' is no roster email or sid"):
        read_course(tmp_path / "course.toml", read_roster(tmp_path / "roster.csv"))


def test_manifest_paths_are_relative_to_the_manifest(tmp_path):
    write(tmp_path / "sub" / "m.csv", "path,student\n../a.json,a@u.edu\n")
    manifest = read_manifest(tmp_path / "sub" / "m.csv")
    assert manifest.lookup(str(tmp_path / "a.json")).student == "a@u.edu"


def test_only_regrades_one_student_or_input_and_the_change_log_says_why(tmp_path):
    paths = build_term(tmp_path)
    db = tmp_path / "gradebook.sqlite"
    first = grade_paths([paths["down"]], options(tmp_path, db))
    assert first.graded == len(first.rows)
    one = grade_paths([paths["down"]], options(tmp_path, db, only=("bo@u.edu",), reason="regrade request 12"))
    assert (one.graded, one.reused) == (1, len(first.rows) - 1), "only Bo's submission is graded again"
    bo = final_of(one, "2002", "lab07")
    assert "regrade 70.4 -> 70.4 (regrade request 12)" in bo["changes"]
    ada = final_of(one, "2001", "lab07")
    by_hash = grade_paths([paths["down"]], options(tmp_path, db, only=(ada["input_hash"],), reason="checked by hand"))
    assert by_hash.graded == 1
    with sqlite3.connect(db) as conn:
        log = conn.execute("SELECT kind, student, lab, old_score, new_score, reason FROM change_log ORDER BY id").fetchall()
    assert log == [("regrade", "2002", "lab07", 70.4, 70.4, "regrade request 12"),
                   ("regrade", "2001", "lab07", 88.0, 88.0, "checked by hand")]
    assert main(["grade", str(paths["down"]), "-o", str(tmp_path / "g.csv"), "--db", str(db), "-q", "--jobs", "1",
                 "--roster", str(tmp_path / "roster.csv"), "--manifest", str(tmp_path / "manifest.csv"),
                 "--only", "2006", "--reason", "late form"]) == EXIT_OK
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT student, reason FROM change_log ORDER BY id DESC LIMIT 1").fetchone() == ("2006", "late form")


def test_only_naming_nobody_is_a_usage_error_that_says_so(tmp_path, capsys):
    paths = build_term(tmp_path)
    code = main(["grade", str(paths["eve07"]), "-o", str(tmp_path / "g.csv"), "--no-db", "-q", "--jobs", "1",
                 "--only", "zed@u.edu"])
    assert code == 2
    assert "--only zed@u.edu matched no input (by student key, email, sid or input hash); nothing was regraded" in \
        capsys.readouterr().err


def test_a_students_second_submission_does_not_report_score_moves_on_every_rerun(tmp_path):
    """Only the counting submission is compared with the last run (two submissions used to take turns)."""
    write(tmp_path / "roster.csv", ROSTER)
    lower = solved("lab07", "cloud", 12)
    lower["evidence"]["A"]["result"]["inputs"]["compute_scale"] = 9.0  # does not replay: part A voided
    write(tmp_path / "subs" / "eve@u.edu" / "lab07-submission.json", solved("lab07", "cloud", 11))
    write(tmp_path / "subs" / "eve@u.edu" / "first" / "lab07-submission.json", lower)
    opts = BatchOptions(jobs=1, db=str(tmp_path / "g.sqlite"), roster=str(tmp_path / "roster.csv"))
    first = grade_paths([tmp_path / "subs"], opts)
    scores = sorted(float(r["score"]) for r in first.rows)
    assert scores[0] < scores[1], "two submissions with different scores"
    for _ in range(2):
        again = grade_paths([tmp_path / "subs"], opts)
        assert again.changes == [] and again.graded == 0
    with sqlite3.connect(tmp_path / "g.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM change_log").fetchone() == (0,)


def test_a_manifest_line_naming_no_input_is_reported(tmp_path, capsys):
    paths = build_term(tmp_path)
    with open(tmp_path / "manifest.csv", "a", encoding="utf-8") as handle:
        handle.write("downloads/staff_uploads/fay-thrid.json,fay@u.edu,2026-02-05T10:00:00-08:00\n")  # a typo
    result = grade_paths([paths["down"]], options(tmp_path, None))
    missing = tmp_path / "downloads" / "staff_uploads" / "fay-thrid.json"
    assert result.notes == [f"{tmp_path / 'manifest.csv'} line 4: {missing} is not among the inputs; its student "
                            "'fay@u.edu' was not applied"]
    assert main(["grade", str(paths["down"]), "-o", str(tmp_path / "g.csv"), "--no-db", "--jobs", "1",
                 "--manifest", str(tmp_path / "manifest.csv")]) == EXIT_OK
    assert "line 4: " in capsys.readouterr().out
