"""The grading context compares each recorded arm with the plan's once: an arm that is the plan's to the type and the
order is compared no further; any other arm is walked in full, as before.
"""

from __future__ import annotations

import pytest
from conftest import LABS, examples, reseal, solved
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsys_grader import grade_bundle
from mlsys_grader.api import default_replay, default_rubric, mlsysim_version
from mlsys_grader.core.context import _planned_json, build_context, first_difference, plan_fingerprint, same_json
from mlsys_grader.core.jsonio import exact_key
from mlsys_grader.core.memos import Memos, PerObject
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.labs import get_lab


def _context(data: dict):
    return build_context(bundle_from_mapping(data), get_lab(data["lab"]), default_rubric(data["lab"]), default_replay(),
                         mlsysim_version=mlsysim_version(), grader_version="test")


def _arm_names(record: dict) -> set[str]:
    names = {"baseline", "result"} | {f"alternatives[{i}]" for i in range(len(record.get("alternatives") or []))}
    return names | ({"chosen_result"} if record.get("chosen_result") is not None else set())


@pytest.mark.parametrize("lab", LABS)
def test_an_honest_record_has_every_arm_exact_and_no_mismatch(lab):
    data = solved(lab, "edge", seed=3)
    context = _context(data)
    for part, state in context.parts.items():
        assert state.grader_error is None and state.domain_problems == []
        assert state.exact_arms == _arm_names(data["evidence"][part]), part
        assert state.mismatches == []


def _first_float(arm: dict) -> tuple[str, float]:
    return next((key, value) for key, value in sorted(arm.items()) if isinstance(value, float) and value == int(value)
                and key != "inputs")


def test_an_integer_written_for_its_float_is_no_longer_exact_but_still_agrees():
    data = solved("lab07", "edge", seed=3)
    arm = data["evidence"]["A"]["baseline"]
    key, value = _first_float(arm)
    arm[key] = int(value)  # 6000.0 -> 6000: the same number, another type
    state = _context(reseal(data)).parts["A"]
    assert "baseline" not in state.exact_arms and "result" in state.exact_arms
    assert state.mismatches == []  # numbers agree to 1e-9 whatever their type, as before
    assert grade_bundle(reseal(data)).score == grade_bundle(solved("lab07", "edge", seed=3)).score


def test_an_edited_number_leaves_its_arm_out_of_the_exact_ones_and_is_listed_at_its_path():
    data = solved("lab07", "edge", seed=3)
    arm = data["evidence"]["A"]["result"]
    key, value = _first_float(arm)
    arm[key] = value * 1.5 + 1
    state = _context(reseal(data)).parts["A"]
    assert "result" not in state.exact_arms and "baseline" in state.exact_arms
    assert [path for path, _, _ in state.mismatches] == [f"result.{key}"]
    report = grade_bundle(reseal(data))
    assert [(f.part, f.criterion, f.actual) for f in report.findings if f.rubric_item == "replay"] == \
        [("A", "replay", value * 1.5 + 1)]


def test_the_plan_keys_are_kept_per_object_and_bounded():
    keys = PerObject(exact_key, size=16)
    first, same = {"a": 1.0}, {"a": 1.0}
    other = {"a": 1}
    assert keys(first) == keys(same) != keys(other)  # equal values, one key; another type, another key
    assert keys(first) is keys(first)  # remembered: the bytes are not made again
    kept = [{"n": index} for index in range(40)]
    for value in kept:
        keys(value)
    assert len(keys._kept) == 16  # bounded: the least recently used are forgotten
    assert keys(kept[0]) == exact_key(kept[0])  # a forgotten value is computed again, to the same key


# -- same_json: first_difference's verdict without its path ----------------------------------------------------------

_SCALARS = st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, 2.0, -1.0, 1.5, 1.5 + 1e-12, 1e300]),
                     st.sampled_from(["a", "b", ""]), st.none())
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(st.sampled_from("abcd"), inner, max_size=3)),
                       max_leaves=12)


def _reordered(value):
    """The same JSON value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {key: _reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(item) for item in value]
    return value


@given(_VALUES, _VALUES)
@settings(max_examples=examples(400), deadline=None)
def test_same_json_agrees_with_first_difference_on_any_two_values(left, right):
    assert same_json(left, right) == (first_difference(left, right) is None)
    assert same_json(left, _reordered(left)) and first_difference(left, _reordered(left)) is None


@pytest.mark.parametrize("left, right, same", [
    ({"a": 1, "b": True}, {"b": True, "a": 1}, True),       # another key order: equal to the type
    ({"a": 1, "b": True}, {"b": 1, "a": 1}, False),         # True == 1 by ==, never here
    ({"a": [1.0, True]}, {"a": [1, 1]}, False),
    ({"a": 1}, {"a": 1.0}, True),                           # an integer and its float are one number
    ({"a": 1.5}, {"a": 1.5 * (1 + 1e-12)}, True),           # floats to 1e-9 relative
    ({"a": 1}, {"a": 2}, False),
    ([1, 2], [2, 1], False),
    ({"a": 1}, {"a": 1, "b": None}, False),
])
def test_same_json_on_the_cases_that_matter(left, right, same):
    assert same_json(left, right) is same and (first_difference(left, right) is None) is same
    assert _planned_json(Memos(), left, right) is same  # the plan's side through its kept exact key and canonical text


@given(_VALUES, _VALUES)
@settings(max_examples=examples(300), deadline=None)
def test_a_planned_value_compares_as_same_json_does(planned, recorded):
    memos = Memos()
    assert _planned_json(memos, planned, recorded) == same_json(planned, recorded)
    assert _planned_json(memos, planned, _reordered(planned))


def test_the_plan_fingerprint_is_the_labs_and_is_kept_per_plan_object():
    lab, memos = get_lab("lab11"), Memos()
    plan = lab.plan(default_replay(), "edge", "C", {"shape": "aligned", "operation": "gemm"}, {})
    upstream = {"C": plan.result}
    first = plan_fingerprint(memos, lab, "edge", "D", upstream)
    assert first == lab.fingerprint("edge", "D", upstream) == plan_fingerprint(memos, lab, "edge", "D", upstream)
    other = {"C": {**plan.result, "outputs": {}}}  # another object: its own fingerprint, never the cached one
    assert plan_fingerprint(memos, lab, "edge", "D", other) == lab.fingerprint("edge", "D", other) != first
    assert plan_fingerprint(memos, lab, "cloud", "D", upstream) == lab.fingerprint("cloud", "D", upstream) != first
