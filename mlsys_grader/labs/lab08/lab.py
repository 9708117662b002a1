"""Lab 08 — Train for the Target, Not the Counter (``mlsysim.labs.experiments.v1_08_experiments``): the lab, assembled.

Each seam is a module of this package implementing one small Protocol of :mod:`mlsys_grader.core.labspec`: the domain
and decision rules (:mod:`.rules`, a ``PartRules``; its evaluator, :mod:`.evaluate`, is the only module importing
mlsysim, loaded on first use), the rationale reader's words (:mod:`.words`, ``LabWords``), the part views
(:mod:`.views`, ``LabViews``), the reference answers (:mod:`.references`, ``LabReferences``), the notebook text
(:mod:`.notebook`, ``LabText``) and the marimo mapping (:mod:`.marimo`).  ``LAB_ID`` is the lab's id, named here only.
"""

from __future__ import annotations

from mlsys_grader.core.labspec import Lab

from . import notebook, references, rules, views, words
from .marimo import MARIMO_LAYOUT

LAB_ID = "lab08"

LAB = Lab(
    lab_id=LAB_ID,
    title="Lab 08 — Train for the Target, Not the Counter",
    model_id=rules.MODEL_ID,
    parts=rules.PARTS,
    triggers=words.TRIGGERS,
    limitations=words.LIMITATIONS,
    synthesis_fields=("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale"),
    rules=rules,
    words=words,
    views=views,
    references=references,
    text=notebook.TEXT,
    marimo_layout=MARIMO_LAYOUT,
)
