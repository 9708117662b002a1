"""Hostile or malformed records become findings within bounded time; nothing escapes as an exception."""

from __future__ import annotations

import time

import pytest
from conftest import reseal, solved

from mlsys_grader import grade_bundle


def _edit(lab, track, edit):
    bundle = solved(lab, track, 4)
    edit(bundle)
    return grade_bundle(reseal(bundle))


@pytest.mark.parametrize("lab, track, part, edit", [
    ("lab11", "cloud", "E", lambda b: b["evidence"]["E"]["alternatives"][0]["inputs"]["latency_budget"].update(unit="__import__('os').system('x')")),
    ("lab11", "edge", "A", lambda b: b["evidence"]["A"]["result"]["inputs"]["hardware"].update(registry_ref="Hardware.Cloud.__class__")),
    ("lab11", "mobile", "C", lambda b: b["evidence"]["C"]["result"]["inputs"].update(m=10 ** 1000)),
    ("lab07", "tinyml", "B", lambda b: b["evidence"]["B"]["result"]["inputs"].update(tensor_elements=10 ** 300)),
    ("lab07", "cloud", "D", lambda b: b["evidence"]["D"]["result"].update(inputs=["not", "a", "mapping"])),
    ("lab11", "tinyml", "D", lambda b: b["evidence"]["D"]["result"]["inputs"]["baseline_kernel_time"].update(magnitude="fast")),
])
def test_hostile_inputs_are_domain_findings(lab, track, part, edit):
    report = _edit(lab, track, edit)
    assert any(f.part == part and f.criterion == "domain" for f in report.findings), [(f.part, f.criterion) for f in report.findings]
    assert "integrity" in report.flags


def test_a_chosen_result_naming_foreign_inputs_is_a_decision_finding_and_never_replayed():
    def edit(bundle):
        bundle["evidence"]["E"]["chosen_result"]["inputs"] = {"m": 10 ** 1000, "objective": "latency"}

    report = _edit("lab11", "cloud", edit)
    assert [f.criterion for f in report.findings if f.part == "E"] == ["decision"]
    assert "chosen result must be the matching ranking" in report.findings_for("E")[0].message


def test_a_wall_of_numbers_in_the_rationale_costs_bounded_time():
    def edit(bundle):
        bundle["synthesis"]["rationale"] = "7.77 ms " * 2400

    started = time.perf_counter()
    report = _edit("lab07", "edge", edit)
    assert time.perf_counter() - started < 5
    assert any(f.rubric_item == "rationale_cites_evidence" for f in report.findings)
