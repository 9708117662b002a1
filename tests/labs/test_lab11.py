"""Lab 11's own rules, pinned with the measured numbers: the judgement thresholds of parts A and D and the
bands around them, part E's deployment decision (scenario fixtures), and part D building on part C.

What holds for every lab is in ``tests/labs/test_contract.py``.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from conftest import TRACKS, assert_scenario, every_setting, grid, plan_for, reseal, shown, solved, sweep

from mlsys_grader.api import default_replay, grade_bundle, mlsysim_version
from mlsys_grader.labs import get_lab
from mlsys_grader.labs.lab11 import judge
from mlsys_grader.staff import bundle_from_controls

LAB = "lab11"
ROOT = Path(__file__).resolve().parents[2]
C_SETTINGS = tuple({"shape": shape, "operation": operation}
                   for shape, operation in itertools.product(("aligned", "misaligned"), ("gemm", "scatter")))


def test_the_declaration_restates_the_evaluators_model_id():
    from mlsysim.labs.experiments import v1_11_experiments as ev

    lab = get_lab(LAB)
    assert lab.spec.evaluator == ev.__name__ and lab.spec.model_id == ev.MODEL_ID == lab.model_id
    assert {lab.model_key(part) for part in lab.parts} == {
        f"{ev.MODEL_ID}.{name}" for name in ("roofline", "tile_mapping", "execution_path", "application_comparison",
                                             "accelerator_ranking")}
    assert set(lab.spec.tracks) == set(ev.TRACK_SCENARIOS)


@pytest.mark.slow  # a fresh interpreter
def test_only_the_evaluation_module_imports_mlsysim():
    """The lab object, its declaration, judge (thresholds included), views and scenario data load without it."""
    probe = ("import sys\n"
             "from mlsys_grader.labs import get_lab\n"
             "from mlsys_grader.labs.lab11 import domain, judge, views\n"
             "LAB = get_lab('lab11')\n"
             "assert judge.D_SMALL_GAIN == 1.10 and LAB.parts['D'].depends_on == ('C',)\n"
             "assert 'mlsysim' not in sys.modules, sorted(m for m in sys.modules if m.startswith('mlsysim'))\n"
             "from mlsys_grader.labs.lab11 import evaluate\n"
             "assert 'mlsysim' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_scenario_data_is_what_the_evaluator_writes():
    """``domain.py`` is ``python -m mlsys_grader.labs.lab11.evaluate``'s output, byte for byte (regenerate it that way)."""
    from mlsys_grader.labs.lab11 import domain, evaluate

    assert (ROOT / "mlsys_grader" / "labs" / "lab11" / "domain.py").read_text(encoding="utf-8") == evaluate.domain_source()
    assert list(domain.SCENARIOS) == list(evaluate.ev.TRACK_SCENARIOS) == list(get_lab(LAB).tracks)


def _inputs_of_every_setting(track: str):
    """(part, controls, upstream) for every setting of ``track``: decisions completed, part D on each part C result."""
    lab = get_lab(LAB)
    for part, controls, upstream_settings in every_setting(LAB):
        controls = lab.complete_decision(default_replay(), track, part, {**{c.name: None for c in lab.parts[part].controls if c.decision},
                                                       **controls}, None)
        upstream = {dep: lab.plan(default_replay(), track, dep, setting, {}).result for dep, setting in (upstream_settings or {}).items()}
        yield part, controls, upstream


@pytest.mark.parametrize("track", sweep(TRACKS, fast=["edge"]))
def test_arms_built_from_the_data_are_the_seeds_construction_through_mlsysim(track):
    """For every setting, the inputs built without mlsysim are the JSON the seed's cell builds through it, key order
    included (reports print them), and the upstream inputs a record keeps are the same objects' copies."""
    from mlsys_grader.labs.lab11 import evaluate

    count = 0
    for part, controls, upstream in _inputs_of_every_setting(track):
        built = judge.arm_inputs(get_lab(LAB), track, part, controls, upstream)
        seed = evaluate.seed_arm_inputs(track, part, controls, upstream)
        assert json.dumps(built) == json.dumps(seed), (track, part, controls)
        count += 1
    assert count == 221


def test_an_unknown_track_is_refused_in_the_evaluators_words():
    from mlsys_grader.labs.lab11 import evaluate

    with pytest.raises(ValueError) as seed:
        evaluate.seed_arm_inputs("desktop", "A", {"change": "compute", "factor": 2}, {})
    with pytest.raises(ValueError) as built:
        judge.arm_inputs(get_lab(LAB), "desktop", "A", {"change": "compute", "factor": 2}, {})
    assert str(built.value) == str(seed.value) == "unknown track 'desktop'; expected one of tinyml, mobile, edge, cloud"


