"""Lab 02 — Where Should Inference Run?, one package split along its seams (see :mod:`.lab`).

``LAB`` is the lab object the registry loads (``mlsys_grader.labs``); importing this
package does not import mlsysim (only :mod:`.evaluate` does, on first evaluation).
"""

from __future__ import annotations

from .lab import LAB, LAB_ID
from .rules import CANDIDATES, MODEL_KEY, PARTS
from .words import LIMITATIONS, PLACEMENTS, REJECTABLE, TRIGGERS

__all__ = ["CANDIDATES", "LAB", "LAB_ID", "LIMITATIONS", "MODEL_KEY", "PARTS", "PLACEMENTS", "REJECTABLE", "TRIGGERS"]
