"""Every shipped lab's outputs are what ``tests/fixtures/lab_outputs.json`` records (``tests/lab_outputs.py``).

The record is taken before a lab moves and rewritten only with each difference explained in the change that makes it:
reports of every shipped submission and export, a 1,008-bundle ``grade`` run's CSVs, the student notebooks and masters.
"""

from __future__ import annotations

import json

import lab_outputs


def test_every_shipped_output_is_as_recorded():
    recorded = json.loads(lab_outputs.RECORD.read_text(encoding="utf-8"))
    found = lab_outputs.digests()
    assert sum(name.startswith("report/") for name in found) >= 50
    assert lab_outputs.differences(found, recorded) == []


def test_a_difference_is_named_with_both_digests():
    recorded = {"report/a.json": "1", "file/b.ipynb": "2"}
    found = {"report/a.json": "3", "corpus/grades.csv": "4"}
    assert lab_outputs.differences(found, recorded) == [
        "corpus/grades.csv: absent -> 4", "file/b.ipynb: 2 -> absent", "report/a.json: 1 -> 3"]
