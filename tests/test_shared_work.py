"""Work bulk grading does once instead of again, with the same grades: exact comparison keys, one reading of a
record's quantities shared by the rationale check and the review spans, collusion's rationales read as
their grades arrive, the strict JSON reader's number screening, and a batch the replay tables answer loading
neither mlsysim nor pint (the reader's units are the package's checked-in scales)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest
from conftest import reseal

from mlsys_grader import grade_bundle
from mlsys_grader.core import jsonio
from mlsys_grader.core import rationale as R
from mlsys_grader.core.context import first_difference
from mlsys_grader.core.memos import RECORDED_SIZE, Memos
from mlsys_grader.core.models import load_bundle
from mlsys_grader.course import _collusion as collusion
from mlsys_grader.errors import BundleFormatError
from mlsys_grader.labs import get_lab

# -- exact keys and first_difference -----------------------------------------------------


@pytest.mark.parametrize("left, right, same", [
    ({"a": 1, "b": [1.5, "x", None]}, {"a": 1, "b": [1.5, "x", None]}, True),
    ({"a": True}, {"a": 1}, False),
    ({"a": 1}, {"a": 1.0}, False),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),
    ([0.0], [-0.0], False),
])
def test_exact_key_tells_types_and_order_apart(left, right, same):
    assert left == right
    assert (jsonio.exact_key(left) == jsonio.exact_key(right)) is same


def test_first_difference_still_reads_equal_values_by_type():
    assert first_difference({"x": {"n": True}}, {"x": {"n": 1}}) == ("x.n", True, 1)
    assert first_difference({"x": [1, 2]}, {"x": [1.0, 2.0]}) is None  # a number is a number
    assert first_difference({"a": 1, "b": 2}, {"b": 2, "a": 1}) is None  # key order is no difference
    assert first_difference({"a": (1, 2)}, {"a": (1, 2)}) is None  # not JSON: compared in full, no error
    assert first_difference({"a": {1, 2}}, {"a": {1, 2}}) is None


# -- one reading of a record's quantities --------------------------------------------------

def _scale_first_float(value, factor) -> bool:
    """Multiply the first float found in ``value`` (depth first) by ``factor``, in place."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, float):
            value[key] = item * factor
            return True
        if _scale_first_float(item, factor):
            return True
    return False


def _direct(lab, arms) -> tuple:
    return tuple((value, dims, shown, unit) for magnitude, unit in lab.evidence_quantities(arms)
                 for value, dims, shown in R.usable([(magnitude, unit)]))


@pytest.mark.parametrize("lab_id", ["lab07", "lab11"])
def test_recorded_quantities_are_the_labs_reading_kept_by_content(solved_bundle, lab_id):
    lab, memos = get_lab(lab_id), Memos()
    bundle = load_bundle(json.dumps(solved_bundle(lab_id, "edge", 3)))
    for part, record in bundle.evidence.items():
        first = R.recorded_quantities(memos, lab, record)
        assert first == _direct(lab, record) and first, part
        # The same arms, as a replayed plan holds them (other objects): the same reading, not read again.
        copy = json.loads(json.dumps([record.baseline, record.result, record.alternatives]))
        assert R.recorded_quantities(memos, lab, R._evidence._Arms(part, *copy)) is first
        # An edited number is another record.
        edited = json.loads(json.dumps(record.result))
        assert _scale_first_float(edited.get("outputs", edited), 1.5)
        other = R._evidence._Arms(part, record.baseline, edited, list(record.alternatives))
        assert R.recorded_quantities(memos, lab, other) == _direct(lab, other) != first
    # The review spans label each cited quantity with the record's value it matches, from the same reading.
    shown = {(part, f"{magnitude:.6g} {unit.removeprefix(R.DERIVED)}") for part, record in bundle.evidence.items()
             for _, _, magnitude, unit in _direct(lab, record)}
    labels = [re.fullmatch(r".*: matches (.*) (?:recorded in|derived from) part (\w+)'s evidence", span.label)
              for span in grade_bundle(reseal(solved_bundle(lab_id, "edge", 3))).rationale_spans if span.kind == "quantity"]
    assert labels and all(label is not None and (label.group(2), label.group(1)) in shown for label in labels), labels


