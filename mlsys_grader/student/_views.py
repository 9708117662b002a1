"""What a notebook shows for one part's result, and the header above the notebook: asked of the lab.

Each lab renders its own parts (:meth:`~mlsys_grader.core.labspec.Lab.view`): table
rows as the seed's ``table(rows)`` shows them, a chart drawn on a matplotlib ``Axes``
and the seed's "Observed analytically" sentence, opening with the observed verdict
from :meth:`~mlsys_grader.core.labspec.Lab.displayed_prediction` — the one place
that decides it, and a value the grader always accepts.  Nothing here runs an
evaluator or knows a lab: the numbers come from the plan the session already built,
so what a student sees is exactly what the evidence record keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from ..core.labspec import PartPlan, View
from ..labs import get_lab, lab_ids
from ..labs.charts import plain_number, plural, readable, readable_payload

__all__ = ["VIEWS", "View", "header_facts", "part_view", "plain_number", "plural", "readable", "readable_payload"]

PartView = Callable[[PartPlan, str], View]
"""(plan, track) -> the part's :class:`View`, its observation opening with the displayed verdict."""


def part_view(lab_id: str, part: str) -> PartView:
    """What the notebook calls for ``part`` of ``lab_id``; raises KeyError for a part the lab does not have."""
    lab = get_lab(lab_id)
    if part not in lab.parts:
        raise KeyError((lab_id, part))

    def view(plan: PartPlan, track: str) -> View:
        return lab.view(track, part, plan)

    return view


class _Views(Mapping[tuple[str, str], PartView]):
    """``VIEWS[(lab_id, part)]``: :func:`part_view` for every registered lab's parts (labs load on first use)."""

    def __getitem__(self, key: tuple[str, str]) -> PartView:
        lab_id, part = key
        if lab_id not in lab_ids():
            raise KeyError(key)
        return part_view(lab_id, part)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((lab_id, part) for lab_id in lab_ids() for part in get_lab(lab_id).parts)

    def __len__(self) -> int:
        return sum(1 for _ in self)


VIEWS: Mapping[tuple[str, str], PartView] = _Views()


def header_facts(lab_id: str, track: str) -> list[tuple[str, str]]:
    """The seed header's meta boxes (label, value) for ``track``, as the lab states them."""
    return get_lab(lab_id).header_facts(track)
