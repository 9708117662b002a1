"""The checks: one small function each, registered in :data:`CHECKS` with what it judges.

Every check reads the shared :class:`GradingContext` and returns typed findings;
none raises for a bad submission.  The order of ``CHECKS`` is the order findings
are reported in.  A check is registered as one of two kinds, which says what is held
for staff when the check itself fails (see :func:`held`):

* :class:`PartCheck` judges one part's evidence and runs once per part of the lab, so a
  failure on part B holds part B and leaves A, C, D and E as they are;
* :class:`SubmissionCheck` judges the submission as a whole (the synthesis, the bundle's
  seal) and names the items it judges, which are held when it fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .._mlsysim import unit_registry
from .context import GradingContext, PartState, evaluator_errors, exact_as_planned, first_difference, plan_fingerprint, same_json
from .drift import Mismatch, moved_setting, split_variants, spread
from .generated import check_generated
from .jsonio import canonical_dumps
from .models import EvidenceRecord, PartId, PartRun, part_key
from .rationale import check_rationale
from .report import Finding, PartName
from .roles import LabRules
from .rubric import Rubric
from .seal import FIRST_BOOK_SEALED_SCHEMA, legacy_fingerprint
from .values import BuildVariant, PartPlan, arm_inputs


@dataclass(frozen=True)
class PartCheck:
    """A check of one part's evidence, run once per part of the lab: if it fails on a part, that part is held."""

    run: Callable[[GradingContext, PartId], Iterable[Finding]]

    @property
    def name(self) -> str:
        return self.run.__name__


@dataclass(frozen=True)
class SubmissionCheck:
    """A check of the submission as a whole: if it fails, the synthesis items ``judges`` names are held."""

    run: Callable[[GradingContext], Iterable[Finding]]
    judges: Callable[[Rubric], tuple[str, ...]]
    """The synthesis items whose points follow this check's verdict (none for a check that costs no points)."""

    @property
    def name(self) -> str:
        return self.run.__name__


Check = PartCheck | SubmissionCheck


def held(part: PartName, reason: str, items: tuple[str, ...] = ()) -> Finding:
    """The ``grader`` finding for what the grader failed on: it waits for staff review, neither paid nor charged.

    Without ``items`` the whole part is held (its evidence could not be checked); with them only those
    items of the part (a synthesis check judges some of its items).  On ``bundle`` nothing is held: a check
    of the whole bundle that judges no item only raises the ``grader_error`` flag.  ``reason`` (the error)
    is for staff.
    """
    if items:
        message = (f"The grader failed while checking your {part} (its own error, not yours): "
                   f"{', '.join(items)} wait for staff review, and their points are held, not lost, until then.")
        return Finding(part=part, criterion="grader", message=message, actual=reason, rubric_item=items[0], also_costs=items[1:],
                       code="grader.error")
    if part == "bundle":
        message = ("The grader failed while checking your submission (its own error, not yours): staff will review it; "
                   "no points depend on this check.")
    else:
        message = (f"The grader failed while checking part {part} (its own error, not yours): staff will review this "
                   "part, and its points are held, not lost, until then.")
    return Finding(part=part, criterion="grader", message=message, actual=reason, code="grader.error")


def _record(ctx: GradingContext, part: PartId) -> EvidenceRecord | None:
    """The part's record when the grader could work on it (a part it failed on is held for staff instead)."""
    state = ctx.parts[part]
    return state.record if state.grader_error is None else None


