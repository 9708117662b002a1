"""Nothing submitted is lost: an upload the grader cannot read is a student for staff to decide, not "no submission".

A term as staff download it: a Gradescope export of Lab 07 (with a truncated zip and an empty
upload beside graded ones), a Canvas download of Lab 11 in a folder whose name says nothing
(with a student who handed in only a PDF), a roster.  Real bundles, real grading, real SQLite,
the real command line; the interruption test sends Ctrl-C to a real ``mlsys-grader grade``.
"""

from __future__ import annotations

import csv
import io
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import reseal, solved
from test_course_term import write

from mlsys_grader.cli import EXIT_INTERRUPTED, EXIT_OK, EXIT_UNGRADABLE, main
from mlsys_grader.course import BatchOptions, GradebookDB, build_queue, grade_paths
from mlsys_grader.course._summary import OUTCOME_COLUMNS, render_summary
from mlsys_grader.errors import CourseFileError
from mlsys_grader.intake._course import MAX_EXTENSION_DAYS, read_course
from mlsys_grader.labs import lab_ids

ROSTER = """name,email,sid,canvas_id,track
Ada Hopper,ada@u.edu,1001,40999,cloud
Bo Kim,bo@u.edu,1002,41000,edge
Cy Lee,cy@u.edu,1003,41001,mobile
Dee Park,dee@u.edu,1004,41002,tinyml
"""




