"""What the checks share: each part's record, its rebuilt plan, where the record differs from it, and
the final-settings plan.

Building this once per bundle means every check reads the same replayed numbers
and no evaluator runs twice.  Each part is built under its own grader boundary, so a
failure on one part's record holds that part for staff and leaves the others as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._mlsysim import pint_errors
from ..errors import DomainError
from .jsonio import canonical_dumps, exact_key
from .memos import Memos
from .models import Bundle, EvidenceRecord, PartId, part_key
from .replayer import Replayer
from .roles import GradingLab, LabRules
from .rubric import Rubric
from .values import Control, PartPlan, Problem, arm_inputs

if TYPE_CHECKING:
    from .generated import TemplateUse
    from .rationale import Reading


# What the evaluators raise for inputs they refuse (mlsysim raises ValueError; pint its
# own errors; huge numbers overflow).  These become findings about the submission.
# Anything else escaping a lab's plan is the grader's own bug: the part is marked
# ``grader_error`` and held for staff, never blamed on the student.
def evaluator_errors() -> tuple[type[BaseException], ...]:
    """The evaluators' refusals, for an ``except`` clause: pint's errors only once pint is loaded (a pint error
    cannot exist before), so grading that the replay table answers never imports pint to name them."""
    return (ValueError, ArithmeticError, *pint_errors())


@dataclass
class PartState:
    part: PartId
    record: EvidenceRecord | None
    controls: dict[str, Any] | None = None
    plan: PartPlan | None = None
    final_plan: PartPlan | None = None
    upstream: dict[str, Any] = field(default_factory=dict)
    final_missing: bool = False
    domain_problems: list[Problem] = field(default_factory=list)
    final_problems: list[Problem] = field(default_factory=list)
    mismatches: list[tuple[str, Any, Any]] | None = None
    """Every recorded value the pinned evaluator does not reproduce (arm-prefixed paths); None when the
    record was not replayed (no plan: reported by the domain check)."""
    grader_error: str | None = None
    """Set when the grader itself failed on this part (its points are held for staff)."""
    exact_arms: frozenset[str] = frozenset()
    """The record's arms (``"baseline"``, ``"result"``, ``"alternatives[0]"``, …) that are the plan's arms to the
    type and the order: nothing in them is compared again."""


@dataclass
class GradingContext:
    """What every check of one grade reads: the bundle, the lab, the rubric, each part's state, and the replay service
    that built them (its memos serve the checks).  The two readings of the rationale are made once per grade, by the
    first check that asks, and kept here."""

    bundle: Bundle
    lab: GradingLab
    rubric: Rubric
    mlsysim_version: str
    grader_version: str
    parts: dict[PartId, PartState]
    replay: Replayer
    reading: Reading | None = None
    """The rationale check's reading (:func:`.rationale.rationale_reading`), once it has read."""
    template_use: TemplateUse | None = None
    """How much of the rationale is the grader's own template (:func:`.generated.template_use`), once measured."""

    @property
    def track(self) -> str:
        return self.bundle.track


