"""The book's words that a notebook can only show once it knows the track.

Most of a lab's text is the same on every track and lives in the notebooks themselves
(``solutions/build_masters.py`` writes it from the lab's ``notebook``).  What the seeds fill
in from the track — a device's or host's name, a TinyML-specific sentence or label — and
the learning objectives, takeaways and source trace of the seeds' closing "Local evidence
report" belong to the lab (:class:`~mlsys_grader.core.labspec.LabSpec`); the functions here
ask it, so the session renders them in the book's wording for the student's track.

The mappings below read the same words keyed by lab id, for callers that look them up
that way: ``DECISION_LABELS[(lab, part, control)]``, ``LEARNING_OBJECTIVES[lab]``… Each
lookup loads only the lab it names (loading a lab imports mlsysim).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..core.labspec import LabSpec
from ..errors import UnknownLabError
from ..labs import get_lab, lab_ids


class _FromLabs(Mapping[Any, Any]):
    """A read-only mapping over the registered labs: ``entries(lab)`` gives one lab's keys, each
    being its lab id or a tuple that starts with it."""

    def __init__(self, entries: Callable[[LabSpec], Mapping[Any, Any]]):
        self._entries = entries

    def _lab_entries(self, lab_id: Any) -> Mapping[Any, Any]:
        if not isinstance(lab_id, str):
            return {}
        try:
            return self._entries(get_lab(lab_id))
        except UnknownLabError:
            return {}

    def __getitem__(self, key: Any) -> Any:
        return self._lab_entries(key[0] if isinstance(key, tuple) and key else key)[key]

    def __iter__(self) -> Iterator[Any]:
        return (key for lab_id in lab_ids() for key in self._lab_entries(lab_id))

    def __len__(self) -> int:
        return sum(1 for _ in self)


# The seeds' radio labels for each part's decision: (lab, part, control) -> {value: label}.
DECISION_LABELS: Mapping[tuple[str, str, str], Mapping[str, str]] = _FromLabs(
    lambda lab: {(lab.lab_id, part, control): labels for (part, control), labels in lab.decision_labels.items()})
# The seeds' ``build_lab_report(learning_objectives=…, big_takeaways=…, source_trace=…)``.
LEARNING_OBJECTIVES: Mapping[str, tuple[str, ...]] = _FromLabs(lambda lab: {lab.lab_id: lab.learning_objectives})
BIG_TAKEAWAYS: Mapping[str, tuple[str, ...]] = _FromLabs(lambda lab: {lab.lab_id: lab.big_takeaways})
SOURCE_TRACE: Mapping[str, str] = _FromLabs(lambda lab: {lab.lab_id: lab.source_trace})


def label_for(lab_id: str, what: str, value: str, track: str, default: str) -> str:
    """The label the book shows on ``track`` for ``value`` of ``what`` (``default`` when it has no track wording)."""
    return get_lab(lab_id).option_label(what, value, track, default)


def track_facts(lab_id: str, track: str, lab: LabSpec) -> dict[str, str]:
    """What the seeds fill in from the track (device, training host, scenario…); empty for a lab without any."""
    return lab.track_facts(track)


def scenario_text(lab_id: str, part: str, track: str, lab: LabSpec) -> str | None:
    """The part's scenario in the book's words for ``track`` (Markdown), or None when it does not depend on the track."""
    return lab.scenario(track, part)
