"""The student API used by the lab notebooks.

One :class:`LabSession` per notebook holds everything (no module-level mutable state)::

    lab = open_lab("lab07", track="cloud")      # reloads lab07-submission.json if it exists
    lab.predict("A", "above_75")                 # lock the prediction first
    lab.run("A", dispatches=1)                   # then see the table and chart
    lab.capture("A")                             # keep the evidence; the bundle is saved
    lab.progress()                               # captured / fresh / contrasting per part
    lab.synthesis(recommendation=..., ...)       # the final answers
    lab.check("A")                               # the public self-check

The session writes ``<lab>-submission.json`` next to the notebook after every change,
so the saved bundle always holds the student's final settings.  Grading reuses the
grader itself (:func:`mlsys_grader.api.grade_bundle`), so a self-check and
``mlsys-grader check`` on the saved file give the same verdicts.

The bundle also keeps each part's run log (``Bundle.runs``): when its prediction was
locked, when any of its results was first shown (in any session: reopening the
notebook does not make a seen result unseen) and the settings of the first run after
the lock, which the prediction is judged against.  Times come from the real clock
only, and never run backwards within the log.

Not having answered yet is a normal notebook state, not an error: an unanswered
prediction, or a result asked for before its prediction, gives a :class:`Notice`
rather than an exception, so "Run all" on a fresh notebook runs to the end.  Values
outside a lab's domain raise :class:`~mlsys_grader.errors.DomainError` naming the
allowed values.
"""

from __future__ import annotations

import base64
import glob
import html
import io
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from .._version import __version__
from ..core.capture import record_from_plan
from ..core.jsonio import canonical_dumps
from ..core.labspec import LabSpec, PartPlan
from ..core.models import PARTS, Bundle, EvidenceRecord, PartRun, Synthesis, load_bundle
from ..core.report import GradeReport
from ..errors import BundleFormatError, DomainError, UnknownLabError

SUBMISSION_SUFFIX = "-submission.json"
SYNTHESIS_FIELDS = {
    "lab07": ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale"),
    "lab11": ("reevaluation_trigger", "residual_risk", "rationale"),
}
_KIND_COLOURS = {"info": ("#eff6ff", "#2563eb"), "success": ("#f0fdf4", "#2ca02c"),
                 "warn": ("#fffbeb", "#d97706"), "danger": ("#fef2f2", "#dc2626")}


def submission_path(lab_id: str, directory: str | os.PathLike | None = None) -> Path:
    """Where a notebook's bundle lives: ``<directory>/<lab>-submission.json`` (cwd by default)."""
    return Path(directory or ".") / f"{lab_id}{SUBMISSION_SUFFIX}"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _settings(controls: dict[str, Any]) -> str:
    """Controls by name, as the grader's feedback writes them: ``executions = 10, recompilations = 0``."""
    return ", ".join(f"{name} = {value!r}" for name, value in controls.items())


def _unanswered(value: Any) -> bool:
    """``...`` (the student notebook's placeholder), ``None`` and blank text mean "not answered yet"."""
    return value is Ellipsis or value is None or (isinstance(value, str) and not value.strip())


# -- what a cell shows ------------------------------------------------------------------
def _box(kind: str, body: str) -> str:
    background, border = _KIND_COLOURS.get(kind, _KIND_COLOURS["info"])
    return (f"<div style='border-left:4px solid {border};background:{background};padding:8px 12px;"
            f"border-radius:6px;margin:6px 0;color:#111827'>{body}</div>")


@dataclass
class Notice:
    """A message for the student (refusal, confirmation or warning), shown as a coloured box."""

    kind: str
    title: str
    lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """False for refusals and warnings."""
        return self.kind in ("info", "success")

    def __repr__(self) -> str:
        return "\n".join([f"[{self.kind}] {self.title}", *(f"  - {line}" for line in self.lines)])

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.lines)
        return _box(self.kind, f"<b>{html.escape(self.title)}</b>" + (f"<ul style='margin:4px 0'>{items}</ul>" if items else ""))


