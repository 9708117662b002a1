"""A submission as the book's design-ledger payload, for the book's capstone (``mlsys-grader ledger``).

The book's Volume I capstone audits a student's design ledger: one payload per chapter (schema 1: ``lab_id``
``v1_NN``, ``track_id``, ``model_id`` ``v1_NN_experiments``, ``evidence`` {part: capture}, the recommendation, the
rejected alternative, the re-evaluation trigger, the residual risk and the rationale), checked by
``mlsysim.labs.experiments.v1_16_experiments.audit_ledger``.  Our records are the book's captures, so the payload
holds them as the book's ``capture_evidence`` writes them (its twelve keys, no provenance).

A record of a bundle written before schema 3 carries that schema's fingerprint: when it verifies over the record's
own inputs, the record is written with the book's seal of them (what the book would have sealed at capture);
otherwise with the fingerprint it holds, so the book's evidence audit finds it stale as the grader does.  Nothing is
recomputed or judged here: the grade is ``check``'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from .core.capture import book_sealed
from .core.models import Bundle, EvidenceRecord
from .errors import UnknownLabError
from .labs import Lab, get_lab

LEDGER_SCHEMA_VERSION: Final = 1
"""The payload schema the book's ledger auditor accepts."""
CAPTURE_FIELDS: Final = ("track", "part", "prediction", "inputs", "baseline", "result", "alternatives", "decision",
                         "model_key", "chosen_result", "result_role", "upstream_fingerprint")
"""The keys of a capture as the book's ``capture_evidence`` writes it (its ``to_dict``)."""

_MODEL_ID = re.compile(r"v1_(\d{2})_experiments")


def book_chapter(lab: Lab) -> int:
    """The Volume I chapter whose ledger entry a lab's evidence is: from its evaluator module ``v1_NN_experiments``."""
    found = _MODEL_ID.fullmatch(lab.model_id)
    if found is None:
        raise UnknownLabError(f"{lab.lab_id} has no chapter in the book's design ledger: its model_id must be "
                              f"v1_NN_experiments (got {lab.model_id!r})", lab=lab.lab_id)
    return int(found.group(1))


def book_capture(lab: Lab, bundle: Bundle, record: EvidenceRecord) -> dict[str, Any]:
    """One record as the book's capture: its twelve keys, sealed with the book's seal (see the module docstring)."""
    capture = book_sealed(lab, bundle.read_version, record).model_dump(mode="json", include=set(CAPTURE_FIELDS))
    return {name: capture[name] for name in CAPTURE_FIELDS}


def _choices(lab: Lab, bundle: Bundle) -> tuple[Any, Any]:
    """(recommendation, rejected alternative): the synthesis answers, or where the lab keeps them in a part's decision."""
    layout = lab.marimo_layout
    if layout is None or layout.decision_part is None:
        return bundle.synthesis.recommendation, bundle.synthesis.rejected_alternative
    captures: dict[str, Any] = {part: record.model_dump(mode="json") for part, record in bundle.evidence.items()}
    copies = {copy.key: copy.captured for copy in layout.decision_copies(captures, {})}
    return copies.get(layout.recommendation), copies.get(layout.rejected)


def ledger_payload(bundle: Bundle) -> dict[str, Any]:
    """The bundle as the book's design-ledger payload for its chapter (schema 1)."""
    lab = get_lab(bundle.lab)
    if bundle.track not in lab.tracks:
        raise UnknownLabError(f"unknown track {bundle.track!r} for {lab.lab_id}; expected one of {', '.join(lab.tracks)}",
                              lab=lab.lab_id, track=bundle.track, known=lab.tracks)
    recommendation, rejected = _choices(lab, bundle)
    synthesis = bundle.synthesis
    chapter = book_chapter(lab)
    return {
        "schema_version": LEDGER_SCHEMA_VERSION,
        "lab_id": f"v1_{chapter:02d}",
        "track_id": bundle.track,
        "model_id": lab.model_id,
        "evidence": {part: book_capture(lab, bundle, record) for part, record in sorted(bundle.evidence.items())},
        "recommendation": recommendation,
        "rejected_alternative": rejected,
        "reevaluation_trigger": synthesis.reevaluation_trigger,
        "residual_risk": synthesis.residual_risk,
        "rationale": synthesis.rationale,
    }


def ledger_history(bundle: Bundle) -> dict[str, Mapping[str, Any]]:
    """``{chapter: payload}``: the ledger's history as the book keeps it and its auditor reads it
    (``audit_ledger(history, track, required_chapters=(chapter,))``)."""
    payload = ledger_payload(bundle)
    return {str(int(payload["lab_id"].removeprefix("v1_"))): payload}
