"""The lab contract: one small Protocol per role.

What the core asks of a lab (:class:`LabRules`, :class:`RationaleWords`, :class:`ReferenceAnswers`,
:class:`Presentation`, :class:`MarimoMapping`, and :class:`GradingLab`, what ``grade`` needs), and what a lab's code
provides (:class:`LabCode`, its judge).  :class:`mlsys_grader.labs.Lab` is a lab's declaration and its code, and
implements every Protocol the core asks for.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .values import (
    ArmInputs,
    Choice,
    ChoiceTerms,
    InferredControls,
    MarimoLayout,
    NotebookText,
    PartPlan,
    PartSpec,
    Problem,
    RecordedArms,
    View,
)

if TYPE_CHECKING:
    from .models import Bundle, EvidenceRecord
    from .replayer import Replayer
    from .values import BuildVariant


# -- the contract: one small Protocol per role ------------------------------------------------------------------
# The core types each use of a lab with the narrowest of these; :class:`mlsys_grader.labs.Lab` implements them all
# (evaluations and plans through the replay service the caller hands in).
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
    def evaluate_arm(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Run the pinned evaluator on JSON-safe ``inputs`` and return the arm as the book shapes it (the only call that
        may import mlsysim; :meth:`Replayer.evaluate` memoises it and consults a replay table first)."""
        ...
    def build_plan(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                   upstream: Mapping[str, Any]) -> PartPlan:
        """Build a part's arms from validated ``controls``, evaluating through ``replay.evaluate(lab, …)``
        (:meth:`Replayer.plan` memoises it)."""
        ...
    def plan(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
             upstream: Mapping[str, Any]) -> PartPlan: ...
    def upstream_inputs(self, part: str, inputs: Any) -> Any:
        """What the book's notebook passes to ``capture_evidence`` as ``upstream_inputs`` for a capture of ``part`` whose
        ``inputs`` are these: the settings whose change makes the capture stale, which its seal covers
        (:func:`.seal.book_seal`)."""
        ...
    def fingerprint(self, track: str, part: str, upstream: Mapping[str, Any]) -> str: ...
    def build_variants(self) -> tuple[BuildVariant, ...]: ...
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


# -- what a lab's code provides -----------------------------------------------------------------------------------
@runtime_checkable
class LabCode(Protocol):
    """What only code says of a lab (its ``judge`` module): the evaluator inputs of a part's arms for its controls, and
    the verdict the numbers give.  Every other function a judge may define is an optional hook
    (:mod:`mlsys_grader.labs.declared` lists them); the rest of a lab is its declaration."""

    def arm_inputs(self, lab: Any, track: str, part: str, controls: Mapping[str, Any],
                   upstream: Mapping[str, Any]) -> ArmInputs:
        """The evaluator inputs of the part's baseline, result and alternative arms for validated ``controls``
        (``upstream``: each dependency's result arm), and the inputs its record keeps."""
        ...

    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str:
        """The prediction value the notebook shows as observed for these arms (in the lab's option words, next to the
        result, so it is what a student reads as the answer; the accepted predictions always hold it)."""
        ...
