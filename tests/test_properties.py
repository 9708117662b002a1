"""Property tests: round trips, determinism, score bounds, tamper and domain detection."""

from __future__ import annotations

import json

from conftest import LABS, TRACKS, examples, reseal, solved
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlsys_grader import get_lab, grade_bundle, load_bundle

SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
labs_tracks = st.tuples(st.sampled_from(LABS), st.sampled_from(TRACKS), st.sampled_from([None, 1, 2]))


def _output_numbers(record: dict) -> list[tuple]:
    """Paths of every recorded output number (arm-level ``inputs`` excluded: those are domain)."""
    paths = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                if len(path) == 1 and key == "inputs":
                    continue
                walk(item, (*path, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*path, index))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            paths.append(path)

    for arm in ("baseline", "result", "chosen_result"):
        if record.get(arm) is not None:
            walk(record[arm], (arm,))
    for index, arm in enumerate(record["alternatives"]):
        walk(arm, (("alternatives", index),))
    return paths


def _get_parent(record, path):
    node = record
    for key in path[:-1]:
        node = node[key[0]][key[1]] if isinstance(key, tuple) else node[key]
    return node


@SETTINGS
@given(labs_tracks)
def test_bundle_json_round_trip_is_identity(case):
    lab, track, seed = case
    bundle = load_bundle(json.dumps(solved(lab, track, seed)))
    assert load_bundle(bundle.to_json()) == bundle
    assert load_bundle(bundle.to_json(indent=None)).compute_hash() == bundle.content_hash


@SETTINGS
@given(labs_tracks, st.data())
def test_perturbing_any_recorded_output_number_is_caught_as_replay(case, data):
    lab, track, seed = case
    bundle = solved(lab, track, seed)
    part = data.draw(st.sampled_from(get_lab(lab).part_ids()))
    paths = _output_numbers(bundle["evidence"][part])
    path = data.draw(st.sampled_from(paths))
    parent = _get_parent(bundle["evidence"][part], path)
    key = path[-1][0] if isinstance(path[-1], tuple) else path[-1]
    old = parent[key]
    delta = data.draw(st.floats(min_value=1e-6, max_value=10.0))
    parent[key] = old * (1 + delta) + delta if not isinstance(old, int) else old + max(1, int(delta))
    report = grade_bundle(reseal(bundle))
    replay = [f for f in report.findings if f.part == part and f.criterion == "replay"]
    assert replay, (part, path, old, parent[key])
    assert "recapture the part instead of editing numbers" in replay[0].message
    assert "integrity" in report.flags
    assert report.parts[part].score <= report.parts[part].max_score - 4


def _out_of_domain(control, draw):
    if control.kind in ("int", "float"):
        return draw(st.sampled_from([control.maximum + control.step, control.minimum - control.step,
                                     control.minimum + control.step / 2, str(control.default), None, True]))
    if control.kind == "bool":
        return draw(st.sampled_from([1, "yes", None]))
    return draw(st.sampled_from(["bogus", 99, None]))


@SETTINGS
@given(labs_tracks, st.data())
def test_any_final_control_outside_its_domain_is_a_domain_finding(case, data):
    lab_id, track, seed = case
    lab = get_lab(lab_id)
    bundle = solved(lab_id, track, seed)
    part = data.draw(st.sampled_from([p for p in lab.part_ids() if any(not c.decision for c in lab.parts[p].controls)]))
    control = data.draw(st.sampled_from([c for c in lab.parts[part].controls if not c.decision]))
    bad = _out_of_domain(control, data.draw)
    bundle["controls"][part][control.name] = bad
    report = grade_bundle(reseal(bundle))
    domain = [f for f in report.findings if f.part == part and f.criterion == "domain"]
    assert domain, (part, control.name, bad)
    assert control.name in domain[0].message and "must be" in domain[0].message


@SETTINGS
@given(labs_tracks, st.data())
def test_any_recorded_input_outside_its_domain_is_a_domain_finding(case, data):
    lab_id, track, seed = case
    bundle = solved(lab_id, track, seed)
    part = data.draw(st.sampled_from(get_lab(lab_id).part_ids()))
    arm = bundle["evidence"][part]["result"]["inputs"]
    key = data.draw(st.sampled_from(sorted(k for k, v in arm.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool))))
    old = arm[key]
    arm[key] = old + 1000 if isinstance(old, (int, float)) else old + "-edited"
    report = grade_bundle(reseal(bundle))
    assert any(f.part == part and f.criterion == "domain" for f in report.findings), (part, key)
    assert "integrity" in report.flags


@SETTINGS
@given(labs_tracks)
def test_grading_is_deterministic(case):
    lab, track, seed = case
    data = json.dumps(solved(lab, track, seed))
    assert grade_bundle(data).model_dump() == grade_bundle(data).model_dump()


@SETTINGS
@given(labs_tracks, st.data())
def test_score_stays_within_bounds_under_random_damage(case, data):
    lab, track, seed = case
    bundle = solved(lab, track, seed)
    for part in data.draw(st.lists(st.sampled_from(get_lab(lab).part_ids()), max_size=5, unique=True)):
        action = data.draw(st.sampled_from(["drop", "prediction", "stale", "decision"]))
        if action == "drop":
            bundle["evidence"].pop(part)
        elif action == "prediction":
            bundle["evidence"][part]["prediction"] = data.draw(st.sampled_from([None, "bogus"]))
        elif action == "stale":
            bundle["evidence"][part]["upstream_fingerprint"] = "0" * 64
        else:
            bundle["evidence"][part]["decision"] = "bogus"
    bundle["synthesis"]["rationale"] = data.draw(st.text(max_size=200))
    report = grade_bundle(reseal(bundle))
    assert 0 <= report.score <= report.max_score
    assert all(0 <= p.score <= p.max_score for p in report.parts.values())
