"""Typed findings and the grade report (text, HTML and JSON renderings).

Every HTML view of the package (this report, the notebook cards, the course summary)
is a Jinja2 template in ``mlsys_grader/templates``, rendered with autoescape by
:func:`render_html` from one shared :class:`jinja2.Environment`.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from pydantic import BaseModel, ConfigDict, Field

PartName = Literal["A", "B", "C", "D", "E", "synthesis", "bundle"]
Criterion = Literal["missing", "replay", "domain", "version", "stale", "contrast", "prediction", "decision", "rationale",
                    "generated", "format", "grader", "integrity"]
# ``integrity``: a file that contradicts itself or could not come from the lab as is
# (a capture against its own fingerprint or its copies, a stale part in a marimo export).
FindingCode = Literal["no_lock_times"]
"""Stable codes of the findings an importer can excuse: ``no_lock_times`` (a part whose prediction records no lock time)."""
INTEGRITY_CRITERIA = frozenset({"replay", "domain", "version", "integrity"})
# Rubric items graded by hidden tests: their points and findings appear only in the
# staff view, so a self-check never gives a prediction's answer away.
HIDDEN_ITEMS = frozenset({"replay", "prediction_correct"})


class Finding(BaseModel):
    """One problem found in a submission, with one sentence telling what to do."""

    model_config = ConfigDict(frozen=True)

    part: PartName = Field(description="Part A–E, `synthesis`, or `bundle` for the whole submission.")
    criterion: Criterion = Field(description="Which kind of check failed.")
    message: str = Field(description="One actionable sentence for the student.")
    expected: Any = Field(default=None, description="What the check expected, where that applies.")
    actual: Any = Field(default=None, description="What the submission holds, where that applies.")
    rubric_item: str | None = Field(default=None, description="Rubric item this finding costs (None: no points); a `grader` "
                                                             "finding holds the items it names instead, or its whole part when it names none.")
    hidden: bool = Field(default=False, description="Shown to students only after grades are published.")
    also_costs: tuple[str, ...] = Field(default=(), description="Further rubric items of the same part this finding costs.")
    voids_part: bool = Field(default=False, description="The part's evidence is unverified: every item of the part earns 0.")
    code: FindingCode | None = Field(default=None, exclude=True, description=(
        "A stable name for the kind of finding, where an importer may excuse it (:class:`mlsys_grader.core.grading.Excuse`); "
        "never serialised: the report reads the same with or without it."))


class ItemScore(BaseModel):
    """Points for one rubric item."""

    model_config = ConfigDict(frozen=True)

    item: str
    points: float
    max_points: float
    held: bool = Field(default=False, description="Points held for staff review because the grader itself failed while judging "
                                                   "this item (or its part): 0 for now, neither earned nor lost.")
    certainty: Literal["certain", "uncertain"] | None = Field(
        default=None, description="How sure the rationale reader is of its verdict on this rationale item, earned or not "
                                  "(`uncertain` verdicts are listed for staff review; the points follow the verdict either way). "
                                  "None for every item the reader does not judge, and for a held item.")
    certainty_reason: str | None = Field(
        default=None, description="Why, in one phrase for staff, e.g. 'option named, no stance cue found' or 'quantity matched "
                                  "only after rounding to its last significant digit'; None when `certainty` is None.")


class PartScore(BaseModel):
    """Points for one part (or the synthesis), item by item."""

    model_config = ConfigDict(frozen=True)

    part: str
    score: float
    max_score: float
    items: list[ItemScore]

    @property
    def held(self) -> bool:
        """True when any of this part's points wait for staff review (a grader error, not the student's)."""
        return any(item.held for item in self.items)


class GradeReport(BaseModel):
    """The result of grading one bundle (immutable: a changed report is a new one, see :func:`mlsys_grader.core.grading.grade`)."""

    model_config = ConfigDict(frozen=True)

    lab: str
    track: str
    score: float
    max_score: float
    parts: dict[str, PartScore]
    findings: list[Finding]
    flags: list[str] = Field(description="Staff flags, e.g. `integrity`, `stale`, `missing`.")
    content_hash: str | None = None
    versions: dict[str, str] = Field(default_factory=dict, description="mlsysim, mlsys_grader and rubric versions used.")

    # -- views -------------------------------------------------------------------
    def public(self) -> GradeReport:
        """The report a student sees before grades are published: hidden findings and points removed."""
        parts = {}
        for name, part in self.parts.items():
            items = [item for item in part.items if item.item not in HIDDEN_ITEMS]
            parts[name] = PartScore(part=name, score=sum(i.points for i in items), max_score=sum(i.max_points for i in items), items=items)
        return self.model_copy(update={
            "findings": [f for f in self.findings if not f.hidden],
            "parts": parts,
            "score": sum(p.score for p in parts.values()),
            "max_score": sum(p.max_score for p in parts.values()),
        })

    def findings_for(self, part: str) -> list[Finding]:
        return [finding for finding in self.findings if finding.part == part]

    def uncertain_items(self) -> list[ItemScore]:
        """The item scores whose verdict the rationale reader is not sure of (all synthesis items), for staff
        review: the points stand as scored, and staff read the rationale to confirm or regrade them."""
        return [item for part in self.parts.values() for item in part.items if item.certainty == "uncertain"]

    # -- renderings --------------------------------------------------------------
    def text(self, *, staff: bool = False) -> str:
        """The report in words, as ``mlsys-grader check`` prints it.

        A student reads what to do; the staff flags are listed only for staff (``check --all``).
        """
        lines = [f"{self.lab} · track {self.track} · score {self.score:g} / {self.max_score:g}"]
        if staff and self.flags:
            lines.append("flags for staff: " + ", ".join(self.flags))
        for name, part in self.parts.items():
            lines.append(f"  {name:<9} {part.score:>5g} / {part.max_score:<5g}" + ("  held for staff review" if part.held else ""))
        if self.findings:
            lines.append("What to do:")
            for finding in self.findings:
                lines.append(f"  [{finding.part}] {finding.criterion}: {finding.message}")
        else:
            lines.append("No findings: every check passed.")
        return "\n".join(lines)

    __str__ = text

    def _repr_html_(self) -> str:
        return render_html("grade_report.html", report=self)


# -- HTML ------------------------------------------------------------------------

@cache
def html_templates() -> Environment:
    """The package's Jinja2 environment (built once): autoescaped, strict about undefined names."""
    env = Environment(loader=PackageLoader("mlsys_grader", "templates"), autoescape=select_autoescape(("html",), default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["g"] = lambda value: f"{value:g}"  # 3, 2.5, 0.125: as the text renderings write numbers
    env.filters["pct"] = lambda value: f"{value:.0%}"
    return env


def render_html(template: str, /, **context: Any) -> str:
    """Render one template of ``mlsys_grader/templates``; every value from ``context`` is escaped unless it is
    :class:`markupsafe.Markup`."""
    return html_templates().get_template(template).render(**context)
