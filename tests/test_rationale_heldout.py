"""The held-out rationales (``tests/rationale_heldout/<set>/<lab>.toml``): texts written without reading the reader's
rules, each with its writer's fair points.  The figures are reported by ``benchmarks/heldout.py`` and in
``docs/grading.md``; these tests keep the sets well formed and the reader from falling below what it was measured at."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import heldout

# honest rationale points kept, as measured after the reader's last change (docs/grading.md): a floor, not the target
FLOORS = {("set1", "lab02"): 191, ("set1", "lab07"): 189, ("set1", "lab08"): 192, ("set1", "lab11"): 192,
          ("set2", "lab02"): 190, ("set2", "lab07"): 191, ("set2", "lab08"): 192, ("set2", "lab11"): 192,
          ("set3", "lab02"): 190, ("set3", "lab07"): 190, ("set3", "lab08"): 191, ("set3", "lab11"): 188,
          ("set4", "lab02"): 191, ("set4", "lab07"): 192, ("set4", "lab08"): 190, ("set4", "lab11"): 191,
          ("set5", "lab02"): 191, ("set5", "lab07"): 191, ("set5", "lab08"): 192, ("set5", "lab11"): 192,
          ("set6", "lab02"): 191, ("set6", "lab07"): 192, ("set6", "lab08"): 187, ("set6", "lab11"): 192,
          ("set7", "lab02"): 191, ("set7", "lab07"): 190, ("set7", "lab08"): 188, ("set7", "lab11"): 192,
          ("set8", "lab02"): 192, ("set8", "lab07"): 186, ("set8", "lab08"): 188, ("set8", "lab11"): 187,
          ("set9", "lab02"): 191, ("set9", "lab07"): 192, ("set9", "lab08"): 188, ("set9", "lab11"): 188,
          ("set10", "lab02"): 187, ("set10", "lab07"): 189, ("set10", "lab08"): 187, ("set10", "lab11"): 192}
# as measured: a chat template filled with Lab 11's labels in lower case pays its length, which its writer does not pay;
# a restated prompt that names the limitation and trigger by their labels is paid those two points (set 10's writer
# pays nothing; set 8's writers pay them in a filled form)
KNOWN_OVERPAID = {("set8", "lab11"): ["gaming-template-edge"], ("set10", "lab02"): ["restated-question-cloud"],
                  ("set10", "lab07"): ["restated-question-mobile"], ("set10", "lab08"): ["restated-prompt-mobile"]}
NEVER_OVERPAID = ("filler", "chat", "prompt", "restat", "invented", "template", "fill")


def _sets() -> list:
    return [pytest.param(kept, lab, id=f"{kept}-{lab}") for kept in heldout.sets() for lab in heldout.labs(kept)]


@pytest.mark.parametrize("kept, lab", _sets())
def test_a_held_out_set_is_well_formed(kept, lab):
    texts = heldout.texts(lab, kept)
    assert len({t["name"] for t in texts}) == len(texts)
    honest = [t for t in texts if t["kind"] == "honest"]
    assert len(honest) >= 16 and len(texts) - len(honest) >= 10
    assert all(sum(t["fair"].values()) == 12 for t in honest)
    assert {t["kind"] for t in texts} == {"honest", "gaming"}


@pytest.mark.parametrize("kept, lab", _sets())
def test_the_reader_keeps_what_it_was_measured_at_on_held_out_texts(kept, lab):
    measured = heldout.measure(lab, kept)
    assert measured["honest_paid"] >= FLOORS[(kept, lab)], measured["lines"]
    overpaid = [name for name, _, _ in measured["over"] if any(word in name for word in NEVER_OVERPAID)]
    assert overpaid == KNOWN_OVERPAID.get((kept, lab), []), overpaid
