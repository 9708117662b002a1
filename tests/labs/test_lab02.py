"""Lab 02's own rules, pinned with the measured numbers: its evaluator constants, the book's construction of every arm
over the whole domain, part D's placement decision built on part A's payload and link (and stale when part A moves),
the synthesis rules, and the book's own marimo exports.

What holds for every lab is in ``tests/labs/test_contract.py``.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TRACKS, every_setting, plan_for, reseal, solved, sweep

from mlsys_grader.api import default_replay, grade_bundle
from mlsys_grader.core.capture import record_from_plan
from mlsys_grader.course._gradebook import grade_candidate, resolve_rubrics
from mlsys_grader.course._ingest import Candidate
from mlsys_grader.labs import get_lab
from mlsys_grader.labs.lab02 import judge

LAB = "lab02"
SPEC = get_lab(LAB).spec
CANDIDATES = tuple(SPEC.constant("candidates"))
PAYLOAD_LEVELS, CONNECTION_LEVELS = tuple(SPEC.constant("payload_levels")), tuple(SPEC.constant("connection_levels"))
MARIMO = Path(__file__).resolve().parents[1] / "fixtures" / "marimo"


def book_seal(track: str, upstream_inputs: dict) -> str:
    """The book's ``upstream_fingerprint``, written here from its rule (not the package's function)."""
    text = json.dumps({"track": track, "inputs": upstream_inputs}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_declaration_restates_the_evaluators_constants():
    from mlsysim.labs.experiments import v1_02_experiments as ev

    assert SPEC.evaluator == ev.__name__ and ev.MODEL_KEY == SPEC.model_id == get_lab(LAB).model_id
    assert set(ev.TRACKS) == set(get_lab(LAB).tracks) == set(SPEC.tracks)
    for table in ("payload_options_mb", "connection_options_mbps", "distance_km", "baseline_duty_cycle"):
        assert set(SPEC.constants[table]) == set(ev.TRACKS), table
    for track, profile in ev.TRACKS.items():
        assert tuple(profile["payload_options_mb"]) == tuple(SPEC.constant("payload_options_mb", track))
        assert tuple(profile["connection_options_mbps"]) == tuple(SPEC.constant("connection_options_mbps", track))
        assert profile["distance_km"] == SPEC.constant("distance_km", track)
        assert profile["baseline_duty_cycle"] == SPEC.constant("baseline_duty_cycle", track)
        # every step of the book's duty-cycle slider on this track is an allowed setting here
        step = profile.get("duty_cycle_step", 0.05)
        allowed = set(get_lab(LAB).parts["C"].control("duty_cycle").values())
        assert {round(i * step, 10) for i in range(round(1 / step) + 1)} <= allowed
    assert tuple(ev.FILTERING_ALTERNATIVES) == CANDIDATES[1:]
    assert SPEC.constant("horizon_hours") == inspect.signature(ev.sustained_operation).parameters["horizon_hours"].default


@pytest.mark.slow  # a fresh interpreter
def test_only_the_evaluation_module_imports_mlsysim():
    """The lab object, its declaration, judge and views load without it."""
    probe = ("import sys\n"
             "from mlsys_grader.labs import get_lab\n"
             "from mlsys_grader.labs.lab02 import judge, views\n"
             "LAB = get_lab('lab02')\n"
             "LAB.parts['B'].check_controls({'memory_scale': 1.5, 'execution_scale': 3.5})\n"
             "assert 'mlsysim' not in sys.modules, sorted(m for m in sys.modules if m.startswith('mlsysim'))\n"
             "from mlsys_grader.labs.lab02 import evaluate\n"
             "assert 'mlsysim' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_sweep_covers_the_whole_domain():
    """9 + 11×40 + 101 + 2×9 settings: part D (connectivity) on each of part A's nine payload and link settings."""
    assert sum(1 for _ in every_setting(LAB)) == 568


