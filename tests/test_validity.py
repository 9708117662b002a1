"""Every point means what it says: unverified evidence earns nothing, version labels, grader errors.

Each test reproduces a case measured on an earlier release first (named in its docstring),
then asserts the part, criterion, points and message the grade now gives.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from conftest import LABS, reseal, solved

from mlsys_grader import get_lab, grade_bundle
from mlsys_grader.api import default_rubric, mlsysim_version
from mlsys_grader.core.grading import grade
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.replay import Replay


def _unedited(lab, track, seed):
    """The score and flags of the untouched bundle (``solve``'s template rationale earns no rationale points)."""
    report = grade_bundle(reseal(solved(lab, track, seed)))
    return report.score, set(report.flags)


def _items(report, part):
    return {item.item: item.points for item in report.parts[part].items}


def _edit_number(bundle, part):
    arm = bundle["evidence"][part]["result"]
    if "outputs" in arm:  # Lab 11: {inputs, outputs}
        quantity = next(v for v in arm["outputs"].values() if isinstance(v, dict) and "magnitude" in v)
        quantity["magnitude"] *= 1.5
    else:
        key = next(k for k, v in arm.items() if k.endswith("_ms") or (k.endswith("_us") and isinstance(v, float)))
        arm[key] *= 1.5


def solved_part_max(lab: str, part: str) -> float:
    """What ``part`` of ``lab`` is worth (Lab 07 and Lab 11: 16 points, Lab 02: 20)."""
    return sum(default_rubric(lab).parts[part].values())


# -- unverified evidence earns nothing ------------------------------------------------------
@pytest.mark.parametrize("lab", LABS)
def test_an_edited_number_voids_every_item_of_its_part(lab):
    """Measured: an edited number cost only the 4 replay points; captured, fresh, contrast and the
    prediction items were still paid on evidence that failed replay."""
    bundle = solved(lab, "edge", 2)
    _edit_number(bundle, "B")
    report = grade_bundle(reseal(bundle))
    assert report.parts["B"].score == 0 and set(_items(report, "B").values()) == {0}
    replay = [f for f in report.findings if f.part == "B" and f.criterion == "replay"]
    assert len(replay) == 1 and replay[0].voids_part and "recapture the part instead of editing numbers" in replay[0].message
    score, flags = _unedited(lab, "edge", 2)
    assert report.score == score - solved_part_max(lab, "B") and set(report.flags) == flags | {"integrity"}


@pytest.mark.parametrize("lab", LABS)
def test_records_without_evaluator_outputs_earn_nothing(lab):
    """Measured: five hand-written records that replay nothing scored captured, fresh, contrast and
    prediction_locked on every part (45 of the 61 points the gaming bundle got)."""
    bundle = solved(lab, "mobile", 5)
    for record in bundle["evidence"].values():
        for name in ("baseline", "result", "chosen_result"):
            if record.get(name) is not None:
                record[name] = {"inputs": record[name]["inputs"]}
        # (an alternative that keeps no inputs, Lab 08's D and E ones, keeps nothing)
        record["alternatives"] = [{"inputs": arm["inputs"]} if "inputs" in arm else {} for arm in record["alternatives"]]
    report = grade_bundle(reseal(bundle))
    for part in get_lab(lab).part_ids():
        assert report.parts[part].score == 0, (part, _items(report, part))
        assert any(f.part == part and f.voids_part for f in report.findings)
    assert "integrity" in report.flags


def test_a_record_without_its_arms_is_unverified_not_free():
    """A record whose baseline is null was never replayed and still earned captured and fresh."""
    bundle = solved("lab07", "cloud", 8)
    bundle["evidence"]["C"]["baseline"] = None
    report = grade_bundle(reseal(bundle))
    assert report.parts["C"].score == 0
    finding = next(f for f in report.findings if f.part == "C" and f.criterion == "domain")
    assert "lacks its baseline or its intervention result" in finding.message and finding.voids_part


# -- version labels ----------------------------------------------------------------------------
def test_another_version_label_that_replays_exactly_is_a_note_not_a_loss():
    """Measured: a record labelled 0.3.1 whose every number replays exactly lost 20 points; null lost nothing."""
    bundle = solved("lab07", "tinyml", 3)
    bundle["evidence"]["D"]["mlsysim_version"] = "0.3.1"
    report = grade_bundle(reseal(bundle))
    assert (report.score, set(report.flags)) == _unedited("lab07", "tinyml", 3)
    note = [f for f in report.findings if f.criterion == "version"]
    assert [(f.part, f.rubric_item, f.actual) for f in note] == [("D", None, "0.3.1")]
    assert "every number replays exactly under 0.3.0, so it counts in full" in note[0].message


def test_a_missing_label_is_never_cheaper_than_an_honest_one():
    honest, unlabelled = solved("lab11", "cloud", 6), solved("lab11", "cloud", 6)
    for bundle, label in ((honest, "0.2.9"), (unlabelled, None)):
        bundle["evidence"]["A"]["mlsysim_version"] = label
        _edit_number(bundle, "A")
    honest_report, unlabelled_report = grade_bundle(reseal(honest)), grade_bundle(reseal(unlabelled))
    assert honest_report.score == unlabelled_report.score == _unedited("lab11", "cloud", 6)[0] - 16
    # One edited number is an edit whatever the label says: version drift is read from the pattern
    # of the mismatch (many numbers across arms), never from a label the student controls.
    assert [f.criterion for f in honest_report.findings if f.part == "A"] == ["replay"]
    assert "(recorded under mlsysim 0.2.9)" in honest_report.findings_for("A")[0].message
    assert set(honest_report.flags) - {"generated"} == {"integrity"}
    assert [f.criterion for f in unlabelled_report.findings if f.part == "A"] == ["replay"]
    assert set(unlabelled_report.flags) - {"generated"} == {"integrity"}

    # Exact replay: labelled or not, nothing is lost.
    for label in ("0.3.1", None):
        bundle = solved("lab11", "cloud", 6)
        bundle["evidence"]["A"]["mlsysim_version"] = label
        assert grade_bundle(reseal(bundle)).score == _unedited("lab11", "cloud", 6)[0]


# -- grader errors are not student errors ---------------------------------------------------------
def test_a_bug_in_a_labs_plan_is_held_for_staff_not_blamed_on_the_student():
    """Measured: a KeyError injected into a lab's plan became a replay finding, 91/100, an integrity
    flag and "recapture the part"."""
    LAB = get_lab("lab07")
    judge = LAB.judge

    class _RulesWithABug:
        """Lab 07's judge, except that part C's plan hits a bug of the grader's own (a KeyError)."""

        def __getattr__(self, name):
            return getattr(judge, name)

        def arm_inputs(self, lab, track, part, controls, upstream):
            if part == "C":
                raise KeyError("fused_region_count")
            return judge.arm_inputs(lab, track, part, controls, upstream)

    bundle = bundle_from_mapping(solved("lab07", "edge", 4))
    report = grade(bundle, LAB.replace(judge=_RulesWithABug()), default_rubric("lab07"), Replay(), mlsysim_version=mlsysim_version(), grader_version="test")
    assert set(report.flags) - {"generated"} == {"grader_error"}
    [finding] = [f for f in report.findings if f.part == "C"]
    assert all(f.criterion == "grader" for f in report.findings if f.part not in ("C", "synthesis"))
    assert (finding.part, finding.criterion, finding.rubric_item) == ("C", "grader", None)
    assert "staff will review this part" in finding.message and "recapture" not in finding.message
    assert "KeyError" in finding.actual
    part = report.parts["C"]
    assert part.held and all(item.held for item in part.items) and part.score == 0
    assert report.score == _unedited("lab07", "edge", 4)[0] - 16
    assert all(not p.held for name, p in report.parts.items() if name != "C")
    assert "held for staff review" in report.text()


def test_a_check_that_fails_is_a_grader_error_not_a_crash():
    """Measured: the failure became one ``grader`` finding on ``bundle``, so nothing was held and part E's
    decision was paid (tests/test_held.py holds every check to this)."""
    LAB = get_lab("lab07")
    judge = LAB.judge

    class _BrokenRules:
        """Lab 07's judge, except that the decision rule fails."""

        def __getattr__(self, name):
            return getattr(judge, name)

        def decision_problems(self, track, part, plan, record):
            raise AttributeError("'NoneType' object has no attribute 'status'")

    bundle = bundle_from_mapping(solved("lab07", "cloud", 1))
    report = grade(bundle, LAB.replace(judge=_BrokenRules()), default_rubric("lab07"), Replay(), mlsysim_version=mlsysim_version(), grader_version="test")
    assert set(report.flags) - {"generated"} == {"grader_error"}
    [finding] = [f for f in report.findings if f.part != "synthesis"]
    assert (finding.part, finding.criterion, finding.rubric_item) == ("E", "grader", None)
    assert finding.actual.startswith("check_decision: AttributeError") and "nothing for you to do" not in finding.message
    assert report.parts["E"].held and report.parts["E"].score == 0
    assert report.score == _unedited("lab07", "cloud", 1)[0] - report.parts["E"].max_score


def test_evaluator_refusals_are_still_findings_about_the_submission():
    """Only evaluator, unit and domain errors are the submission's; a hostile unit stays a domain finding."""
    bundle = solved("lab11", "tinyml", 2)
    bundle["evidence"]["D"]["result"]["inputs"]["baseline_kernel_time"]["unit"] = "furlong"
    report = grade_bundle(reseal(bundle))
    assert "grader_error" not in report.flags and "integrity" in report.flags
    assert report.parts["D"].score == 0


# -- predictions ------------------------------------------------------------------------------------
def test_prediction_correctness_is_formative_by_default():
    bundle = solved("lab07", "cloud", 11)
    record = bundle["evidence"]["A"]
    record["prediction"] = next(p for p in ("below_25", "25_50", "50_75", "above_75") if p != record["prediction"])
    bundle["runs"] = {}
    report = grade_bundle(reseal(bundle))
    assert report.score == _unedited("lab07", "cloud", 11)[0]
    wrong = next(f for f in report.findings if f.rubric_item == "prediction_correct")
    assert wrong.part == "A" and wrong.hidden and "the replayed numbers support" in wrong.message
    assert _items(report, "A")["prediction_correct"] == 0 and wrong not in report.public().findings


def test_a_result_shown_in_an_earlier_session_makes_a_later_lock_late():
    """Measured: reopening a session forgot that an uncaptured part's result had been shown."""
    bundle = solved("lab11", "edge", 3)
    record = bundle["evidence"]["C"]
    locked = datetime.fromisoformat(record["prediction_locked_at"])
    earlier = (locked - timedelta(minutes=30)).isoformat()
    bundle["runs"]["C"] = {"prediction": record["prediction"], "prediction_locked_at": record["prediction_locked_at"],
                           "first_shown_at": earlier, "first_run_controls": bundle["controls"]["C"],
                           "first_run_at": record["result_shown_at"]}
    report = grade_bundle(reseal(bundle))
    late = [f for f in report.findings if f.rubric_item == "prediction_locked"]
    assert [f.part for f in late] == ["C"] and "locked after the result was shown" in late[0].message
    assert report.score == _unedited("lab11", "edge", 3)[0] - 2
