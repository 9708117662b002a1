"""Typed findings and the grade report (text, HTML and JSON renderings).

Every HTML view of the package (this report, the notebook cards, the course summary)
is a Jinja2 template in ``mlsys_grader/templates``, rendered with autoescape by
:func:`render_html` from one shared :class:`jinja2.Environment`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, NamedTuple, NoReturn, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    WrapSerializer,
    model_serializer,
)

from .codes import NOTES

if TYPE_CHECKING:
    from jinja2 import Environment

PartName = Literal["A", "B", "C", "D", "E", "synthesis", "bundle"]
Criterion = Literal["missing", "replay", "domain", "version", "stale", "contrast", "prediction", "decision", "rationale",
                    "generated", "format", "grader", "integrity"]
# ``integrity``: a file that contradicts itself or could not come from the lab as is
# (a capture against its own fingerprint or its copies, a stale part in a marimo export).
FindingCode = str
"""A finding's kind, ``<criterion>.<kind>`` (:mod:`mlsys_grader.core.codes`)."""
INTEGRITY_CRITERIA = frozenset({"replay", "domain", "version", "integrity"})
# Rubric items graded by hidden tests: their points and findings appear only in the
# staff view, so a self-check never gives a prediction's answer away.
HIDDEN_ITEMS = frozenset({"replay", "prediction_correct"})


K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class FrozenDict(dict[K, V]):
    """A dict that refuses every change after it is built: what a report's mappings hold.

    A ``dict`` still (pydantic serialises it, ``json`` writes it and ``==`` compares it as the dict it was built
    from), but ``d[k] = v``, ``del d[k]``, ``update``, ``pop``, ``popitem``, ``setdefault``, ``clear`` and ``|=``
    raise :class:`TypeError`, as a :class:`types.MappingProxyType` does; ``d | other`` and ``d.copy()`` are
    new, ordinary dicts.  It pickles and copies as itself.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        self = super().__new__(cls)
        dict.__init__(self, *args, **kwargs)  # filled once, here: a second __init__ call changes nothing
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def _refuse(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} is immutable: build a new mapping instead")

    def __setitem__(self, key: K, value: V) -> NoReturn:
        self._refuse()

    def __delitem__(self, key: K) -> NoReturn:
        self._refuse()

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        self._refuse()

    def clear(self) -> NoReturn:
        self._refuse()

    def pop(self, *args: Any) -> NoReturn:
        self._refuse()

    def popitem(self) -> NoReturn:
        self._refuse()

    def setdefault(self, *args: Any) -> NoReturn:
        self._refuse()

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse()

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


def _as_list(value: Any, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
    """A tuple field serialised as the list it was before reports were immutable (``model_dump`` gives lists)."""
    dumped = handler(value)
    return list(dumped) if isinstance(dumped, tuple) else dumped


def _as_frozen_dict(value: Mapping[Any, Any]) -> FrozenDict[Any, Any]:
    return FrozenDict(value)


_SEQUENCE = WrapSerializer(_as_list)
_MAPPING = AfterValidator(_as_frozen_dict)
if TYPE_CHECKING:  # what a type checker lets one give and read: any sequence in, no mutating method out
    FrozenSeq = Annotated[Sequence[T], _SEQUENCE]
else:
    FrozenSeq = Annotated[tuple[T, ...], _SEQUENCE]
"""An immutable sequence field: built from any sequence (a list, as JSON has), held as a tuple, dumped as a list."""
FrozenMap = Annotated[Mapping[K, V], _MAPPING]
"""An immutable mapping field: built from any mapping, held as a :class:`FrozenDict`, dumped as a dict."""


def _freeze(value: Any, kind: str) -> Any:
    if kind == "sequence":
        return value if isinstance(value, tuple) else tuple(value)
    return value if isinstance(value, FrozenDict) else _as_frozen_dict(value)


class ImmutableModel(BaseModel):
    """A frozen model whose sequence and mapping fields (:data:`FrozenSeq`, :data:`FrozenMap`) are immutable too.

    Validation converts them; :meth:`model_construct` and :meth:`model_copy` (which skip validation) convert the
    values they are given as well, so no way of building one leaves a list or a dict inside.
    """

    model_config = ConfigDict(frozen=True)
    _containers: ClassVar[dict[str, str]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._containers = {name: "sequence" if _SEQUENCE in field.metadata else "mapping"
                           for name, field in cls.model_fields.items() if _SEQUENCE in field.metadata or _MAPPING in field.metadata}

    @classmethod
    def _frozen_values(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        containers = cls._containers
        return {name: _freeze(value, containers[name]) if name in containers else value for name, value in values.items()}

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:
        return super().model_construct(_fields_set, **cls._frozen_values(values))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        return super().model_copy(update=None if update is None else self._frozen_values(update), deep=deep)


class Finding(ImmutableModel):
    """One problem found in a submission, with one sentence telling what to do."""

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
    keeps: float = Field(default=0.0, ge=0, lt=1, description=(
        "The share of each item it costs that the item still earns (partial credit: 0.5 pays half); 0 costs the item."))
    code: FindingCode = Field(default="", description=(
        "The finding's kind, `<criterion>.<kind>` (`replay.mismatch`, `rationale.cite_compare`; a lab's own in its spec): "
        "what the review queue, the summary and the LMS comments group by, and what an importer excuses "
        "(:class:`mlsys_grader.core.grading.Excuse`).  Empty only in a report stored before codes existed."))

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``keeps`` is written only where a finding leaves part of an item, ``code`` only where there is one, so a
        report reads as before otherwise."""
        data = handler(self)
        if isinstance(data, dict):
            if not data.get("keeps"):
                data.pop("keeps", None)
            if not data.get("code"):
                data.pop("code", None)
        return data