def check_grader_errors(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    """A part the grader itself failed on while rebuilding it: held for staff review, never the student's lost point."""
    error = ctx.parts[part].grader_error
    if error is not None:
        yield held(part, error)


def check_bundle_hash(ctx: GradingContext) -> Iterable[Finding]:
    bundle = ctx.bundle
    if bundle.content_hash is None:
        yield Finding(part="bundle", criterion="format", message="The bundle has no content hash; save it again from the notebook.",
                      expected="sha256 of the bundle", actual=None, code="format.no_hash")
    elif not bundle.hash_matches():
        yield Finding(part="bundle", criterion="format",
                      message="The bundle was edited after it was saved (its content hash does not match); save it again from the notebook.",
                      expected=bundle.compute_hash(), actual=bundle.content_hash, code="format.hash_mismatch")


def check_missing(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    if ctx.parts[part].record is None:
        yield Finding(part=part, criterion="missing", rubric_item="captured", voids_part=True, code="missing.part",
                      message=f"Part {part} has no captured evidence; lock a prediction, run the part and capture it.")


def check_record_shape(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    record = _record(ctx, part)
    if record is None:
        return
    if record.part != part:
        yield Finding(part=part, criterion="format", rubric_item="captured",
                      message=f"The record stored under part {part} says it is part {record.part}; recapture part {part}.",
                      expected=part, actual=record.part, code="format.part_label")
    if record.lab not in (None, ctx.lab.lab_id):
        yield Finding(part=part, criterion="format", rubric_item="captured",
                      message=f"Part {part}'s record comes from {record.lab}, not {ctx.lab.lab_id}; recapture it in this lab.",
                      expected=ctx.lab.lab_id, actual=record.lab, code="format.lab_label")


def check_domain(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    """Inputs no allowed setting on the bundle's track produces, and a record relabelled to another track.

    A record labelled with another track whose inputs are this track's was captured here and relabelled in the file
    (the notebook captures on the session's track): the book voids such a record (its capstone auditor refuses the
    chapter), and so does the grader, for staff; a record really captured on another track fails its inputs instead.
    """
    state, record = ctx.parts[part], _record(ctx, part)
    for problem in state.domain_problems:
        yield Finding(part=part, criterion="domain", message=problem.message, expected=problem.expected, actual=problem.actual,
                      rubric_item="replay", hidden=True, voids_part=True, code=problem.code or "domain.rule")
    if record is not None and record.track != ctx.track and not state.domain_problems:
        yield Finding(part=part, criterion="domain", rubric_item="replay", hidden=True, voids_part=True,
                      message=f"Part {part}'s record is labelled track {record.track!r}, but its inputs are track "
                              f"{ctx.track!r}'s: the label was edited, so the record is void; recapture part {part} "
                              "from the notebook.",
                      expected=ctx.track, actual=record.track, code="domain.track_relabelled")
    for problem in state.final_problems:
        yield Finding(part=part, criterion="domain", message=problem.message, expected=problem.expected, actual=problem.actual,
                      rubric_item="fresh", code=problem.code or "domain.final_settings")


def _unexplained(ctx: GradingContext, part: PartId) -> tuple[list[Mismatch], list[tuple[Mismatch, BuildVariant]]]:
    """A part's replay mismatches that no build the lab lists explains, and those one does."""
    return split_variants(ctx.lab.build_variants(), ctx.track, part, ctx.parts[part].mismatches or [])


def _drifts(ctx: GradingContext, part: PartId) -> bool:
    """Whether the part's own mismatch reads as another mlsysim: it runs through the part, and it is not the numbers of
    another allowed setting (moved inputs)."""
    found, _ = _unexplained(ctx, part)
    return spread(found) and moved_setting(ctx.lab, ctx.replay, ctx.track, part, ctx.parts[part]) is None


def check_replay(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    """Every recorded number must be what the pinned evaluator gives for the recorded inputs.

    Inputs inside the domain were already evaluated when the part's plan was built,
    so the plan's arms are the replayed arms; inputs outside it are never replayed.
    A part that does not replay earns nothing (its evidence is unverified); the finding
    says why, from the pattern of the mismatch and never from a version label
    (:mod:`.drift` reads it):

    * **another build the lab lists** (:class:`~.drift.BuildVariant`, e.g. the book's hosted
      labs): a listed field holding that build's value is tolerated, with a note naming the
      build, and costs nothing; any other value of it is compared as usual;
    * **moved inputs** (criterion ``replay``): every recorded number is what the evaluator gives
      for another allowed setting of the part, so the inputs were moved without recomputing —
      an edit, however many numbers it moves;
    * **version drift** (criterion ``version``): another mlsysim moves many numbers at
      once, so a part counts as drifted when at least :data:`~.drift.DRIFT_MIN_VALUES` recorded
      values are off across at least :data:`~.drift.DRIFT_MIN_ARMS` of its arms — or when its
      mismatch is smaller but another part of the same submission drifts that way (one
      session runs one mlsysim);
    * **edited evidence** (criterion ``replay``): otherwise — one number, or a few in a
      single arm, off while the rest replays exactly is an edit, whatever the record's label.

    A record labelled with another mlsysim whose every number replays exactly is a note
    and costs nothing, so a missing label is never cheaper than an honest one.  (The comparison
    itself is made when the context is built: :attr:`PartState.mismatches`.)
    """
    record, state = _record(ctx, part), ctx.parts[part]
    if record is None or state.mismatches is None:
        return  # nothing captured, held for staff, or not replayed (reported by check_domain)
    found, explained = _unexplained(ctx, part)
    label = record.mlsysim_version
    labelled = f" (recorded under mlsysim {label})" if label is not None and label != ctx.mlsysim_version else ""
    moved = moved_setting(ctx.lab, ctx.replay, ctx.track, part, state) if found and spread(found) else None
    if found and moved is None and (spread(found) or any(_drifts(ctx, other) for other in ctx.parts if other != part)):
        where, expected, actual = found[0]
        arms = sorted({w.split(".", 1)[0].split("[", 1)[0] for w, _, _ in found})
        yield Finding(
            part=part, criterion="version", rubric_item="replay", hidden=True, voids_part=True,
            message=(f"Part {part}'s numbers do not match what mlsysim {ctx.mlsysim_version} computes for its inputs{labelled}: "
                     f"{len(found)} values across {', '.join(arms)}, starting with {where}, as when another mlsysim "
                     f"version produced them; install mlsysim=={ctx.mlsysim_version} and recapture the part."),
            expected=expected, actual=actual, code="version.mismatch")
    elif moved is not None:
        where, expected, actual = found[0]
        setting = ", ".join(f"{name} = {value!r}" for name, value in moved.items())
        yield Finding(
            part=part, criterion="replay", rubric_item="replay", hidden=True, voids_part=True,
            message=(f"Part {part}'s numbers are what mlsysim {ctx.mlsysim_version} computes for another setting ({setting}), "
                     f"not for its recorded inputs{labelled}; recapture the part instead of editing its inputs."),
            expected=expected, actual=actual, code="replay.other_setting")
    elif found:
        where, expected, actual = found[0]
        yield Finding(
            part=part, criterion="replay", rubric_item="replay", hidden=True, voids_part=True,
            message=(f"Part {part}'s {where} does not match what mlsysim {ctx.mlsysim_version} computes for its inputs{labelled}, "
                     "while the rest of its evidence replays exactly; recapture the part instead of editing numbers."),
            expected=expected, actual=actual, code="replay.mismatch")
    elif explained:
        (where, expected, actual), variant = explained[0]
        yield Finding(part=part, criterion="version",
                      message=f"Part {part}'s {where} is {actual!r}, the value {variant.build} gives where mlsysim "
                              f"{ctx.mlsysim_version} gives {expected!r}; every other number replays exactly, so it counts "
                              "in full; nothing to do.",
                      expected=expected, actual=actual, code="version.build_variant")
    elif labelled:
        yield Finding(part=part, criterion="version",
                      message=f"Part {part} is labelled mlsysim {label}, and every number replays exactly under "
                              f"{ctx.mlsysim_version}, so it counts in full; nothing to do.",
                      expected=ctx.mlsysim_version, actual=label, code="version.label")


_READABLE_UNITS = (("second", (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0))),
                   ("joule", (("µJ", 1e-6), ("mJ", 1e-3), ("J", 1.0), ("kJ", 1e3), ("MJ", 1e6))))


def _shown(value: Any) -> str:
    """A recorded value as a student reads it: text in quotes, numbers rounded, quantities in a readable unit."""
    if isinstance(value, dict) and {"magnitude", "unit"} <= set(value):
        Q_ = unit_registry().Quantity  # mlsysim's units, without importing mlsysim (nor pint at package import)

        magnitude, unit = value["magnitude"], value["unit"]
        refusals: tuple[type[BaseException], ...] = (*evaluator_errors(), TypeError)  # another kind of quantity, or an edited one
        for base, scales in _READABLE_UNITS:
            try:
                amount = float(Q_(magnitude, unit).to(base).magnitude)
            except refusals:
                continue
            symbol, size = next(((s, z) for s, z in reversed(scales) if abs(amount) >= z), scales[0])
            return f"{amount / size:.3g} {symbol}"
        return f"{magnitude:.4g} {unit}" if isinstance(magnitude, (int, float)) else "a different value"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return str(value)
    return "a different value"


def _differing(new: Any, old: Any, path: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], Any, Any] | None:
    """The first field (a quantity counts as one) where the final settings' inputs and the record's differ."""
    quantity = isinstance(new, dict) and {"magnitude", "unit"} <= set(new)
    if isinstance(new, dict) and isinstance(old, dict) and not quantity:
        for key in sorted(set(new) | set(old), key=str):
            if key not in new or key not in old:
                return (*path, key), new.get(key), old.get(key)
            found = _differing(new[key], old[key], (*path, key))
            if found:
                return found
        return None
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return next((found for index, (a, b) in enumerate(zip(new, old, strict=True))
                     if (found := _differing(a, b, (*path, index)))), None)
    return None if first_difference(new, old) is None else (path, new, old)


def _stale_detail(lab: LabRules, part: PartId, state: PartState, final_controls: Any, final_inputs: Any,
                  recorded_inputs: Any) -> str:
    """`` (shape is now "aligned", captured with "misaligned")`` — what changed, in the notebook's words."""
    captured = state.controls
    if captured is None or not isinstance(final_controls, dict):
        return ""
    for control in lab.parts[part].controls:
        before, now = captured.get(control.name), final_controls.get(control.name)
        if first_difference(now, before) is not None:
            return f" ({control.name} is now {_shown(now)}, captured with {_shown(before)})"
    found = _differing(final_inputs, recorded_inputs)  # the settings agree: what it builds on changed
    if found is None:
        return ""
    path, now, before = found
    words = [key for key in path if isinstance(key, str) and key not in ("magnitude", "unit")]
    field = words[-1].replace("_", " ") if words else "a recorded input"
    return f" ({field} is now {_shown(now)}, captured with {_shown(before)})"


def check_stale(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    """Evidence that no longer matches the final settings, the track, or the part it builds on.

    The message names what changed the way the notebook shows it: a control by its name
    (``shape is now "aligned", captured with "misaligned"``), and a result it builds on by
    the field's words with a unit chosen for reading (``baseline kernel time is now 30.8 µs``).
    """
    lab, track, state, record = ctx.lab, ctx.track, ctx.parts[part], _record(ctx, part)
    if record is None:
        return
    if record.track != track:
        yield Finding(part=part, criterion="stale", rubric_item="fresh",
                      message=f"Part {part} was captured on track {record.track!r}, but the submission is for {track!r}; recapture it on {track!r}.",
                      expected=track, actual=record.track, code="stale.track")
        return
    if state.final_missing:
        yield Finding(part=part, criterion="stale", rubric_item="fresh",
                      message=f"The bundle has no final settings for part {part}; save the bundle from the notebook.",
                      expected="controls for the part", actual=None, code="stale.no_settings")
    final = state.final_plan
    if final is None:
        return
    # The record's upstream settings against the final ones, compared directly (to the type: the JSON the seal covers),
    # and its seal against the one the final settings give (so a seal that does not cover its own inputs is stale too).
    # A bundle written before schema 3 keeps the seal of its own schema, checked by that schema's rule.
    if ctx.bundle.read_version < FIRST_BOOK_SEALED_SCHEMA:
        expected_fp = legacy_fingerprint(lab.lab_id, track, part, final.upstream)
    else:
        expected_fp = plan_fingerprint(ctx.replay.memos, lab, track, part, final.upstream)
    same_settings = (exact_as_planned(ctx.replay.memos, final.upstream, record.inputs)
                     or canonical_dumps(final.upstream) == canonical_dumps(record.inputs))
    if not same_settings or record.upstream_fingerprint != expected_fp:
        detail_text = _stale_detail(lab, part, state, ctx.bundle.controls.get(part), final.upstream, record.inputs)
        upstream = f" or the part {', '.join(lab.parts[part].depends_on)} result it builds on" if lab.parts[part].depends_on else ""
        yield Finding(part=part, criterion="stale", rubric_item="fresh",
                      message=f"Part {part}'s evidence no longer matches your final settings{upstream}{detail_text}; recapture part {part}.",
                      expected=expected_fp, actual=record.upstream_fingerprint, code="stale.settings")
        return
    for dep, used in state.upstream.items():
        captured = ctx.bundle.evidence.get(part_key(dep))
        if captured is not None and not same_json(arm_inputs(used), arm_inputs(captured.result or {})):
            yield Finding(part=part, criterion="stale", rubric_item="fresh",
                          message=f"Part {part} builds on a part {dep} result other than the part {dep} evidence you captured; "
                                  f"recapture part {dep} with your final settings, then part {part}.",
                          expected=arm_inputs(used), actual=arm_inputs(captured.result or {}), code="stale.upstream")


def check_contrast(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    record = _record(ctx, part)
    if record is None:
        return
    base, result = arm_inputs(record.baseline or {}), arm_inputs(record.result or {})
    if not base or not result:
        yield Finding(part=part, criterion="contrast", rubric_item="contrast",
                      message=f"Part {part} needs both a baseline and an intervention with their inputs; recapture it.",
                      expected="baseline and result inputs", actual="missing", code="contrast.missing")
    elif same_json(base, result):
        yield Finding(part=part, criterion="contrast", rubric_item="contrast",
                      message=f"Part {part}'s intervention is identical to its baseline; change a control so the two differ, then recapture.",
                      expected="inputs that differ", actual="identical inputs", code="contrast.identical")


LOCK_TIMES = "prediction_locked_at and result_shown_at"
"""What a prediction without lock times lacks (the ``expected`` of its finding, code ``no_lock_times``)."""


def _run_log(ctx: GradingContext, part: PartId, record: EvidenceRecord) -> PartRun | None:
    """The part's run log when it belongs to the captured prediction (same choice, same lock)."""
    run = ctx.bundle.runs.get(part)
    if run is None or run.prediction != record.prediction or run.prediction_locked_at != record.prediction_locked_at:
        return None
    return run


def check_prediction_locked(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    record = _record(ctx, part)
    if record is None:
        return
    choices = ctx.lab.parts[part].predictions
    if record.prediction is None:
        yield Finding(part=part, criterion="prediction", rubric_item="prediction_locked",
                      message=f"Part {part} has no prediction; lock one before running the part.", expected=list(choices), actual=None,
                      code="prediction.missing")
    elif record.prediction not in choices:
        yield Finding(part=part, criterion="prediction", rubric_item="prediction_locked",
                      message=f"Part {part}'s prediction {record.prediction!r} is not one of the lab's choices; lock one of {', '.join(choices)}.",
                      expected=list(choices), actual=record.prediction, code="prediction.unlisted")
    elif record.prediction_locked_at is None or record.result_shown_at is None:
        yield Finding(part=part, criterion="prediction", rubric_item="prediction_locked",
                      message=f"Part {part} does not record when the prediction was locked and the result shown; capture it from the notebook.",
                      expected=LOCK_TIMES, actual=None, code="prediction.no_lock_times")
    else:
        # The first time any result of the part was shown, in any session (kept in the run log).
        run = ctx.bundle.runs.get(part)
        shown = min(t for t in (record.result_shown_at, getattr(run, "first_shown_at", None)) if t is not None)
        if record.prediction_locked_at > shown:
            yield Finding(part=part, criterion="prediction", rubric_item="prediction_locked",
                          message=f"Part {part}'s prediction was locked after the result was shown; predictions count only when made first.",
                          expected=f"locked before {shown.isoformat()}", actual=record.prediction_locked_at.isoformat(),
                          code="prediction.locked_late")


def _judged_plan(ctx: GradingContext, part: PartId, state: PartState, record: EvidenceRecord,
                 plan: PartPlan) -> tuple[PartPlan, dict[str, Any] | None]:
    """The plan a prediction is judged against: the first run after the lock, else the captured one.

    The first run includes the settings of the parts it builds on (Lab 11 D: part C), so
    recapturing part C after seeing part D does not change what D's prediction is judged on.
    Returns (plan, the first run's settings when they differ from the captured ones).
    """
    run = _run_log(ctx, part, record)
    if run is None or not run.first_run_controls or state.controls is None:
        return plan, None
    spec = ctx.lab.parts[part]
    names = [control.name for control in spec.controls if not control.decision]
    first = {name: run.first_run_controls.get(name) for name in names}
    captured = {name: state.controls.get(name) for name in names}
    try:
        upstream, first_upstream = _first_upstream(ctx, part, run, state)
        changed = first != captured or first_upstream is not None
        if not changed:
            return plan, None
        checked = spec.check_controls({**state.controls, **first}, decisions=False)
        shown = {**first, **{f"part {dep} {name}": value for dep, values in (first_upstream or {}).items()
                             for name, value in values.items()}}
        return ctx.lab.plan(ctx.replay, ctx.track, part, checked, upstream), shown
    except evaluator_errors():  # a run log outside the domain: judge the captured settings
        return plan, None


def _first_upstream(ctx: GradingContext, part: PartId, run: PartRun,
                    state: PartState) -> tuple[dict[str, Any], dict[str, dict[str, Any]] | None]:
    """The dependency results of the first run, and their settings when they differ from the captured ones."""
    logged = run.first_run_upstream or {}
    upstream, differing = dict(state.upstream), {}
    for dep in ctx.lab.parts[part].depends_on:
        settings = logged.get(part_key(dep))
        dep_spec = ctx.lab.parts[dep]
        if not settings or dep_spec.depends_on:
            continue
        names = [control.name for control in dep_spec.controls]
        checked = dep_spec.check_controls({name: settings.get(name) for name in names}, decisions=False)
        result = ctx.lab.plan(ctx.replay, ctx.track, dep, checked, {}).result
        if not same_json(arm_inputs(result), arm_inputs(upstream.get(dep) or {})):
            upstream[dep] = result
            differing[dep] = {name: settings.get(name) for name in names if not dep_spec.control(name).decision}
    return upstream, differing or None


def _settings_text(controls: dict[str, Any]) -> str:
    return ", ".join(f"{name} = {value!r}" for name, value in controls.items())


def check_prediction_correct(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    """Formative by default (the rubric gives the item 0 points): the numbers say which answer was right.

    The prediction is judged against the settings of the first run after it was locked, so
    changing the settings until the locked answer comes true does not make it right.
    """
    state, record = ctx.parts[part], _record(ctx, part)
    if record is None or record.prediction is None or record.prediction not in ctx.lab.parts[part].predictions or state.plan is None:
        return  # reported by check_prediction_locked, or the part's evidence does not replay
    plan, first = _judged_plan(ctx, part, state, record, state.plan)
    if first is not None:
        yield Finding(part=part, criterion="prediction",
                      message=f"Part {part}: after locking your prediction you first ran {_settings_text(first)}, then "
                              "changed the settings before capturing; the prediction is judged against that first run.",
                      expected=first, actual={k: (state.controls or {}).get(k) for k in first}, code="prediction.first_run")
    accepted = ctx.lab.accepted_predictions(ctx.track, part, plan)
    if record.prediction not in accepted:
        labels = ctx.lab.parts[part].predictions
        yield Finding(part=part, criterion="prediction", rubric_item="prediction_correct", hidden=True,
                      message=f"Part {part}: the replayed numbers support {' or '.join(repr(labels[a]) for a in sorted(accepted))}, "
                              f"not {labels[record.prediction]!r}; read the calculation notes to see why.",
                      expected=sorted(accepted), actual=record.prediction, code="prediction.incorrect")


def check_decision(ctx: GradingContext, part: PartId) -> Iterable[Finding]:
    state, record = ctx.parts[part], _record(ctx, part)
    if record is None or not ctx.lab.parts[part].has_decision:
        return
    if state.plan is None:
        yield Finding(part=part, criterion="decision", rubric_item="decision",
                      message=f"Part {part}'s decision cannot be checked because its evidence does not replay; recapture the part.",
                      code="decision.unreplayed")
        return
    for problem in ctx.lab.decision_problems(ctx.track, part, state.plan, record):
        yield Finding(part=part, criterion="decision", rubric_item="decision", message=problem.message,
                      expected=problem.expected, actual=problem.actual, code=problem.code or "decision.rule")


def check_synthesis_choices(ctx: GradingContext) -> Iterable[Finding]:
    for problem in ctx.lab.synthesis_problems(ctx.bundle):
        yield Finding(part="synthesis", criterion="decision", rubric_item="choices_valid", message=problem.message,
                      expected=problem.expected, actual=problem.actual, code=problem.code or "synthesis.rule")


def no_items(rubric: Rubric) -> tuple[str, ...]:
    """A check that costs no points (the bundle's seal only raises a staff flag)."""
    return ()


def choice_items(rubric: Rubric) -> tuple[str, ...]:
    """What the synthesis-choices check judges: ``choices_valid``."""
    return tuple(item for item in rubric.synthesis if item == "choices_valid")


def rationale_items(rubric: Rubric) -> tuple[str, ...]:
    """What the rationale and generated-text checks judge: every ``rationale_*`` item of the synthesis."""
    return tuple(item for item in rubric.synthesis if item.startswith("rationale_"))


CHECKS: tuple[Check, ...] = (
    PartCheck(check_grader_errors),
    SubmissionCheck(check_bundle_hash, no_items),
    PartCheck(check_missing),
    PartCheck(check_record_shape),
    PartCheck(check_domain),
    PartCheck(check_replay),
    PartCheck(check_stale),
    PartCheck(check_contrast),
    PartCheck(check_prediction_locked),
    PartCheck(check_prediction_correct),
    PartCheck(check_decision),
    SubmissionCheck(check_synthesis_choices, choice_items),
    SubmissionCheck(check_rationale, rationale_items),
    SubmissionCheck(check_generated, rationale_items),
)
"""Every check, in report order, with what it judges (a check that fails holds exactly that for staff)."""
