"""Bulk grading end to end: a generated course through the real pool, grader and SQLite gradebook."""

from __future__ import annotations

import csv
import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest
from conftest import reseal, solved
from test_collusion import OTHER, REWORDED, TEXT, stamped

from mlsys_grader import get_lab, solve
from mlsys_grader.api import default_rubric, mlsysim_version
from mlsys_grader.api import grade_submission as default_grade
from mlsys_grader.cli import main
from mlsys_grader.core.grading import grade
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.core.report import GradeReport
from mlsys_grader.course._collusion import instant
from mlsys_grader.course._files import write_csv
from mlsys_grader.course._gradebook import GradebookResult, grade_paths, make_row
from mlsys_grader.course._ingest import discover
from mlsys_grader.course._options import BatchOptions, columns_for, resolve_rubrics, rubric_key
from mlsys_grader.course._store import GradebookDB
from mlsys_grader.course._summary import render_summary
from mlsys_grader.course._worker import graded_result
from mlsys_grader.labs import rubric_text
from mlsys_grader.replay import Replay

ROOT = Path(__file__).resolve().parents[1]


def _course_module():
    spec = importlib.util.spec_from_file_location("course", ROOT / "benchmarks" / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    manifest = _course_module().build_course(root, clean=10)
    return root, manifest


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    root, _ = course
    db = tmp_path_factory.mktemp("db") / "gradebook.sqlite"
    result = grade_paths([root], BatchOptions(jobs=2, db=str(db)))
    return result, db


def test_generated_course_gives_one_correct_row_per_input(course, graded):
    _, manifest = course
    result, _ = graded
    rows = {row["path"]: row for row in result.rows}
    assert len(result.rows) == len(rows) == len(manifest), "exactly one row per input"
    assert set(rows) == set(manifest)
    for path, expect in manifest.items():
        row = rows[path]
        if expect["category"] == "clean":
            assert (row["status"], row["score"], row["max_score"]) == ("graded", 100.0, 100.0), (path, row["reasons"])
            assert (row["lab"], row["track"]) == (expect["lab"], expect["track"])
            assert not set(row["flags"].split(";")) & {"integrity", "stale", "missing", "ungradable"}, path
        elif expect["category"] == "tampered":
            assert expect["flag"] in row["flags"].split(";"), (path, row["flags"])
            assert row["score"] < row["max_score"]
        elif expect["category"] == "garbage":
            assert (row["status"], row["score"]) == ("error", 0), path
            assert expect["reason"] in row["reasons"], (path, row["reasons"])
            assert "ungradable" in row["flags"]


def test_generated_course_reports_every_colluding_pair_and_no_clean_one(course, graded):
    _, manifest = course
    result, _ = graded
    index = {row["path"]: i for i, row in enumerate(result.rows)}
    groups = {frozenset(result.rows[m]["path"] for m in g.members) for g in result.groups}
    expected = {frozenset({path, expect["with"]}) for path, expect in manifest.items() if expect["category"] == "colluding"}
    assert groups == expected
    copied = next(g for g in result.groups if any("copy_a" in result.rows[m]["path"] for m in g.members))
    # The copy keeps its original's times; solve's times prove a copy only once drawn from the seed (to the microsecond).
    seeded_times = instant(solve("lab07", "tinyml", 1000).evidence["A"].captured_at) is not None
    assert copied.bases == (["clock", "rationale", "timestamps"] if seeded_times else ["rationale"])
    assert all(result.rows[index[p]]["collusion_group"] for pair in expected for p in pair)


def test_gradescope_metadata_names_reach_the_gradebook(graded):
    result, _ = graded
    gradescope = [row for row in result.rows if row["kind"] == "gradescope"]
    assert gradescope and all(row["student_email"].endswith("@example.edu") for row in gradescope)
    assert {row["student_name"] for row in gradescope} == {"Student 3", "Student 8"}


def test_rerun_regrades_nothing_and_reports_no_change(course, graded):
    root, manifest = course
    first, db = graded
    again = grade_paths([root], BatchOptions(jobs=2, db=str(db)))
    assert (again.graded, again.reused) == (0, len(manifest))
    assert [r["score"] for r in again.rows] == [r["score"] for r in first.rows]
    assert again.changes == []


def test_the_store_keeps_each_grade_report_and_rows_are_views_of_it(course, graded):
    """The gradebook stores the grade report itself as the record of a grade (the report ``check`` prints, byte for
    byte as JSON), never the rows' view of it; a rerun's rows, read back from those records, equal the first run's."""
    from mlsys_grader.course._worker import SUMMARY_KEYS, summary_of
    from mlsys_grader.intake import read_submission

    root, manifest = course
    first, db = graded
    with sqlite3.connect(db) as conn:
        records = {digest: json.loads(text) for digest, text in conn.execute("SELECT input_hash, result FROM results")}
    graded_records = [record for record in records.values() if record["status"] in ("graded", "regrade")]
    assert graded_records and all("report" in record and not set(SUMMARY_KEYS) & set(record) for record in graded_records)
    ungradable = [record for record in records.values() if record["status"] in ("error", "unsupported")]
    assert all("report" not in record and record["reason"] and record["error_kind"] for record in ungradable)
    for row in first.rows[:6]:
        if row.status != "graded":
            continue
        read = read_submission(row.path)
        report = default_grade(read)
        assert records[row.input_hash]["report"] == report.model_dump(mode="json")
        # read back, it is the same report (the reading's spans are stored beside it, not in its JSON)
        assert GradeReport.model_validate(records[row.input_hash]["report"]).model_dump(mode="json") == report.model_dump(mode="json")
        assert records[row.input_hash]["spans"] == [list(span) for span in report.rationale_spans]
        view = summary_of(records[row.input_hash]["report"])
        assert (view["score"], set(view["items"]), view["flags"]) == (row.score, set(row.points), list(report.flags))
    again = grade_paths([root], BatchOptions(jobs=2, db=str(db)))
    assert again.reused == len(manifest)
    assert [row.to_csv(again.columns) for row in again.rows] == [row.to_csv(first.columns) for row in first.rows]
    assert [(r.findings, r.held, r.item_max) for r in again.rows] == [(r.findings, r.held, r.item_max) for r in first.rows]


def test_rubric_change_reports_exactly_the_students_whose_score_moved(course, graded, tmp_path):
    root, _ = course
    first, db = graded
    from mlsys_grader.api import default_rubric

    shipped = rubric_text("lab07")
    changed = shipped.replace("rationale_names_trigger = 1", "rationale_names_trigger = 3")
    assert changed != shipped
    rubric = tmp_path / "lab07.toml"
    rubric.write_text(changed, encoding="utf-8")
    copy_db = tmp_path / "copy.sqlite"
    copy_db.write_bytes(Path(db).read_bytes())
    result = grade_paths([root], BatchOptions(jobs=2, db=str(copy_db), rubrics={"lab07": str(rubric)}))
    before = {r["path"]: r for r in first.rows}
    moved = {r["path"] for r in result.rows if r["status"] == "graded" and r["score"] != before[r["path"]]["score"]}
    assert moved, "the full-marks lab07 submissions gain 2 points"
    assert {c.path for c in result.changes} == moved
    assert all(c.cause == "rubric" and c.delta == 2 and c.lab == "lab07" for c in result.changes)
    assert default_rubric("lab07").synthesis["rationale_names_trigger"] == 1


def test_roster_assigns_tracks_and_flags_other_track(course, tmp_path):
    root, manifest = course
    folder = root / "gradescope_export"
    track_of = {i: manifest[str(folder / f"submission_{9000 + i}")]["track"] for i in (3, 8)}
    other = next(t for t in ("tinyml", "mobile", "edge", "cloud") if t != track_of[3])
    roster = tmp_path / "roster.csv"
    roster.write_text(f"name,email,track\nStudent 3,student3@example.edu,{other}\n"
                      f"Student 8,student8@example.edu,{track_of[8]}\n", encoding="utf-8")
    result = grade_paths([folder], BatchOptions(jobs=1, db=None, roster=str(roster)))
    by_name = {row["student_name"]: row for row in result.rows}
    assert by_name["Student 3"]["track"] == track_of[3] and "wrong_track" in by_name["Student 3"]["flags"]
    assert f"roster assigns {other!r}" in by_name["Student 3"]["reasons"]
    assert by_name["Student 8"]["track"] == track_of[8] and "wrong_track" not in by_name["Student 8"]["flags"]
    assert by_name["Student 8"]["roster_track"] == track_of[8]


def test_csv_and_dataframe_hold_the_same_rows(graded, tmp_path):
    result, _ = graded
    out = tmp_path / "grades.csv"
    assert result.write_csv(out) == len(result.rows)
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    frame = result.to_dataframe()
    assert list(frame.columns) == list(rows[0]) == result.columns
    assert len(frame) == len(rows)
    for column in ("path", "student_email", "lab", "track", "score", "max_score", "part_A", "A.replay",
                   "synthesis.rationale_length", "flags", "reasons"):
        assert column in result.columns
    assert [float(r["score"]) for r in rows] == [float(s) for s in frame["score"]]


def test_csv_cells_never_start_a_spreadsheet_formula(tmp_path):
    out = tmp_path / "x.csv"
    write_csv([{"path": "=HYPERLINK(\"http://evil\")", "score": -3}], out, ["path", "score"])
    text = out.read_text(encoding="utf-8")
    assert "'=HYPERLINK" in text and ",-3" in text


def test_cli_grade_writes_csv_db_and_html(course, tmp_path, capsys):
    root, _ = course
    code = main(["grade", str(root / "submissions" / "garbage"), str(root / "submissions" / "student0000"),
                 "-o", str(tmp_path / "g.csv"), "--db", str(tmp_path / "g.sqlite"), "--html", str(tmp_path / "r.html"), "--jobs", "2"])
    assert code == 0
    out = capsys.readouterr().out
    assert "graded 8 input(s)" in out and "7 ungradable" in out
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["grade", str(root), "--jobs", "0", "--no-db", "-o", str(tmp_path / "h.csv")]) == 2
    assert "jobs" in capsys.readouterr().err


