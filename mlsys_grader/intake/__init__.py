"""Intake: how every edge reads a submission (student ``check``, course ``grade``, the Gradescope runner, the API).

This layer sits above :mod:`mlsys_grader.core` and :mod:`mlsys_grader.labs` and below the
three edges (:mod:`mlsys_grader.student`, :mod:`mlsys_grader.course`,
:mod:`mlsys_grader.gradescope`), so that the same file is read the same way everywhere:
:func:`read_submission` turns a path or bytes in any accepted form into one
:class:`Submission`, which :func:`mlsys_grader.api.grade_submission` grades.  The course file
(:func:`read_course`) and staff CSVs are read here too: bulk grading and the Gradescope runner both read them.
"""

from ._course import (
    Counting,
    Course,
    CourseFile,
    LabPolicy,
    RosterKeys,
    read_course,
    read_extensions,
    read_staff_csv,
)
from ._reader import (
    FORMATS,
    GRADESCOPE_METADATA,
    MAX_NOTEBOOK_BYTES,
    MAX_ZIP_BYTES,
    ORIGIN_FORMATS,
    ORIGIN_WORDS,
    SKIP_DIRS,
    Format,
    Submission,
    bundle_beside,
    file_digest,
    is_markdown_report,
    is_notebook,
    is_submission_json,
    lab_hint,
    lab_named,
    lab_names,
    listdir,
    notebook_bundle_text,
    pick_primary,
    read_bounded,
    read_submission,
    refusal,
    walk_files,
    zip_member_bytes,
)

__all__ = [
    "Counting",
    "Course",
    "CourseFile",
    "FORMATS",
    "GRADESCOPE_METADATA",
    "SKIP_DIRS",
    "MAX_NOTEBOOK_BYTES",
    "MAX_ZIP_BYTES",
    "ORIGIN_FORMATS",
    "ORIGIN_WORDS",
    "Format",
    "LabPolicy",
    "RosterKeys",
    "Submission",
    "bundle_beside",
    "file_digest",
    "is_markdown_report",
    "is_notebook",
    "is_submission_json",
    "lab_hint",
    "lab_named",
    "lab_names",
    "listdir",
    "notebook_bundle_text",
    "pick_primary",
    "read_bounded",
    "read_course",
    "read_extensions",
    "read_staff_csv",
    "read_submission",
    "refusal",
    "walk_files",
    "zip_member_bytes",
]
