"""Rubrics as data: points per item, per part and for the synthesis (TOML files)."""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import RubricError

PART_ITEMS = ("captured", "replay", "fresh", "contrast", "prediction_locked", "prediction_correct", "decision")
# What earns each item, in words (the documentation's rubric table, docs/grading.md, is generated from these and the TOML files).
ITEM_TEXT = {
    "captured": "the part's evidence is in the bundle",
    "replay": "every recorded number replays exactly under the pinned mlsysim, inputs inside the lab's domain",
    "fresh": "the evidence matches the final settings, the track and (Lab 11 D) the part C result it builds on",
    "contrast": "baseline and intervention differ",
    "prediction_locked": "a prediction was locked before any result of the part was shown",
    "prediction_correct": "the prediction matches the replayed numbers of the first run after the lock",
    "decision": "the part's decision obeys the lab's rule",
    "choices_valid": "recommendation, rejected alternative, trigger and limitation obey the lab's rules",
    "rationale_length": "the rationale has the minimum number of words and is the student's own text",
    "rationale_cites_evidence": "it cites a quantity from the saved evidence (unit-aware, or a ratio/share a student would compute)",
    "rationale_names_recommendation": "it recommends the chosen option in so many words",
    "rationale_names_rejected": "it rejects the rejected alternative in so many words",
    "rationale_names_limitation": "it states the chosen limitation",
    "rationale_names_trigger": "it states the chosen re-evaluation trigger",
}
SYNTHESIS_ITEMS = (
    "choices_valid", "rationale_length", "rationale_cites_evidence", "rationale_names_recommendation",
    "rationale_names_rejected", "rationale_names_limitation", "rationale_names_trigger",
)


class Rubric(BaseModel):
    """Points for every gradable item of one lab."""

    model_config = ConfigDict(extra="forbid")

    lab: str = Field(description="Lab id this rubric grades.")
    version: str = Field(default="1", description="Rubric version, recorded in every report.")
    parts: dict[str, dict[str, float]] = Field(description="Part → item → points.")
    synthesis: dict[str, float] = Field(description="Synthesis item → points.")
    min_rationale_words: int = Field(default=20, ge=1, description="Words a rationale needs for `rationale_length`.")
    quantity_tolerance: float = Field(default=0.01, ge=0, le=0.2, description="Relative tolerance for a cited quantity.")

    def model_post_init(self, _context: object) -> None:
        for part, items in self.parts.items():
            unknown = sorted(set(items) - set(PART_ITEMS))
            if unknown:
                raise ValueError(f"part {part}: unknown rubric items {unknown}; expected some of {list(PART_ITEMS)}")
        unknown = sorted(set(self.synthesis) - set(SYNTHESIS_ITEMS))
        if unknown:
            raise ValueError(f"synthesis: unknown rubric items {unknown}; expected some of {list(SYNTHESIS_ITEMS)}")

    @property
    def max_score(self) -> float:
        return sum(sum(items.values()) for items in self.parts.values()) + sum(self.synthesis.values())

    @property
    def digest(self) -> str:
        """Short hash of the rubric's content, so a report says exactly which rubric scored it."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:12]


def rubric_from_toml(text: str, *, expected_lab: str | None = None, source: str = "rubric") -> Rubric:
    """Parse a rubric from TOML text; raise :class:`RubricError` naming the problem.

    A rubric that names no ``lab`` is the rubric of ``expected_lab`` (a lab package's own ``rubric.toml``
    need not repeat the lab's id); one that names a lab must name ``expected_lab``.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"{source}: not valid TOML ({exc})") from exc
    if expected_lab is not None and "lab" not in data:
        data["lab"] = expected_lab
    try:
        rubric = Rubric.model_validate(_expand(data))
    except (ValidationError, ValueError) as exc:
        raise RubricError(f"{source}: {exc}") from exc
    if expected_lab is not None and rubric.lab != expected_lab:
        raise RubricError(f"{source}: rubric is for lab {rubric.lab!r}, expected {expected_lab!r}")
    return rubric


def _expand(data: Mapping[str, Any]) -> dict[str, Any]:
    """Apply ``[every_part]`` to each part listed in ``parts``, then the part's own items."""
    data = dict(data)
    every = data.pop("every_part", {})
    names = data.pop("part_names", list(data.get("parts", {})))
    own = data.get("parts", {})
    data["parts"] = {name: {**every, **own.get(name, {})} for name in names}
    return data


def rubric_markdown(rubrics: list[Rubric]) -> str:
    """The rubric table the documentation shows (docs/grading.md), generated from the rubrics themselves (one column per lab).

    Parts whose items all carry the same points are one "every part" row; the rest are named.
    """
    header = "| item | earned when | " + " | ".join(r.lab for r in rubrics) + " |"
    lines = [header, "|" + "---|" * (2 + len(rubrics))]

    def points(rubric: Rubric, where: str, item: str) -> str:
        if where == "synthesis":
            value = rubric.synthesis.get(item)
        elif where == "each part":
            values = {items.get(item) for items in rubric.parts.values()}
            value = values.pop() if len(values) == 1 else None
            if value is None and values:
                return " / ".join(f"{part} {items.get(item, 0):g}" for part, items in rubric.parts.items())
        else:
            value = rubric.parts.get(where, {}).get(item)
        if value is None:
            return "—"
        return f"{value:g}" + (" (formative)" if value == 0 else "")

    rows: list[tuple[str, str]] = []
    for item in PART_ITEMS:
        everywhere = all(all(item in items for items in r.parts.values()) for r in rubrics)
        if everywhere:
            rows.append(("each part", item))
        else:
            for part in sorted({p for r in rubrics for p, items in r.parts.items() if item in items}):
                rows.append((part, item))
    rows += [("synthesis", item) for item in SYNTHESIS_ITEMS if any(item in r.synthesis for r in rubrics)]
    for where, item in rows:
        label = f"{where}: `{item}`"
        lines.append(f"| {label} | {ITEM_TEXT[item]} | " + " | ".join(points(r, where, item) for r in rubrics) + " |")
    lines.append("| **total** | | " + " | ".join(f"**{r.max_score:g}**" for r in rubrics) + " |")
    return "\n".join(lines)