def truncated_zip(bundle: dict) -> bytes:
    """An Otter-style export zip cut off half way, as an interrupted upload leaves it."""
    import json

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("lab07-submission.json", json.dumps(bundle))
        archive.writestr("lab07.ipynb", "{}")
    data = buffer.getvalue()
    return data[: len(data) // 2]


def build(root: Path) -> dict[str, Path]:
    """The downloads and the roster under ``root``; returns the named paths."""
    gs = root / "downloads" / "assignment_4711_export"  # a Gradescope export: its name says no lab
    write(gs / "submission_1" / "lab07-submission.json", solved("lab07", "cloud", 1))
    write(gs / "submission_2" / "lab07-submission.json", solved("lab07", "edge", 2))
    paths = {"truncated": write(gs / "submission_3" / "upload.zip", truncated_zip(solved("lab07", "mobile", 3))),
             "empty": write(gs / "submission_4" / "upload.json", b"")}
    meta = {f"submission_{n}": {":submitters": [{":name": name, ":sid": sid, ":email": email}],
                                ":created_at": "2026-02-06 20:00:00.000000000 -08:00"}
            for n, (name, sid, email) in enumerate((("Ada Hopper", "1001", "ada@u.edu"), ("Bo Kim", "1002", "bo@u.edu"),
                                                    ("Cy Lee", "1003", "cy@u.edu"), ("Dee Park", "1004", "dee@u.edu")), 1)}
    write(gs / "submission_metadata.yml", yaml.safe_dump(meta))
    canvas = root / "downloads" / "canvas-download"  # a Canvas bulk download: its name says no lab either
    write(canvas / "kimbo_41000_880001_lab11-submission.json", solved("lab11", "edge", 4))
    write(canvas / "leecy_41001_880002_lab11-submission.json", solved("lab11", "mobile", 5))
    paths["pdf"] = write(canvas / "hopperada_40999_880003_report.pdf", b"%PDF-1.7\n%a scan of a notebook\n")
    write(root / "roster.csv", ROSTER)
    return {**paths, "down": root / "downloads", "gs": gs, "canvas": canvas}


def run(root: Path, db: Path) -> object:
    return grade_paths([root / "downloads"], BatchOptions(jobs=2, db=str(db), roster=str(root / "roster.csv")))


def final_row(result, student: str, lab: str):
    [row] = [r for r in result.final if r["student"] == student and r["lab"] == lab]
    return row


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = tmp_path_factory.mktemp("lost")
    paths = build(root)
    return root, paths, run(root, root / "gradebook.sqlite")


def test_unreadable_uploads_are_their_students_unreadable_rows_naming_file_and_why(term):
    _, paths, result = term
    truncated, empty, pdf = (final_row(result, "1003", "lab07"), final_row(result, "1004", "lab07"),
                             final_row(result, "1001", "lab11"))
    for row, path in ((truncated, paths["truncated"]), (empty, paths["empty"]), (pdf, paths["pdf"])):
        assert row["status"] == "unreadable" and row["score"] == 0 and row["path"] == str(path.parent if row is not pdf
                                                                                              else path)
        assert row["input_hash"] and "staff decide it in review" in row["rule"]
    assert "upload.zip" in truncated["reason"] and "zip" in truncated["reason"].lower()
    assert empty["reason"].startswith("upload.json: ") and "empty" in empty["reason"], empty["reason"]
    assert "hopperada_40999_880003_report.pdf is a PDF document" in pdf["reason"]
    # the students who handed in nothing of a lab are the only missing ones (every student, for a lab of nobody's work)
    students = {r["student"] for r in result.final}
    untouched = {(student, lab) for student in students for lab in lab_ids() if lab not in ("lab07", "lab11")}
    assert {(r["student"], r["lab"]) for r in result.final if r["status"] == "missing"} == {("1004", "lab11")} | untouched
    assert not result.unplaced


def test_unreadable_uploads_are_in_the_review_queue_with_the_whole_lab_at_stake(term, tmp_path, capsys):
    root, _, _ = term
    db = root / "gradebook.sqlite"
    assert main(["review", "--db", str(db), "--list"]) == EXIT_OK
    listed = capsys.readouterr().out
    for who, lab, name in (("1003", "lab07", "upload.zip"), ("1004", "lab07", "upload.json"),
                           ("1001", "lab11", "hopperada_40999_880003_report.pdf")):
        [line] = [line for line in listed.splitlines() if f" {who} {lab}: unreadable upload" in line]
        assert name in line and line.split()[0] == "100", line
    out = tmp_path / "queue.csv"
    assert main(["review", "--db", str(db), "--export", str(out)]) == EXIT_OK
    whole = [line for line in csv.DictReader(out.open(encoding="utf-8")) if line["item"] == "*" and "unreadable" in line["why"]]
    assert {(line["student"], line["lab"]) for line in whole} == {("1003", "lab07"), ("1004", "lab07"), ("1001", "lab11")}
    assert all(float(line["at_stake"]) == 100 and "unreadable upload" in line["why"] for line in whole)


def test_a_decision_on_each_unreadable_upload_is_kept_across_reruns_and_logged(tmp_path, capsys):
    root = tmp_path
    paths = build(root)
    db = root / "gradebook.sqlite"
    run(root, db)
    # one decision by command, two by the CSV round trip (a score and "counts as missing")
    assert main(["review", "--db", str(db), "--decide", "1003", "--lab", "lab07", "--points", "61.5",
                 "--reason", "zip re-sent by email, read by hand", "--by", "ta1"]) == EXIT_OK
    assert "decided 1003 lab07" in capsys.readouterr().out
    queue = root / "queue.csv"
    main(["review", "--db", str(db), "--export", str(queue)])
    lines = list(csv.DictReader(queue.open(encoding="utf-8")))
    assert {line["student"] for line in lines if line["item"] == "*" and "unreadable" in line["why"]} == {"1004", "1001"}, \
        "decided entries leave the queue"
    for line in lines:
        if line["item"] == "*" and "unreadable" in line["why"]:
            line["new_points"], line["comment"] = (("missing", "empty file, no reply") if line["student"] == "1004"
                                                   else ("40", "PDF of the notebook: parts A-C readable"))
    with queue.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    assert main(["review", "--db", str(db), "--import", str(queue), "--by", "ta2"]) == EXIT_OK
    capsys.readouterr()
    for attempt in range(2):  # the decisions hold after a rerun, as overrides do
        again = run(root, db)
        decided = {(r["student"], r["lab"]): r for r in again.final}
        assert (decided[("1003", "lab07")]["status"], decided[("1003", "lab07")]["score"]) == ("unreadable", 61.5)
        assert decided[("1003", "lab07")]["decision"].startswith("score 61.5 by ta1")
        assert (decided[("1004", "lab07")]["status"], decided[("1004", "lab07")]["score"]) == ("missing", 0.0)
        assert decided[("1004", "lab07")]["decision"].startswith("counts as missing by ta2")
        assert decided[("1001", "lab11")]["score"] == 40.0, attempt
    db_ = GradebookDB(db)
    try:
        assert not [e for e in build_queue(db_) if e.whole], "every unreadable upload decided (solve's text stays queued)"
        logged = [(e["student"], e["lab"], e["kind"]) for e in db_.change_log() if e["kind"] == "decision"]
    finally:
        db_.close()
    assert sorted(logged) == [("1001", "lab11", "decision"), ("1003", "lab07", "decision"), ("1004", "lab07", "decision")]
    # a resubmission makes the decision stale: the new upload counts, the decision is listed, never applied
    write(paths["gs"] / "submission_3" / "upload.zip", b"")
    write(paths["gs"] / "submission_3" / "lab07-submission.json", solved("lab07", "mobile", 3))
    (paths["gs"] / "submission_3" / "upload.zip").unlink()
    resubmitted = final_row(run(root, db), "1003", "lab07")
    assert resubmitted["status"] == "graded" and resubmitted["decision"] == ""
    assert "decision score 61.5 by ta1" in resubmitted["stale_overrides"]


def test_a_decision_is_refused_with_the_reason_and_nothing_stored(term, tmp_path, capsys):
    root, _, _ = term
    db = tmp_path / "g.sqlite"
    db.write_bytes((root / "gradebook.sqlite").read_bytes())
    before = db.read_bytes()
    cases = [(["--decide", "1003", "--lab", "lab07", "--points", "101", "--reason", "x"], "the score must be a number from 0 to 100"),
             (["--decide", "1003", "--lab", "lab07", "--points", "5"], "needs a reason"),
             (["--decide", "1001", "--lab", "lab07", "--missing", "--reason", "x"], "1001 lab07 is graded"),
             (["--decide", "9999", "--lab", "lab07", "--missing", "--reason", "x"], "unknown student '9999'")]
    for args, words in cases:
        assert main(["review", "--db", str(db), *args]) == EXIT_UNGRADABLE
        assert words in capsys.readouterr().err
    assert main(["review", "--db", str(db), "--decide", "1003", "--lab", "lab07", "--reason", "x"]) == 2
    assert db.read_bytes() == before


def test_gradable_and_unreadable_uploads_keep_the_gradable_one_and_list_the_other(tmp_path):
    write(tmp_path / "roster.csv", ROSTER)
    folder = tmp_path / "downloads" / "ada@u.edu"
    write(folder / "lab07-submission.json", solved("lab07", "cloud", 7))
    write(folder / "lab07-notes.pdf", b"%PDF-1.4\n")
    result = grade_paths([tmp_path / "downloads"], BatchOptions(jobs=1, db=None, roster=str(tmp_path / "roster.csv")))
    row = final_row(result, "1001", "lab07")
    assert row["status"] == "graded" and row["score"] > 0
    assert row["other_submissions"] == f"{folder / 'lab07-notes.pdf'} (unreadable)"


def test_an_upload_of_unknown_lab_is_one_queue_entry_and_a_decision_places_it(tmp_path, capsys):
    write(tmp_path / "roster.csv", ROSTER)
    folder = tmp_path / "downloads" / "ada@u.edu"  # both labs in one folder: which lab the PDF is for cannot be told
    write(folder / "lab07-submission.json", solved("lab07", "cloud", 8))
    write(folder / "lab11-submission.json", solved("lab11", "cloud", 9))
    pdf = write(tmp_path / "downloads" / "bo@u.edu" / "scan.pdf", b"%PDF-1.4\n")
    write(tmp_path / "downloads" / "cy@u.edu" / "lab07-submission.json", solved("lab07", "mobile", 10))
    write(tmp_path / "downloads" / "cy@u.edu" / "lab11-submission.json", solved("lab11", "mobile", 11))
    db = tmp_path / "g.sqlite"
    options = BatchOptions(jobs=1, db=str(db), roster=str(tmp_path / "roster.csv"))
    result = grade_paths([tmp_path / "downloads"], options)
    assert [(r["student"], r.path) for r in result.unplaced] == [("1002", str(pdf))]
    assert final_row(result, "1002", "lab07")["status"] == "missing"
    main(["review", "--db", str(db), "--list"])
    listed = capsys.readouterr().out
    assert f"1002 (lab unknown): unreadable, lab unknown: {pdf}: scan.pdf is a PDF document" in listed
    assert "<h3>Unreadable uploads of unknown lab</h3>" in render_summary(result)
    assert main(["review", "--db", str(db), "--decide", "1002", "--upload", str(pdf), "--points", "30",
                 "--reason", "the PDF is Lab 11 by its title"]) == EXIT_UNGRADABLE
    assert "is an upload of unknown lab: name the lab" in capsys.readouterr().err
    assert main(["review", "--db", str(db), "--decide", "1002", "--upload", str(pdf), "--lab", "lab11", "--points", "30",
                 "--reason", "the PDF is Lab 11 by its title"]) == EXIT_OK
    capsys.readouterr()
    db_ = GradebookDB(db)
    try:
        placed = {(r["student"], r["lab"]): r for r in db_.final()}[("1002", "lab11")]
        assert not [e for e in build_queue(db_) if e.whole]
    finally:
        db_.close()
    assert (placed["status"], placed["score"], placed["path"]) == ("unreadable", 30.0, str(pdf))
    rerun = final_row(grade_paths([tmp_path / "downloads"], options), "1002", "lab11")
    assert (rerun["status"], rerun["score"], rerun["path"]) == ("unreadable", 30.0, str(pdf)), "the next run places it too"


def test_a_reused_grade_names_the_rows_own_file(tmp_path):
    folder = tmp_path / "in"
    write(folder / "lab07-submission.json", solved("lab07", "cloud", 1))
    write(folder / "hopperada_40999_999999_lab11_report.pdf", b"%PDF-1.7\nsame bytes\n")
    write(folder / "kimbo_41000_999998_lab11_report.pdf", b"%PDF-1.7\nsame bytes\n")
    db = tmp_path / "g.sqlite"
    for _ in range(2):  # the second run reuses the one stored result for both files
        rows = {Path(r["path"]).name: r for r in grade_paths([folder], BatchOptions(jobs=1, db=str(db))).rows}
        for name in ("hopperada_40999_999999_lab11_report.pdf", "kimbo_41000_999998_lab11_report.pdf"):
            assert rows[name]["reasons"].startswith(f"{name} is a PDF document"), rows[name]["reasons"]


# -- hostile course files -----------------------------------------------------------

COURSE = 'extensions = "extensions.csv"\n[labs.lab07]\ndeadline = 2026-02-06T23:59:00-08:00\npenalty_per_day = 10\n'


@pytest.mark.parametrize("lines, words", [
    ("ada@u.edu,lab07,1e308,x\n", f"line 2: days must be a number from 0 to {MAX_EXTENSION_DAYS} (got '1e308')"),
    ("ada@u.edu,lab07,366,x\n", "line 2: days must be a number from 0 to 365 (got '366')"),
    ("ada@u.edu,lab07,-1,x\n", "line 2: days must be a number from 0 to 365 (got '-1')"),
    ("ada@u.edu,lab07,nan,x\n", "line 2: days must be a number from 0 to 365 (got 'nan')"),
    ("ada@u.edu,lab07,inf,x\n", "line 2: days must be a number from 0 to 365 (got 'inf')"),
    ("ada@u.edu,lab07,two,x\n", "line 2: days must be a number of days (got 'two')"),
    ("zed@u.edu,lab07,2,x\n", "line 2: student 'zed@u.edu' is no roster email or sid"),
    ("ada@u.edu,lab07,2,x\n1001,lab07,3,y\n", "line 3: student '1001' already has an extension for lab07 on line 2"),
    (",lab07,2,x\n", "line 2: expected a student (email or sid) on every extensions line"),
])
def test_a_hostile_extension_line_is_refused_naming_file_and_line_and_the_database_is_unchanged(tmp_path, capsys, lines, words):
    write(tmp_path / "roster.csv", ROSTER)
    write(tmp_path / "course.toml", COURSE)
    write(tmp_path / "extensions.csv", "student,lab,days,reason\n" + lines)
    write(tmp_path / "in" / "ada@u.edu" / "lab07-submission.json", solved("lab07", "cloud", 1))
    db = tmp_path / "g.sqlite"
    assert main(["grade", str(tmp_path / "in"), "-o", str(tmp_path / "grades.csv"), "--db", str(db), "--jobs", "1",
                 "--roster", str(tmp_path / "roster.csv"), "-q"]) == EXIT_OK
    before = db.read_bytes()
    code = main(["grade", str(tmp_path / "in"), "-o", str(tmp_path / "grades.csv"), "--db", str(db), "--jobs", "1", "-q",
                 "--roster", str(tmp_path / "roster.csv"), "--course", str(tmp_path / "course.toml")])
    err = capsys.readouterr().err
    assert code == EXIT_UNGRADABLE and f"{tmp_path / 'extensions.csv'}, {words}" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert db.read_bytes() == before
    with pytest.raises(CourseFileError):
        from mlsys_grader.course import read_roster

        read_course(tmp_path / "course.toml", read_roster(tmp_path / "roster.csv"))


# -- clean stops and files ------------------------------------------------------------

def _cli() -> list[str]:
    return [sys.executable, "-m", "mlsys_grader.cli"]


@pytest.mark.slow
def test_ctrl_c_during_grade_exits_130_with_one_line_and_a_rerun_completes(tmp_path):
    # Enough inputs that the workers, which start with the replay prepared, are still grading when Ctrl-C comes (40
    # were graded within half a second, and the signal then met the interpreter's shutdown): 40 settings, 15 uploads
    # of each (each its own input: another creation time, sealed again).
    folder = tmp_path / "in"
    for seed in range(40):
        for copy in range(15):
            data = dict(solved("lab07", "cloud", seed), created_at=f"2026-02-{1 + copy:02d}T10:00:00Z")
            write(folder / f"s{seed:02d}-{copy:02d}" / "lab07-submission.json", reseal(data))
    out, db = tmp_path / "grades.csv", tmp_path / "g.sqlite"
    command = [*_cli(), "grade", str(folder), "-o", str(out), "--db", str(db), "--jobs", "2", "--live-replay"]
    # Ctrl-C at a terminal signals the whole foreground process group: the workers too
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               cwd=tmp_path)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _workers_running(process.pid):
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_INTERRUPTED, err
    assert err.strip().splitlines() == [
        "mlsys-grader: interrupted; nothing was half written — run `mlsys-grader grade` again to finish"], err
    assert not out.exists() and not list(tmp_path.glob(".grades.csv.*")), "no half-written CSV"
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == EXIT_OK, done.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 600 and {row["status"] for row in rows} == {"graded"}


