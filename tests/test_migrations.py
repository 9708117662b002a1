"""A gradebook written by the previous release (schema 1) is upgraded in place: backup first, nothing regraded."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from conftest import solved

from mlsys_grader.course import BatchOptions, grade_paths
from mlsys_grader.course._ingest import Candidate
from mlsys_grader.course._migrations import SCHEMA_VERSION, backup_path, open_gradebook
from mlsys_grader.course._options import resolve_rubrics, rubric_key
from mlsys_grader.course._store import GradebookDB
from mlsys_grader.course._worker import grade_candidate
from mlsys_grader.errors import GraderError

# The DDL of course/_gradebook.py at 9612023 (schema_version 1), copied as it was: what a gradebook on disk holds today.
SCHEMA_1 = """
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS results (
        input_hash TEXT NOT NULL, grader_version TEXT NOT NULL, rubric_key TEXT NOT NULL,
        graded_at TEXT NOT NULL, result TEXT NOT NULL,
        PRIMARY KEY (input_hash, grader_version, rubric_key));
    CREATE TABLE IF NOT EXISTS latest (
        who TEXT NOT NULL, lab TEXT NOT NULL, path TEXT NOT NULL, input_hash TEXT NOT NULL,
        score REAL NOT NULL, grader_version TEXT NOT NULL, rubric_key TEXT NOT NULL, run_at TEXT NOT NULL,
        PRIMARY KEY (who, lab));
"""


def old_gradebook(db, folder):
    """A schema-1 gradebook holding the grades of ``folder``'s two inputs, as the previous release stored them, keyed by
    this grading code's build (a result another build stored is graded again: tests/test_gradebook.py)."""
    from mlsys_grader.course._build import grading_build

    good = folder / "ada" / "lab07-submission.json"
    good.parent.mkdir(parents=True)
    good.write_text(json.dumps(solved("lab07", "cloud")), encoding="utf-8")
    broken = folder / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    key = rubric_key(resolve_rubrics({}))
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_1)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    for path in (good, broken):
        result = grade_candidate(Candidate(str(path), "json", str(path)), resolve_rubrics({}))
        if result["status"] == "error":  # the previous release put the class name in front of the sentence
            result["reason"] = f"{result.pop('error_kind')}: {result['reason']}"
        conn.execute("INSERT INTO results VALUES (?, ?, ?, ?, ?)",
                     (result["input_hash"], grading_build(), key, "2026-11-30T10:00:00+00:00", json.dumps(result)))
    conn.execute("INSERT INTO latest VALUES (?, 'lab07', ?, ?, 88.0, ?, ?, '2026-11-30T10:00:00+00:00')",
                 (str(good), str(good), hashlib.sha256(good.read_bytes()).hexdigest(), grading_build(), key))
    conn.commit()
    conn.close()


def test_a_schema_1_gradebook_is_upgraded_in_place_with_a_backup_and_nothing_regraded(tmp_path):
    db, folder = tmp_path / "gradebook.sqlite", tmp_path / "subs"
    old_gradebook(db, folder)
    result = grade_paths([folder], BatchOptions(jobs=1, db=str(db)))
    assert result.migrated_from == 1
    assert (result.graded, result.reused) == (0, 2), "the stored grades are used as they are"
    with sqlite3.connect(backup_path(str(db), 1)) as backup:
        assert backup.execute("SELECT value FROM meta").fetchone() == ("1",)
        assert backup.execute("SELECT COUNT(*) FROM results").fetchone() == (2,)
        assert not backup.execute("SELECT 1 FROM sqlite_master WHERE name = 'final'").fetchone()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone() == (2,)
        good = str(folder / "ada" / "lab07-submission.json")  # no roster: a student is filed under the input's path
        bad = str(folder / "broken.json")  # unreadable, beside a Lab 07 submission: that student handed in Lab 07
        assert sorted(conn.execute("SELECT student, lab, status, score FROM final").fetchall()) == [
            (good, "lab07", "graded", 88.0), (bad, "lab07", "unreadable", 0.0)]
    broken = next(row for row in result.rows if row["path"].endswith("broken.json"))
    assert broken["error_kind"] == "BundleFormatError" and not broken["reasons"].startswith("BundleFormatError")
    again = grade_paths([folder], BatchOptions(jobs=1, db=str(db)))
    assert again.migrated_from is None and again.graded == 0