@dataclass
class PartResult:
    """A part's result as the seed shows it: observation, table (pandas) and chart (matplotlib)."""

    part: str
    title: str
    prediction: str
    observation: str
    kind: str
    table: Any
    figure: Any
    warnings: list[str] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)

    def png(self) -> bytes:
        """The chart as PNG bytes."""
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()

    def __repr__(self) -> str:
        lines = [f"Part {self.part} · {self.title}", f"Your prediction: {self.prediction}",
                 f"Observed analytically: {self.observation}", self.table.to_string(index=False)]
        lines += [f"WARNING: {warning}" for warning in self.warnings]
        lines += [repr(notice) for notice in self.notices]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        warnings = "".join(_box("danger", html.escape(w)) for w in self.warnings)
        warnings += "".join(notice._repr_html_() for notice in self.notices)
        picture = base64.b64encode(self.png()).decode("ascii")
        return (
            f"<div class='mlsys-part'><h4>Part {html.escape(self.part)} · {html.escape(self.title)}</h4>{warnings}"
            + _box(self.kind, f"<b>Your prediction:</b> {html.escape(self.prediction)}. "
                              f"<b>Observed analytically:</b> {html.escape(self.observation)}")
            + self.table.to_html(index=False, classes="mlsys-table", border=0)
            + f"<img alt='Part {html.escape(self.part)} chart' src='data:image/png;base64,{picture}'/></div>"
        )


@dataclass
class Progress:
    """The student's own progress: one row per part (captured, fresh, contrasting)."""

    table: Any
    ready: bool

    def __repr__(self) -> str:
        return self.table.to_string(index=False)

    def _repr_html_(self) -> str:
        status = ("All five parts are captured, fresh and contrasting." if self.ready
                  else "Capture five fresh, contrasting parts; recapture any part marked STALE.")
        return self.table.to_html(index=False, classes="mlsys-table", border=0) + _box("success" if self.ready else "warn", html.escape(status))


@dataclass
class PartCheck:
    """The public self-check for one part (or the synthesis)."""

    part: str
    score: float
    max_score: float
    items: list[tuple[str, float, float]]
    messages: list[str]

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score

    def __repr__(self) -> str:
        lines = [f"{self.part}: {self.score:g} / {self.max_score:g} (public checks)"]
        lines += [f"  {item}: {points:g} / {maximum:g}" for item, points, maximum in self.items]
        lines += [f"  what to do: {message}" for message in self.messages]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(item)}</td><td>{points:g} / {maximum:g}</td></tr>"
                       for item, points, maximum in self.items)
        todo = "".join(f"<li>{html.escape(message)}</li>" for message in self.messages)
        body = (f"<b>{html.escape(self.part)} · {self.score:g} / {self.max_score:g}</b> (public checks; hidden checks run after the deadline)"
                f"<table>{rows}</table>" + (f"<ul>{todo}</ul>" if todo else ""))
        return _box("success" if self.passed else "warn", body)


# -- the session --------------------------------------------------------------------------
@dataclass
class _PartState:
    """One part in this session: the run log that is saved (lock, first shown, first run after
    the lock) and this session's last run (``controls``, ``plan``), which is not."""

    prediction: str | None = None
    locked_at: datetime | None = None
    shown_at: datetime | None = None
    first_run_controls: dict[str, Any] | None = None
    first_run_upstream: dict[str, dict[str, Any]] | None = None
    first_run_at: datetime | None = None
    controls: dict[str, Any] | None = None
    plan: PartPlan | None = None

    def lock(self, choice: str, at: datetime) -> None:
        """A new prediction: what it is judged against is the next run, so the first run is forgotten."""
        self.prediction, self.locked_at = choice, at
        self.first_run_controls = self.first_run_upstream = self.first_run_at = None

    def log(self) -> PartRun | None:
        if self.prediction is None and self.shown_at is None:
            return None
        return PartRun(prediction=self.prediction, prediction_locked_at=self.locked_at, first_shown_at=self.shown_at,
                       first_run_controls=self.first_run_controls, first_run_at=self.first_run_at,
                       first_run_upstream=self.first_run_upstream)

    def restore(self, run: PartRun) -> None:
        self.prediction, self.locked_at = run.prediction, run.prediction_locked_at
        self.shown_at = _earliest(self.shown_at, run.first_shown_at)
        self.first_run_controls = dict(run.first_run_controls) if run.first_run_controls is not None else None
        self.first_run_upstream = ({dep: dict(values) for dep, values in run.first_run_upstream.items()}
                                   if run.first_run_upstream is not None else None)
        self.first_run_at = run.first_run_at