class RationaleSpan(NamedTuple):
    """One run of the rationale as written that the reader used: character offsets ``[start, end)``, its kind
    (``quantity``, ``stance``, ``contradiction``, ``limitation``, ``trigger``) and a label for staff."""

    start: int
    end: int
    kind: str
    label: str


class TemplateMatch(NamedTuple):
    """The grader's own template a rationale was compared with, for the review page: the closest template as rendered
    for the bundle, and the rationale's sentences judged the template's (none when the whole text is).  What the two
    share is marked when the page is shown (:func:`mlsys_grader.core.generated.matched_runs`), not while grading."""

    template: str
    sentences: tuple[str, ...]


class ItemScore(ImmutableModel):
    """Points for one rubric item."""

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


class PartScore(ImmutableModel):
    """Points for one part (or the synthesis), item by item."""

    part: str
    score: float
    max_score: float
    items: FrozenSeq[ItemScore]

    @property
    def held(self) -> bool:
        """True when any of this part's points wait for staff review (a grader error, not the student's)."""
        return any(item.held for item in self.items)


class GradeReport(ImmutableModel):
    """The result of grading one bundle (immutable: a changed report is a new one, see :func:`mlsys_grader.core.grading.grade`).

    Immutable all the way down: ``parts`` and ``versions`` are :class:`FrozenDict`, ``findings``, ``flags`` and each
    part's ``items`` tuples (built from lists and dicts as well, and dumped as lists and dicts as before).
    """

    lab: str
    track: str
    score: float
    max_score: float
    parts: FrozenMap[str, PartScore]
    findings: FrozenSeq[Finding]
    flags: FrozenSeq[str] = Field(description="Staff flags, e.g. `integrity`, `stale`, `missing`.")
    content_hash: str | None = None
    versions: FrozenMap[str, str] = Field(default_factory=FrozenDict, description="mlsysim, mlsys_grader and rubric versions used.")
    rationale_spans: FrozenSeq[RationaleSpan] = Field(default=(), exclude=True, description=(
        "Where in the rationale the reading that scored it found what it used, for the review page's highlighting; "
        "never serialised: the report a student or Gradescope reads is the same with or without it."))
    template_match: TemplateMatch | None = Field(default=None, exclude=True, description=(
        "The template a rationale flagged `generated` (or partly the template's) was matched against, for staff review; "
        "never serialised, as the spans."))

    # -- views -------------------------------------------------------------------
    def public(self) -> GradeReport:
        """The report a student sees before grades are published: hidden findings and points removed, and every public
        item scored by the public checks alone — a part voided by a hidden check (an edited number fails replay) shows its
        public items as those checks leave them, so the view before publication never tells that a hidden check failed."""
        parts: FrozenDict[str, PartScore] = FrozenDict({name: _public_part(name, part, self.findings_for(name))
                                                        for name, part in self.parts.items()})
        return self.model_copy(update={
            "findings": tuple(f for f in self.findings if not f.hidden),
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
        actions = [f for f in self.findings if f.code not in NOTES]
        if actions:
            lines.append("What to do:")
            for finding in actions:
                lines.append(f"  [{finding.part}] {finding.criterion}: {finding.message}")
        else:
            lines.append("No findings: every check passed." if not self.findings else "Nothing to do: every check passed.")
        if len(actions) < len(self.findings):
            lines.append("Notes:")
            lines += [f"  [{f.part}] {f.message}" for f in self.findings if f.code in NOTES]
        return "\n".join(lines)

    __str__ = text

    def _repr_html_(self) -> str:
        return render_html("grade_report.html", report=self)


def _public_part(name: str, part: PartScore, findings: Sequence[Finding]) -> PartScore:
    """``part`` without its hidden items (:data:`HIDDEN_ITEMS`), each public item as the public findings score it.

    An item a hidden finding took (a replay failure voids its part) earns its points here unless a public finding takes
    it too: what a student sees before publication depends on the public checks only."""
    shown = [f for f in findings if not f.hidden]
    voided = any(f.voids_part for f in shown)
    lost = {item for f in shown if f.criterion != "grader" for item in (f.rubric_item, *f.also_costs) if item}
    items = []
    for item in part.items:
        if item.item in HIDDEN_ITEMS:
            continue
        if not item.held and item.points < item.max_points and not voided and item.item not in lost:
            item = item.model_copy(update={"points": item.max_points})
        items.append(item)
    return PartScore(part=name, score=sum(i.points for i in items), max_score=sum(i.max_points for i in items),
                     items=tuple(items))


# -- HTML ------------------------------------------------------------------------

@cache
def html_templates() -> Environment:
    """The package's Jinja2 environment (built once): autoescaped, strict about undefined names.

    Jinja2 loads here, on the first page rendered: grading (``check``, a batch's workers) renders none."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(loader=PackageLoader("mlsys_grader", "templates"), autoescape=select_autoescape(("html",), default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["g"] = lambda value: f"{value:g}"  # 3, 2.5, 0.125: as the text renderings write numbers
    env.filters["pct"] = lambda value: f"{value:.0%}"
    return env


def render_html(template: str, /, **context: Any) -> str:
    """Render one template of ``mlsys_grader/templates``; every value from ``context`` is escaped unless it is
    :class:`markupsafe.Markup`."""
    return html_templates().get_template(template).render(**context)