def test_the_candidates_are_the_scenarios_hardware():
    from mlsysim.labs.experiments import v1_11_experiments as ev

    for track in TRACKS:
        scenario = ev.get_track_scenario(track)
        assert judge.candidates(track) == {
            role: (hardware.name, ev.to_jsonable(hardware)["registry_ref"] or "")
            for role, hardware in (("primary", scenario.hardware), ("alternative", scenario.alternative))}


def test_part_e_reads_its_budget_scale_in_any_time_unit():
    """A ranking recorded in the scenario's unit is read from the data; in another time unit mlsysim converts it."""
    from mlsys_grader.core.models import EvidenceRecord

    bundle = solved(LAB, "edge", 2)
    e = EvidenceRecord.model_validate(bundle["evidence"]["E"])
    found = judge.infer("edge", "E", e)
    budget = e.inputs["ranking"]["latency_budget"]
    in_seconds = e.model_copy(update={"inputs": {**e.inputs, "ranking": {
        **e.inputs["ranking"], "latency_budget": {"magnitude": budget["magnitude"] / 1000, "unit": "s"}}}})
    assert budget["unit"] == judge.scenario("edge")["latency_budget"]["unit"] == "ms"
    assert found is not None and found[0]["budget_scale"] == bundle["controls"]["E"]["budget_scale"]
    assert judge.infer("edge", "E", in_seconds) == found
    assert "mlsysim" in sys.modules


def test_every_recorded_number_equals_mlsysim_itself():
    """Recomputed straight through ``v1_11_experiments.replay_experiment``, bypassing the grader."""
    from mlsysim.labs.experiments import v1_11_experiments as ev

    for track in TRACKS:
        bundle = solved(LAB, track, 2)
        for part, record in bundle["evidence"].items():
            for arm in (record["baseline"], record["result"], *record["alternatives"]):
                result = ev.replay_experiment({"track_id": track, "model_key": record["model_key"], "inputs": arm["inputs"]})
                assert {"inputs": arm["inputs"], "outputs": ev.to_jsonable(result)} == arm, (track, part)


def test_the_sweep_covers_the_whole_domain():
    """21 + 6 + 4 + 4×25 + 3×30 settings: part D on each of part C's four settings."""
    assert sum(1 for _ in every_setting(LAB)) == 221


def test_part_e_keeps_the_ranking_its_choice_names():
    """The baseline for primary and hold, the alternative's ranking for alternative, the full ranking otherwise (the
    judge's ``decide`` reads it from the planner, which does not pass it)."""
    lab = get_lab(LAB)
    for choice, kept in (("primary", "baseline"), ("hold", "baseline"), ("alternative", "result"), ("none", "ranking"),
                         (None, "ranking"), ("bogus", "ranking")):
        plan = lab.plan(default_replay(), "edge", "E", {"objective": "latency", "budget_scale": 0.05, "choice": choice,
                                                        "rejected": "primary"}, {})
        arm = {"baseline": plan.baseline, "result": plan.result, "ranking": plan.alternatives[0]}[kept]
        assert plan.chosen_result is arm and plan.decision == {"recommendation": choice, "rejected": "primary"}
        assert plan.result_role == ("chosen candidate" if choice == "alternative" else "rejected alternative")


@pytest.mark.parametrize("seed", range(6))
def test_part_e_decision_is_completed_by_one_draw_over_the_accepted_pairs(seed):
    """Choice and rejected candidate together, drawn as ``rng.choice`` over the (choice, rejected) pairs the rules
    accept, so ``solve``'s random stream is the seed's."""
    import random

    lab = get_lab(LAB)
    for track, scale in itertools.product(TRACKS, (0.05, 1.0)):
        controls = {"objective": "energy", "budget_scale": scale, "choice": None, "rejected": None}
        feasible = judge.feasible_candidates(lab.plan(default_replay(), track, "E", controls, {}))
        pairs = [(name, "alternative" if name == "primary" else "primary") for name, ok in feasible.items() if ok]
        pairs += [("hold", "alternative")] if feasible.get("primary") else []
        pairs = pairs or [("none", "primary"), ("none", "alternative")]
        ours, seeds = random.Random(seed), random.Random(seed)
        done = lab.complete_decision(default_replay(), track, "E", controls, ours)
        assert (done["choice"], done["rejected"]) == seeds.choice(pairs) and ours.random() == seeds.random()
        assert list(done) == ["objective", "budget_scale", "choice", "rejected"]
        first = lab.complete_decision(default_replay(), track, "E", {"objective": "energy", "budget_scale": scale}, None)
        assert (first["choice"], first["rejected"]) == pairs[0] and list(first)[2:] == ["choice", "rejected"]


