"""Lab 02 — Where Should Inference Run? (``mlsysim.labs.experiments.v1_02_experiments``): the lab, assembled.

Each seam is a module of this package implementing one small Protocol of :mod:`mlsys_grader.core.labspec`: the domain
and decision rules (:mod:`.rules`, a ``PartRules``; its evaluator, :mod:`.evaluate`, is the only module importing
mlsysim, loaded on first use), the rationale reader's words (:mod:`.words`, ``LabWords``), the part views
(:mod:`.views`, ``LabViews``), the reference answers (:mod:`.references`, ``LabReferences``), the notebook text
(:mod:`.notebook`, ``LabText``) and the marimo mapping (:mod:`.marimo`).  ``LAB_ID`` is the lab's id, named here only.
The book's lab has four parts, A–D; part D builds on part A's payload and link.
"""

from __future__ import annotations

from mlsys_grader.core.labspec import Lab

from . import notebook, references, rules, views, words
from .marimo import MARIMO_LAYOUT

LAB_ID = "lab02"

LAB = Lab(
    lab_id=LAB_ID,
    title="Lab 02 — Where Should Inference Run?",
    model_id=rules.MODEL_KEY,
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