# -- every allowed setting, as the book's notebook builds it -----------------------------------------------------
def book_arms(track: str, part: str, controls: dict, a_controls: dict | None) -> tuple[dict, dict, list, dict]:
    """(baseline, result, alternatives, upstream inputs) as the book's notebook cell computes them through mlsysim."""
    from mlsysim.labs.experiments import v1_02_experiments as ev

    profile = ev.TRACKS[track]
    if part == "A":
        payload = profile["payload_options_mb"][PAYLOAD_LEVELS.index(controls["payload"])]
        rate = profile["connection_options_mbps"][CONNECTION_LEVELS.index(controls["connection"])]
        base = ev.placement_accounting(track, payload_mb=profile["payload_options_mb"][0],
                                       connection_mbps=profile["connection_options_mbps"][-1], filter_id="raw")
        return base, ev.placement_accounting(track, payload_mb=payload, connection_mbps=rate, filter_id="raw"), [], {
            "payload_mb": payload, "connection_mbps": rate}
    if part == "B":
        upstream = {"memory_scale": controls["memory_scale"], "execution_scale": controls["execution_scale"]}
        return ev.workload_feasibility(track), ev.workload_feasibility(track, **upstream), [], upstream
    if part == "C":
        return (ev.sustained_operation(track), ev.sustained_operation(track, duty_cycle=controls["duty_cycle"]),
                [ev.sustained_operation(track, duty_cycle=0.0)], {"duty_cycle": controls["duty_cycle"]})
    assert a_controls is not None
    *_, a_upstream = book_arms(track, "A", a_controls, None)
    comparison = ev.compare_placements(track, payload_mb=a_upstream["payload_mb"], connection_mbps=a_upstream["connection_mbps"],
                                       connectivity_available=controls["connectivity_available"])
    candidates = {"local": comparison["local"], **comparison["remote"]}
    choice, rejected = controls["choice"], controls["rejected"]
    compared = choice if choice not in (None, "none") else rejected
    baseline = rejected if choice not in (None, "none") else ("local" if compared != "local" else "raw")
    upstream = {**a_upstream, "connectivity_available": controls["connectivity_available"], "choice": choice, "rejected": rejected}
    return candidates[baseline], candidates[compared], list(candidates.values()), upstream


def _settings(track: str):
    """Every allowed setting of every part; part D also with every placement decision and rejected design."""
    decisions = [(choice, rejected) for choice in (*CANDIDATES, "none") for rejected in CANDIDATES
                 if choice != rejected]
    for part, controls, upstream in every_setting(LAB):
        if part != "D":
            yield part, controls, None
            continue
        for choice, rejected in decisions:
            yield part, {**controls, "choice": choice, "rejected": rejected}, upstream["A"]


@pytest.mark.parametrize("track", sweep(TRACKS, fast=["edge"]))
def test_every_allowed_setting_replays_exactly_as_the_book_builds_it(track):
    """The plan at every setting is the book's construction through mlsysim, number for number; its record is sealed as
    the book seals it (part D over part A's payload and link, without ``compared_design``), and the grader recovers
    the setting from the record and rebuilds the same arms."""
    lab, replay = get_lab(LAB), default_replay()
    count = 0
    for part, controls, a_controls in _settings(track):
        upstream = {"A": lab.plan(replay, track, "A", a_controls, {}).result} if a_controls else {}
        plan = lab.plan(replay, track, part, controls, upstream)
        base, result, alternatives, upstream_inputs = book_arms(track, part, controls, a_controls)
        assert (plan.baseline, plan.result, list(plan.alternatives)) == (base, result, alternatives), (part, controls)
        record = record_from_plan(lab, track, plan, None, mlsysim_version="0.3.0", grader_version="x",
                                  prediction_locked_at=None, result_shown_at=None, captured_at=None)
        assert record.upstream_fingerprint == book_seal(track, upstream_inputs), (part, controls)
        inferred = lab.infer_controls(replay, track, part, record)
        assert inferred is not None and inferred.controls == controls, (part, controls)
        assert lab.plan(replay, track, part, inferred.controls, inferred.upstream) == plan
        count += 1
    assert count == 9 + 440 + 101 + 18 * 16


def test_every_recorded_number_equals_mlsysim_itself():
    """Recomputed straight through ``v1_02_experiments.replay``, bypassing the grader."""
    from mlsysim.labs.experiments import v1_02_experiments as ev

    for track in TRACKS:
        bundle = solved(LAB, track, 2)
        for part, record in bundle["evidence"].items():
            for arm in (record["baseline"], record["result"], *record["alternatives"]):
                assert ev.replay(record["model_key"], arm["inputs"]) == arm, (track, part)


