"""The lab declaration (``lab.toml``, :class:`mlsys_grader.labs.spec.LabSpec`): what it refuses, and what the book's
next labs need of it, each on a small declared lab graded end to end.

The small lab (``labtiny``, written to a temporary package below) has five parts, each holding one need of the labs
still to come (Labs 05, 04, 06, 10, 12, 13): a part with no controls whose predictions are their label text and whose
seal is over ``None`` (Labs 13 A, 04); option sets that differ by track, sealed over ``{}`` (Labs 06, 08); a decision
the notebook computes, gated on two inputs that must differ, whose input the rejected alternative must equal (Labs
05, 12, 13); a decision that is a list (Lab 06), arms each under its own evaluator key (Lab 10); a decision that is a dict, gated on a computed result (Labs 12, 13).
Its evaluator is a few lines of arithmetic in the package's ``evaluate.py``, not mlsysim: the shared code under test
is the grader's.  Part D's arms also carry their own ``model_key`` (Lab 10).
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from mlsys_grader import Bundle, grade_bundle, register_lab, solve
from mlsys_grader.api import default_replay
from mlsys_grader.core.seal import book_seal
from mlsys_grader.errors import DomainError, LabSpecError
from mlsys_grader.labs import get_lab, lab_ids, rubric_text
from mlsys_grader.labs.declared import is_declared, spec_of
from mlsys_grader.labs.spec import load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[1]

TINY_TOML = '''\
id = "labtiny"
title = "Lab 99 — A Small Declared Lab"
chapter = 99
model_id = "v1_99_experiments"
evaluator = "labtiny.evaluate"
tracks = ["edge", "cloud"]
book_auditor_replays = false

[constants]
scale = { edge = 2.0, cloud = 3.0 }

[synthesis]
fields = ["recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale"]
recommendation_part = "C"
rejected_input = "C.rejected"

[problems]
"synthesis.rejected_not_tested" = { message = "Reject the option part C tested against your choice." }

[parts.A]
title = "Runs with nothing to set"
question = "What happens to the records?"
predictions = ["Newest records", "Oldest records"]
seal = "none"

[parts.B]
title = "Menus by track"
question = "How large is it?"
seal = "empty"
predictions_by_track = { edge = { small = "Small" }, cloud = { large = "Large" } }

[[parts.B.controls]]
name = "size"
label = "Size"
kind = "choice"
default = 2
choices_by_track = { edge = [1, 2], cloud = [2, 4] }

[parts.C]
title = "A computed decision"
question = "Which is cheaper?"
predictions = { cheaper = "The choice is cheaper", dearer = "The choice is dearer" }
decision = { kind = "computed" }
gate = { kind = "differs", first = "choice", second = "rejected", message = "Choose two different options." }

[[parts.C.controls]]
name = "choice"
label = "Choice"
kind = "choice"
default = "a"
choices = ["a", "b", "c"]

[[parts.C.controls]]
name = "rejected"
label = "Rejected"
kind = "choice"
default = "b"
choices = ["a", "b", "c"]

[parts.D]
title = "A list decision, its arms each under their own key"
question = "How many are kept?"
predictions = { some = "Some", all = "All" }
decision = { kind = "list" }
arm_keys = true

[[parts.D.controls]]
name = "keep"
label = "Keep"
kind = "int"
default = 2
minimum = 1
maximum = 3
step = 1

[parts.E]
title = "A dict decision behind a computed gate"
question = "Does it fit?"
predictions = { fits = "It fits" }
decision = { kind = "dict" }
gate = { kind = "result", result = { feasible = true, misses = 0 }, message = "Capture part E only for a candidate that fits." }

[[parts.E.controls]]
name = "candidate"
label = "Candidate"
kind = "choice"
default = "x"
choices = ["x", "y"]

[[options.recommendation]]
value = "a"
label = "Option A"
keywords = ["option a"]

[[options.recommendation]]
value = "b"
label = "Option B"
keywords = ["option b"]

[[options.recommendation]]
value = "c"
label = "Option C"
keywords = ["option c"]

[[options.reevaluation_trigger]]
label = "Freshness SLA tightens"
keywords = ["freshness"]

[[options.residual_risk]]
label = "Illustrative numbers"
keywords = ["illustrative"]
'''

TINY_EVALUATE = '''\
"""A few lines of arithmetic standing in for an evaluator."""


def replay(model_key, inputs):
    value = float(inputs["scale"]) * (1 + sum(v for k, v in inputs.items() if isinstance(v, int) and k != "scale"))
    return {"model_key": model_key, "inputs": dict(inputs), "cost_ms": value,
            "feasible": inputs.get("candidate", "x") == "x", "misses": 0}


def header_facts(track):
    return [("Track", track)]
'''

TINY_JUDGE = '''\
from mlsys_grader.core.labspec import ArmInputs


def arm_inputs(lab, track, part, c, upstream):
    base = {"track_id": track, "scale": lab.spec.constant("scale", track), "part": part}
    if part == "A":
        return ArmInputs({**base, "n": 0}, {**base, "n": 1}, (), {})
    if part == "B":
        return ArmInputs({**base, "n": 0}, {**base, "n": c["size"]}, (), {"size": c["size"]})
    if part == "C":
        return ArmInputs({**base, "n": 0, "option": c["rejected"]}, {**base, "n": 1, "option": c["choice"]}, (),
                         {"choice": c["choice"], "rejected": c["rejected"]})
    if part == "D":  # each arm under its own evaluator key, as Lab 10's are
        return ArmInputs({**base, "n": 0, "model_key": "v1_99.precision.v1"},
                         {**base, "n": c["keep"], "model_key": "v1_99.sparsity.v1"}, (), {"keep": c["keep"]})
    return ArmInputs({**base, "n": 0, "candidate": "x"}, {**base, "n": 1, "candidate": c["candidate"]}, (),
                     {"candidate": c["candidate"]})


def infer_controls(lab, replay, track, part, record):
    from mlsys_grader.core.labspec import InferredControls

    inputs = record.inputs
    if part == "A":
        return InferredControls({}, {})
    if part == "B":
        return InferredControls({"size": inputs.get("size")}, {})
    if part == "C":
        return InferredControls({"choice": inputs.get("choice"), "rejected": inputs.get("rejected")}, {})
    if part == "D":
        return InferredControls({"keep": inputs.get("keep")}, {})
    return InferredControls({"candidate": inputs.get("candidate")}, {})


def decide(lab, part, controls, baseline, result, alternatives):
    chosen = {"decision": None, "chosen_result": result, "result_role": "tested intervention"}
    if part == "C":
        return {**chosen, "decision": controls["choice"]}
    if part == "D":
        return {**chosen, "decision": ["kept"] * controls["keep"]}
    if part == "E":
        return {**chosen, "decision": {"choice": controls["candidate"], "fits": result["feasible"]}}
    return {}


def displayed_prediction(track, part, plan):
    if part == "A":
        return "Newest records"
    if part == "B":
        return "small" if track == "edge" else "large"
    if part == "C":
        return "cheaper" if plan.result["cost_ms"] <= plan.baseline["cost_ms"] else "dearer"
    if part == "D":
        return "all" if plan.result["inputs"]["n"] == 3 else "some"
    return "fits"


def contrast(lab, track, part, controls, rng):
    if part == "B":
        controls["size"] = lab.spec.menu("B", "size", track)[-1]
    if part == "C" and controls["choice"] == controls["rejected"]:
        controls["rejected"] = "c" if controls["choice"] != "c" else "a"
    if part == "E":
        controls["candidate"] = "x"
    return controls


def reference_synthesis(lab, track, plans, rng):
    choice, rejected = plans["C"].decision, plans["C"].upstream["rejected"]
    return {"recommendation": choice, "rejected_alternative": rejected, "reevaluation_trigger": "Freshness SLA tightens",
            "residual_risk": "Illustrative numbers",
            "rationale": f"I recommend option {choice} and reject option {rejected}: part C costs "
                         f"{plans['C'].result['cost_ms']} ms. The numbers are illustrative; freshness may change it."}
'''

TINY_VIEWS = '''\
from mlsys_grader.core.labspec import View


def _view(plan, track, verdict_words):
    return View([{"Cost": plan.result["cost_ms"]}], None, verdict_words)


view_a = view_b = view_c = view_d = view_e = _view
'''


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The small declared lab, registered for this module's tests."""
    from mlsys_grader import labs

    site = tmp_path_factory.mktemp("tiny")
    package = site / "labtiny"
    package.mkdir()
    for name, text in (("__init__.py", '"""A small declared lab."""\n'), ("lab.toml", TINY_TOML),
                       ("evaluate.py", TINY_EVALUATE), ("judge.py", TINY_JUDGE), ("views.py", TINY_VIEWS)):
        (package / name).write_text(text, encoding="utf-8")
    sys.path.insert(0, str(site))
    register_lab("labtiny", "labtiny")
    try:
        yield get_lab("labtiny")
    finally:
        labs._REGISTERED.pop("labtiny", None)
        labs._LOADED.pop("labtiny", None)
        sys.path.remove(str(site))
        for name in [name for name in sys.modules if name == "labtiny" or name.startswith("labtiny.")]:
            del sys.modules[name]


