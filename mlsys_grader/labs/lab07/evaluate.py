"""Lab 07's evaluation: the only module of the lab that touches mlsysim (``v1_07_experiments``).

The rest of the lab reaches it through the lab (``lab.evaluator()``, :mod:`mlsys_grader.labs.declared`),
on first use, so the lab loads without mlsysim.
"""

from __future__ import annotations

from mlsysim.labs.experiments import v1_07_experiments as ev

MODEL_KEY: str = ev.MODEL_KEY
OPERATION_COUNT: int = len(ev.OPERATION_GRAPH)


def tensor_elements(track: str) -> int:
    """The tensor size every part of ``track`` runs at."""
    return ev.TRACKS[track].default_elements


def target_name(track: str) -> str | None:
    """The registry's name of ``track``'s target device, or None for a track the evaluators do not know."""
    profile = ev.TRACKS.get(track)
    return None if profile is None else profile.target.name


def header_facts(track: str) -> list[tuple[str, str]]:
    """The notebook header's meta boxes for ``track`` (the seed's header)."""
    profile = ev.TRACKS[track]
    return [("Track", profile.display), ("Workload", profile.workload), ("Target", profile.target.name),
            ("Output", "Runtime-path recommendation")]


def workload(track: str) -> str:
    """``track``'s workload in the book's words."""
    return ev.TRACKS[track].workload
