"""Gradescope and Otter-Grader: masters → student notebooks, autograder zips, the score of record.

Outer layer: it imports the core and Otter, never the reverse.  Modules (private):

- ``_embed``     — the bundle as a notebook output (custom MIME type) and how to find it again;
- ``_record``    — the score of record: which bundle was submitted, graded by the core;
- ``_results``   — a grade report as Gradescope results JSON;
- ``_hardening`` — closing the channels through which the student's kernel can reach the runner;
- ``_plugin``    — the Otter plugin wiring those into ``otter run`` / Gradescope;
- ``_assign``    — ``otter assign``: masters → student notebooks (``mlsys-grader assign``);
- ``_build``     — ``mlsys-grader autograder``: ``otter assign`` plus the wheel and pinned versions.

Otter's configuration names the plugin by the dotted path
``mlsys_grader.gradescope.ScoreOfRecordPlugin`` (pinned by a test).  Names that import
Otter load on first access, so ``import mlsys_grader.gradescope`` stays cheap for the
notebook, which only needs the embedding helpers.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ._embed import BUNDLE_MIME, bundle_display_data, display_bundle, find_embedded_bundles

_LAZY = {
    "ScoreOfRecordPlugin": "._plugin",
    "PLUGIN_NAME": "._plugin",
    "build_autograders": "._build",
    "AutograderBuildError": "._build",
    "regenerate": "._assign",
    "drift": "._assign",
    "AssignError": "._assign",
    "ScoreOfRecord": "._record",
    "score_of_record": "._record",
    "gradescope_results": "._results",
}

__all__ = sorted(["BUNDLE_MIME", "bundle_display_data", "display_bundle", "find_embedded_bundles", *_LAZY])


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
