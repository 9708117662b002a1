"""The checks: one small function each, registered in :data:`CHECKS`.

Every check reads the shared :class:`GradingContext` and returns typed findings;
none raises for a bad submission.  The order of ``CHECKS`` is the order findings
are reported in.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .context import GradingContext, first_difference
from .labspec import LabSpec
from .generated import check_generated
from .rationale import check_rationale
from .report import Finding

Check = Callable[[GradingContext], Iterable[Finding]]


def _captured(ctx: GradingContext):
    return [(part, state) for part, state in ctx.parts.items() if state.record is not None]


def check_bundle_hash(ctx: GradingContext) -> Iterable[Finding]:
    bundle = ctx.bundle
    if bundle.content_hash is None:
        yield Finding(part="bundle", criterion="format", message="The bundle has no content hash; save it again from the notebook.",
                      expected="sha256 of the bundle", actual=None)
    elif not bundle.hash_matches():
        yield Finding(part="bundle", criterion="format",
                      message="The bundle was edited after it was saved (its content hash does not match); save it again from the notebook.",
                      expected=bundle.compute_hash(), actual=bundle.content_hash)


def check_missing(ctx: GradingContext) -> Iterable[Finding]:
    for part, state in ctx.parts.items():
        if state.record is None:
            yield Finding(part=part, criterion="missing", rubric_item="captured",
                          message=f"Part {part} has no captured evidence; lock a prediction, run the part and capture it.")


def check_record_shape(ctx: GradingContext) -> Iterable[Finding]:
    for part, state in _captured(ctx):
        record = state.record
        if record.part != part:
            yield Finding(part=part, criterion="format", rubric_item="captured",
                          message=f"The record stored under part {part} says it is part {record.part}; recapture part {part}.",
                          expected=part, actual=record.part)
        if record.lab not in (None, ctx.lab.lab_id):
            yield Finding(part=part, criterion="format", rubric_item="captured",
                          message=f"Part {part}'s record comes from {record.lab}, not {ctx.lab.lab_id}; recapture it in this lab.",
                          expected=ctx.lab.lab_id, actual=record.lab)


def check_domain(ctx: GradingContext) -> Iterable[Finding]:
    for part, state in ctx.parts.items():
        for message, expected, actual in state.domain_problems:
            yield Finding(part=part, criterion="domain", message=message, expected=expected, actual=actual,
                          rubric_item="replay", hidden=True)
        for message, expected, actual in state.final_problems:
            yield Finding(part=part, criterion="domain", message=message, expected=expected, actual=actual, rubric_item="fresh")


def _arms(record) -> list[tuple[str, Any]]:
    arms = [("baseline", record.baseline), ("result", record.result)]
    arms += [(f"alternatives[{i}]", arm) for i, arm in enumerate(record.alternatives)]
    if record.chosen_result is not None:
        arms.append(("chosen_result", record.chosen_result))
    return arms


def _plan_arm(plan, record, name: str):
    """The arm the plan built for ``name`` (the chosen result is whichever arm its inputs name)."""
    if name == "baseline":
        return plan.baseline
    if name == "result":
        return plan.result
    if name.startswith("alternatives["):
        index = int(name[len("alternatives["):-1])
        return plan.alternatives[index] if index < len(plan.alternatives) else None
    inputs = LabSpec.arm_inputs(record.chosen_result)
    return next((arm for arm in (plan.baseline, plan.result, *plan.alternatives) if arm.get("inputs") == inputs), None)


def check_replay(ctx: GradingContext) -> Iterable[Finding]:
    """Every recorded number must be what the pinned evaluator gives for the recorded inputs.

    Inputs inside the domain were already evaluated when the part's plan was built,
    so the plan's arms are the replayed arms; inputs outside it are never replayed.
    """
    for part, state in _captured(ctx):
        if state.plan is None:
            continue  # reported by check_domain
        record = state.record
        drift = record.mlsysim_version != ctx.mlsysim_version
        for name, arm in _arms(record):
            replayed = _plan_arm(state.plan, record, name)
            if replayed is None:
                continue  # a chosen result naming no built arm is a decision finding; never replay foreign inputs
            difference = first_difference(replayed, arm, name)
            if difference:
                where, expected, actual = difference
                yield Finding(
                    part=part, criterion="version" if drift else "replay", rubric_item="replay", hidden=True,
                    message=(f"Part {part}'s {where} does not match what mlsysim {ctx.mlsysim_version} computes for its inputs"
                             + (f" (recorded under mlsysim {record.mlsysim_version or 'unknown'}); recapture under the pinned version."
                                if drift else "; recapture the part instead of editing numbers.")),
                    expected=expected, actual=actual)
                break


def check_version(ctx: GradingContext) -> Iterable[Finding]:
    for part, state in _captured(ctx):
        version = state.record.mlsysim_version
        if version is not None and version != ctx.mlsysim_version:
            yield Finding(part=part, criterion="version", rubric_item="replay",
                          message=f"Part {part} was captured with mlsysim {version}, but grading uses {ctx.mlsysim_version}; "
                                  f"install mlsysim=={ctx.mlsysim_version} and recapture.",
                          expected=ctx.mlsysim_version, actual=version)


def check_stale(ctx: GradingContext) -> Iterable[Finding]:
    lab, track = ctx.lab, ctx.track
    for part, state in _captured(ctx):
        record = state.record
        if record.track != track:
            yield Finding(part=part, criterion="stale", rubric_item="fresh",
                          message=f"Part {part} was captured on track {record.track!r}, but the submission is for {track!r}; recapture it on {track!r}.",
                          expected=track, actual=record.track)
            continue
        if state.final_missing:
            yield Finding(part=part, criterion="stale", rubric_item="fresh",
                          message=f"The bundle has no final settings for part {part}; save the bundle from the notebook.",
                          expected="controls for the part", actual=None)
        final = state.final_plan
        if final is None:
            continue
        expected_fp = lab.fingerprint(track, part, final.upstream)
        own_inputs_match = record.inputs == final.upstream and repr(record.inputs) == repr(final.upstream)
        if record.upstream_fingerprint != expected_fp or (not own_inputs_match and lab.fingerprint(track, part, record.inputs) != expected_fp):
            where = first_difference(final.upstream, record.inputs, "settings")
            detail = f" ({where[0]} is now {where[1]!r}, captured with {where[2]!r})" if where else ""
            upstream = f" or the part {', '.join(lab.parts[part].depends_on)} result it builds on" if lab.parts[part].depends_on else ""
            yield Finding(part=part, criterion="stale", rubric_item="fresh",
                          message=f"Part {part}'s evidence no longer matches your final settings{upstream}{detail}; recapture part {part}.",
                          expected=expected_fp, actual=record.upstream_fingerprint)
            continue
        for dep, used in state.upstream.items():
            captured = ctx.bundle.evidence.get(dep)
            if captured is not None and first_difference(LabSpec.arm_inputs(used), LabSpec.arm_inputs(captured.result or {})):
                yield Finding(part=part, criterion="stale", rubric_item="fresh",
                              message=f"Part {part} builds on a part {dep} result other than the part {dep} evidence you captured; "
                                      f"recapture part {dep} with your final settings, then part {part}.",
                              expected=LabSpec.arm_inputs(used), actual=LabSpec.arm_inputs(captured.result or {}))


def check_contrast(ctx: GradingContext) -> Iterable[Finding]:
    for part, state in _captured(ctx):
        base, result = LabSpec.arm_inputs(state.record.baseline or {}), LabSpec.arm_inputs(state.record.result or {})
        if not base or not result:
            yield Finding(part=part, criterion="contrast", rubric_item="contrast",
                          message=f"Part {part} needs both a baseline and an intervention with their inputs; recapture it.",
                          expected="baseline and result inputs", actual="missing")
        elif first_difference(base, result) is None:
            yield Finding(part=part, criterion="contrast", rubric_item="contrast",
                          message=f"Part {part}'s intervention is identical to its baseline; change a control so the two differ, then recapture.",
                          expected="inputs that differ", actual="identical inputs")


def check_prediction_locked(ctx: GradingContext) -> Iterable[Finding]:
    for part, state in _captured(ctx):
        record = state.record
        choices = ctx.lab.parts[part].predictions
        if record.prediction is None:
            yield Finding(part=part, criterion="prediction", rubric_item="prediction_locked",
                          message=f"Part {part} has no prediction; lock one before running the part.", expected=list(choices), actual=None)
        elif record.prediction not in choices:
            yield Finding(part=part, criterion="prediction", rubric_item="prediction_locked",
                          message=f"Part {part}'s prediction {record.prediction!r} is not one of the lab's choices; lock one of {', '.join(choices)}.",
                          expected=list(choices), actual=record.prediction)
        elif record.prediction_locked_at is None or record.result_shown_at is None:
            yield Finding(part=part, criterion="prediction", rubric_item="prediction_locked",
                          message=f"Part {part} does not record when the prediction was locked and the result shown; capture it from the notebook.",
                          expected="prediction_locked_at and result_shown_at", actual=None)
        elif record.prediction_locked_at > record.result_shown_at:
            yield Finding(part=part, criterion="prediction", rubric_item="prediction_locked",
                          message=f"Part {part}'s prediction was locked after the result was shown; predictions count only when made first.",
                          expected=f"locked before {record.result_shown_at.isoformat()}", actual=record.prediction_locked_at.isoformat())


def check_prediction_correct(ctx: GradingContext) -> Iterable[Finding]:
    for part, state in _captured(ctx):
        record = state.record
        if record.prediction not in ctx.lab.parts[part].predictions:
            yield Finding(part=part, criterion="prediction", rubric_item="prediction_correct", hidden=True,
                          message=f"Part {part} has no valid prediction to judge; lock one of the lab's choices before running the part.")
            continue
        if state.plan is None:
            yield Finding(part=part, criterion="prediction", rubric_item="prediction_correct", hidden=True,
                          message=f"Part {part}'s prediction cannot be judged because its evidence does not replay; recapture the part.")
            continue
        accepted = ctx.lab.accepted_predictions(ctx.track, part, state.plan)
        if record.prediction not in accepted:
            labels = ctx.lab.parts[part].predictions
            yield Finding(part=part, criterion="prediction", rubric_item="prediction_correct", hidden=True,
                          message=f"Part {part}: the replayed numbers support {' or '.join(repr(labels[a]) for a in sorted(accepted))}, "
                                  f"not {labels[record.prediction]!r}; read the calculation notes to see why.",
                          expected=sorted(accepted), actual=record.prediction)


def check_decision(ctx: GradingContext) -> Iterable[Finding]:
    for part, state in _captured(ctx):
        if not ctx.lab.parts[part].has_decision:
            continue
        plan = state.plan
        if plan is None:
            yield Finding(part=part, criterion="decision", rubric_item="decision",
                          message=f"Part {part}'s decision cannot be checked because its evidence does not replay; recapture the part.")
            continue
        for message, expected, actual in ctx.lab.decision_problems(ctx.track, part, plan, state.record):
            yield Finding(part=part, criterion="decision", rubric_item="decision", message=message, expected=expected, actual=actual)


def check_synthesis_choices(ctx: GradingContext) -> Iterable[Finding]:
    for message, expected, actual in ctx.lab.synthesis_problems(ctx.bundle):
        yield Finding(part="synthesis", criterion="decision", rubric_item="choices_valid", message=message, expected=expected, actual=actual)


CHECKS: tuple[Check, ...] = (
    check_bundle_hash,
    check_missing,
    check_record_shape,
    check_domain,
    check_version,
    check_replay,
    check_stale,
    check_contrast,
    check_prediction_locked,
    check_prediction_correct,
    check_decision,
    check_synthesis_choices,
    check_rationale,
    check_generated,
)
