"""What runs on Gradescope (and under ``otter run``): the upload, the score of record, the results.

Outer layer: it imports the core, the labs and Otter, never the reverse.  Modules (private):

- ``_options``    — the autograder's options (the plugin's block in ``otter_config.json``);
- ``_upload``     — what a student uploaded, read as data: notebook, bundle, or why neither;
- ``_record``     — the score of record: the submitted bundle, graded by the core;
- ``_otter_tests``— Otter's test files run against a bundle, item by item, and compared with the
  record (what the test files call is :mod:`mlsys_grader.otter`);
- ``_pipeline``   — the one grading pipeline (record, Otter's tests, the notebook's run, results)
  that ``_runner`` and ``_plugin`` both drive;
- ``_results``    — a score of record as Gradescope results JSON; ``_late`` the course's late policy on it;
- ``_runner``     — Gradescope's ``run_autograder`` (``python -I -m mlsys_grader.gradescope``);
- ``_plugin``     — the Otter plugin for ``otter run``: a thin adapter over ``_pipeline``;
- ``_sandbox``    — running a notebook as an unprivileged user and killing all it started;
  ``_in_sandbox`` is the program that runs there, ``_watch`` what it tried;
- ``_hardening``  — closing the channels through which a kernel can reach Otter's runner;
- ``_embed``      — displaying the embedded bundle (the format is :mod:`mlsys_grader.core.embed`).

What builds on a staff machine (``otter assign``, the autograder zips, the kit) is
:mod:`mlsys_grader.staff`, which this package never imports.

Otter's configuration names the plugin by the dotted path
``mlsys_grader.gradescope.ScoreOfRecordPlugin`` (pinned by a test).  Names that import
Otter load on first access, so ``import mlsys_grader.gradescope`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ._embed import BUNDLE_MIME, bundle_display_data, display_bundle, find_embedded_bundles

# name → the private module defining it, imported on first access: some import Otter
_LAZY = {
    "ScoreOfRecordPlugin": "._plugin",
    "PLUGIN_NAME": "._options",
    "AutograderOptions": "._options",
    "run_autograder": "._runner",
    "ScoreOfRecord": "._record",
    "score_of_record": "._record",
    "gradescope_results": "._results",
    "with_options": "._options",
}

__all__ = [
    "AutograderOptions",
    "BUNDLE_MIME",
    "PLUGIN_NAME",
    "ScoreOfRecord",
    "ScoreOfRecordPlugin",
    "bundle_display_data",
    "display_bundle",
    "find_embedded_bundles",
    "gradescope_results",
    "run_autograder",
    "score_of_record",
    "with_options",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
