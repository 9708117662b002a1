"""Reading a replay mismatch (mlsys_grader.core.drift): the hosted labs' build is tolerated where the lab lists it,
moved inputs are an edit, and only a mismatch that is neither reads as another mlsysim."""

from __future__ import annotations

import copy
import json
import math

import pytest
from conftest import reseal, solved

from mlsys_grader import get_lab, grade_bundle
from mlsys_grader.api import default_replay, default_rubric, mlsysim_version
from mlsys_grader.core.context import build_context
from mlsys_grader.core.drift import BuildVariant, spread
from mlsys_grader.core.models import bundle_from_mapping

PINNED, HOSTED = 137438.953472, 128000.0
BUILD_VARIANTS = get_lab("lab07").build_variants()
HOSTED_BUILD = BUILD_VARIANTS[0].build


# -- the hosted labs' build ----------------------------------------------------------------------------------------
def test_the_lab07_table_lists_one_field_and_the_pinned_evaluator_gives_its_pinned_value():
    """The table lives with the lab: Lab 07 D's memory capacity on mobile and edge, 128 GiB in 0.3.0 and 128 GB in
    the hosted build; the value 0.3.0 gives on every batch of those tracks is the listed pinned one, and on the other
    tracks (whose hosts the table does not name) something else."""
    (variant,) = BUILD_VARIANTS
    assert (variant.part, variant.field, variant.tracks, variant.values) == ("D", "memory_capacity_mb", ("mobile", "edge"),
                                                                           (PINNED, HOSTED))
    assert PINNED == 128 * 2**30 / 1e6 and HOSTED == 128 * 1e9 / 1e6 and "mlsysim 0.1.2" in variant.build
    lab = get_lab("lab07")
    assert lab.build_variants() == BUILD_VARIANTS and get_lab("lab11").build_variants() == ()
    for track in lab.tracks:
        seen = {lab.plan(default_replay(), track, "D", {"policy": policy, "batch_size": batch}, {}).result["memory_capacity_mb"]
                for policy in ("alternate", "input_only") for batch in (1, 8, 64)}
        assert (seen == {PINNED}) == (track in variant.tracks), track


def _with_capacity(track: str, value: float, seed: int = 1) -> dict:
    data = solved("lab07", track, seed)
    for arm in ("baseline", "result"):
        data["evidence"]["D"][arm]["memory_capacity_mb"] = value
    return reseal(data)


@pytest.mark.parametrize("track", ["mobile", "edge"])
def test_the_hosted_builds_capacity_keeps_part_ds_points_with_a_note(track):
    honest = grade_bundle(json.dumps(solved("lab07", track, 1)))
    report = grade_bundle(json.dumps(_with_capacity(track, HOSTED)))
    assert report.parts["D"] == honest.parts["D"] and report.score == honest.score
    assert "integrity" not in report.flags and "version_drift" not in report.flags
    (note,) = [f for f in report.findings if f.part == "D"]
    assert (note.criterion, note.rubric_item, note.voids_part, note.expected, note.actual) == ("version", None, False, PINNED, HOSTED)
    assert HOSTED_BUILD in note.message and "counts in full; nothing to do" in note.message


@pytest.mark.parametrize("track, value", [("mobile", 129000.0), ("edge", 129000.0), ("mobile", 137000.0),
                                          ("tinyml", HOSTED), ("cloud", HOSTED)])
def test_any_other_capacity_or_track_is_still_an_edit(track, value):
    report = grade_bundle(json.dumps(_with_capacity(track, value)))
    (finding,) = [f for f in report.findings if f.part == "D"]
    assert (finding.criterion, finding.rubric_item, finding.voids_part) == ("replay", "replay", True)
    assert finding.actual == value and "recapture the part instead of editing numbers" in finding.message
    assert "integrity" in report.flags and "version_drift" not in report.flags and report.parts["D"].score == 0


def test_a_hosted_value_beside_an_edited_number_is_still_an_edit():
    data = _with_capacity("edge", HOSTED)
    data["evidence"]["D"]["result"]["step_time_ms"] *= 1.5
    report = grade_bundle(json.dumps(reseal(data)))
    (finding,) = [f for f in report.findings if f.part == "D"]
    assert finding.criterion == "replay" and "step_time_ms" in finding.message and "integrity" in report.flags


def test_a_variant_accepts_only_its_part_track_field_and_values():
    variant = BuildVariant("D", "memory_capacity_mb", ("mobile",), (1.0, 2.0), "a build")
    assert variant.accepts("mobile", "D", "baseline.memory_capacity_mb", 1.0, 2.0)
    assert variant.accepts("mobile", "D", "chosen_result.memory_capacity_mb", 2.0, 1.0 + 1e-12)
    assert not variant.accepts("edge", "D", "baseline.memory_capacity_mb", 1.0, 2.0)
    assert not variant.accepts("mobile", "C", "baseline.memory_capacity_mb", 1.0, 2.0)
    assert not variant.accepts("mobile", "D", "baseline.step_time_ms", 1.0, 2.0)
    assert not variant.accepts("mobile", "D", "baseline.memory_capacity_mb", 1.0, 3.0)
    assert not variant.accepts("mobile", "D", "baseline.memory_capacity_mb", 1.0, True)


