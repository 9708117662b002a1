"""Lab 07 — The Framework Tax, one package split along its seams (see :mod:`.lab`).

``LAB`` is the lab object the registry loads (``mlsys_grader.labs``); importing this
package does not import mlsysim (only :mod:`.evaluate` does, on first evaluation).
"""

from __future__ import annotations

from .lab import LAB, LAB_ID
from .rules import MODEL_KEY, OPERATION_COUNT, PARTS
from .words import LIMITATIONS, RECOMMENDATIONS, REJECTABLE, TRIGGERS

__all__ = ["LAB", "LIMITATIONS", "MODEL_KEY", "OPERATION_COUNT", "PARTS", "RECOMMENDATIONS", "REJECTABLE", "TRIGGERS", "LAB_ID"]