# -- the judgements -------------------------------------------------------------------------------------------
def test_a_verdict_follows_the_deadline_and_no_setting_ties():
    """Part A is judged on whether the selected request crosses the deadline; no allowed setting makes remote and local
    latency equal to the notebook's one decimal, so "tie" is never accepted."""
    for track in TRACKS:
        for controls in ({"payload": p, "connection": c} for p in PAYLOAD_LEVELS for c in CONNECTION_LEVELS):
            plan = plan_for(LAB, track, "A", controls)
            accepted = get_lab(LAB).accepted_predictions(track, "A", plan)
            assert accepted == {"fail" if plan.result["remote_latency_ms"] > plan.result["deadline_ms"] else "pass"}
    assert get_lab(LAB).accepted_predictions("edge", "A", plan_for(LAB, "edge", "A", {"payload": "largest", "connection": "middle"})) == {"fail"}
    assert get_lab(LAB).accepted_predictions("edge", "A", plan_for(LAB, "edge", "A", {"payload": "smallest", "connection": "middle"})) == {"pass"}


def test_d_accepts_every_design_that_satisfies_every_requirement():
    lab = get_lab(LAB)
    cloud = plan_for(LAB, "cloud", "D", {"connectivity_available": True}, {"A": {"payload": "largest", "connection": "middle"}})
    assert judge.feasible_designs(cloud) == ["local", "event_filter"]
    assert lab.accepted_predictions("cloud", "D", cloud) == {"local", "event_filter"}
    assert lab.displayed_prediction("cloud", "D", cloud) == "local"
    offline = plan_for(LAB, "cloud", "D", {"connectivity_available": False}, {"A": {"payload": "largest", "connection": "middle"}})
    assert lab.accepted_predictions("cloud", "D", offline) == {"local"}
    assert all(arm["violations"][:1] == ["connectivity"] for arm in offline.alternatives[1:])


# -- grading: what a diligent student earns, and what is caught ----------------------------------------------
def _graded(data: dict):
    return grade_bundle(json.dumps(reseal(data)))


def _criteria(report, part: str) -> set[str]:
    return {f.criterion for f in report.findings if f.part == part}


def test_an_edited_number_is_caught_and_voids_its_part():
    data = solved(LAB, "mobile", 1)
    data["evidence"]["B"]["result"]["execution_ms"] *= 1.1
    report = _graded(data)
    assert "replay" in _criteria(report, "B") and report.parts["B"].score == 0 and "integrity" in report.flags


def test_a_dropped_part_is_caught():
    data = solved(LAB, "edge", 1)
    del data["evidence"]["C"]
    report = _graded(data)
    assert "missing" in _criteria(report, "C") and report.parts["C"].score == 0
    assert report.parts["A"].score == report.parts["A"].max_score


def test_part_a_changed_after_part_d_was_captured_makes_d_stale():
    """Part D builds on part A's payload and link: recapturing part A with another payload leaves D's record sealed over
    the old one, so D is stale for the grader and for the book's own seal, and part A itself is fine."""
    data = solved(LAB, "edge", None)
    assert data["controls"]["A"] == {"payload": "largest", "connection": "middle"}
    other = bundle_with(data, "A", {"payload": "middle", "connection": "middle"})
    report = _graded(other)
    stale = [f for f in report.findings if f.criterion == "stale"]
    assert [(f.part, f.rubric_item) for f in stale] == [("D", "fresh")], [f.message for f in report.findings]
    assert "or the part A result it builds on" in stale[0].message and "recapture part D" in stale[0].message
    assert report.parts["A"].score == report.parts["A"].max_score
    assert report.parts["D"].score == report.parts["D"].max_score - 4
    d = other["evidence"]["D"]
    live = get_lab(LAB).plan(default_replay(), "edge", "A", other["controls"]["A"], {}).result["inputs"]
    book_now = {**{k: live[k] for k in ("payload_mb", "connection_mbps")},
                **{k: d["inputs"][k] for k in ("connectivity_available", "choice", "rejected")}}
    assert d["upstream_fingerprint"] != book_seal("edge", book_now)  # the book's audit calls it stale too


def bundle_with(data: dict, part: str, controls: dict) -> dict:
    """``data`` with ``part`` recaptured at ``controls`` (its final settings and its record), nothing else touched."""
    from mlsys_grader.staff import bundle_from_controls

    lab = get_lab(LAB)
    fresh = bundle_from_controls(lab, data["track"], {**data["controls"], part: controls}, mlsysim_version="0.3.0",
                                 grader_version="x")
    changed = copy.deepcopy(data)
    changed["controls"][part] = controls
    record = json.loads(fresh.to_json())["evidence"][part]
    changed["evidence"][part] = {**record, **{k: data["evidence"][part][k] for k in ("mlsysim_version", "grader_version")}}
    return changed


