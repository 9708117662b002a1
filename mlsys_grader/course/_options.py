"""How a batch is graded: its options, the rubric of every lab and the digest that keys stored results, the CSV's
columns."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from ..api import default_rubric, load_rubric
from ..core.models import PARTS
from ..core.rubric import PART_ITEMS, SYNTHESIS_ITEMS, Rubric
from ..errors import RubricError
from ..labs import lab_ids
from ._collusion import RATIONALE_THRESHOLD
from ._ingest import FORMATS, Format


class BatchOptions(BaseModel):
    """How ``mlsys-grader grade`` runs; the CLI reads its defaults from here."""

    model_config = ConfigDict(extra="forbid")

    jobs: int | None = Field(default=None, ge=1, description="Worker processes (default: all cores).")
    timeout_s: float = Field(default=30.0, gt=0, description="Time limit per submission, in seconds.")
    memory_mb: int | None = Field(default=1024, ge=64, description="Memory a worker may add while grading, in MiB.")
    db: str | None = Field(default="gradebook.sqlite", description="SQLite gradebook to reuse and update (None: no database).")
    roster: str | None = Field(default=None, description="Roster as the LMS exports it (Canvas gradebook export, Moodle "
                                                        "participants or grades export, Gradescope roster) or mlsys-grader's "
                                                        "CSV: name, email or sid per student; optional first_name, last_name, "
                                                        "sis_id, canvas_id, moodle_id, section, track (and lab, for a track per lab).")
    manifest: str | None = Field(default=None, description="Staff manifest CSV: path, student (email or sid), optional "
                                                          "submitted_at (ISO 8601 with offset) and lab.")
    course: str | None = Field(default=None, description="Course file (TOML): deadlines, late policy, extensions, LMS ids.")
    only: tuple[str, ...] = Field(default=(), description="Grade these students (key, email or sid) or input hashes afresh, "
                                                         "ignoring their stored results; recorded in the change log.")
    reason: str = Field(default="", description="Why `only` regrades; recorded in the change log.")
    rubrics: dict[str, str] = Field(default_factory=dict, description="Lab id → rubric TOML replacing the shipped rubric.")
    collusion_threshold: float = Field(default=RATIONALE_THRESHOLD, gt=0, le=1,
                                       description="Word-shingle Jaccard at or above which two rationales are paired.")
    outputs: tuple[str, ...] = Field(default=(), description="Files the run writes (the grades CSV, the final CSV, the HTML "
                                                             "summary): never inputs, even inside a graded folder.")
    formats: tuple[Format, ...] = Field(
        default=FORMATS, min_length=1,
        description="Input formats the course accepts (bundle JSON, Otter export zip, marimo export); any other is an "
                    "error row saying so.")


# -- rubrics and keys --------------------------------------------------------------

def resolve_rubrics(overrides: Mapping[str, str]) -> dict[str, Rubric]:
    """The rubric for every lab: shipped, or loaded from ``overrides[lab]``."""
    unknown = sorted(set(overrides) - set(lab_ids()))
    if unknown:
        raise RubricError(f"rubric given for unknown lab(s) {unknown}; expected one of {list(lab_ids())}")
    return {lab: load_rubric(overrides[lab], lab) if lab in overrides else default_rubric(lab) for lab in lab_ids()}


def rubric_key(rubrics: Mapping[str, Rubric], formats: Iterable[str] = FORMATS) -> str:
    """One digest of every lab's rubric (and of the accepted formats, when not all): a stored result
    is reused only under the same rubrics and formats."""
    text = ";".join(f"{lab}:{rubric.version}:{rubric.digest}" for lab, rubric in sorted(rubrics.items()))
    accepted = sorted(set(formats))
    if accepted != sorted(FORMATS):
        text += ";formats=" + ",".join(accepted)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def item_columns(rubrics: Iterable[Rubric]) -> list[str]:
    """``A.captured`` … ``synthesis.rationale_names_trigger``: every rubric item any lab scores."""
    rubrics = list(rubrics)
    columns = [f"{part}.{item}" for part in PARTS for item in PART_ITEMS
               if any(item in r.parts.get(part, {}) for r in rubrics)]
    return columns + [f"synthesis.{item}" for item in SYNTHESIS_ITEMS if any(item in r.synthesis for r in rubrics)]


IDENTITY_COLUMNS = ["path", "kind", "student", "student_name", "student_email", "student_id", "sis_id", "canvas_id",
                    "moodle_id", "section", "identity_source", "submitted_at", "late", "input_hash"]
SCORE_COLUMNS = ["lab", "track", "roster_track", "status", "score", "max_score",
                 *[f"part_{p}" for p in PARTS], "part_synthesis"]
TAIL_COLUMNS = ["flags", "collusion_group", "reasons", "error_kind", "origin", "grader_version", "rubric"]


def columns_for(rubrics: Iterable[Rubric]) -> list[str]:
    """The CSV/DataFrame columns, identity first."""
    return IDENTITY_COLUMNS + SCORE_COLUMNS + item_columns(rubrics) + TAIL_COLUMNS
