"""Hostile or malformed records become findings, with bounded work; nothing escapes as an exception."""

from __future__ import annotations

import pytest
from conftest import reseal, solved

from mlsys_grader import grade_bundle
from mlsys_grader.core.rationale import MAX_CITED, cited_quantities


def _edit(lab, track, edit):
    bundle = solved(lab, track, 4)
    edit(bundle)
    return grade_bundle(reseal(bundle))


@pytest.mark.parametrize("lab, track, part, edit", [
    ("lab11", "cloud", "E", lambda b: b["evidence"]["E"]["alternatives"][0]["inputs"]["latency_budget"].update(unit="__import__('os').system('x')")),
    ("lab11", "edge", "A", lambda b: b["evidence"]["A"]["result"]["inputs"]["hardware"].update(registry_ref="Hardware.Cloud.__class__")),
    # 10**300 a float can hold; an integer no float can hold is refused when read (tests/test_held.py)
    ("lab11", "mobile", "C", lambda b: b["evidence"]["C"]["result"]["inputs"].update(m=10 ** 300)),
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
        bundle["evidence"]["E"]["chosen_result"]["inputs"] = {"m": 10 ** 300, "objective": "latency"}

    report = _edit("lab11", "cloud", edit)
    assert [f.criterion for f in report.findings if f.part == "E"] == ["decision"]
    assert "chosen result must be the matching ranking" in report.findings_for("E")[0].message


def test_a_wall_of_numbers_in_the_rationale_is_read_only_up_to_the_cap():
    """2400 cited quantities: the reader stops at ``MAX_CITED``, so the cost of a rationale is bounded,
    and the numbers (none of them evidence) still cost the citation item."""
    wall = "7.77 ms " * 2400
    assert len(cited_quantities(wall)) == MAX_CITED < 2400

    def edit(bundle):
        bundle["synthesis"]["rationale"] = wall

    report = _edit("lab07", "edge", edit)
    assert any(f.rubric_item == "rationale_cites_evidence" for f in report.findings)
