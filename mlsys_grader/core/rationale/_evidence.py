"""Derived evidence: the usable quantities a record shows (:func:`recorded_quantities`), what a student derives from them within one record (:func:`compared`, :func:`share`), and whether a cited quantity agrees with them (:func:`agreement`).

Part of :mod:`mlsys_grader.core.rationale` (the rules in words are in its docstring)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..jsonio import exact_key
from ..roles import RationaleWords
from ..values import RecordedArms
from ._quantities import (
    CHANGE,
    CHANGE_TOLERANCE,
    DERIVED,
    DERIVED_TOLERANCE,
    FRACTION,
    RATIO,
    ROUNDING_CAP,
    CitedQuantity,
    _close,
    _unit_scale,
)

if TYPE_CHECKING:
    from ..context import PartState
    from ..memos import Memos


def usable(quantities: Iterable[tuple[float, str]]) -> Iterator[tuple[float, str, float]]:
    """(base value, dimensionality, magnitude) for each recorded quantity that can be evidence:
    finite, not 0, and not a dimensionless 1 (one dispatch, reuse 1.0)."""
    for magnitude, unit in quantities:
        if not isinstance(magnitude, (int, float)) or isinstance(magnitude, bool):
            continue
        if not math.isfinite(magnitude) or magnitude == 0:
            continue
        scale = _evidence_unit(unit)
        if scale is None:
            continue
        if scale[2] and math.isclose(magnitude, 1.0, rel_tol=1e-12):
            continue
        yield magnitude * scale[0], scale[1], magnitude


@lru_cache(maxsize=512)
def _evidence_unit(unit: str) -> tuple[float, str, bool] | None:
    """:func:`_unit_scale` of ``unit`` and whether it is dimensionless (a recorded 1 is then no evidence)."""
    scale = _unit_scale(unit)
    return None if scale is None else (*scale, scale[1].removeprefix(DERIVED) in (RATIO, FRACTION, CHANGE))


@dataclass(frozen=True)
class _Arms:
    """A replayed plan's arms, shaped as a record holds them (a :class:`RecordedArms`)."""

    part: str
    baseline: Mapping[str, Any] | None
    result: Mapping[str, Any] | None
    alternatives: Sequence[Mapping[str, Any]]


RecordedQuantity = tuple[float, str, float, str]
"""(base value, dimensionality, magnitude, unit) of one usable quantity a record's arms show."""


def recorded_quantities(memos: Memos, lab: RationaleWords, arms: RecordedArms) -> tuple[RecordedQuantity, ...]:
    """Every usable quantity ``arms`` show (:meth:`RationaleWords.evidence_quantities`, then :func:`usable`), in
    their order, with the unit each was recorded in.

    The lab reads nothing of a record but its part and arms (:class:`RecordedArms`), so the result is kept in
    ``memos`` by the lab and their exact content (:func:`~mlsys_grader.core.jsonio.exact_key`: values, types and key order): the
    rationale check, which reads a replayed part's arms, and the review page's spans, which read the record's
    own, share one reading whenever the record is what the lab replays, and submissions with the same settings
    share it too.
    """
    alternatives = list(arms.alternatives)
    try:
        key: bytes | None = exact_key((arms.part, arms.baseline, arms.result, alternatives))
    except ValueError:  # not JSON values: read afresh, never kept
        key = None
    found: tuple[RecordedQuantity, ...] | None = memos.recorded_quantities.get((lab, key)) if key is not None else None
    if found is None:
        found = tuple((value, dims, shown, unit) for magnitude, unit in lab.evidence_quantities(arms)
                      for value, dims, shown in usable([(magnitude, unit)]))
        if key is not None:
            memos.recorded_quantities[(lab, key)] = found
    return found


def _indexed(quantities: Iterable[tuple[float, str]]) -> dict[str, list[float]]:
    """Usable recorded values by dimensionality, as sorted absolute base values (for bisecting)."""
    return _index_of((value, dims, shown, "") for value, dims, shown in usable(quantities))


def _index_of(recorded: Iterable[RecordedQuantity]) -> dict[str, list[float]]:
    """:func:`_indexed` of quantities already read (:func:`recorded_quantities`)."""
    index: dict[str, list[float]] = {}
    for value, dims, _, _ in recorded:
        index.setdefault(dims, []).append(abs(value))
    for values in index.values():
        values.sort()
    return index


