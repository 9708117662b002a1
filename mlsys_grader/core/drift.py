"""Telling another build of the evaluators from an edit, for the replay check (:func:`.audits.check_replay`).

Three readings of numbers that the pinned evaluator does not reproduce for a record's inputs:

* **a known other build**: a field the lab lists in its :class:`BuildVariant` table (the book's hosted labs run a
  development build whose hardware registry gives another value for a field or two) holding one of the values that
  build gives: tolerated, with a note naming the build;
* **moved inputs**: every recorded number is what the evaluator gives for *another* allowed setting of the part — the
  inputs were moved without recomputing (:func:`moved_setting`).  That is an edit, however many numbers it moves;
* otherwise, the pattern of the mismatch decides between an edit and another mlsysim (:func:`spread`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .context import evaluator_errors
from .jsonio import exact_key
from .values import BuildVariant

if TYPE_CHECKING:
    from .context import PartState
    from .models import EvidenceRecord
    from .replayer import Replayer
    from .roles import LabRules
    from .values import PartPlan, PartSpec

Mismatch = tuple[str, Any, Any]
"""(arm-prefixed path, what the pinned evaluator gives, what the record holds)."""

DRIFT_MIN_VALUES = 3
"""A part's mismatch reads as another mlsysim only when at least this many recorded values are off ..."""
DRIFT_MIN_ARMS = 2
"""... in at least this many of its arms (baseline, intervention, alternatives): see :func:`spread`."""
MAX_SETTINGS_SEARCHED = 4096
""":func:`moved_setting` tries no more settings than this (the shipped labs' parts have at most 180, Lab 11 D on C 125)."""




def split_variants(variants: tuple[BuildVariant, ...], track: str, part: str,
                   found: list[Mismatch]) -> tuple[list[Mismatch], list[tuple[Mismatch, BuildVariant]]]:
    """The mismatches no listed build explains, and those one does (with the build that explains it)."""
    left: list[Mismatch] = []
    explained: list[tuple[Mismatch, BuildVariant]] = []
    for mismatch in found:
        variant = next((v for v in variants if v.accepts(track, part, *mismatch)), None)
        if variant is None:
            left.append(mismatch)
        else:
            explained.append((mismatch, variant))
    return left, explained


def spread(found: list[Mismatch]) -> bool:
    """True when the mismatch runs through the part: enough values, in more than one arm."""
    arms = {where.split(".", 1)[0] for where, _, _ in found}
    return len(found) >= DRIFT_MIN_VALUES and len(arms) >= DRIFT_MIN_ARMS


def _numbers(value: Any, path: str, out: dict[str, float]) -> dict[str, float]:
    """Every number of an arm by its path, its ``inputs`` left out (they name the setting; the numbers are the result)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not (path.count(".") == 0 and key == "inputs"):
                _numbers(item, f"{path}.{key}", out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _numbers(item, f"{path}[{index}]", out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[path] = float(value)
    return out


def _arms(plan: PartPlan | EvidenceRecord) -> Iterator[tuple[str, Any]]:
    yield "baseline", plan.baseline
    yield "result", plan.result
    for index, arm in enumerate(plan.alternatives):
        yield f"alternatives[{index}]", arm
    yield "chosen_result", plan.chosen_result


def _recorded_numbers(subject: PartPlan | EvidenceRecord) -> dict[str, float]:
    found: dict[str, float] = {}
    for name, arm in _arms(subject):
        _numbers(arm, name, found)
    return found


def _same_numbers(left: dict[str, float], right: dict[str, float]) -> bool:
    return left.keys() == right.keys() and all(math.isclose(value, right[key], rel_tol=1e-9) for key, value in left.items())


def _settings(spec: PartSpec, fixed: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every setting of a part's own controls (its decisions as in ``fixed``)."""
    free = [control for control in spec.controls if not control.decision]
    for values in itertools.product(*(control.values() for control in free)):
        yield {**fixed, **{control.name: value for control, value in zip(free, values, strict=True)}}


def _upstreams(lab: LabRules, replay: Replayer, track: str, part: str, state: PartState) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(the dependency settings, in words, the upstream results) a part's record may have been built on: the one the
    record names first, then those of every setting of each dependency that builds on nothing itself (Lab 11 D: C)."""
    yield {}, dict(state.upstream)
    for dep in lab.parts[part].depends_on:
        spec = lab.parts[dep]
        if spec.depends_on:
            continue
        for setting in _settings(spec, {control.name: None for control in spec.controls if control.decision}):
            try:
                result = lab.plan(replay, track, dep, setting, {}).result
            except evaluator_errors():
                continue
            words = {f"part {dep} {name}": value for name, value in setting.items() if not spec.control(name).decision}
            yield words, {**state.upstream, dep: result}


def moved_setting(lab: LabRules, replay: Replayer, track: str, part: str, state: PartState) -> dict[str, Any] | None:
    """Another allowed setting whose numbers the record holds — the part's controls by name (its decisions left out),
    and any part it builds on (``"part C shape"``…) — or None: the record's inputs were moved to the setting they name
    without recomputing.

    Every setting of the part's own controls is tried (its decisions kept as captured), on the upstream results the
    record names and on those of every setting of the parts it builds on, up to :data:`MAX_SETTINGS_SEARCHED`; the
    plans are the lab's memoised ones.
    """
    record, captured = state.record, state.controls
    if record is None or captured is None:
        return None
    recorded = _recorded_numbers(record)
    if not recorded:
        return None
    spec = lab.parts[part]
    names = [control.name for control in spec.controls if not control.decision]
    candidates = ((words, upstream, setting) for words, upstream in _upstreams(lab, replay, track, part, state)
                  for setting in _settings(spec, captured))
    for words, upstream, setting in itertools.islice(candidates, MAX_SETTINGS_SEARCHED):
        if not words and all(exact_key(setting[name]) == exact_key(captured.get(name)) for name in names):
            continue  # the setting the record names
        try:
            plan = lab.plan(replay, track, part, setting, upstream)
        except evaluator_errors():
            continue
        if _same_numbers(recorded, _recorded_numbers(plan)):
            return {**{name: setting[name] for name in names}, **words}
    return None
