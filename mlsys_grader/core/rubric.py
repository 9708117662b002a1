"""Rubrics as data: points per item, per part and for the synthesis (TOML files)."""

from __future__ import annotations

import hashlib
import tomllib
from typing import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import RubricError

PART_ITEMS = ("captured", "replay", "fresh", "contrast", "prediction_locked", "prediction_correct", "decision")
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
    """Parse a rubric from TOML text; raise :class:`RubricError` naming the problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"{source}: not valid TOML ({exc})") from exc
    try:
        rubric = Rubric.model_validate(_expand(data))
    except (ValidationError, ValueError) as exc:
        raise RubricError(f"{source}: {exc}") from exc
    if expected_lab is not None and rubric.lab != expected_lab:
        raise RubricError(f"{source}: rubric is for lab {rubric.lab!r}, expected {expected_lab!r}")
    return rubric


def _expand(data: Mapping) -> dict:
    """Apply ``[every_part]`` to each part listed in ``parts``, then the part's own items."""
    data = dict(data)
    every = data.pop("every_part", {})
    names = data.pop("part_names", list(data.get("parts", {})))
    own = data.get("parts", {})
    data["parts"] = {name: {**every, **own.get(name, {})} for name in names}
    return data