# -- collusion through the whole pipeline ---------------------------------------------------

@pytest.fixture(scope="module")
def small_course(tmp_path_factory):
    """Alice's work; Bob's copy of it with part C redone and the rationale rewritten; Carol and Dave keep
    the notebook defaults and write their own rationales."""
    root = tmp_path_factory.mktemp("small_course")
    alice = stamped(solved("lab07", "edge", 5), 1)
    bob = json.loads(json.dumps(alice))
    redone = stamped(solved("lab07", "edge", 6), 2)
    for field in ("evidence", "controls", "runs"):
        bob[field]["C"] = redone[field]["C"]
    bob["synthesis"]["rationale"] = REWORDED
    carol, dave = stamped(solved("lab07", "edge", None), 3), stamped(solved("lab07", "edge", None), 4)
    carol["synthesis"]["rationale"], dave["synthesis"]["rationale"] = TEXT, OTHER
    for name, data in (("alice", alice), ("bob", reseal(bob)), ("carol", reseal(carol)), ("dave", reseal(dave))):
        (root / name).mkdir()
        (root / name / "lab07-submission.json").write_text(json.dumps(data), encoding="utf-8")
    return root


def _by_student(result):
    return {Path(row["path"]).parent.name: row for row in result.rows}


def test_a_reworked_copy_is_flagged_and_identical_defaults_are_not(small_course, tmp_path):
    """Measured before: Bob's copy graded with no flag, while Carol and Dave (defaults, their own
    words) were grouped for identical evidence."""
    result = grade_paths([small_course], BatchOptions(jobs=1, db=str(tmp_path / "g.sqlite")))
    rows = _by_student(result)
    assert all(row["status"] == "graded" for row in rows.values())
    [group] = result.groups
    assert {Path(result.rows[m]["path"]).parent.name for m in group.members} == {"alice", "bob"}
    # the four kept parts are the same work part by part as well (part C, redone, is not)
    assert group.bases == ["clock", "timestamps"] and group.parts == ["A", "B", "D", "E"]
    for name in ("alice", "bob"):
        assert "collusion" in rows[name]["flags"].split(";") and rows[name]["collusion_group"] == group.group_id
    for name in ("carol", "dave"):
        assert "collusion" not in rows[name]["flags"].split(";") and rows[name]["collusion_group"] == ""
    page = render_summary(result)
    assert "identical capture, lock or shown times in parts A, B, D, E" in page
    assert "alice/<wbr>lab07-submission.json ↔ " in page and "(12 identical times in A, B, D, E)" in page


