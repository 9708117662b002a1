"""A check that fails holds what it was judging: never paid, never charged, and the student is told so.

Each measured case of issue 15 is reproduced first (named in the docstring), then every registered check
is made to fail for real — the registered check runs, then raises — and the test asserts that exactly
what it judges is held (points 0, ``held``, flag ``grader_error``, status ``regrade``) and that every
other part and item is graded as if nothing had happened.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from conftest import LABS, reseal, solved

from mlsys_grader import BundleFormatError, grade_bundle, load_bundle
from mlsys_grader.api import default_rubric, mlsysim_version
from mlsys_grader.core.audits import CHECKS, PartCheck, SubmissionCheck
from mlsys_grader.core.grading import grade
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.labs import get_lab
from mlsys_grader.replay import Replay

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "submissions"
HONEST = {"lab02": ROOT / "examples" / "submissions" / "lab02-edge.json",  # full marks in the student's own words
          "lab07": EXAMPLES / "lab07-cloud.json", "lab08": EXAMPLES / "lab08-cloud.json", "lab11": EXAMPLES / "lab11-edge.json"}
RATIONALE = ("rationale_length", "rationale_cites_evidence", "rationale_names_recommendation",
             "rationale_names_rejected", "rationale_names_limitation", "rationale_names_trigger")
PART_CHECKS = ("check_grader_errors", "check_missing", "check_record_shape", "check_domain", "check_replay",
               "check_stale", "check_contrast", "check_prediction_locked", "check_prediction_correct", "check_decision")
JUDGED = {"check_bundle_hash": (), "check_synthesis_choices": ("choices_valid",),
          "check_rationale": RATIONALE, "check_generated": RATIONALE}
"""What each check of the whole submission judges: held when it fails."""
INT_CONTROL = {"lab02": ("B", "execution_scale"), "lab07": ("B", "executions"), "lab08": ("B", "strategy"),  # Lab 08: choices only
               "lab11": ("A", "factor")}

PART_HELD = ("The grader failed while checking part {part} (its own error, not yours): staff will review this part, "
             "and its points are held, not lost, until then.")
SYNTHESIS_HELD = ("The grader failed while checking your synthesis (its own error, not yours): {items} wait for staff "
                  "review, and their points are held, not lost, until then.")
BUNDLE_HELD = ("The grader failed while checking your submission (its own error, not yours): staff will review it; "
               "no points depend on this check.")


def _grade(lab_id, data, checks=CHECKS, lab=None):
    return grade(bundle_from_mapping(data), lab or get_lab(lab_id), default_rubric(lab_id), REPLAY,
                 mlsysim_version=mlsysim_version(), grader_version="test", checks=checks)


REPLAY = Replay()
"""One replay for the module: a failing check changes no evaluation, and the memos hold no verdict."""


def _honest(lab_id):
    return json.loads(HONEST[lab_id].read_text(encoding="utf-8"))


def _registered(name):
    return next(check for check in CHECKS if check.name == name)


def _failing(name, part=None):
    """The registered checks, except that ``name`` runs for real and then raises (on ``part`` only, for a part check)."""
    def failing(check):
        if isinstance(check, PartCheck):
            @functools.wraps(check.run)
            def run_part(ctx, current):
                found = list(check.run(ctx, current))
                if current == part:
                    raise RuntimeError(f"injected after {len(found)} findings")
                return found
            return PartCheck(run_part)

        @functools.wraps(check.run)
        def run(ctx):
            found = list(check.run(ctx))
            raise RuntimeError(f"injected after {len(found)} findings")
        return SubmissionCheck(run, check.judges)
    return tuple(failing(check) if check.name == name else check for check in CHECKS)


def _items(report, part):
    return [(item.item, item.points, item.held) for item in report.parts[part].items]


def _numbers(value, path=()):
    """Every (path, number) leaf of a JSON value, booleans left out."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _numbers(item, (*path, index))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


def _set(data, path, value):
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def test_every_registered_check_is_covered_here():
    """A new check must say here what it judges, or this file does not test its failure."""
    assert [c.name for c in CHECKS if isinstance(c, PartCheck)] == list(PART_CHECKS)
    assert {c.name: c.judges(default_rubric("lab07")) for c in CHECKS if isinstance(c, SubmissionCheck)} == JUDGED


