"""Regenerate the scenario fixtures in ``tests/fixtures/scenarios/`` (explicitly: never run by tests).

    python tests/make_fixtures.py

Each file is a bundle named after what it shows; ``test_scenarios.py`` asserts the
finding it must produce.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "solutions"))

from reference_answers import reference_synthesis

from mlsys_grader import __version__, get_lab, mlsysim_version
from mlsys_grader.api import default_replay
from mlsys_grader.core.models import PARTS
from mlsys_grader.staff import bundle_from_controls

OUT = Path(__file__).parent / "fixtures" / "scenarios"


def build(lab_id: str, track: str, **overrides) -> dict:
    lab = get_lab(lab_id)
    controls = {part: lab.sample_controls(default_replay(), track, part, None) for part in PARTS}
    for part, values in overrides.items():
        controls[part] = {**controls[part], **values}
    bundle = bundle_from_controls(lab, track, controls, mlsysim_version=mlsysim_version(), grader_version=__version__,
                                  rng=random.Random(7))
    # A student's own synthesis (hand-written for the track's default settings), not solve's template.
    data = json.loads(bundle.to_json())
    data["synthesis"].update(reference_synthesis(lab_id, track))
    return sealed(data)


def sealed(data: dict) -> dict:
    from mlsys_grader.core.models import bundle_from_mapping

    data = dict(data)
    data["content_hash"] = None
    return json.loads(bundle_from_mapping(data).sealed().to_json())


def with_synthesis(data: dict, **values) -> dict:
    data["synthesis"].update(values)
    return sealed(data)


def lab11_e_state(track: str, want) -> dict:
    """Find budget settings on ``track`` whose feasibility satisfies ``want(primary_ok, alternative_ok)``."""
    lab = get_lab("lab11")
    for objective in ("latency", "energy", "cost"):
        for scale in lab.parts["E"].control("budget_scale").values():
            plan = lab.plan(default_replay(), track, "E", {"objective": objective, "budget_scale": scale, "choice": None, "rejected": None}, {})
            rows = {row["candidate_id"]: row["feasible"] for row in plan.alternatives[0]["outputs"]["rows"]}
            if want(rows["primary"], rows["alternative"]):
                return {"objective": objective, "budget_scale": scale}
    raise LookupError(f"no budget setting on {track} fits")


def scenarios() -> dict[str, dict]:
    out: dict[str, dict] = {}

    base = build("lab11", "edge")
    c_controls = {"shape": "aligned", "operation": "scatter"}
    recaptured = build("lab11", "edge", C=c_controls)
    base["controls"]["C"] = recaptured["controls"]["C"]
    base["evidence"]["C"] = recaptured["evidence"]["C"]
    out["stale-part-d-after-c-recapture"] = sealed(base)

    cloud = build("lab07", "cloud")
    cloud["evidence"]["B"] = build("lab07", "edge")["evidence"]["B"]
    out["record-from-another-track"] = sealed(cloud)

    out["identical-baseline-intervention-lab11-b"] = build("lab11", "mobile", B={"tile": "baseline", "fused": False})
    out["identical-baseline-intervention-lab07-e"] = build("lab07", "edge", E={"operator": "relu", "shape_mode": "static", "decision": "selected"})

    out["lab07-e-none-while-executable"] = build("lab07", "cloud", E={"operator": "layer_norm", "shape_mode": "static", "decision": "none"})
    hold = build("lab07", "mobile", E={"operator": "host_callback", "shape_mode": "static", "decision": "hold"})
    hold["evidence"]["E"]["chosen_result"] = hold["evidence"]["E"]["result"]
    out["lab07-e-hold-keeps-the-intervention"] = sealed(hold)
    rec = build("lab07", "edge")
    out["lab07-synthesis-rejects-its-own-recommendation"] = with_synthesis(rec, recommendation="compiled_fused", rejected_alternative="compiled_fused")
    out["lab07-synthesis-none-without-unsupported-e"] = with_synthesis(build("lab07", "cloud"), recommendation="none", rejected_alternative="eager")
    out["lab07-synthesis-hold-without-e-hold"] = with_synthesis(build("lab07", "cloud"), recommendation="hold", rejected_alternative="eager")
    out["lab07-synthesis-trigger-not-in-list"] = with_synthesis(build("lab07", "tinyml"), reevaluation_trigger="the weather changes")

    only_alt = lab11_e_state("mobile", lambda p, a: a and not p)
    out["lab11-e-chooses-an-infeasible-candidate"] = build("lab11", "mobile", E={**only_alt, "choice": "primary", "rejected": "alternative"})
    out["lab11-e-holds-an-infeasible-primary"] = build("lab11", "mobile", E={**only_alt, "choice": "hold", "rejected": "alternative"})
    both = lab11_e_state("cloud", lambda p, a: p and a)
    out["lab11-e-holds-while-rejecting-the-primary"] = build("lab11", "cloud", E={**both, "choice": "hold", "rejected": "primary"})
    out["lab11-e-none-while-a-candidate-is-feasible"] = build("lab11", "cloud", E={**both, "choice": "none", "rejected": "primary"})
    out["lab11-e-rejects-its-own-choice"] = build("lab11", "cloud", E={**both, "choice": "primary", "rejected": "primary"})

    out["empty-rationale"] = with_synthesis(build("lab07", "mobile"), rationale="")
    out["rationale-without-evidence-numbers"] = with_synthesis(
        build("lab07", "mobile"), recommendation="compiled_fused", rejected_alternative="eager",
        residual_risk="timing_assumptions", reevaluation_trigger="execution_count",
        rationale=("I recommend compiled with fusion and reject eager execution because compiled runs took 12345.6 ms "
                   "and fusion saved 999 MB. The remaining limitation is illustrative timing assumptions; I would "
                   "re-evaluate when the execution count changes."))
    units = build("lab07", "cloud")
    b = units["evidence"]["B"]["result"]
    units["synthesis"]["rationale"] = (
        f"I recommend compiled with fusion and reject eager execution: the compiled total is "
        f"{b['compiled_total_ms'] * 1000:.0f} µs against {b['eager_total_ms'] / 1000:.5f} s eager. The remaining limitation "
        "is illustrative timing assumptions, and I would re-evaluate when the execution count changes.")
    units["synthesis"].update(recommendation="compiled_fused", rejected_alternative="eager",
                              residual_risk="timing_assumptions", reevaluation_trigger="execution_count")
    out["rationale-in-other-units"] = sealed(units)

    late = build("lab11", "tinyml")
    record = late["evidence"]["B"]
    record["prediction_locked_at"], record["result_shown_at"] = record["result_shown_at"], record["prediction_locked_at"]
    out["prediction-locked-after-result"] = sealed(late)

    unknown = build("lab07", "edge")
    unknown["schema_version"] = 99
    out["unknown-schema-version"] = unknown
    wrong = build("lab07", "edge")
    wrong["evidence"]["A"]["baseline"] = ["not", "an", "object"]
    wrong["track"] = 7
    out["wrong-types"] = wrong
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in scenarios().items():
        (OUT / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    good = json.dumps(build("lab07", "edge"))
    (OUT / "not-json.json").write_text("lab07 bundle, as a spreadsheet? " + good[:40], encoding="utf-8")
    (OUT / "truncated.json").write_text(good[: len(good) // 2], encoding="utf-8")
    (OUT / "nan.json").write_text(good.replace('"score"', '"score"').replace('"dispatch_fraction": ', '"dispatch_fraction": NaN, "x": ', 1), encoding="utf-8")
    print(f"wrote {len(list(OUT.glob('*.json')))} fixtures to {OUT}")


if __name__ == "__main__":
    main()
