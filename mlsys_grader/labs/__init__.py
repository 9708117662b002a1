"""One module per lab; this registry is the only place that lists them."""

from __future__ import annotations

import importlib

from .._mlsysim import import_mlsysim
from ..core.labspec import LabSpec
from ..errors import UnknownLabError

LAB_MODULES = {"lab07": "mlsys_grader.labs.lab07", "lab11": "mlsys_grader.labs.lab11"}
_LOADED: dict[str, LabSpec] = {}


def lab_ids() -> tuple[str, ...]:
    """Every registered lab id, sorted."""
    return tuple(sorted(LAB_MODULES))


def get_lab(lab_id: str) -> LabSpec:
    """The :class:`LabSpec` for ``lab_id`` (imported on first use: mlsysim is slow to import)."""
    if lab_id not in LAB_MODULES:
        raise UnknownLabError(f"unknown lab {lab_id!r}; expected one of {', '.join(lab_ids())}")
    if lab_id not in _LOADED:
        import_mlsysim()
        _LOADED[lab_id] = importlib.import_module(LAB_MODULES[lab_id]).LAB
    return _LOADED[lab_id]