def _bundle(lab_id: str, track: str, edit=None) -> str:
    data = json.loads(solve(lab_id, track, seed=3).to_json())
    if edit is not None:
        edit(data)
    data["content_hash"] = None
    return Bundle.model_validate(data).sealed().to_json()


def _part_findings(report, part: str) -> list[tuple[str, str]]:
    return [(finding.criterion, finding.message) for finding in report.findings if finding.part == part]


# -- what a declaration refuses ------------------------------------------------------------------------------------
def _refused(edit) -> str:
    data = tomllib.loads(TINY_TOML)
    edit(data)
    with pytest.raises(LabSpecError) as caught:
        parse_spec(data, source="labtiny/lab.toml")
    return str(caught.value)


def test_a_spec_without_parts_is_refused_naming_the_key():
    assert _refused(lambda d: d.pop("parts")) == "labtiny/lab.toml: parts: missing"


def test_an_unknown_control_kind_names_the_allowed_kinds():
    def edit(d):
        d["parts"]["C"]["controls"][1]["kind"] = "slider"
    assert _refused(edit) == ("labtiny/lab.toml: parts.C.controls[1].kind: Input should be 'choice', 'int', 'float' or "
                              "'bool' (got 'slider'); allowed: 'choice', 'int', 'float' or 'bool'")


