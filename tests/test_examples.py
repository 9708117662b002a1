"""The shipped examples (README's quick start grades them) say what their names say."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlsys_grader import BundleFormatError, grade_file
from mlsys_grader.labs import lab_ids

LABS = lab_ids()

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "submissions"
FULL = sorted(p for p in EXAMPLES.glob("lab*.json") if p.stem.count("-") == 1)


def test_every_lab_and_track_has_a_full_marks_example():
    assert [p.stem for p in FULL] == [f"{lab}-{track}" for lab in LABS
                                      for track in sorted(("tinyml", "mobile", "edge", "cloud"))]


@pytest.mark.parametrize("path", FULL, ids=lambda p: p.stem)
def test_reference_examples_earn_full_marks_with_their_own_words(path):
    report = grade_file(path)
    assert (report.score, report.flags, report.findings) == (100, (), ())


def test_the_defective_examples_lose_what_their_names_say():
    edited = grade_file(EXAMPLES / "lab07-cloud-edited-number.json")
    assert edited.parts["B"].score == 0 and edited.flags == ("integrity",) and edited.score == 84
    vague = grade_file(EXAMPLES / "lab07-mobile-rationale-without-numbers.json")
    assert [f.rubric_item for f in vague.findings] == ["rationale_cites_evidence"] and vague.score == 96
    stale = grade_file(EXAMPLES / "lab11-edge-stale-part-d.json")
    assert [(f.part, f.rubric_item) for f in stale.findings if f.rubric_item] == [("D", "fresh")] and stale.flags == ("stale",)
    assert stale.score == 97  # the note on part C (changed settings after the first run) costs nothing
    with pytest.raises(BundleFormatError, match="not valid JSON"):
        grade_file(EXAMPLES / "truncated.json")