@pytest.mark.parametrize("dropped", ["part_times", "report"])
def test_stored_results_without_collusion_data_are_graded_again(small_course, tmp_path, dropped):
    """A gradebook written before times were kept for collusion, or before the report was stored as the record of a
    grade: those results are regraded, not reused without them (which would silently drop the copy)."""
    db_path = tmp_path / "old.sqlite"
    first = grade_paths([small_course], BatchOptions(jobs=1, db=str(db_path)))
    with sqlite3.connect(db_path) as conn:
        stored = conn.execute("SELECT input_hash, result FROM results").fetchall()
        assert len(stored) == 4 and all(dropped in json.loads(text) for _, text in stored)
        for digest, text in stored:  # a previous format: an evidence digest, no times (or no report)
            old = json.loads(text)
            old.pop(dropped)
            old["evidence_digest"] = "0" * 64
            conn.execute("UPDATE results SET result = ? WHERE input_hash = ?", (json.dumps(old), digest))
    again = grade_paths([small_course], BatchOptions(jobs=1, db=str(db_path)))
    assert (again.graded, again.reused) == (4, 0)
    assert [(g.members, g.bases) for g in again.groups] == [(g.members, g.bases) for g in first.groups]
    third = grade_paths([small_course], BatchOptions(jobs=1, db=str(db_path)))
    assert (third.graded, third.reused) == (0, 4)
    assert [(g.members, g.bases) for g in third.groups] == [(g.members, g.bases) for g in first.groups]


