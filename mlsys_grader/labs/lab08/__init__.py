"""Lab 08 — Train for the Target, Not the Counter, one package split along its seams (see :mod:`.lab`).

``LAB`` is the lab object the registry loads (``mlsys_grader.labs``); importing this package does not import mlsysim
(only :mod:`.evaluate` does, on first evaluation).
"""

from __future__ import annotations

from .lab import LAB, LAB_ID
from .rules import EXPERIMENTS, MODEL_ID, PARTS, PHYSICAL_BATCH, PROBE_BATCH
from .words import LIMITATIONS, RECOMMENDATIONS, REJECTABLE, TRIGGERS

__all__ = ["EXPERIMENTS", "LAB", "LAB_ID", "LIMITATIONS", "MODEL_ID", "PARTS", "PHYSICAL_BATCH", "PROBE_BATCH",
           "RECOMMENDATIONS", "REJECTABLE", "TRIGGERS"]
