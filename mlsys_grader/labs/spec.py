"""A lab's declaration: ``lab.toml``, read and validated into a :class:`LabSpec`.

``lab.toml`` is data only: the lab's id, title and chapter, its evaluator, its tracks and their constants, its parts
(controls and their menus or ranges per track, predictions, the decision and what "hold" keeps, the capture gate,
what the book's seal covers), the synthesis and its rules, the options people write with their words, the evidence
tables the rationale reader walks, the build variants, the marimo export's field names, the notebook's prose, the
codes of the problems the lab can report and the rubric's overrides.  What only code can say is in the lab's
``judge.py`` (and ``views.py``, ``evaluate.py``); everything else is in the shared modules of :mod:`mlsys_grader.labs`.

A spec that does not hold together is refused with a :class:`LabSpecError` naming the file, the key (``parts.E.
controls[2].kind``) and what is allowed there.  Nothing here imports mlsysim or the lab's code.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..core.values import SYNTHESIS_ANSWERS
from ..errors import LabSpecError

SPEC_FILE = "lab.toml"
PART_LETTERS = ("A", "B", "C", "D", "E")
CONTROL_KINDS = ("choice", "int", "float", "bool")
SEALS = ("inputs", "empty", "none")
"""What the book's seal of a part's capture covers: the part's own inputs (``upstream_inputs=inputs``), ``{}``
(Lab 08), or ``None`` (a notebook that never passes ``upstream_inputs``: Lab 04); ``{}`` and ``None`` hash apart."""
DECISION_KINDS = ("control", "computed", "list", "dict")
"""How a part's decision is recorded: a control's value, a string the notebook computes, a list (Lab 06) or a dict
(Lab 12)."""
GATE_KINDS = ("differs", "result")
"""A capture gate: two controls must differ (``choice != rejected``, ``batch != 1``) or a computed result must hold."""
CODE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Scalar = str | int | float | bool


class ControlSpec(_Strict):
    """One student-set control: its kind, its default, and its menu or range (per track where the book varies it)."""

    name: str
    label: str
    kind: Literal["choice", "int", "float", "bool"]
    default: Scalar | None = None
    choices: list[Scalar] = []
    choices_by_track: dict[str, list[Scalar]] = {}
    minimum: int | float | None = None
    maximum: int | float | None = None
    step: int | float | None = None
    decision: bool = False

    @model_validator(mode="after")
    def _domain(self) -> ControlSpec:
        if self.kind == "choice" and not (self.choices or self.choices_by_track):
            raise ValueError("a 'choice' control needs choices (or choices_by_track)")
        if self.kind in ("int", "float") and None in (self.minimum, self.maximum, self.step):
            raise ValueError(f"an {self.kind!r} control needs minimum, maximum and step")
        menus = [self.choices, *self.choices_by_track.values()]
        for menu in menus:
            kinds = {type(value).__name__ for value in menu}
            if len(kinds) > 1:
                raise ValueError(f"a menu holds one type of value (got {sorted(kinds)} in {menu})")
        expected = {"int": (int,), "float": (int, float), "bool": (bool,)}.get(self.kind)
        if expected is not None and self.default is not None and (
                not isinstance(self.default, expected) or (self.kind != "bool" and isinstance(self.default, bool))):
            raise ValueError(f"default {self.default!r} is not a value of an {self.kind!r} control")
        if self.default is not None and self.kind == "choice" and self.choices and self.default not in self.choices:
            raise ValueError(f"default {self.default!r} is not one of the choices {self.choices}")
        if self.default is not None and self.kind in ("int", "float") and not (
                self.minimum <= self.default <= self.maximum):  # type: ignore[operator]
            raise ValueError(f"default {self.default!r} is outside {self.minimum:g}..{self.maximum:g}")
        return self


class DecisionSpec(_Strict):
    """A part's decision: where it is recorded and which values keep the baseline ("hold")."""

    kind: Literal["control", "computed", "list", "dict"] = "control"
    control: str | None = None
    """The control that holds it (kind ``control``)."""
    hold: list[str] = []
    """Values that keep the baseline: the chosen result is the baseline and the tested arm is the rejected alternative."""
    alternative_control: str | None = None
    """The control naming the tested alternative a hold must name (Labs 08, 12, 13): a hold without one is void."""


class GateSpec(_Strict):
    """What must hold before the notebook captures a part."""

    kind: Literal["differs", "result"]
    first: str = ""
    second: str | Scalar = ""
    """``differs``: input ``first`` must differ from input (or value) ``second`` (Lab 05: ``choice != rejected``)."""
    result: dict[str, Scalar] = {}
    """``result``: each field of the result arm must equal its value (Lab 13 E: no misses, no rejections, a useful
    fraction of 1.0)."""
    message: str = ""


