"""What a lab declares: controls and their domains, parts, and the lab contract.

A lab is one package (``mlsys_grader.labs.lab07``…) whose ``LAB`` is a :class:`Lab` assembled from
the package's seams.  The contract is a few small Protocols, one per role, and the core types each
use of a lab with the narrowest: :class:`LabRules` (parts, plans, the answers the numbers
support, decision rules: the part checks), :class:`RationaleWords` (what the rationale reader matches), :class:`ReferenceAnswers`
(``solve`` and the ``generated`` check), :class:`Presentation` (the notebook's views, header
and the book's words, the Otter master) and :class:`MarimoMapping` (the book's marimo
export); :class:`GradingLab` is what ``grade`` needs.  Values that cross the contract are
typed: the core's :class:`~.models.Bundle` and :class:`~.models.EvidenceRecord`, frozen
:class:`PartPlan`, :class:`Problem` and :class:`InferredControls`.

Those are what the core asks of a lab.  What a lab provides is smaller still: one Protocol per
seam (:class:`PartRules`, :class:`LabWords`, :class:`LabViews`, :class:`LabReferences`, and the
data :class:`LabText`), each implemented by one module of the lab's package, and :class:`Lab`
(final, never subclassed) assembles them and implements every consumer Protocol, adding the views the
contract derives.  A lab holds no caches and no table: evaluation and plans go through the
:class:`~.replayer.Replayer` the caller hands in (:class:`mlsys_grader.replay.Replay`).  Adding a
lab means adding a package, its ``rubric.toml`` and a master notebook; nothing here changes.
"""
from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, final, runtime_checkable

from ..errors import DomainError
from .jsonio import sha256_of
from .models import SYNTHESIS_FIELDS

if TYPE_CHECKING:
    from .models import Bundle, EvidenceRecord
    from .rationale import ChoiceTerms, RecordedArms
    from .replayer import Replayer


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
    """A lab rule a record or a bundle breaks: the message a student reads, what was expected, what arrived."""

    message: str
    expected: Any
    actual: Any


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


SYNTHESIS_ANSWERS = SYNTHESIS_FIELDS
"""Every synthesis answer the bundle schema holds (:data:`.models.SYNTHESIS_FIELDS`); a lab asks for some of them."""


def arm_inputs(arm: Any) -> Any:
    """The inputs an arm records (every lab's evaluator keeps them under ``"inputs"``), or None."""
    return arm.get("inputs") if isinstance(arm, Mapping) else None


# -- the contract: one small Protocol per role ------------------------------------------------------------------
# The core types each use of a lab with the narrowest of these; :class:`Lab` implements them all (plans through the
# replay service the caller hands in), assembled from the seams a lab provides (below).
@runtime_checkable
class LabRules(Protocol):
    """What the part checks need: the lab's parts and plans, the answers its numbers support, its decision rules."""

    @property
    def lab_id(self) -> str: ...
    @property
    def tracks(self) -> tuple[str, ...]: ...
    @property
    def parts(self) -> Mapping[str, PartSpec]: ...
    @property
    def synthesis_fields(self) -> tuple[str, ...]: ...

    def part_ids(self) -> tuple[str, ...]: ...
    def plan(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
             upstream: Mapping[str, Any]) -> PartPlan: ...
    def fingerprint(self, track: str, part: str, upstream: Mapping[str, Any]) -> str: ...
    def infer_controls(self, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None: ...
    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str: ...
    def accepted_predictions(self, track: str, part: str, plan: PartPlan) -> frozenset[str]: ...
    def decision_problems(self, track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]: ...
    def synthesis_problems(self, bundle: Bundle) -> list[Problem]: ...


@runtime_checkable
class RationaleWords(Protocol):
    """What the rationale reader needs: the closed answers' words and the quantities a record shows."""

    @property
    def lab_id(self) -> str: ...
    @property
    def triggers(self) -> tuple[Choice, ...]: ...
    @property
    def limitations(self) -> tuple[Choice, ...]: ...

    def synthesis_choices(self) -> dict[str, tuple[Choice, ...]]: ...
    def final_choice_terms(self, bundle: Bundle) -> ChoiceTerms: ...
    def evidence_quantities(self, record: RecordedArms) -> list[tuple[float, str]]: ...


@runtime_checkable
class ReferenceAnswers(Protocol):
    """What ``solve`` and the ``generated`` check need: contrasting controls and the synthesis ``solve`` writes."""

    def sample_controls(self, replay: Replayer, track: str, part: str, rng: random.Random | None) -> dict[str, Any]: ...
    def complete_decision(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                          rng: random.Random | None) -> dict[str, Any]: ...
    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]: ...
    def reference_rationale(self, track: str, plans: Mapping[str, PartPlan], trigger: str,
                            limitation: str) -> str | None: ...
    def reference_answers(self, track: str) -> dict[str, Any]: ...


