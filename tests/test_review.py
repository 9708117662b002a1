"""Staff review: the queue computed from the gradebook, overrides that last, the CSV round trip (course/_review.py,
course/_overrides.py), all on a real graded course term (tests/test_course_term.py's folder)."""

from __future__ import annotations

import copy
import csv
import hashlib
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import reseal, solved
from test_course_term import build_term, options, write

from mlsys_grader.cli import EXIT_OK, EXIT_UNGRADABLE, main
from mlsys_grader.course import grade_paths
from mlsys_grader.course._feedback import write_feedback
from mlsys_grader.course._lms import export_lms
from mlsys_grader.course._review import (
    Decision,
    DecisionError,
    add_request,
    agreement,
    apply_decisions,
    build_queue,
    export_queue,
    import_decisions,
)
from mlsys_grader.course._store import GradebookDB
from mlsys_grader.labs import rubric_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from course import clean_student  # (benchmarks/course.py: honest students in their own words)

RECOMMENDATION = "synthesis.rationale_names_recommendation"
CITES = "synthesis.rationale_cites_evidence"
HEDGED = ("I recommend compiled execution with fusion rather than compilation alone.",
          "Compiled execution with fusion, compared with compilation alone; I would not rely on a model blindly.")
"""Without "I recommend", the reader finds the option but no stance cue; the rejection later in the text would imply it,
but a first-person refusal the reader cannot place forbids that, so it is not sure."""


def uncertain_bundle() -> dict:
    _, bundle = clean_student(0)
    data = copy.deepcopy(bundle)
    data["synthesis"]["rationale"] = data["synthesis"]["rationale"].replace(*HEDGED)
    return reseal(data)


def build_review_term(root: Path) -> dict[str, Path]:
    paths = build_term(root)
    write(paths["eve07"], uncertain_bundle())  # Eve's lab07: an honest rationale the reader is unsure of
    return paths


def final_row(db: Path, student: str, lab: str) -> dict:
    book = GradebookDB(db)
    try:
        [row] = [r for r in book.final() if r["student"] == student and r["lab"] == lab]
    finally:
        book.close()
    return row


def decide(db: Path, *decisions: Decision, by: str = "ta-rosa"):
    book = GradebookDB(db)
    try:
        return apply_decisions(book, decisions, by)
    finally:
        book.close()


def queue(db: Path, **kw):
    book = GradebookDB(db)
    try:
        return build_queue(book, **kw)
    finally:
        book.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_uncertain_item_is_queued_with_its_reason_and_the_points_at_stake(term):
    _, _, db = term
    entries = queue(db)
    eve = next(e for e in entries if (e.student, e.lab) == ("2005", "lab07"))
    assert f"uncertain {RECOMMENDATION}: option named, no stance cue found" in eve.reasons
    item = next(i for i in eve.items if i.column == RECOMMENDATION)
    assert (item.points, item.max_points, item.decision) == (0.0, 2.0, None)
    assert eve.at_stake == 2.0
    ada = next(e for e in entries if (e.student, e.lab) == ("2001", "lab07"))
    assert ada.reasons == ("flag generated: the rationale is, or holds sentences of, the grader's own template",), "the template rationale is flagged"
    assert [e.at_stake for e in entries] == sorted((e.at_stake for e in entries), reverse=True), "most points at stake first"
    assert not any(e.student == "2007" for e in entries), "a student without a submission has nothing to review"


