"""The student API used by the lab notebooks.

One :class:`LabSession` per notebook holds everything (no module-level mutable state)::

    lab = open_lab("lab07", track="cloud")      # reloads lab07-submission.json if it exists
    lab.scenario("A")                            # the part's scenario in the book's words for the track
    lab.predict("A", "above_75", dispatches=1)   # lock the prediction first (the controls are checked here)
    lab.run("A")                                 # then see the table and chart (the settings predict checked)
    lab.capture("A")                             # keep the evidence; the bundle is saved
    lab.progress()                               # captured / fresh / contrasting per part
    lab.synthesis_options()                      # the closed answers, labelled as the book labels them
    lab.synthesis(recommendation=..., ...)       # the final answers
    lab.report()                                 # the closing "Local evidence report"
    lab.check("A")                               # the public self-check (lab.check(): every public check)
    lab.before_export()                          # what is still missing before hand-in, and what it costs
    lab.export()                                 # that warning, then <lab>_<timestamp>.zip to upload

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
rather than an exception, so "Run all" on a fresh notebook runs to the end.  A
mistake — a value outside the lab's choices or domain, a misspelt track, part or
answer — raises :class:`~mlsys_grader.errors.DomainError` (or
:class:`~mlsys_grader.errors.UnknownLabError` for a track) whose one sentence names
what was wrong, the allowed values and the nearest one; in a notebook that sentence is
all the cell shows (:mod:`._advice`).  Controls are checked as soon as they are set (the
notebook's prediction cell passes them to :meth:`LabSession.predict`) or run, before
anything else, so a wrong value is named even while the prediction is still open.
"""

from __future__ import annotations

import glob
import html
import os
import re
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .._version import __version__
from ..core.capture import book_sealed, record_from_plan
from ..core.embed import bundle_display_data
from ..core.grading import RECAPTURE_CRITERIA
from ..core.jsonio import canonical_dumps
from ..core.labspec import PartPlan
from ..core.models import Bundle, EvidenceRecord, PartRun, Synthesis, load_bundle, part_key, submission_filename
from ..core.report import GradeReport
from ..core.text import visible
from ..errors import BundleFormatError, DomainError, UnknownLabError
from ..labs import Lab, get_lab
from ..replay import Replay
from . import _advice
from ._advice import choices_text, listing, literal, near_miss, refused_choice, refused_control
from ._display import BookText, Notice, Options, PartCheck, PartResult, Progress, SelfCheck, frame
from ._todo import SYNTHESIS_WORDS, to_do

INVISIBLE_NOTE = ("Your rationale holds invisible characters (often left by copying text from elsewhere); "
                  "the grader reads it without them, and your text is saved as you typed it.")


def submission_path(lab_id: str, directory: str | os.PathLike | None = None) -> Path:
    """Where a notebook's bundle lives: ``<directory>/<lab>-submission.json`` (cwd by default)."""
    return Path(directory or ".") / submission_filename(lab_id)


def _now() -> datetime:
    return datetime.now(UTC)


def _settings(controls: dict[str, Any]) -> str:
    """Controls as the notebook's code sets them: ``executions = 10, recompilations = 0``, ``shape = "aligned"``."""
    return ", ".join(f"{name} = {literal(value)}" for name, value in controls.items())


