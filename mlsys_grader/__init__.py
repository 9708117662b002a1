"""mlsys_grader: replay-based autograding for the labs of the MLSysBook (Lab 02, 07, 08 and 11 ship here).

The public API is re-exported here; see ``api`` for loading and grading: :func:`read_submission`
reads a submission in any accepted form into a :class:`Submission`, :func:`grade_submission` grades it.
Importing the package does not import mlsysim (seconds of start-up): the evaluators
load on first use, so reading, validating or re-listing stored grades stays instant.
``solve`` is staff-only: it is here in staff installs, and absent from the student kit's
build and the Gradescope image's, which leave ``mlsys_grader.staff`` out.
"""

import typing as _typing
from importlib.util import find_spec as _find_spec

from ._version import __version__
from .api import default_rubric, grade_bundle, grade_file, grade_submission, load_rubric, mlsysim_version, read_submission
from .core.models import SCHEMA_VERSION, Bundle, EvidenceRecord, Synthesis, bundle_json_schema, load_bundle
from .core.report import Finding, GradeReport, PartScore
from .core.rubric import Rubric
from .errors import (
    BundleFormatError,
    BundleTooLargeError,
    DomainError,
    ErrorKind,
    GraderError,
    RubricError,
    SchemaVersionError,
    UnknownLabError,
)
from .intake import Submission
from .labs import get_lab, lab_ids, register_lab
from .replay import Replay

if _typing.TYPE_CHECKING:
    from .course import BatchOptions, grade_paths, gradebook_dataframe
    from .staff import solve as solve
    from .student import LabSession, open_lab

_LAZY = {"BatchOptions": ".course", "grade_paths": ".course", "gradebook_dataframe": ".course",
         "LabSession": ".student", "open_lab": ".student", "solve": ".staff"}
"""Public names loaded on first use, so grading one file (``mlsys-grader check``, the notebook's self-check) does not
import bulk grading, the notebook API or the staff tools."""
_STAFF: tuple[str, ...] = ("solve",) if _find_spec(f"{__name__}.staff") is not None else ()
"""``solve`` in staff installs; none in the student build (mlsys-grader-student), which has no staff package."""


def __getattr__(name: str) -> object:
    if name in _LAZY and (name != "solve" or _STAFF):
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *(name for name in _LAZY if name != "solve" or _STAFF)})

__all__ = [
    "BatchOptions",
    "Bundle",
    "BundleFormatError",
    "BundleTooLargeError",
    "DomainError",
    "ErrorKind",
    "EvidenceRecord",
    "Finding",
    "GradeReport",
    "GraderError",
    "LabSession",
    "PartScore",
    "Replay",
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
