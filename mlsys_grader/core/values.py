"""The values that cross the lab contract: controls and their domains, parts, plans, problems, the closed answers and
their words, what the notebook shows, the book's words and the marimo layout.

Frozen where they are shared (a plan is the replay's, read by every check).  Nothing here imports a check, the
reader or the :class:`~.labspec.Lab` that assembles a lab: the lab contract (:mod:`.roles`), the reader
(:mod:`.rationale`), the grading context and :mod:`.labspec` all import these, never the reverse.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from ..errors import DomainError
from .jsonio import sha256_of
from .models import SYNTHESIS_FIELDS


@dataclass(frozen=True)
class Control:
    """One student-set control and its exact allowed values.

    ``kind`` is ``"int"`` or ``"float"`` (``minimum``..``maximum`` in ``step``s),
    ``"choice"`` (one of ``choices``) or ``"bool"``.
    """

    name: str
    label: str
    kind: str
    default: Any
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    decision: bool = False

    def values(self) -> tuple[Any, ...]:
        """Every allowed value, in order."""
        if self.kind == "bool":
            return (False, True)
        if self.kind == "choice":
            return self.choices
        minimum, maximum, step = self._range()
        count = round((maximum - minimum) / step) + 1
        if self.kind == "int":
            return tuple(int(minimum + i * step) for i in range(count))
        return tuple(round(minimum + i * step, 10) for i in range(count))

    def _range(self) -> tuple[float, float, float]:
        """(minimum, maximum, step) of a numeric control; ValueError when the lab left one out."""
        if self.minimum is None or self.maximum is None or self.step is None:
            raise ValueError(f"control {self.name!r}: an {self.kind!r} control needs minimum, maximum and step")
        return self.minimum, self.maximum, self.step

    def describe(self) -> str:
        """The allowed values in words, e.g. ``10..200 in steps of 10``."""
        if self.kind == "bool":
            return "True or False"
        if self.kind == "choice":
            return "one of " + ", ".join(repr(choice) for choice in self.choices)
        return f"{self.minimum:g}..{self.maximum:g} in steps of {self.step:g}"

    def check(self, value: Any, *, part: str = "") -> Any:
        """Return ``value`` normalised, or raise :class:`DomainError` naming the domain."""
        where = f"part {part!r}: " if part else ""
        problem = f"{where}{self.name} must be {self.describe()} (got {value!r})"
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise DomainError(problem)
            return value
        if self.kind == "choice":
            if isinstance(value, bool) or value not in self.choices:
                raise DomainError(problem)
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise DomainError(problem)
        if self.kind == "int" and not float(value).is_integer():
            raise DomainError(problem)
        minimum, maximum, step = self._range()
        steps = (value - minimum) / step
        if not (minimum - 1e-9 <= value <= maximum + 1e-9) or abs(steps - round(steps)) > 1e-6:
            raise DomainError(problem)
        if self.kind == "int":
            return int(value)
        return round(minimum + round(steps) * step, 10)

    def sample(self, rng: random.Random) -> Any:
        """A uniformly drawn allowed value."""
        return rng.choice(self.values())


@dataclass(frozen=True)
class PartSpec:
    """One lab part: its title, controls, prediction question and choices."""

    part: str
    title: str
    question: str
    controls: tuple[Control, ...]
    predictions: Mapping[str, str]
    depends_on: tuple[str, ...] = ()
    has_decision: bool = False

    def control(self, name: str) -> Control:
        for control in self.controls:
            if control.name == name:
                return control
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        return {control.name: control.default for control in self.controls}

    def check_controls(self, values: Mapping[str, Any], *, decisions: bool = True) -> dict[str, Any]:
        """Validate a full control mapping; raise :class:`DomainError` on the first problem.

        With ``decisions=False`` decision controls pass through unchecked: an invalid
        decision is judged by the lab's decision rules, not as an out-of-domain input.
        """
        if not isinstance(values, Mapping):
            raise DomainError(f"part {self.part!r}: controls must be a mapping (got {type(values).__name__})")
        expected = {control.name for control in self.controls}
        unknown = sorted(set(values) - expected)
        missing = sorted(expected - set(values))
        if unknown or missing:
            raise DomainError(
                f"part {self.part!r}: controls must be exactly {sorted(expected)}"
                f" (missing {missing}, unexpected {unknown})"
            )
        return {
            control.name: values[control.name] if control.decision and not decisions
            else control.check(values[control.name], part=self.part)
            for control in self.controls
        }


@dataclass(frozen=True)
class PartPlan:
    """Everything a part's record holds, apart from prediction, times and provenance.

    The lab module builds it from controls; the arms (``baseline``, ``result``,
    ``alternatives``, ``chosen_result``) are evaluator outputs, shared with the
    evaluation cache: a plan is never changed, and neither are its arms
    (:func:`dataclasses.replace` makes a changed copy).
    """

    part: str
    model_key: str
    upstream: Mapping[str, Any]
    baseline: dict[str, Any]
    result: dict[str, Any]
    alternatives: Sequence[dict[str, Any]] = ()
    decision: Any = None
    chosen_result: dict[str, Any] | None = None
    result_role: str | None = None


class ArmInputs(NamedTuple):
    """The evaluator inputs a part's plan is built from, and the upstream inputs its record keeps."""

    baseline: dict[str, Any]
    result: dict[str, Any]
    alternatives: tuple[dict[str, Any], ...]
    upstream: dict[str, Any]


