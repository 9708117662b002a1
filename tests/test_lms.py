"""LMS export: the files have the columns each vendor's importer reads (checked against the vendors' own samples)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_course_term import build_term, options

from mlsys_grader.cli import EXIT_OK, main
from mlsys_grader.course import grade_paths
from mlsys_grader.course._lms import export_lms

SAMPLES = Path(__file__).parent / "fixtures" / "lms"


def read(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms")
    paths = build_term(root)
    db = root / "gradebook.sqlite"
    result = grade_paths([paths["down"]], options(root, db))
    return db, result


def test_canvas_file_has_canvas_leading_columns_points_row_and_one_line_per_roster_student(gradebook, tmp_path):
    db, _ = gradebook
    sample = read(SAMPLES / "canvas-gradebook-import.csv")
    done = export_lms(db, "canvas", tmp_path / "canvas.csv")
    rows = read(tmp_path / "canvas.csv")
    assert rows[0][:5] == sample[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert rows[0][5:] == ["lab07 (123456)", "lab11 (123457)"], "one column per lab, with the Canvas assignment id"
    assert rows[1][0] == sample[1][0].strip() == "Points Possible" and rows[1][5:] == ["100.0", "100.0"]
    students = rows[2:]
    assert len(students) == done.students == 7, "one line per roster student; the stranger is not exported"
    by_sis = {row[2]: row for row in students}
    # the roster gives one display name: it is written whole, never split again
    assert by_sis["SIS2002"] == ["Bo Kim", "", "SIS2002", "", "A", "70.4", "0.0"], "the late penalty is applied"
    assert by_sis["SIS2003"][:2] == ["Cy Lee", "3003"] and by_sis["SIS2007"][5:] == ["0.0", "0.0"]
    assert any("canvas:9999 lab07: not in the roster, not exported" in line for line in done.unmatched)


def test_a_student_without_an_lms_id_is_listed_not_dropped(tmp_path):
    root = tmp_path
    paths = build_term(root)
    roster = (root / "roster.csv").read_text().replace("SIS2001,,,A", ",,,A")  # Ada: no sis_id, no canvas_id
    (root / "roster.csv").write_text(roster)
    db = root / "g.sqlite"
    grade_paths([paths["down"]], options(root, db))
    done = export_lms(db, "canvas", root / "c.csv")
    assert "2001 (Ada Lovelace): no canvas_id or sis_id; Canvas can only match this line by name" in done.unmatched
    assert ["Ada Lovelace", "", "", "", "A", "88.0", "0.0"] in read(root / "c.csv")


def test_moodle_file_matches_by_email_with_moodle_identity_columns(gradebook, tmp_path):
    db, _ = gradebook
    sample = read(SAMPLES / "moodle-grade-import.csv")
    export_lms(db, "moodle", tmp_path / "moodle.csv")
    rows = read(tmp_path / "moodle.csv")
    assert rows[0][:3] == sample[0][:3] == ["First name", "Last name", "Email address"]
    assert rows[0][3:] == ["lab07", "lab11"] and len(rows) == 1 + 7
    assert ["Bo Kim", "", "bo@u.edu", "70.4", "0.0"] in rows, "a display name alone is never split"


def test_generic_file_is_long_with_raw_score_penalty_and_comment(gradebook, tmp_path):
    db, _ = gradebook
    export_lms(db, "generic", tmp_path / "generic.csv")
    rows = read(tmp_path / "generic.csv")
    assert rows[0] == ["student_id", "lab", "score", "raw_score", "late_penalty", "status", "comment"]
    assert len(rows) == 1 + 14
    bo = next(row for row in rows if row[:2] == ["2002", "lab07"])
    assert bo[2:6] == ["70.4", "88.0", "17.6", "graded"] and "2 days late, -20 %" in bo[6]
    assert ["2007", "lab11", "0.0", "0.0", "0.0", "missing", "no submission"] in rows


def test_cli_export_names_what_it_wrote(gradebook, tmp_path, capsys):
    db, _ = gradebook
    assert main(["export", "--lms", "canvas", "--db", str(db), "-o", str(tmp_path / "c.csv")]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {tmp_path / 'c.csv'}: canvas import file, 7 student(s)") and "canvas:9999" in out
    assert main(["export", "--lms", "moodle", "--db", str(tmp_path / "none.sqlite"), "-o", str(tmp_path / "m.csv")]) == 2


def test_a_roster_without_emails_takes_the_email_gradescope_gave_for_moodle(tmp_path):
    """A roster exported from Canvas whose logins are not emails: the Moodle file (which matches by email) carries the
    email each student's Gradescope metadata gave, and lists only those no source gave one."""
    root = tmp_path
    paths = build_term(root)
    lines = (root / "roster.csv").read_text().splitlines()
    header = lines[0].split(",")
    at = header.index("email")
    blanked = [lines[0]] + [",".join("" if i == at else cell for i, cell in enumerate(line.split(","))) for line in lines[1:]]
    (root / "roster.csv").write_text("\n".join(blanked) + "\n")
    extensions = root / "extensions.csv"  # names students by sid now that the roster holds no email
    extensions.write_text(extensions.read_text().replace("fay@u.edu", "2006"))
    db = root / "g.sqlite"
    grade_paths([paths["down"]], options(root, db))
    done = export_lms(db, "moodle", root / "m.csv")
    by_name = {row[0]: row for row in read(root / "m.csv")[1:]}
    assert by_name["Bo Kim"][2] == "bo@u.edu", "Bo's Gradescope metadata gave his email"
    assert all(not row[2] or "@" in row[2] for row in by_name.values()), "a sid a manifest named is never an email"
    assert not any(line.startswith("2002 ") for line in done.unmatched)
    assert any("no email" in line for line in done.unmatched), "a student no source gave an email is still listed"
