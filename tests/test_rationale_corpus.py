"""A corpus of hand-written rationales, graded on the bundles they were written for.

``tests/rationale_corpus/<lab>.toml`` holds honest rationales in many styles (each must earn
every rationale point) and gaming texts (each must lose exactly the items it fakes, with the
message that says what is missing).  each lab's ``answers.py`` (``Lab.reference_answers``) holds the
reference answers for each track's default bundle, which must earn the whole synthesis.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from conftest import LABS, TRACKS, reference_answers, reseal, solved

from mlsys_grader import get_lab, grade_bundle

CORPUS = Path(__file__).parent / "rationale_corpus"
SYNTHESIS_FIELDS = ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale")
RATIONALE_ITEMS = {"rationale_length", "rationale_cites_evidence", "rationale_names_recommendation",
                   "rationale_names_rejected", "rationale_names_limitation", "rationale_names_trigger"}


def _entries(*kinds: str) -> list:
    cases = []
    for path in sorted(CORPUS.glob("*.toml")):
        lab = path.stem
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for entry in (entry for kind in kinds for entry in data.get(kind, [])):
            cases.append(pytest.param(lab, entry, id=f"{lab}-{entry['name']}"))
    return cases


def _grade(lab: str, track: str, seed: int | None, entry: dict):
    bundle = solved(lab, track, seed)
    bundle["synthesis"].update({name: entry[name] for name in SYNTHESIS_FIELDS if name in entry})
    return grade_bundle(reseal(bundle))


def _lost(report) -> set[str]:
    return {item.item for item in report.parts["synthesis"].items if item.points < item.max_points}


def test_the_corpus_is_large_enough_and_its_texts_are_distinct():
    for path in sorted(CORPUS.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert len(data["honest"]) >= 10 and len(data["gaming"]) >= 10, path.name
        texts = [entry["rationale"] for entry in data["honest"] + data.get("honest_forms", []) + data["gaming"]]
        assert len(set(texts)) == len(texts), f"{path.name} repeats a text"
        names = [entry["name"] for entry in data["honest"] + data.get("honest_forms", []) + data["gaming"]]
        assert len(set(names)) == len(names), f"{path.name} repeats a name"


@pytest.mark.parametrize("lab, entry", _entries("honest", "honest_forms"))
def test_an_honest_rationale_earns_every_rationale_point(lab, entry):
    report = _grade(lab, entry["track"], entry.get("seed"), entry)
    findings = [(f.criterion, f.rubric_item, f.message) for f in report.findings if f.part == "synthesis"]
    assert findings == [], findings
    assert report.parts["synthesis"].score == report.parts["synthesis"].max_score
    assert "generated" not in report.flags
    if "uncertain" in entry:  # what the reader is unsure of is listed for staff, the points stand
        assert [item.item for item in report.uncertain_items()] == entry["uncertain"], [
            (item.item, item.certainty_reason) for item in report.uncertain_items()]


@pytest.mark.parametrize("lab, entry", _entries("gaming"))
def test_a_gaming_text_loses_exactly_what_it_fakes(lab, entry):
    report = _grade(lab, entry["track"], entry.get("seed"), entry)
    assert _lost(report) == set(entry["loses"]), [(f.rubric_item, f.also_costs, f.message) for f in report.findings
                                                   if f.part == "synthesis"]
    assert set(entry["loses"]) <= RATIONALE_ITEMS
    synthesis = [f for f in report.findings if f.part == "synthesis"]
    assert all(f.criterion == "rationale" and not f.hidden for f in synthesis), synthesis
    for item, fragment in entry["messages"].items():
        costing = [f.message for f in synthesis if item == f.rubric_item or item in f.also_costs]
        assert costing and any(fragment in message for message in costing), (item, costing)
    assert all(message.endswith(".") for message in (f.message for f in synthesis))
    if "uncertain" in entry:  # what the reader is unsure of reaches the review queue
        assert [item.item for item in report.uncertain_items()] == entry["uncertain"], [
            (item.item, item.certainty_reason) for item in report.uncertain_items()]


REFERENCE_CASES = [pytest.param(lab, track, id=f"{lab}-{track}")
                   for lab, tracks in reference_answers().items() for track in tracks]


def test_every_lab_and_track_has_a_reference_answer():
    data = reference_answers()
    assert {(lab, track) for lab, tracks in data.items() for track in tracks} == {
        (lab, track) for lab in LABS for track in TRACKS}
    for lab, tracks in data.items():
        expected = set(get_lab(lab).synthesis_fields)  # Lab 07 and Lab 08 ask for the recommendation too
        assert all(set(entry) == expected for entry in tracks.values()), lab
    texts = [entry["rationale"] for tracks in data.values() for entry in tracks.values()]
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize("lab, track", REFERENCE_CASES)
def test_a_reference_answer_earns_the_whole_synthesis(lab, track):
    entry = reference_answers()[lab][track]
    report = _grade(lab, track, None, entry)
    assert [f.message for f in report.findings if f.part == "synthesis"] == []
    assert report.parts["synthesis"].score == report.parts["synthesis"].max_score
    assert "generated" not in report.flags
