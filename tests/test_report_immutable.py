"""Reports and scores of record are immutable all the way down, and serialise exactly as before.

Every container of a real graded report (``parts``, ``findings``, ``flags``, ``versions``, each part's
``items``) and of a real score of record (``flags``, ``notes``, ``public_notes``) refuses every change;
a changed report or record is a new value.  The JSON and ``model_dump`` of a report are what they were
when these were lists and dicts.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import zipfile
from collections.abc import Callable

import pytest
from conftest import LABS
from pydantic import ValidationError

from mlsys_grader import Bundle, grade_bundle, solve
from mlsys_grader.core.report import Finding, FrozenDict, GradeReport, ItemScore, PartScore
from mlsys_grader.gradescope._options import AutograderOptions
from mlsys_grader.gradescope._pipeline import Pipeline
from mlsys_grader.gradescope._record import ScoreOfRecord, grade_upload
from mlsys_grader.gradescope._results import gradescope_results
from mlsys_grader.gradescope._upload import inspect_upload

REFUSED = (AttributeError, TypeError, ValidationError, dataclasses.FrozenInstanceError)
FINDING = Finding(part="A", criterion="missing", message="Capture part A.", rubric_item="captured")


def _graded(lab: str, *, drop: str | None = None) -> GradeReport:
    """A real report: ``lab`` solved (a ``generated`` finding and flag), with part ``drop`` removed (a ``missing`` one)."""
    data = solve(lab, "cloud", seed=5).model_dump(mode="json")
    if drop is not None:
        data["evidence"].pop(drop)
    return grade_bundle(Bundle.model_validate(data).sealed().to_json())


def _dumped_before(plain: dict) -> dict:
    """What ``model_dump()`` gave before reports were immutable: the JSON's lists and dicts, except a finding's
    ``also_costs``, a tuple ever since it was added."""
    return {**plain, "findings": [{**finding, "also_costs": tuple(finding["also_costs"])} for finding in plain["findings"]]}


def _sequence_mutations(value: object) -> list[Callable[[], object]]:
    return [lambda: value.append(FINDING), lambda: value.extend([FINDING]), lambda: value.insert(0, FINDING),
            lambda: value.pop(), lambda: value.remove(value[0]), lambda: value.clear(), lambda: value.sort(),
            lambda: value.reverse(), lambda: value.__setitem__(0, FINDING), lambda: value.__delitem__(0),
            lambda: value.__iadd__([FINDING]), lambda: value.__imul__(2)]


def _mapping_mutations(value: object) -> list[Callable[[], object]]:
    key = next(iter(value), "X")
    return [lambda: value.__setitem__("X", "y"), lambda: value.__setitem__(key, "y"), lambda: value.__delitem__(key),
            lambda: value.pop(key), lambda: value.pop("X", None), lambda: value.popitem(), lambda: value.clear(),
            lambda: value.update({"X": "y"}), lambda: value.update(X="y"), lambda: value.setdefault("X", "y"),
            lambda: value.__ior__({"X": "y"})]


def _assert_refused(mutations: list[Callable[[], object]], where: str) -> None:
    for index, mutate in enumerate(mutations):
        try:
            mutate()
        except REFUSED:
            continue
        pytest.fail(f"{where}: mutation {index} was accepted")


def _assert_report_immutable(report: GradeReport, *, filled: bool = True) -> None:
    before = report.model_dump_json()
    assert not filled or (report.findings and report.flags and report.parts and report.versions), "every container filled"
    _assert_refused(_sequence_mutations(report.findings), "findings")
    _assert_refused(_sequence_mutations(report.flags), "flags")
    _assert_refused(_mapping_mutations(report.parts), "parts")
    _assert_refused(_mapping_mutations(report.versions), "versions")
    dict(report.parts).clear()  # a copy may change, and changes nothing
    report.parts.__init__({})  # a second __init__ changes nothing either
    report.versions.__init__(X="y")
    for name, part in report.parts.items():
        assert part.items, name
        _assert_refused(_sequence_mutations(part.items), f"parts[{name}].items")
        with pytest.raises(ValidationError):
            part.score = 0  # type: ignore[misc]
        with pytest.raises(ValidationError):
            part.items[0].points = 0  # type: ignore[misc]
    for field in GradeReport.model_fields:
        with pytest.raises(ValidationError):
            setattr(report, field, getattr(report, field))
    with pytest.raises(ValidationError):
        report.findings += (FINDING,)  # type: ignore[misc]
    with pytest.raises(TypeError):
        report.parts |= {}  # type: ignore[misc]
    with pytest.raises(ValidationError):
        report.findings[0].message = "changed"  # type: ignore[misc]
    assert report.model_dump_json() == before
    assert (type(report.findings), type(report.flags), type(report.parts), type(report.versions)) == (
        tuple, tuple, FrozenDict, FrozenDict)


@pytest.mark.parametrize("lab", LABS)
def test_every_container_of_a_graded_report_refuses_change(lab):
    solved, incomplete = _graded(lab), _graded(lab, drop="B")
    assert [f.criterion for f in solved.findings] == ["generated"] and "missing" in {f.criterion for f in incomplete.findings}
    for report in (solved, incomplete, incomplete.public()):
        _assert_report_immutable(report)
    for name, part in incomplete.public().parts.items():  # the student's view is built by model_copy: immutable too
        assert type(part.items) is tuple, name


@pytest.mark.parametrize("lab", LABS)
def test_a_report_copied_constructed_or_pickled_is_as_immutable(lab):
    report = _graded(lab, drop="C")
    lists = {"findings": list(report.findings), "flags": list(report.flags), "parts": dict(report.parts),
             "versions": dict(report.versions)}
    for made in (report.model_copy(update=lists), GradeReport.model_construct(**{**dict(report), **lists}),
                 GradeReport(**{**dict(report), **lists}), report.model_copy(deep=True), copy.deepcopy(report),
                 pickle.loads(pickle.dumps(report))):
        assert made == report
        _assert_report_immutable(made)
    part = report.parts["A"]
    for made_part in (part.model_copy(update={"items": list(part.items)}), PartScore.model_construct(**{**dict(part), "items": list(part.items)})):
        assert made_part == part and type(made_part.items) is tuple
        _assert_refused(_sequence_mutations(made_part.items), "a copied part's items")


@pytest.mark.parametrize("lab", LABS)
def test_a_report_serialises_as_it_did_with_lists_and_dicts(lab):
    report = _graded(lab, drop="B")
    text = report.model_dump_json()
    plain = json.loads(text)
    rebuilt, loaded = GradeReport.model_validate(plain), GradeReport.model_validate_json(text)
    assert report.rationale_spans and not rebuilt.rationale_spans  # the reading's spans stay with the process that graded
    assert report.template_match is not None and rebuilt.template_match is None  # so does the template it was matched to
    assert rebuilt == loaded == report.model_copy(update={"rationale_spans": (), "template_match": None})
    assert rebuilt.model_dump_json() == loaded.model_dump_json() == text
    assert rebuilt.model_dump_json(indent=1) == report.model_dump_json(indent=1) == json.dumps(plain, indent=1, ensure_ascii=False)
    dumped = report.model_dump()
    assert dumped == _dumped_before(plain)  # lists and dicts, as before: a tuple never equals a list
    assert type(dumped["findings"]) is list and type(dumped["flags"]) is list and type(dumped["parts"]) is dict
    assert all(type(part["items"]) is list for part in dumped["parts"].values()) and type(dumped["versions"]) is dict
    assert report.model_dump(mode="json") == plain
    assert (rebuilt.text(), rebuilt.text(staff=True), rebuilt._repr_html_()) == (report.text(), report.text(staff=True), report._repr_html_())
    assert GradeReport.model_json_schema()["properties"]["findings"]["type"] == "array"
    assert GradeReport.model_json_schema()["properties"]["parts"]["type"] == "object"


def test_a_hand_built_report_dumps_to_its_golden_json():
    """Built from lists and dicts, the way the report was built before it was immutable: the same bytes."""
    item = {"item": "captured", "points": 0.0, "max_points": 3.0}
    report = GradeReport(lab="lab07", track="cloud", score=0.0, max_score=3.0,
                         parts={"A": {"part": "A", "score": 0.0, "max_score": 3.0, "items": [item]}},
                         findings=[FINDING.model_dump()], flags=["missing"], versions={"rubric": "lab07-v1-x"})
    golden = ('{"lab":"lab07","track":"cloud","score":0.0,"max_score":3.0,"parts":{"A":{"part":"A","score":0.0,"max_score":3.0,'
              '"items":[{"item":"captured","points":0.0,"max_points":3.0,"held":false,"certainty":null,"certainty_reason":null}]}},'
              '"findings":[{"part":"A","criterion":"missing","message":"Capture part A.","expected":null,"actual":null,'
              '"rubric_item":"captured","hidden":false,"also_costs":[],"voids_part":false}],"flags":["missing"],'
              '"content_hash":null,"versions":{"rubric":"lab07-v1-x"}}')
    assert report.model_dump_json() == golden
    assert GradeReport.model_validate_json(golden).model_dump_json() == golden
    assert report.model_dump() == _dumped_before(json.loads(golden))
    assert report.parts["A"].items == (ItemScore(**item),) and report.findings == (FINDING,) and report.flags == ("missing",)
    assert GradeReport(**{**dict(report), "versions": {}}).model_dump()["versions"] == {} == GradeReport(
        lab="x", track="y", score=0, max_score=0, parts={}, findings=[], flags=[]).versions


def test_frozen_dict_is_a_dict_that_refuses_change():
    value = FrozenDict({"a": 1})
    assert value == {"a": 1} and isinstance(value, dict) and json.dumps(value) == '{"a": 1}'
    _assert_refused(_mapping_mutations(value), "FrozenDict")
    value.__init__({"b": 2})
    value.__init__(b=2)
    assert value == {"a": 1}
    assert (value | {"b": 2}) == {"a": 1, "b": 2} and type(value | {"b": 2}) is dict and value == {"a": 1}
    assert type(value.copy()) is dict and type(copy.copy(value)) is FrozenDict and pickle.loads(pickle.dumps(value)) == value
    assert hash(value) == hash(FrozenDict({"a": 1}))


# -- the score of record -------------------------------------------------------------------------------------------

def _assert_record_immutable(record: ScoreOfRecord) -> None:
    before = (record.flags, record.notes, record.public_notes, record.report.model_dump_json())
    for name in ("flags", "notes", "public_notes"):
        value = getattr(record, name)
        assert type(value) is tuple, name
        _assert_refused([lambda v=value: v.append("x"), lambda v=value: v.extend(["x"]), lambda v=value: v.clear(),
                         lambda v=value: v.__setitem__(0, "x"), lambda v=value: v.__iadd__(["x"])], name)
    for field in dataclasses.fields(record):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field.name, getattr(record, field.name))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.notes += ("x",)  # type: ignore[misc]
    assert (record.flags, record.notes, record.public_notes, record.report.model_dump_json()) == before


def _notebook(lab: str) -> dict:
    return {"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "execution_count": None, "outputs": []}],
            "metadata": {"otter": {"assignment_name": lab}}, "nbformat": 4, "nbformat_minor": 5}


@pytest.mark.parametrize("lab", LABS)
def test_every_container_of_a_score_of_record_refuses_change(lab, tmp_path):
    graded_dir, zipped_dir, empty_dir = tmp_path / "graded", tmp_path / "zipped", tmp_path / "empty"
    for folder in (graded_dir, zipped_dir, empty_dir):
        folder.mkdir()
    raw = solve(lab, "edge", seed=3).to_json().encode()
    (graded_dir / f"{lab}-submission.json").write_bytes(raw)
    with zipfile.ZipFile(zipped_dir / f"{lab}_2026_11_29.zip", "w") as archive:
        archive.writestr(f"{lab}-submission.json", raw)
    graded, zipped, empty = (grade_upload(inspect_upload(folder, lab)) for folder in (graded_dir, zipped_dir, empty_dir))
    assert graded.problem is None and empty.problem is not None and empty.flags and zipped.public_notes
    for record in (graded, zipped, empty, empty.with_problem("Another sentence.")):
        _assert_record_immutable(record)
        _assert_report_immutable(record.report, filled=record.problem is None)
        assert json.loads(json.dumps(gradescope_results(record)))["extra_data"]["mlsys_grader"]["versions"] == dict(record.report.versions)
    assert ScoreOfRecord(lab, graded.report, "x", flags=["a"], notes=["b"]).flags == ("a",)  # lists given are held as tuples


@pytest.mark.parametrize("lab", LABS)
def test_the_pipeline_builds_new_records_when_it_adds_notes(lab, tmp_path):
    """Regenerating after the sandbox run adds notes to a new record; the record it replaced is unchanged."""
    upload_dir = tmp_path / "upload"
    upload_dir.mkdir()
    (upload_dir / f"{lab}.ipynb").write_text(json.dumps(_notebook(lab)))
    pipeline = Pipeline(AutograderOptions(lab=lab), tmp_path / "tests")
    first = pipeline.grade_upload(inspect_upload(upload_dir, lab))
    assert first.problem is not None and "no_bundle" in first.all_flags
    kept = (first.notes, first.public_notes, first.problem, first.report.model_dump_json())
    none_saved = pipeline.regenerate(None, timed_out=False)
    assert none_saved is not first and none_saved.notes == (*first.notes, "the notebook ran in the sandbox but saved no bundle")
    assert none_saved.report.findings[0].message == none_saved.problem != first.problem
    pipeline.record = first
    regenerated = pipeline.regenerate(solve(lab, "edge", seed=3).to_json().encode(), timed_out=True)
    assert regenerated.problem is None and regenerated.notes[-1].startswith("the upload had no bundle")
    assert len(regenerated.public_notes) == 2 and regenerated.public_notes[1].startswith("Your notebook did not finish within 120")
    assert (first.notes, first.public_notes, first.problem, first.report.model_dump_json()) == kept
    for record in (first, none_saved, regenerated):
        _assert_record_immutable(record)
        _assert_report_immutable(record.report, filled=False)


def test_the_tests_here_can_fail():
    """The mutation check fails on a container that accepts change (a list, a dict), so the tests above can fail."""
    with pytest.raises(pytest.fail.Exception):
        _assert_refused(_sequence_mutations([FINDING]), "a list")
    with pytest.raises(pytest.fail.Exception):
        _assert_refused(_mapping_mutations({"a": 1}), "a dict")