def _earliest(*moments: datetime | None) -> datetime | None:
    known = [moment for moment in moments if moment is not None]
    return min(known) if known else None


def _latest(*moments: datetime | None) -> datetime | None:
    known = [moment for moment in moments if moment is not None]
    return max(known) if known else None


class LabSession:
    """One student's work on one lab and track; see the module docstring.

    ``path`` is the bundle file.  Times always come from the real clock: no public
    argument sets them, since a prediction counts only when locked before its result.
    """

    def __init__(self, lab_id: str, track: str, path: str | os.PathLike):
        self._open(lab_id, track, Path(path), _now)

    def _open(self, lab_id: str, track: str, path: Path, clock: Callable[[], datetime]) -> None:
        from ..api import mlsysim_version
        from ..labs import get_lab

        self.lab: LabSpec = get_lab(lab_id)
        if track not in self.lab.tracks:
            raise UnknownLabError(f"unknown track {track!r} for {lab_id}; expected one of {', '.join(self.lab.tracks)}")
        self.lab_id, self.track, self.path, self._clock = lab_id, track, path, clock
        self._last: datetime | None = None
        self._mlsysim = mlsysim_version()
        self._parts = {part: _PartState() for part in PARTS}
        self._evidence: dict[str, EvidenceRecord] = {}
        self._final: dict[str, dict[str, Any]] = {}
        self._synthesis = Synthesis()
        self._saved: Bundle | None = None
        self._embedded: str | None = None
        self._report: tuple[str, GradeReport] | None = None
        self.notices: list[Notice] = []
        if self.path.exists():
            self._reload()
        if self._saved is None and not self.path.exists():
            self._resume_set_aside()

    def _stamp(self) -> datetime:
        """The time of an event: the clock's, but always after every event already recorded.

        The saved run log says what came first (lock, first result shown); a clock that
        stands still or goes back must not be able to reorder those events.
        """
        now = self._clock()
        if self._last is not None and now <= self._last:
            now = self._last + timedelta(microseconds=1)
        self._last = now
        return now

    # -- persistence -------------------------------------------------------------------
    def _reload(self) -> None:
        """Pick up a bundle saved by an earlier kernel; set aside one that cannot be continued."""
        from ..api import read_bundle_bytes

        try:
            bundle = load_bundle(read_bundle_bytes(self.path))
        except (BundleFormatError, OSError) as exc:
            aside = self._set_aside("unreadable")
            self.notices.append(Notice("warn", f"{self.path.name} could not be read, so this session starts empty.",
                                       [str(exc), f"The old file was kept as {aside.name}."]))
            return
        if bundle.lab != self.lab_id or bundle.track != self.track:
            aside = self._set_aside(f"{bundle.lab}-{bundle.track}")
            self.notices.append(Notice("warn", f"{self.path.name} holds {bundle.lab} evidence for track {bundle.track!r}; "
                                               f"you opened {self.lab_id} on {self.track!r}, so this session starts empty.",
                                       [f"Evidence belongs to one track (as in the book's lab). The old file was kept as {aside.name}"
                                        + (f"; opening {bundle.lab} on {bundle.track!r} again continues from it."
                                           if bundle.lab == self.lab_id and bundle.track in self.lab.tracks else ".")]))
            return
        self._evidence = dict(bundle.evidence)
        self._final = {part: dict(values) for part, values in bundle.controls.items()}
        self._synthesis = bundle.synthesis
        for part, record in self._evidence.items():  # a version 1 bundle has only its records' times
            state = self._parts[part]
            state.prediction, state.locked_at, state.shown_at = record.prediction, record.prediction_locked_at, record.result_shown_at
        for part, run in bundle.runs.items():
            self._parts[part].restore(run)
        for part, state in self._parts.items():
            if state.prediction not in self.lab.parts[part].predictions:  # not one of the lab's choices: no lock
                state.prediction = state.locked_at = None
        self._last = _latest(*(moment for run in bundle.runs.values()
                               for moment in (run.prediction_locked_at, run.first_shown_at, run.first_run_at)),
                             *(moment for record in self._evidence.values()
                               for moment in (record.prediction_locked_at, record.result_shown_at, record.captured_at)))
        self._saved = bundle
        self.notices.append(Notice("info", f"Continuing from {self.path.name}: captured parts "
                                           f"{', '.join(sorted(self._evidence)) or 'none'}.",
                                   ["Re-run each part's cells; unchanged settings keep their captured evidence."]))

    def _set_aside(self, label: str) -> Path:
        """Move the file to ``<stem>.<label>.<time>.json`` (never over another file)."""
        label = re.sub(r"[^A-Za-z0-9_-]", "_", label)[:60]
        stem = f"{self.path.stem}.{label}.{self._clock().strftime('%Y%m%dT%H%M%S')}"
        aside, count = self.path.with_name(f"{stem}.json"), 1
        while aside.exists():
            count += 1
            aside = self.path.with_name(f"{stem}.{count}.json")
        self.path.replace(aside)
        return aside

    def _resume_set_aside(self) -> None:
        """Continue from this lab and track's file set aside when another track was opened.

        Switching tracks and back then loses no evidence, and the run log keeps every
        result already shown, so switching cannot make a seen result unseen.
        """
        pattern = f"{glob.escape(self.path.stem)}.{self.lab_id}-{self.track}.*.json"
        candidates = sorted(self.path.parent.glob(pattern), key=lambda p: (p.stat().st_mtime_ns, p.name))
        if not candidates:
            return
        newest = candidates[-1]
        os.replace(newest, self.path)
        self.notices.append(Notice("info", f"{newest.name} was set aside when another track was opened; "
                                           f"it is {self.path.name} again."))
        self._reload()

    def bundle(self) -> Bundle:
        """The submission as it stands, sealed with its content hash."""
        runs = {part: log for part, state in self._parts.items() if (log := state.log()) is not None}
        return Bundle(lab=self.lab_id, track=self.track, controls={p: dict(c) for p, c in sorted(self._final.items())},
                      evidence=dict(sorted(self._evidence.items())), synthesis=self._synthesis, runs=runs,
                      mlsysim_version=self._mlsysim, grader_version=__version__, created_at=self._clock()).sealed()

    def save(self) -> Path:
        """Write the bundle next to the notebook (atomically) and return its path.

        When the content changed, the bundle is also displayed as a notebook output
        (``mlsys_grader.gradescope`` embedding), so a bare ``.ipynb`` upload still carries it.
        """
        bundle = self.bundle()
        text = bundle.to_json()
        temporary = self.path.with_name(self.path.name + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, self.path)
        self._saved = bundle
        content = canonical_dumps(bundle.model_dump(mode="json", exclude={"created_at", "content_hash"}))
        if content != self._embedded:
            self._embedded = content
            _embed(text)
        return self.path

    # -- grading (the grader itself, on the saved bundle) ------------------------------
    def _full_report(self) -> GradeReport:
        """The full report of the saved bundle (hidden items included; students see :meth:`check`).

        Memoised on the bundle's content hash."""
        from ..api import grade_bundle

        bundle = self._saved if self._saved is not None else Bundle(lab=self.lab_id, track=self.track).sealed()
        key = bundle.content_hash or ""
        if self._report is None or self._report[0] != key:
            self._report = (key, grade_bundle(bundle))
        return self._report[1]

    def _problems(self, criteria: tuple[str, ...] = ("stale", "contrast")) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for finding in self._full_report().public().findings:
            if finding.criterion in criteria:
                found.setdefault(finding.part, []).append(finding.message)
        return found

    # -- validation --------------------------------------------------------------------
    def _part(self, part: Any) -> str:
        if part not in PARTS:
            raise DomainError(f"part must be one of {', '.join(PARTS)} (got {part!r})")
        return part

    def _dependents(self, part: str) -> list[str]:
        """Parts whose evidence builds on ``part`` (Lab 11: D on C), directly or not."""
        found: list[str] = []
        for other in PARTS:
            depends = self.lab.parts[other].depends_on
            if part in depends or any(dep in found for dep in depends):
                found.append(other)
        return found

    def _prediction_choices(self, part: str) -> str:
        return ", ".join(f"{value!r} ({label})" for value, label in self.lab.parts[part].predictions.items())

    # -- the student's verbs -------------------------------------------------------------
    def predict(self, part: str, choice: Any) -> Notice:
        """Lock ``choice`` as the part's prediction (before its result is shown)."""
        part = self._part(part)
        spec, state = self.lab.parts[part], self._parts[part]
        if _unanswered(choice):
            return Notice("warn", f"Part {part}: no prediction yet.",
                          [f"{spec.question} Set the prediction to one of {self._prediction_choices(part)}."])
        if choice not in spec.predictions:
            raise DomainError(f"part {part!r}: prediction must be one of {self._prediction_choices(part)} (got {choice!r})")
        if state.prediction == choice and state.locked_at is not None:
            return Notice("info", f"Part {part} prediction locked: {spec.predictions[choice]}.",
                          [f"Locked at {state.locked_at:%H:%M:%S} UTC; re-running this cell keeps that time."])
        changed_after_result = state.shown_at is not None
        previous = state.prediction
        state.lock(choice, self._stamp())
        self.save()
        if changed_after_result:
            was = f"It was {spec.predictions.get(previous, previous)!r}. " if previous is not None else ""
            return Notice("warn", f"Part {part} prediction changed to {spec.predictions[choice]} after its result was shown.",
                          [f"{was}A prediction counts only when made before the result is seen (in this or an earlier "
                           "session), so this one will be graded as locked late."])
        return Notice("success", f"Part {part} prediction locked: {spec.predictions[choice]}.",
                      ["Now run the part to see the result."])

    def run(self, part: str, **controls: Any) -> PartResult | Notice:
        """Build and show the part's baseline and intervention for ``controls``.

        Refuses (with a :class:`Notice`) until the part's prediction is locked.
        """
        from ._views import VIEWS

        part = self._part(part)
        spec, state = self.lab.parts[part], self._parts[part]
        if state.prediction is None:
            return Notice("warn", f"Part {part}'s result stays hidden until you lock a prediction.",
                          [f"Call lab.predict({part!r}, choice) first, with one of {self._prediction_choices(part)}."])
        names = [control.name for control in spec.controls if not control.decision]
        missing, unknown = sorted(set(names) - set(controls)), sorted(set(controls) - set(names))
        if missing or unknown:
            raise DomainError(f"part {part!r}: lab.run takes exactly the controls {names} "
                              f"(missing {missing}, unexpected {unknown})")
        checked = {name: spec.control(name).check(controls[name], part=part) for name in names}
        upstream = {}
        for dependency in spec.depends_on:
            if self._parts[dependency].plan is None:
                return Notice("warn", f"Run part {dependency} first.",
                              [f"Part {part} builds on part {dependency}'s selected result, so run part {dependency} in this session before part {part}."])
            upstream[dependency] = self._parts[dependency].plan.result
        decisions = {control.name: self._final.get(part, {}).get(control.name) for control in spec.controls if control.decision}
        state.plan = self.lab.plan(self.track, part, {**checked, **{k: None for k in decisions}}, upstream)
        state.controls = checked
        now = self._stamp()
        if state.shown_at is None:
            state.shown_at = now
        if state.first_run_controls is None:
            state.first_run_controls, state.first_run_at = dict(checked), now
            state.first_run_upstream = self._upstream_controls(part) or None
        self._final[part] = {**checked, **decisions}
        self.save()
        view = VIEWS[(self.lab_id, part)](state.plan, self.track)
        problems = self._problems()
        warnings = problems.get(part, []) + [f"Part {other} is stale: {message}" for other in self._dependents(part)
                                             for message in problems.get(other, []) if other in self._evidence]
        judged = self._judged_elsewhere(part)
        notices = [Notice("warn", f"Part {part}: your prediction is judged against your first run after locking it, "
                                  "not these settings.", [judged])] if judged else []
        return PartResult(part, spec.title, spec.predictions[state.prediction], view.observation, view.kind,
                          _frame(view.rows), _figure(view.draw), warnings, notices)

    def _upstream_controls(self, part: str) -> dict[str, dict[str, Any]]:
        """The controls of the parts ``part`` builds on, as this session last ran them."""
        return {dep: dict(self._parts[dep].controls or {}) for dep in self.lab.parts[part].depends_on}

    def _judged_elsewhere(self, part: str) -> str | None:
        """A sentence for the student when the part's current settings are not those its prediction is judged on."""
        state = self._parts[part]
        if state.first_run_controls is None or state.controls is None:
            return None
        first_upstream, upstream = state.first_run_upstream or {}, self._upstream_controls(part)
        if state.first_run_controls == state.controls and first_upstream == upstream:
            return None

        def described(controls: dict[str, Any], built_on: dict[str, dict[str, Any]]) -> str:
            return "; ".join([_settings(controls)] + [f"part {dep}: {_settings(values)}" for dep, values in built_on.items()])

        label = self.lab.parts[part].predictions[state.prediction]
        return (f"Your prediction {label!r} is judged against {described(state.first_run_controls, first_upstream)} "
                f"(your first run after locking it), not {described(state.controls, upstream)}; "
                "capture the settings you want as evidence, but a prediction changed now counts as locked late.")

    def capture(self, part: str, **decision: Any) -> Notice:
        """Keep the part's shown result as evidence (with the decision, for parts that have one) and save."""
        part = self._part(part)
        spec, state = self.lab.parts[part], self._parts[part]
        if state.prediction is None or state.plan is None:
            return Notice("warn", f"Nothing to capture for part {part} yet.",
                          ["Lock a prediction and run the part first: capture keeps exactly the result you were shown."])
        names = [control.name for control in spec.controls if control.decision]
        unknown = sorted(set(decision) - set(names))
        if unknown:
            raise DomainError(f"part {part!r}: lab.capture takes {names or 'no decision'} (unexpected {unknown})")
        if any(_unanswered(decision.get(name)) for name in names):
            choices = "; ".join(f"{name}: {spec.control(name).describe()}" for name in names)
            return Notice("warn", f"Part {part}: choose the decision before capturing.", [choices])
        decided = {name: spec.control(name).check(decision[name], part=part) for name in names}
        plan = state.plan
        if names:
            upstream = {dep: self._parts[dep].plan.result for dep in spec.depends_on}
            plan = self.lab.plan(self.track, part, {**state.controls, **decided}, upstream)
        if LabSpec.arm_inputs(plan.baseline) == LabSpec.arm_inputs(plan.result):
            return Notice("warn", f"Part {part}'s intervention is identical to its baseline.",
                          ["Change a control so the two differ, run the part again, then capture."])
        now = self._stamp()
        record = record_from_plan(self.lab, self.track, plan, state.prediction, mlsysim_version=self._mlsysim,
                                  grader_version=__version__, prediction_locked_at=state.locked_at,
                                  result_shown_at=state.shown_at, captured_at=now)
        problems = self.lab.decision_problems(self.track, part, plan, record)
        if problems:
            return Notice("warn", f"Part {part}'s decision does not follow the lab's rule, so it was not captured.",
                          [message for message, _, _ in problems])
        previous = self._evidence.get(part)
        kept = previous is not None and _same_record(previous, record)
        if not kept:
            self._evidence[part] = record
        self._final[part] = {**state.controls, **decided}
        self.save()
        stale = self._problems(("stale",))
        lines = [f"Prediction {spec.predictions[state.prediction]!r} locked at {state.locked_at:%H:%M:%S} UTC; "
                 f"saved to {self.path.name}. Later control changes cannot rewrite this record."]
        lines += [f"Part {other} is now stale: {message}" for other in self._dependents(part) for message in stale.get(other, [])]
        judged = self._judged_elsewhere(part)
        if judged:
            lines.append(judged)
        title = (f"Part {part} evidence unchanged (already captured with these settings)." if kept
                 else f"Part {part} evidence captured.")
        return Notice("warn" if len(lines) > 1 else "success", title, lines)

    def synthesis(self, **answers: Any) -> Notice:
        """Record the final answers (``...`` leaves one unanswered) and save."""
        fields = SYNTHESIS_FIELDS[self.lab_id]
        unknown = sorted(set(answers) - set(fields))
        if unknown:
            raise DomainError(f"{self.lab_id} synthesis takes {list(fields)} (unexpected {unknown})")
        options = self.synthesis_options()
        values: dict[str, Any] = {}
        for name in fields:
            value = answers.get(name)
            if _unanswered(value):
                values[name] = "" if name == "rationale" else None
                continue
            if name != "rationale" and value not in options[name]:
                allowed = ", ".join(f"{key!r} ({label})" for key, label in options[name].items())
                raise DomainError(f"synthesis: {name} must be one of {allowed} (got {value!r})")
            if name == "rationale" and not isinstance(value, str):
                raise DomainError(f"synthesis: rationale must be text (got {type(value).__name__})")
            values[name] = value
        self._synthesis = Synthesis(**values)
        self.save()
        missing = [name for name in fields if _unanswered(values[name])]
        messages = [f.message for f in self._full_report().public().findings_for("synthesis")]
        if missing:
            return Notice("warn", "Synthesis saved; still to answer: " + ", ".join(missing) + ".", messages)
        return Notice("success" if not messages else "warn", "Synthesis saved.", messages)

    def synthesis_options(self) -> dict[str, dict[str, str]]:
        """Allowed values (value → label) for each closed synthesis answer."""
        options = {"reevaluation_trigger": {c.value: c.label for c in self.lab.triggers},
                   "residual_risk": {c.value: c.label for c in self.lab.limitations}}
        if self.lab_id == "lab07":
            from ..labs.lab07 import RECOMMENDATIONS, REJECTABLE

            options["recommendation"] = {c.value: c.label for c in RECOMMENDATIONS}
            options["rejected_alternative"] = {c.value: c.label for c in RECOMMENDATIONS if c.value in REJECTABLE}
        return options

    def progress(self) -> Progress:
        """Which parts are captured, fresh and contrasting (the grader's own public verdicts)."""
        import pandas as pd

        report = self._full_report().public()
        rows = []
        for part in PARTS:
            findings = report.findings_for(part)
            captured = part in self._evidence
            stale = any(f.criterion == "stale" for f in findings)
            flat = any(f.criterion == "contrast" for f in findings)
            labels = self.lab.parts[part].predictions
            prediction = self._parts[part].prediction
            rows.append({
                "Part": part, "Prediction": labels.get(prediction, "—") if prediction else "—",
                "Captured": "yes" if captured else "no",
                "Fresh": ("STALE" if stale else "yes") if captured else "—",
                "Contrasting": ("no" if flat else "yes") if captured else "—",
                "What to do": findings[0].message if findings else "",
            })
        table = pd.DataFrame(rows)
        ready = all(row["Captured"] == "yes" and row["Fresh"] == "yes" and row["Contrasting"] == "yes" for row in rows)
        return Progress(table, ready)

    def check(self, part: str | None = None) -> GradeReport | PartCheck:
        """The public self-check of the saved bundle: the whole report, or one part (``"synthesis"`` too)."""
        report = self._full_report().public()
        if part is None:
            return report
        if part not in report.parts:
            raise DomainError(f"check takes one of {', '.join(report.parts)} (got {part!r})")
        score = report.parts[part]
        return PartCheck(part, score.score, score.max_score, [(i.item, i.points, i.max_points) for i in score.items],
                         [f.message for f in report.findings_for(part)])

    # -- display -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<LabSession {self.lab_id} track={self.track} captured={sorted(self._evidence)} file={self.path}>"

    def _repr_html_(self) -> str:
        from ._views import header_facts

        facts = "".join(f"<div style='background:#ffffff14;border:1px solid #ffffff26;padding:8px 10px;border-radius:8px'>"
                        f"<b>{html.escape(k)}</b><br>{html.escape(v)}</div>" for k, v in header_facts(self.lab_id, self.track))
        notices = "".join(notice._repr_html_() for notice in self.notices)
        return (f"<section style='background:linear-gradient(135deg,#101827,#1d4f78);color:white;border-radius:12px;"
                f"padding:18px 22px'><div style='font:700 .72rem monospace;letter-spacing:.08em'>VOLUME I · "
                f"{html.escape(self.lab.title.split(' — ')[0].upper())}</div><h2 style='color:white;margin:8px 0'>"
                f"{html.escape(self.lab.title.split(' — ')[-1])}</h2><div style='display:grid;"
                f"grid-template-columns:repeat(auto-fit,minmax(160px,1fr));gap:8px'>{facts}</div></section>"
                f"{notices}<p style='color:#475569'>Evidence is saved to <code>{html.escape(str(self.path))}</code>.</p>")


