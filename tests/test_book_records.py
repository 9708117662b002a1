"""Our records are the book's captures: the book's ``result_role`` and the book's seal over the upstream inputs each lab
declares, so the book's own evidence audit finds nothing stale in a bundle the notebook writes.

The book's evidence audit (``audit_evidence`` in the book's ``labs/mlsysbook_labs/experiment_evidence.py``) is not on
PyPI; its rule is written here from the book: a capture is stale when its track or part is not the one audited, or its
``upstream_fingerprint`` is not the SHA-256 of ``json.dumps({"track": track, "inputs": upstream_inputs},
sort_keys=True, separators=(",", ":"), allow_nan=False)`` for the upstream inputs of the notebook's current settings.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import LAB_TRACKS, reseal, solved

from mlsys_grader import get_lab, grade_bundle
from mlsys_grader.api import default_replay
from mlsys_grader.core.capture import plan_all

MARIMO = Path(__file__).parent / "fixtures" / "marimo"


def book_seal_of(track: str, upstream_inputs: Any) -> str:
    """The book's ``input_fingerprint``, written from its rule (not this package's function)."""
    text = json.dumps({"track": track, "inputs": upstream_inputs}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def book_upstream(lab_id: str, part: str, inputs: Any) -> Any:
    """What the lab's notebook passes to ``capture_evidence`` as ``upstream_inputs`` for a capture whose ``inputs`` are
    these, read from the book's notebooks: Lab 07 and Lab 11 pass each capture's own inputs; Lab 08 its
    ``common_upstream = {}`` for every part; Lab 02 its own for parts A–C, and for part D ``d_upstream`` = part A's
    payload and link with D's connectivity, choice and rejected design (its ``inputs`` add ``compared_design``)."""
    if lab_id == "lab08":
        return {}
    if lab_id == "lab02" and part == "D":
        return {key: inputs[key] for key in ("payload_mb", "connection_mbps", "connectivity_available", "choice", "rejected")}
    return inputs


def book_evidence_audit(data: dict) -> list[str]:
    """The parts the book's evidence audit calls stale: the live settings are the bundle's final controls, and each
    part's upstream inputs are what the lab's notebook passes for them (:func:`book_upstream`)."""
    lab, track = get_lab(data["lab"]), data["track"]
    live = plan_all(lab, default_replay(), track, data["controls"])
    return [part for part, capture in sorted(data["evidence"].items())
            if capture["track"] != track or capture["part"] != part
            or capture["upstream_fingerprint"] != book_seal_of(track, book_upstream(lab.lab_id, part, dict(live[part].upstream)))]


@pytest.mark.parametrize("lab_id, track", LAB_TRACKS)
def test_new_bundles_carry_the_books_seal_and_result_role(lab_id, track):
    for seed in (None, 1, 2):
        data = solved(lab_id, track, seed)
        assert data["schema_version"] == 3
        assert book_evidence_audit(data) == []
        decision_part = [part for part, spec in get_lab(lab_id).parts.items() if spec.has_decision][-1]
        for part, record in data["evidence"].items():
            assert record["upstream_fingerprint"] == book_seal_of(track, book_upstream(lab_id, part, record["inputs"])), (seed, part)
            if part != decision_part and lab_id != "lab08":
                assert record["result_role"] == "tested intervention", (seed, part)
        e = data["evidence"][decision_part]
        if lab_id == "lab08":  # every part keeps its chosen arm, as the book's notebook words it
            roles = [data["evidence"][part]["result_role"] for part in "ABCD"]
            assert roles == ["chosen optimizer", "chosen batch strategy", "chosen precision", "chosen checkpoint policy"]
            assert e["result_role"] == ("rejected alternative" if e["decision"] == "none" else "chosen systems intervention")
        elif lab_id == "lab02":
            assert e["result_role"] == ("rejected alternative" if e["decision"] == "none" else "chosen placement")
        elif lab_id == "lab07":
            assert e["result_role"] == ("rejected alternative" if e["decision"] == "hold" else "tested intervention")
        else:
            assert e["result_role"] == ("chosen candidate" if e["decision"]["recommendation"] == "alternative"
                                        else "rejected alternative")


@pytest.mark.parametrize("name", sorted(path.name for path in MARIMO.glob("*.json")))
def test_each_labs_seal_is_the_one_the_books_own_exports_hold(name):
    """The genuine exports of the book's marimo labs: the lab's rule (``upstream_inputs``) seals each capture exactly
    as the book did, and the record the reader makes of it carries that seal and the book's ``result_role``."""
    export = json.loads((MARIMO / name).read_text(encoding="utf-8"))
    lab_id = name.split("-")[0]
    lab = get_lab(lab_id)
    captures = export["result_snapshot"]["captures"]
    assert sorted(captures) == list(lab.part_ids())
    for part, capture in captures.items():
        assert lab.fingerprint(capture["track"], part, capture["inputs"]) == capture["upstream_fingerprint"], part
        assert book_seal_of(capture["track"], book_upstream(lab_id, part, capture["inputs"])) == capture["upstream_fingerprint"], part
        assert isinstance(capture["result_role"], str)


def test_a_recaptured_part_c_makes_part_d_stale_for_the_grader_and_for_the_books_audit():
    """Lab 11 D builds on part C's selected result: after C is recaptured with other settings, D's upstream settings
    (C's latency among its inputs) differ from the final ones, compared directly, and the book's audit agrees."""
    data = solved("lab11", "edge", 3)
    other = next(solved("lab11", "edge", seed) for seed in range(4, 40)
                 if solved("lab11", "edge", seed)["controls"]["C"] != data["controls"]["C"])
    data["controls"]["C"], data["evidence"]["C"] = other["controls"]["C"], other["evidence"]["C"]
    data = reseal(data)
    report = grade_bundle(json.dumps(data))
    assert [(f.part, f.criterion) for f in report.findings if f.criterion == "stale"] == [("D", "stale")]
    (stale,) = [f for f in report.findings if f.criterion == "stale"]
    assert "or the part C result it builds on" in stale.message and "recapture part D" in stale.message
    assert book_evidence_audit(data) == ["D"]


def test_a_changed_seal_is_stale_though_the_settings_match():
    data = solved("lab07", "mobile", 2)
    data["evidence"]["C"]["upstream_fingerprint"] = book_seal_of("mobile", {"baseline_breaks": 5, "intervention_breaks": 9})
    report = grade_bundle(json.dumps(reseal(data)))
    assert [(f.part, f.criterion, f.rubric_item) for f in report.findings if f.criterion == "stale"] == [("C", "stale", "fresh")]
    assert book_evidence_audit(data) == ["C"]
