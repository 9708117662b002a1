"""Formative items (worth 0 points in the rubric) shown as what they are, not as 0 points.

``prediction_correct`` says whether the student's locked prediction matched what the replayed
numbers support.  In a row it is ``True`` / ``False`` for every part whose evidence replayed
and whose prediction was made in order (the part's ``replay`` and ``prediction_locked`` items
earned in full), read from the findings — a ``prediction_correct`` finding means it was
wrong — and empty where it could not be judged.  The HTML summary shows "predicted right: N %"
over those parts.  When a course's rubric gives the item points, it is a scored item like
any other and is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..core.models import PARTS
from ..core.rubric import Rubric
from ._row import SCORED, ItemKey, Row

FORMATIVE_ITEM = "prediction_correct"


def formative_columns(rubric: Rubric) -> list[str]:
    """The ``part.prediction_correct`` columns ``rubric`` gives no points."""
    return [f"{part}.{FORMATIVE_ITEM}" for part in PARTS
            if FORMATIVE_ITEM in rubric.parts.get(part, {}) and rubric.parts[part][FORMATIVE_ITEM] == 0]


def mark_formative(rows: Iterable[Row], rubrics: Mapping[str, Rubric]) -> list[Row]:
    """The rows with each formative item's 0.0 points replaced by ``True``/``False``/``""`` (see the module docstring)."""
    plans = {lab: _plan(rubric) for lab, rubric in rubrics.items()}  # worked out once per lab, not per row
    out = []
    for row in rows:
        plan = plans.get(row.lab)
        if not plan or row.status not in SCORED:
            out.append(row)
            continue
        wrong = {part for part, _criterion, item, _message in row.findings if item == FORMATIVE_ITEM}
        points = dict(row.points)
        for part, column, replay, replay_points, lock, lock_points in plan:
            judged = _full(points.get(replay, ""), replay_points) and _full(points.get(lock, ""), lock_points)
            points[column] = (part not in wrong) if judged else ""
        out.append(row.but(points=points))
    return out


def _plan(rubric: Rubric) -> list[tuple[str, str, str, float | None, str, float | None]]:
    """(part, column, replay column, its points, prediction_locked column, its points) per formative column."""
    plan = []
    for column in formative_columns(rubric):
        part = ItemKey.of(column).part
        items = rubric.parts[part]
        plan.append((part, column, f"{part}.replay", items.get("replay"), f"{part}.prediction_locked", items.get("prediction_locked")))
    return plan


def _full(value: Any, points: float | None) -> bool:
    return points is not None and value != "" and float(value) >= points


def predicted_right(rows: Iterable[Mapping[str, Any]], columns: Iterable[str]) -> tuple[float, int] | None:
    """(share of judged parts predicted right, how many were judged) over ``rows``; None when none was judged."""
    values = [row.get(column) for row in rows for column in columns if column.endswith(f".{FORMATIVE_ITEM}")]
    judged = [value for value in values if isinstance(value, bool)]
    return (sum(judged) / len(judged), len(judged)) if judged else None