def first_difference(expected: Any, actual: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place two JSON values differ: (path, expected, actual); numbers to 1e-9 relative.

    Strings and booleans compare exactly (``true`` is not ``1``), integers exactly, floats
    to 1e-9 relative.  Python's ``==`` treats ``True == 1``, so equal values are walked
    again unless they are identical to the type as well: the same :func:`exact_key`.
    """
    if expected != actual:
        return _difference(expected, actual, path)
    try:
        if exact_key(expected) == exact_key(actual):  # equal values, types and order: the honest case, at C speed
            return None
    except ValueError:  # not JSON values (a caller's own objects): compared in full
        return _difference(expected, actual, path)
    # Equal by ``==`` yet not to the byte (another key order, say): only a boolean against a number can still differ.
    return _difference(expected, actual, path) if _bool_against_number(expected, actual) else None


def same_json(expected: Any, actual: Any) -> bool:
    """Whether :func:`first_difference` finds nothing, without building the path of a difference."""
    if expected != actual:
        return _alike(expected, actual)
    try:
        if exact_key(expected) == exact_key(actual):
            return True
    except ValueError:
        return _difference(expected, actual, "") is None
    return not _bool_against_number(expected, actual)


def _bool_against_number(expected: Any, actual: Any) -> bool:
    """Whether two values equal by ``==`` pair a boolean with something that is not one (``True == 1``), anywhere."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return any(_bool_against_number(value, actual[key]) for key, value in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return any(_bool_against_number(left, right) for left, right in zip(expected, actual, strict=True))
    return (type(expected) is bool) != (type(actual) is bool)


def _alike(expected: Any, actual: Any) -> bool:
    """``_difference(expected, actual, path) is None``, in any order and without paths."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return len(expected) == len(actual) and all(key in actual and _alike(value, actual[key])
                                                     for key, value in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(_alike(left, right) for left, right in zip(expected, actual, strict=True))
    return _same_leaf(expected, actual)


def _same_leaf(expected: Any, actual: Any) -> bool:
    """The rule for two values that are not both objects or both arrays: numbers (never booleans) to 1e-9 relative,
    integers exactly, anything else equal and of one type."""
    numeric = (int, float)
    if (isinstance(expected, numeric) and not isinstance(expected, bool)
            and isinstance(actual, numeric) and not isinstance(actual, bool)):
        if expected == actual:
            return True
        if isinstance(expected, int) and isinstance(actual, int):
            return False
        return abs(expected - actual) <= 1e-9 * max(abs(expected), abs(actual))
    return type(expected) is type(actual) and expected == actual


def _difference(expected: Any, actual: Any, path: str) -> tuple[str, Any, Any] | None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            if key not in actual:
                return f"{path}.{key}".lstrip("."), expected[key], "<missing>"
            if key not in expected:
                return f"{path}.{key}".lstrip("."), "<absent>", actual[key]
            found = _difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return path.lstrip(".") or "value", f"{len(expected)} items", f"{len(actual)} items"
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            found = _difference(left, right, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if _same_leaf(expected, actual) else (path.lstrip(".") or "value", expected, actual)


def plan_fingerprint(memos: Memos, lab: LabRules, track: str, part: str, upstream: Mapping[str, Any]) -> str:
    """:meth:`LabRules.fingerprint` of a plan's ``upstream``, computed once per plan object in ``memos`` (the staleness
    check of every part of every bundle asks for the one of its final settings' plan, one of the replay's shared plans)."""
    fingerprint: str = memos.fingerprints(upstream, lab, track, part)
    return fingerprint


def exact_as_planned(memos: Memos, planned: Any, recorded: Any) -> bool:
    """Whether a recorded value is the plan's own value ``planned`` to the type and the order (equal :func:`exact_key`
    bytes, the plan's kept per object in ``memos``)."""
    try:
        return bool(memos.exact_keys(planned) == exact_key(recorded))
    except ValueError:  # not JSON values: compared in full by the caller
        return False


def _exact_arms(memos: Memos, plan: PartPlan, record: EvidenceRecord) -> frozenset[str]:
    """The names of the record's arms that are exactly the plan's (the honest case: one comparison per arm)."""
    return frozenset(name for name, arm in _arms(record)
                     if (planned := _plan_arm(plan, record, name)) is not None and exact_as_planned(memos, planned, arm))


def _compare_plan(memos: Memos, plan: PartPlan, record: EvidenceRecord,
                  exact: frozenset[str]) -> tuple[str, Any, Any] | None:
    """Where the record's inputs differ from the plan the lab builds for its controls (an arm in ``exact`` is the
    plan's arm, its inputs with it)."""
    if record.model_key != plan.model_key:
        return "model_key", plan.model_key, record.model_key
    pairs = [("inputs", plan.upstream, record.inputs)]
    if "baseline" not in exact:
        pairs.append(("baseline.inputs", arm_inputs(plan.baseline), arm_inputs(record.baseline or {})))
    if "result" not in exact:
        pairs.append(("result.inputs", arm_inputs(plan.result), arm_inputs(record.result or {})))
    if len(record.alternatives) != len(plan.alternatives):
        return "alternatives", f"{len(plan.alternatives)} items", f"{len(record.alternatives)} items"
    pairs += [(f"alternatives[{i}].inputs", arm_inputs(p), arm_inputs(r))
              for i, (p, r) in enumerate(zip(plan.alternatives, record.alternatives, strict=True))
              if f"alternatives[{i}]" not in exact]
    for where, expected, actual in pairs:
        if not _planned_json(memos, expected, actual):
            return first_difference(expected, actual, where)
    return None


