"""The command line: documented exit codes, clear one-line errors, and the same verdicts as the API."""

from __future__ import annotations

import csv
import json
import os
import sys

import pytest
from conftest import FIXTURES, LABS, reseal, solved

from mlsys_grader import grade_file, load_bundle
from mlsys_grader.cli import EXIT_OK, EXIT_UNGRADABLE, EXIT_USAGE, main


def test_solve_then_check_gives_every_evidence_point_and_flags_the_template(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["solve", "--lab", "lab11", "--track", "mobile", "--seed", "9", "-o", str(out)]) == EXIT_OK
    bundle = load_bundle(out.read_bytes())
    assert (bundle.lab, bundle.track) == ("lab11", "mobile")
    capsys.readouterr()
    assert main(["check", str(out), "--json", "--all"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert (report["score"], report["max_score"], report["flags"]) == (88, 100, ["generated"])
    assert [(f["part"], f["criterion"]) for f in report["findings"]] == [("synthesis", "generated")]


def test_check_prints_the_public_report_in_words(capsys):
    path = FIXTURES / "scenarios" / "stale-part-d-after-c-recapture.json"
    assert main(["check", str(path)]) == EXIT_OK
    text = capsys.readouterr().out
    assert "[D] stale: Part D's evidence no longer matches your final settings" in text
    public = grade_file(path).public()
    assert f"score {public.score:g} / {public.max_score:g}" in text


def test_unreadable_submission_exits_1_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 4, "lab": "lab07", "track": "edge"}')
    assert main(["check", str(bad)]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mlsys-grader: cannot grade: bundle schema_version 4 is not supported; this release reads schema_version 3 and upgrades 1 and 2"]


def test_unknown_lab_and_track_are_clear(tmp_path, capsys):
    for lab, track, fragment in (("lab99", "edge", "unknown lab 'lab99'"), ("lab07", "moon", "unknown track 'moon' for lab07")):
        path = tmp_path / f"{lab}-{track}.json"
        path.write_text(json.dumps({"schema_version": 1, "lab": lab, "track": track}))
        assert main(["check", str(path)]) == EXIT_UNGRADABLE
        assert fragment in capsys.readouterr().err


def test_usage_errors_exit_2(capsys):
    assert main(["bogus"]) == EXIT_USAGE
    assert main(["solve", "--lab", "lab07", "--track", "moon", "-o", "x.json"]) == EXIT_USAGE
    assert "invalid choice" in capsys.readouterr().err


def test_schema_is_the_bundle_json_schema(capsys):
    assert main(["schema"]) == EXIT_OK
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["schema_version"]["const"] == 3
    assert {"lab", "track"} <= set(schema["required"])
    assert "EvidenceRecord" in schema["$defs"]


def test_grade_writes_one_row_per_input_and_never_stops(tmp_path, capsys):
    folder = tmp_path / "subs"
    folder.mkdir()
    for lab in LABS:
        assert main(["solve", "--lab", lab, "--track", "edge", "--seed", "2", "-o", str(folder / f"{lab}.json")]) == EXIT_OK
    (folder / "broken.json").write_text("{not json")
    out = tmp_path / "grades.csv"
    assert main(["grade", str(folder), "-o", str(out), "--no-db", "--jobs", "1", "-q"]) == EXIT_OK
    rows = {row["path"].rsplit("/", 1)[-1]: row for row in csv.DictReader(out.open())}
    assert set(rows) == {f"{lab}.json" for lab in LABS} | {"broken.json"}
    assert {float(rows[f"{lab}.json"]["score"]) for lab in LABS} == {88}  # solve's template rationale
    assert {rows[f"{lab}.json"]["flags"] for lab in LABS} == {"generated"}
    assert float(rows["broken.json"]["score"]) == 0 and "not valid JSON" in rows["broken.json"]["reasons"]


# -- staff commands are not a student's -----------------------------------------------------------------
def _commands(parser) -> list[str]:
    return [name for action in parser._subparsers._group_actions for name in action.choices]


def test_the_staff_commands_are_registered_only_where_the_staff_package_is_installed():
    from mlsys_grader.cli import STAFF_COMMANDS, STUDENT_COMMANDS, build_parser, staff_installed

    assert staff_installed()  # the tests run in a staff install
    assert _commands(build_parser()) == _commands(build_parser(staff=True)) == [*STUDENT_COMMANDS, *STAFF_COMMANDS]
    assert _commands(build_parser(staff=False)) == list(STUDENT_COMMANDS) == ["check", "schema", "rubric", "ledger"]
    assert "solve" in STAFF_COMMANDS and "kit" in STAFF_COMMANDS and "grade" in STAFF_COMMANDS


def test_a_student_install_says_in_one_line_that_solve_is_a_staff_command(monkeypatch, capsys, tmp_path):
    """The student build (no ``mlsys_grader.staff``) refuses ``solve`` with exit 2 and writes nothing."""
    from mlsys_grader import cli

    monkeypatch.setattr(cli, "staff_installed", lambda: False)
    out = tmp_path / "b.json"
    assert main(["solve", "--lab", "lab07", "--track", "cloud", "-o", str(out)]) == EXIT_USAGE
    assert capsys.readouterr().err == ("mlsys-grader: `solve` is a course-staff command, not part of the student kit; "
                                       "this install has check, schema, rubric, ledger\n")
    assert not out.exists()
    assert main(["schema"]) == EXIT_OK  # a student's own commands still run


def test_check_tells_a_student_what_to_do_and_keeps_staff_flags_for_staff(tmp_path, capsys):
    """The student's check shows no staff flags; ``--all`` (staff) does."""
    data = solved("lab11", "edge")
    data["controls"]["D"]["speedup"] = 4 if data["controls"]["D"]["speedup"] != 4 else 6
    path = tmp_path / "stale.json"
    path.write_text(json.dumps(reseal(data)), encoding="utf-8")
    assert main(["check", str(path)]) == 0
    student = capsys.readouterr().out
    assert "flags for staff" not in student and "[D] stale:" in student
    assert main(["check", "--all", str(path)]) == 0
    assert "flags for staff: " in capsys.readouterr().out


def test_check_json_of_an_unreadable_file_is_json_with_the_kind_apart(tmp_path, capsys):
    path = tmp_path / "broken.json"
    path.write_text('{"lab": "lab07", "track": "abc', encoding="utf-8")
    assert main(["check", "--json", str(path)]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer == {"error": "submission is not valid JSON: unterminated string starting at line 1, column 27",
                      "error_kind": "BundleFormatError", "file": str(path)}
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == ("mlsys-grader: cannot grade: submission is not valid JSON: unterminated string "
                                       "starting at line 1, column 27\n")


CHECK_IMPORTS = """
import sys
from mlsys_grader import cli
code = cli.main(["check", "--json", sys.argv[1]])
print("mlsysim imported:", "mlsysim" in sys.modules, "exit", code)
"""


@pytest.mark.slow
def test_check_answers_from_the_tables_in_the_user_cache_and_grades_the_same(replay_tables_dir, tmp_path):
    """With the verified tables `warm` leaves (here the session's, copied into an XDG cache), `check` never imports
    mlsysim (Lab 08's evaluators cost seconds to load) and prints what live replay prints; an empty cache replays live."""
    import shutil
    import subprocess

    from mlsys_grader import solve
    from mlsys_grader.labs import get_lab
    from mlsys_grader.replay._table import table_key

    bundle = tmp_path / "lab08-submission.json"
    bundle.write_text(solve("lab08", "edge", seed=3).to_json(), encoding="utf-8")
    warm = tmp_path / "warm" / "mlsys-grader" / "replay"
    warm.mkdir(parents=True)
    name = table_key(get_lab("lab08")).filename()
    shutil.copy(replay_tables_dir / name, warm / name)
    outputs = {}
    for cache in ("warm", "cold"):
        (tmp_path / cache).mkdir(exist_ok=True)
        done = subprocess.run([sys.executable, "-c", CHECK_IMPORTS, str(bundle)], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / cache)})
        assert done.returncode == 0, done.stderr[-2000:]
        report, _, last = done.stdout.rpartition("mlsysim imported:")
        outputs[cache] = (json.loads(report), last.split()[0])
    assert outputs["warm"][1] == "False" and outputs["cold"][1] == "True"
    assert outputs["warm"][0] == outputs["cold"][0]


def test_a_note_that_asks_nothing_is_never_listed_under_what_to_do(capsys):
    """A marimo export's excused lock times are a note: the check says there is nothing to do, then the note."""
    from mlsys_grader.core.codes import NOTES
    from mlsys_grader.student._display import SelfCheck

    path = FIXTURES / "marimo" / "lab07-cloud.json"
    report = grade_file(path)
    assert any(f.code in NOTES for f in report.findings), "the export's excused lock times are noted"
    assert main(["check", str(path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "What to do:" not in out and "Nothing to do: every check passed." in out
    assert out.index("Notes:") < out.index("nothing to do.")
    student = SelfCheck(**report.public().model_dump(), hidden_points=30).text()
    assert "What to do:" not in student and "Notes:" in student


def test_grade_never_reads_its_own_outputs_back_as_inputs(tmp_path):
    """`grade .` run twice in a folder that holds its own grades.csv, final.csv and summary grades the submissions only
    (the outputs were read back as two ungradable rows)."""
    folder = tmp_path / "term"
    folder.mkdir()
    (folder / "lab07-submission.json").write_text(json.dumps(solved("lab07", "edge")), encoding="utf-8")
    argv = ["grade", str(folder), "-o", str(folder / "grades.csv"), "--html", str(folder / "summary.html"),
            "--db", str(folder / "gradebook.sqlite"), "-q"]
    for _ in range(2):
        assert main(argv) == EXIT_OK
        with open(folder / "grades.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert [row["path"].rsplit("/", 1)[-1] for row in rows] == ["lab07-submission.json"], rows
        assert (folder / "final.csv").is_file()
