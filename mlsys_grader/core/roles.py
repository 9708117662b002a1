"""The lab contract: one small Protocol per role.

What the core asks of a lab (the consumer Protocols: :class:`LabRules`, :class:`RationaleWords`,
:class:`ReferenceAnswers`, :class:`Presentation`, :class:`MarimoMapping`, and :class:`GradingLab`, what ``grade``
needs), and what a lab package provides (one Protocol per seam, each implemented by one module of the lab:
:class:`PartRules`, :class:`LabWords`, :class:`LabViews`, :class:`LabReferences`).  :class:`~.labspec.Lab`
assembles the seams and implements every consumer Protocol.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .values import (
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
    from .labspec import Lab
    from .models import Bundle, EvidenceRecord
    from .replayer import Replayer
    from .values import BuildVariant


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

    def upstream_inputs(self, part: str, inputs: Mapping[str, Any]) -> Any:
        """What the book's notebook passes to ``capture_evidence`` as ``upstream_inputs`` for a capture of ``part`` whose
        ``inputs`` are these: the settings whose change makes the capture stale, which its seal covers
        (:func:`.seal.book_seal`)."""
        ...

    def build_variants(self) -> tuple[BuildVariant, ...]:
        """The fields another build of the book's evaluators gives differently, and the values it gives (the lab's table;
        empty when every build agrees): the replay check tolerates them with a note (:mod:`.drift`)."""
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
