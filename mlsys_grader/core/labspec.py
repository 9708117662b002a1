"""The lab contract's values and Protocols, in one place every lab imports them from.

What the core asks of a lab is a few small Protocols, one per role (:mod:`.roles`): :class:`LabRules` (parts, plans,
the answers the numbers support, decision rules: the part checks), :class:`RationaleWords` (what the rationale reader
matches), :class:`ReferenceAnswers` (``solve`` and the ``generated`` check), :class:`Presentation` (the notebook's
views, header and the book's words, the Otter master) and :class:`MarimoMapping` (the book's marimo export);
:class:`GradingLab` is what ``grade`` needs.  Values that cross the contract are typed (:mod:`.values`): the core's
:class:`~.models.Bundle` and :class:`~.models.EvidenceRecord`, frozen :class:`PartPlan`, :class:`Problem` and
:class:`InferredControls`.  The one class implementing them all is :class:`mlsys_grader.labs.Lab`: a lab's
declaration and its code (:class:`LabCode`), with the rules every lab shares.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .models import SYNTHESIS_FIELDS
from .roles import (
    GradingLab,
    LabCode,
    LabRules,
    MarimoMapping,
    Presentation,
    RationaleWords,
    ReferenceAnswers,
)
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

__all__ = ["DEFAULT_SYNTHESIS", "DEFAULT_TRACKS", "NO_TEXT", "SYNTHESIS_ANSWERS", "ArmInputs", "Binding", "Choice", "ChoiceTerms",
           "Control", "DecisionCopy", "GradingLab", "InferredControls", "LabCode", "LabRules", "LabText", "MarimoLayout",
           "MarimoMapping", "NotebookText", "PartPlan", "PartSpec", "PartText", "Presentation", "Problem",
           "RationaleWords", "RecordedArms", "ReferenceAnswers", "View", "arm_inputs", "default_master_path",
           "default_synthesis_choices", "hand_written_answers"]
"""The values (:mod:`.values`) and the Protocols (:mod:`.roles`) are defined in their own modules and named here too,
where every lab imports them from."""


NO_TEXT = LabText()
"""The words of a lab whose master is written by hand: none."""
DEFAULT_TRACKS = ("tinyml", "mobile", "edge", "cloud")
DEFAULT_SYNTHESIS = ("reevaluation_trigger", "residual_risk", "rationale")
"""The synthesis answers of a lab whose recommendation is a part's decision (``rationale`` is free text)."""


def default_master_path(lab_id: str, root: Path) -> Path:
    """``<root>/solutions/<lab_id>/<lab_id>-master.ipynb``: outside the package, so solutions never ship in the wheel."""
    return Path(root) / "solutions" / lab_id / f"{lab_id}-master.ipynb"


def default_synthesis_choices(lab: RationaleWords) -> dict[str, tuple[Choice, ...]]:
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