# -- moved inputs: an edit, never drift ---------------------------------------------------------------------------
def _move_arms(data: dict, part: str, plan) -> None:
    """The part's record names ``plan``'s inputs (its own and each arm's, its seal resealed), its numbers unchanged."""
    lab, record = get_lab(data["lab"]), data["evidence"][part]
    record["inputs"] = json.loads(json.dumps(dict(plan.upstream)))
    for name, arm in (("baseline", plan.baseline), ("result", plan.result), ("chosen_result", plan.chosen_result)):
        if record.get(name) is not None and arm is not None:
            record[name]["inputs"] = copy.deepcopy(arm["inputs"])
    record["upstream_fingerprint"] = lab.fingerprint(data["track"], part, record["inputs"])


def moved_lab07_d(track: str, seed: int) -> dict:
    """Part D's batch moved one step (controls too, so nothing is stale), its numbers the old batch's."""
    data, lab = solved("lab07", track, seed), get_lab("lab07")
    controls = dict(data["controls"]["D"])
    controls["batch_size"] = controls["batch_size"] % 64 + 1
    _move_arms(data, "D", lab.plan(default_replay(), track, "D", controls, {}))
    data["controls"]["D"] = controls
    return reseal(data)


def moved_lab11_d(track: str, seed: int) -> dict:
    """Part C recaptured with other settings, and part D's inputs rewritten to that C result instead of recapturing D:
    D's numbers are the old C's."""
    data, lab = solved("lab11", track, seed), get_lab("lab11")
    other = next(solved("lab11", track, s) for s in range(seed + 1, seed + 40)
                 if solved("lab11", track, s)["controls"]["C"] != data["controls"]["C"])
    data["controls"]["C"], data["evidence"]["C"] = other["controls"]["C"], other["evidence"]["C"]
    new_c = lab.plan(default_replay(), track, "C", other["controls"]["C"], {}).result
    _move_arms(data, "D", lab.plan(default_replay(), track, "D", data["controls"]["D"], {"C": new_c}))
    return reseal(data)


def moved_lab07_e(track: str, seed: int, control: str) -> dict:
    """Part E's operator or shape moved to the next value (not the baseline pair), its numbers the old setting's."""
    data, lab = solved("lab07", track, seed), get_lab("lab07")
    controls = dict(data["controls"]["E"])
    values = lab.parts["E"].control(control).values()
    while True:
        controls[control] = values[(values.index(controls[control]) + 1) % len(values)]
        if (controls["operator"], controls["shape_mode"]) != ("relu", "static"):
            break
    _move_arms(data, "E", lab.plan(default_replay(), track, "E", controls, {}))
    data["controls"]["E"] = controls
    return reseal(data)


TRACKS = ("tinyml", "mobile", "edge", "cloud")
MOVED = ([(f"lab07-D-{track}-{seed}", "D", moved_lab07_d, (track, seed)) for track in TRACKS for seed in (0, 1)]
         + [(f"lab11-D-on-C-{track}-{seed}", "D", moved_lab11_d, (track, seed)) for track in TRACKS for seed in (0, 1)]
         + [(f"lab07-E-{control}-{track}-{seed}", "E", moved_lab07_e, (track, seed, control))
            for track, seed, control in (("tinyml", 2, "shape_mode"), ("mobile", 0, "shape_mode"), ("edge", 0, "operator"),
                                         ("cloud", 3, "operator"))])
"""The 20 cases of moved inputs (Lab 07 D, Lab 11 D on another C, Lab 07 E) whose mismatch runs through the part."""


@pytest.mark.parametrize("name, part, make, args", MOVED, ids=[case[0] for case in MOVED])
def test_moved_inputs_are_an_edit_not_version_drift(name, part, make, args):
    data = make(*args)
    bundle = bundle_from_mapping(data)
    lab = get_lab(bundle.lab)
    ctx = build_context(bundle, lab, default_rubric(lab.lab_id), default_replay(), mlsysim_version=mlsysim_version(),
                        grader_version="test")
    found = ctx.parts[part].mismatches
    assert found and spread(found), "the mismatch runs through the part: the pattern alone would read as drift"
    report = grade_bundle(bundle)
    findings = [f for f in report.findings if f.part == part and f.criterion in ("replay", "version")]
    assert [(f.criterion, f.rubric_item, f.voids_part) for f in findings] == [("replay", "replay", True)]
    assert "computes for another setting (" in findings[0].message
    assert "recapture the part instead of editing its inputs" in findings[0].message
    assert "integrity" in report.flags and "version_drift" not in report.flags
    assert not any(f.criterion == "stale" and f.part == part for f in report.findings)


def test_the_moved_setting_is_named_the_old_one():
    data = solved("lab07", "cloud", 1)
    old = dict(data["controls"]["D"])
    report = grade_bundle(json.dumps(moved_lab07_d("cloud", 1)))
    (finding,) = [f for f in report.findings if f.part == "D" and f.criterion == "replay"]
    assert f"(policy = {old['policy']!r}, batch_size = {old['batch_size']!r})" in finding.message


def test_every_number_of_a_part_off_is_still_version_drift():
    """A mismatch through the whole part that no other setting gives reads as another mlsysim."""
    data = solved("lab07", "edge", 2)

    def nudge(value):
        if isinstance(value, dict):
            return {key: item if key == "inputs" else nudge(item) for key, item in value.items()}
        if isinstance(value, float) and not math.isclose(value, 0.0):
            return value * 1.001
        return value

    for arm in ("baseline", "result"):
        data["evidence"]["D"][arm] = nudge(data["evidence"]["D"][arm])
    report = grade_bundle(json.dumps(reseal(data)))
    (finding,) = [f for f in report.findings if f.part == "D" and f.criterion in ("replay", "version")]
    assert finding.criterion == "version" and "version_drift" in report.flags
