"""The LMS's own files in and out: rosters as Canvas, Moodle and Gradescope export them, Canvas's late marker priced,
feedback zips named as each LMS's download named the submissions.

A term as staff download it: a Gradescope export of Lab 07 and a Canvas bulk download of Lab 11 (one file marked late by
Canvas); the roster is each vendor's export file as it is (``tests/fixtures/lms``).  Real bundles, grading and SQLite.
"""

from __future__ import annotations

import csv
import re
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import solved
from test_course_term import write

from mlsys_grader.cli import EXIT_OK, EXIT_UNGRADABLE, main
from mlsys_grader.course import BatchOptions, grade_paths, read_roster
from mlsys_grader.course._feedback import shown_number
from mlsys_grader.errors import CourseFileError
from mlsys_grader.labs import lab_ids

FIXTURES = Path(__file__).parent / "fixtures" / "lms"
ROSTERS = {
    "canvas": "canvas-gradebook-export.csv",
    "canvas-semicolon-bom": "canvas-gradebook-export-semicolon-bom.csv",
    "moodle-participants": "moodle-participants.csv",
    "moodle-grades": "moodle-grades.csv",
    "gradescope": "gradescope-roster.csv",
}
STUDENTS = {"1001": ("Ada", "Hopper"), "1002": ("Bo", "Kim"), "1003": ("Cy", "Lee"), "1004": ("John", "Van Rossum")}
COURSE = """[labs.lab07]
deadline = 2026-02-06T23:59:00-08:00
penalty_per_day = 10
[labs.lab11]
deadline = 2026-03-06T23:59:00-08:00
penalty_per_day = 10
cap = 50
{marker}
"""




def build(root: Path) -> Path:
    """The downloads: a Gradescope export of Lab 07 for four students, a Canvas download of Lab 11 for three."""
    gs = root / "downloads" / "gradescope-lab07"
    meta = {}
    for n, (sid, email) in enumerate((("1001", "ada@u.edu"), ("1002", "bo@u.edu"), ("1003", "cy@u.edu"),
                                      ("1004", "jvr@u.edu")), 1):
        write(gs / f"submission_{n}" / "lab07-submission.json", solved("lab07", "cloud", n))
        meta[f"submission_{n}"] = {":submitters": [{":name": " ".join(STUDENTS[sid]), ":sid": sid, ":email": email}],
                                   ":created_at": "2026-02-06 20:00:00.000000000 -08:00"}
    write(gs / "submission_metadata.yml", yaml.safe_dump(meta))
    canvas = root / "downloads" / "canvas-lab11"
    write(canvas / "hopperada_40999_880001_lab11-submission.json", solved("lab11", "cloud", 11))
    write(canvas / "kimbo_41000_880002_lab11-submission.json", solved("lab11", "edge", 12))
    write(canvas / "vanrossumjohn_late_41003_880004_lab11-submission.json", solved("lab11", "mobile", 13))
    return root / "downloads"


@pytest.fixture(scope="module")
def downloads(tmp_path_factory):
    return build(tmp_path_factory.mktemp("lms"))


@pytest.mark.parametrize("layout", sorted(ROSTERS))
def test_a_term_is_graded_with_each_lms_roster_as_it_is(downloads, tmp_path, layout):
    """Every roster student has exactly one final row per lab, matched (never `not_in_roster`), named as the roster
    splits the name; the Points Possible row, the test student and staff are no students."""
    roster = read_roster(FIXTURES / ROSTERS[layout])
    assert sorted(s.key for s in roster.students) == sorted(STUDENTS)
    result = grade_paths([downloads], BatchOptions(jobs=2, db=str(tmp_path / "g.sqlite"), roster=str(FIXTURES / ROSTERS[layout])))
    assert not [r["path"] for r in result.rows if "not_in_roster" in r["flags"]]
    keys = sorted((r["student"], r["lab"]) for r in result.final)
    assert keys == sorted((sid, lab) for sid in STUDENTS for lab in lab_ids())  # a lab of nobody's work: missing rows
    for row in result.final:
        first, last = STUDENTS[row["student"]]
        assert (row["student_first_name"], row["student_last_name"], row["student_name"]) == (first, last, f"{first} {last}")
    statuses = {(r["student"], r["lab"]): r["status"] for r in result.final}
    assert statuses[("1003", "lab11")] == "missing" and statuses[("1004", "lab11")] == "graded"


