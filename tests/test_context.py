"""The grading context compares each recorded arm with the plan's once: an arm that is the plan's to the type and the
order is compared no further; any other arm is walked in full, as before.
"""

from __future__ import annotations

import pytest
from conftest import LABS, reseal, solved

from mlsys_grader import grade_bundle
from mlsys_grader.api import default_rubric, mlsysim_version
from mlsys_grader.core.context import _PlanKeys, build_context
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.labs import get_lab


def _context(data: dict):
    return build_context(bundle_from_mapping(data), get_lab(data["lab"]), default_rubric(data["lab"]),
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


def test_the_plan_keys_are_kept_per_object_and_forgotten_when_full():
    keys = _PlanKeys()
    first, same = {"a": 1.0}, {"a": 1.0}
    other = {"a": 1}
    assert keys(first) == keys(same) != keys(other)  # equal values, one key; another type, another key
    assert keys(first) is keys(first)  # remembered: the bytes are not made again
    for index in range(_PlanKeys.SIZE + 1):
        keys({"n": index})
    assert len(keys._keys) <= _PlanKeys.SIZE