def test_recommending_the_rejected_alternative_is_caught():
    data = solved(LAB, "cloud", 1)
    data["synthesis"]["rejected_alternative"] = data["synthesis"]["recommendation"]
    report = _graded(data)
    assert any("must differ from the recommendation" in f.message for f in report.findings if f.part == "synthesis")
    assert report.parts["synthesis"].score < report.parts["synthesis"].max_score


def test_the_recommendation_must_be_part_ds_captured_placement():
    data = solved(LAB, "cloud", 1)
    data["synthesis"]["recommendation"] = "event_filter"
    data["synthesis"]["rejected_alternative"] = "raw"
    report = _graded(data)
    assert any("placement decision you captured in part D" in f.message for f in report.findings if f.part == "synthesis")


@pytest.mark.parametrize("choice, rejected, fragment", [
    ("raw", "local", "fails a stated requirement"),
    ("none", "raw", "valid only when no design satisfies every requirement"),
])
def test_d_decision_rules(choice, rejected, fragment):
    data = solved(LAB, "edge", None)
    changed = bundle_with(data, "D", {**data["controls"]["D"], "choice": choice, "rejected": rejected})
    changed["synthesis"]["recommendation"] = choice
    changed["synthesis"]["rejected_alternative"] = rejected
    report = _graded(changed)
    decision = [f for f in report.findings if f.part == "D" and f.criterion == "decision"]
    assert decision and any(fragment in f.message for f in decision), [f.message for f in report.findings]
    assert report.parts["D"].score == report.parts["D"].max_score - 4


def test_a_feasible_remote_choice_is_a_valid_decision():
    data = solved(LAB, "cloud", None)
    changed = bundle_with(data, "D", {**data["controls"]["D"], "choice": "event_filter", "rejected": "local"})
    changed["synthesis"]["recommendation"], changed["synthesis"]["rejected_alternative"] = "event_filter", "local"
    report = _graded(changed)
    assert {f.part for f in report.findings if f.criterion not in ("rationale", "generated")} == set(), \
        [f.message for f in report.findings]
    assert report.parts["D"].score == report.parts["D"].max_score


# -- the book's own marimo exports ----------------------------------------------------------------------------
RUBRICS = resolve_rubrics({})


def _graded_export(path: Path) -> dict:
    return grade_candidate(Candidate(str(path), "json", str(path)), RUBRICS)


@pytest.mark.parametrize("name", ["lab02-edge.json", "lab02-mobile.json"])
def test_the_books_exports_earn_full_marks(name):
    """Both sessions (README of the exports) captured all four parts, current and contrasting, and answered the
    synthesis as the lab requires: edge runs locally (16 ms, always feasible) rejecting the feasible event filter;
    mobile chooses the event filter (feasible at 8 MB over 40 Mb/s) rejecting local.  Every prediction the student
    locked is one the replayed numbers support (edge: crosses / execution time / power only / local; mobile: crosses /
    memory / neither / event filter), each rationale cites the saved numbers and names both placements, the risk and
    the trigger: 100 of 100, the only note being that a marimo export carries no lock times."""
    result = _graded_export(MARIMO / name)
    assert (result["status"], result["score"], result["max_score"], result["flags"]) == ("graded", 100.0, 100.0, [])
    assert result["origin"] == "marimo-json"
    assert [f[:2] for f in result["findings"]] == [["bundle", "prediction"]], result["findings"]
    export = json.loads((MARIMO / name).read_text(encoding="utf-8"))
    captures = export["result_snapshot"]["captures"]
    assert sorted(captures) == ["A", "B", "C", "D"] and {c["model_key"] for c in captures.values()} == {SPEC.model_id}
    d = captures["D"]
    d_upstream = {key: value for key, value in d["inputs"].items() if key != "compared_design"}
    assert d["upstream_fingerprint"] == book_seal(export["track"], d_upstream) != book_seal(export["track"], d["inputs"])
    assert {key: d["inputs"][key] for key in ("payload_mb", "connection_mbps")} == captures["A"]["inputs"]