# -- the measured cases -------------------------------------------------------------------------------
@pytest.mark.parametrize("lab", LABS)
def test_a_control_no_float_can_hold_is_refused_when_read(lab):
    """Measured: one final control set to 10**400 (valid JSON, valid schema) made the rationale check raise,
    and an empty rationale then earned 16/16 synthesis (97/100 on every track of both labs)."""
    part, name = INT_CONTROL[lab]
    data = solved(lab, "edge", 2)
    data["controls"][part][name] = 10**400
    data["synthesis"]["rationale"] = ""
    expected = f"controls.{part}.{name}: a number too large for a float (got an integer of 401 digits)"
    for form in (reseal(data), json.dumps(reseal(data)).encode()):  # the API's mapping and the file's bytes
        with pytest.raises(BundleFormatError) as refused:
            grade_bundle(form)
        assert str(refused.value) == expected
    with pytest.raises(BundleFormatError, match=r"^controls\.\w\.\w+: a number too large for a float"):
        load_bundle(json.dumps(reseal(data)))


def test_gradescope_and_the_cli_refuse_it_too(tmp_path, capsys):
    from mlsys_grader.cli import main
    from mlsys_grader.gradescope._record import grade_bytes

    data = solved("lab07", "edge", 2)
    data["controls"]["B"]["executions"] = -(10**400)
    raw = json.dumps(reseal(data)).encode()
    record = grade_bytes("lab07", raw, "lab07-submission.json")
    expected = "controls.B.executions: a number too large for a float (got an integer of 401 digits)"
    assert record.report.score == 0 and record.notes == (expected,)
    path = tmp_path / "lab07-submission.json"
    path.write_bytes(raw)
    assert main(["check", str(path)]) != 0
    assert expected in capsys.readouterr().err


def test_an_empty_rationale_whose_check_fails_earns_nothing_for_it():
    """The principle behind the first measured case: were the rationale check to raise, an empty rationale
    is held, not paid (it earned 16/16 synthesis)."""
    data = solved("lab07", "edge", 2)
    data["synthesis"]["rationale"] = ""
    report = _grade("lab07", reseal(data), _failing("check_rationale"))
    assert _items(report, "synthesis") == [("choices_valid", 4, False), *((item, 0, True) for item in RATIONALE)]
    assert report.parts["synthesis"].score == 4 and "grader_error" in report.flags


@pytest.mark.parametrize("lab", LABS)
def test_a_recorded_number_no_float_can_hold_is_refused_and_scaled_evidence_earns_nothing(lab):
    """Measured: one recorded number set to 10**400 made the replay check raise, and a bundle whose every
    float was scaled by 1.37 then scored 100 (Lab 07, the student's own rationale)."""
    data = _honest(lab)
    for path, value in list(_numbers(data["evidence"])):
        if isinstance(value, float):
            _set(data["evidence"], path, value * 1.37)
    scaled = reseal(data)
    path = next(p for p, v in _numbers(data["evidence"]["C"]) if p[0] == "result" and isinstance(v, float))
    _set(data["evidence"]["C"], path, 10**400)
    where = "evidence.C" + "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path)
    with pytest.raises(BundleFormatError) as refused:
        grade_bundle(json.dumps(reseal(data)).encode())
    assert str(refused.value) == f"{where}: a number too large for a float (got an integer of 401 digits)"
    # Scaled without the huge number: no part replays, so no evidence point is paid.
    report = grade_bundle(scaled)
    assert all(report.parts[part].score == 0 for part in get_lab(lab).part_ids())
    # And had the replay check failed on every part, every part is held, none paid.
    held = _grade(lab, scaled, _failing_everywhere("check_replay"))
    assert all(held.parts[part].held and held.parts[part].score == 0 for part in get_lab(lab).part_ids())
    assert held.score == held.parts["synthesis"].score < 100


def _failing_everywhere(name):
    """The registered checks, except that the part check ``name`` fails on every part."""
    check = _registered(name)

    @functools.wraps(check.run)
    def run(ctx, part):
        list(check.run(ctx, part))
        raise RuntimeError("injected")
    return tuple(PartCheck(run) if check.name == name else check for check in CHECKS)


