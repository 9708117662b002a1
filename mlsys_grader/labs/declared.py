"""A lab: its declaration (``lab.toml``) and its code (``judge.py``, ``views.py``, ``evaluate.py``), with every rule
the labs share.

:func:`load_lab` reads the package's :class:`~.spec.LabSpec` and builds the :class:`Lab` the core grades with.  The
lab's code says only what the spec cannot; everything else is here, once:

* evaluation (the book's ``replay``, or the lab's ``evaluate.arm`` where it shapes its arms; ``evaluate`` is loaded on
  first use, the only module importing mlsysim);
* planning (the judge's ``arm_inputs``, each arm evaluated through the replay service, the decision from the declared
  hold), controls read back from a record, the book's seal as declared, build variants;
* the declared capture gates and synthesis rules (:func:`declared_synthesis_problems`);
* the closed answers, their terms and the evidence walker (:mod:`.evidence`);
* ``solve``'s controls, decisions and synthesis, and the hand-written answers (``answers.toml``, left out of what
  students install);
* the marimo export's layout, from the declared field names.

What the judge must define (:class:`~mlsys_grader.core.roles.LabCode`): ``arm_inputs`` and ``displayed_prediction``.
What it may define, each where its lab differs: ``accepted_predictions``, ``infer_controls``, ``decide``,
``model_key``, ``decision_problems``, ``more_synthesis_problems``, ``synthesis_problems`` (replacing the declared
rules), ``contrast``, ``decision_options`` (or ``complete_decision``, when a decision sets more than one control),
``reference_choices``, ``reference_rationale``, ``reference_synthesis``, ``synthesis_choices``, ``final_choice_terms``,
``evidence_quantities``, ``marimo_binding`` (required with ``[marimo]``), ``marimo_answers``,
``marimo_decision_copies``, ``marimo_missing``; its views ``view_a`` … ``view_e``, ``track_facts`` and
``captured_decision``.  ``docs/adding-a-lab.md`` says what each is for.
"""

from __future__ import annotations

import dataclasses
import importlib
import random
import tomllib
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any, final

from ..core.labspec import (
    ArmInputs,
    Choice,
    ChoiceTerms,
    Control,
    InferredControls,
    LabText,
    MarimoLayout,
    NotebookText,
    PartPlan,
    PartSpec,
    PartText,
    Problem,
    RecordedArms,
    View,
    arm_inputs,
    default_master_path,
    default_synthesis_choices,
    hand_written_answers,
)
from ..core.models import part_key
from ..core.seal import book_seal
from ..core.values import BuildVariant
from ..errors import DomainError
from . import evidence
from .spec import SPEC_FILE, LabSpec, MarimoSpec, OptionSpec, load_spec

if TYPE_CHECKING:
    from ..core.models import Bundle, EvidenceRecord
    from ..core.replayer import Replayer

ANSWERS_FILE = "answers.toml"
"""The lab's hand-written reference answers (track → synthesis answers): solutions, left out of every build a student
or a submission's code can read (:data:`mlsys_grader.staff._packaging.LAB_ANSWERS`)."""


def _hook(module: ModuleType | None, name: str) -> Callable[..., Any] | None:
    found = getattr(module, name, None)
    return found if callable(found) else None


def choice_of(option: OptionSpec) -> Choice:
    return Choice(option.value or option.label, option.label, tuple(option.keywords), phrasings=tuple(option.phrasings),
                  decisive=tuple(option.decisive))


def part_specs(spec: LabSpec) -> dict[str, PartSpec]:
    """The core's :class:`PartSpec` of each declared part, in notebook order."""
    parts = {}
    for letter, part in spec.parts.items():
        controls = tuple(Control(c.name, c.label, c.kind, c.default, choices=spec.menu(letter, c.name), minimum=c.minimum,
                                 maximum=c.maximum, step=c.step, decision=c.decision) for c in part.controls)
        predictions = spec.predictions(letter)  # every track's options: the track's own are checked when it plans
        parts[letter] = PartSpec(letter, part.title, part.question, controls, MappingProxyType(predictions),
                                 depends_on=tuple(part.depends_on), has_decision=part.decision is not None)
    return parts