def test_results_stored_by_other_grading_code_are_graded_again(small_course, tmp_path):
    """The version alone does not say which code graded a result (a checkout tracks changes between releases): a result
    stored under another build of the grading code, same version, is graded again, and its score change names the grader."""
    from mlsys_grader._version import __version__
    from mlsys_grader.course._build import grading_build

    assert grading_build().startswith(__version__ + "+") and len(grading_build()) == len(__version__) + 13
    db_path = tmp_path / "old.sqlite"
    grade_paths([small_course], BatchOptions(jobs=1, db=str(db_path)))
    with sqlite3.connect(db_path) as conn:  # as an earlier build stored them, one score lowered as that build gave it
        conn.execute("UPDATE results SET grader_version = ?", (__version__,))
        conn.execute("UPDATE latest SET grader_version = ?, score = score - 5 WHERE rowid = (SELECT MIN(rowid) FROM latest)",
                      (__version__,))
    again = grade_paths([small_course], BatchOptions(jobs=1, db=str(db_path)))
    assert (again.graded, again.reused) == (4, 0)
    assert [change.cause for change in again.changes] == ["grader"]
    third = grade_paths([small_course], BatchOptions(jobs=1, db=str(db_path)))
    assert (third.graded, third.reused) == (0, 4)


# -- a grader error is a regrade, not a grade ---------------------------------------------------

def _lab07_with_a_bug():
    """Lab 07 whose part C plan fails with an error of the grader's own (not the evaluator's)."""
    LAB = get_lab("lab07")
    judge = LAB.judge

    class _RulesWithABug:
        """Lab 07's judge, except that part C's plan hits a bug of the grader's own."""

        def __getattr__(self, name):
            return getattr(judge, name)

        def arm_inputs(self, lab, track, part, controls, upstream):
            if part == "C":
                raise KeyError("fused_region_count")
            return judge.arm_inputs(lab, track, part, controls, upstream)

    return LAB.replace(judge=_RulesWithABug())