def test_lms_exports_keep_the_rosters_split_of_a_name(downloads, tmp_path):
    db = tmp_path / "g.sqlite"
    grade_paths([downloads], BatchOptions(jobs=2, db=str(db), roster=str(FIXTURES / ROSTERS["moodle-participants"])))
    assert main(["export", "--db", str(db), "--lms", "canvas", "-o", str(tmp_path / "canvas.csv")]) == EXIT_OK
    assert main(["export", "--db", str(db), "--lms", "moodle", "-o", str(tmp_path / "moodle.csv")]) == EXIT_OK
    canvas = list(csv.reader((tmp_path / "canvas.csv").open(encoding="utf-8")))
    moodle = list(csv.DictReader((tmp_path / "moodle.csv").open(encoding="utf-8")))
    assert "Van Rossum, John" in [line[0] for line in canvas]
    assert ("John", "Van Rossum") in [(line["First name"], line["Last name"]) for line in moodle]


def test_a_display_name_alone_is_never_split(tmp_path):
    write(tmp_path / "roster.csv", "name,email,sid\nJohn Van Rossum,jvr@u.edu,1004\n")
    [student] = read_roster(tmp_path / "roster.csv").students
    assert (student.name, student.first_name, student.last_name) == ("John Van Rossum", "", "")


