"""Regenerate the examples of ``examples/submissions/`` that have a defect (explicitly; tests check the result).

    python examples/make_examples.py

The full-marks examples are the reference submissions of every lab and track (``<lab>-<track>.json``: each a
notebook run top to bottom with a hand-written synthesis, see ``solutions/``), which ``mlsys-grader generate
references`` writes here, once; the others are derived from them, one defect each, as a student or a tamperer
would produce it:

- ``lab07-cloud-edited-number.json``: part B's compiled total halved in the JSON, resealed;
- ``lab07-mobile-rationale-without-numbers.json``: a rationale that cites no saved number;
- ``lab11-edge-stale-part-d.json``: part C recaptured with other settings, part D not;
- ``truncated.json``: half a file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "examples" / "submissions"


def _reference(lab: str, track: str) -> dict:
    return json.loads((OUT / f"{lab}-{track}.json").read_text(encoding="utf-8"))


def _sealed(data: dict) -> dict:
    from mlsys_grader.core.models import bundle_from_mapping

    data = {**data, "content_hash": None}
    return json.loads(bundle_from_mapping(data).sealed().to_json())


def _write(name: str, data: dict | str) -> None:
    text = data if isinstance(data, str) else json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    (OUT / name).write_text(text, encoding="utf-8")


def main() -> int:
    from mlsys_grader import Replay, get_lab, lab_ids, mlsysim_version
    from mlsys_grader.core.capture import record_from_plan

    references = {f"{lab}-{track}.json" for lab in lab_ids() for track in get_lab(lab).tracks}
    for old in OUT.glob("*.json"):
        if old.name not in references:
            old.unlink()

    edited = _reference("lab07", "cloud")
    edited["evidence"]["B"]["result"]["compiled_total_ms"] *= 0.5
    _write("lab07-cloud-edited-number.json", _sealed(edited))

    vague = _reference("lab07", "mobile")
    vague["synthesis"]["rationale"] = (
        "I recommend compiled with fusion and reject eager execution: compilation pays for itself quickly and fusion "
        "removes most of the graph traffic, which matters on a phone. The remaining limitation is that the timings are "
        "illustrative assumptions, and I would re-evaluate when the number of executions changes.")
    vague["synthesis"].update(recommendation="compiled_fused", rejected_alternative="eager",
                              residual_risk="timing_assumptions", reevaluation_trigger="execution_count")
    _write("lab07-mobile-rationale-without-numbers.json", _sealed(vague))

    stale = _reference("lab11", "edge")
    lab = get_lab("lab11")
    controls = {"shape": "aligned", "operation": "scatter"}
    if stale["controls"]["C"] == controls:
        controls = {"shape": "misaligned", "operation": "scatter"}
    plan = lab.plan(Replay(), "edge", "C", controls, {})
    old = stale["evidence"]["C"]
    from datetime import datetime, timedelta

    # The student kept their part C prediction (and its lock), changed the settings, ran and recaptured C,
    # and did not recapture D: the run log keeps the first run after the lock, as the notebook does.
    later = datetime.fromisoformat(stale["created_at"]) + timedelta(minutes=7)
    record = record_from_plan(lab, "edge", plan, old["prediction"], mlsysim_version=mlsysim_version(),
                              grader_version=old["grader_version"],
                              prediction_locked_at=datetime.fromisoformat(old["prediction_locked_at"]),
                              result_shown_at=datetime.fromisoformat(old["result_shown_at"]), captured_at=later)
    stale["evidence"]["C"] = record.model_dump(mode="json")
    stale["controls"]["C"] = dict(controls)
    _write("lab11-edge-stale-part-d.json", _sealed(stale))

    good = json.dumps(_reference("lab07", "edge"))
    _write("truncated.json", good[: len(good) // 2])
    print(f"wrote {len(list(OUT.glob('*.json')))} examples to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