class InferredControls(NamedTuple):
    """What :meth:`Lab.infer_controls` recovers from a record: the part's controls and the
    upstream result arms (dependency part → arm) that produce it."""

    controls: dict[str, Any]
    upstream: dict[str, Any]


class Problem(NamedTuple):
    """A lab rule a record or a bundle breaks: the message a student reads, what was expected, what arrived, and its
    code (:mod:`mlsys_grader.core.codes`; a lab's own are declared in its spec; empty: the check's generic code)."""

    message: str
    expected: Any
    actual: Any
    code: str = ""


def fingerprint(lab_id: str, track: str, part: str, upstream: Mapping[str, Any]) -> str:
    """SHA-256 of the track and the upstream settings a part's record depends on."""
    return sha256_of({"lab": lab_id, "track": track, "part": part, "upstream": upstream})


@dataclass(frozen=True)
class Choice:
    """A closed answer (trigger, limitation, recommendation…) and the words that name it.

    ``keywords`` are names compared as whole words once case, hyphens and British
    spelling are normalised (:func:`mlsys_grader.core.rationale.normalise`); the first
    is the option's short name in generated text.  ``phrasings`` are further names as
    regular expressions over that normalised text (``{slot}`` placeholders, such as
    ``{device}``, are filled per track by the lab).  ``decisive`` phrasings state the
    choice on their own, with no recommending verb ("no change for now").
    """

    value: str
    label: str
    keywords: tuple[str, ...]
    phrasings: tuple[str, ...] = ()
    decisive: tuple[str, ...] = ()


@dataclass
class View:
    """A part's rendered result: rows for the table, a chart painter and one observation.

    ``draw`` paints on a matplotlib ``Axes`` (the notebook owns the figure);
    ``observation`` opens with the observed verdict in the part's option words;
    ``kind`` is the notice style (``info``, ``success``, ``warn``, ``danger``);
    ``verdict`` is the prediction value the observation states (set by :meth:`Lab.view`).
    """

    rows: Sequence[Mapping[str, Any]]
    draw: Callable[[Any], None] | None
    observation: str
    kind: str = "info"
    notes: list[str] = field(default_factory=list)
    verdict: str = ""


@dataclass(frozen=True)
class PartText:
    """The Otter master's words for one part: heading, scenario and calculation notes.

    A ``scenario`` of None is one the book words per track: the notebook shows it with
    ``lab.scenario(part)`` instead of fixed text.
    """

    heading: str
    scenario: str | None
    notes: str


@dataclass(frozen=True)
class NotebookText:
    """The book's words the Otter master notebook is written from (``solutions/build_masters.py``).

    ``decision_text`` explains a part's decision controls (part → Markdown); ``labels``
    replace a control's label in the comment beside it (control name → words).
    """

    title: str
    framing: str
    parts: Mapping[str, PartText]
    synthesis: tuple[str, str]
    """(heading, prompt) of the synthesis section."""
    decision_text: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)


Binding = dict[str, tuple[str, str, Any]]
"""``binding_constraints`` key → (part, what of the capture it repeats, the value the capture gives)."""


class DecisionCopy(NamedTuple):
    """An answer a part's captured decision holds, and the result snapshot's copy of it (the two must agree)."""

    part: str
    key: str
    captured: Any
    copy: Any


