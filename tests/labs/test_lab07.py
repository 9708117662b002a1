"""Lab 07's own rules, pinned with the measured numbers: its evaluator constants, part B's ties, part E's
runtime decision and the synthesis rules (scenario fixtures), and what its prediction is judged against.

What holds for every lab is in ``tests/labs/test_contract.py``.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from conftest import TRACKS, assert_scenario, every_setting, grid, plan_for, reseal, shown, solved

from mlsys_grader.api import default_replay, grade_bundle, mlsysim_version
from mlsys_grader.labs import get_lab
from mlsys_grader.staff import bundle_from_controls
from mlsys_grader.student._session import _open_lab_with_clock

LAB = "lab07"


def test_the_declaration_restates_the_evaluators_constants():
    from mlsysim.labs.experiments import v1_07_experiments as ev

    spec = get_lab(LAB).spec
    assert spec.evaluator == ev.__name__ and spec.model_id == ev.MODEL_KEY == get_lab(LAB).model_id
    assert spec.constant("operation_count") == len(ev.OPERATION_GRAPH)
    assert set(ev.TRACKS) == set(spec.tracks) == set(spec.constants["tensor_elements"]) == set(spec.constants["target"])
    assert {track: profile.default_elements for track, profile in ev.TRACKS.items()} == spec.constants["tensor_elements"]
    assert {track: profile.target.name for track, profile in ev.TRACKS.items()} == spec.constants["target"]


@pytest.mark.slow  # a fresh interpreter
def test_only_the_evaluation_module_imports_mlsysim():
    """The lab object, its declaration, judge and views load without it."""
    probe = ("import sys\n"
             "from mlsys_grader.labs import get_lab\n"
             "from mlsys_grader.labs.lab07 import judge, views\n"
             "LAB = get_lab('lab07')\n"
             "LAB.parts['B'].check_controls({'executions': 50, 'recompilations': 0})\n"
             "assert 'mlsysim' not in sys.modules, sorted(m for m in sys.modules if m.startswith('mlsysim'))\n"
             "from mlsys_grader.labs.lab07 import evaluate\n"
             "assert 'mlsysim' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_every_recorded_number_equals_mlsysim_itself():
    """Recomputed straight through ``v1_07_experiments.replay``, bypassing the grader."""
    from mlsysim.labs.experiments import v1_07_experiments as ev

    for track in TRACKS:
        bundle = solved(LAB, track, 2)
        for part, record in bundle["evidence"].items():
            for arm in (record["baseline"], record["result"], *record["alternatives"]):
                assert ev.replay(record["model_key"], arm["inputs"]) == arm, (track, part)


def test_the_sweep_covers_the_whole_domain():
    """3 + 180 + 5 + 128 + 15 settings."""
    assert sum(1 for _ in every_setting(LAB)) == 331


# -- part E's runtime decision and the synthesis rules (scenario fixtures) ------------------------------------
SCENARIOS = {
    "identical-baseline-intervention-lab07-e": ("E", "contrast", "intervention is identical to its baseline", 2),
    "lab07-e-none-while-executable": ("E", "decision", "valid only when the selected path cannot execute", None),
    "lab07-e-hold-keeps-the-intervention": ("E", "decision", "chosen result must be the baseline arm", 4),
    "lab07-synthesis-rejects-its-own-recommendation": ("synthesis", "decision", "must differ from the recommendation", 4),
    "lab07-synthesis-none-without-unsupported-e": ("synthesis", "decision", "only after capturing an unsupported part E", None),
    "lab07-synthesis-hold-without-e-hold": ("synthesis", "decision", "only after capturing part E with decision 'hold'", None),
    "lab07-synthesis-trigger-not-in-list": ("synthesis", "decision", "re-evaluation trigger from the lab's list", None),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_produces_its_finding(name):
    assert_scenario(name, *SCENARIOS[name])


# -- part B: a tie accepts "They are equal" and the verdict the notebook shows ---------------------------------
B_TIES = ((30, 1), (60, 3), (90, 5), (120, 7))


@pytest.mark.parametrize("executions, recompilations", B_TIES)
def test_b_cloud_tie_accepts_equal_and_the_shown_eager_verdict(executions, recompilations):
    plan = plan_for(LAB, "cloud", "B", {"executions": executions, "recompilations": recompilations})
    view, accepted = shown(LAB, "cloud", "B", plan)
    result = plan.result
    assert f"{result['eager_total_ms']:.2f}" == f"{result['compiled_total_ms']:.2f}"  # the table shows a tie
    assert view.observation.startswith(f"Eager remains faster at {executions} executions")  # as the seed words it
    assert accepted == {"equal", "eager"}


@pytest.mark.slow  # sweeps the part's whole domain on every track
def test_b_ties_occur_only_at_the_four_cloud_settings():
    lab = get_lab(LAB)
    ties = []
    for track in TRACKS:
        for controls in grid(lab, "B"):
            plan = plan_for(LAB, track, "B", controls)
            accepted = lab.accepted_predictions(track, "B", plan)
            if "equal" in accepted:
                ties.append((track, controls["executions"], controls["recompilations"]))
            else:
                winner = "compiled" if plan.result["compiled_total_ms"] < plan.result["eager_total_ms"] else "eager"
                assert accepted == {winner}, (track, controls)
    assert ties == [("cloud", e, r) for e, r in B_TIES]


def _session_bundle(tmp_path, prediction: str):
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    ticks = (start + timedelta(seconds=second) for second in itertools.count(1))
    lab = _open_lab_with_clock(LAB, "cloud", lambda: next(ticks), directory=tmp_path / prediction)
    lab.predict("B", prediction)
    result = lab.run("B", executions=30, recompilations=1)
    lab.capture("B")
    return result, (tmp_path / prediction / "lab07-submission.json").read_bytes()


@pytest.mark.parametrize("prediction, judged_right", [("equal", True), ("eager", True), ("compiled", False)])
def test_b_tie_through_the_notebook_and_the_grader(tmp_path, prediction, judged_right):
    result, bundle = _session_bundle(tmp_path, prediction)
    assert "Observed analytically: Eager remains faster at 30 executions and 2 compilations." in repr(result)
    findings = [f for f in grade_bundle(bundle).findings_for("B") if f.rubric_item == "prediction_correct"]
    if judged_right:
        assert findings == []
    else:
        assert len(findings) == 1
        assert findings[0].expected == ["eager", "equal"]
        assert "'Eager remains faster' or 'They are equal', not 'Compilation repays setup'" in findings[0].message


def test_a_prediction_is_judged_against_the_first_run_after_its_lock():
    """Measured: lock "eager", see "compiled", change the settings until eager wins, capture: full marks."""
    lab = get_lab(LAB)
    controls = {part: lab.sample_controls(default_replay(), "cloud", part, None) for part in lab.part_ids()}
    controls["B"] = {"executions": 10, "recompilations": 8}
    captured = bundle_from_controls(lab, "cloud", controls, mlsysim_version=mlsysim_version(), grader_version="test")
    data = json.loads(captured.to_json())
    b = data["evidence"]["B"]
    assert b["prediction"] == "eager" and b["result"]["eager_total_ms"] < b["result"]["compiled_total_ms"]
    # The first run after the lock was 200 executions, where compilation repays setup.
    data["runs"]["B"] = {"prediction": "eager", "prediction_locked_at": b["prediction_locked_at"],
                         "first_shown_at": b["result_shown_at"], "first_run_at": b["result_shown_at"],
                         "first_run_controls": {"executions": 200, "recompilations": 0}}
    report = grade_bundle(reseal(data))
    judged = [f for f in report.findings if f.part == "B" and f.criterion == "prediction"]
    assert [f.rubric_item for f in judged] == [None, "prediction_correct"]
    assert "you first ran executions = 200, recompilations = 0, then changed the settings" in judged[0].message
    assert "support 'Compilation repays setup', not 'Eager remains faster'" in judged[1].message
    assert not judged[0].hidden and judged[1].hidden