class PartDecl(_Strict):
    title: str
    question: str
    controls: list[ControlSpec] = []
    """None for a part the student only runs (Lab 13 A)."""
    predictions: dict[str, str] | list[str] = {}
    """Value → label; a list when the values are the labels themselves (Lab 04: "Newest records")."""
    predictions_by_track: dict[str, dict[str, str] | list[str]] = {}
    """Option sets that differ by track (Lab 06's A and D): track → value → label."""
    depends_on: list[str] = []
    decision: DecisionSpec | None = None
    gate: GateSpec | None = None
    seal: Literal["inputs", "empty", "none"] | None = None
    seal_omits: list[str] = []
    """Inputs the book's seal leaves out of a part sealed over its inputs (Lab 02 D: ``compared_design``)."""
    model_key: str | None = None
    """The evaluator key of this part's arms when it is not the lab's (``{model_id}.{experiment}``)."""
    arm_keys: bool = False
    """Each arm carries its own ``model_key`` and is replayed under it (Lab 10): the judge's arm inputs name it
    (``model_key``), and the planner evaluates each arm under that key instead of the part's."""


class OptionSpec(_Strict):
    """An option of a closed answer, with the words people write for it (matched by the rationale reader); a value
    left out is the label itself (Lab 04's triggers and risks are their label text)."""

    value: str = ""
    label: str
    keywords: list[str] = []
    phrasings: list[str] = []
    decisive: list[str] = []


class SynthesisSpec(_Strict):
    fields: list[str]
    recommendation_part: str | None = None
    """The part whose saved decision the recommendation must equal (Lab 02: D, Lab 04: D, Lab 05: E)."""
    decision_field: str | None = None
    """Where that decision is a dict, the field the recommendation must equal (Lab 12: D's ``choice``)."""
    rejectable: list[str] = []
    """The values the rejected alternative may take (empty: any option but the recommendation)."""
    rejected_input: str | None = None
    """``<part>.<input>``: the rejected alternative must equal that part's tested alternative (Labs 12, 13)."""
    hold_part: str | None = None
    """A recommendation of "hold" is valid only after this part was captured holding."""


class BuildVariantSpec(_Strict):
    part: str
    field: str
    tracks: list[str]
    values: list[float]
    build: str
    why: str = ""


class MarimoSpec(_Strict):
    book_lab_id: str
    recommendation: str = "recommendation"
    rejected: str = "rejected_alternative"
    trigger: str = "reevaluation_trigger"
    decision_part: str | None = None
    reflections_trigger: str = "reevaluation_trigger"


class ProblemSpec(_Strict):
    """A problem the lab reports, by its stable code: its words, and what it says was expected where the lab words
    that too."""

    message: str
    expected: str | None = None


class EvidenceSpec(_Strict):
    """The tables the rationale reader's evidence walker reads (:mod:`mlsys_grader.labs.evidence`)."""

    suffix_units: dict[str, str] = {}
    key_units: dict[str, str] = {}
    percent_suffixes: list[str] = []
    skip_keys: list[str] = []
    magnitudes: bool = False
    walk_lists: bool = True
    compared: list[tuple[list[str], str]] = []
    """(path, unit) compared between two arms; unit ``""`` for a count (compared by ratio only)."""
    compared_both: bool = False
    compare_every_pair: bool = False
    pairs: list[tuple[list[str], list[str], str]] = []
    shares: list[tuple[list[str], list[str]]] = []
    nested_arms: list[str] = []
    flat_keys: list[str] = []


class WordsSpec(_Strict):
    device_words: list[str] = []
    device_nicknames: dict[str, list[str]] = {}


class TrackLabel(_Strict):
    what: str
    value: str
    labels: dict[str, str]


class PartTextSpec(_Strict):
    heading: str
    scenario: str | None = None
    notes: str = ""


class NotebookSpec(_Strict):
    title: str
    framing: str
    parts: dict[str, PartTextSpec]
    synthesis: tuple[str, str]
    decision_text: dict[str, str] = {}
    labels: dict[str, str] = {}


class TextSpec(_Strict):
    notebook: NotebookSpec | None = None
    scenarios: dict[str, str] = {}
    track_labels: list[TrackLabel] = []
    decision_labels: list[TrackLabel] = []
    learning_objectives: list[str] = []
    big_takeaways: list[str] = []
    source_trace: str = ""