def _embed(bundle_json: str) -> None:
    """Display the bundle under the grader's MIME type (a no-op outside a kernel or without the glue)."""
    try:
        from ..gradescope._embed import display_bundle
    except ImportError:  # the Otter glue is optional for the notebook API
        return
    display_bundle(bundle_json)


def _same_record(old: EvidenceRecord, new: EvidenceRecord) -> bool:
    """Equal apart from the capture time: re-running a capture cell keeps the original record."""
    drop = {"captured_at"}
    return canonical_dumps(old.model_dump(mode="json", exclude=drop)) == canonical_dumps(new.model_dump(mode="json", exclude=drop))


def _frame(rows: list[dict[str, Any]]):
    import pandas as pd

    return pd.DataFrame(rows)


def _figure(draw: Callable[[Any], None] | None):
    """A matplotlib figure built without pyplot (no global figure registry, no double display)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 3.0), layout="constrained")
    axes = figure.add_subplot()
    if draw is not None:
        draw(axes)
    axes.spines[["top"]].set_visible(False)
    return figure


def open_lab(lab_id: str, track: str, *, directory: str | os.PathLike | None = None) -> LabSession:
    """Start (or continue) a lab on ``track``; the bundle is ``<directory>/<lab>-submission.json``."""
    return _open_lab_with_clock(lab_id, track, _now, directory=directory)


def _open_lab_with_clock(lab_id: str, track: str, clock: Callable[[], datetime], *,
                         directory: str | os.PathLike | None = None) -> LabSession:
    """:func:`open_lab` reading times from ``clock``: for the package's own tests, not part of the API."""
    if _unanswered(track):
        raise DomainError(f"choose a track for {lab_id}: one of 'tinyml', 'mobile', 'edge', 'cloud' (got {track!r})")
    session = LabSession.__new__(LabSession)
    session._open(lab_id, track, submission_path(lab_id, directory), clock)
    return session