def _planned_json(memos: Memos, planned: Any, recorded: Any) -> bool:
    """:func:`same_json` of a plan's own value and a recorded one.  Records keep their objects' keys sorted, and a plan
    builds its inputs in the order the lab writes them, so equal inputs are often in another key order: their canonical
    JSON, the plan's kept per object, is the same text (which no difference survives), compared at C speed."""
    try:
        if memos.exact_keys(planned) == exact_key(recorded) or memos.canonical_texts(planned) == canonical_dumps(recorded):
            return True
    except (TypeError, ValueError):  # not JSON values: compared in full
        pass
    return same_json(planned, recorded)


def _record_state(lab: LabRules, replay: Replayer, track: str, part: PartId, record: EvidenceRecord) -> PartState:
    state = PartState(part, record)
    if record.baseline is None or record.result is None:
        state.domain_problems.append(Problem(
            f"Part {part}'s record lacks its baseline or its intervention result, so nothing can be replayed; "
            "recapture the part from the notebook.", "baseline and result", "missing", "domain.no_arms"))
        return state
    inferred = lab.infer_controls(replay, track, part, record)
    if inferred is None:
        state.domain_problems.append(Problem(
            f"The recorded inputs of part {part} cannot be produced by any allowed control setting on track "
            f"{track!r}; recapture the part from the notebook.", "inputs built by the lab", "hand-edited or foreign inputs",
            "domain.inputs"))
        return state
    controls, upstream = inferred
    try:
        controls = lab.parts[part].check_controls(controls, decisions=False)
        # A decision outside its choices is judged by the decision rules; the plan is
        # built without it (and a record that carries it among its inputs fails to match).
        controls = {spec.name: controls[spec.name] if not spec.decision or _allowed(spec, controls[spec.name]) else None
                    for spec in lab.parts[part].controls}
        plan = lab.plan(replay, track, part, controls, upstream)
    except DomainError as exc:
        state.domain_problems.append(Problem(f"{exc}; recapture with allowed settings.", None, None, "domain.inputs"))
        return state
    except evaluator_errors() as exc:
        state.domain_problems.append(Problem(f"Part {part}'s inputs are rejected by the evaluator ({_short(exc)}); recapture "
                                             "the part.", None, None, "domain.inputs"))
        return state
    exact = _exact_arms(replay.memos, plan, record)
    difference = _compare_plan(replay.memos, plan, record, exact)
    if difference:
        where, expected, actual = difference
        state.domain_problems.append(Problem(
            f"Part {part}'s recorded {where} is not what the lab builds on track {track!r} for those settings; "
            "recapture the part from the notebook.", expected, actual, "domain.inputs"))
        return state
    state.controls, state.plan, state.upstream, state.exact_arms = controls, plan, dict(upstream), exact
    return state


def _arms(record: EvidenceRecord) -> list[tuple[str, Any]]:
    arms = [("baseline", record.baseline), ("result", record.result)]
    arms += [(f"alternatives[{i}]", arm) for i, arm in enumerate(record.alternatives)]
    if record.chosen_result is not None:
        arms.append(("chosen_result", record.chosen_result))
    return arms


def _plan_arm(plan: PartPlan, record: EvidenceRecord, name: str) -> dict[str, Any] | None:
    """The arm the plan built for ``name`` (the chosen result is whichever arm its inputs name)."""
    if name == "baseline":
        return plan.baseline
    if name == "result":
        return plan.result
    if name.startswith("alternatives["):
        index = int(name[len("alternatives["):-1])
        return plan.alternatives[index] if index < len(plan.alternatives) else None
    inputs = arm_inputs(record.chosen_result or {})
    return next((arm for arm in (plan.baseline, plan.result, *plan.alternatives) if arm.get("inputs") == inputs), None)