def _unanswered(value: Any) -> bool:
    """``...`` (the student notebook's placeholder), ``None`` and blank text mean "not answered yet"."""
    return value is Ellipsis or value is None or (isinstance(value, str) and not value.strip())


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
    given: dict[str, Any] | None = None  # the controls this session's last lab.predict checked: what lab.run(part) runs

    def lock(self, choice: str, at: datetime) -> None:
        """A new prediction: what it is judged against is the next run, so the first run is forgotten."""
        self.prediction, self.locked_at = choice, at
        self.first_run_controls = self.first_run_upstream = self.first_run_at = None

    def log(self) -> PartRun | None:
        if self.prediction is None and self.shown_at is None:
            return None
        return PartRun(prediction=self.prediction, prediction_locked_at=self.locked_at, first_shown_at=self.shown_at,
                       first_run_controls=self.first_run_controls, first_run_at=self.first_run_at,
                       first_run_upstream=None if self.first_run_upstream is None else
                       {part_key(dep): values for dep, values in self.first_run_upstream.items()})

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

        self.lab: Lab = get_lab(lab_id)
        if track not in self.lab.tracks:
            raise UnknownLabError(f"TRACK must be one of {choices_text(self.lab.tracks)}; you set {literal(track)}"
                                  f"{near_miss(track, self.lab.tracks)}", lab=lab_id, track=track, known=self.lab.tracks)
        self.lab_id, self.track, self.path, self._clock = lab_id, track, path, clock
        self._last: datetime | None = None
        self._mlsysim = mlsysim_version()
        self.replay = Replay()
        """This session's own replay service (live): its runs and its self-checks share its evaluations."""
        self._parts = {part: _PartState() for part in self.lab.part_ids()}
        self._evidence: dict[str, EvidenceRecord] = {}
        self._final: dict[str, dict[str, Any]] = {}
        self._synthesis = Synthesis()
        self._saved: Bundle | None = None
        self._embedded: str | None = None
        self._report: tuple[str, GradeReport] | None = None
        self._told_invisible = False  # the notice about invisible characters is given once per session
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
        # Records of an older schema carry the book's seal from here on (the bundle this session saves is the current schema).
        self._evidence = {part: book_sealed(self.lab, bundle.read_version, record) for part, record in bundle.evidence.items()}
        self._final = {part: dict(values) for part, values in bundle.controls.items()}
        self._synthesis = bundle.synthesis
        for part, record in self._evidence.items():  # a version 1 bundle has only its records' times
            if part not in self._parts:  # a part this lab does not have: the grader reports it
                continue
            state = self._parts[part]
            state.prediction, state.locked_at, state.shown_at = record.prediction, record.prediction_locked_at, record.result_shown_at
        for part, run in bundle.runs.items():
            if part in self._parts:
                self._parts[part].restore(run)
        for part, state in self._parts.items():
            if state.prediction not in self.lab.parts[part].predictions:  # not one of the lab's choices: no lock
                state.prediction = state.locked_at = None
        self._last = _latest(*(moment for run in bundle.runs.values()
                               for moment in (run.prediction_locked_at, run.first_shown_at, run.first_run_at)),
                             *(moment for record in self._evidence.values()
                               for moment in (record.prediction_locked_at, record.result_shown_at, record.captured_at)))
        self._saved = bundle
        captured = sorted(self._evidence)
        done = (f"captured part{'s' if len(captured) > 1 else ''} {', '.join(captured)}" if captured
                else "no part captured yet")
        self.notices.append(Notice("info", f"Continuing from {self.path.name}: {done}.",
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
        return Bundle(lab=self.lab_id, track=self.track,
                      controls={part_key(p): dict(c) for p, c in sorted(self._final.items())},
                      evidence={part_key(p): record for p, record in sorted(self._evidence.items())},
                      synthesis=self._synthesis, runs={part_key(p): log for p, log in runs.items()},
                      mlsysim_version=self._mlsysim, grader_version=__version__, created_at=self._clock()).sealed()

    def save(self) -> Path:
        """Write the bundle next to the notebook (atomically) and return its path.

        When the content changed, the bundle is also displayed as a notebook output
        (:mod:`mlsys_grader.core.embed`), so a bare ``.ipynb`` upload still carries it.
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
            self._report = (key, grade_bundle(bundle, replay=self.replay))
        return self._report[1]

    def _problems(self, criteria: tuple[str, ...] = RECAPTURE_CRITERIA) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for finding in self._full_report().public().findings:
            if finding.criterion in criteria:
                found.setdefault(finding.part, []).append(finding.message)
        return found

    # -- validation (every message names what was wrong, the allowed values, the nearest one) --
    def _part(self, part: Any, verb: str = "run") -> str:
        parts = self.lab.part_ids()
        if part not in parts:
            raise DomainError(f"lab.{verb} takes a part from {choices_text(parts)}; you gave {literal(part)}"
                              f"{near_miss(part, parts)}", allowed=parts, got=part)
        return part

    def _dependents(self, part: str) -> list[str]:
        """Parts whose evidence builds on ``part`` (Lab 11: D on C), directly or not."""
        found: list[str] = []
        for other in self.lab.part_ids():
            depends = self.lab.parts[other].depends_on
            if part in depends or any(dep in found for dep in depends):
                found.append(other)
        return found

    def _prediction_choices(self, part: str) -> str:
        return choices_text(self.lab.parts[part].predictions)

    def _checked(self, part: str, name: str, value: Any) -> Any:
        """``value`` for the control ``name`` of ``part``, normalised; a :class:`DomainError` in the notebook's words if not allowed."""
        control = self.lab.parts[part].control(name)
        try:
            return control.check(value, part=part)
        except DomainError as exc:
            raise refused_control(exc, control, part=part, value=value) from None

    def _names(self, part: str, given: dict[str, Any], expected: list[str], verb: str) -> None:
        """Refuse a call whose keyword names are not exactly ``expected`` (an edited cell), naming the difference."""
        unknown = [name for name in given if name not in expected]
        missing = [name for name in expected if name not in given]
        if unknown:
            takes = listing(expected, "and") if expected else "no settings"
            raise DomainError(f"Part {part}: lab.{verb} takes {takes}; {listing(unknown, 'and')} "
                              f"{'is' if len(unknown) == 1 else 'are'} not one of them{near_miss(unknown[0], expected, names=True)}",
                              part=part, control=unknown[0], allowed=expected, got=tuple(unknown))
        if missing:
            raise DomainError(f"Part {part}: lab.{verb} also needs {listing(missing, 'and')} "
                              f"(set {'it' if len(missing) == 1 else 'them'} in the part's cell, as the notebook does).",
                              part=part, control=missing[0], allowed=expected, got=tuple(given))

    # -- the student's verbs -------------------------------------------------------------
    def scenario(self, part: str) -> BookText | None:
        """The part's scenario in the book's words for this track (None when it reads the same on every track)."""
        text = self.lab.scenario(self.track, self._part(part, "scenario"))
        return BookText(text) if text else None

    def predict(self, part: str, choice: Any, **controls: Any) -> Notice:
        """Lock ``choice`` as the part's prediction (before its result is shown).

        The notebook passes the part's controls too, so a value that is not allowed is
        named in the cell where it is set; they are only checked here (the prediction is
        judged against the first run after the lock, whatever its settings).
        """
        part = self._part(part, "predict")
        spec, state = self.lab.parts[part], self._parts[part]
        state.given = None  # a refused value must not leave the previous settings for lab.run(part) to run
        if controls:
            names = [control.name for control in spec.controls if not control.decision]
            self._names(part, controls, names, "predict")
            state.given = {name: self._checked(part, name, controls[name]) for name in names}
        if _unanswered(choice):
            return Notice("warn", f"Part {part}: no prediction yet.",
                          [f"{spec.question} Set prediction_{part} to one of {self._prediction_choices(part)}."])
        if not isinstance(choice, str) or choice not in spec.predictions:
            raise refused_choice(f"Part {part}: ", f"prediction_{part}", spec.predictions, choice, part=part,
                                 control=f"prediction_{part}")
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

        Without ``controls`` (the notebook's run cell) the part runs with the controls its
        prediction cell last passed to :meth:`predict` in this session, so the run cell names
        no variable a student could run it without.  The controls are checked first (a wrong
        value is named at once); the result itself is refused (with a :class:`Notice`) until
        the part's prediction is locked.
        """
        part = self._part(part, "run")
        spec, state = self.lab.parts[part], self._parts[part]
        names = [control.name for control in spec.controls if not control.decision]
        if not controls and names:
            if state.given is None:
                return Notice("warn", f"Part {part}: run the part's controls cell above first.",
                              [f"It sets {listing(names, 'and')} and locks prediction_{part}; if it stopped with a "
                               "message, fix the value it names and run it again, then this cell."])
            controls = dict(state.given)
        self._names(part, controls, names, "run")
        checked = {name: self._checked(part, name, controls[name]) for name in names}
        if state.prediction is None:
            return Notice("warn", f"Part {part}'s result stays hidden until you lock a prediction.",
                          [f"Set prediction_{part} to one of {self._prediction_choices(part)} and run that cell first; "
                           f"lab.predict({part!r}, choice) locks it."])
        upstream = {}
        for dependency in spec.depends_on:
            built = self._parts[dependency].plan
            if built is None:
                return Notice("warn", f"Run part {dependency} first.",
                              [f"Part {part} builds on part {dependency}'s selected result, so run part {dependency} in this session before part {part}."])
            upstream[dependency] = built.result
        decisions = {control.name: self._final.get(part, {}).get(control.name) for control in spec.controls if control.decision}
        state.plan = self.lab.plan(self.replay, self.track, part, {**checked, **{k: None for k in decisions}}, upstream)
        state.controls = checked
        now = self._stamp()
        if state.shown_at is None:
            state.shown_at = now
        if state.first_run_controls is None:
            state.first_run_controls, state.first_run_at = dict(checked), now
            state.first_run_upstream = self._upstream_controls(part) or None
        self._final[part] = {**checked, **decisions}
        self.save()
        view = self.lab.view(self.track, part, state.plan)
        problems = self._problems()
        warnings = problems.get(part, []) + [f"Part {other} is stale: {message}" for other in self._dependents(part)
                                             for message in problems.get(other, []) if other in self._evidence]
        judged = self._judged_elsewhere(part)
        notices = [Notice("warn", f"Part {part}: your prediction is judged against your first run after locking it, "
                                  "not these settings.", [judged])] if judged else []
        return PartResult(part, spec.title, spec.predictions[state.prediction], view.observation, view.kind,
                          frame(list(view.rows)), _figure(view.draw), warnings, notices)

    def _upstream_controls(self, part: str) -> dict[str, dict[str, Any]]:
        """The controls of the parts ``part`` builds on, as this session last ran them."""
        return {dep: dict(self._parts[dep].controls or {}) for dep in self.lab.parts[part].depends_on}

    def _judged_elsewhere(self, part: str) -> str | None:
        """A sentence for the student when the part's current settings are not those its prediction is judged on."""
        state = self._parts[part]
        if state.first_run_controls is None or state.controls is None or state.prediction is None:
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

    def _decision_labels(self, part: str, name: str) -> dict[Any, str]:
        control = self.lab.parts[part].control(name)
        labels = self.lab.decision_labels.get((part, name), {})
        return {value: labels.get(value, "") for value in control.choices if value is not None}

    def capture(self, part: str, **decision: Any) -> Notice:
        """Keep the part's shown result as evidence (with the decision, for parts that have one) and save."""
        part = self._part(part, "capture")
        spec, state = self.lab.parts[part], self._parts[part]
        names = [control.name for control in spec.controls if control.decision]
        unknown = [name for name in decision if name not in names]
        if unknown:
            self._names(part, decision, names, "capture")
        for name in names:  # a decision is checked as soon as it is given, like a control
            if not _unanswered(decision.get(name)) and decision[name] not in self._decision_labels(part, name):
                raise refused_choice(f"Part {part}: ", name, self._decision_labels(part, name), decision[name], part=part,
                                     control=name)
        if state.prediction is None or state.plan is None or state.controls is None:
            return Notice("warn", f"Nothing to capture for part {part} yet.",
                          ["Lock a prediction and run the part first: capture keeps exactly the result you were shown."])
        if any(_unanswered(decision.get(name)) for name in names):
            choices = "; ".join(f"{name}: one of {choices_text(self._decision_labels(part, name))}" for name in names)
            return Notice("warn", f"Part {part}: choose the decision before capturing.", [choices])
        decided = {name: spec.control(name).check(decision[name], part=part) for name in names}
        plan = state.plan
        if names:
            upstream = {dep: built.result for dep in spec.depends_on if (built := self._parts[dep].plan) is not None}
            plan = self.lab.plan(self.replay, self.track, part, {**state.controls, **decided}, upstream)
        if Lab.arm_inputs(plan.baseline) == Lab.arm_inputs(plan.result):
            return Notice("warn", f"Part {part}'s intervention is identical to its baseline.",
                          ["Change a control so the two differ, run the part again, then capture."])
        now = self._stamp()
        record = record_from_plan(self.lab, self.track, plan, state.prediction, mlsysim_version=self._mlsysim,
                                  grader_version=__version__, prediction_locked_at=state.locked_at,
                                  result_shown_at=state.shown_at, captured_at=now)
        problems = self.lab.decision_problems(self.track, part, plan, record)
        if problems:
            return Notice("warn", f"Part {part}'s decision does not follow the lab's rule, so it was not captured.",
                          [problem.message for problem in problems])
        previous = self._evidence.get(part)
        kept = previous is not None and _same_record(previous, record)
        if not kept:
            self._evidence[part] = record
        self._final[part] = {**state.controls, **decided}
        self.save()
        stale = self._problems(("stale",))
        where = f"already in {self.path.name}" if kept else f"saved to {self.path.name}"
        lines = [f"Prediction {spec.predictions[state.prediction]!r} locked at {state.locked_at:%H:%M:%S} UTC; "
                 f"{where}. Later control changes cannot rewrite this record."]
        lines += [f"Part {other} is now stale: {message}" for other in self._dependents(part) for message in stale.get(other, [])]
        judged = self._judged_elsewhere(part)
        if judged:
            lines.append(judged)
        title = (f"Part {part} evidence unchanged (already captured with these settings)." if kept
                 else f"Part {part} evidence captured.")
        return Notice("warn" if len(lines) > 1 else "success", title, lines)

    def synthesis(self, **answers: Any) -> Notice:
        """Record the final answers (``...`` leaves one unanswered) and save."""
        fields = self.lab.synthesis_fields
        unknown = [name for name in answers if name not in fields]
        if unknown:
            raise DomainError(f"The {self.lab_id} synthesis takes {listing(fields, 'and')}; {listing(unknown, 'and')} "
                              f"{'is' if len(unknown) == 1 else 'are'} not one of them{near_miss(unknown[0], fields, names=True)}",
                              part="synthesis", control=unknown[0], allowed=fields, got=tuple(unknown))
        options = self.synthesis_options()
        values: dict[str, Any] = {}
        for name in fields:
            value = answers.get(name)
            if _unanswered(value):
                values[name] = "" if name == "rationale" else None
                continue
            if name != "rationale" and (not isinstance(value, str) or value not in options[name]):
                raise refused_choice("Synthesis: ", name, options[name], value, part="synthesis", control=name)
            if name == "rationale" and not isinstance(value, str):
                raise DomainError(f"Synthesis: the rationale must be text in quotes; you set {literal(value)}.",
                                  part="synthesis", control=name, got=value)
            values[name] = value
        self._synthesis = Synthesis(**values)  # kept as typed; grading reads it as every reader does
        self.save()
        missing = [name for name in fields if _unanswered(values[name])]
        messages = to_do(self._full_report().public().findings_for("synthesis"))
        if not self._told_invisible and visible(self._synthesis.rationale or "").had_invisible:
            self._told_invisible = True
            messages.insert(0, INVISIBLE_NOTE)
        if missing:  # the lines say what each missing answer needs, once each: the title only counts them
            return Notice("warn", f"Synthesis saved, with {len(missing)} of {len(fields)} answers still to give.", messages)
        return Notice("success" if not messages else "warn", "Synthesis saved.", messages)

    def synthesis_options(self) -> Options:
        """Allowed values (value → label) for each closed synthesis answer, labelled as the book labels them on this track."""
        def labelled(what: str, choices) -> dict[str, str]:
            return {c.value: self.lab.option_label(what, c.value, self.track, c.label) for c in choices}

        options = Options()
        for name, choices in self.lab.synthesis_choices().items():
            options[name] = labelled(name, choices)
        return options

    def progress(self) -> Progress:
        """Which parts are captured, fresh and contrasting (the grader's own public verdicts)."""
        report = self._full_report().public()
        rows: list[Mapping[str, Any]] = []
        for part in self.lab.part_ids():
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
        table = frame(rows)
        ready = all(row["Captured"] == "yes" and row["Fresh"] == "yes" and row["Contrasting"] == "yes" for row in rows)
        return Progress(table, ready)

    def check(self, part: str | None = None) -> SelfCheck | PartCheck:
        """The public self-check of the saved bundle: every public check (labelled as such, never as the grade), or one part (``"synthesis"`` too)."""
        full = self._full_report()
        report = full.public()
        if part is None:
            return SelfCheck(**report.model_dump(), hidden_points=full.max_score - report.max_score)
        if part not in report.parts:
            raise DomainError(f"lab.check takes {choices_text(list(report.parts))}, or nothing for every part; you gave "
                              f"{literal(part)}{near_miss(part, list(report.parts))}", allowed=list(report.parts), got=part)
        score = report.parts[part]
        return PartCheck(part, score.score, score.max_score,
                         [(i.item, i.points, i.max_points) for i in score.items],
                         to_do(report.findings_for(part)))

    def missing(self) -> Notice | None:
        """What is still missing or wrong before hand-in, in one sentence with what it costs; ``None`` when nothing is.

        Missing means a part without captured evidence and a synthesis answer not given (the cost: the points those
        parts and the synthesis earn nowhere today, hidden items included); wrong, a part whose evidence is stale
        and a rationale below the rubric's minimum length (the cost: the points the public checks take for it).
        """
        full = self._full_report()
        uncaptured = [part for part in self.lab.part_ids() if part not in self._evidence]
        gaps = [f"part {uncaptured[0]}"] if len(uncaptured) == 1 else [f"parts {listing(uncaptured, 'and')}"] if uncaptured else []
        answers = self._synthesis.model_dump()
        unanswered = [SYNTHESIS_WORDS.get(name, name) for name in self.lab.synthesis_fields if _unanswered(answers.get(name))]
        if unanswered:
            gaps.append(f"the synthesis's {listing(unanswered, 'and')}")
        places = uncaptured + (["synthesis"] if unanswered else [])
        cost = sum(full.parts[place].max_score - full.parts[place].score for place in places if place in full.parts)
        public = full.public()
        problems = []
        for part in sorted({f.part for f in public.findings if f.criterion == "stale" and f.part not in places}):
            items = {i for f in public.findings_for(part) if f.criterion == "stale" for i in (f.rubric_item, *f.also_costs) if i}
            lost = sum(i.max_points - i.points for i in public.parts[part].items if i.item in items)
            problems.append(f"part {part} is stale (its evidence no longer matches your final settings; recapture it: "
                            f"{lost:g} points)")
            cost += lost
        short = next((f for f in public.findings if f.rubric_item == "rationale_length"), None)
        if short is not None and "synthesis" not in places:
            lost = sum(i.max_points - i.points for i in public.parts["synthesis"].items if i.item.startswith("rationale"))
            problems.append(f"your rationale has {short.actual} word{'' if short.actual == 1 else 's'}, below the "
                            f"{short.expected} asked ({lost:g} points)")
            cost += lost
        if not gaps and not problems:
            return None
        said = [f"Still missing: {listing(gaps, 'and')}"] if gaps else []
        said += [problem[0].upper() + problem[1:] if not said and i == 0 else problem for i, problem in enumerate(problems)]
        return Notice("warn", f"{'; '.join(said)}; as it stands that costs {cost:g} of the {full.max_score:g} points.",
                      [])  # one sentence: the export cell shows nothing else of ours

    def before_export(self) -> None:
        """The export cell's warning: show :meth:`missing` (nothing when the submission is complete)."""
        notice = self.missing()
        if notice is None:
            return
        try:
            from IPython.display import display
        except ImportError:  # plain Python: print the sentence
            print(notice.title)
            return
        display(notice)

    def export(self, notebook: str | os.PathLike | None = None) -> Notice:
        """The export cell: say what is still missing (:meth:`before_export`), then write the zip to upload.

        The zip is ``<lab>_<timestamp>.zip`` next to the bundle, in the layout of Otter's export (which every route
        that grades reads: the Gradescope autograder, ``mlsys-grader grade`` and ``check``): the notebook as saved on
        disk (``<lab>.ipynb`` beside the bundle unless ``notebook`` names another file), the saved ``<lab>-submission.json`` and
        ``__zip_filename__``.  Otter's ``.OTTER_LOG`` is not written: it is a pickle the grader never loads (the
        autograder grades the bundle, with ``grade_from_log`` off, and sets an uploaded log aside unread).
        A notebook older than the bundle was not saved after the latest change: the zip is still made (the grade
        is the bundle's), and the returned notice says so and what to do.
        """
        gaps = self.missing()
        self.before_export()
        bundle = self.path
        if not bundle.is_file():
            return Notice("warn", f"Nothing to export yet: {bundle.name} is written when you lock your first prediction; "
                                  "run the cells from the top first.")
        source = bundle.parent / (notebook if notebook is not None else f"{self.lab_id}.ipynb")  # a relative name: beside the bundle
        try:
            saved = source.read_bytes()
        except OSError:
            saved = b""
        if not saved.strip():
            return Notice("warn", f"No saved notebook {source.name} next to {bundle.name} in {bundle.parent.resolve()}: save "
                                  f"the notebook there (File > Save), or pass its file name (lab.export(\"my-{self.lab_id}.ipynb\")), "
                                  "then run this cell again.")
        unsaved = source.stat().st_mtime_ns < bundle.stat().st_mtime_ns
        evidence = bundle.read_bytes()
        stamp = self._clock().astimezone().strftime("%Y_%m_%dT%H_%M_%S_%f")  # Otter's export name: <lab>_<timestamp>.zip
        target = bundle.with_name(f"{self.lab_id}_{stamp}.zip")
        temporary = target.with_name(target.name + ".tmp")
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(source.name, saved)
            archive.writestr(bundle.name, evidence)
            archive.writestr("__zip_filename__", target.name)
        os.replace(temporary, target)
        if unsaved:
            return Notice("warn", f"{source.name} on disk is older than {bundle.name}: the notebook was not saved after your "
                                  f"latest work. Save it (File > Save) and run this cell again; {target.name} holds your "
                                  "evidence as it is now, but the notebook as last saved.")
        if gaps is not None:
            return Notice("warn", f"Exported {target.name} (your notebook and {bundle.name}), with what is listed above still "
                                  "to do: fix it and export again, or upload this zip knowing what it costs.")
        still = self._points_to_earn()
        if still:
            total = sum(lost for _, lost in still)
            named = listing([f"{where} ({lost:g})" for where, lost in still], "and")
            return Notice("warn", f"Exported {target.name} (your notebook and {bundle.name}); the public checks still find "
                                  f"{total:g} point{'' if total == 1 else 's'} to earn: {named}. lab.check() says what to do "
                                  "for each: fix it and export again, or upload this zip knowing what it costs.")
        return Notice("success", f"Exported {target.name} (your notebook and {bundle.name}): upload that zip as it is.")

    def _points_to_earn(self) -> list[tuple[str, float]]:
        """Each public rubric item the saved bundle does not earn in full (none held for staff review), as "part A
        contrast" or "the synthesis's rationale cites evidence", with the points it still costs."""
        check = self.check()
        assert isinstance(check, SelfCheck)
        still = []
        for name, part in check.parts.items():
            for item in part.items:
                if not item.held and item.points < item.max_points:
                    where = "the synthesis's" if name == "synthesis" else f"part {name}'s"
                    still.append((f"{where} {item.item.replace('_', ' ')}", item.max_points - item.points))
        return still

    def report(self):
        """The closing "Local evidence report", as the book's lab ends: objectives, each part's choices, evidence and
        decision, the synthesis and the takeaways — built from the saved bundle."""
        from ._report import evidence_report

        return evidence_report(self)

    # -- display -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<LabSession {self.lab_id} track={self.track} captured={sorted(self._evidence)} file={self.path}>"

    def _repr_html_(self) -> str:
        facts = "".join(f"<div style='background:#ffffff14;border:1px solid #ffffff26;padding:8px 10px;border-radius:8px'>"
                        f"<b>{html.escape(k)}</b><br>{html.escape(v)}</div>" for k, v in self.lab.header_facts(self.track))
        notices = "".join(notice._repr_html_() for notice in self.notices)
        return (f"<section style='background:linear-gradient(135deg,#101827,#1d4f78);color:white;border-radius:12px;"
                f"padding:18px 22px'><div style='font:700 .72rem monospace;letter-spacing:.08em'>VOLUME I · "
                f"{html.escape(self.lab.title.split(' — ')[0].upper())}</div><h2 style='color:white;margin:8px 0'>"
                f"{html.escape(self.lab.title.split(' — ')[-1])}</h2><div style='display:grid;"
                f"grid-template-columns:repeat(auto-fit,minmax(160px,1fr));gap:8px'>{facts}</div></section>"
                f"{notices}<p style='color:#475569'>Evidence is saved to <code>{html.escape(str(self.path))}</code>.</p>")


def _embed(bundle_json: str) -> None:
    """Display the bundle under the grader's MIME type, silently (a no-op outside a kernel).

    The bundle rides along in the notebook so a bare ``.ipynb`` upload still carries it
    (the format is :mod:`mlsys_grader.core.embed`); renderers that do not know the type show
    its ``text/plain`` fallback, which is left empty: the cell's own notice says what was
    saved, and only when something was.
    """
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: nothing to embed into
        return
    if get_ipython() is None:
        return
    display(bundle_display_data(bundle_json, summary=False), raw=True)


def _same_record(old: EvidenceRecord, new: EvidenceRecord) -> bool:
    """Equal apart from the capture time: re-running a capture cell keeps the original record."""
    drop = {"captured_at"}
    return canonical_dumps(old.model_dump(mode="json", exclude=drop)) == canonical_dumps(new.model_dump(mode="json", exclude=drop))


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
    _advice.install()  # from here on, a mistake in a notebook cell shows as its advice, not a traceback
    if _unanswered(track):
        tracks = get_lab(lab_id).tracks
        raise DomainError(f"Choose a track first: set TRACK to one of {choices_text(tracks)}.", control="TRACK", allowed=tracks,
                          got=track)
    session = LabSession.__new__(LabSession)
    session._open(lab_id, track, submission_path(lab_id, directory), clock)
    return session