# -- Otter tests ------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _grade_bytes(data: bytes) -> GradeReport:
    """Grade bundle bytes; memoised so the tests of one notebook grade its bundle once."""
    from ..api import grade_bundle

    return grade_bundle(data)


def assert_item(lab_id: str, part: str, item: str, *, directory: str | os.PathLike | None = None) -> None:
    """Raise :class:`AssertionError` with the grader's advice unless ``item`` of ``part`` earned full points.

    The Otter tests in the lab notebooks call this on the saved bundle, so each test
    case is one rubric item with the rubric's points.
    """
    path = submission_path(lab_id, directory)
    if not path.exists():
        raise AssertionError(f"No {path.name} next to the notebook: run the notebook's cells (predict, run, capture) first.")
    from ..api import read_bundle_bytes

    try:
        report = _grade_bytes(read_bundle_bytes(path))
    except (BundleFormatError, UnknownLabError, OSError) as exc:
        raise AssertionError(f"{path.name} cannot be graded ({exc}); run the notebook again to rewrite it.") from None
    if report.lab != lab_id:
        raise AssertionError(f"{path.name} is a {report.lab} bundle, expected {lab_id}.")
    scores = report.parts.get(part)
    entry = next((i for i in scores.items if i.item == item), None) if scores else None
    if entry is None:
        raise AssertionError(f"the {lab_id} rubric has no item {item!r} for {part!r}")
    if entry.points < entry.max_points:
        messages = [f.message for f in report.findings if f.part == part and (f.rubric_item == item or f.criterion == "missing")]
        raise AssertionError(" ".join(dict.fromkeys(messages)) or f"{part}: {item} earned {entry.points:g} of {entry.max_points:g} points.")
