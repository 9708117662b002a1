"""The course file (``grade --course course.toml``): deadlines, late policy, extensions, LMS assignment ids.

::

    extensions = "extensions.csv"          # relative to this file: student (email or sid), lab, days, reason
    counting = "latest"                    # which submission counts: latest (by trusted time) or best
    [labs.lab07]
    deadline = 2026-02-06T23:59:00-08:00   # a TOML datetime with its offset
    grace_minutes = 30
    penalty_per_day = 10                   # percent of the score, per started day after deadline + grace
    cap = 50                               # percent, at most
    canvas_assignment_id = 123456          # optional, for the Canvas export's column header

The penalty (:mod:`mlsys_grader.core.late`, the rule the Gradescope runner applies too) is
``min(cap, penalty_per_day × started days)`` percent of the score, the days counted from the
deadline plus the grace plus the student's extension.  Only a time the
student does not control counts (the manifest's ``submitted_at``, Gradescope's
``created_at``): without one there is no penalty, and the rule says so.
"""

from __future__ import annotations

from datetime import datetime

from ..core.late import Penalty
from ..core.late import penalty as core_penalty
from ..intake import Counting, Course, CourseFile, LabPolicy, read_course, read_extensions

__all__ = ["Counting", "Course", "CourseFile", "LabPolicy", "penalty", "read_course", "read_extensions"]
"""The course file is read in :mod:`mlsys_grader.intake` (the Gradescope runner reads it too); this module keeps the
penalty under its policy and re-exports what bulk grading imports from here."""


def penalty(course: Course | None, student: str, lab: str, submitted_at: datetime | None, late_marker: bool = False) -> Penalty:
    """The late penalty (percent of the score) and the rule applied, in words: the core's rule
    (:func:`mlsys_grader.core.late.penalty`) under the course file's policy for ``lab`` and the student's extension."""
    return core_penalty(course.file.labs.get(lab) if course else None, submitted_at, late_marker,
                        extension=course.extensions.get((student, lab)) if course else None)
