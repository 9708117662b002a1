"""Lab 02's evaluation: the only module of the lab that touches mlsysim (``v1_02_experiments``).

The rest of the lab reaches it through the lab (``lab.evaluator()``, :mod:`mlsys_grader.labs.declared`),
on first use, so the lab loads without mlsysim.
"""

from __future__ import annotations

from mlsysim.labs.experiments import v1_02_experiments as ev

MODEL_KEY: str = ev.MODEL_KEY


def header_facts(track: str) -> list[tuple[str, str]]:
    """The notebook header's meta boxes for ``track`` (the book's header)."""
    profile = ev.TRACKS[track]
    return [("Track", profile["display"]), ("Context", profile["scenario"]),
            ("Deliverable", "Placement decision with a reversal trigger")]


def scenario(track: str) -> str:
    """``track``'s context in the book's words."""
    return str(ev.TRACKS[track]["scenario"])
