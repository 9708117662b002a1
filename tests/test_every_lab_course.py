"""A course of every installed lab, end to end: rosters as the LMS exports them, a Gradescope export per lab, the final
gradebook, the Canvas and Moodle grade imports and the feedback pages, with nothing in course/ naming a lab.

The course's labs are whatever labs are installed: the four the book's Volume I ships here (Lab 02, 07, 08 and 11)
each get a Gradescope export of three students' submissions, the fourth roster student hands in nothing, and every
file staff would upload is checked for every lab.  Real bundles, grading, SQLite and the command line in-process.
"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import solved
from test_course_term import write

from mlsys_grader.cli import EXIT_OK, main
from mlsys_grader.course import BatchOptions, grade_paths
from mlsys_grader.labs import get_lab, lab_ids

FIXTURES = Path(__file__).parent / "fixtures" / "lms"
STUDENTS = {"1001": "ada@u.edu", "1002": "bo@u.edu", "1003": "cy@u.edu", "1004": "jvr@u.edu"}
SUBMITTING = ("1001", "1002", "1003")
"""1004 hands in nothing: a `missing` row for every lab."""


def _course_file(root: Path) -> Path:
    """Deadlines a week apart, one per installed lab, with the Canvas ids the export names its columns by."""
    text = "".join(f"[labs.{lab}]\ndeadline = 2026-0{2 + n // 3}-{10 + 7 * (n % 3):02d}T23:59:00-08:00\n"
                   f"penalty_per_day = 10\ncanvas_assignment_id = {200000 + n}\n\n" for n, lab in enumerate(lab_ids()))
    path = root / "course.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = tmp_path_factory.mktemp("every-lab")
    for n, lab in enumerate(lab_ids()):
        export = root / "downloads" / f"gradescope-{lab}"
        tracks = get_lab(lab).tracks
        meta = {}
        for k, sid in enumerate(SUBMITTING, 1):
            write(export / f"submission_{k}" / f"{lab}-submission.json", solved(lab, tracks[k % len(tracks)], 40 + 10 * n + k))
            meta[f"submission_{k}"] = {":submitters": [{":name": f"Student {sid}", ":sid": sid, ":email": STUDENTS[sid]}],
                                       ":created_at": "2026-02-01 20:00:00.000000000 -08:00"}
        write(export / "submission_metadata.yml", yaml.safe_dump(meta))
    db = root / "gradebook.sqlite"
    result = grade_paths([root / "downloads"], BatchOptions(jobs=2, db=str(db), roster=str(FIXTURES / "canvas-gradebook-export.csv"),
                                                            course=str(_course_file(root))))
    return root, db, result


def test_the_book_labs_are_installed_and_the_course_is_every_installed_lab(term):
    _, _, result = term
    assert {"lab02", "lab07", "lab08", "lab11"} <= set(lab_ids())
    assert sorted({row["lab"] for row in result.final}) == sorted(lab_ids())
    assert len(result.rows) == len(SUBMITTING) * len(lab_ids())


def test_every_lab_grades_every_submission_in_full_and_the_absent_student_is_missing_everywhere(term):
    _, _, result = term
    assert {row.status for row in result.rows} == {"graded"}
    # solve's template rationale: every evidence point, flagged generated, no rationale point
    assert all(row.score == row.max_score - 12 and "generated" in row.flags for row in result.rows), \
        [(row.lab, row.score, row.flags) for row in result.rows if row.score != row.max_score - 12]
    final = {(row["student"], row["lab"]): row for row in result.final}
    assert set(final) == {(sid, lab) for sid in STUDENTS for lab in lab_ids()}
    for lab in lab_ids():
        assert final[("1004", lab)]["status"] == "missing" and final[("1004", lab)]["score"] == 0
        assert all(final[(sid, lab)]["status"] == "graded" for sid in SUBMITTING)


def test_canvas_and_moodle_imports_carry_a_column_per_lab_and_every_students_score(term, tmp_path):
    _, db, result = term
    scores = {(row["student"], row["lab"]): float(row["score"]) for row in result.final}
    assert main(["export", "--lms", "canvas", "--db", str(db), "-o", str(tmp_path / "canvas.csv")]) == EXIT_OK
    rows = list(csv.reader((tmp_path / "canvas.csv").open(encoding="utf-8")))
    columns = rows[0][5:]
    assert columns == [f"{lab} ({200000 + n})" for n, lab in enumerate(lab_ids())]
    by_sis = {row[2]: row for row in rows[2:]}
    assert set(by_sis) == set(STUDENTS)
    for sid, row in by_sis.items():
        assert [float(cell) for cell in row[5:]] == [scores[(sid, lab)] for lab in lab_ids()]
    assert main(["export", "--lms", "moodle", "--db", str(db), "-o", str(tmp_path / "moodle.csv")]) == EXIT_OK
    moodle = list(csv.DictReader((tmp_path / "moodle.csv").open(encoding="utf-8")))
    assert len(moodle) == len(STUDENTS)
    grade_columns = [name for name in moodle[0] if any(lab in name for lab in lab_ids())]
    assert len(grade_columns) == len(lab_ids()), moodle[0].keys()


def test_feedback_pages_are_written_for_every_lab_and_name_its_parts(term, tmp_path, capsys):
    _, db, _ = term
    out = tmp_path / "feedback"
    assert main(["feedback", "--db", str(db), "-o", str(out), "--release"]) == EXIT_OK
    pages = sorted(path.name for path in out.iterdir())
    assert pages == sorted(f"{sid}-{lab}.html" for sid in SUBMITTING for lab in lab_ids())
    for lab in lab_ids():
        page = (out / f"1001-{lab}.html").read_text(encoding="utf-8")
        assert lab in page and all(f"Part {part}" in page or f">{part}<" in page for part in get_lab(lab).parts), lab
    zipped = tmp_path / "canvas-feedback.zip"
    assert main(["feedback", "--db", str(db), "--lms", "canvas", "-o", str(zipped), "--release"]) == EXIT_OK
    capsys.readouterr()
    # Gradescope-delivered pages cannot be named for Canvas: written beside the zip, one per student and lab
    assert zipfile.ZipFile(zipped).namelist() == []
    assert len(list((tmp_path / "canvas-feedback").iterdir())) == len(SUBMITTING) * len(lab_ids())