# -- part E's deployment decision (scenario fixtures) ----------------------------------------------------------
SCENARIOS = {
    "identical-baseline-intervention-lab11-b": ("B", "contrast", "intervention is identical to its baseline", 2),
    "lab11-e-chooses-an-infeasible-candidate": ("E", "decision", "fails the budgets or support", 4),
    "lab11-e-holds-an-infeasible-primary": ("E", "decision", "the primary is not feasible", 4),
    "lab11-e-holds-while-rejecting-the-primary": ("E", "decision", "the rejected candidate is primary", 4),
    "lab11-e-none-while-a-candidate-is-feasible": ("E", "decision", "valid only when no candidate is feasible", None),
    "lab11-e-rejects-its-own-choice": ("E", "decision", "must differ from the chosen one", 4),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_produces_its_finding(name):
    assert_scenario(name, *SCENARIOS[name])


# -- part D: the share of the kernel gain that survives ---------------------------------------------------------
def _d_plan(track: str, speedup: int, c_setting: dict):
    return plan_for(LAB, track, "D", {"speedup": speedup}, {"C": c_setting})


@pytest.mark.parametrize("c_setting, end_to_end", [(C_SETTINGS[0], 1.31), (C_SETTINGS[2], 1.34)])
def test_d_tinyml_2x_kernel_keeping_a_third_of_the_gain_is_less_than_half(c_setting, end_to_end):
    plan = _d_plan("tinyml", 2, c_setting)
    view, accepted = shown(LAB, "tinyml", "D", plan)
    assert judge.whole_path_gain(plan.result["outputs"])[0] == end_to_end
    assert accepted == {"under_half"}
    assert view.observation.startswith(f"Less than half: a 2× kernel gain becomes {end_to_end:.2f}× end to end")


def test_d_less_than_half_is_reachable_at_a_2x_kernel_speedup():
    """The old S/L rule needed S < 1 for "less than half" at L = 2; the share g does not."""
    lab = get_lab(LAB)
    reached = {
        (track, c["shape"], c["operation"]): lab.accepted_predictions(track, "D", _d_plan(track, 2, c))
        for track in TRACKS for c in C_SETTINGS
    }
    assert {key for key, accepted in reached.items() if accepted == {"under_half"}} == {
        ("tinyml", "aligned", "gemm"), ("tinyml", "misaligned", "gemm")}
    assert all(accepted == {"small"} for key, accepted in reached.items() if key[2] == "scatter" or key[0] != "tinyml")


@cache
def _d_rows() -> list[tuple[str, dict, int, float, float, frozenset]]:
    """(track, part C setting, L, S as shown, g, accepted) over the whole part D domain."""
    lab = get_lab(LAB)
    rows = []
    for track, c_setting in itertools.product(TRACKS, C_SETTINGS):
        for speedup in lab.parts["D"].control("speedup").values():
            plan = _d_plan(track, speedup, c_setting)
            s, _, g = judge.whole_path_gain(plan.result["outputs"])
            rows.append((track, c_setting, speedup, s, g, lab.accepted_predictions(track, "D", plan)))
    return rows


# Every band applies somewhere, or the numbers say why it cannot.
@pytest.mark.slow  # sweeps the part's whole domain on every track
def test_d_small_gain_band_applies_where_the_notebook_shows_1_05():
    rows = _d_rows()
    in_band = [(t, c, L, s) for t, c, L, s, g, accepted in rows if accepted == {"small", "under_half"}]
    assert in_band and {s for *_, s in in_band} == {1.05}
    assert {(t, c["operation"]) for t, c, *_ in in_band} == {("tinyml", "scatter")}
    # tinyml aligned scatter: 14× shows 1.04× (only "almost no gain"), 16× shows 1.05× (both neighbours).
    aligned_scatter = {L: (s, accepted) for t, c, L, s, g, accepted in rows if t == "tinyml" and c == C_SETTINGS[1]}
    assert aligned_scatter[14] == (1.04, {"small"})
    assert aligned_scatter[16] == (1.05, {"small", "under_half"})
    # Nothing is shown between 1.05× and 1.31×, so the rest of the band (and 1.10 itself) is never reached.
    assert max(s for *_, s, g, a in rows if s <= judge.D_SMALL_BAND[1]) == 1.05
    assert min(s for *_, s, g, a in rows if s > judge.D_SMALL_BAND[1]) == 1.31


@pytest.mark.slow  # sweeps the part's whole domain on every track
def test_d_share_band_cannot_occur_because_at_most_a_third_of_the_gain_survives():
    rows = _d_rows()
    best = max(rows, key=lambda row: row[4])
    assert best[0] == "tinyml" and best[1] == C_SETTINGS[2] and best[2] == 2 and best[4] == 0.34
    assert best[4] < judge.D_NEAR_BAND[0]
    assert not any("near" in accepted for *_, accepted in rows)


def test_d_share_band_accepts_both_neighbours_when_half_the_gain_survives():
    """Outside the lab's domain (a part C latency chosen so g = 0.5), the evaluator's numbers hit the band."""
    lab = get_lab(LAB)
    c_result = lab.plan(default_replay(), "tinyml", "C", C_SETTINGS[0], {}).result
    probe = lab.plan(default_replay(), "tinyml", "D", {"speedup": 2}, {"C": c_result}).result["outputs"]["baseline"]
    other_ms = sum(float(probe[key]["magnitude"]) for key in ("host_time", "transfer_time", "launch_time", "postprocess_time"))
    assert {probe[key]["unit"] for key in ("host_time", "transfer_time", "launch_time", "postprocess_time")} == {"ms"}
    answers = {}
    for kernel_factor in (1.6, 1.7, 2.0, 2.4, 4.0):  # kernel = factor × other stages: g = factor / (factor + 2) at L = 2
        upstream = {"C": {**c_result, "outputs": {**c_result["outputs"],
                                                    "latency": {"magnitude": kernel_factor * other_ms, "unit": "ms"}}}}
        plan = lab.plan(default_replay(), "tinyml", "D", {"speedup": 2}, upstream)
        _, _, g = judge.whole_path_gain(plan.result["outputs"])
        answers[kernel_factor] = (g, lab.displayed_prediction("tinyml", "D", plan), lab.accepted_predictions("tinyml", "D", plan))
    assert answers[1.6] == (0.44, "under_half", {"under_half"})
    assert answers[1.7] == (0.46, "under_half", {"near", "under_half"})
    assert answers[2.0] == (0.5, "near", {"near", "under_half"})
    assert answers[2.4] == (0.55, "near", {"near", "under_half"})
    assert answers[4.0] == (0.67, "near", {"near"})


# -- part A: the share of the factor that the latency realises --------------------------------------------------
def test_a_switch_bands_apply_and_without_a_switch_q_is_0_or_1():
    lab = get_lab(LAB)
    neighbours, shares = {}, set()
    for track in TRACKS:
        for controls in grid(lab, "A"):
            plan = plan_for(LAB, track, "A", controls)
            base, result = plan.baseline["outputs"], plan.result["outputs"]
            q = judge.roofline_gain(base, result)[2]
            accepted = lab.accepted_predictions(track, "A", plan)
            if base["bottleneck"] == result["bottleneck"]:
                shares.add(q)
                assert len(accepted) == 1
            elif len(accepted) == 2:
                neighbours[(track, controls["change"], controls["factor"])] = (q, accepted)
    assert shares == {0.0, 1.0}
    assert neighbours == {
        ("mobile", "compute", f): (q, {"switch", "small"}) for f, q in
        zip(range(2, 9), (0.08, 0.04, 0.03, 0.02, 0.02, 0.01, 0.01), strict=True)
    } | {("edge", change, 2): (0.97, {"switch", "large"}) for change in ("bandwidth", "reuse")}


def test_d_is_judged_against_the_part_c_result_of_its_first_run():
    """Recapturing part C after seeing part D must not change what D's prediction is judged on."""
    lab = get_lab(LAB)
    controls = {part: lab.sample_controls(default_replay(), "tinyml", part, None) for part in lab.part_ids()}
    controls["C"] = {"shape": "misaligned", "operation": "gemm"}
    controls["D"] = {"speedup": 2}
    captured = bundle_from_controls(lab, "tinyml", controls, mlsysim_version=mlsysim_version(), grader_version="test")
    data = json.loads(captured.to_json())
    d = data["evidence"]["D"]
    assert d["prediction"] == "under_half"  # what the captured misaligned gemm supports (S = 1.34)
    # Locked "under_half", first ran D on an aligned scatter part C (S = 1.02: almost no gain), then changed C.
    data["runs"]["D"] = {"prediction": "under_half", "prediction_locked_at": d["prediction_locked_at"],
                         "first_shown_at": d["result_shown_at"], "first_run_at": d["result_shown_at"],
                         "first_run_controls": {"speedup": 2},
                         "first_run_upstream": {"C": {"shape": "aligned", "operation": "scatter"}}}
    report = grade_bundle(reseal(data))
    judged = [f for f in report.findings if f.part == "D" and f.criterion == "prediction"]
    assert [f.rubric_item for f in judged] == [None, "prediction_correct"]
    assert "part C shape = 'aligned', part C operation = 'scatter'" in judged[0].message
    assert "support 'Almost no gain', not 'Less than half'" in judged[1].message
