"""Errors raised by mlsys_grader.

The hierarchy, drawn once so a caller can pick what to catch::

    GraderError                      base of everything raised on purpose here
    ├── BundleFormatError (ValueError)   a submission is not a readable bundle
    │   ├── BundleTooLargeError          over the byte or nesting-depth limit
    │   └── SchemaVersionError           a schema_version this release cannot read
    ├── DomainError (ValueError)         a control value outside the lab's domain
    ├── UnknownLabError (LookupError)    a lab id or track that is not registered
    ├── RubricError (ValueError)         a rubric file that does not describe the lab
    └── CourseFileError (ValueError)     a staff file (roster, manifest, course.toml, extensions)
                                         that cannot be read; names the file and line

Only the CLI's outermost handler turns these into exit codes.
"""

from __future__ import annotations


class GraderError(Exception):
    """Base class for every error mlsys_grader raises on purpose."""


class BundleFormatError(GraderError, ValueError):
    """Raised when bytes or a mapping cannot be read as a submission bundle."""


class BundleTooLargeError(BundleFormatError):
    """Raised when a submission exceeds the byte-size or nesting-depth limit."""


class SchemaVersionError(BundleFormatError):
    """Raised when a bundle declares a schema_version this release cannot read."""


class DomainError(GraderError, ValueError):
    """Raised when a control value lies outside the lab's allowed domain."""


class UnknownLabError(GraderError, LookupError):
    """Raised when a lab id or track name is not one this package knows."""


class RubricError(GraderError, ValueError):
    """Raised when a rubric file is malformed or does not match its lab."""


class CourseFileError(GraderError, ValueError):
    """Raised when a staff file (roster, manifest, course.toml, extensions CSV) is malformed.

    The message names the file, the line, what was expected and what arrived.
    """

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path, self.line, self.problem = str(path), line, problem
        super().__init__(f"{self.path}{f', line {line}' if line else ''}: {problem}")