@pytest.mark.parametrize("text, words", [
    ("Vorname;Nachname;E-Mail-Adresse\nAda;Hopper;ada@u.edu\n",
     "expected a roster header of one of these layouts: Canvas gradebook export (Student, ID, SIS User ID"),
    ("name,email,sid\nAda Hopper,ada@u.edu,1001\nAda H.,ada@u.edu,1005\n",
     "line 3: email 'ada@u.edu' is also on line 2 (student '1001'): two students cannot share it"),
    ("Student,ID,SIS User ID,SIS Login ID,Section\n\"Hopper, Ada\",40999,1001,ada@u.edu,A\n\"Kim, Bo\",40999,1002,bo@u.edu,A\n",
     "line 3: canvas_id '40999' is also on line 2 (student '1001'): two students cannot share it"),
    ("First Name,Last Name,SID,Email,Role\nAda,Hopper,1001,ada@u.edu,Student\nBo,Kim,1001,bo@u.edu,Student\n",
     "line 3: student '1001' has name 'Ada Hopper' on line 2 and 'Bo Kim' here"),
])
def test_a_bad_roster_is_refused_naming_the_lines_and_the_database_is_unchanged(downloads, tmp_path, capsys, text, words):
    db = tmp_path / "g.sqlite"
    common = ["--db", str(db), "--jobs", "2", "-q", "-o", str(tmp_path / "grades.csv")]
    assert main(["grade", str(downloads / "gradescope-lab07"), *common]) == EXIT_OK
    before = db.read_bytes()
    roster = write(tmp_path / "roster.csv", text)
    assert main(["grade", str(downloads), *common, "--roster", str(roster)]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err
    assert words in err and str(roster) in err and len(err.strip().splitlines()) == 1, err
    assert db.read_bytes() == before
    with pytest.raises(CourseFileError):
        read_roster(roster)


def test_empty_ids_never_collide(tmp_path):
    write(tmp_path / "roster.csv", "name,email,sid,canvas_id\nAda Hopper,,1001,\nBo Kim,,1002,\n")
    assert len(read_roster(tmp_path / "roster.csv").students) == 2


def test_another_courses_roster_stops_the_run_before_anything_is_graded(downloads, tmp_path, capsys):
    roster = write(tmp_path / "roster.csv", "name,email,sid\nZed Zee,zed@other.edu,9001\nYo Yu,yo@other.edu,9002\n")
    db = tmp_path / "g.sqlite"
    code = main(["grade", str(downloads), "--db", str(db), "--roster", str(roster), "-q", "-o", str(tmp_path / "g.csv")])
    err = capsys.readouterr().err
    assert code == EXIT_UNGRADABLE and "no submission matches a student of this roster (7 input(s), 2 student(s)" in err
    assert len(err.strip().splitlines()) == 1 and not db.exists() and not (tmp_path / "g.csv").exists()


# -- late, from what the LMS gives ---------------------------------------------------

def test_canvas_late_marker_is_priced_by_late_marker_days_and_a_trusted_time_wins(downloads, tmp_path):
    roster = str(FIXTURES / ROSTERS["canvas"])
    free = write(tmp_path / "free.toml", COURSE.format(marker=""))
    priced = write(tmp_path / "priced.toml", COURSE.format(marker="late_marker_days = 2"))
    row = {}
    for name, course in (("free", free), ("priced", priced)):
        result = grade_paths([downloads], BatchOptions(jobs=2, db=None, roster=roster, course=str(course)))
        row[name] = {(r["student"], r["lab"]): r for r in result.final}
    late = row["priced"][("1004", "lab11")]
    assert row["free"][("1004", "lab11")]["late_penalty"] == 0 and "LMS marked it late: no penalty" in row["free"][("1004", "lab11")]["rule"]
    assert late["late_percent"] == 20 and late["late_penalty"] == pytest.approx(late["raw_score"] * 0.2)
    assert "charged as 2 started days late (late_marker_days), -20 %" in late["rule"] and late["late"] == "yes"
    on_time = row["priced"][("1001", "lab11")]
    assert on_time["late_penalty"] == 0 and not on_time["late"]
    # Gradescope's created_at is a trusted time: it decides even where a marker prices lateness
    assert "on time" in row["priced"][("1001", "lab07")]["rule"]


def test_late_marker_days_must_be_a_whole_number_of_days(tmp_path):
    from mlsys_grader.course import read_course

    bad = write(tmp_path / "c.toml", "[labs.lab11]\nlate_marker_days = 1.5\n")
    with pytest.raises(CourseFileError, match=r"labs.lab11.late_marker_days"):
        read_course(bad)


# -- feedback back into the LMS ------------------------------------------------------------

def test_canvas_feedback_zip_names_each_page_as_canvas_named_the_download(downloads, tmp_path, capsys):
    db = tmp_path / "g.sqlite"
    grade_paths([downloads], BatchOptions(jobs=2, db=str(db), roster=str(FIXTURES / ROSTERS["canvas"])))
    out = tmp_path / "canvas-feedback.zip"
    assert main(["feedback", "--db", str(db), "--lms", "canvas", "-o", str(out)]) == EXIT_OK
    printed = capsys.readouterr().out
    names = sorted(zipfile.ZipFile(out).namelist())
    downloaded = sorted(p.name for p in (downloads / "canvas-lab11").iterdir())
    assert len(names) == len(downloaded) == 3
    for name, original in zip(names, downloaded, strict=True):
        prefix = re.match(r"^([a-z]+(?:_late)?_\d+_\d+_)(.+)\.json$", original)
        assert name == f"{prefix[1]}{prefix[2]}-feedback.html", (name, original)
    page = zipfile.ZipFile(out).read(names[0]).decode()
    assert "<html" in page.lower() and "lab11" in page
    # the Gradescope-delivered Lab 07 pages cannot be named for Canvas: listed once and written beside the zip
    assert printed.count("not in the zip:") == 1 and "4 page(s) whose submission did not come from a Canvas download" in printed
    assert sorted(p.name for p in (tmp_path / "canvas-feedback").iterdir()) == [f"{sid}-lab07.html" for sid in sorted(STUDENTS)]
    # Canvas takes feedback per assignment: --lab writes that lab's pages only, and lists nothing of the others
    per_lab = tmp_path / "lab11-feedback.zip"
    assert main(["feedback", "--db", str(db), "--lms", "canvas", "--lab", "lab11", "-o", str(per_lab)]) == EXIT_OK
    assert sorted(zipfile.ZipFile(per_lab).namelist()) == names and "not in the zip" not in capsys.readouterr().out


def test_moodle_feedback_zip_has_a_folder_per_participant_named_as_moodles_download(tmp_path):
    down = tmp_path / "moodle-lab07"
    write(down / "Ada Hopper_4101_assignsubmission_file_" / "lab07-submission.json", solved("lab07", "cloud", 21))
    write(down / "John Van Rossum_4104_assignsubmission_file_" / "lab07-submission.json", solved("lab07", "edge", 22))
    db = tmp_path / "g.sqlite"
    grade_paths([down], BatchOptions(jobs=1, db=str(db), roster=str(FIXTURES / ROSTERS["moodle-grades"])))
    out = tmp_path / "moodle-feedback.zip"
    assert main(["feedback", "--db", str(db), "--lms", "moodle", "-o", str(out)]) == EXIT_OK
    assert sorted(zipfile.ZipFile(out).namelist()) == [
        "Ada Hopper_4101_assignsubmission_file_/lab07-feedback.html",
        "John Van Rossum_4104_assignsubmission_file_/lab07-feedback.html"]


def test_feedback_zip_needs_a_zip_name(tmp_path, capsys):
    write(tmp_path / "in" / "lab07-submission.json", solved("lab07", "cloud", 1))
    db = tmp_path / "g.sqlite"
    grade_paths([tmp_path / "in"], BatchOptions(jobs=1, db=str(db)))
    assert main(["feedback", "--db", str(db), "--lms", "canvas", "-o", str(tmp_path / "out")]) == EXIT_UNGRADABLE
    assert "expected -o ending in .zip" in capsys.readouterr().err


def test_feedback_pages_show_numbers_as_the_notebook_does():
    assert shown_number("result.eager_total_ms", 1234.9525333333333) == "1,234.95"
    assert shown_number("result.total_traffic_mb", 0.12345678) == "0.123"
    assert shown_number("result.speedup", 2.718281828) == "2.72"
    assert shown_number("result.dispatches", 6) == "6" and shown_number("result.dispatch_share", 0.734567) == "0.7346"
    assert shown_number("result.fits", True) is True and shown_number("result.path", "native") == "native"
