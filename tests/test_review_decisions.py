"""Staff review that spends staff time where the points are: one decision per submission, the queue ordered by what a
decision can move, imports that are all or nothing, and a page that trusts nothing it need not — on a real graded term
(tests/test_review.py's), real SQLite and the real page over loopback."""

from __future__ import annotations

import csv
import shutil
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import solved
from test_course_term import options, write
from test_review import CITES, RECOMMENDATION, digest, final_row, queue

from mlsys_grader.cli import EXIT_OK, EXIT_UNGRADABLE, main
from mlsys_grader.course import grade_paths
from mlsys_grader.course._migrations import SCHEMA_VERSION, backup_path, open_gradebook
from mlsys_grader.course._review import export_queue
from mlsys_grader.course._store import GradebookDB


def export(db: Path, out: Path) -> list[dict]:
    book = GradebookDB(db)
    try:
        export_queue(book, out)
    finally:
        book.close()
    return list(csv.DictReader(out.open(encoding="utf-8")))


# -- one decision per submission ------------------------------------------------------------

def test_confirming_is_one_decision_on_the_submission_and_a_resubmission_makes_it_one_stale_line(term, tmp_path, capsys):
    root, paths, db = term
    before = [e for e in queue(db) if (e.student, e.lab) == ("2001", "lab07")]
    assert before and len(before[0].items) > 1, "Ada's solve bundle: its rationale items are in question"
    assert main(["review", "--db", str(db), "--decide", "2001", "--lab", "lab07", "--confirm", "--by", "ta-rosa"]) == EXIT_OK
    assert "machine's verdict confirmed by ta-rosa" in capsys.readouterr().out
    assert not [e for e in queue(db) if (e.student, e.lab) == ("2001", "lab07")], "confirmed: out of the queue"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM overrides WHERE student = '2001'").fetchone() == (0,)
        assert conn.execute("SELECT verdict, by FROM decisions WHERE student = '2001'").fetchall() == [("confirm", "ta-rosa")]
    row = final_row(db, "2001", "lab07")
    assert row["decision"].startswith("machine's verdict confirmed by ta-rosa") and row["score"] == 88.0
    # Ada resubmits: the confirmation was for the old submission, and the queue says so in one line
    folder = tmp_path / "down"
    shutil.copytree(paths["down"], folder)
    write(folder / "gradescope_lab07" / "submission_101" / "lab07-submission.json", solved("lab07", "cloud", 31))
    grade_paths([folder], options(root, db))
    [entry] = [e for e in queue(db) if (e.student, e.lab) == ("2001", "lab07")]
    stale = [r for r in entry.reasons if r.startswith("stale")]
    assert len(stale) == 1 and stale[0].startswith("stale confirmation by ta-rosa"), entry.reasons
    main(["review", "--db", str(db), "--list"])
    [line] = [line for line in capsys.readouterr().out.splitlines() if " 2001 lab07:" in line]
    assert line.count("stale") == 1