def test_a_failed_migration_leaves_the_gradebook_as_it_was(tmp_path, monkeypatch):
    """A step that fails rolls back: the old schema is intact and still says version 1."""
    from mlsys_grader.course import _migrations

    db = tmp_path / "g.sqlite"
    old_gradebook(db, tmp_path / "subs")

    def broken_step(conn):
        conn.execute("CREATE TABLE final (x)")
        raise sqlite3.OperationalError("disk full (simulated)")

    monkeypatch.setitem(_migrations.MIGRATIONS, 1, broken_step)
    with pytest.raises(sqlite3.OperationalError):
        open_gradebook(db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta").fetchone() == ("1",)
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'final'").fetchone()


def test_a_gradebook_from_a_later_release_is_refused_with_the_versions(tmp_path):
    db = tmp_path / "g.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(SCHEMA_1)
        conn.execute("INSERT INTO meta VALUES ('schema_version', '9')")
    with pytest.raises(GraderError, match=r"schema_version 9, written by a later release; this release reads versions 1 to " + str(SCHEMA_VERSION)):
        open_gradebook(db)


# -- a gradebook the previous release wrote (ce628ae: results without their report, final rows with joined flags) ----
ROOT = Path(__file__).resolve().parents[1]
OLD_GRADEBOOK = Path(__file__).parent / "fixtures" / "gradebook-ce628ae.sqlite"
"""``mlsys-grader grade`` at ce628ae on three shipped examples (lab07-cloud, its edited-number copy, lab11-edge)."""


def test_a_gradebook_of_the_previous_release_loads_and_its_results_are_graded_again(tmp_path):
    import shutil

    from mlsys_grader.course._lms import export_lms
    from mlsys_grader.course._store import GradebookDB

    db = tmp_path / "gradebook.sqlite"
    shutil.copyfile(OLD_GRADEBOOK, db)
    book = GradebookDB(db)
    try:
        final = book.final()
        assert len(final) == 3 and all(isinstance(row.flags, tuple) for row in final)
        edited = next(row for row in final if row.path.endswith("lab07-cloud-edited-number.json"))
        assert "integrity" in edited.flags and edited["flags"] == ";".join(edited.flags)
        stored = [book.result(row.input_hash) for row in final]
        assert all(result is not None and "report" not in result and result["items"] for result in stored)
    finally:
        book.close()
    export_lms(db, "generic", tmp_path / "grades.csv")
    lines = (tmp_path / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert sorted(line.split(",")[:3] for line in lines[1:]) == [
        ["subs/lab07-cloud-edited-number.json", "lab07", "84.0"], ["subs/lab07-cloud.json", "lab07", "100.0"],
        ["subs/lab11-edge.json", "lab11", "100.0"]]  # the final rows as that release stored them
    folder = tmp_path / "subs"
    folder.mkdir()
    for name in ("lab07-cloud.json", "lab07-cloud-edited-number.json", "lab11-edge.json"):
        shutil.copyfile(ROOT / "examples" / "submissions" / name, folder / name)
    again = grade_paths([folder], BatchOptions(jobs=1, db=str(db)))
    assert (again.graded, again.reused) == (3, 0), "a result stored without its report is graded again"
    third = grade_paths([folder], BatchOptions(jobs=1, db=str(db)))
    assert (third.graded, third.reused) == (0, 3)


def test_a_schema_5_gradebook_gets_its_rows_flags_as_lists_and_reads_the_same(tmp_path):
    """Rows stored before the flag list existed held the flags only as the CSV cell; version 6 writes the list, so the
    reader never splits a flag cell again."""
    db, folder = tmp_path / "gradebook.sqlite", tmp_path / "subs"
    old_gradebook(db, folder)
    grade_paths([folder], BatchOptions(jobs=1, db=str(db)))  # now at this release's schema, with final rows
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT rowid, row FROM final ORDER BY rowid").fetchall()
        for index, (rowid, text) in enumerate(stored):  # as a release before the list wrote them: the cell only
            row = json.loads(text)
            row.pop("_flags", None)
            row["flags"] = "collusion;generated" if index == 0 else row.get("flags", "")
            conn.execute("UPDATE final SET row = ? WHERE rowid = ?", (json.dumps(row), rowid))
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    book = GradebookDB(db)
    try:
        assert book.migrated_from == 5
        assert next(row.flags for row in book.final()) == ("collusion", "generated")
        assert all("_flags" in json.loads(text) for (text,) in book.conn.execute("SELECT row FROM final"))
    finally:
        book.close()
