"""Students see what is checked, when: before publication an edited upload reads exactly as an honest one; after it, the
total states the late penalty and each part whether its prediction was supported; ``check`` says what it did not check;
``lab.export()`` names what still costs points.  Real bundles, real grading, the real command line."""

from __future__ import annotations

import json

from conftest import reseal, solved

from mlsys_grader import grade_bundle
from mlsys_grader.cli import EXIT_OK, main
from mlsys_grader.gradescope._record import ScoreOfRecord
from mlsys_grader.gradescope._results import gradescope_results


def _edited(lab: str = "lab07", part: str = "B") -> dict:
    """A classmate's honest bundle with one recorded number changed, the content hash recomputed: replay catches it."""
    data = solved(lab, "cloud", 3)
    record = data["evidence"][part]
    key = next(k for k, v in record["result"].items() if isinstance(v, float) and not isinstance(v, bool))
    record["result"][key] = round(record["result"][key] * 0.5, 6)
    return reseal(data)


def _results(data: dict) -> tuple[dict, object]:
    report = grade_bundle(json.dumps(data).encode())
    return gradescope_results(ScoreOfRecord("lab07", report, "lab07-submission.json")), report


def test_before_publication_an_edited_upload_reads_exactly_as_the_honest_one():
    honest, honest_report = _results(solved("lab07", "cloud", 3))
    edited, edited_report = _results(_edited())
    assert edited_report.score < honest_report.score and "integrity" in edited_report.flags, "replay caught the edit"
    visible = [[t for t in document["tests"] if t.get("visibility", document["visibility"]) == "visible"]
               for document in (honest, edited)]
    assert visible[0] == visible[1], "the visible tests tell an edited upload nothing"
    assert honest["output"] == edited["output"] and "/ 100" not in edited["output"], "no total before publication"
    assert edited["visibility"] == honest["visibility"] == "after_published"
    assert edited_report.public().parts["B"] == honest_report.public().parts["B"]
    # after publication the edit is said, on the part that lost its points
    [part_b] = [t for t in edited["tests"] if t["name"] == "Part B"]
    assert part_b["visibility"] == "after_published" and part_b["score"] < part_b["max_score"]


def test_after_publication_each_part_says_whether_its_prediction_was_supported():
    document, report = _results(solved("lab07", "cloud", 3))
    wrong = {f.part for f in report.findings if f.rubric_item == "prediction_correct"}
    for name in ("A", "B", "C", "D", "E"):
        [test] = [t for t in document["tests"] if t["name"] == f"Part {name}"]
        said = "not supported" if name in wrong else "was supported"
        assert f"Your prediction {said}" in test["output"] and "(formative: no points)" in test["output"], test["output"]


def test_check_says_how_many_points_it_checked_and_which_come_after_the_deadline(tmp_path, capsys):
    path = tmp_path / "lab07-submission.json"
    path.write_text(json.dumps(_edited()), encoding="utf-8")
    assert main(["check", str(path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.rstrip().endswith("70 of 100 points checked now; replay, 30 points, is checked after the deadline.")
    assert "replay" not in out.split("points checked now")[0].lower(), "the public report says nothing of replay"
    assert main(["check", str(path), "--all"]) == EXIT_OK
    assert "checked after the deadline" not in capsys.readouterr().out, "the staff view checks everything"


def test_export_names_a_stale_part_and_a_short_rationale_with_what_they_cost(tmp_path):
    from test_notebook_api import Clock, _saved_notebook, capture_every_part, lab07

    lab = lab07(tmp_path, Clock())
    answers = solved("lab07", "cloud")
    capture_every_part(lab, answers)
    moved = 3 if answers["controls"]["C"].get("graph_breaks") != 3 else 2
    lab.run("C", graph_breaks=moved)  # a setting moved after capture: part C's record is stale
    lab.synthesis(**{k: v for k, v in answers["synthesis"].items() if k != "rationale"},
                  rationale="Compiled with fusion wins clearly here.")
    _saved_notebook(tmp_path)
    words = lab.missing().title
    assert "Part C is stale (its evidence no longer matches your final settings; recapture it: 3 points)" in words, words
    assert "your rationale has 6 words, below the" in words and "as it stands that costs" in words
    notice = lab.export()
    assert notice.kind == "warn" and "upload that zip as it is" not in notice.title