def _workers_running(pid: int) -> bool:
    """True once ``pid`` has forked its grading workers (children in /proc)."""
    try:
        return bool(Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    except OSError:
        return False


@pytest.mark.slow
def test_review_list_into_a_closed_pipe_is_silent_and_exits_0(term):
    root, _, _ = term
    shell = f"{' '.join(_cli())} review --db {root / 'gradebook.sqlite'} --list | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True, timeout=120)
    assert re.match(r"\d+ submission\(s\) to review", done.stdout), done.stdout
    assert done.stderr == "" and done.returncode == 0
    # a reader that is gone before the first line is written: the write itself fails with EPIPE
    read, write_end = os.pipe()
    os.close(read)
    try:
        gone = subprocess.run([*_cli(), "review", "--db", str(root / "gradebook.sqlite"), "--list"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert (gone.returncode, gone.stderr) == (0, "")


def test_runs_with_different_outputs_in_one_folder_leave_each_others_files_alone(term, tmp_path):
    root, paths, _ = term
    common = ["--db", str(tmp_path / "g.sqlite"), "--jobs", "2", "-q", "--roster", str(root / "roster.csv")]
    assert main(["grade", str(paths["down"]), "-o", str(tmp_path / "grades.csv"), *common]) == EXIT_OK
    course_final = (tmp_path / "final.csv").read_bytes()
    assert main(["grade", str(paths["canvas"] / "hopperada_40999_880003_report.pdf"), "-o", str(tmp_path / "pdf-only.csv"),
                 "--no-db", "-q"]) == EXIT_UNGRADABLE
    assert (tmp_path / "final.csv").read_bytes() == course_final, "the course's final gradebook is untouched"
    assert (tmp_path / "pdf-only-final.csv").is_file()
    assert main(["grade", str(paths["gs"]), "-o", str(tmp_path / "lab07.csv"), *common]) == EXIT_OK
    assert (tmp_path / "lab07-final.csv").is_file() and (tmp_path / "final.csv").read_bytes() == course_final


def test_the_summary_leads_with_the_final_gradebook_and_its_counts_match_final_csv(term, tmp_path):
    root, paths, _ = term
    db = tmp_path / "g.sqlite"
    db.write_bytes((root / "gradebook.sqlite").read_bytes())
    main(["review", "--db", str(db), "--decide", "1003", "--lab", "lab07", "--points", "50", "--reason", "read by hand"])
    html = tmp_path / "summary.html"
    assert main(["grade", str(paths["down"]), "-o", str(tmp_path / "grades.csv"), "--db", str(db), "--jobs", "2", "-q",
                 "--roster", str(root / "roster.csv"), "--html", str(html)]) == EXIT_OK
    page = html.read_text(encoding="utf-8")
    assert page.index("Outcome: the final gradebook") < page.index("<h2>Inputs</h2>")
    final = list(csv.DictReader((tmp_path / "final.csv").open(encoding="utf-8")))
    for lab in ("lab07", "lab11"):
        rows = [r for r in final if r["lab"] == lab]
        shown = dict(re.findall(r"<td data-count='(\w+)'[^>]*>([^<]*)</td>",
                                re.search(rf"<tr data-lab='{lab}'>(.*?)</tr>", page).group(1)))
        assert set(shown) == set(OUTCOME_COLUMNS)
        expected = {"students": len(rows), "submitted": sum(1 for r in rows if r["input_hash"]),
                    "missing": sum(1 for r in rows if r["status"] == "missing"),
                    "unreadable": sum(1 for r in rows if r["status"] == "unreadable"),
                    "late": sum(1 for r in rows if float(r["late_penalty"]) > 0),
                    "decided": sum(1 for r in rows if r["decision"] or r["overrides"])}
        assert {k: int(shown[k]) for k in expected} == expected
        mean = sum(float(r["score"]) for r in rows) / len(rows)
        assert shown["mean"].startswith(f"{mean:.2f} / ")
    assert int(dict(re.findall(r"<td data-count='(\w+)'[^>]*>([^<]*)</td>",
                               re.search(r"<tr data-lab='lab07'>(.*?)</tr>", page).group(1)))["decided"]) == 1


# -- progress where it is slow ----------------------------------------------------------

def _run_with_terminal_stderr(command: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run ``command`` with its stderr on a pseudo-terminal (as in a staff member's shell); (exit code, stdout, what the
    terminal showed)."""
    import pty
    import threading

    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, text=True, cwd=cwd,
                               env={**os.environ, "COLUMNS": "160", "TERM": "xterm"})
    os.close(slave)
    shown = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out, _ = process.communicate(timeout=600)
    reader.join(timeout=10)
    os.close(master)
    return process.returncode, out, shown.decode("utf-8", "replace")


@pytest.mark.slow
def test_the_first_grade_shows_the_table_build_on_a_terminal_and_counts_it_in_the_runs_time(tmp_path):
    write(tmp_path / "in" / "lab07-submission.json", solved("lab07", "cloud", 1))
    grade = [*_cli(), "grade", str(tmp_path / "in"), "-o", str(tmp_path / "grades.csv"), "--no-db", "--jobs", "1"]
    code, out, shown = _run_with_terminal_stderr([*grade, "--replay-cache", str(tmp_path / "cache")], tmp_path)
    assert code == EXIT_OK, shown
    assert "building the lab07 replay table (once per machine)" in shown and "evaluations" in shown, shown
    took = float(re.search(r" in ([\d.]+) s: ", out).group(1))
    built = float(re.search(r"built the replay table of lab07 in ([\d.]+) s", out).group(1))
    assert took >= built > 0, out
    # only the table of the lab the inputs name: a batch of one lab never waits for another lab's table
    assert [path.name.split("-", 1)[0] for path in (tmp_path / "cache").glob("*.replay")] == ["lab07"]
    # not a terminal: no bar, and nothing on stderr; a second run builds nothing
    done = subprocess.run([*grade, "--replay-cache", str(tmp_path / "cache2")], capture_output=True, text=True, cwd=tmp_path,
                          timeout=600)
    assert done.returncode == EXIT_OK and done.stderr == "" and "built the replay table of lab07 in" in done.stdout
    again = subprocess.run([*grade, "--replay-cache", str(tmp_path / "cache2")], capture_output=True, text=True, cwd=tmp_path,
                           timeout=600)
    assert again.returncode == EXIT_OK and "built the replay table" not in again.stdout


def test_every_ungradable_input_says_why_as_an_error_kind_that_keeps_its_csv_word(tmp_path):
    """Each way an input cannot be graded is one :class:`ErrorKind` whose value is the word the ``error_kind`` column has
    always held; an error class not listed takes its nearest listed base's kind."""
    from mlsys_grader.errors import BundleFormatError, ErrorKind, GraderError, KitError, SchemaVersionError

    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "alice-lab07.json").write_text("{not json")
    (folder / "bob-lab07.pdf").write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    (folder / "carol-lab07.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    (folder / "dan-lab07.json").write_text('{"schema_version": 99, "lab": "lab07"}')
    result = grade_paths([folder], BatchOptions(db=None, jobs=1))
    kinds = {Path(row["path"]).name: row["error_kind"] for row in result.rows}
    assert kinds == {"alice-lab07.json": "BundleFormatError", "bob-lab07.pdf": "Unsupported",
                     "carol-lab07.ipynb": "MissingBundle", "dan-lab07.json": "SchemaVersionError"}
    assert all(ErrorKind(kind) for kind in kinds.values())  # each a member: no free text
    assert ErrorKind.of(SchemaVersionError("x")) is ErrorKind.SCHEMA_VERSION
    assert ErrorKind.of(KitError("x")) is ErrorKind.GRADER_ERROR  # not listed: its nearest listed base
    assert ErrorKind.of(FileNotFoundError("x")) is ErrorKind.OS_ERROR
    assert ErrorKind.of(type("LocalFormatError", (BundleFormatError,), {})("x")) is ErrorKind.BUNDLE_FORMAT
    assert issubclass(SchemaVersionError, GraderError)
