"""Lab 11 — Acceleration That Survives the Whole Path, one package split along its seams (see :mod:`.lab`).

``LAB`` is the lab object the registry loads (``mlsys_grader.labs``); importing this
package does not import mlsysim (only :mod:`.evaluate` does, on first evaluation).
The judgements' thresholds and gains (``A_*``, ``D_*``, :func:`roofline_gain`,
:func:`whole_path_gain`) are in :mod:`.rules`.
"""

from __future__ import annotations

from .lab import LAB, LAB_ID
from .rules import (
    A_LARGE_SHARE,
    A_SWITCH_NEAR_FULL,
    A_SWITCH_NEAR_NONE,
    D_NEAR_BAND,
    D_NEAR_SHARE,
    D_SMALL_BAND,
    D_SMALL_GAIN,
    EXPERIMENTS,
    MODEL_ID,
    PARTS,
    roofline_gain,
    whole_path_gain,
)
from .words import DECISIONS, LIMITATIONS, TRIGGERS

__all__ = ["A_LARGE_SHARE", "A_SWITCH_NEAR_FULL", "A_SWITCH_NEAR_NONE", "DECISIONS", "D_NEAR_BAND", "D_NEAR_SHARE",
           "D_SMALL_BAND", "D_SMALL_GAIN", "EXPERIMENTS", "LAB", "LIMITATIONS", "MODEL_ID", "PARTS", "TRIGGERS", "LAB_ID",
           "roofline_gain", "whole_path_gain"]