def test_override_applies_after_the_machine_score_and_before_the_late_penalty_in_every_output(term, tmp_path):
    _, _, db = term
    before = final_row(db, "2002", "lab07")
    assert (before["raw_score"], before["late_penalty"], before["score"]) == (88.0, 17.6, 70.4)
    [made] = decide(db, Decision("2002", "lab07", CITES, 4.0, "cites 8.99 ms from part B in the second sentence"))
    assert (made.old_points, made.new_points, made.max_points, made.by) == (0.0, 4.0, 4.0, "ta-rosa")
    row = final_row(db, "2002", "lab07")
    assert (row["machine_score"], row["raw_score"], row["late_penalty"], row["score"]) == (88.0, 92.0, 18.4, 73.6)
    assert row["overrides"] == f"{CITES} 0->4 by ta-rosa (cites 8.99 ms from part B in the second sentence)"
    export_lms(db, "canvas", tmp_path / "canvas.csv")
    lines = list(csv.reader((tmp_path / "canvas.csv").open(encoding="utf-8")))
    assert next(line for line in lines if line[2] == "SIS2002")[5] == "73.6"
    export_lms(db, "generic", tmp_path / "generic.csv")
    generic = next(line for line in csv.reader((tmp_path / "generic.csv").open(encoding="utf-8")) if line[:2] == ["2002", "lab07"])
    assert generic[2:5] == ["73.6", "92.0", "18.4"] and "override" in generic[6]
    pages = write_feedback(db, tmp_path / "fb", release=True)
    page = next(Path(p) for p in pages.files if Path(p).name == "2002-lab07.html").read_text(encoding="utf-8")
    assert "73.6" in page and "cites 8.99 ms from part B in the second sentence" in page
    book = GradebookDB(db)
    try:
        logged = [e for e in book.change_log() if e["kind"] == "override"]
    finally:
        book.close()
    assert len(logged) == 1 and logged[0]["by"] == "ta-rosa" and logged[0]["old_score"] == 70.4
    assert logged[0]["reason"].startswith(f"{CITES} 0 -> 4")


def test_overrides_survive_a_rerun_a_rubric_change_and_a_new_process(term, tmp_path):
    root, paths, db = term
    decide(db, Decision("2005", "lab07", RECOMMENDATION, 2.0, "recommends it plainly", reason="uncertain: no stance cue"))
    rerun = grade_paths([paths["down"]], options(root, db))
    [eve] = [r for r in rerun.final if (r["student"], r["lab"]) == ("2005", "lab07")]
    assert (eve["machine_score"], eve["score"]) == (98.0, 100.0), "a rerun keeps the override"
    assert rerun.write_final(tmp_path / "final.csv") == len(rerun.final)
    line = next(r for r in csv.DictReader((tmp_path / "final.csv").open(encoding="utf-8")) if r["student"] == "2005"
                and r["lab"] == "lab07")
    assert (line["score"], line["machine_score"]) == ("100.0", "98.0") and "recommends it plainly" in line["overrides"]
    shipped = rubric_text("lab07")
    rubric = tmp_path / "lab07.toml"
    rubric.write_text(shipped.replace("rationale_names_trigger = 1", "rationale_names_trigger = 3"), encoding="utf-8")
    changed = grade_paths([paths["down"]], options(root, db, rubrics={"lab07": str(rubric)}))
    [eve] = [r for r in changed.final if (r["student"], r["lab"]) == ("2005", "lab07")]
    assert (eve["machine_score"], eve["score"], eve["stale_overrides"]) == (100.0, 102.0, ""), \
        "a rubric change regrades the machine part; the override stands on top"
    assert main(["review", "--db", str(db), "--list"]) == EXIT_OK  # a new process would read the same table
    assert final_row(db, "2005", "lab07")["score"] == 102.0
    assert not any(e.student == "2005" and e.lab == "lab07" for e in queue(db)), "decided: out of the queue"


def test_a_lowered_maximum_makes_the_override_stale_not_clamped(term, tmp_path):
    root, paths, db = term
    decide(db, Decision("2005", "lab07", RECOMMENDATION, 2.0, "recommends it"))
    shipped = rubric_text("lab07")
    lowered = shipped.replace("rationale_names_recommendation = 2", "rationale_names_recommendation = 1")
    assert lowered != shipped
    rubric = tmp_path / "lab07.toml"
    rubric.write_text(lowered, encoding="utf-8")
    result = grade_paths([paths["down"]], options(root, db, rubrics={"lab07": str(rubric)}))
    [eve] = [r for r in result.final if (r["student"], r["lab"]) == ("2005", "lab07")]
    assert eve["score"] == eve["machine_score"], "not applied, not clamped to the new maximum"
    assert "maximum was lowered from 2 to 1" in eve["stale_overrides"]
    [entry] = [e for e in queue(db) if (e.student, e.lab) == ("2005", "lab07")]
    assert any("stale override" in r and "maximum was lowered" in r for r in entry.reasons)


