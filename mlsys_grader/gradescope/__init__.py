"""Gradescope and Otter-Grader: masters → student notebooks, autograder zips, the score of record.

Outer layer: it imports the core and Otter, never the reverse.  Modules (private):

- ``_embed``      — the bundle as a notebook output (custom MIME type) and how to find it again;
- ``_options``    — the autograder's options (the plugin's block in ``otter_config.json``);
- ``_upload``     — what a student uploaded, read as data: notebook, bundle, or why neither;
- ``_record``     — the score of record: the submitted bundle, graded by the core;
- ``_otter_tests``— Otter's test files run against a bundle, item by item, and compared with the record;
- ``_results``    — a score of record as Gradescope results JSON;
- ``_runner``     — Gradescope's ``run_autograder`` (``python -I -m mlsys_grader.gradescope``);
- ``_sandbox``    — running a notebook as an unprivileged user and killing all it started;
  ``_in_sandbox`` is the program that runs there, ``_watch`` what it tried;
- ``_hardening``  — closing the channels through which a kernel can reach Otter's runner;
- ``_plugin``     — the Otter plugin for ``otter run``;
- ``_assign``     — ``otter assign``: masters → student notebooks (``mlsys-grader assign``);
- ``_build``, ``_lock`` — ``mlsys-grader autograder``: the zips, pinned to the build environment.

Otter's configuration names the plugin by the dotted path
``mlsys_grader.gradescope.ScoreOfRecordPlugin`` (pinned by a test).  Names that import
Otter load on first access, so ``import mlsys_grader.gradescope`` stays cheap for the
notebook, which only needs the embedding helpers.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ._embed import BUNDLE_MIME, bundle_display_data, display_bundle, find_embedded_bundles

# name → the private module defining it, imported on first access: some import Otter, and the notebook
# imports this package for the embedding helpers alone
_LAZY = {
    "ScoreOfRecordPlugin": "._plugin",
    "PLUGIN_NAME": "._options",
    "AutograderOptions": "._options",
    "grade_submission": "._runner",
    "build_autograders": "._build",
    "AutograderBuildError": "._build",
    "regenerate": "._assign",
    "drift": "._assign",
    "AssignError": "._assign",
    "ScoreOfRecord": "._record",
    "score_of_record": "._record",
    "gradescope_results": "._results",
}

__all__ = [
    "AssignError",
    "AutograderBuildError",
    "AutograderOptions",
    "BUNDLE_MIME",
    "PLUGIN_NAME",
    "ScoreOfRecord",
    "ScoreOfRecordPlugin",
    "build_autograders",
    "bundle_display_data",
    "display_bundle",
    "drift",
    "find_embedded_bundles",
    "grade_submission",
    "gradescope_results",
    "regenerate",
    "score_of_record",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