class RubricSpec(_Strict):
    """Overrides of the rubric the parts give (:func:`mlsys_grader.labs.declared.rubric_toml`)."""

    version: str = "1"
    decision_note: str = "decision obeys the lab's rule"
    fresh_note: str = "evidence matches the final settings and track"


class LabSpec(_Strict):
    """One lab, declared (``lab.toml``)."""

    id: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
    title: str
    chapter: int
    model_id: str
    evaluator: str
    """The book's evaluator module (``mlsysim.labs.experiments.v1_07_experiments``): ``evaluate.py`` imports it."""
    tracks: list[str] = ["tinyml", "mobile", "edge", "cloud"]
    seal: Literal["inputs", "empty", "none"] = "inputs"
    book_auditor_replays: bool = True
    """Whether the book's ``audit_ledger`` can replay this lab's ledger (not Labs 04, 10, 13 in mlsysim 0.3.0)."""
    constants: dict[str, Any] = {}
    """Constants the lab's code reads: a value, or track → value (``tensor_elements``, ``target``)."""
    parts: dict[str, PartDecl]
    synthesis: SynthesisSpec
    options: dict[str, list[OptionSpec]] = {}
    """Closed answers and their options: ``recommendation``, ``reevaluation_trigger``, ``residual_risk``."""
    words: WordsSpec = WordsSpec()
    evidence: EvidenceSpec = EvidenceSpec()
    build_variants: list[BuildVariantSpec] = []
    marimo: MarimoSpec | None = None
    problems: dict[str, ProblemSpec] = {}
    text: TextSpec = TextSpec()
    rubric: RubricSpec = RubricSpec()

    @model_validator(mode="after")
    def _consistent(self) -> LabSpec:
        _check(self)
        return self

    def predictions(self, part: str, track: str | None = None) -> dict[str, str]:
        """Value → label of ``part``'s prediction options (on ``track`` where the book varies them; every track's
        options together without one)."""
        declared = self.parts[part]
        if declared.predictions_by_track:
            if track is not None:
                return _labelled(declared.predictions_by_track.get(track, {}))
            return {value: label for menu in declared.predictions_by_track.values() for value, label in _labelled(menu).items()}
        return _labelled(declared.predictions)

    def menu(self, part: str, control: str, track: str | None = None) -> tuple[Any, ...]:
        """The values ``control`` of ``part`` offers (on ``track`` where the book varies them; all of them without)."""
        declared = next(c for c in self.parts[part].controls if c.name == control)
        if declared.choices_by_track:
            if track is not None:
                return tuple(declared.choices_by_track.get(track, ()))
            return tuple(dict.fromkeys(v for menu in declared.choices_by_track.values() for v in menu))
        return tuple(declared.choices)

    def constant(self, name: str, track: str | None = None) -> Any:
        """The constant ``name`` (for ``track`` when it is given per track); KeyError names what the spec has."""
        if name not in self.constants:
            raise KeyError(f"{self.id}: no constant {name!r} in {SPEC_FILE}; it has {sorted(self.constants)}")
        value = self.constants[name]
        if track is not None and isinstance(value, Mapping) and set(value) <= set(self.tracks) and value:
            return value[track]
        return value


def _labelled(options: Mapping[str, str] | list[str]) -> dict[str, str]:
    return {label: label for label in options} if isinstance(options, list) else dict(options)