# -- numbers a float can hold stay what they were --------------------------------------------------------
def test_a_large_control_a_float_can_hold_is_still_a_domain_finding():
    data = solved("lab07", "edge", 2)
    data["controls"]["B"]["executions"] = 10**300
    report = grade_bundle(reseal(data))
    [finding] = [f for f in report.findings if f.part == "B"]
    assert (finding.criterion, finding.rubric_item) == ("domain", "fresh") and "grader_error" not in report.flags
    assert finding.message.startswith("Final settings: ") and "executions" in finding.message


@pytest.mark.parametrize("number", [10**308, -(10**308), 1e308, -1.7976931348623157e308, 5e-324])
def test_a_huge_recorded_number_is_a_replay_finding_not_a_crash(number):
    data = solved("lab07", "edge", 2)
    data["evidence"]["B"]["result"]["eager_total_ms"] = number
    report = grade_bundle(reseal(data))
    assert "grader_error" not in report.flags and "integrity" in report.flags
    [finding] = [f for f in report.findings if f.part == "B" and f.voids_part]
    assert (finding.criterion, finding.actual) == ("replay", number) and report.parts["B"].score == 0


@pytest.mark.parametrize("lab", LABS)
def test_no_huge_number_anywhere_in_parts_b_makes_a_check_fail(lab):
    """Every number of part B's record and controls set to the edge of a float's range: findings, never a grader error."""
    base = solved(lab, "edge", 2)
    leaves = [("evidence", p) for p, _ in _numbers(base["evidence"]["B"])] + [("controls", p) for p, _ in _numbers(base["controls"]["B"])]
    for where, path in leaves:
        for number in (1e308, -(10**308)):
            data = solved(lab, "edge", 2)
            _set(data[where]["B"], path, number)
            report = grade_bundle(reseal(data))
            assert "grader_error" not in report.flags, (where, path, number, [f.actual for f in report.findings if f.criterion == "grader"])


def test_an_integer_too_long_to_print_is_refused_with_its_field():
    data = solved("lab07", "edge", 2)
    data["controls"]["B"]["executions"] = 10**5000
    with pytest.raises(BundleFormatError) as refused:
        grade_bundle(data)
    assert str(refused.value) == "controls.B.executions: a number too large for a float (got an integer of more than 4300 digits)"


# -- every check, failing ---------------------------------------------------------------------------------
@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("name", PART_CHECKS)
def test_a_part_check_that_fails_on_part_b_holds_part_b_only(lab, name):
    data = _honest(lab)
    base = _grade(lab, data)
    assert base.score == 100 and not base.findings
    report = _grade(lab, data, _failing(name, "B"))
    assert _items(report, "B") == [(item, 0, True) for item, _, _ in _items(base, "B")]
    [held] = report.findings
    assert (held.part, held.criterion, held.rubric_item, held.also_costs, held.hidden) == ("B", "grader", None, (), False)
    assert held.message == PART_HELD.format(part="B")
    assert held.actual == f"{name}: RuntimeError: injected after 0 findings"
    assert all(report.parts[part] == base.parts[part] for part in report.parts if part != "B")
    assert report.flags == ("grader_error",) and report.score == 100 - base.parts["B"].max_score
    assert "held for staff review" in report.text().splitlines()[2]  # the part B line
    assert report.text(staff=True).splitlines()[1] == "flags for staff: grader_error"


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("name", list(JUDGED))
def test_a_submission_check_that_fails_holds_the_items_it_judges(lab, name):
    data = _honest(lab)
    base = _grade(lab, data)
    report = _grade(lab, data, _failing(name))
    items = JUDGED[name]
    [held] = report.findings
    assert (held.criterion, held.actual) == ("grader", f"{name}: RuntimeError: injected after 0 findings")
    if items:
        assert (held.part, held.rubric_item, held.also_costs) == ("synthesis", items[0], items[1:])
        assert held.message == SYNTHESIS_HELD.format(items=", ".join(items))
    else:
        assert (held.part, held.rubric_item, held.message) == ("bundle", None, BUNDLE_HELD)
    assert _items(report, "synthesis") == [(item, 0 if item in items else points, item in items)
                                          for item, points, _ in _items(base, "synthesis")]
    assert all(report.parts[part] == base.parts[part] for part in report.parts if part != "synthesis")
    assert report.flags == ("grader_error",)
    assert report.score == 100 - sum(i.max_points for i in base.parts["synthesis"].items if i.item in items)