_MAX_LISTED = 200


def _all_differences(expected: Any, actual: Any, path: str, found: list[tuple[str, Any, Any]]) -> None:
    """Append every place two JSON values differ (same rules as ``first_difference``), up to ``_MAX_LISTED``."""
    if len(found) >= _MAX_LISTED:
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            if key not in actual or key not in expected:
                found.append((f"{path}.{key}", expected.get(key, "<absent>"), actual.get(key, "<missing>")))
            else:
                _all_differences(expected[key], actual[key], f"{path}.{key}", found)
        return
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            _all_differences(left, right, f"{path}[{index}]", found)
        return
    difference = first_difference(expected, actual, path)
    if difference:
        found.append(difference)


def _replay_mismatches(plan: PartPlan, record: EvidenceRecord, exact: frozenset[str]) -> list[tuple[str, Any, Any]]:
    """Every recorded value of ``record`` that the plan's arms (the pinned evaluator's) do not reproduce (an arm in
    ``exact`` is the plan's arm: nothing to compare)."""
    found: list[tuple[str, Any, Any]] = []
    for name, arm in _arms(record):
        if name in exact:
            continue
        replayed = _plan_arm(plan, record, name)
        # A chosen result naming no built arm is a decision finding; never replay foreign inputs.
        # The honest case is one comparison at C speed; only a mismatching arm is walked in full.
        if replayed is not None and first_difference(replayed, arm, name) is not None:
            _all_differences(replayed, arm, name, found)
    return found


def build_context(bundle: Bundle, lab: GradingLab, rubric: Rubric, replay: Replayer, *, mlsysim_version: str,
                  grader_version: str) -> GradingContext:
    """Rebuild every part of the lab, in its order, from its record and from the final controls, through ``replay``."""
    parts: dict[PartId, PartState] = {}
    final_results: dict[str, Any] = {}
    for part in map(part_key, lab.part_ids()):
        record = bundle.evidence.get(part)
        try:
            state = _part_state(lab, replay, bundle, part, record, final_results)
        except Exception as exc:  # the grader's boundary: what is not the submission's fault is ours
            state = PartState(part, record, grader_error=f"{type(exc).__name__}: {exc}"[:300])
        parts[part] = state
    return GradingContext(bundle, lab, rubric, mlsysim_version, grader_version, parts, replay)


def _part_state(lab: LabRules, replay: Replayer, bundle: Bundle, part: PartId, record: EvidenceRecord | None,
                final_results: dict[str, Any]) -> PartState:
    """One part's record state and final-settings plan (``final_results`` collects results for dependants)."""
    state = _record_state(lab, replay, bundle.track, part, record) if record is not None else PartState(part, None)
    if state.plan is not None and record is not None:
        # NOTE: compared here, under the part's own boundary, and not in the replay check: the check
        # reads every part's mismatch (one session runs one mlsysim), so a failure while comparing
        # part A would otherwise hold every part the check judges after it.
        state.mismatches = _replay_mismatches(state.plan, record, state.exact_arms)
    final = bundle.controls.get(part)
    if final is None:
        state.final_missing = True
        return state
    try:
        checked = lab.parts[part].check_controls(final, decisions=False)
        deps = lab.parts[part].depends_on
        if all(dep in final_results for dep in deps):
            upstream = {dep: final_results[dep] for dep in deps}
            if state.plan is not None and checked == state.controls and upstream == state.upstream:
                final_plan = state.plan
            else:
                final_plan = lab.plan(replay, bundle.track, part, checked, upstream)
            state.final_plan = final_plan
            final_results[part] = final_plan.result
    except DomainError as exc:
        state.final_problems.append(Problem(f"Final settings: {exc}.", None, final, "domain.final_settings"))
    except evaluator_errors() as exc:
        state.final_problems.append(Problem(f"Final settings of part {part} are rejected by the evaluator ({_short(exc)}).",
                                            None, final, "domain.final_settings"))
    return state


def _allowed(control: Control, value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None))) and value in control.choices


def _short(exc: BaseException) -> str:
    """An exception in one short clause for a student message."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."