def lab_text(spec: LabSpec) -> LabText:
    text = spec.text
    notebook = None
    if text.notebook is not None:
        n = text.notebook
        notebook = NotebookText(n.title, n.framing, {letter: PartText(p.heading, p.scenario, p.notes)
                                                       for letter, p in n.parts.items()},
                                n.synthesis, decision_text=dict(n.decision_text), labels=dict(n.labels))
    return LabText(notebook=notebook, scenarios=MappingProxyType(dict(text.scenarios)),
                   track_labels=MappingProxyType({(t.what, t.value): MappingProxyType(dict(t.labels))
                                                  for t in text.track_labels}),
                   decision_labels=MappingProxyType({(t.what, t.value): MappingProxyType(dict(t.labels))
                                                     for t in text.decision_labels}),
                   learning_objectives=tuple(text.learning_objectives), big_takeaways=tuple(text.big_takeaways),
                   source_trace=text.source_trace)


def read_controls(spec: LabSpec, part: str, record: EvidenceRecord) -> InferredControls | None:
    """The controls a record's result arm was built from, read back by name (the decision from the record), or None:
    for a part whose result inputs hold every control under its own name."""
    result_inputs = arm_inputs(record.result) if record.result else None
    if not isinstance(result_inputs, Mapping):
        return None
    declared = spec.parts[part]
    decision = declared.decision.control if declared.decision is not None else None
    names = [control.name for control in declared.controls if control.name != decision]
    if not all(name in result_inputs for name in names):
        return None
    controls = {name: result_inputs[name] for name in names}
    if decision is not None:
        controls[decision] = record.decision
    return InferredControls(controls, {})


def gate_problems(spec: LabSpec, part: str, record: EvidenceRecord) -> list[Problem]:
    """The part's capture gate, on the record's inputs and result: two inputs that must differ (Lab 05 E's choice and
    rejected option, Lab 05 C's batch and 1), or a computed result the capture requires (Lab 13 E's changed trace)."""
    gate = spec.parts[part].gate
    if gate is None:
        return []
    inputs = record.inputs if isinstance(record.inputs, Mapping) else {}
    if gate.kind == "differs":
        first = inputs.get(gate.first)
        second = inputs.get(gate.second) if isinstance(gate.second, str) and gate.second in inputs else gate.second
        if first != second:
            return []
        return [Problem(gate.message or f"Part {part} is captured only when {gate.first} differs from {gate.second}.",
                        f"{gate.first} != {second!r}", first, "decision.gate")]
    result = record.result if isinstance(record.result, Mapping) else {}
    found = {field: result.get(field) for field in gate.result}
    if found == gate.result:
        return []
    wanted = ", ".join(f"{field} {value!r}" for field, value in gate.result.items())
    return [Problem(gate.message or f"Part {part} is captured only when its result has {wanted}.", dict(gate.result), found,
                    "decision.gate")]


def _message(spec: LabSpec, code: str, default: str) -> str:
    problem = spec.problems.get(code)
    return problem.message if problem is not None else default


def _expected(spec: LabSpec, code: str, default: Any) -> Any:
    problem = spec.problems.get(code)
    return problem.expected if problem is not None and problem.expected is not None else default


def _recommendation_part_problems(spec: LabSpec, bundle: Bundle) -> list[Problem]:
    """The recommendation is the decision saved in the declared part (a field of it, for a dict decision), when it is one
    of the listed options (an unlisted one is named already); on a hold, the rejected alternative is the one that part
    tested (its declared ``alternative_control``, Lab 08 E)."""
    s, rule = bundle.synthesis, spec.synthesis
    letter = str(rule.recommendation_part)
    record = bundle.evidence.get(part_key(letter))
    saved = record.decision if record is not None else None
    if rule.decision_field is not None:
        saved = saved.get(rule.decision_field) if isinstance(saved, Mapping) else None
    listed = [choice.value for choice in options(spec, "recommendation")]
    if record is None and "synthesis.recommendation_part_missing" in spec.problems:  # a lab that words it apart (Lab 02)
        return [Problem(_message(spec, "synthesis.recommendation_part_missing", ""), f"part {letter} decision", None,
                        "synthesis.recommendation_part_missing")]
    if (not listed or s.recommendation in listed) and s.recommendation != saved:
        message = _message(spec, "synthesis.recommendation_not_decision",
                           f"The recommendation must be part {letter}'s saved decision.")
        return [Problem(message.format(decision=saved), saved, s.recommendation, "synthesis.recommendation_not_decision")]
    decision = spec.parts[letter].decision
    if record is None or decision is None or decision.alternative_control is None or s.recommendation not in decision.hold:
        return []
    tested = record.inputs.get(decision.alternative_control) if isinstance(record.inputs, Mapping) else None
    if s.rejected_alternative == tested:
        return []
    return [Problem(_message(spec, "synthesis.hold_rejected_untested",
                             f"On a hold, reject the alternative part {letter} tested."), tested, s.rejected_alternative,
                    "synthesis.hold_rejected_untested")]


