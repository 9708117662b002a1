"""Formative items read as formative: predicted right or not, never 0.0 points (course/_formative.py)."""

from __future__ import annotations

import csv
import json

from conftest import reseal, solved

from mlsys_grader.course import BatchOptions, grade_paths, render_summary


def test_prediction_correct_is_a_boolean_per_judged_part_and_the_summary_says_predicted_right(tmp_path):
    right = solved("lab07", "cloud", 1)
    wrong = solved("lab07", "edge", 2)
    wrong["evidence"]["A"]["prediction"] = next(k for k in ("below_25", "25_50", "50_75", "above_75")
                                                 if k != wrong["evidence"]["A"]["prediction"])
    unreplayed = solved("lab07", "mobile", 3)
    unreplayed["evidence"]["B"]["result"]["inputs"]["executions"] += 10  # B's evidence no longer replays
    for name, data in (("right", right), ("wrong", reseal(wrong)), ("unreplayed", reseal(unreplayed))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "lab07-submission.json").write_text(json.dumps(data), encoding="utf-8")
    result = grade_paths([tmp_path], BatchOptions(jobs=1, db=None))
    rows = {row["path"].split("/")[-2]: row for row in result.rows}
    assert [rows["right"][f"{p}.prediction_correct"] for p in "ABCDE"] == [True] * 5
    assert rows["wrong"]["A.prediction_correct"] is False and rows["wrong"]["B.prediction_correct"] is True
    assert rows["unreplayed"]["B.prediction_correct"] == "", "a part whose evidence did not replay is not judged"
    assert rows["wrong"]["score"] == rows["right"]["score"], "formative: it costs nothing"
    out = tmp_path / "g.csv"
    result.write_csv(out)
    with open(out, newline="", encoding="utf-8") as handle:
        cells = {row["path"].split("/")[-2]: row["A.prediction_correct"] for row in csv.DictReader(handle)}
    assert cells == {"right": "True", "wrong": "False", "unreplayed": "True"}
    page = render_summary(result)
    judged = sum(isinstance(row[f"{p}.prediction_correct"], bool) for row in result.rows for p in "ABCDE")
    right_parts = sum(row[f"{p}.prediction_correct"] is True for row in result.rows for p in "ABCDE")
    assert judged == 14 and right_parts == 13
    assert f"predicted right: {100 * right_parts / judged:.0f} %" in page, page[page.find("<section"):page.find("<section") + 600] and "(of 14 parts whose evidence replayed" in page
    assert "A.prediction_correct" not in page, "not drawn as a pass rate of 0 points"
