"""What a lab module declares: controls and their domains, parts, and the lab contract.

A lab is one module (``mlsys_grader.labs.lab07``…) holding one :class:`LabSpec`
subclass.  The core grades any lab through this interface only, so adding a lab
means adding a module, a rubric file and a notebook, and nothing here changes.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import DomainError
from .jsonio import canonical_dumps, sha256_of

if TYPE_CHECKING:
    from .rationale import ChoiceTerms


@dataclass(frozen=True)
class Control:
    """One student-set control and its exact allowed values.

    ``kind`` is ``"int"`` or ``"float"`` (``minimum``..``maximum`` in ``step``s),
    ``"choice"`` (one of ``choices``) or ``"bool"``.
    """

    name: str
    label: str
    kind: str
    default: Any
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    decision: bool = False

    def values(self) -> tuple[Any, ...]:
        """Every allowed value, in order."""
        if self.kind == "bool":
            return (False, True)
        if self.kind == "choice":
            return self.choices
        count = int(round((self.maximum - self.minimum) / self.step)) + 1
        if self.kind == "int":
            return tuple(int(self.minimum + i * self.step) for i in range(count))
        return tuple(round(self.minimum + i * self.step, 10) for i in range(count))

    def describe(self) -> str:
        """The allowed values in words, e.g. ``10..200 in steps of 10``."""
        if self.kind == "bool":
            return "True or False"
        if self.kind == "choice":
            return "one of " + ", ".join(repr(choice) for choice in self.choices)
        return f"{self.minimum:g}..{self.maximum:g} in steps of {self.step:g}"

    def check(self, value: Any, *, part: str = "") -> Any:
        """Return ``value`` normalised, or raise :class:`DomainError` naming the domain."""
        where = f"part {part!r}: " if part else ""
        problem = f"{where}{self.name} must be {self.describe()} (got {value!r})"
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise DomainError(problem)
            return value
        if self.kind == "choice":
            if isinstance(value, bool) or value not in self.choices:
                raise DomainError(problem)
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise DomainError(problem)
        if self.kind == "int" and not float(value).is_integer():
            raise DomainError(problem)
        steps = (value - self.minimum) / self.step
        if not (self.minimum - 1e-9 <= value <= self.maximum + 1e-9) or abs(steps - round(steps)) > 1e-6:
            raise DomainError(problem)
        if self.kind == "int":
            return int(value)
        return round(self.minimum + round(steps) * self.step, 10)

    def sample(self, rng: random.Random) -> Any:
        """A uniformly drawn allowed value."""
        return rng.choice(self.values())


@dataclass(frozen=True)
class PartSpec:
    """One lab part: its title, controls, prediction question and choices."""

    part: str
    title: str
    question: str
    controls: tuple[Control, ...]
    predictions: Mapping[str, str]
    depends_on: tuple[str, ...] = ()
    has_decision: bool = False

    def control(self, name: str) -> Control:
        for control in self.controls:
            if control.name == name:
                return control
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        return {control.name: control.default for control in self.controls}

    def check_controls(self, values: Mapping[str, Any], *, decisions: bool = True) -> dict[str, Any]:
        """Validate a full control mapping; raise :class:`DomainError` on the first problem.

        With ``decisions=False`` decision controls pass through unchecked: an invalid
        decision is judged by the lab's decision rules, not as an out-of-domain input.
        """
        if not isinstance(values, Mapping):
            raise DomainError(f"part {self.part!r}: controls must be a mapping (got {type(values).__name__})")
        expected = {control.name for control in self.controls}
        unknown = sorted(set(values) - expected)
        missing = sorted(expected - set(values))
        if unknown or missing:
            raise DomainError(
                f"part {self.part!r}: controls must be exactly {sorted(expected)}"
                f" (missing {missing}, unexpected {unknown})"
            )
        return {
            control.name: values[control.name] if control.decision and not decisions
            else control.check(values[control.name], part=self.part)
            for control in self.controls
        }


@dataclass
class PartPlan:
    """Everything a part's record holds, apart from prediction, times and provenance.

    The lab module builds it from controls; ``arms`` are evaluator outputs.
    """

    part: str
    model_key: str
    upstream: dict[str, Any]
    baseline: dict[str, Any]
    result: dict[str, Any]
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    decision: Any = None
    chosen_result: dict[str, Any] | None = None
    result_role: str | None = None


def fingerprint(lab_id: str, track: str, part: str, upstream: Mapping[str, Any]) -> str:
    """SHA-256 of the track and the upstream settings a part's record depends on."""
    return sha256_of({"lab": lab_id, "track": track, "part": part, "upstream": upstream})


@dataclass(frozen=True)
class Choice:
    """A closed answer (trigger, limitation, recommendation…) and the words that name it.

    ``keywords`` are names compared as whole words once case, hyphens and British
    spelling are normalised (:func:`mlsys_grader.core.rationale.normalise`); the first
    is the option's short name in generated text.  ``phrasings`` are further names as
    regular expressions over that normalised text (``{slot}`` placeholders, such as
    ``{device}``, are filled per track by the lab).  ``decisive`` phrasings state the
    choice on their own, with no recommending verb ("no change for now").
    """

    value: str
    label: str
    keywords: tuple[str, ...]
    phrasings: tuple[str, ...] = ()
    decisive: tuple[str, ...] = ()