def options(spec: LabSpec, what: str) -> tuple[Choice, ...]:
    return tuple(choice_of(option) for option in spec.options.get(what, ()))


def declared_synthesis_problems(spec: LabSpec, bundle: Bundle,
                                more: Callable[[LabSpec, Bundle], list[Problem]] | None = None) -> list[Problem]:
    """The declared synthesis rules: a listed recommendation, a listed rejected alternative different from it, the lab's
    own rules (``more``), "hold" only after the declared part held, a listed trigger and limitation."""
    s = bundle.synthesis
    problems: list[Problem] = []
    rule = spec.synthesis
    if "recommendation" in spec.options:
        values = [choice.value for choice in options(spec, "recommendation")]
        if s.recommendation not in values:
            problems.append(Problem(_message(spec, "synthesis.recommendation_unlisted", "Choose a recommendation."),
                                    values, s.recommendation, "synthesis.recommendation_unlisted"))
        rejectable = rule.rejectable or values
        if s.rejected_alternative not in rejectable:
            problems.append(Problem(_message(spec, "synthesis.rejected_unlisted", "Choose the alternative you reject."),
                                    list(rejectable), s.rejected_alternative, "synthesis.rejected_unlisted"))
        elif s.recommendation == s.rejected_alternative:
            problems.append(Problem(_message(spec, "synthesis.rejected_equals_recommended",
                                             "The rejected alternative must differ from the recommendation."),
                                    _expected(spec, "synthesis.rejected_equals_recommended", "a different option"),
                                    s.rejected_alternative, "synthesis.rejected_equals_recommended"))
    if rule.recommendation_part is not None:
        problems += _recommendation_part_problems(spec, bundle)
    if rule.rejected_input is not None:
        letter, _, name = rule.rejected_input.partition(".")
        tested = bundle.evidence.get(part_key(letter))
        alternative = tested.inputs.get(name) if tested is not None and isinstance(tested.inputs, Mapping) else None
        if alternative != s.rejected_alternative:
            problems.append(Problem(_message(spec, "synthesis.rejected_not_tested",
                                             f"The rejected alternative must be the one part {letter} tested ({name})."),
                                    alternative, s.rejected_alternative, "synthesis.rejected_not_tested"))
    if more is not None:
        problems += more(spec, bundle)
    if rule.hold_part is not None and s.recommendation == "hold":
        held = bundle.evidence.get(part_key(rule.hold_part))
        if held is None or held.decision != "hold":
            problems.append(Problem(_message(spec, "synthesis.hold_without_hold",
                                             f"Recommend 'hold' only after capturing part {rule.hold_part} with decision "
                                             "'hold'."),
                                    f"part {rule.hold_part} decision 'hold'", getattr(held, "decision", None),
                                    "synthesis.hold_without_hold"))
    for field, code, what in (("reevaluation_trigger", "synthesis.trigger_unlisted", "re-evaluation trigger"),
                              ("residual_risk", "synthesis.limitation_unlisted", "remaining limitation")):
        if field not in spec.options:
            continue
        value = getattr(s, field)
        listed = [option.value or option.label for option in spec.options[field]]
        if value not in listed:
            problems.append(Problem(_message(spec, code, f"Choose a {what} from the lab's list."), listed, value, code))
    return problems