class _Refusal(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def _check(spec: LabSpec) -> None:
    """Cross-field rules pydantic's types cannot say, each naming its key."""
    for letter in spec.parts:
        if letter not in PART_LETTERS:
            raise _Refusal(f"parts.{letter}", f"a part is one of {', '.join(PART_LETTERS)} (got {letter!r})")
    if not spec.parts:
        raise _Refusal("parts", "a lab has at least one part")
    for letter, part in spec.parts.items():
        names = [control.name for control in part.controls]
        for i, control in enumerate(part.controls):
            unknown = sorted(set(control.choices_by_track) - set(spec.tracks))
            if unknown:
                raise _Refusal(f"parts.{letter}.controls[{i}].choices_by_track",
                               f"tracks {unknown} are not the lab's; expected some of {spec.tracks}")
        for dependency in part.depends_on:
            if dependency not in spec.parts or dependency >= letter:
                raise _Refusal(f"parts.{letter}.depends_on", f"{dependency!r} is not an earlier part; expected one of "
                               f"{[p for p in spec.parts if p < letter]}")
        if not part.predictions and not part.predictions_by_track:
            raise _Refusal(f"parts.{letter}.predictions", "a part offers its prediction options")
        unknown_tracks = sorted(set(part.predictions_by_track) - set(spec.tracks))
        if unknown_tracks:
            raise _Refusal(f"parts.{letter}.predictions_by_track", f"tracks {unknown_tracks} are not the lab's; "
                           f"expected some of {spec.tracks}")
        if part.decision is not None and part.decision.kind == "control" and part.decision.control not in names:
            raise _Refusal(f"parts.{letter}.decision.control", f"{part.decision.control!r} is not a control of part "
                           f"{letter}; expected one of {names}")
        if part.decision is not None and part.decision.alternative_control not in (None, *names):
            raise _Refusal(f"parts.{letter}.decision.alternative_control", f"{part.decision.alternative_control!r} is "
                           f"not a control of part {letter}; expected one of {names}")
        if part.gate is not None and part.gate.kind == "differs" and part.gate.first not in names:
            raise _Refusal(f"parts.{letter}.gate.first", f"{part.gate.first!r} is not a control of part {letter}; "
                           f"expected one of {names}")
        if part.gate is not None and part.gate.kind == "result" and not part.gate.result:
            raise _Refusal(f"parts.{letter}.gate.result", "a gate on a computed result names the result's fields and "
                           "the values they must have")
    s = spec.synthesis
    unknown_fields = [name for name in s.fields if name not in SYNTHESIS_ANSWERS]
    if unknown_fields:
        raise _Refusal("synthesis.fields", f"{unknown_fields} are not bundle answers; expected some of "
                       f"{list(SYNTHESIS_ANSWERS)}")
    for key in ("recommendation_part", "hold_part"):
        value = getattr(s, key)
        if value is not None and value not in spec.parts:
            raise _Refusal(f"synthesis.{key}", f"part {value!r} does not exist; expected one of {list(spec.parts)}")
    if s.rejected_input is not None:
        letter, _, name = s.rejected_input.partition(".")
        if letter not in spec.parts or name not in [c.name for c in spec.parts[letter].controls]:
            raise _Refusal("synthesis.rejected_input", f"{s.rejected_input!r} is not <part>.<control> of this lab")
    for what in spec.options:
        if what not in SYNTHESIS_ANSWERS:
            raise _Refusal(f"options.{what}", f"{what!r} is not a bundle answer; expected one of {list(SYNTHESIS_ANSWERS)}")
    for code in spec.problems:
        if not CODE.match(code):
            raise _Refusal(f"problems.{code}", "a problem code is dotted lower-case words (lab07.none_while_executable)")
    for i, variant in enumerate(spec.build_variants):
        if variant.part not in spec.parts:
            raise _Refusal(f"build_variants[{i}].part", f"part {variant.part!r} does not exist; expected one of "
                           f"{list(spec.parts)}")


def _key(location: tuple[Any, ...]) -> str:
    key = ""
    for item in location:
        key += f"[{item}]" if isinstance(item, int) else (f".{item}" if key else str(item))
    return key


def _allowed(error: Mapping[str, Any]) -> str:
    context = error.get("ctx") or {}
    if "expected" in context:
        return f"; allowed: {context['expected']}"
    if error["type"] == "extra_forbidden":
        return ""
    return ""


def parse_spec(data: Mapping[str, Any], *, source: str = SPEC_FILE) -> LabSpec:
    """The :class:`LabSpec` of ``data`` (a parsed ``lab.toml``); :class:`LabSpecError` naming ``source``, key and allowed values."""
    try:
        return LabSpec.model_validate(data)
    except ValidationError as error:
        lines = []
        for item in error.errors():
            key = _key(item["loc"]) or "(top level)"
            cause = item.get("ctx", {}).get("error")
            if isinstance(cause, _Refusal):
                lines.append(f"{source}: {cause.key}: {cause}")
            elif item["type"] == "extra_forbidden":
                lines.append(f"{source}: {key}: unknown key")
            elif item["type"] == "missing":
                lines.append(f"{source}: {key}: missing")
            else:
                message = str(item["msg"]).removeprefix("Value error, ")
                lines.append(f"{source}: {key}: {message} (got {item.get('input')!r}){_allowed(item)}")
        raise LabSpecError("\n".join(lines), source=source, problems=lines) from None


def load_spec(path: Path | str) -> LabSpec:
    """Read and validate ``path`` (a lab's ``lab.toml``)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise LabSpecError(f"{path}: cannot read the lab's declaration ({error.strerror or error})", source=str(path)) from None
    except tomllib.TOMLDecodeError as error:
        raise LabSpecError(f"{path}: not TOML ({error})", source=str(path)) from None
    return parse_spec(data, source=str(path))
