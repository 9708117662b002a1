"""Lab 11 — Acceleration That Survives the Whole Path (``v1_11_experiments``): the lab object.

Arms are shaped as the book's marimo lab shapes them: ``{"inputs": …, "outputs": …}``
with ``model_key`` ``v1_11_experiments.<experiment>``.  Part D's baseline kernel
time is part C's selected result latency, so part D depends on part C.

:class:`Lab11` assembles the lab's seams, each a module of this package: the domain,
how each part's inputs are built, thresholds and decision rules (:mod:`.rules`, over the
track scenarios' data in :mod:`.domain`), the evaluator (:mod:`.evaluate`, the only one
importing mlsysim, loaded on first evaluation), the rationale reader's words
(:mod:`.words`), the part views (:mod:`.views`), the notebook text (:mod:`.notebook`),
the marimo mapping (:mod:`.marimo`) and the reference answers (:mod:`.references`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ...core.labspec import InferredControls, LabSpec, PartPlan, Problem, View
from ...core.models import Bundle, EvidenceRecord
from ...core.rationale import ChoiceTerms, RecordedArms
from . import notebook as text
from . import references, rules, views, words
from .marimo import MARIMO_LAYOUT


class Lab11(LabSpec):
    lab_id = "lab11"
    title = "Lab 11 — Acceleration That Survives the Whole Path"
    model_id = rules.MODEL_ID
    parts = rules.PARTS
    triggers = words.TRIGGERS
    limitations = words.LIMITATIONS
    notebook = text.NOTEBOOK
    marimo_layout = MARIMO_LAYOUT
    decision_labels = text.DECISION_LABELS
    learning_objectives = text.LEARNING_OBJECTIVES
    big_takeaways = text.BIG_TAKEAWAYS
    source_trace = text.SOURCE_TRACE

    def _evaluate(self, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return rules.evaluator().replay(track, model_key, inputs)

    @staticmethod
    def model_key(part: str) -> str:
        return rules.model_key(part)

    # -- what the notebook shows -----------------------------------------------------
    def render(self, track: str, part: str, plan: PartPlan, verdict_words: str) -> View:
        return views.render(track, part, plan, verdict_words)

    def header_facts(self, track: str) -> list[tuple[str, str]]:
        return rules.evaluator().header_facts(track)

    def track_facts(self, track: str) -> dict[str, str]:
        """The track's accelerator and the investigation in one line."""
        return rules.evaluator().track_facts(track)

    def captured_decision(self, bundle: Bundle) -> list[tuple[str, str]]:
        """Part E's captured recommendation and rejected candidate, in the book's radio labels."""
        record = bundle.evidence.get("E")
        chosen = record.decision if record is not None else None
        if not isinstance(chosen, Mapping):
            return []
        labels = text.DECISION_LABELS[("E", "choice")]
        return [("Recommendation (part E)", labels.get(chosen.get("recommendation") or "", "—")),
                ("Rejected candidate (part E)", labels.get(chosen.get("rejected") or "", "—"))]

    # -- building ---------------------------------------------------------------
    def _plan(self, track: str, part: str, controls: Mapping[str, Any], upstream: Mapping[str, Any]) -> PartPlan:
        key = rules.model_key(part)
        arms = rules.arm_inputs(track, part, controls, upstream)
        baseline = self.evaluate(track, key, arms.baseline)
        result = self.evaluate(track, key, arms.result)
        alternatives = tuple(self.evaluate(track, key, item) for item in arms.alternatives)
        return PartPlan(part=part, model_key=key, upstream=arms.upstream, baseline=baseline, result=result,
                        alternatives=alternatives, **rules.decide(part, controls, baseline, result, alternatives))

    def infer_controls(self, track: str, part: str, record: EvidenceRecord) -> InferredControls | None:
        try:
            found = rules.infer(track, part, record)
        except rules.record_shape_errors():  # hostile inputs (odd units, wrong shapes) mean "no allowed setting"
            return None
        if found is None:
            return None
        if part != "D":
            return InferredControls(*found)
        # Part D builds on a part C result: find the C setting whose latency it records.
        # Outside the try above, so an error in building part C is the grader's, not the record's.
        controls, kernel = found
        for shape in ("aligned", "misaligned"):
            for operation in ("gemm", "scatter"):
                c_result = self.plan(track, "C", {"shape": shape, "operation": operation}, {}).result
                if c_result["outputs"]["latency"] == kernel:
                    return InferredControls(controls, {"C": c_result})
        return None

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
        return references.reference_rationale(self, track, plans, trigger, limitation)

    def reference_synthesis(self, track: str, plans: Mapping[str, PartPlan], rng: random.Random) -> dict[str, Any]:
        return references.reference_synthesis(self, track, plans, rng)

    def reference_answers(self, track: str) -> dict[str, Any]:
        return references.hand_written(self.lab_id, track)


LAB = Lab11()
