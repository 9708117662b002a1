"""The lab contract, on every registered lab (``mlsys_grader.labs.lab_ids()``: shipped and installed).

What holds for any lab is tested here once, never per lab: its declarations fit bundle schema 2,
``solve`` earns every evidence point across the tracks and the whole control domain, its template
rationale is flagged as the grader's own text, every recorded number is what the lab's evaluator
computes for the recorded inputs, and every allowed setting shows a verdict the grader accepts.
A lab's own rules (Lab 07 B ties, Lab 11 thresholds…) are pinned in ``tests/labs/test_<lab>.py``.
"""

from __future__ import annotations

import json
import random

import pytest
from conftest import (
    LAB_TRACKS,
    LABS,
    TRACKS,
    assert_shown_verdict_is_accepted,
    every_setting,
    examples,
    grid,
    plan_for,
    solved,
    sweep,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsys_grader import __version__, default_rubric, get_lab, grade_bundle, mlsysim_version
from mlsys_grader.api import default_replay
from mlsys_grader.core.jsonio import canonical_dumps
from mlsys_grader.core.labspec import (
    GradingLab,
    LabCode,
    LabRules,
    LabText,
    MarimoMapping,
    Presentation,
    RationaleWords,
    ReferenceAnswers,
)
from mlsys_grader.core.models import PARTS, SYNTHESIS_FIELDS, EvidenceRecord
from mlsys_grader.replay import Replay
from mlsys_grader.staff import bundle_from_controls

SEEDS = (None, *range(8))
FAST = [(lab, TRACKS[i % len(TRACKS)]) for i, lab in enumerate(LABS)]
"""One track per lab runs in the quick loop (``-m "not slow"``); the rest run in the full suite."""


def _rationale_points(lab: str) -> float:
    return sum(points for item, points in default_rubric(lab).synthesis.items() if item.startswith("rationale_"))


# -- declarations -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lab_id", LABS)
def test_a_lab_declares_parts_and_synthesis_answers_of_the_bundle_schema(lab_id):
    lab = get_lab(lab_id)
    assert lab.lab_id == lab_id and lab.part_ids() and set(lab.part_ids()) <= set(PARTS)
    assert set(lab.synthesis_fields) <= set(SYNTHESIS_FIELDS) and "rationale" in lab.synthesis_fields
    assert set(lab.synthesis_choices()) <= set(lab.synthesis_fields)
    for part, spec in lab.parts.items():
        assert spec.part == part and spec.predictions and set(spec.depends_on) <= set(lab.part_ids()[:lab.part_ids().index(part)])
        assert spec.check_controls(spec.defaults(), decisions=False) == spec.defaults()
    rubric = default_rubric(lab_id)
    assert rubric.lab == lab_id and set(rubric.parts) == set(lab.part_ids())


@pytest.mark.parametrize("lab_id", LABS)
def test_a_lab_plays_every_role_of_the_contract(lab_id):
    lab = get_lab(lab_id)
    roles = (LabRules, RationaleWords, ReferenceAnswers, Presentation, MarimoMapping, GradingLab)
    assert [role.__name__ for role in roles if not isinstance(lab, role)] == []


@pytest.mark.parametrize("lab_id", LABS)
def test_a_lab_is_its_declaration_and_one_small_code_protocol(lab_id):
    """No lab subclasses anything: a lab is a :class:`Lab` of its declaration and its code (its judge, a
    :class:`LabCode`), with nothing forwarded to other seams; the registry recorded where it loaded the lab from."""
    from mlsys_grader.labs import Lab, lab_modules

    lab = get_lab(lab_id)
    assert type(lab) is Lab and lab.module == lab_modules()[lab_id]
    assert isinstance(lab.judge, LabCode) and lab.spec.id == lab_id and isinstance(lab.text, LabText)
    assert not [name for name in ("rules", "words", "views_seam", "references") if hasattr(lab, name)]
    assert lab.replace(title="another title").lab_id == lab_id and lab.replace(lab_id="x").title == lab.title
    with pytest.raises(TypeError, match=r"Lab\.replace takes judge, lab_id, master, parts, title, tracks, views \(got rules\)"):
        lab.replace(rules=object())


def test_a_lab_that_is_not_assembled_is_refused_with_the_reason(tmp_path, monkeypatch):
    """A module whose ``LAB`` is something else (a class of an earlier release's style) is refused by name."""
    from mlsys_grader import UnknownLabError, register_lab
    from mlsys_grader import labs as registry

    (tmp_path / "old_style_lab.py").write_text("class OldStyle:\n    lab_id = 'oldstyle'\n\nLAB = OldStyle()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    register_lab("oldstyle", "old_style_lab")
    try:
        with pytest.raises(UnknownLabError, match=r"old_style_lab: a lab is a package declaring it \(lab.toml\), or a module whose LAB is a mlsys_grader.labs.Lab \(got OldStyle\)"):
            get_lab("oldstyle")
    finally:
        registry._REGISTERED.pop("oldstyle", None)


def test_a_rubric_that_names_no_lab_is_its_labs_and_one_that_names_another_is_refused():
    from mlsys_grader.core.rubric import rubric_from_toml
    from mlsys_grader.errors import RubricError
    from mlsys_grader.labs import rubric_text

    text = rubric_text("lab07")
    assert not any(line.startswith("lab =") for line in text.splitlines())
    assert rubric_from_toml(text, expected_lab="lab07").lab == "lab07"
    assert rubric_from_toml('lab = "lab07"\n' + text, expected_lab="lab07") == rubric_from_toml(text, expected_lab="lab07")
    with pytest.raises(RubricError, match="rubric is for lab 'lab11', expected 'lab07'"):
        rubric_from_toml('lab = "lab11"\n' + text, expected_lab="lab07")


@pytest.mark.parametrize("lab_id", LABS)
def test_a_lab_says_what_its_notebook_shows_and_its_marimo_export_holds(lab_id):
    lab = get_lab(lab_id)
    if lab.notebook is not None:
        assert set(lab.notebook.parts) == set(lab.part_ids())
        for part, text in lab.notebook.parts.items():
            assert text.scenario is not None or lab.scenario(TRACKS[0], part), (lab_id, part)
    layout = lab.marimo_layout
    if layout is not None:
        evidence = solved(lab_id, TRACKS[0])["evidence"]
        bound = layout.binding({part: evidence[part] for part in lab.part_ids()})
        assert bound and all(part in lab.part_ids() for part, _, _ in bound.values())
        # The snapshot's answers are the synthesis answers the lab asks for; an empty snapshot lacks each of them.
        assert set(layout.answers({})) == set(lab.synthesis_fields) - {"rationale"}
        assert layout.missing({}, False) == [name for name in SYNTHESIS_FIELDS if name in lab.synthesis_fields]
        assert layout.missing({layout.trigger: "x", "residual_risk": "y", layout.recommendation: "a", layout.rejected: "b"}, True) == []
        # A captured decision holds the answers (Lab 11), or must equal synthesis answers (Lab 08: part E's fix).
        for held in layout.decision_copies({part: evidence[part] for part in lab.part_ids()}, {}):
            assert held.part == (layout.decision_part or held.part) in lab.part_ids()
            assert held.captured is not None and held.copy is None


# -- solve earns every evidence point -------------------------------------------------------------------------
@pytest.mark.parametrize("lab, track", sweep(LAB_TRACKS, fast=FAST))
def test_solved_bundles_earn_every_evidence_point_and_are_flagged_generated(lab, track):
    for seed in SEEDS:
        report = grade_bundle(solved(lab, track, seed))
        assert [(f.part, f.criterion) for f in report.findings] == [("synthesis", "generated")], (
            seed, [f.message for f in report.findings])
        assert report.score == report.max_score - _rationale_points(lab)
        assert all(part.score == part.max_score for name, part in report.parts.items() if name != "synthesis")
        assert report.flags == ("generated",)


@pytest.mark.parametrize("lab, track", sweep(LAB_TRACKS, fast=FAST))
def test_every_recorded_number_is_what_the_labs_evaluator_computes(lab, track):
    """Each arm evaluated afresh through the lab's own evaluator, past every cache and replay table."""
    spec = get_lab(lab)
    for seed in SEEDS[:4]:
        bundle = solved(lab, track, seed)
        for part, record in bundle["evidence"].items():
            arms = [record["baseline"], record["result"], *record["alternatives"]]
            if record["chosen_result"] is not None:
                arms.append(record["chosen_result"])
            for arm in arms:
                if spec.arm_inputs(arm) is None:  # an arm that keeps no inputs (Lab 08's D and E alternatives)
                    continue
                fresh = json.loads(canonical_dumps(spec.evaluate_arm(track, record["model_key"], spec.arm_inputs(arm))))
                assert fresh == arm, (seed, part)
            if any(spec.arm_inputs(arm) is None for arm in record["alternatives"]):
                # Computed inside the part's plan only: rebuilt by a live replay with no table or memo.
                live = Replay()
                inferred = spec.infer_controls(live, track, part, EvidenceRecord.model_validate(record))
                assert inferred is not None, (seed, part)
                rebuilt = spec.plan(live, track, part, inferred.controls, inferred.upstream)
                assert list(rebuilt.alternatives) == record["alternatives"], (seed, part)


def _vary_one(lab_id: str, track: str):
    """Every allowed value of every non-decision control, one control at a time."""
    lab = get_lab(lab_id)
    for part in lab.part_ids():
        for control in lab.parts[part].controls:
            if control.decision:
                continue
            for value in control.values():
                controls = {p: lab.sample_controls(default_replay(), track, p, None) for p in lab.part_ids()}
                controls[part] = lab.complete_decision(default_replay(), track, part, {**controls[part], control.name: value}, random.Random(1))
                yield part, control.name, value, controls


@pytest.mark.parametrize("lab_id, track", sweep(LAB_TRACKS, fast=FAST[:1]))
def test_every_control_value_in_the_domain_grades_cleanly(lab_id, track):
    """Contrasting settings earn full marks; the seed-disallowed baseline-identical ones lose only contrast."""
    lab = get_lab(lab_id)
    rubric = default_rubric(lab_id)
    seen = 0
    for part, name, value, controls in _vary_one(lab_id, track):
        bundle = bundle_from_controls(lab, track, controls, mlsysim_version=mlsysim_version(), grader_version=__version__,
                                      rng=random.Random(3))
        report = grade_bundle(bundle)
        criteria = {(f.part, f.criterion) for f in report.findings} - {("synthesis", "generated")}
        assert criteria <= {(part, "contrast")}, (part, name, value, [f.message for f in report.findings])
        contrast = rubric.parts[part].get("contrast", 0) if criteria else 0
        assert report.score == report.max_score - _rationale_points(lab_id) - contrast
        seen += 1
    expected = sum(len(c.values()) for p in lab.parts.values() for c in p.controls if not c.decision)
    assert seen == expected


@pytest.mark.parametrize("lab_id", LABS)
def test_seeded_solve_is_deterministic_and_seeds_differ(lab_id):
    assert solved(lab_id, "edge", 3) == solved(lab_id, "edge", 3)
    controls = {str(solved(lab_id, "cloud", seed)["controls"]) for seed in range(6)}
    assert len(controls) > 3


# -- judgement answers agree with what the student is shown ---------------------------------------------------
# The notebook states, for every part, the observed verdict in the part's own option words
# (``Lab.displayed_prediction``, rendered by ``notebook_views``); the grader must accept it at
# every allowed setting.
@pytest.mark.parametrize("lab_id, track", sweep(LAB_TRACKS, fast=FAST[:1]))
def test_every_allowed_setting_shows_a_verdict_the_grader_accepts(lab_id, track):
    count = 0
    for part, controls, upstream in every_setting(lab_id):
        plan = plan_for(lab_id, track, part, controls, upstream)
        assert_shown_verdict_is_accepted(lab_id, track, part, plan, f"{lab_id} {track} {part} {controls} {upstream or ''}")
        count += 1
    assert count >= sum(len(grid(get_lab(lab_id), part)) for part in get_lab(lab_id).parts)


@st.composite
def allowed_settings(draw):
    lab_id = draw(st.sampled_from(LABS))
    lab = get_lab(lab_id)
    part = draw(st.sampled_from(tuple(lab.parts)))
    controls = {c.name: draw(st.sampled_from(c.values())) for c in lab.parts[part].controls if not c.decision}
    upstream = {dep: draw(st.sampled_from(grid(lab, dep))) for dep in lab.parts[part].depends_on} or None
    return lab_id, draw(st.sampled_from(lab.tracks)), part, controls, upstream


@settings(max_examples=examples(60), deadline=None)
@given(allowed_settings())
def test_a_random_allowed_setting_shows_a_verdict_the_grader_accepts(setting):
    lab_id, track, part, controls, upstream = setting
    plan = plan_for(lab_id, track, part, controls, upstream)
    assert_shown_verdict_is_accepted(lab_id, track, part, plan, repr(setting))