@dataclass(frozen=True)
class MarimoLayout:
    """Where the book's marimo report code puts one lab's answers, and what its ``binding_constraints`` repeat.

    ``recommendation``, ``rejected`` and ``trigger`` are the result snapshot's keys for
    those answers.  ``decision_part`` names the part whose captured decision holds the
    recommendation and the rejected candidate (None when they are synthesis answers).
    The lab's own mapping (its ``marimo.py``) says the rest, so the reader never branches on a lab:
    ``binding`` reads the copies ``binding_constraints`` should hold from the captures;
    ``answers`` reads the bundle's synthesis answers (the rationale aside) from the snapshot;
    ``decision_copies`` pairs each answer a captured decision holds with the snapshot's copy
    (captures, snapshot); ``missing`` names what the snapshot's synthesis lacks, in the words
    of the export's finding (snapshot, whether the export has a rationale).
    """

    book_lab_id: str
    recommendation: str
    rejected: str
    trigger: str
    decision_part: str | None
    binding: Callable[[Mapping[str, Any]], Binding]
    answers: Callable[[Mapping[str, Any]], dict[str, Any]]
    decision_copies: Callable[[Mapping[str, Any], Mapping[str, Any]], list[DecisionCopy]]
    missing: Callable[[Mapping[str, Any], bool], list[str]]
    reflections_trigger: str = "reevaluation_trigger"
    """The key of the trigger in the report's ``reflections`` (its copy of the snapshot's trigger)."""


SYNTHESIS_ANSWERS = SYNTHESIS_FIELDS
"""Every synthesis answer the bundle schema holds (:data:`.models.SYNTHESIS_FIELDS`); a lab asks for some of them."""


def arm_inputs(arm: Any) -> Any:
    """The inputs an arm records (every lab's evaluator keeps them under ``"inputs"``), or None."""
    return arm.get("inputs") if isinstance(arm, Mapping) else None


class RecordedArms(Protocol):
    """What :meth:`RationaleWords.evidence_quantities` reads: a part's arms as a record holds them
    (an :class:`~.models.EvidenceRecord`, or a replayed plan's arms)."""

    @property
    def part(self) -> str: ...
    @property
    def baseline(self) -> Mapping[str, Any] | None: ...
    @property
    def result(self) -> Mapping[str, Any] | None: ...
    @property
    def alternatives(self) -> Sequence[Mapping[str, Any]]: ...


@dataclass(frozen=True)
class ChoiceTerms:
    """The options a rationale may name on one lab and track, and the submission's choices.

    ``recommended`` / ``rejected`` are the option values that stand for the
    recommendation / the rejected alternative; ``slots`` fill ``{name}`` placeholders
    in phrasings (device names per track).  ``key`` identifies the compiled patterns.
    """

    key: str
    options: tuple[Choice, ...]
    recommended: frozenset[str]
    rejected: frozenset[str]
    slots: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class LabText:
    """The book's words a lab's notebook, master and closing report show (the lab's ``notebook`` module)."""

    notebook: NotebookText | None = None
    """The words of the lab's Otter master notebook; None for a lab whose master is written by hand."""
    scenarios: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Part → its scenario where the book words it per track (Markdown, ``{name}`` placeholders filled from
    :meth:`Lab.track_facts`).  A part not listed reads the same on every track (its notebook holds it)."""
    track_labels: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    """(synthesis answer, value) → {track: label, ``"*"``: every other track} for an option the book labels
    differently on some tracks; an option not listed keeps its :class:`Choice` label."""
    decision_labels: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    """(part, decision control) → {value: the book's radio label}; a decision not listed shows its values."""
    learning_objectives: tuple[str, ...] = ()
    """The closing "Local evidence report"'s learning objectives (the seeds' ``build_lab_report``)."""
    big_takeaways: tuple[str, ...] = ()
    """The closing report's big takeaways."""
    source_trace: str = ""
    """The closing report's source trace: where the lab's numbers come from."""


@dataclass(frozen=True)
class BuildVariant:
    """A field another build of the book's evaluators gives differently for the same inputs, on some tracks.

    A recorded value that is one of ``values`` where the pinned evaluator gives another of them is that build's number,
    not an edit: the part keeps its points, and a note names ``build``.  Any other value is still compared exactly.
    """

    part: str
    field: str
    """The output's key (the last part of its path in an arm)."""
    tracks: tuple[str, ...]
    values: tuple[float, ...]
    """Every value the builds give on those tracks, the pinned one among them."""
    build: str
    """The other build, in words a student and staff recognise."""
    why: str = ""
    """Where the difference comes from (for the lab's documentation and the staff note)."""

    def accepts(self, track: str, part: str, where: str, expected: Any, actual: Any) -> bool:
        """Whether the mismatch at ``where`` is this build's value where the pinned evaluator gives another listed one."""
        return (part == self.part and track in self.tracks and where.rsplit(".", 1)[-1] == self.field
                and _listed_value(expected, self.values) and _listed_value(actual, self.values))




def _listed_value(value: Any, values: tuple[float, ...]) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and any(math.isclose(value, listed, rel_tol=1e-9) for listed in values))