class LabSpec(abc.ABC):
    """The contract every lab module implements.

    Methods that run evaluators go through :meth:`evaluate`, which the grader
    memoises, so building a plan and replaying a record share one computation.
    """

    lab_id: str
    title: str
    model_id: str
    tracks: tuple[str, ...] = ("tinyml", "mobile", "edge", "cloud")
    parts: Mapping[str, PartSpec]
    triggers: tuple[Choice, ...]
    limitations: tuple[Choice, ...]

    # -- evaluators -------------------------------------------------------------
    cache_size: int = 8192

    @abc.abstractmethod
    def _evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Run the pinned evaluator on JSON-safe ``inputs``; return the arm as the seed shapes it."""

    def evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`_evaluate`, memoised on the canonical JSON of its arguments.

        The evaluators are deterministic, so a batch that replays the same inputs
        many times (every student's baseline arm) computes each once.  The returned
        arm is shared with later callers: treat it as read-only (copy before editing).
        """
        cache = self.__dict__.setdefault("_cache", {})
        key = canonical_dumps([track, model_key, inputs])
        arm = cache.get(key)
        if arm is None:
            # One JSON round trip normalises the arm to exactly what a bundle holds.
            arm = json.loads(canonical_dumps(self._evaluate(track, model_key, inputs)))
            if len(cache) >= self.cache_size:
                cache.pop(next(iter(cache)))
            cache[key] = arm
        return arm

    @staticmethod
    def arm_inputs(arm: Mapping[str, Any]) -> Any:
        """The inputs an arm records (both labs keep them under ``"inputs"``)."""
        return arm.get("inputs") if isinstance(arm, Mapping) else None

    # -- building ---------------------------------------------------------------
    @abc.abstractmethod
    def _plan(self, track: str, part: str, controls: Mapping[str, Any], upstream: Mapping[str, Any]) -> PartPlan:
        """Build a part's arms from validated ``controls`` (see :meth:`plan`)."""

    def plan(self, track: str, part: str, controls: Mapping[str, Any], upstream: Mapping[str, Any]) -> PartPlan:
        """A part's arms for validated ``controls``; ``upstream`` maps each dependency to its result arm.

        Memoised like :meth:`evaluate` (a grader sees the same few settings again and
        again): each call gets its own :class:`PartPlan`, whose arms are shared and read-only.
        """
        cache = self.__dict__.setdefault("_plans", {})
        key = (track, part, tuple(sorted(controls.items())), canonical_dumps(upstream) if upstream else "")
        plan = cache.get(key)
        if plan is None:
            plan = self._plan(track, part, controls, upstream)
            if len(cache) >= self.cache_size:
                cache.pop(next(iter(cache)))
            cache[key] = plan
        return dataclasses.replace(plan, upstream=dict(plan.upstream), alternatives=list(plan.alternatives))

    @abc.abstractmethod
    def infer_controls(self, track: str, part: str, record: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Recover (controls, upstream results) that would produce ``record``, or None."""

    # -- judging ----------------------------------------------------------------
    @abc.abstractmethod
    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str:
        """The prediction value the notebook shows as observed for these arms.

        The notebook states it in the lab's option words next to the result, so it is
        what a student reads as the answer; :meth:`accepted_predictions` always holds it.
        """

    @abc.abstractmethod
    def accepted_predictions(self, track: str, part: str, plan: PartPlan) -> frozenset[str]:
        """Prediction values judged right for these replayed arms: :meth:`displayed_prediction`
        and any answer the numbers equally support (a tie, or a judgement inside the band
        around one of its thresholds)."""

    @abc.abstractmethod
    def decision_problems(self, track: str, part: str, plan: PartPlan, record: Any) -> list[tuple[str, Any, Any]]:
        """(message, expected, actual) for each decision rule the record breaks."""

    @abc.abstractmethod
    def synthesis_problems(self, bundle: Any) -> list[tuple[str, Any, Any]]:
        """(message, expected, actual) for each synthesis rule the bundle breaks."""

    @abc.abstractmethod
    def final_choice_terms(self, bundle: Any) -> ChoiceTerms:
        """Every option a rationale may name on this bundle's track, and which of them are the
        submission's recommendation and rejected alternative (see :mod:`.rationale`)."""

    @abc.abstractmethod
    def evidence_quantities(self, record: Any) -> list[tuple[float, str]]:
        """(magnitude, unit) for every quantity a record shows the student, and for what a student
        derives from them (:func:`.rationale.compared`, :func:`.rationale.share`).

        ``unit`` is a pint unit of mlsysim's registry, or :data:`.rationale.RATIO` /
        :data:`.rationale.FRACTION` for dimensionless values cited as "3.7x" / "88 %".
        """

    # -- reference answers ------------------------------------------------------
    @abc.abstractmethod
    def sample_controls(self, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
        """Valid, contrasting controls; seeded draws cover the domain, ``None`` gives defaults."""

    @abc.abstractmethod
    def complete_decision(self, track: str, part: str, controls: Mapping[str, Any], rng: random.Random | None) -> dict[str, Any]:
        """``controls`` with decision controls set to values the lab's rules accept."""

    @abc.abstractmethod
    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        """Synthesis answers a diligent student would give for these plans."""

    def reference_rationale(self, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str | None:
        """The rationale :meth:`reference_synthesis` writes for this trigger and limitation, or None if it writes none."""
        return None

    # -- shared helpers ---------------------------------------------------------
    def fingerprint(self, track: str, part: str, upstream: Mapping[str, Any]) -> str:
        return fingerprint(self.lab_id, track, part, upstream)

    def choice(self, options: Sequence[Choice], value: str | None) -> Choice | None:
        return next((option for option in options if option.value == value), None)
