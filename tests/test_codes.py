"""Every finding carries a code (``<criterion>.<kind>``), declared in the core (:mod:`mlsys_grader.core.codes`) or in the
lab's spec, and the documentation's table of codes is generated from the declarations."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import reseal, solved
from test_docs import _between

from mlsys_grader import grade_bundle, grade_file
from mlsys_grader.core.codes import CODES, VERDICT_CODES, codes_table, is_code, verdict_code
from mlsys_grader.labs import get_lab, lab_codes, lab_ids

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import lab_outputs  # noqa: E402  (the shipped files a grader reads, and the edits the corpus digests make)


def _unregistered(report) -> list[tuple[str, str]]:
    own = set(lab_codes().get(report.lab, ()))
    return [(f.code, f.message[:80]) for f in report.findings if not is_code(f.code) or (f.code not in CODES and f.code not in own)]


def test_every_finding_of_every_shipped_file_carries_a_declared_code():
    seen: set[str] = set()
    for name, path in lab_outputs.graded_files():
        try:
            report = grade_file(path)
        except Exception:  # a refused file has no report (its error is what staff see)
            continue
        assert _unregistered(report) == [], name
        seen |= {f.code for f in report.findings}
    assert {"replay.mismatch", "stale.settings", "synthesis.rejected_equals_recommended"} <= seen, sorted(seen)


@pytest.mark.parametrize("lab", lab_ids())
def test_every_finding_of_every_edit_carries_a_declared_code(lab):
    seen: set[str] = set()
    for track in get_lab(lab).tracks:
        for seed in range(10):  # as written, a part dropped, a number changed, the choices swapped, reference answers
            report = grade_bundle(lab_outputs._edited(lab, track, seed))
            assert _unregistered(report) == [], (track, seed)
            seen |= {f.code for f in report.findings}
    assert "missing.part" in seen and any(code.startswith(("replay.", "version.")) for code in seen), sorted(seen)


def test_rationale_findings_are_coded_by_their_message():
    data = solved("lab07", "edge")
    data["synthesis"]["rationale"] = "Too short."
    report = grade_bundle(reseal(data))
    codes = {f.code for f in report.findings if f.part == "synthesis"}
    assert "rationale.short" in codes and all(code.startswith(("rationale.", "generated.")) for code in codes), codes


def test_the_serialised_report_carries_the_codes_and_reads_back():
    data = solved("lab07", "edge")
    del data["evidence"]["C"]
    report = grade_bundle(reseal(data))
    written = json.loads(report.model_dump_json())
    assert {f["code"] for f in written["findings"]} >= {"missing.part"}
    assert [f.code for f in type(report).model_validate(written).findings] == [f.code for f in report.findings]


def test_an_uncertain_verdicts_reason_has_a_code():
    for reason, code in (("option named, no stance cue found", "uncertain.no_stance_cue"),
                         ("partly not English: option named, no stance cue found", "uncertain.partly_english"),
                         ("option recommended only with a hedge", "uncertain.hedged"),
                         ("quantity matched only after rounding to its last significant digit", "uncertain.rounding"),
                         ("something new", "uncertain.other")):
        assert verdict_code(reason) == code and code in VERDICT_CODES


def test_the_codes_table_is_the_generated_one():
    assert _between("<!-- codes-table:start -->", "<!-- codes-table:end -->") == codes_table(lab_codes()), (
        "docs/grading.md's table of codes is out of date: paste the output of `mlsys-grader codes`")


def test_codes_are_well_formed_and_described():
    assert all(is_code(code) and meaning.strip() for code, meaning in {**CODES, **VERDICT_CODES}.items())
    assert not any(re.search(r"[A-Z]", code) for code in CODES)