def test_a_synthesis_tied_to_a_part_that_does_not_exist_names_the_parts():
    def edit(d):
        d["synthesis"]["recommendation_part"] = "F"
    assert _refused(edit) == ("labtiny/lab.toml: synthesis.recommendation_part: part 'F' does not exist; expected one "
                              "of ['A', 'B', 'C', 'D', 'E']")


def test_a_menu_value_outside_its_type_is_refused():
    def mixed(d):
        d["parts"]["C"]["controls"][0]["choices"] = ["a", 2, "c"]
    assert "parts.C.controls[0]: a menu holds one type of value (got ['int', 'str']" in _refused(mixed)

    def wrong_default(d):
        d["parts"]["D"]["controls"][0]["default"] = "two"
    assert "parts.D.controls[0]: default 'two' is not a value of an 'int' control" in _refused(wrong_default)

    def outside(d):
        d["parts"]["C"]["controls"][0]["default"] = "z"
    assert "parts.C.controls[0]: default 'z' is not one of the choices ['a', 'b', 'c']" in _refused(outside)


def test_a_part_letter_a_dependency_and_an_unknown_key_are_each_named():
    def letter(d):
        d["parts"]["Q"] = d["parts"].pop("E")
    assert "labtiny/lab.toml: parts.Q: a part is one of A, B, C, D, E (got 'Q')" in _refused(letter)

    def later(d):
        d["parts"]["B"]["depends_on"] = ["D"]
    assert "labtiny/lab.toml: parts.B.depends_on: 'D' is not an earlier part; expected one of ['A']" in _refused(later)

    def unknown(d):
        d["parts"]["A"]["seals"] = "none"
    assert _refused(unknown) == "labtiny/lab.toml: parts.A.seals: unknown key"

    def gate(d):
        d["parts"]["C"]["gate"]["first"] = "chioce"
    assert "parts.C.gate.first: 'chioce' is not a control of part C; expected one of ['choice', 'rejected']" in _refused(gate)


def test_every_problem_of_a_spec_is_named_at_once_and_a_file_that_is_not_toml_is_named(tmp_path):
    def two(d):
        d.pop("title")
        d["seal"] = "outputs"
    message = _refused(two)
    assert message.splitlines() == ["labtiny/lab.toml: title: missing",
                                    "labtiny/lab.toml: seal: Input should be 'inputs', 'empty' or 'none' (got 'outputs'); "
                                    "allowed: 'inputs', 'empty' or 'none'"]
    bad = tmp_path / "lab.toml"
    bad.write_text("id = \n", encoding="utf-8")
    with pytest.raises(LabSpecError, match=rf"^{bad}: not TOML \(Invalid value"):
        load_spec(bad)