@final
class Lab:
    """One lab: its declaration (``lab.toml``, a :class:`~.spec.LabSpec`) and its code (``judge`` and ``views``), with
    every rule the labs share.  It implements each Protocol the core asks of a lab (:mod:`mlsys_grader.core.roles`).

    The spec says the data and the shared functions above say what every lab does with it; the judge's functions say
    only what code must (:class:`~mlsys_grader.core.roles.LabCode`: the arms and the verdicts, and the optional hooks
    this module's docstring lists).  A lab holds no state beyond what it is built from: evaluations and plans go
    through the :class:`~mlsys_grader.core.replayer.Replayer` the caller hands in, which memoises them (and may answer
    from a verified table).  It is not subclassed: a variant is :meth:`replace` with another id, title, parts, tracks,
    master or code.
    """

    def __init__(self, spec: LabSpec, package: str, judge: Any, views: Any, *, lab_id: str | None = None,
                 title: str | None = None, parts: Mapping[str, PartSpec] | None = None,
                 tracks: tuple[str, ...] | None = None, module: str = "",
                 master: Callable[[Path], Path] | None = None) -> None:
        self.spec, self.package, self.judge, self.views = spec, package, judge, views
        self.lab_id = lab_id or spec.id
        self.title = title or spec.title
        self.model_id = spec.model_id
        self.parts: Mapping[str, PartSpec] = MappingProxyType(dict(parts if parts is not None else part_specs(spec)))
        """The lab's parts in notebook order (a subset of the bundle's part letters A–E)."""
        self.tracks = tracks or tuple(spec.tracks)
        self.triggers = options(spec, "reevaluation_trigger")
        self.limitations = options(spec, "residual_risk")
        self.synthesis_fields = tuple(spec.synthesis.fields)
        """The synthesis answers the notebook asks for, in its order."""
        self.text = lab_text(spec)
        self.marimo_layout = marimo_layout(spec, judge)
        """The layout of the book's marimo export of this lab; None when the book has no marimo lab for it."""
        self.module = module
        """The module the registry loaded the lab from (:func:`mlsys_grader.labs.get_lab` sets it): the replay table
        digests the source of its package."""
        self._master = master
        self._recommendations = options(spec, "recommendation")
        rejectable = spec.synthesis.rejectable or [c.value for c in self._recommendations]
        self._rejectable = tuple(c for c in self._recommendations if c.value in rejectable)
        self._variants = tuple(BuildVariant(part=v.part, field=v.field, tracks=tuple(v.tracks), values=tuple(v.values),
                                            build=v.build, why=v.why) for v in spec.build_variants)
        self._devices = MappingProxyType({track: self._device_words(track) for track in spec.tracks})

    def replace(self, **changes: Any) -> Lab:
        """A new lab with ``changes`` (``lab_id``, ``title``, ``parts``, ``tracks``, ``master``, ``judge``, ``views``);
        the registry sets its ``module`` when it loads it."""
        allowed = {"lab_id", "title", "parts", "tracks", "master", "judge", "views"}
        unknown = sorted(set(changes) - allowed)
        if unknown:
            raise TypeError(f"Lab.replace takes {', '.join(sorted(allowed))} (got {', '.join(unknown)})")
        arguments: dict[str, Any] = {"lab_id": self.lab_id, "title": self.title, "parts": self.parts,
                                     "tracks": self.tracks, "master": self._master, "judge": self.judge,
                                     "views": self.views, **changes}
        judge, views = arguments.pop("judge"), arguments.pop("views")
        return Lab(self.spec, self.package, judge, views, **arguments)

    def __repr__(self) -> str:
        return f"<Lab {self.lab_id} from {self.module}>"

    # -- the book's words ----------------------------------------------------------------------------------------
    @property
    def notebook(self) -> NotebookText | None:
        return self.text.notebook

    @property
    def scenarios(self) -> Mapping[str, str]:
        return self.text.scenarios

    @property
    def track_labels(self) -> Mapping[tuple[str, str], Mapping[str, str]]:
        return self.text.track_labels

    @property
    def decision_labels(self) -> Mapping[tuple[str, str], Mapping[str, str]]:
        return self.text.decision_labels

    @property
    def learning_objectives(self) -> tuple[str, ...]:
        return self.text.learning_objectives

    @property
    def big_takeaways(self) -> tuple[str, ...]:
        return self.text.big_takeaways

    @property
    def source_trace(self) -> str:
        return self.text.source_trace

    # -- evaluators ----------------------------------------------------------------------------------------------
    def evaluator(self) -> ModuleType:
        """The lab's ``evaluate`` module, imported on first use with only the mlsysim modules it imports
        (:func:`mlsys_grader.labs.import_evaluator`: the whole package is slow to import)."""
        from . import import_evaluator

        return import_evaluator(f"{self.package}.evaluate")

    def evaluate_arm(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """One arm through the pinned evaluator: the lab's own ``evaluate.arm(track, model_key, inputs)`` where it shapes
        arms itself, else the book's evaluator module's ``replay(model_key, inputs)`` (the spec's ``evaluator``).  The
        only call that may import mlsysim; :meth:`Replayer.evaluate` memoises it and consults a replay table first."""
        own = getattr(self.evaluator(), "arm", None)
        if callable(own):
            return own(track, model_key, inputs)
        from . import import_evaluator

        return import_evaluator(self.spec.evaluator).replay(model_key, inputs)

    def evaluate(self, replay: Replayer, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`evaluate_arm` through ``replay`` (memoised there: the returned arm is shared, read-only)."""
        return replay.evaluate(self, track, model_key, inputs)

    @staticmethod
    def arm_inputs(arm: Mapping[str, Any]) -> Any:
        """The inputs an arm records (:func:`~mlsys_grader.core.values.arm_inputs`)."""
        return arm_inputs(arm)

    # -- building ------------------------------------------------------------------------------------------------
    def model_key(self, part: str) -> str:
        """The evaluator key of ``part``'s arms: the judge's ``model_key``, the part's declared one, or the lab's."""
        own = _hook(self.judge, "model_key")
        if own is not None:
            return own(part)
        return self.spec.parts[part].model_key or self.spec.model_id

    def plan(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
             upstream: Mapping[str, Any]) -> PartPlan:
        """A part's arms for validated ``controls``; ``upstream`` maps each dependency to its result arm.

        Through ``replay`` (:meth:`Replayer.plan`), which memoises it: calls with the same arguments share one frozen
        :class:`PartPlan`, built by :meth:`build_plan`.
        """
        return replay.plan(self, track, part, controls, upstream)

    def check_track_menus(self, track: str, part: str, controls: Mapping[str, Any]) -> None:
        """DomainError for a control value another track's menu offers but ``track``'s does not (Lab 06's A and D)."""
        for control in self.spec.parts[part].controls:
            if control.choices_by_track and control.name in controls and not control.decision:
                menu = self.spec.menu(part, control.name, track)
                if controls[control.name] not in menu:
                    raise DomainError(f"part {part!r}: {control.name} must be one of {', '.join(map(repr, menu))} on "
                                      f"track {track!r} (got {controls[control.name]!r})")

    def build_plan(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                   upstream: Mapping[str, Any]) -> PartPlan:
        """Build a part's plan: the judge's arm inputs, each arm evaluated through ``replay`` (under the part's key, or
        its own where the part declares ``arm_keys``), and the decision the part declares."""
        self.check_track_menus(track, part, controls)
        arms: ArmInputs = self.judge.arm_inputs(self, track, part, controls, upstream)
        key = self.model_key(part)
        own_keys = self.spec.parts[part].arm_keys

        def evaluated(inputs: dict[str, Any]) -> dict[str, Any]:
            if not own_keys:
                return replay.evaluate(self, track, key, inputs)
            # Each arm carries its own evaluator key (Lab 10): replayed under it, not under the capture's.
            return replay.evaluate(self, track, inputs["model_key"], {k: v for k, v in inputs.items() if k != "model_key"})

        baseline = evaluated(arms.baseline)
        result = evaluated(arms.result)
        alternatives = tuple(evaluated(item) for item in arms.alternatives)
        decided = _hook(self.judge, "decide")
        fields = (decided(self, part, controls, baseline, result, alternatives) if decided is not None
                  else self.decide(part, controls, baseline, result))
        return PartPlan(part=part, model_key=key, upstream=arms.upstream, baseline=baseline, result=result,
                        alternatives=alternatives, **fields)

    def decide(self, part: str, controls: Mapping[str, Any], baseline: dict[str, Any],
               result: dict[str, Any]) -> dict[str, Any]:
        """A part's decision fields from its declaration: a hold keeps the baseline, any other decision the result."""
        decision = self.spec.parts[part].decision
        if decision is None or decision.control is None:
            return {}
        value = controls[decision.control]
        hold = value in decision.hold
        return {"decision": value, "chosen_result": baseline if hold else result,
                "result_role": "rejected alternative" if hold else "tested intervention"}

    def infer_controls(self, replay: Replayer, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
        """The controls and upstream results that would produce ``record``, or None: the judge's reading, else the
        declared controls read back by name (:func:`read_controls`)."""
        own = _hook(self.judge, "infer_controls")
        if own is not None:
            return own(self, replay, track, part, record)
        return read_controls(self.spec, part, record)

    def upstream_inputs(self, part: str, inputs: Any) -> Any:
        """What the book's notebook passes to ``capture_evidence`` as ``upstream_inputs`` for a capture of ``part`` whose
        ``inputs`` are these (what its seal covers): as the part declares it."""
        declared = self.spec.parts[part]
        seal = declared.seal or self.spec.seal
        if seal != "inputs":
            return {} if seal == "empty" else None
        if declared.seal_omits and isinstance(inputs, Mapping):
            return {key: value for key, value in inputs.items() if key not in declared.seal_omits}
        return inputs

    def fingerprint(self, track: str, part: str, upstream: Mapping[str, Any]) -> str:
        """The book's seal of a part's record whose inputs are ``upstream``: over the upstream inputs the lab declares."""
        return book_seal(track, self.upstream_inputs(part, upstream))

    def build_variants(self) -> tuple[BuildVariant, ...]:
        """The fields another build of the book's evaluators gives differently (``[[build_variants]]``)."""
        return self._variants

    # -- judging -------------------------------------------------------------------------------------------------
    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str:
        return str(self.judge.displayed_prediction(track, part, plan))

    def accepted_predictions(self, track: str, part: str, plan: PartPlan) -> frozenset[str]:
        own = _hook(self.judge, "accepted_predictions")
        return own(track, part, plan) if own is not None else frozenset({self.displayed_prediction(track, part, plan)})

    def decision_problems(self, track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]:
        """The part's declared capture gate, then the judge's decision rules."""
        own = _hook(self.judge, "decision_problems")
        return gate_problems(self.spec, part, record) + (own(track, part, plan, record) if own is not None else [])

    def synthesis_problems(self, bundle: Bundle) -> list[Problem]:
        own = _hook(self.judge, "synthesis_problems")
        if own is not None:
            return own(self.spec, bundle)
        return declared_synthesis_problems(self.spec, bundle, _hook(self.judge, "more_synthesis_problems"))

    # -- the rationale reader's words ----------------------------------------------------------------------------
    def devices(self, track: str) -> tuple[str, ...]:
        """What ``{device}`` stands for on ``track``: device words, the target as registered and as people write it
        (found for every track when the lab is built, so grading never fills a table on the lab)."""
        found = self._devices.get(track)
        return found if found is not None else self._device_words(track)

    def _device_words(self, track: str) -> tuple[str, ...]:
        from ..core.rationale import device_names

        name = self.spec.constants.get("target", {}).get(track)
        registered = () if name is None else device_names(name)
        return (tuple(self.spec.words.device_words) + registered
                + tuple(self.spec.words.device_nicknames.get(track, ())))

    def synthesis_choices(self) -> dict[str, tuple[Choice, ...]]:
        own = _hook(self.judge, "synthesis_choices")
        if own is not None:
            return own(self)
        if not self._recommendations:
            return default_synthesis_choices(self)
        return {"recommendation": self._recommendations, "rejected_alternative": self._rejectable,
                **default_synthesis_choices(self)}

    def final_choice_terms(self, bundle: Bundle) -> ChoiceTerms:
        own = _hook(self.judge, "final_choice_terms")
        if own is not None:
            return own(self, bundle)
        s = bundle.synthesis
        recommended = {c.value for c in self._recommendations if c.value == s.recommendation}
        rejected = {c.value for c in self._rejectable if c.value == s.rejected_alternative}
        return ChoiceTerms(f"{self.lab_id}:{bundle.track}", self._recommendations, frozenset(recommended),
                           frozenset(rejected), slots=(("device", self.devices(bundle.track)),))

    def evidence_quantities(self, record: RecordedArms) -> list[tuple[float, str]]:
        own = _hook(self.judge, "evidence_quantities")
        return own(record) if own is not None else evidence.quantities(self.spec.evidence, record)

    # -- reference answers ---------------------------------------------------------------------------------------
    def sample_controls(self, replay: Replayer, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
        """Valid, contrasting controls: seeded draws cover the domain, ``None`` gives the defaults."""
        spec = self.parts[part]
        controls = spec.defaults() if rng is None else {control.name: control.sample(rng) for control in spec.controls}
        contrast = _hook(self.judge, "contrast")
        if contrast is not None:
            controls = contrast(self, track, part, controls, rng)
        return self.complete_decision(replay, track, part, controls, rng)

    def complete_decision(self, replay: Replayer, track: str, part: str, controls: Mapping[str, Any],
                          rng: random.Random | None) -> dict[str, Any]:
        """``controls`` with decision controls set to values the lab's rules accept (drawn with ``rng``, else the first)."""
        own_completion = _hook(self.judge, "complete_decision")
        if own_completion is not None:
            return own_completion(self, replay, track, part, controls, rng)
        controls = dict(controls)
        decision = self.spec.parts[part].decision
        own = _hook(self.judge, "decision_options")
        if decision is None or decision.control is None or own is None:
            return controls
        choices = own(self, replay, track, part, controls)
        controls[decision.control] = rng.choice(choices) if rng else choices[0]
        return controls

    def reference_rationale(self, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str | None:
        own = _hook(self.judge, "reference_rationale")
        return own(self, track, plans, trigger, limitation) if own is not None else None

    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        own = _hook(self.judge, "reference_synthesis")
        if own is not None:
            return own(self, track, plans, rng)
        recommendation, rejected = self.judge.reference_choices(self, plans)
        trigger = rng.choice(self.triggers)
        risk = rng.choice(self.limitations)
        return {"recommendation": recommendation, "rejected_alternative": rejected,
                "reevaluation_trigger": trigger.value, "residual_risk": risk.value,
                "rationale": self.reference_rationale(track, plans, trigger.value, risk.value)}

    def _answers(self) -> Mapping[str, Mapping[str, Any]]:
        path = resources.files(self.package).joinpath(ANSWERS_FILE)
        if not path.is_file():  # the student build leaves the solutions out
            raise ModuleNotFoundError(f"{self.package}/{ANSWERS_FILE}")
        return tomllib.loads(path.read_text(encoding="utf-8"))

    def reference_answers(self, track: str) -> dict[str, Any]:
        return hand_written_answers(self.lab_id, track, self._answers)

    # -- what the notebook shows ---------------------------------------------------------------------------------
    def part_ids(self) -> tuple[str, ...]:
        """The lab's part letters, in notebook order."""
        return tuple(self.parts)

    def view(self, track: str, part: str, plan: PartPlan) -> View:
        """What the notebook shows for a part's result: the lab's view given the verdict of
        :meth:`displayed_prediction` in the part's option words (the one place that decides it)."""
        verdict = self.displayed_prediction(track, part, plan)
        shown = getattr(self.views, f"view_{part.lower()}")(plan, track, self.parts[part].predictions[verdict])
        return dataclasses.replace(shown, verdict=verdict)

    def header_facts(self, track: str) -> list[tuple[str, str]]:
        return self.evaluator().header_facts(track)

    def track_facts(self, track: str) -> dict[str, str]:
        own = _hook(self.views, "track_facts")
        return own(self, track) if own is not None else {}

    def captured_decision(self, bundle: Bundle) -> list[tuple[str, str]]:
        own = _hook(self.views, "captured_decision")
        return own(self, bundle) if own is not None else []

    def scenario(self, track: str, part: str) -> str | None:
        """The part's scenario in the book's words for ``track`` (Markdown), or None when it reads the same on every track."""
        template = self.scenarios.get(part)
        return template.format(**self.track_facts(track)) if template else None

    def option_label(self, what: str, value: str, track: str, default: str) -> str:
        """The label the book shows on ``track`` for option ``value`` of the synthesis answer ``what``
        (``default``, the option's own label, when the book words it the same on every track)."""
        labels = self.track_labels.get((what, value))
        if not labels:
            return default
        return labels.get(track, labels.get("*", default))

    def master_path(self, root: Path) -> Path:
        """The lab's Otter master notebook, for the source tree at ``root``: where the lab's ``master`` says
        (a lab from another package may keep it beside its module), else :func:`default_master_path`."""
        return self._master(Path(root)) if self._master is not None else default_master_path(self.lab_id, root)

    # -- shared helpers ------------------------------------------------------------------------------------------
    def choice(self, options: Sequence[Choice], value: str | None) -> Choice | None:
        """The option whose value is ``value``, or None."""
        return next((option for option in options if option.value == value), None)

    def option(self, options: Sequence[Choice], value: str | None) -> Choice:
        """The option whose value is ``value``; LookupError when none is (for values the lab itself chose)."""
        found = self.choice(options, value)
        if found is None:
            raise LookupError(f"{self.lab_id}: no option {value!r}; expected one of {[o.value for o in options]}")
        return found


def missing_answers(m: MarimoSpec, snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
    """The synthesis answers a marimo snapshot leaves empty (under the export's declared field names), and the rationale
    when the export has none: what every lab's ``missing`` starts from."""
    given = {"recommendation": snapshot.get(m.recommendation), "rejected_alternative": snapshot.get(m.rejected),
             "reevaluation_trigger": snapshot.get(m.trigger), "residual_risk": snapshot.get("residual_risk")}
    lacking = [name for name, value in given.items() if not value]
    if not has_rationale:
        lacking.append("rationale")
    return lacking


def chosen_arm_problems(record: EvidenceRecord, decision: Any, held: bool) -> list[Problem]:
    """The chosen-arm rule: a decision that holds keeps the baseline arm, any other the result arm."""
    expected = "baseline" if held else "result"
    chosen = record.chosen_result
    if chosen is not None and arm_inputs(chosen) == arm_inputs(getattr(record, expected) or {}):
        return []
    return [Problem(f"With decision {decision!r} the chosen result must be the {expected} arm; recapture part E.",
                    expected, "missing" if chosen is None else "another arm", "decision.chosen_arm")]


def marimo_layout(spec: LabSpec, judge: ModuleType) -> MarimoLayout | None:
    """The book's marimo export of this lab, from the declared field names and the judge's reading of its captures."""
    m = spec.marimo
    if m is None:
        return None
    names = {"reevaluation_trigger": m.trigger, "residual_risk": "residual_risk", "recommendation": m.recommendation,
             "rejected_alternative": m.rejected}

    def answers(snapshot: Mapping[str, Any]) -> dict[str, Any]:
        return {field: snapshot.get(key) for field, key in names.items()}

    def missing(snapshot: Mapping[str, Any], has_rationale: bool) -> list[str]:
        lacking = missing_answers(m, snapshot, has_rationale)
        recommendation = snapshot.get(m.recommendation)
        if recommendation and recommendation == snapshot.get(m.rejected):
            lacking.append("a rejected alternative different from the recommendation")
        return lacking

    def no_copies(captures: Mapping[str, Any], snapshot: Mapping[str, Any]) -> list[Any]:
        return []

    return MarimoLayout(m.book_lab_id, m.recommendation, m.rejected, m.trigger, m.decision_part,
                        judge.marimo_binding, _hook(judge, "marimo_answers") or answers,
                        _hook(judge, "marimo_decision_copies") or no_copies, _hook(judge, "marimo_missing") or missing,
                        reflections_trigger=m.reflections_trigger)


def is_declared(package: str) -> bool:
    """Whether ``package`` declares a lab (holds ``lab.toml``); nothing is imported."""
    try:
        return resources.files(package).joinpath(SPEC_FILE).is_file()
    except (ModuleNotFoundError, TypeError):
        return False


@cache
def spec_of(package: str) -> LabSpec:
    """The validated declaration of the lab in ``package`` (not imported), read once per process: a judge's functions
    that are handed no lab read it here (``spec_of(__package__)``)."""
    return load_spec(resources.files(package).joinpath(SPEC_FILE))  # type: ignore[arg-type]


def load_lab(package: str) -> Lab:
    """The :class:`Lab` declared in ``package``: its ``lab.toml``, its ``judge`` and ``views`` (mlsysim-free)."""
    spec = spec_of(package)
    judge = importlib.import_module(f"{package}.judge")
    views = importlib.import_module(f"{package}.views")
    return Lab(spec, package, judge, views)


_PART_POINTS = {5: (3, 6, 3, 2, 2), 4: (4, 7, 4, 3, 2), 3: (5, 9, 5, 4, 4), 2: (8, 14, 8, 6, 6), 1: (16, 28, 16, 12, 12)}


def rubric_toml(spec: LabSpec) -> str:
    """The lab's rubric, as the parts give it (every part the same points, 4 more for a decision, 16 for the synthesis):
    today's rubric of a shipped lab, with the spec's ``[rubric]`` overrides."""
    count = len(spec.parts)
    captured, replay, fresh, contrast, locked = _PART_POINTS[count]
    per_part = captured + replay + fresh + contrast + locked
    lines = [f"# Rubric for {spec.title}.  Total 100 points.", f'version = "{spec.rubric.version}"',
             "min_rationale_words = 20", "quantity_tolerance = 0.01",
             "part_names = [" + ", ".join(f'"{p}"' for p in spec.parts) + "]", "",
             f"# Every part: {per_part} points.", "[every_part]",
             f"captured = {captured}            # evidence for the part is in the bundle",
             f"replay = {replay}              # every number replays bit for bit, inputs inside the lab's domain",
             f"fresh = {fresh}               # {spec.rubric.fresh_note}",
             f"contrast = {contrast}            # baseline and intervention differ",
             f"prediction_locked = {locked}   # prediction locked before any result of the part was shown",
             "prediction_correct = 0  # formative: shown in the feedback, earns nothing", ""]
    for letter, part in spec.parts.items():
        if part.decision is not None:
            lines += [f"[parts.{letter}]", f"decision = 4            # {spec.rubric.decision_note}", ""]
    lines += ["[synthesis]             # 16 points", "choices_valid = 4", "rationale_length = 2",
              "rationale_cites_evidence = 4", "rationale_names_recommendation = 2", "rationale_names_rejected = 2",
              "rationale_names_limitation = 1", "rationale_names_trigger = 1", ""]
    return "\n".join(lines)


__all__ = ["ANSWERS_FILE", "Lab", "chosen_arm_problems", "missing_answers", "declared_synthesis_problems", "is_declared", "lab_text", "load_lab", "marimo_layout", "options",
           "part_specs", "read_controls", "rubric_toml", "spec_of"]


if TYPE_CHECKING:
    from ..core.roles import GradingLab, LabRules, MarimoMapping, Presentation, RationaleWords, ReferenceAnswers

    def _implements_every_role(lab: Lab) -> tuple[LabRules, RationaleWords, ReferenceAnswers, Presentation,
                                                   MarimoMapping, GradingLab]:
        """Checked by mypy: a :class:`Lab` is each of the core's Protocols (``isinstance`` checks names only)."""
        return lab, lab, lab, lab, lab, lab