def part_evidence(memos: Memos, lab: RationaleWords, state: PartState) -> dict[str, list[float]]:
    """One captured part's usable evidence, indexed by :func:`_indexed`.

    When the record replays, its arms are the replay's memoised ones (the same objects every
    time those settings are graded), so the index is kept in ``memos`` by arm identity;
    otherwise it is read from the record itself (a part without one has no evidence).
    """
    plan = state.plan
    if plan is None:
        return _index_of(recorded_quantities(memos, lab, state.record)) if state.record is not None else {}
    arms = (plan.baseline, plan.result, *plan.alternatives)
    key = (lab, state.part, *map(id, arms))
    hit = memos.part_evidence.get(key)
    if hit is None or any(held is not arm for held, arm in zip(hit[0], arms, strict=True)):  # same key: same length
        recorded = recorded_quantities(memos, lab, _Arms(state.part, plan.baseline, plan.result, list(plan.alternatives)))
        hit = memos.part_evidence[key] = (arms, _index_of(recorded))
    index: dict[str, list[float]] = hit[1]
    return index


def _has_unit(quantity: CitedQuantity) -> bool:
    """True for a quantity with a unit (time, data, energy, money…); False for a percentage or multiplier."""
    return not set(quantity.dims) <= {RATIO, FRACTION, CHANGE}


def agreement(cited: Sequence[CitedQuantity], index: Mapping[str, list[float]], rel_tol: float, *,
              rounded: bool = False) -> CitedQuantity | None:
    """The first cited quantity that agrees with a value in ``index``, or None (only values within
    the widest allowance :func:`_close` can give are looked at).  ``rounded``: read each number to
    its last significant digit (see :func:`_close`), which only a quantity with a unit is, and only
    against recorded values: a percentage or a multiplier meets a derived ratio, share or change in
    every record, and read that widely random ones matched measurably more often
    (``benchmarks/chance_match.py``: one random percentage 18.8 % → 20.6 % of bundles)."""
    widest = max(rel_tol, ROUNDING_CAP + DERIVED_TOLERANCE)
    for quantity in cited:
        if rounded and (quantity.rounded <= quantity.tolerance or not _has_unit(quantity)):
            continue  # nothing wider to try (it was tried digit by digit), or a percentage or multiplier
        allowance = max(quantity.rounded, quantity.tolerance) if rounded else quantity.tolerance
        for dims in quantity.dims:
            for key, derived in ((dims, False), (DERIVED + dims, CHANGE if dims == CHANGE else True)):
                values = index.get(key)
                if not values or (rounded and derived):
                    continue  # read to its last significant digit, a number matches recorded values only
                reach = max(quantity.value * widest / (1 - widest) if widest < 1 else math.inf,
                            allowance + CHANGE_TOLERANCE * (2 + quantity.value))
                low = bisect.bisect_left(values, quantity.value - reach)
                high = bisect.bisect_right(values, quantity.value + reach)
                if any(_close(quantity, recorded, rel_tol, derived=derived, rounded=rounded) for recorded in values[low:high]):
                    return quantity
    return None


def _agrees(cited: Sequence[CitedQuantity], index: Mapping[str, list[float]], rel_tol: float) -> bool:
    """True when a cited quantity agrees with a value in ``index``, its rounding read either way."""
    return agreement(cited, index, rel_tol) is not None or agreement(cited, index, rel_tol, rounded=True) is not None


def compared(a: Any, b: Any, unit: str | None, *, both: bool = False) -> list[tuple[float, str]]:
    """What a student derives from one quantity seen twice in one record (``a``, the baseline,
    then ``b``): the ratio both ways, the difference (in ``unit``; percentage points for a
    fraction; none for a count, ``unit=None``) and the change relative to the baseline
    ("72 % less").  ``both``: two paths side by side, neither a baseline ("eager costs 21 %
    more", "compiled saves 18 %"), so the change relative to either."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (a, b)) or a == b:
        return []
    derived: list[tuple[float, str]] = []
    if a and b:
        derived += [(a / b, DERIVED + RATIO), (b / a, DERIVED + RATIO)]
    if unit is not None:
        derived.append((abs(a - b), DERIVED + unit))
    derived += [(abs(a - b) / abs(v), DERIVED + CHANGE) for v in ((a, b) if both else (a,)) if v]
    return derived


def share(part: Any, total: Any) -> list[tuple[float, str]]:
    """A part's share of its total within one record, cited as a percentage."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (part, total)):
        return []
    return [(part / total, DERIVED + FRACTION)] if total and part else []


def magnitude_in(payload: Any, unit: str) -> float | None:
    """The magnitude of a recorded ``{"magnitude", "unit"}`` payload in ``unit``, or None when it
    is not one or the dimensions differ (so two recorded quantities can be :func:`compared`)."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("unit"), str):
        return None
    magnitude = payload.get("magnitude")
    if not isinstance(magnitude, (int, float)) or isinstance(magnitude, bool):
        return None
    have, want = _unit_scale(payload["unit"]), _unit_scale(unit)
    if have is None or want is None or have[1] != want[1]:
        return None
    return float(magnitude) * have[0] / want[0]