def test_the_kept_readings_are_bounded(solved_bundle):
    lab, memos = get_lab("lab07"), Memos()
    record = load_bundle(json.dumps(solved_bundle("lab07", "cloud", 1))).evidence["A"]
    for n in range(RECORDED_SIZE + 5):
        R.recorded_quantities(memos, lab, R._evidence._Arms("A", {**record.baseline, "n": n}, record.result, []))
    assert len(memos.recorded_quantities) == RECORDED_SIZE


# -- collusion --------------------------------------------------------------------------------

def test_jaccard_counts_the_union_exactly():
    rng = random.Random(7)
    for _ in range(200):
        left = frozenset(rng.sample(range(60), rng.randint(0, 40)))
        right = frozenset(rng.sample(range(60), rng.randint(0, 40)))
        union = left | right
        assert collusion.jaccard(left, right) == (len(left & right) / len(union) if union else 0.0)


def test_rationales_read_ahead_give_the_same_groups():
    base = ("We recommend the fused kernel because the measured latency drops from 4.2 ms to 1.3 ms on the "
            "edge device while the energy per inference falls by forty percent and memory stays within budget "
            "so the deployment meets its target without the risk of the larger model")
    rng = random.Random(3)
    texts = []
    for n in range(60):
        words = base.split()
        for _ in range(n % 5):
            words[rng.randrange(len(words))] = f"w{rng.randrange(1000)}"
        texts.append(" ".join(words) if n % 7 else f"short text {n}")
    subs = [collusion.Work(n, "lab07" if n % 3 else "lab11", {}, text, f"s{n % 40}") for n, text in enumerate(texts)]
    index = collusion.RationaleIndex()
    for text in reversed(texts):  # in the order grades come back, not the rows'
        index.add(text)
    ahead = collusion.find_groups(subs, index=index)
    assert ahead == collusion.find_groups(subs) and ahead
    assert any(pair.basis == "rationale" for group in ahead for pair in group.pairs)


# -- the strict reader's number screening ---------------------------------------------------------

@pytest.mark.parametrize("text, error", [
    ('{"hash": "ab12e9999", "n": 1.5}', None),
    ('{"s": "' + "9" * 400 + '", "n": 2}', None),
    ('{"n": 1e400}', "overflows a finite float"),
    ('{"s": "a\\"b", "n": 1' + "0" * 400 + "}", "too large for a float"),
    ('{"s": "x", "s": "y"}', "repeats the key"),
])
def test_numbers_are_screened_outside_strings_only(text, error):
    if error is None:
        assert jsonio.loads_strict(text) == json.loads(text)
    else:
        with pytest.raises(BundleFormatError, match=error):
            jsonio.loads_strict(text)


# -- a batch the tables answer ------------------------------------------------------------------

def test_a_batch_the_tables_answer_loads_neither_mlsysim_nor_pint(replay_tables_dir, tmp_path, solved_bundle):
    """In a fresh process: the batch's worker preparation and grading a bundle of each lab through the tables (the
    reader's units come from the checked-in unit scales)."""
    for lab_id in ("lab07", "lab11"):
        (tmp_path / f"{lab_id}.json").write_text(json.dumps(solved_bundle(lab_id, "mobile", 2)))
    script = f"""
import sys
from pathlib import Path
from mlsys_grader.course._options import resolve_rubrics
from mlsys_grader.course._worker import grade_candidate
from mlsys_grader.course._ingest import discover
from mlsys_grader.replay import Replay
replay = Replay.from_tables(Path({str(replay_tables_dir)!r}))
replay.prepare()
rubrics = resolve_rubrics({{}})
results = [grade_candidate(c, rubrics, replay=replay) for c in discover([Path({str(tmp_path)!r})])]
print([r["status"] for r in results], "mlsysim" in sys.modules, "pint" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['graded',", "'graded']", "False", "False"], out


# -- scoring ---------------------------------------------------------------------------------

def test_item_scores_are_frozen_values_typed_exactly_and_kept_nowhere():
    """Each grade builds its own item scores (a module-level table of shared ones was process state the no-state test
    could not see: tests/test_replay.py)."""
    from mlsys_grader.core import grading

    a, b = grading._item_score("captured", 3.0, 3.0, False), grading._item_score("captured", 3.0, 3.0, False)
    assert a == b and a is not b and a.model_dump() == {"item": "captured", "points": 3.0, "max_points": 3.0, "held": False,
                                                        "certainty": None, "certainty_reason": None}
    whole = grading._item_score("captured", 3, 3, False)
    assert type(whole.points) is int  # as model_construct was given it
    with pytest.raises(ValueError):
        a.points = 0.0  # frozen