def test_a_resubmission_makes_the_override_stale_and_shows_it_for_re_review(term):
    root, paths, db = term
    decide(db, Decision("2002", "lab07", CITES, 4.0, "cites it"))
    submission = paths["gs"] / "submission_102" / "lab07-submission.json"
    original = submission.read_bytes()
    try:
        write(submission, solved("lab07", "edge", 22))  # Bo uploads again: another file, another hash
        result = grade_paths([paths["down"]], options(root, db))
    finally:
        submission.write_bytes(original)
    [bo] = [r for r in result.final if (r["student"], r["lab"]) == ("2002", "lab07")]
    assert (bo["raw_score"], bo["score"]) == (bo["machine_score"], 70.4) and bo["overrides"] == ""
    assert "made for submission" in bo["stale_overrides"] and "the submission that counts is now" in bo["stale_overrides"]
    [entry] = [e for e in queue(db) if (e.student, e.lab) == ("2002", "lab07")]
    assert any(r.startswith(f"stale override {CITES} 4 by ta-rosa: made for submission") for r in entry.reasons)


def test_decisions_out_of_range_or_for_unknown_students_and_items_are_refused_and_nothing_is_stored(term):
    _, _, db = term
    before = digest(db)
    with pytest.raises(DecisionError) as caught:
        decide(db, Decision("2002", "lab07", CITES, 5.0), Decision("9999", "lab07", CITES, 1.0),
               Decision("2002", "lab07", "synthesis.charm", 1.0), Decision("2002", "lab11", CITES, 1.0),
               Decision("2005", "lab07", RECOMMENDATION, 2.0))
    assert caught.value.problems == (
        f"{CITES}: points must be 0..4 (got 5)", "unknown student '9999'",
        f"unknown rubric item 'synthesis.charm' for lab07 (expected one of {', '.join(final_row(db, '2002', 'lab07').points)})",
        "2002 has no submission of lab11 to override")
    assert digest(db) == before, "the valid fifth decision was not stored either"


