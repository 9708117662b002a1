"""Lab 02's hand-written reference answers: the synthesis of the default bundle of each track.

``solve(lab, track)`` (seed None) writes the grader's own template rationale, which the grader flags as generated, so
everything that must score full marks (the master's solution, the reference submissions, the notebook tests) takes its
synthesis from here instead.  Every number is one that bundle's notebook shows, or one a student computes from two
numbers of the same table.  The recommendation is part D's captured placement (local execution on every track's
defaults, rejecting raw input).

These are solutions: the student build of the package leaves this module out
(``mlsys_grader.staff._packaging.STUDENT``), and :meth:`Lab.reference_answers` says so.
"""

from __future__ import annotations

import tomllib
from typing import Any

ANSWERS: dict[str, dict[str, Any]] = tomllib.loads(r'''
''')
"""Track → synthesis answer → value."""