def test_findings_of_a_check_that_failed_midway_are_dropped_and_what_it_judged_is_not_paid():
    """Part B's number is edited, and the replay check fails on B after finding it: B is held, not paid,
    and the other parts' replay verdicts stand."""
    data = solved("lab07", "edge", 2)
    data["evidence"]["B"]["result"]["eager_total_ms"] *= 1.5
    data["evidence"]["D"]["result"]["eager_total_ms" if "eager_total_ms" in data["evidence"]["D"]["result"] else
                                  next(k for k, v in data["evidence"]["D"]["result"].items() if isinstance(v, float))] *= 1.5
    base = _grade("lab07", reseal(data))
    report = _grade("lab07", reseal(data), _failing("check_replay", "B"))
    assert [f.criterion for f in base.findings if f.part == "B"] == ["replay"]
    assert [f.criterion for f in report.findings if f.part == "B"] == ["grader"]
    assert report.findings_for("B")[0].actual == "check_replay: RuntimeError: injected after 1 findings"
    assert report.parts["B"].score == 0 and report.parts["B"].held
    assert report.findings_for("D") == base.findings_for("D") and report.parts["D"] == base.parts["D"]
    assert report.parts["D"].score == 0 and set(report.flags) == set(base.flags) | {"grader_error"}


def test_a_plan_that_fails_on_part_b_is_held_like_a_check_that_fails():
    """One mechanism: the part's rebuild (``PartState.grader_error``) and a failing check give the same finding."""
    LAB = get_lab("lab07")
    judge = LAB.judge

    class _RulesWithABug:
        """Lab 07's judge, except that part B's plan hits a bug of the grader's own."""

        def __getattr__(self, name):
            return getattr(judge, name)

        def arm_inputs(self, lab, track, part, controls, upstream):
            if part == "B":
                raise KeyError("compilation_count")
            return judge.arm_inputs(lab, track, part, controls, upstream)

    data = _honest("lab07")
    report = _grade("lab07", data, lab=LAB.replace(judge=_RulesWithABug()))
    [held] = report.findings
    assert (held.part, held.criterion, held.message, held.actual) == ("B", "grader", PART_HELD.format(part="B"),
                                                                       "KeyError: 'compilation_count'")
    assert report.score == 84 and report.parts["B"].held and report.flags == ("grader_error",)


# -- what the student and staff are told ---------------------------------------------------------------------
def test_the_self_check_says_the_points_wait_for_staff_and_nothing_is_lost():
    from mlsys_grader.student._display import SelfCheck

    full = _grade("lab07", _honest("lab07"), _failing("check_stale", "B"))
    public = full.public()
    check = SelfCheck(**public.model_dump(), hidden_points=full.max_score - public.max_score)
    assert check.headline() == ("Public checks: 60 of 70 points (10 points held for staff review: the grader failed, "
                                "not you, and nothing is lost). This is not your grade: hidden checks worth 30 points "
                                "(every number must replay) run after the deadline.")
    lines = check.text().splitlines()
    assert lines[3] == "  B             0 / 10    public  held for staff review"
    assert lines[-1] == f"  [B] {PART_HELD.format(part='B')}" and "nothing for you to do" not in check.text()


def test_gradescope_says_which_synthesis_items_wait_and_still_lists_the_lost_ones():
    from mlsys_grader.gradescope._results import _lost_lines, _public_sentences

    data = _honest("lab07")
    data["synthesis"]["rationale"] = ""
    report = _grade("lab07", data, _failing("check_synthesis_choices"))
    lines = _lost_lines(report, "synthesis")
    assert lines[0] == "choices_valid will be reviewed by staff: the grader failed on them (not your error), so their 4 points are held until then."
    assert len(lines) > 1 and all("choices_valid" not in line for line in lines[1:])
    assert SYNTHESIS_HELD.format(items="choices_valid") in _public_sentences(report, "synthesis")
    whole = _grade("lab07", _honest("lab07"), _failing("check_contrast", "B"))
    assert _lost_lines(whole, "B") == ["Part B will be reviewed by staff: the grader failed on it (not your error), so its 16 points are held until then."]


def test_a_held_synthesis_makes_the_gradebook_row_regrade():
    from mlsys_grader.course._worker import graded_result

    data = _honest("lab11")
    report = _grade("lab11", data, _failing("check_rationale"))
    assert graded_result(report, bundle_from_mapping(data))["status"] == "regrade"
