"""The reference submissions' synthesis answers: hand-written, one per lab and track.

``solve`` writes the grader's own template rationale, which the grader flags as
generated (it is not a student's writing), so everything that must score full marks —
the masters' solutions, the reference submissions, the shipped examples, the notebook
tests — takes its synthesis from ``reference_rationales.toml`` instead.  Each entry was
written for the default-settings bundle of its track (``solve(lab, track)``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FILE = HERE / "reference_rationales.toml"
FIELDS = ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale")


def reference_synthesis(lab_id: str, track: str) -> dict[str, Any]:
    """The hand-written synthesis answers for ``lab_id`` on ``track`` (only the fields the lab asks for)."""
    data = tomllib.loads(FILE.read_text(encoding="utf-8"))
    try:
        entry = data[lab_id][track]
    except KeyError:
        raise LookupError(f"{FILE.name} has no [{lab_id}.{track}] entry") from None
    return {name: entry[name] for name in FIELDS if name in entry}


def with_reference_synthesis(bundle_json: dict[str, Any]) -> dict[str, Any]:
    """A copy of a bundle (parsed JSON) whose synthesis is the hand-written reference one, resealed."""
    from mlsys_grader.core.models import bundle_from_mapping

    data = dict(bundle_json)
    data["synthesis"] = {**data["synthesis"], **reference_synthesis(data["lab"], data["track"])}
    data["content_hash"] = None
    return bundle_from_mapping(data).sealed().model_dump(mode="json")