def test_a_grader_error_makes_the_row_regrade_everywhere(tmp_path):
    """The real grading path with a lab whose plan hits a bug of its own; the report goes through
    the gradebook's own result and row builders, the CSV, the SQLite gradebook and the HTML summary."""
    data = stamped(solved("lab07", "edge", 4), 9)
    (tmp_path / "in" / "erin").mkdir(parents=True)
    (tmp_path / "in" / "erin" / "lab07-submission.json").write_text(json.dumps(data), encoding="utf-8")
    [candidate] = discover([tmp_path / "in"])
    bundle = bundle_from_mapping(data)
    report = grade(bundle, _lab07_with_a_bug(), default_rubric("lab07"), Replay(), mlsysim_version=mlsysim_version(), grader_version="test")
    assert "grader_error" in report.flags and report.parts["C"].held

    result = {"input_hash": "ab" * 32, "origin": "json", **graded_result(report, bundle)}
    assert result["status"] == "regrade" and set(result["part_times"]) == set("ABCDE")
    rubrics = resolve_rubrics({})
    key = rubric_key(rubrics)
    row = make_row(candidate, result, key)
    assert row["status"] == "regrade" and row["score"] == report.score
    assert "grader_error" in row["flags"] and "ungradable" not in row["flags"]
    assert "C/grader: " in row["reasons"] and "staff will review this part" in row["reasons"]

    # A result stored before ``regrade`` existed said "graded"; its row is a regrade all the same.
    assert make_row(candidate, {**result, "status": "graded"}, key)["status"] == "regrade"

    with pytest.raises(AttributeError):
        row.flags = ()  # type: ignore[misc]  # a row is a frozen value
    out = tmp_path / "grades.csv"
    write_csv([row], out, columns_for(rubrics.values()))
    with open(out, newline="", encoding="utf-8") as handle:
        [written] = list(csv.DictReader(handle))
    assert written["status"] == "regrade" and "grader_error" in written["flags"].split(";")
    assert "staff will review this part" in written["reasons"]

    db = GradebookDB(tmp_path / "g.sqlite")
    try:
        db.store([result], "test", key)
        assert db.stored(result["input_hash"], "test", key)["status"] == "regrade"
        assert db.known_hashes("test", key) == frozenset(), "a regrade is graded again next run, never reused"
        assert db.record_run([row], "test", key) == []
        assert db.conn.execute("SELECT COUNT(*) FROM latest").fetchone() == (0,), "a provisional score is not remembered"
    finally:
        db.close()

    page = render_summary(GradebookResult(rows=[row], columns=columns_for(rubrics.values())))
    assert "regrade" in page and "staff will review this part" in page


class _Preparing(Replay):
    """A live replay that notes which labs each batch readied it for."""

    def __init__(self) -> None:
        super().__init__()
        self.readied: list[list[str] | None] = []

    def prepare(self, labs=None) -> None:
        self.readied.append(None if labs is None else list(labs))
        super().prepare(labs)


def test_a_batch_readies_only_the_labs_its_inputs_name_and_the_same_grades_come_out(tmp_path):
    """A folder of one lab's bundles loads that lab's evaluators once, before the workers fork (the others are never
    loaded); an input that names no lab readies every lab; a misleading name changes no grade."""
    folder = tmp_path / "subs"
    folder.mkdir()
    for seed in (1, 2):
        (folder / f"s{seed}.json").write_text(json.dumps(solved("lab07", "edge", seed)), encoding="utf-8")
    (folder / "lab02-looks-like.json").write_text(json.dumps(solved("lab11", "cloud", 3)), encoding="utf-8")
    replay = _Preparing()
    only = grade_paths([folder], BatchOptions(jobs=1, db=None), replay=replay)
    assert replay.readied == [["lab07", "lab11"]]  # by content: the third file holds Lab 11, whatever its name says
    assert [(row.lab, row.score) for row in only.rows] == [("lab11", 88), ("lab07", 88), ("lab07", 88)]
    (folder / "upload.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip names no lab: every lab is readied
    every = _Preparing()
    again = grade_paths([folder], BatchOptions(jobs=1, db=None), replay=every)
    assert every.readied == [None]
    assert [(row.lab, row.score) for row in again.rows if row.lab] == [(row.lab, row.score) for row in only.rows]


def test_a_submission_on_another_track_than_the_roster_assigns_reaches_the_review_queue(course, tmp_path):
    """Graded in full on its own track, a wrong-track submission is for staff to decide (it scored like any other, so
    without the queue staff saw it only by filtering final.csv)."""
    from mlsys_grader.course._review import build_queue

    root, manifest = course
    folder = root / "gradescope_export"
    track_of = {i: manifest[str(folder / f"submission_{9000 + i}")]["track"] for i in (3, 8)}
    other = next(t for t in ("tinyml", "mobile", "edge", "cloud") if t != track_of[3])
    roster = tmp_path / "roster.csv"
    roster.write_text(f"name,email,track\nStudent 3,student3@example.edu,{other}\n"
                      f"Student 8,student8@example.edu,{track_of[8]}\n", encoding="utf-8")
    db = tmp_path / "g.sqlite"
    grade_paths([folder], BatchOptions(jobs=1, db=str(db), roster=str(roster)))
    book = GradebookDB(db)
    try:
        queue = build_queue(book)
    finally:
        book.close()
    wrong = [e for e in queue if "flag.wrong_track" in e.codes]
    assert [e.student_name for e in wrong] == ["Student 3"]
    assert any(r.startswith("flag wrong_track: graded on another track") for r in wrong[0].reasons)
    assert wrong[0].at_stake > 0
