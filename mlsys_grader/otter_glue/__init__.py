"""Otter-Grader and Gradescope glue: the autograder zip and a score of record outside the kernel.

Outer layer: it imports the core and Otter, never the reverse.

- ``embed``   — the bundle as a notebook output (custom MIME type) and how to find it again;
- ``record``  — the score of record: which bundle was submitted, graded by the core;
- ``gradescope`` — a :class:`~mlsys_grader.core.report.GradeReport` as Gradescope results JSON;
- ``hardening`` — closing the channels through which the student's kernel can reach the runner;
- ``plugin``  — the Otter plugin wiring those into ``otter run`` / Gradescope;
- ``build``   — ``mlsys-grader autograder``: ``otter assign`` plus the wheel and pinned versions.

See ``autograder/README.md`` for the mechanism in words.
"""

from .embed import (
    BUNDLE_MIME,
    bundle_display_data,
    display_bundle,
    find_embedded_bundles,
)

__all__ = ["BUNDLE_MIME", "bundle_display_data", "display_bundle", "find_embedded_bundles"]
