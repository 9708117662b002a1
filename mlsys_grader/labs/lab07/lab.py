"""Lab 07 — The Framework Tax (``mlsysim.labs.experiments.v1_07_experiments``): the lab object.

:class:`Lab07` assembles the lab's seams, each a module of this package: the domain and
decision rules (:mod:`.rules`), the evaluator (:mod:`.evaluate`, the only one importing
mlsysim, loaded on first use), the rationale reader's words (:mod:`.words`), the part
views (:mod:`.views`), the notebook text (:mod:`.notebook`), the marimo mapping
(:mod:`.marimo`) and the reference answers (:mod:`.references`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ...core.labspec import Choice, InferredControls, LabSpec, PartPlan, Problem, View
from ...core.models import Bundle, EvidenceRecord
from ...core.rationale import ChoiceTerms, RecordedArms
from . import notebook as text
from . import references, rules, views, words
from .marimo import MARIMO_LAYOUT


class Lab07(LabSpec):
    lab_id = "lab07"
    title = "Lab 07 — The Framework Tax"
    model_id = rules.MODEL_KEY
    parts = rules.PARTS
    triggers = words.TRIGGERS
    limitations = words.LIMITATIONS
    synthesis_fields = ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale")
    notebook = text.NOTEBOOK
    marimo_layout = MARIMO_LAYOUT
    scenarios = text.SCENARIOS
    track_labels = text.TRACK_LABELS
    decision_labels = text.DECISION_LABELS
    learning_objectives = text.LEARNING_OBJECTIVES
    big_takeaways = text.BIG_TAKEAWAYS
    source_trace = text.SOURCE_TRACE

    def _evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return rules.evaluator().replay(model_key, inputs)

    @staticmethod
    def tensor_elements(track: str) -> int:
        return rules.TENSOR_ELEMENTS[track]

    # -- what the notebook shows -----------------------------------------------------
    def synthesis_choices(self) -> dict[str, tuple[Choice, ...]]:
        """The recommendation (any tested path, hold or none), the rejected alternative (a tested path), trigger, limitation."""
        return {"recommendation": words.RECOMMENDATIONS,
                "rejected_alternative": tuple(c for c in words.RECOMMENDATIONS if c.value in words.REJECTABLE),
                **super().synthesis_choices()}

    def render(self, track: str, part: str, plan: PartPlan, verdict_words: str) -> View:
        return views.render(track, part, plan, verdict_words)

    def header_facts(self, track: str) -> list[tuple[str, str]]:
        return rules.evaluator().header_facts(track)

    def track_facts(self, track: str) -> dict[str, str]:
        """The target device, part D's default training host, how this track recompiles, and the workload."""
        host = self.plan(track, "D", self.parts["D"].defaults(), {}).baseline["training_host"]
        context = ("offline host rebuild and redeployment count (TinyML compiles ahead-of-time on the host, not via "
                   "on-device JIT guards)" if track == "tinyml" else "guard-triggered recompilation count")
        ev = rules.evaluator()
        return {"device": ev.target_name(track), "training_host": host, "recompile_context": context,
                "scenario": ev.workload(track)}

    # -- building ---------------------------------------------------------------
    def _plan(self, track: str, part: str, controls: Mapping[str, Any], upstream: Mapping[str, Any]) -> PartPlan:
        arms = rules.arm_inputs(track, part, controls, self.tensor_elements(track))
        baseline = self.evaluate(track, rules.MODEL_KEY, arms.baseline)
        result = self.evaluate(track, rules.MODEL_KEY, arms.result)
        return PartPlan(
            part=part,
            model_key=rules.MODEL_KEY,
            upstream=arms.upstream,
            baseline=baseline,
            result=result,
            alternatives=tuple(self.evaluate(track, rules.MODEL_KEY, item) for item in arms.alternatives),
            **rules.decide(part, controls, baseline, result),
        )

    def infer_controls(self, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
        result_inputs = self.arm_inputs(record.result) if record.result else None
        if not isinstance(result_inputs, Mapping):
            return None
        controls = rules.inferred_controls(part, result_inputs, record.decision)
        return None if controls is None else InferredControls(controls, {})

    # -- judging ----------------------------------------------------------------
    def displayed_prediction(self, track: str, part: str, plan: PartPlan) -> str:
        return rules.displayed_prediction(part, plan)

    def accepted_predictions(self, track: str, part: str, plan: PartPlan) -> frozenset[str]:
        return rules.accepted_predictions(part, plan)

    def decision_problems(self, track: str, part: str, plan: PartPlan, record: EvidenceRecord) -> list[Problem]:
        return rules.decision_problems(part, plan, record)

    def synthesis_problems(self, bundle: Bundle) -> list[Problem]:
        return rules.synthesis_problems(bundle)

    def final_choice_terms(self, bundle: Bundle) -> ChoiceTerms:
        return words.final_choice_terms(self.lab_id, bundle)

    def evidence_quantities(self, record: RecordedArms) -> list[tuple[float, str]]:
        return words.evidence_quantities(record)

    # -- reference answers ------------------------------------------------------
    def sample_controls(self, track: str, part: str, rng: random.Random | None) -> dict[str, Any]:
        return references.sample_controls(self, track, part, rng)

    def complete_decision(self, track: str, part: str, controls: Mapping[str, Any], rng: random.Random | None) -> dict[str, Any]:
        return references.complete_decision(self, track, part, controls, rng)

    def reference_rationale(self, track: str, plans: Mapping[str, PartPlan], trigger: str, limitation: str) -> str:
        return references.reference_rationale(self, plans, trigger, limitation)

    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        return references.reference_synthesis(self, plans, rng)

    def reference_answers(self, track: str) -> dict[str, Any]:
        return references.hand_written(self.lab_id, track)


LAB = Lab07()
