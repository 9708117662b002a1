"""The rationale reader's checked-in unit scales (``core/unit_scales.json``) are pint's, entry by entry.

The reader converts a written unit through this table instead of loading pint's registry, so a wrong entry would
change a grade: every entry is compared here with what pint gives through the evaluators' registry, and the table
holds every unit the reader asks for and every unit both labs' evidence shows.  ``pytest tests/test_unit_scales.py
--write-unit-scales`` writes the file anew from pint (after an upgrade of pint or mlsysim, say), then the comparison
runs on the new file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import LAB_TRACKS, solved

from mlsys_grader.core import rationale as R

FILE = Path(R.__file__).with_name(R.UNIT_SCALES_FILE)


def _evidence_units() -> set[str]:
    """Every unit the solved bundles of both labs record, and the units the labs read from their arms (with the
    derived prefix removed)."""
    from mlsys_grader.core.models import load_bundle
    from mlsys_grader.labs import get_lab

    units: set[str] = set()
    for lab_id, track in LAB_TRACKS:
        data = solved(lab_id, track, 1)
        units |= set(re.findall(r'"unit": ?"([^"]+)"', json.dumps(data)))
        lab = get_lab(lab_id)
        for record in load_bundle(json.dumps(data)).evidence.values():
            units |= {unit.removeprefix(R.DERIVED) for _, unit in lab.evidence_quantities(record)}
    return {unit for unit in units if unit not in (R.RATIO, R.FRACTION, R.CHANGE, "", "dimensionless")}


def _write(wanted: set[str]) -> None:
    about = json.loads(FILE.read_text(encoding="utf-8"))["about"]
    scales = {unit: R.pint_unit_scale(unit) for unit in sorted(wanted)}
    lines = [f"  {json.dumps(unit, ensure_ascii=False)}: {json.dumps(None if s is None else list(s), ensure_ascii=False)}"
             for unit, s in scales.items()]
    FILE.write_text("{\n\"about\": " + json.dumps(about) + ",\n\"scales\": {\n" + ",\n".join(lines) + "\n}\n}\n", encoding="utf-8")


def test_every_checked_in_scale_is_what_pint_gives(request):
    if request.config.getoption("--write-unit-scales"):
        _write(set(R.unit_lookups()) | _evidence_units() | set(json.loads(FILE.read_text(encoding="utf-8"))["scales"]))
        R.unit_scales.cache_clear()
    scales = R.unit_scales()
    assert len(scales) > 900
    wrong = {unit: (scale, R.pint_unit_scale(unit)) for unit, scale in scales.items() if scale != R.pint_unit_scale(unit)}
    assert wrong == {}, f"{len(wrong)} stale entries, e.g. {list(wrong.items())[:3]}; rerun with --write-unit-scales"
    assert scales["millisecond"] == (0.001, "[time]|s")


def test_the_table_holds_every_unit_the_reader_asks_for_and_the_evidence_shows():
    scales = R.unit_scales()
    assert set(R.unit_lookups()) <= set(scales)
    missing = _evidence_units() - set(scales)
    assert missing == set(), f"units the evidence shows that pint would convert at grading time: {sorted(missing)}"


def test_the_reader_converts_from_the_table_the_same_as_through_pint():
    assert R._quantities._unit_scale("microsecond") == R.pint_unit_scale("microsecond")
    assert R._quantities._unit_scale("derived:ms") == (0.001, "derived:[time]|s")
    assert R._quantities._unit_scale("no such unit") is None  # not in the table: pint is asked, and refuses it


@pytest.mark.parametrize("unit", ["ms", "mJ", "dollar/h", "flop/s", "millisecond"])
def test_a_unit_of_the_table_is_looked_up_not_converted(unit):
    assert unit in R.unit_scales() and R._quantities._unit_scale(unit) == R.unit_scales()[unit]