def fill(exported: Path, out: Path, decisions: dict[tuple[str, str, str], tuple[str, str]], *, spreadsheet: bool = True) -> None:
    """Fill ``new_points`` and ``comment`` for (student, item) and save as a spreadsheet does: BOM, CRLF, every field
    quoted, blank lines at the end."""
    rows = list(csv.DictReader(exported.open(encoding="utf-8", newline="")))
    for row in rows:
        if (row["student"], row["lab"], row["item"]) in decisions:
            row["new_points"], row["comment"] = decisions[(row["student"], row["lab"], row["item"])]
    with out.open("w", encoding="utf-8-sig" if spreadsheet else "utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        writer.writeheader()
        writer.writerows(rows)
        handle.write("\r\n\r\n,,,,,,,,,,\r\n")


def test_the_csv_round_trip_imports_a_file_saved_by_a_spreadsheet(term, tmp_path):
    _, _, db = term
    book = GradebookDB(db)
    try:
        lines = export_queue(book, tmp_path / "queue.csv")
    finally:
        book.close()
    exported = list(csv.DictReader((tmp_path / "queue.csv").open(encoding="utf-8")))
    assert len(exported) == lines and {"student", "item", "machine_points", "max_points", "why", "new_points"} <= set(exported[0])
    eve = next(r for r in exported if (r["student"], r["lab"], r["item"]) == ("2005", "lab07", RECOMMENDATION))
    assert eve["why"] == "uncertain: option named, no stance cue found" and eve["new_points"] == ""
    fill(tmp_path / "queue.csv", tmp_path / "decisions.csv",
         {("2005", "lab07", RECOMMENDATION): ("2", 'says "compiled execution with fusion, compared with",\nthat is the pick'),
          ("2001", "lab07", CITES): ("0", "template")})
    raw = (tmp_path / "decisions.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
    assert main(["review", "--db", str(db), "--import", str(tmp_path / "decisions.csv"), "--by", "prof-k"]) == EXIT_OK
    row = final_row(db, "2005", "lab07")
    assert row["score"] == 100.0 and 'says "compiled execution with fusion, compared with",\nthat is the pick' in row["overrides"]
    assert final_row(db, "2001", "lab07")["overrides"] == f"{CITES} confirmed by prof-k (template)"
    book = GradebookDB(db)
    try:
        figures = agreement(book)
    finally:
        book.close()
    assert (RECOMMENDATION, "uncertain.no_stance_cue", 1, 1) in figures and (CITES, "flag.generated", 1, 0) in figures


def test_a_decisions_file_with_any_bad_line_imports_nothing_and_names_every_line(term, tmp_path, capsys):
    _, _, db = term
    book = GradebookDB(db)
    try:
        export_queue(book, tmp_path / "queue.csv")
    finally:
        book.close()
    rows = list(csv.DictReader((tmp_path / "queue.csv").open(encoding="utf-8")))
    header = list(rows[0])
    good = next(r for r in rows if (r["student"], r["lab"], r["item"]) == ("2005", "lab07", RECOMMENDATION))
    bad = [dict(good, new_points="2"),                                # line 2: fine
           dict(good, student="2099", new_points="1"),                # line 3: unknown student
           dict(good, item="synthesis.charm", new_points="1"),        # line 4: unknown item
           dict(good, item=CITES, new_points="7"),                    # line 5: out of range
           dict(good, input_hash="0" * 64, new_points="1"),           # line 6: stale submission
           dict(good, new_points="two")]                              # line 7: not a number
    with (tmp_path / "bad.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(bad)
    before = digest(db)
    assert main(["review", "--db", str(db), "--import", str(tmp_path / "bad.csv")]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err
    assert "bad.csv line 7: new_points must be a number (got 'two')" in err
    (tmp_path / "bad.csv").write_text("\n".join((tmp_path / "bad.csv").read_text().splitlines()[:-1]) + "\n")
    assert main(["review", "--db", str(db), "--import", str(tmp_path / "bad.csv")]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err
    assert "4 problems, nothing imported" in err
    assert "bad.csv line 3: unknown student '2099'" in err
    assert "bad.csv line 4: unknown rubric item 'synthesis.charm' for lab07" in err
    assert f"bad.csv line 5: {CITES}: points must be 0.." in err and "(got 7)" in err
    assert "bad.csv line 6: stale submission hash 000000000000 for 2005 lab07" in err
    assert "line 2" not in err
    assert digest(db) == before, "a failed import leaves the database byte for byte as it was"


def test_a_corrupt_or_later_gradebook_gets_one_clear_message(tmp_path, capsys):
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"this is not a database, it was a spreadsheet once" * 100)
    assert main(["review", "--db", str(broken), "--list"]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"mlsys-grader review: {broken} is not a readable mlsys-grader gradebook (SQLite: file is not a database); "
                   "restore it from a backup or grade into a new --db"]
    later = tmp_path / "later.sqlite"
    with sqlite3.connect(later) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '9')")
    before = digest(later)
    assert main(["review", "--db", str(later), "--import", str(tmp_path / "none.csv")]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "schema_version 9, written by a later release" in err[0]
    assert digest(later) == before


def test_a_regrade_request_entered_by_staff_is_queued_and_logged(term, capsys):
    _, _, db = term
    assert main(["review", "--db", str(db), "--request", "bo@u.edu", "--lab", "lab07", "--item", CITES,
                 "--reason", "I cite 14.24 ms eager in the second sentence", "--by", "ta-rosa"]) == EXIT_OK
    [entry] = [e for e in queue(db) if (e.student, e.lab) == ("2002", "lab07")]
    assert any(r.startswith(f"regrade request on {CITES}") and r.endswith("I cite 14.24 ms eager in the second sentence")
               for r in entry.reasons)
    assert main(["review", "--db", str(db), "--request", "nobody@u.edu", "--lab", "lab07", "--reason", "x"]) == EXIT_UNGRADABLE
    assert "unknown student 'nobody@u.edu' for lab 'lab07'" in capsys.readouterr().err
    book = GradebookDB(db)
    try:
        with pytest.raises(DecisionError, match=r"unknown rubric item 'A\.charm'"):
            add_request(book, "2002", "lab07", "why", item="A.charm")
        assert [e["kind"] for e in book.change_log()].count("regrade_request") == 1
    finally:
        book.close()


def test_a_version_2_gradebook_keeps_its_rows_and_gains_the_review_tables(term):
    _, _, db = term
    decide(db, Decision("2002", "lab07", CITES, 4.0, "cites it"))
    with sqlite3.connect(db) as conn:  # back to what the previous release wrote
        conn.execute("DROP TABLE overrides")
        conn.execute("DROP TABLE regrade_requests")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    book = GradebookDB(db)
    try:
        assert book.migrated_from == 2
        assert book.conn.execute("SELECT count(*) FROM overrides").fetchone() == (0,)
        assert any(e["kind"] == "override" for e in book.change_log()), "the change log is carried"
    finally:
        book.close()
    assert import_decisions is not None


def test_the_html_summary_shows_the_overrides_and_how_often_staff_changed_the_readers_verdict(term):
    from mlsys_grader.course import render_summary

    root, paths, db = term
    decide(db, Decision("2005", "lab07", RECOMMENDATION, 2.0, "<b>recommends</b> it", reason="uncertain: no stance cue",
                        code="uncertain.no_stance_cue"),
           Decision("2001", "lab07", CITES, None, "template", reason="flag generated: the grader's template",
                    code="flag.generated"),
           Decision("2002", "lab07", CITES, None, "", reason="flag generated: the grader's template", code="flag.generated"))
    result = grade_paths([paths["down"]], options(root, db))
    assert result.agreement == [(CITES, "flag.generated", 2, 0), (RECOMMENDATION, "uncertain.no_stance_cue", 1, 1)]
    page = render_summary(result)
    assert "How often staff changed the reader&#39;s verdict" in page or "How often staff changed the reader's verdict" in page
    agreement = page[page.index('class="agreement"'):page.index("</table>", page.index('class="agreement"'))]
    assert f"<td>{CITES}</td><td class=\"num\">2</td><td class=\"num\">0</td><td>0%</td>" in agreement
    assert f"<td>{RECOMMENDATION}</td><td class=\"num\">1</td><td class=\"num\">1</td><td>100%</td>" in agreement
    overrides = page[page.index('class="overrides"'):]
    assert "&lt;b&gt;recommends&lt;/b&gt; it" in overrides and "<b>recommends" not in page


def test_an_override_on_every_held_item_resolves_a_grader_error(tmp_path):
    """A check that fails for real (tests/test_held.py's injection) holds the rationale items; staff score them."""
    from test_held import _failing, _grade, _honest

    from mlsys_grader.core.models import bundle_from_mapping
    from mlsys_grader.course._final import build_final
    from mlsys_grader.course._gradebook import make_row
    from mlsys_grader.course._ingest import Candidate
    from mlsys_grader.course._worker import graded_result

    data = _honest("lab11")
    report = _grade("lab11", data, _failing("check_rationale"))
    result = {"input_hash": "cd" * 32, "origin": "bundle", **graded_result(report, bundle_from_mapping(data))}
    row = make_row(Candidate(source=str(tmp_path / "held.json"), kind="json", root=str(tmp_path), primary=str(tmp_path / "held.json")), result, "key")
    db_path = tmp_path / "g.sqlite"
    book = GradebookDB(db_path)
    try:
        book.write_final(build_final([row], None, ["lab11"], {"lab11": 100.0}))
        [held] = book.final()
        assert held["status"] == "regrade" and len(held.held) == 6
        [entry] = build_queue(book)
        assert entry.reasons[0].startswith("grader_error: points held on synthesis.rationale_length")
        assert entry.at_stake == sum(held.item_max[c] for c in held.held)
        student = held["student"]
        apply_decisions(book, [Decision(student, "lab11", c, held.item_max[c], "read by hand") for c in held.held[:-1]], "ta")
        assert book.final()[0]["status"] == "regrade", "one held item left"
        apply_decisions(book, [Decision(student, "lab11", held.held[-1], 0.0, "no trigger")], "ta")
        [done] = book.final()
        assert done["status"] == "graded" and "held items scored by staff" in done["rule"]
        assert done["score"] == held["machine_score"] + sum(held.item_max[c] for c in held.held[:-1])
        assert build_queue(book) == []
    finally:
        book.close()


def test_an_item_removed_from_the_rubric_makes_its_override_stale(term, tmp_path):
    root, paths, db = term
    trigger = "synthesis.rationale_names_trigger"
    decide(db, Decision("2005", "lab07", trigger, 0.0, "the trigger has no condition"))
    assert final_row(db, "2005", "lab07")["score"] == 97.0
    shipped = rubric_text("lab07")
    rubric = tmp_path / "lab07.toml"
    rubric.write_text(shipped.replace("rationale_names_trigger = 1\n", ""), encoding="utf-8")
    result = grade_paths([paths["down"]], options(root, db, rubrics={"lab07": str(rubric)}))
    [eve] = [r for r in result.final if (r["student"], r["lab"]) == ("2005", "lab07")]
    assert eve["score"] == eve["machine_score"] and eve["overrides"] == ""
    assert eve["stale_overrides"] == (f"{trigger} 0 by ta-rosa: rubric item {trigger} is no longer in the rubric")


def test_decide_code_decides_every_open_item_of_that_code_and_nothing_else(term, capsys):
    root, paths, db = term
    before = queue(db)
    codes = {code for entry in before for code in entry.codes}
    assert "flag.generated" in codes and "uncertain.no_stance_cue" in codes, codes
    generated = [e for e in before if "flag.generated" in e.codes]
    others = {(e.student, e.lab): e.items for e in before if "flag.generated" not in e.codes}
    assert len(generated) >= 2
    assert main(["review", "--db", str(db), "--codes"]) == EXIT_OK
    assert f"flag.generated: {len(generated)} entries" in capsys.readouterr().out
    assert main(["review", "--db", str(db), "--list", "--code", "flag.generated"]) == EXIT_OK
    assert f"{len(generated)} submission(s) to review" in capsys.readouterr().out

    assert main(["review", "--db", str(db), "--decide-code", "flag.generated", "--confirm", "--reason",
                 "the template is flagged, its points stand", "--by", "ta-rosa"]) == EXIT_OK
    assert f"for {len(generated)} submission(s)" in capsys.readouterr().out
    after = queue(db)
    assert not any("flag.generated" in e.codes for e in after), "every entry of the code is decided"
    assert {(e.student, e.lab): e.items for e in after} == others, "and nothing else"
    book = GradebookDB(db)
    try:
        decided = book.conn.execute('SELECT student, lab, input_hash, "by" FROM overrides').fetchall()
        logged = book.conn.execute("SELECT COUNT(*) FROM change_log WHERE kind = 'override'").fetchone()[0]
    finally:
        book.close()
    assert {(s, lab) for s, lab, _, _ in decided} == {(e.student, e.lab) for e in generated}
    assert all(h and who == "ta-rosa" for _, _, h, who in decided), "recorded per submission, with who decided"
    assert logged == len(decided), "each decision is in the change log"

    # a resubmission makes exactly that student's decision stale
    first = generated[0]
    [path] = [p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in (".json", ".ipynb", ".zip")
              and digest(p) == first.input_hash]
    original = path.read_bytes()
    try:
        write(path, solved(first.lab, "edge", 31))
        grade_paths([paths["down"]], options(root, db))
    finally:
        path.write_bytes(original)
    stale = [e for e in queue(db) if e.stale]
    assert [(e.student, e.lab) for e in stale] == [(first.student, first.lab)]


def test_decide_code_refuses_an_unknown_code_a_missing_reason_and_stores_nothing(term, capsys):
    _, _, db = term
    assert main(["review", "--db", str(db), "--decide-code", "uncertain.nothing_like_it", "--confirm", "--reason", "x"]) \
        == EXIT_UNGRADABLE
    assert "no open item has this code" in capsys.readouterr().err
    assert main(["review", "--db", str(db), "--decide-code", "flag.generated", "--full"]) == EXIT_UNGRADABLE
    assert "give the reason" in capsys.readouterr().err
    assert main(["review", "--db", str(db), "--decide-code", "flag.generated", "--reason", "x"]) == 2
    book = GradebookDB(db)
    try:
        assert book.conn.execute("SELECT COUNT(*) FROM overrides").fetchone() == (0,)
    finally:
        book.close()