def test_the_csv_queue_has_one_line_per_submission_to_confirm_and_import_takes_confirm(term, tmp_path):
    _, _, db = term
    lines = export(db, tmp_path / "queue.csv")
    whole = [line for line in lines if line["item"] == "*"]
    assert len(whole) == len({(line["student"], line["lab"]) for line in lines}), "one * line per submission"
    ada = next(line for line in whole if (line["student"], line["lab"]) == ("2001", "lab07"))
    ada["new_points"], ada["comment"] = "confirm", "template text: the flag stands"
    with (tmp_path / "decisions.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    assert main(["review", "--db", str(db), "--import", str(tmp_path / "decisions.csv"), "--by", "prof-k"]) == EXIT_OK
    assert final_row(db, "2001", "lab07")["decision"] == "machine's verdict confirmed by prof-k (" + \
        final_row(db, "2001", "lab07")["decision"].split("(", 1)[1]
    assert not [e for e in queue(db) if (e.student, e.lab) == ("2001", "lab07")]


def test_a_schema_4_gradebook_turns_per_item_confirmations_into_one_decision(term):
    _, _, db = term
    with sqlite3.connect(db) as conn:
        row = final_row(db, "2002", "lab07")
        made = [(k, v) for k, v in row.points.items() if row.item_max.get(k)]
        at = "2026-12-01T10:00:00+00:00"
        conn.executemany("INSERT INTO overrides (student, lab, input_hash, item, old_points, new_points, max_points, comment, by, at, reason) VALUES (?, ?, ?, ?, ?, ?, ?, '', 'ta-old', ?, 'flag generated')",
                         [("2002", "lab07", row.input_hash, k, v, v, row.item_max[k], at) for k, v in made])
        # a save in which staff changed one item: kept as item decisions
        conn.execute("INSERT INTO overrides (student, lab, input_hash, item, old_points, new_points, max_points, comment, by, at, reason) VALUES ('2003', 'lab07', ?, ?, 0, 1, 2, 'read it', 'ta-old', ?, 'uncertain')",
                     (final_row(db, "2003", "lab07").input_hash, RECOMMENDATION, at))
        conn.execute("INSERT INTO overrides (student, lab, input_hash, item, old_points, new_points, max_points, comment, by, at, reason) VALUES ('2003', 'lab07', ?, ?, 2, 2, 2, '', 'ta-old', ?, 'uncertain')",
                     (final_row(db, "2003", "lab07").input_hash, CITES, at))
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        conn.execute("DELETE FROM decisions")
    conn, migrated = open_gradebook(db)
    try:
        assert migrated == 4 and Path(backup_path(str(db), 4)).is_file()
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        assert conn.execute("SELECT student, verdict, by, at FROM decisions").fetchall() == [("2002", "confirm", "ta-old", at)]
        assert conn.execute("SELECT COUNT(*) FROM overrides WHERE student = '2002'").fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM overrides WHERE student = '2003'").fetchone() == (2,)
    finally:
        conn.close()


# -- what is at stake -------------------------------------------------------------------------

def test_a_generated_entry_has_every_rationale_point_at_stake_and_sorts_above_small_entries(term):
    _, _, db = term
    entries = queue(db)
    ada = next(e for e in entries if (e.student, e.lab) == ("2001", "lab07"))
    assert any(r.startswith("flag generated") for r in ada.reasons)
    row = final_row(db, "2001", "lab07")
    rationale_points = sum(v for k, v in row.item_max.items() if k.startswith("synthesis.") and v)
    assert ada.at_stake == rationale_points and rationale_points >= 12
    eve = next(e for e in entries if (e.student, e.lab) == ("2005", "lab07"))
    assert eve.at_stake == 2.0 and entries.index(ada) < entries.index(eve)


# -- imports are all or nothing -------------------------------------------------------------------

def _decisions_file(lines: list[dict], header: list[str], path: Path, mangle=None) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(lines)
    if mangle:
        path.write_text(mangle(path.read_text(encoding="utf-8")), encoding="utf-8")
    return path


@pytest.mark.parametrize("case, words", [
    ("open quote", "decisions.csv line"),
    ("open quote at the end", "not a well-formed CSV line"),
    ("extra field", "line 3: 13 field(s), the header has 12"),
    ("duplicate", "line 3: 2005 lab07 synthesis.rationale_names_recommendation is decided on line 2 too, with '2' there and '1' here"),
])
def test_a_malformed_decisions_file_is_refused_and_the_database_is_byte_identical(term, tmp_path, capsys, case, words):
    _, _, db = term
    lines = export(db, tmp_path / "queue.csv")
    header = list(lines[0])
    eve = [dict(line) for line in lines if (line["student"], line["lab"]) == ("2005", "lab07") and line["item"] != "*"]
    rec = next(line for line in eve if line["item"] == RECOMMENDATION)
    rows = [dict(rec, new_points="2", comment="fine"), dict(rec, new_points="2", comment="fine"),
            dict(rec, new_points="2", comment="fine")]
    mangle = None
    if case == "open quote":
        def mangle(text: str) -> str:  # a comment typed '"fine' on line 2, and one typed 'fine"' on line 4
            head, *lines = text.split("\n")
            lines[0] = lines[0].removesuffix(",fine") + ',"fine'
            lines[2] = lines[2].removesuffix(",fine") + ',fine"'
            return "\n".join([head, *lines])
    elif case == "open quote at the end":
        mangle = lambda text: text.rstrip("\n") + ',"never closed\n'  # noqa: E731
    elif case == "extra field":
        mangle = lambda text: text.replace("fine\n", "fine,surplus\n", 2).replace("fine,surplus\n", "fine\n", 1)  # noqa: E731
    else:
        rows[1]["new_points"] = "1"
    path = _decisions_file(rows, header, tmp_path / "decisions.csv", mangle)
    before = digest(db)
    assert main(["review", "--db", str(db), "--import", str(path)]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err
    assert words in err and ("quote" in err or case in ("extra field", "duplicate")), err
    assert digest(db) == before


def test_two_lines_with_the_same_decision_import_once(term, tmp_path):
    _, _, db = term
    lines = export(db, tmp_path / "queue.csv")
    rec = next(line for line in lines if (line["student"], line["lab"], line["item"]) == ("2005", "lab07", RECOMMENDATION))
    path = _decisions_file([dict(rec, new_points="2"), dict(rec, new_points="2")], list(lines[0]), tmp_path / "d.csv")
    assert main(["review", "--db", str(db), "--import", str(path), "--by", "ta"]) == EXIT_OK
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM overrides WHERE student = '2005'").fetchone() == (1,)


# -- the page trusts nothing it need not ------------------------------------------------------------

_OPENER = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
"""A browser's cookie jar: the page turns the token of its first URL into a cookie."""


def _post(url: str, fields: dict, headers: dict | None = None) -> tuple[int, str]:
    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST")
    try:
        with _OPENER.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _get(url: str, headers: dict | None = None) -> tuple[int, str]:
    try:
        with _OPENER.open(urllib.request.Request(url, headers=headers or {}), timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_page_answers_only_its_loopback_host_refuses_big_bodies_and_bad_numbers_and_names_staff_itself(term):
    pytest.importorskip("flask")
    from mlsys_grader.course._review_app import ReviewServer

    _, _, db = term
    with ReviewServer(db, by="ta-rosa") as server:
        token = server.token
        assert _get(server.url)[0] == 200
        port = server.base.rsplit(":", 1)[1]
        assert _get(server.url, {"Host": f"localhost:{port}"})[0] == 200
        status, body = _get(server.url, {"Host": f"evil.example:{port}"})
        assert status == 400 and "answers only to 127.0.0.1 or localhost" in body
        assert _get(server.url, {"Host": "127.0.0.1:1"})[0] == 400, "another port is another server"
        cookie = {"Cookie": f"mlsys_review={token}"}
        rebinding = {**cookie, "Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
        assert _post(f"{server.base}/decide", {"token": token, "number": "1"}, rebinding)[0] == 400
        before = digest(db)
        status, _ = _post(f"{server.base}/decide?token={token}", {"token": token, "number": "1", "comment": "x" * (80 * 1024)})
        assert status == 413 and digest(db) == before, "a 20 MiB form field is never stored"
        status, body = _post(f"{server.base}/decide?token={token}", {"token": token, "number": "abc"})
        assert status == 400 and "number: expected a whole number (got &#39;abc&#39;)" in body and "Traceback" not in body
        status, body = _post(f"{server.base}/decide?token={token}", {"token": token, "number": "1", "comment": "y" * 2001})
        assert status == 400 and "comment: at most 2,000 characters" in body
        book = GradebookDB(db)
        try:
            entries = [e for e in queue(db)]
            eve = next(i for i, e in enumerate(entries, 1) if (e.student, e.lab) == ("2005", "lab07"))
        finally:
            book.close()
        status, _ = _post(f"{server.base}/decide?token={token}",
                          {"token": token, "number": str(eve), "student": "2005", "lab": "lab07", "item": RECOMMENDATION,
                           f"points:{RECOMMENDATION}": "2", "comment": "reads as a recommendation", "by": "mallory",
                           "input_hash": final_row(db, "2005", "lab07")["input_hash"], "action": "save"})
        assert status in (200, 303)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT by FROM overrides WHERE student = '2005'").fetchall() == [("ta-rosa",)]


def test_a_save_says_what_changed_and_the_new_final(term):
    pytest.importorskip("flask")
    from mlsys_grader.course._review_app import ReviewServer

    _, _, db = term
    entries = queue(db)
    eve = next(i for i, e in enumerate(entries, 1) if (e.student, e.lab) == ("2005", "lab07"))
    with ReviewServer(db, by="ta-rosa") as server:
        status, body = _post(f"{server.base}/decide?token={server.token}",
                             {"token": server.token, "number": str(eve), "student": "2005", "lab": "lab07",
                              "item": RECOMMENDATION, f"points:{RECOMMENDATION}": "2", "comment": "ok",
                              "input_hash": final_row(db, "2005", "lab07")["input_hash"], "action": "save"})
    assert status == 200 and f"saved: {RECOMMENDATION} 0 → 2; final 98 → 100" in body


def test_a_quote_that_merges_decision_lines_is_refused_naming_them(tmp_path):
    """The lenient reading of a quote left open in a comment (closed lines later) merges the lines between into one
    decision: 1 of 3 stored, silently.  The strict reading refuses it, naming the lines."""
    from mlsys_grader.course._review import read_all_decisions
    from mlsys_grader.errors import DecisionError

    header = "student,student_name,lab,input_hash,item,machine_points,max_points,at_stake,why,new_points,comment"
    text = "\n".join([header, '2005,Eve,lab07,,synthesis.a,0,2,2,uncertain,2,"great work',
                      "2006,Fay,lab07,,synthesis.a,0,2,2,uncertain,1,ok", "2007,Gus,lab07,,synthesis.a,0,2,2,uncertain,2,fine\""])
    path = write(tmp_path / "decisions.csv", text + "\n")
    with pytest.raises(DecisionError) as caught:
        read_all_decisions(path)
    assert "decisions.csv lines 2-4 are read as one line: a quote opened on line 2 closes only on line 4" in str(caught.value)
    # a comment a spreadsheet saved over two lines is one cell, and imports
    path.write_text(header + '\n2005,Eve,lab07,,synthesis.a,0,2,2,uncertain,2,"first line\nsecond line"\n', encoding="utf-8")
    [decision] = read_all_decisions(path)[0]
    assert decision.comment == "first line\nsecond line"


def test_version_6_gives_each_override_stored_before_codes_the_code_of_its_reason(term):
    _, _, db = term
    at = "2026-12-01T10:00:00+00:00"
    reasons = {"A.captured": "flag collusion: shared times", "A.fresh": "uncertain: option named, no stance cue found",
               "A.contrast": "grader_error: points held", "B.captured": "", "B.fresh": "regrade request: look again"}
    with sqlite3.connect(db) as conn:
        conn.executemany("INSERT INTO overrides (student, lab, input_hash, item, old_points, new_points, max_points, "
                         "comment, by, at, reason) VALUES ('2002', 'lab07', 'h', ?, 1, 1, 3, '', 'ta-old', ?, ?)",
                         [(item, at, why) for item, why in reasons.items()])
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    conn, migrated = open_gradebook(db)
    try:
        assert migrated == 5
        codes = dict(conn.execute("SELECT item, code FROM overrides WHERE input_hash = 'h'").fetchall())
    finally:
        conn.close()
    assert codes == {"A.captured": "flag.collusion", "A.fresh": "uncertain.no_stance_cue", "A.contrast": "grader.error",
                     "B.captured": "", "B.fresh": "request.regrade"}