@runtime_checkable
class Presentation(Protocol):
    """What the notebook shows and its master is written from: views, header, the book's words."""

    @property
    def lab_id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def notebook(self) -> NotebookText | None: ...
    @property
    def decision_labels(self) -> Mapping[tuple[str, str], Mapping[str, str]]: ...
    @property
    def learning_objectives(self) -> tuple[str, ...]: ...
    @property
    def big_takeaways(self) -> tuple[str, ...]: ...
    @property
    def source_trace(self) -> str: ...

    def view(self, track: str, part: str, plan: PartPlan) -> View: ...
    def header_facts(self, track: str) -> list[tuple[str, str]]: ...
    def track_facts(self, track: str) -> dict[str, str]: ...
    def scenario(self, track: str, part: str) -> str | None: ...
    def option_label(self, what: str, value: str, track: str, default: str) -> str: ...
    def captured_decision(self, bundle: Bundle) -> list[tuple[str, str]]: ...
    def master_path(self, root: Path) -> Path: ...


@runtime_checkable
class MarimoMapping(Protocol):
    """What reading the book's marimo export needs: where the lab's answers sit, and the controls a capture used."""

    @property
    def lab_id(self) -> str: ...
    @property
    def parts(self) -> Mapping[str, PartSpec]: ...
    @property
    def marimo_layout(self) -> MarimoLayout | None: ...

    def infer_controls(self, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None: ...


@runtime_checkable
class GradingLab(LabRules, RationaleWords, ReferenceAnswers, Protocol):
    """Everything :func:`mlsys_grader.core.grading.grade` asks of a lab: its rules, the reader's words, and the
    reference answers the ``generated`` check re-renders (no views, no notebook text, no marimo layout)."""



# -- what a lab package provides: one small Protocol per seam ----------------------------------------------------
# A lab's modules implement these (a module with these functions is one: ``rules=rules``), and :class:`Lab` assembles
# them.  A function that needs the assembled lab (to evaluate, plan, or name an option) takes it first.
@runtime_checkable
class PartRules(Protocol):
    """The lab's rules (its ``rules`` module): live evaluation, how a part's plan is built, and the judgements on it."""

    def evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Run the pinned evaluator on JSON-safe ``inputs`` and return the arm as the seed shapes it (the only
        call that may import mlsysim; :meth:`Replayer.evaluate` memoises it and consults a replay table first)."""
        ...

    def plan(self, lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
             upstream: Mapping[str, Any]) -> PartPlan:
        """Build a part's arms from validated ``controls``, evaluating through ``replay.evaluate(lab, …)`` (see
        :meth:`Replayer.plan`, which memoises it)."""
        ...

    def infer_controls(self, lab: Lab, replay: Replayer, track: str, part: str,
                       record: EvidenceRecord) -> InferredControls | None:
        """Recover the controls and upstream results that would produce ``record``, or None (plans through ``replay``)."""
        ...

    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str:
        """The prediction value the notebook shows as observed for these arms (in the lab's option words, next to the
        result, so it is what a student reads as the answer; :meth:`accepted_predictions` always holds it)."""
        ...

    def accepted_predictions(self, track: str, part: str, plan: PartPlan) -> frozenset[str]:
        """Prediction values judged right for these arms: the displayed one and any answer the numbers equally
        support (a tie, or a judgement inside the band around one of its thresholds)."""
        ...

    def decision_problems(self, track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]:
        """Each decision rule the record breaks."""
        ...

    def synthesis_problems(self, bundle: Bundle) -> list[Problem]:
        """Each synthesis rule the bundle breaks."""
        ...


@runtime_checkable
class LabWords(Protocol):
    """What the rationale reader matches (the lab's ``words`` module)."""

    def synthesis_choices(self, lab: Lab) -> dict[str, tuple[Choice, ...]]:
        """The closed synthesis answers the notebook offers: field → its options."""
        ...

    def final_choice_terms(self, lab: Lab, bundle: Bundle) -> ChoiceTerms:
        """Every option a rationale may name on this bundle's track, and which of them are the submission's
        recommendation and rejected alternative (see :mod:`.rationale`)."""
        ...

    def evidence_quantities(self, record: RecordedArms) -> list[tuple[float, str]]:
        """(magnitude, unit) for every quantity a record shows the student, and for what a student derives from
        them (:func:`.rationale.compared`, :func:`.rationale.share`).  ``unit`` is a pint unit of mlsysim's
        registry, or :data:`.rationale.RATIO` / :data:`.rationale.FRACTION` for "3.7x" / "88 %"."""
        ...


@runtime_checkable
class LabViews(Protocol):
    """What the notebook shows (the lab's ``views`` module).  Nothing here may run an evaluator for a part's
    result: the numbers come from the plan, so what a student sees is what the evidence keeps."""

    def render(self, track: str, part: str, plan: PartPlan, verdict_words: str) -> View:
        """The part's table, chart and observation (opening with ``verdict_words``) for ``plan``'s arms."""
        ...

    def header_facts(self, lab: Lab, track: str) -> list[tuple[str, str]]:
        """The notebook header's meta boxes (label, value) for ``track``."""
        ...

    def track_facts(self, lab: Lab, track: str) -> dict[str, str]:
        """What the book fills in from ``track`` (a device's or host's name…; ``scenario``: the investigation in one
        line, for the closing report)."""
        ...

    def captured_decision(self, lab: Lab, bundle: Bundle) -> list[tuple[str, str]]:
        """(heading, the book's label) for the answers a part's captured decision gives, which the closing report
        lists before the synthesis answers (none when the synthesis holds the recommendation)."""
        ...


@runtime_checkable
class LabReferences(Protocol):
    """What ``solve`` and the ``generated`` check use (the lab's ``references`` module)."""

    def sample_controls(self, lab: Lab, replay: Replayer, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
        """Valid, contrasting controls; seeded draws cover the domain, ``None`` gives defaults."""
        ...

    def complete_decision(self, lab: Lab, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                          rng: random.Random | None) -> dict[str, Any]:
        """``controls`` with decision controls set to values the lab's rules accept."""
        ...

    def reference_synthesis(self, lab: Lab, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        """Synthesis answers a diligent student would give for these plans."""
        ...

    def reference_rationale(self, lab: Lab, track: str, plans: Mapping[str, PartPlan], trigger: str,
                            limitation: str) -> str | None:
        """The rationale :meth:`reference_synthesis` writes for this trigger and limitation, or None if it writes none."""
        ...

    def reference_answers(self, lab: Lab, track: str) -> dict[str, Any]:
        """The hand-written synthesis answers for the default bundle on ``track`` (the fields the lab asks for): what the
        master's solution and the reference submissions answer.  LookupError when there are none (staff data)."""
        ...


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


DEFAULT_TRACKS = ("tinyml", "mobile", "edge", "cloud")
DEFAULT_SYNTHESIS = ("reevaluation_trigger", "residual_risk", "rationale")
"""The synthesis answers of a lab whose recommendation is a part's decision (``rationale`` is free text)."""


def default_master_path(lab_id: str, root: Path) -> Path:
    """``<root>/solutions/<lab_id>/<lab_id>-master.ipynb``: outside the package, so solutions never ship in the wheel."""
    return Path(root) / "solutions" / lab_id / f"{lab_id}-master.ipynb"


@final
class Lab:
    """One lab, assembled from its package's seams; it implements every consumer Protocol above.

    The lab's own modules fill the seams (:class:`PartRules`, :class:`LabWords`, :class:`LabViews`,
    :class:`LabReferences`, :class:`LabText`); this class adds what every lab shares: the few views the
    contract derives (the verdict a view states, the per-track scenario and labels).  It is not subclassed:
    a variant of a lab is :meth:`replace` with other parts or seams.

    It holds no state beyond what it is built from: methods that run evaluators take the
    :class:`~.replayer.Replayer` that memoises them (and may answer from a verified table), so building a
    plan and replaying a record share one computation within that replay service.
    """

    def __init__(self, *, lab_id: str, title: str, model_id: str, parts: Mapping[str, PartSpec], triggers: tuple[Choice, ...],
                 limitations: tuple[Choice, ...], rules: PartRules, words: LabWords, views: LabViews,
                 references: LabReferences, text: LabText = LabText(), marimo_layout: MarimoLayout | None = None,
                 tracks: tuple[str, ...] = DEFAULT_TRACKS, synthesis_fields: tuple[str, ...] = DEFAULT_SYNTHESIS,
                 module: str = "", master: Callable[[Path], Path] | None = None) -> None:
        unknown = sorted(set(synthesis_fields) - set(SYNTHESIS_ANSWERS))
        if unknown:
            raise ValueError(f"lab {lab_id!r}: synthesis fields {unknown} are not bundle schema answers; "
                             f"expected some of {list(SYNTHESIS_ANSWERS)}")
        self.lab_id = lab_id
        self.title = title
        self.model_id = model_id
        self.parts: Mapping[str, PartSpec] = MappingProxyType(dict(parts))
        """The lab's parts in notebook order (a subset of the bundle's part letters A–E)."""
        self.triggers = triggers
        self.limitations = limitations
        self.rules = rules
        self.words = words
        self.views = views
        self.references = references
        self.text = text
        self.marimo_layout = marimo_layout
        """The layout of the book's marimo export of this lab; None when the book has no marimo lab for it."""
        self.tracks = tracks
        self.synthesis_fields = synthesis_fields
        """The synthesis answers the notebook asks for, in its order (names from :data:`SYNTHESIS_ANSWERS`)."""
        self.module = module
        """The module the registry loaded the lab from (:func:`mlsys_grader.labs.get_lab` sets it): the replay
        table digests the source and rubric of its package."""
        self._master = master

    def replace(self, **changes: Any) -> Lab:
        """A new lab with ``changes`` to the constructor's arguments (the registry sets its ``module`` when it
        loads it)."""
        arguments = {name: getattr(self, name) for name in ("lab_id", "title", "model_id", "parts", "triggers", "limitations",
                                                            "rules", "words", "views", "references", "text",
                                                            "marimo_layout", "tracks", "synthesis_fields")}
        arguments["master"] = self._master
        return Lab(**{**arguments, **changes})

    def __repr__(self) -> str:
        return f"<Lab {self.lab_id} from {self.module}>"

    # -- the book's words ----------------------------------------------------------------------------------------
    @property
    def notebook(self) -> NotebookText | None:
        return self.text.notebook

    @property
    def scenarios(self) -> Mapping[str, str]:
        return self.text.scenarios

    @property
    def track_labels(self) -> Mapping[tuple[str, str], Mapping[str, str]]:
        return self.text.track_labels

    @property
    def decision_labels(self) -> Mapping[tuple[str, str], Mapping[str, str]]:
        return self.text.decision_labels

    @property
    def learning_objectives(self) -> tuple[str, ...]:
        return self.text.learning_objectives

    @property
    def big_takeaways(self) -> tuple[str, ...]:
        return self.text.big_takeaways

    @property
    def source_trace(self) -> str:
        return self.text.source_trace

    # -- evaluators ----------------------------------------------------------------------------------------------
    def evaluate(self, replay: Replayer, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`PartRules.evaluate` through ``replay`` (memoised there: the returned arm is shared, read-only)."""
        return replay.evaluate(self, track, model_key, inputs)

    @staticmethod
    def arm_inputs(arm: Mapping[str, Any]) -> Any:
        """The inputs an arm records (:func:`arm_inputs`)."""
        return arm_inputs(arm)

    # -- building ------------------------------------------------------------------------------------------------
    def plan(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
             upstream: Mapping[str, Any]) -> PartPlan:
        """A part's arms for validated ``controls``; ``upstream`` maps each dependency to its result arm.

        Through ``replay`` (:meth:`Replayer.plan`), which memoises it (a grader sees the same few settings again and
        again): calls with the same arguments share one frozen :class:`PartPlan`.
        """
        return replay.plan(self, track, part, controls, upstream)

    def infer_controls(self, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
        return self.rules.infer_controls(self, replay, track, part, record)

    # -- judging -------------------------------------------------------------------------------------------------
    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str:
        return self.rules.displayed_prediction(track, part, plan)

    def accepted_predictions(self, track: str, part: str, plan: PartPlan) -> frozenset[str]:
        return self.rules.accepted_predictions(track, part, plan)

    def decision_problems(self, track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]:
        return self.rules.decision_problems(track, part, plan, record)

    def synthesis_problems(self, bundle: Bundle) -> list[Problem]:
        return self.rules.synthesis_problems(bundle)

    def final_choice_terms(self, bundle: Bundle) -> ChoiceTerms:
        return self.words.final_choice_terms(self, bundle)

    def evidence_quantities(self, record: RecordedArms) -> list[tuple[float, str]]:
        return self.words.evidence_quantities(record)

    def synthesis_choices(self) -> dict[str, tuple[Choice, ...]]:
        return self.words.synthesis_choices(self)

    # -- reference answers ---------------------------------------------------------------------------------------
    def sample_controls(self, replay: Replayer, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
        return self.references.sample_controls(self, replay, track, part, rng)

    def complete_decision(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                          rng: random.Random | None) -> dict[str, Any]:
        return self.references.complete_decision(self, replay, track, part, controls, rng)

    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        return self.references.reference_synthesis(self, track, plans, rng)

    def reference_rationale(self, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str | None:
        return self.references.reference_rationale(self, track, plans, trigger, limitation)

    def reference_answers(self, track: str) -> dict[str, Any]:
        return self.references.reference_answers(self, track)

    # -- what the notebook shows ---------------------------------------------------------------------------------
    def part_ids(self) -> tuple[str, ...]:
        """The lab's part letters, in notebook order."""
        return tuple(self.parts)

    def view(self, track: str, part: str, plan: PartPlan) -> View:
        """What the notebook shows for a part's result: the lab's view given the verdict of
        :meth:`displayed_prediction` in the part's option words (the one place that decides it)."""
        verdict = self.displayed_prediction(track, part, plan)
        shown = self.views.render(track, part, plan, self.parts[part].predictions[verdict])
        return dataclasses.replace(shown, verdict=verdict)

    def header_facts(self, track: str) -> list[tuple[str, str]]:
        return self.views.header_facts(self, track)

    def track_facts(self, track: str) -> dict[str, str]:
        return self.views.track_facts(self, track)

    def captured_decision(self, bundle: Bundle) -> list[tuple[str, str]]:
        return self.views.captured_decision(self, bundle)

    def scenario(self, track: str, part: str) -> str | None:
        """The part's scenario in the book's words for ``track`` (Markdown), or None when it reads the same on every track."""
        template = self.scenarios.get(part)
        return template.format(**self.track_facts(track)) if template else None

    def option_label(self, what: str, value: str, track: str, default: str) -> str:
        """The label the book shows on ``track`` for option ``value`` of the synthesis answer ``what``
        (``default``, the option's own label, when the book words it the same on every track)."""
        labels = self.track_labels.get((what, value))
        if not labels:
            return default
        return labels.get(track, labels.get("*", default))

    def master_path(self, root: Path) -> Path:
        """The lab's Otter master notebook, for the source tree at ``root``: where the lab's ``master`` says
        (a lab from another package may keep it beside its module), else :func:`default_master_path`."""
        return self._master(Path(root)) if self._master is not None else default_master_path(self.lab_id, root)

    # -- shared helpers ------------------------------------------------------------------------------------------
    def fingerprint(self, track: str, part: str, upstream: Mapping[str, Any]) -> str:
        return fingerprint(self.lab_id, track, part, upstream)

    def choice(self, options: Sequence[Choice], value: str | None) -> Choice | None:
        """The option whose value is ``value``, or None."""
        return next((option for option in options if option.value == value), None)

    def option(self, options: Sequence[Choice], value: str | None) -> Choice:
        """The option whose value is ``value``; LookupError when none is (for values the lab itself chose)."""
        found = self.choice(options, value)
        if found is None:
            raise LookupError(f"{self.lab_id}: no option {value!r}; expected one of {[o.value for o in options]}")
        return found


def default_synthesis_choices(lab: Lab) -> dict[str, tuple[Choice, ...]]:
    """The closed synthesis answers of a lab whose recommendation is a part's decision: the triggers and the limitations."""
    return {"reevaluation_trigger": lab.triggers, "residual_risk": lab.limitations}


def hand_written_answers(lab_id: str, track: str, load: Callable[[], Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The hand-written synthesis answers ``load()`` returns for ``track`` (track → answers), in schema order.

    ``load`` imports the lab's answers module, which the student build and the Gradescope image leave out:
    its absence is a LookupError naming that, as is a track it has no answers for.
    """
    try:
        answers = load()
    except ModuleNotFoundError:  # the student build leaves the solutions out
        raise LookupError(f"{lab_id}: the hand-written reference answers are not in this install (staff only)") from None
    if track not in answers:
        raise LookupError(f"{lab_id}: no hand-written reference answers for track {track!r}; expected one of {', '.join(answers)}")
    return {name: answers[track][name] for name in SYNTHESIS_FIELDS if name in answers[track]}


if TYPE_CHECKING:
    def _implements_every_role(lab: Lab) -> tuple[LabRules, RationaleWords, ReferenceAnswers, Presentation,
                                                   MarimoMapping, GradingLab]:
        """Checked by mypy: a :class:`Lab` is each of the consumer Protocols (``isinstance`` checks names only)."""
        return lab, lab, lab, lab, lab, lab