def test_a_registered_package_whose_declaration_is_broken_is_refused_with_its_file(tmp_path, monkeypatch):
    from mlsys_grader import labs

    package = tmp_path / "labbad"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "lab.toml").write_text(TINY_TOML.replace('id = "labtiny"', 'id = "labbad"').replace('kind = "int"', 'kind = "integer"'),
                                      encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    register_lab("labbad", "labbad")
    try:
        with pytest.raises(LabSpecError, match=r"labbad/lab.toml: parts.D.controls\[0\].kind: Input should be 'choice'"):
            get_lab("labbad")
    finally:
        labs._REGISTERED.pop("labbad", None)
        sys.modules.pop("labbad", None)


def test_every_shipped_declaration_validates_and_names_its_own_package():
    declared = [lab_id for lab_id in lab_ids() if is_declared(get_lab(lab_id).module)]
    assert "lab07" in declared
    for lab_id in declared:
        spec = spec_of(get_lab(lab_id).module)
        assert spec.id == lab_id and get_lab(lab_id).spec == spec
        assert tomllib.loads(rubric_text(lab_id))["part_names"] == list(spec.parts)


# -- what the next labs need, on the small lab ----------------------------------------------------------------------
def test_the_seal_covers_the_parts_inputs_nothing_or_none_as_declared(tiny):
    inputs = {"choice": "a", "rejected": "b"}
    assert tiny.fingerprint("edge", "C", inputs) == book_seal("edge", inputs)
    assert tiny.fingerprint("edge", "B", inputs) == book_seal("edge", {})
    assert tiny.fingerprint("edge", "A", inputs) == book_seal("edge", None)
    assert book_seal("edge", {}) != book_seal("edge", None)  # Lab 08's seal and Lab 04's hash apart


def test_predictions_and_options_may_be_their_label_text(tiny):
    assert dict(tiny.parts["A"].predictions) == {"Newest records": "Newest records", "Oldest records": "Oldest records"}
    assert [c.value for c in tiny.triggers] == ["Freshness SLA tightens"]
    report = grade_bundle(_bundle("labtiny", "edge"))
    assert report.parts["A"].score == report.parts["A"].max_score, _part_findings(report, "A")
    assert not [f for f in report.findings if f.part == "synthesis" and f.criterion == "decision"]


def test_a_part_with_no_controls_plans_solves_and_grades(tiny):
    assert tiny.parts["A"].controls == () and tiny.parts["A"].check_controls({}) == {}
    assert tiny.sample_controls(default_replay(), "cloud", "A", None) == {}
    plan = tiny.plan(default_replay(), "cloud", "A", {}, {})
    assert plan.result["cost_ms"] == 6.0 and plan.decision is None


def test_option_sets_that_differ_by_track(tiny):
    assert tiny.parts["B"].control("size").choices == (1, 2, 4)  # every track's menu together
    assert tiny.spec.menu("B", "size", "edge") == (1, 2) and tiny.spec.predictions("B", "cloud") == {"large": "Large"}
    with pytest.raises(DomainError, match=r"size must be one of 1, 2 on track 'edge' \(got 4\)"):
        tiny.plan(default_replay(), "edge", "B", {"size": 4}, {})

    def foreign(data):  # edge's record rebuilt with cloud's option: the book's notebook on edge never offers it
        record = data["evidence"]["B"]
        record["inputs"]["size"] = 4
        for arm in ("result", "chosen_result"):
            if record.get(arm):
                record[arm] = json.loads(json.dumps(tiny.plan(default_replay(), "cloud", "B", {"size": 4}, {}).result))
                record[arm]["inputs"]["track_id"] = "edge"
    honest = grade_bundle(_bundle("labtiny", "edge"))
    edited = grade_bundle(_bundle("labtiny", "edge", foreign))
    assert honest.parts["B"].score == honest.parts["B"].max_score
    assert edited.parts["B"].score == 0
    assert any("must be one of 1, 2 on track 'edge'" in message for _, message in _part_findings(edited, "B"))


def test_decisions_that_are_a_computed_string_a_list_or_a_dict_round_trip(tiny):
    bundle = solve("labtiny", "cloud", seed=3)
    c, d, e = (bundle.evidence[part].decision for part in "CDE")
    assert isinstance(c, str) and c == bundle.evidence["C"].inputs["choice"]
    assert d == ["kept"] * bundle.evidence["D"].inputs["keep"]
    assert e == {"choice": "x", "fits": True}
    report = grade_bundle(bundle.sealed().to_json())
    for part in "CDE":
        assert report.parts[part].score == report.parts[part].max_score, _part_findings(report, part)


def test_a_capture_gate_on_two_inputs_and_on_a_computed_result(tiny):
    def same(data):
        record = data["evidence"]["C"]
        choice = record["inputs"]["choice"]
        plan = tiny.plan(default_replay(), "edge", "C", {"choice": choice, "rejected": choice}, {})
        record.update(inputs=dict(plan.upstream), baseline=plan.baseline, result=plan.result, chosen_result=plan.result,
                      upstream_fingerprint=tiny.fingerprint("edge", "C", plan.upstream))
        data["synthesis"]["rejected_alternative"] = choice

    report = grade_bundle(_bundle("labtiny", "edge", same))
    assert ("decision", "Choose two different options.") in _part_findings(report, "C")

    def infeasible(data):
        record = data["evidence"]["E"]
        plan = tiny.plan(default_replay(), "edge", "E", {"candidate": "y"}, {})
        record.update(inputs=dict(plan.upstream), baseline=plan.baseline, result=plan.result, chosen_result=plan.result,
                      decision=plan.decision, upstream_fingerprint=tiny.fingerprint("edge", "E", plan.upstream))

    report = grade_bundle(_bundle("labtiny", "edge", infeasible))
    assert ("decision", "Capture part E only for a candidate that fits.") in _part_findings(report, "E")
    assert report.parts["E"].score < report.parts["E"].max_score


def test_the_rejected_alternative_must_be_the_one_the_part_tested(tiny):
    honest = grade_bundle(_bundle("labtiny", "edge"))
    assert not [f for f in honest.findings if "part C tested" in f.message]

    def other(data):
        s = data["synthesis"]
        s["rejected_alternative"] = next(v for v in "abc" if v not in (s["recommendation"], s["rejected_alternative"]))

    report = grade_bundle(_bundle("labtiny", "edge", other))
    assert ("decision", "Reject the option part C tested against your choice.") in _part_findings(report, "synthesis")


def test_arms_that_carry_their_own_model_key_are_replayed_under_it(tiny):
    plan = tiny.plan(default_replay(), "edge", "D", {"keep": 2}, {})
    assert (plan.baseline["model_key"], plan.result["model_key"], plan.model_key) == (
        "v1_99.precision.v1", "v1_99.sparsity.v1", "v1_99_experiments")
    assert "model_key" not in plan.result["inputs"]
    honest = grade_bundle(_bundle("labtiny", "edge"))
    assert honest.parts["D"].score == honest.parts["D"].max_score, _part_findings(honest, "D")

    def rekeyed(data):  # the result arm claimed under the baseline's key: not what that key gives
        data["evidence"]["D"]["result"]["model_key"] = "v1_99.precision.v1"

    edited = grade_bundle(_bundle("labtiny", "edge", rekeyed))
    assert edited.parts["D"].score == 0 and _part_findings(edited, "D")


def test_the_recommendation_is_a_parts_saved_decision_or_a_field_of_it(tiny):
    from mlsys_grader.labs.declared import declared_synthesis_problems

    bundle = solve("labtiny", "edge", seed=3)
    assert not [p for p in declared_synthesis_problems(tiny.spec, bundle) if "saved decision" in p.message]
    other = bundle.model_copy(update={"synthesis": bundle.synthesis.model_copy(update={
        "recommendation": next(v for v in "abc" if v != bundle.synthesis.recommendation)})})
    [problem] = [p for p in declared_synthesis_problems(tiny.spec, other) if "saved decision" in p.message]
    assert (problem.expected, problem.actual) == (bundle.evidence["C"].decision, other.synthesis.recommendation)
    # Lab 12: the decision is a dict, and the recommendation is its "choice"
    on_e = tiny.spec.model_copy(update={"synthesis": tiny.spec.synthesis.model_copy(update={
        "recommendation_part": "E", "decision_field": "choice"})})
    chose_x = bundle.model_copy(update={"synthesis": bundle.synthesis.model_copy(update={"recommendation": "x"})})
    assert not [p for p in declared_synthesis_problems(on_e, chose_x) if "saved decision" in p.message]
    assert [p.expected for p in declared_synthesis_problems(on_e, bundle) if "saved decision" in p.message] == ["x"]


def test_the_books_auditor_is_asked_only_of_labs_it_can_replay(tiny):
    from conftest import auditable

    assert tiny.spec.book_auditor_replays is False and not auditable("labtiny")
    assert all(auditable(lab_id) for lab_id in ("lab07",))

