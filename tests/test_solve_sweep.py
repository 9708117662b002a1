"""``solve`` output earns every evidence point across labs, tracks and the whole control domain,
its template rationale is flagged as the grader's own text (no rationale points), and every
recorded number is what mlsysim itself computes for the recorded inputs."""

from __future__ import annotations

import random

import pytest
from conftest import LAB_TRACKS, solved, sweep

from mlsys_grader import __version__, default_rubric, get_lab, grade_bundle, mlsysim_version
from mlsys_grader.core.models import PARTS
from mlsys_grader.staff import bundle_from_controls

SEEDS = (None, *range(8))


def _direct(lab: str, track: str, model_key: str, arm: dict) -> dict:
    """Recompute an arm straight through mlsysim, bypassing the grader."""
    # Imported here so that collecting the tests does not load mlsysim.
    from mlsysim.labs.experiments import v1_07_experiments as ev07
    from mlsysim.labs.experiments import v1_11_experiments as ev11

    if lab == "lab07":
        return ev07.replay(model_key, arm["inputs"])
    result = ev11.replay_experiment({"track_id": track, "model_key": model_key, "inputs": arm["inputs"]})
    return {"inputs": arm["inputs"], "outputs": ev11.to_jsonable(result)}


@pytest.mark.parametrize("lab, track", sweep(LAB_TRACKS, fast=[("lab07", "edge"), ("lab11", "mobile")]))
def test_solved_bundles_earn_every_evidence_point_and_are_flagged_generated(lab, track):
    rationale_points = sum(points for item, points in default_rubric(lab).synthesis.items() if item.startswith("rationale_"))
    for seed in SEEDS:
        report = grade_bundle(solved(lab, track, seed))
        assert [(f.part, f.criterion) for f in report.findings] == [("synthesis", "generated")], (
            seed, [f.message for f in report.findings])
        assert report.score == report.max_score - rationale_points == 88
        assert all(part.score == part.max_score for name, part in report.parts.items() if name != "synthesis")
        assert report.flags == ["generated"]


@pytest.mark.parametrize("lab, track", sweep(LAB_TRACKS, fast=[("lab07", "cloud"), ("lab11", "edge")]))
def test_every_recorded_number_equals_mlsysim(lab, track):
    for seed in SEEDS[:4]:
        bundle = solved(lab, track, seed)
        for part, record in bundle["evidence"].items():
            arms = [record["baseline"], record["result"], *record["alternatives"]]
            if record["chosen_result"] is not None:
                arms.append(record["chosen_result"])
            for arm in arms:
                assert _direct(lab, track, record["model_key"], arm) == arm, (seed, part)


def _vary_one(lab_id: str, track: str):
    """Every allowed value of every non-decision control, one control at a time."""
    lab = get_lab(lab_id)
    for part in PARTS:
        for control in lab.parts[part].controls:
            if control.decision:
                continue
            for value in control.values():
                controls = {p: lab.sample_controls(track, p, None) for p in PARTS}
                controls[part] = lab.complete_decision(track, part, {**controls[part], control.name: value}, random.Random(1))
                yield part, control.name, value, controls


@pytest.mark.parametrize("lab_id, track", sweep(LAB_TRACKS, fast=[("lab07", "tinyml")]))
def test_every_control_value_in_the_domain_grades_cleanly(lab_id, track):
    """Contrasting settings earn full marks; the seed-disallowed baseline-identical ones lose only contrast."""
    lab = get_lab(lab_id)
    seen = 0
    for part, name, value, controls in _vary_one(lab_id, track):
        bundle = bundle_from_controls(lab, track, controls, mlsysim_version=mlsysim_version(), grader_version=__version__,
                                      rng=random.Random(3))
        report = grade_bundle(bundle)
        criteria = {(f.part, f.criterion) for f in report.findings} - {("synthesis", "generated")}
        assert criteria <= {(part, "contrast")}, (part, name, value, [f.message for f in report.findings])
        assert report.score == (86 if criteria else 88)
        seen += 1
    expected = sum(len(c.values()) for p in lab.parts.values() for c in p.controls if not c.decision)
    assert seen == expected


def test_seeded_solve_is_deterministic_and_seeds_differ():
    assert solved("lab11", "edge", 3) == solved("lab11", "edge", 3)
    controls = {str(solved("lab07", "cloud", seed)["controls"]) for seed in range(6)}
    assert len(controls) > 3
