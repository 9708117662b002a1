"""Feedback pages to hand back (course/_feedback.py): hidden items withheld until release; rendered by Chromium."""

from __future__ import annotations

import subprocess
from pathlib import Path

import needs
import pytest
from test_course_term import build_term, options

from mlsys_grader.cli import EXIT_OK, main
from mlsys_grader.course import grade_paths
from mlsys_grader.course._feedback import write_feedback


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    root = tmp_path_factory.mktemp("feedback")
    paths = build_term(root)
    roster = root / "roster.csv"
    roster.write_text(roster.read_text().replace("Bo Kim", "Bo <script>alert(1)</script> Kim"), encoding="utf-8")
    db = root / "gradebook.sqlite"
    grade_paths([paths["down"]], options(root, db))
    return db


def test_one_page_per_student_and_lab_with_a_gradable_submission(gradebook, tmp_path):
    done = write_feedback(gradebook, tmp_path / "out")
    names = sorted(path.rsplit("/", 1)[-1] for path in done.files)
    assert names == ["2001-lab07.html", "2002-lab07.html", "2003-lab07.html", "2004-lab07.html", "2005-lab07.html",
                     "2005-lab11.html", "2006-lab07.html", "canvas_9999-lab07.html"]
    assert done.skipped == 15 - 8, "missing rows get no page"


def test_hidden_items_and_the_final_score_wait_for_release(gradebook, tmp_path):
    before = (tmp_path / "before")
    write_feedback(gradebook, before)
    page = (before / "2002-lab07.html").read_text(encoding="utf-8")
    assert "prediction_correct" not in page and ">replay<" not in page and "70.4" not in page
    assert "Score on the checks shown so far: 58 / 70" in page, "replay (5 parts × 6 points) and prediction_correct withheld"
    assert "are shown when grades are released" in page
    assert "Bo &lt;script&gt;alert(1)&lt;/script&gt; Kim" in page and "<script>" not in page, "autoescaped"
    write_feedback(gradebook, tmp_path / "after", release=True)
    page = (tmp_path / "after" / "2002-lab07.html").read_text(encoding="utf-8")
    assert "Score: 70.4 / 100" in page and "late penalty −17.6" in page and "2 days late, -20 %" in page
    assert ">replay<" in page and "predicted right" in page
    assert "inputs.executions" in page or "inputs.compute_scale" in page, "the evidence numbers are shown"
    assert "id='comments'" in page


def test_cli_feedback_says_what_it_wrote(gradebook, tmp_path, capsys):
    assert main(["feedback", "--db", str(gradebook), "-o", str(tmp_path / "fb")]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith(f"wrote 8 feedback page(s) into {tmp_path / 'fb'} (hidden items withheld until --release); "
                          "7 student-lab row(s) without a gradable submission")


@pytest.mark.slow
def test_chromium_renders_a_feedback_page(gradebook, tmp_path):
    chromium = needs.chromium()
    write_feedback(gradebook, tmp_path, release=True)
    page = tmp_path / "2002-lab07.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,1600"]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert "Score: 70.4 / 100" in dom and dom.count("<tr>") > 30 and "Staff comments" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.stat().st_size > 20_000, "a blank page compresses to a few kB"


def test_a_grade_stored_before_feedback_data_existed_still_gets_a_page():
    """A stored grade without hidden indices, item maxima or evidence (an earlier run) falls back to the rubric."""
    from mlsys_grader.course._feedback import render_feedback
    from mlsys_grader.course._row import FinalRow

    row = FinalRow.from_json({"lab": "lab07", "student": "2001", "student_name": "Ada", "student_email": "ada@u.edu",
                              "student_id": "2001", "path": "x/lab07-submission.json", "submitted_at": "", "score": 88.0,
                              "max_score": 100.0, "raw_score": 88.0, "late_penalty": 0.0, "rule": "", "changes": "",
                              "status": "graded"})  # as an earlier release stored it: no machine score, no override data
    result = {"items": {"A.captured": 3.0, "A.replay": 6.0, "A.prediction_correct": 0.0},
              "findings": [["A", "prediction", "prediction_correct", "the numbers support another answer"]]}
    page = render_feedback(row, result, release=False)
    assert "Score on the checks shown so far: 3 / 3" in page and "another answer" not in page
    page = render_feedback(row, result, release=True)
    assert "6 / 6" in page and "not predicted right" in page and "another answer" in page


def test_before_release_a_part_that_lost_points_for_a_hidden_reason_never_reads_nothing_to_do():
    """An edited part B: its replay finding is withheld before release, and it voids the part, so B's public items show 0;
    the page says those points wait on a check not shown yet, never "nothing to do"."""
    from mlsys_grader.course._feedback import WITHHELD_REASON, render_feedback
    from mlsys_grader.course._row import FinalRow

    row = FinalRow.from_json({"lab": "lab07", "student": "2001", "student_name": "Ada", "student_email": "ada@u.edu",
                              "student_id": "2001", "path": "x/lab07-submission.json", "submitted_at": "", "score": 80.0,
                              "max_score": 100.0, "raw_score": 80.0, "late_penalty": 0.0, "rule": "", "changes": "",
                              "status": "graded"})
    items = {"A.captured": 3.0, "A.replay": 6.0, "B.captured": 0.0, "B.replay": 0.0, "B.fresh": 0.0}
    item_max = {"A.captured": 3.0, "A.replay": 6.0, "B.captured": 3.0, "B.replay": 6.0, "B.fresh": 3.0}
    result = {"items": items, "item_max": item_max, "hidden": [0],
              "findings": [["B", "replay", "replay", "Part B's result.total_ms does not match what mlsysim computes"]]}
    page = render_feedback(row, result, release=False)
    assert "Nothing: every check shown here passed" not in page and WITHHELD_REASON in page
    assert "does not match" not in page, "the hidden finding itself is still withheld"
    intact = render_feedback(row, {**result, "items": {**items, "B.captured": 3.0, "B.replay": 6.0, "B.fresh": 3.0},
                                   "findings": []}, release=False)
    assert "Nothing: every check shown here passed" in intact and WITHHELD_REASON not in intact
    released = render_feedback(row, result, release=True)
    assert "does not match" in released and WITHHELD_REASON not in released


def test_an_unreadable_upload_staff_decided_gets_its_page(tmp_path):
    """An upload the machine could not grade and staff scored (85 after reading it) gets a page saying so."""
    from mlsys_grader.course import grade_paths
    from mlsys_grader.course._review import WholeDecision, decide
    from mlsys_grader.course._store import GradebookDB

    root = tmp_path
    paths = build_term(root)
    (paths["down"] / "folders" / "gus@u.edu").mkdir(parents=True, exist_ok=True)
    (paths["down"] / "folders" / "gus@u.edu" / "lab07-submission.json").write_text("{not json", encoding="utf-8")
    db = root / "gradebook.sqlite"
    grade_paths([paths["down"]], options(root, db))
    before = write_feedback(db, tmp_path / "before", release=True)
    assert not any(path.endswith("2007-lab07.html") for path in before.files)
    book = GradebookDB(db)
    try:
        decide(book, WholeDecision("2007", "lab07", "score", 85.0, "read the zip sent by email"), "ta-rosa")
    finally:
        book.close()
    done = write_feedback(db, tmp_path / "after", release=True)
    [page] = [path for path in done.files if path.endswith("2007-lab07.html")]
    text = Path(page).read_text(encoding="utf-8")
    assert "course staff read it and decided" in text and "85" in text and done.skipped == before.skipped - 1
