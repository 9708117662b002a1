"""mlsys_grader: replay-based autograding for MLSysBook Lab 07 and Lab 11.

The public API is re-exported here; see ``api`` for loading and grading: :func:`read_submission`
reads a submission in any accepted form into a :class:`Submission`, :func:`grade_submission` grades it.
Importing the package does not import mlsysim (seconds of start-up): the evaluators
load on first use, so reading, validating or re-listing stored grades stays instant.
``solve`` is staff-only: it is here in staff installs, and absent from the student kit's
build and the Gradescope image's, which leave ``mlsys_grader.staff`` out.
"""

from ._version import __version__
from .api import default_rubric, grade_bundle, grade_file, grade_submission, load_rubric, mlsysim_version, read_submission
from .core.models import SCHEMA_VERSION, Bundle, EvidenceRecord, Synthesis, bundle_json_schema, load_bundle
from .core.report import Finding, GradeReport, PartScore
from .core.rubric import Rubric
from .course import BatchOptions, grade_paths, gradebook_dataframe
from .errors import (
    BundleFormatError,
    BundleTooLargeError,
    DomainError,
    GraderError,
    RubricError,
    SchemaVersionError,
    UnknownLabError,
)
from .intake import Submission
from .labs import get_lab, lab_ids, register_lab
from .student import LabSession, open_lab

try:
    from .staff import solve as solve  # re-exported (listed in __all__ below)
except ModuleNotFoundError as exc:  # the student build (mlsys-grader-student) has no staff package
    if exc.name != f"{__name__}.staff":
        raise
    _STAFF: tuple[str, ...] = ()
else:
    _STAFF = ("solve",)

__all__ = [
    "BatchOptions",
    "Bundle",
    "BundleFormatError",
    "BundleTooLargeError",
    "DomainError",
    "EvidenceRecord",
    "Finding",
    "GradeReport",
    "GraderError",
    "LabSession",
    "PartScore",
    "Rubric",
    "RubricError",
    "SCHEMA_VERSION",
    "SchemaVersionError",
    "Submission",
    "Synthesis",
    "UnknownLabError",
    "__version__",
    "bundle_json_schema",
    "default_rubric",
    "get_lab",
    "grade_bundle",
    "grade_file",
    "grade_paths",
    "grade_submission",
    "gradebook_dataframe",
    "lab_ids",
    "load_bundle",
    "load_rubric",
    "mlsysim_version",
    "open_lab",
    "read_submission",
    "register_lab",
    *_STAFF,  # "solve", which sorts after every name above; none in the student build
]
