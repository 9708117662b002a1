"""The evidence walker: every quantity a rationale may cite from one record, read by the tables a lab declares.

A lab's ``[evidence]`` (:class:`~.spec.EvidenceSpec`) says which fields carry a unit (by suffix, by name, as a
percentage), which fields a student compares between two arms or within one, and which part of which total a student
quotes as a share.  :func:`quantities` walks the record's arms with them; the rationale reader matches the numbers a
student wrote against what it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.rationale import compared, share
from .spec import EvidenceSpec


def _at(arm: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(arm, dict):
            return None
        arm = arm.get(key)
    return arm


def _unit(spec: EvidenceSpec, key: str) -> str | None:
    return next((unit for suffix, unit in spec.suffix_units.items() if key.endswith(suffix)), None) \
        or spec.key_units.get(key)


def _walk(spec: EvidenceSpec, value: Any, key: str, found: list[tuple[float, str]]) -> None:
    if isinstance(value, dict):
        for name, item in value.items():
            if name not in spec.skip_keys:
                _walk(spec, item, name, found)
    elif isinstance(value, list):
        if spec.walk_lists:
            for item in value:
                _walk(spec, item, key, found)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if any(key.endswith(suffix) for suffix in spec.percent_suffixes):
            found.append((float(value) / 100.0, "fraction"))
            return
        unit = _unit(spec, key)
        if unit is not None:
            found.append((abs(float(value)) if spec.magnitudes else float(value), unit))


def _inner(spec: EvidenceSpec, arm: Any) -> list[dict[str, Any]]:
    """The arms a recorded arm holds: itself, or the arms nested under the declared keys (a comparison holds two)."""
    if not isinstance(arm, dict):
        return []
    nested = [arm[key] for key in spec.nested_arms if isinstance(arm.get(key), dict)]
    return nested or [arm]


def quantities(spec: EvidenceSpec, record: Any) -> list[tuple[float, str]]:
    """Every field with a unit in every arm, and what a student derives within the record: each ``compared`` field
    between the baseline and the result (between every two arms with ``compare_every_pair``), each ``pairs`` pair and
    each ``shares`` part of its whole within one arm."""
    found: list[tuple[float, str]] = []
    top = [arm for arm in (record.baseline, record.result) if isinstance(arm, dict)]
    for arm in (*top, *record.alternatives):
        _walk(spec, arm, "", found)
    if spec.compare_every_pair:
        arms: list[dict[str, Any]] = []
        for arm in (*top, *record.alternatives):
            for inner in _inner(spec, arm):
                if inner not in arms:
                    arms.append(inner)
        for i, first in enumerate(arms):
            for second in arms[i + 1:]:
                for path, unit in spec.compared:
                    found += compared(_at(first, path), _at(second, path), unit or None, both=True)
    else:
        arms = top
        if len(arms) == 2:
            for path, unit in spec.compared:
                found += compared(_at(arms[0], path), _at(arms[1], path), unit or None, both=spec.compared_both)
    flat = [arm[key] for arm in arms for key in spec.flat_keys if isinstance(arm.get(key), dict)]
    for arm in (*arms, *flat):
        for one, other, unit in spec.pairs:
            found += compared(_at(arm, one), _at(arm, other), unit, both=True)
        for share_of, whole in spec.shares:
            found += share(_at(arm, share_of), _at(arm, whole))
    return found
