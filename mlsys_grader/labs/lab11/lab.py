"""Lab 11 — Acceleration That Survives the Whole Path (``v1_11_experiments``): the lab, assembled.

Each seam is a module of this package implementing one small Protocol of
:mod:`mlsys_grader.core.labspec`: the domain, how each part's inputs are built, thresholds and
decision rules (:mod:`.rules`, a ``PartRules``, over the track scenarios' data in :mod:`.domain`;
its evaluator, :mod:`.evaluate`, is the only module importing mlsysim, loaded on first use), the
rationale reader's words (:mod:`.words`, ``LabWords``), the part views (:mod:`.views`,
``LabViews``), the reference answers (:mod:`.references`, ``LabReferences``), the notebook text
(:mod:`.notebook`, ``LabText``) and the marimo mapping (:mod:`.marimo`).  ``LAB_ID`` is the lab's
id, named here only.
"""

from __future__ import annotations

from mlsys_grader.core.labspec import Lab

from . import notebook, references, rules, views, words
from .marimo import MARIMO_LAYOUT

LAB_ID = "lab11"

LAB = Lab(
    lab_id=LAB_ID,
    title="Lab 11 — Acceleration That Survives the Whole Path",
    model_id=rules.MODEL_ID,
    parts=rules.PARTS,
    triggers=words.TRIGGERS,
    limitations=words.LIMITATIONS,
    rules=rules,
    words=words,
    views=views,
    references=references,
    text=notebook.TEXT,
    marimo_layout=MARIMO_LAYOUT,
)