def test_an_export_whose_part_a_moved_after_part_d_is_stale_and_not_the_labs(tmp_path):
    """Part A recaptured at another payload, every copy rewritten and resealed as the book would: part D's seal still
    binds the old payload, so D is stale (the lab never downloads that) and loses its 24 points, decision included."""
    from mlsysim.labs.experiments import v1_02_experiments as ev

    export = json.loads((MARIMO / "lab02-edge.json").read_text(encoding="utf-8"))
    a = export["result_snapshot"]["captures"]["A"]
    a["inputs"] = {"payload_mb": 24.0, "connection_mbps": 100.0}
    a["result"] = ev.placement_accounting("edge", payload_mb=24.0, connection_mbps=100.0, filter_id="raw")
    a["upstream_fingerprint"] = book_seal("edge", a["inputs"])
    export["knob_settings"]["A"] = a["inputs"]
    export["evidence_summary"]["A"]["result"] = a["result"]
    export["binding_constraints"]["A"] = a["result"]["violations"]
    path = tmp_path / "v1_02_physics_of_deployment_snapshot.json"
    path.write_text(json.dumps(export, indent=2, sort_keys=True), encoding="utf-8")
    result = _graded_export(path)
    stale = [f for f in result["findings"] if f[0] == "D" and f[1] == "stale"]
    assert stale and "or the part A result it builds on (payload mb is now 24, captured with 12)" in stale[0][3], result["findings"]
    assert any(f[:2] == ["D", "integrity"] and "Part D is stale in this export" in f[3] for f in result["findings"])
    assert result["score"] == 76.0 and sum(v for k, v in result["items"].items() if k.startswith("D.")) == 0
    assert sum(v for k, v in result["items"].items() if k.startswith("A.")) == 20.0  # part A as recaptured is fine


def test_solved_d_choices_cover_every_rejected_design():
    seen = {solved(LAB, track, seed)["controls"]["D"]["rejected"] for track in TRACKS for seed in range(6)}
    assert seen == set(CANDIDATES[1:])
    assert {solved(LAB, track, seed)["controls"]["D"]["choice"] for track in TRACKS for seed in range(3)} == {"local"}


def test_every_track_has_its_own_payload_menu_in_the_scenario():
    lab = get_lab(LAB)
    for track, (small, middle, large) in SPEC.constants["payload_options_mb"].items():
        text = lab.scenario(track, "A")
        assert text is not None and all(f"{value:g} MB" in text for value in (small, middle, large)), text
    assert list(itertools.chain.from_iterable(SPEC.constants["payload_options_mb"].values()))


def test_a_final_decision_the_lab_does_not_offer_is_judged_not_a_grader_error():
    """A final decision the book does not offer (the schema allows any scalar) builds the book's fallback arms and is
    judged by the decision rules; nothing is held for staff."""
    for hostile in (7, "bogus", True, None):
        data = solved(LAB, "edge", 1)
        data["controls"]["D"]["choice"] = hostile
        report = _graded(data)
        assert "grader_error" not in report.flags, [f.message for f in report.findings]
        assert report.parts["D"].score < report.parts["D"].max_score


# -- the link rate as the lab writes it ------------------------------------------------------------------------------
@pytest.mark.parametrize(("written", "points"), [("2 Mb/s", 4.0), ("2.0 Mbit/s", 4.0), ("2 Mbps", 4.0), ("2 MB/s", 0.0)])
def test_a_link_rate_written_as_the_lab_writes_it_is_evidence(written, points):
    """Measured: "2 Mb/s" matched nothing (the link rate was no evidence, and "Mb" read as megabytes), so a rationale
    citing the link lost its evidence points without reaching the queue.  The record's 2.0 Mb/s link is evidence in
    bits per second now; "2 MB/s" (16 Mb/s) is not what was recorded."""
    from mlsys_grader import Bundle

    data = solved(LAB, "tinyml")
    assert data["evidence"]["A"]["inputs"]["connection_mbps"] == 2.0
    data["synthesis"].update(get_lab(LAB).reference_answers("tinyml"))
    data["synthesis"]["rationale"] = (
        f"I recommend running locally and reject sending raw input to the remote server, because on a link of {written} "
        "the remote path cannot meet the deadline while local execution can. The residual risk is that the numbers are "
        "illustrative, and I would revisit this if the link becomes faster.")
    data["content_hash"] = None
    report = grade_bundle(Bundle.model_validate(data).sealed().to_json())
    [item] = [i for i in report.parts["synthesis"].items if i.item == "rationale_cites_evidence"]
    assert (item.points, item.certainty) == (points, "certain")
