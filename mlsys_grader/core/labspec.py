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
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, final

from .models import SYNTHESIS_FIELDS
from .roles import (
    GradingLab,
    LabReferences,
    LabRules,
    LabViews,
    LabWords,
    MarimoMapping,
    PartRules,
    Presentation,
    RationaleWords,
    ReferenceAnswers,
)
from .seal import book_seal
from .values import (
    SYNTHESIS_ANSWERS,
    ArmInputs,
    Binding,
    Choice,
    ChoiceTerms,
    Control,
    DecisionCopy,
    InferredControls,
    LabText,
    MarimoLayout,
    NotebookText,
    PartPlan,
    PartSpec,
    PartText,
    Problem,
    RecordedArms,
    View,
    arm_inputs,
)

if TYPE_CHECKING:
    from .models import Bundle, EvidenceRecord
    from .replayer import Replayer
    from .values import BuildVariant

__all__ = ["DEFAULT_SYNTHESIS", "DEFAULT_TRACKS", "NO_TEXT", "SYNTHESIS_ANSWERS", "ArmInputs", "Binding", "Choice", "ChoiceTerms",
           "Control", "DecisionCopy", "GradingLab", "InferredControls", "Lab", "LabReferences", "LabRules", "LabText",
           "LabViews", "LabWords", "MarimoLayout", "MarimoMapping", "NotebookText", "PartPlan", "PartRules", "PartSpec",
           "PartText", "Presentation", "Problem", "RationaleWords", "RecordedArms", "ReferenceAnswers", "View", "arm_inputs",
           "default_master_path", "default_synthesis_choices", "hand_written_answers"]
"""The values (:mod:`.values`) and the Protocols (:mod:`.roles`) are defined in their own modules and named here too,
where every lab imports them from."""


NO_TEXT = LabText()
"""The words of a lab whose master is written by hand: none (the default of :class:`Lab`'s ``text``)."""
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
                 references: LabReferences, text: LabText = NO_TEXT, marimo_layout: MarimoLayout | None = None,
                 tracks: tuple[str, ...] = DEFAULT_TRACKS, synthesis_fields: tuple[str, ...] = DEFAULT_SYNTHESIS,
                 module: str = "", master: Callable[[Path], Path] | None = None, spec: Any = None) -> None:
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
        self.spec = spec
        """The lab's declaration (:class:`mlsys_grader.labs.spec.LabSpec`, its ``lab.toml``) when it is declared."""

    def replace(self, **changes: Any) -> Lab:
        """A new lab with ``changes`` to the constructor's arguments (the registry sets its ``module`` when it
        loads it)."""
        arguments = {name: getattr(self, name) for name in ("lab_id", "title", "model_id", "parts", "triggers", "limitations",
                                                            "rules", "words", "views", "references", "text",
                                                            "marimo_layout", "tracks", "synthesis_fields", "spec")}
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

    def build_variants(self) -> tuple[BuildVariant, ...]:
        return self.rules.build_variants()

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
        """The book's seal of a part's record whose inputs are ``upstream``: over the upstream inputs the lab declares."""
        return book_seal(track, self.rules.upstream_inputs(part, upstream))

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
