"""The core finishes grading: what an importer knows enters ``core.grading.grade`` as typed inputs, and ``score`` runs once.

An :class:`Excuse` names the findings it removes by their stable code, never by display text; a source written only
once complete (:class:`OnlyWhenComplete`) turns a missing part into an integrity finding; a submission that cannot be
graded gets the core's zero report.  Reports are immutable.
"""

from __future__ import annotations

import json

import pydantic
import pytest

from mlsys_grader import grade_bundle, solve
from mlsys_grader.api import default_rubric, mlsysim_version
from mlsys_grader.core.grading import Excuse, OnlyWhenComplete, grade, ungradable_report
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.core.report import Finding
from mlsys_grader.labs import get_lab
from mlsys_grader.replay import Replay

EXCUSE = Excuse("prediction.no_lock_times", "No lock times here; nothing to do.", expected="lock times", lacking="no lock time")


def _without_lock_times(*parts: str) -> dict:
    data = json.loads(solve("lab07", "edge", seed=7).to_json())
    for part in parts:
        data["evidence"][part]["prediction_locked_at"] = None
    data.pop("content_hash", None)
    return data


def _grade(data: dict, **inputs):
    bundle = bundle_from_mapping(data)
    return grade(bundle, get_lab("lab07"), default_rubric("lab07"), Replay(), mlsysim_version=mlsysim_version(), grader_version="test",
                 **inputs)


def test_an_excuse_removes_the_findings_of_its_code_and_says_so_once():
    plain = _grade(_without_lock_times("A", "C"))
    locked = [f for f in plain.findings if f.rubric_item == "prediction_locked"]
    assert [f.part for f in locked] == ["A", "C"] and all(f.code == "prediction.no_lock_times" for f in locked)
    excused = _grade(_without_lock_times("A", "C"), excuses=(EXCUSE,))
    assert excused.score == plain.score + sum(default_rubric("lab07").parts[p]["prediction_locked"] for p in "AC")
    notes = [f for f in excused.findings if f.message == EXCUSE.message]
    assert [(n.part, n.criterion, n.expected, n.actual) for n in notes] == [("bundle", "prediction", "lock times",
                                                                             "no lock time in parts A, C")]
    assert not [f for f in excused.findings if f.rubric_item == "prediction_locked"]


def test_an_excuse_never_matches_by_display_text():
    """A finding that says the same words but carries no code (e.g. an importer's own) is charged as it is."""
    plain = _grade(_without_lock_times())
    lookalike = Finding(part="B", criterion="prediction", rubric_item="prediction_locked", expected="lock times",
                        message="Part B does not record when the prediction was locked.")
    report = _grade(_without_lock_times(), importer_findings=(lookalike,), excuses=(EXCUSE,))
    assert lookalike in report.findings and report.score == plain.score - default_rubric("lab07").parts["B"]["prediction_locked"]
    assert EXCUSE.message not in [f.message for f in report.findings], "nothing was excused, so nothing is said"


def test_a_source_written_only_when_complete_voids_a_missing_part_as_integrity():
    data = _without_lock_times()
    data["evidence"].pop("D")
    rule = OnlyWhenComplete((("missing", "is missing from this file, which is written only when complete"),), "save it again.")
    report = _grade(data, only_when_complete=rule)
    integrity = [f for f in report.findings if f.criterion == "integrity"]
    assert [(f.part, f.voids_part, f.message) for f in integrity] == [
        ("D", True, "Part D is missing from this file, which is written only when complete; save it again.")]
    assert "integrity" in report.flags and report.parts["D"].score == 0
    assert not [f for f in _grade(data).findings if f.criterion == "integrity"], "a bundle may lack a part: no integrity"


def test_the_zero_report_voids_every_part_and_keeps_one_finding():
    finding = Finding(part="bundle", criterion="missing", message="Nothing gradable was uploaded.")
    report = ungradable_report("lab11", default_rubric("lab11"), finding)
    assert (report.lab, report.track, report.score, report.findings, report.flags) == ("lab11", "none", 0, (finding,), ("missing",))
    assert set(report.parts) == {*default_rubric("lab11").parts, "synthesis"} and all(p.score == 0 for p in report.parts.values())
    assert report.max_score == default_rubric("lab11").max_score


def test_reports_and_their_parts_are_immutable():
    report = grade_bundle(solve("lab11", "cloud", seed=2).to_json())
    for target, name, value in ((report, "score", 0.0), (report.parts["A"], "score", 0.0), (report.parts["A"].items[0], "points", 0)):
        with pytest.raises(pydantic.ValidationError, match="frozen"):
            setattr(target, name, value)
    written = json.loads(report.model_dump_json())
    assert all(f["code"] for f in written["findings"]), "every finding is written with its code"
