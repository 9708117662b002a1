"""Errors raised by mlsys_grader.

Every public exception lives here and keeps the data behind its message, so a caller (the
notebook, the CLI, a course script) can say it in its own words or act on it without parsing
text.  The hierarchy, drawn once so a caller can pick what to catch::

    GraderError                          base of everything raised on purpose here
    ├── BundleFormatError (ValueError)   a submission is not a readable bundle     field, expected, got
    │   ├── BundleTooLargeError          over the byte or nesting-depth limit      limit, size
    │   └── SchemaVersionError           a schema_version this release cannot read got, supported
    ├── DomainError (ValueError)         a value outside the lab's domain          part, control, allowed, got
    ├── UnknownLabError (LookupError)    a lab id or track that is not registered  lab, track, known
    ├── RubricError (ValueError)         a rubric file that does not describe the lab  source
    ├── LabSpecError (ValueError)        a lab's declaration (lab.toml) that does not hold together  source, problems
    ├── CourseFileError (ValueError)     a staff file (roster, manifest, course.toml, extensions)
    │                                    that cannot be read                       path, line, problem
    ├── DecisionError (ValueError)       staff review decisions that cannot be applied  problems
    ├── ReplayTableError (ValueError)    a replay table missing, damaged or for another key  path
    ├── OptionsError (ValueError)        the autograder's options block is missing or invalid
    └── BuildError (RuntimeError)        a staff-machine build step failed
        ├── AssignError                  a master missing, or ``otter assign`` failing on it
        ├── AutograderBuildError         the autograder zip cannot be built
        ├── LockError                    the autograder's pins cannot be taken from here
        ├── KitError                     the student kit cannot be made
        │   └── KitRootError             the kit command is not run from the repository root
        ├── WheelBuildError              ``pip wheel`` failed or left other than one wheel  returncode, stderr, found
        ├── LabDistributionError         a lab's own distribution cannot be shipped  distribution, labs, url
        └── PinError                     a requirement that cannot be pinned here   requirement, needed_by
            ├── NotInstalledError        not installed here                         name
            └── VersionConflictError     installed at a version that does not satisfy it  name, installed, installed_as

Only the CLI's outermost handler turns these into exit codes.  Why an input could not be graded travels as an
:class:`ErrorKind` (the gradebook's ``error_kind`` column), never as free text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any


class GraderError(Exception):
    """Base class for every error mlsys_grader raises on purpose."""


class BundleFormatError(GraderError, ValueError):
    """Raised when bytes or a mapping cannot be read as a submission bundle.

    ``field`` is the dotted path of the value at fault when there is one (``records.0.part``),
    ``expected`` what belongs there and ``got`` what arrived (a short description, never the
    submission's bytes)."""

    def __init__(self, message: str, *, field: str | None = None, expected: str | None = None, got: Any = None) -> None:
        super().__init__(message)
        self.field, self.expected, self.got = field, expected, got


class BundleTooLargeError(BundleFormatError):
    """Raised when a submission exceeds the byte-size or nesting-depth limit (``limit``; ``size`` when measured)."""

    def __init__(self, message: str, *, limit: int | None = None, size: int | None = None) -> None:
        super().__init__(message, expected=None if limit is None else f"at most {limit}", got=size)
        self.limit, self.size = limit, size


class SchemaVersionError(BundleFormatError):
    """Raised when a bundle declares a schema_version this release cannot read (``got``; ``supported``)."""

    def __init__(self, message: str, *, got: Any = None, supported: Iterable[int] = ()) -> None:
        self.supported = tuple(supported)
        super().__init__(message, field="schema_version", expected=", ".join(map(str, self.supported)) or None, got=got)


class DomainError(GraderError, ValueError):
    """Raised when a value lies outside the lab's allowed domain.

    ``part`` and ``control`` name where (either may be ``None``: a part letter that is not the
    lab's has no control), ``allowed`` lists what is accepted (empty for a range, which the
    message states) and ``got`` is the value that arrived, as given."""

    def __init__(self, message: str, *, part: str | None = None, control: str | None = None,
                 allowed: Sequence[Any] = (), got: Any = None) -> None:
        super().__init__(message)
        self.part, self.control, self.allowed, self.got = part, control, tuple(allowed), got


class UnknownLabError(GraderError, LookupError):
    """Raised when a lab id or track name is not one this package knows (``lab``, ``track``; ``known`` the choices)."""

    def __init__(self, message: str, *, lab: str | None = None, track: str | None = None, known: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.lab, self.track, self.known = lab, track, tuple(known)


class RubricError(GraderError, ValueError):
    """Raised when a rubric file is malformed or does not match its lab (``source`` names the file)."""

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(message)
        self.source = source


class LabSpecError(GraderError, ValueError):
    """A lab's declaration (``lab.toml``) that cannot be used: each problem names the file, the key and what is
    allowed there (``source`` is the file, ``problems`` one line each)."""

    def __init__(self, message: str, *, source: str = "", problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.source, self.problems = source, tuple(problems)


class CourseFileError(GraderError, ValueError):
    """Raised when a staff file (roster, manifest, course.toml, extensions CSV) is malformed.

    The message names the file, the line, what was expected and what arrived.
    """

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path, self.line, self.problem = str(path), line, problem
        super().__init__(f"{self.path}{f', line {line}' if line else ''}: {problem}")


class DecisionError(GraderError, ValueError):
    """Raised when a staff decision (page, command or CSV line) names an unknown student or item, points out of
    range, or a submission that no longer counts; ``problems`` lists every one (with its line, for a file)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems) if len(self.problems) < 2 else
                         f"{len(self.problems)} problems, nothing imported:\n  " + "\n  ".join(self.problems))


class ReplayTableError(GraderError, ValueError):
    """Raised when a replay table file is missing, truncated, tampered with or for another key (``path``)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class OptionsError(GraderError, ValueError):
    """Raised when the plugin's block in ``otter_config.json`` is missing or invalid."""


class BuildError(GraderError, RuntimeError):
    """Base of the errors of a build step on a staff machine (assign, autograder zip, lock, kit, wheels)."""


class AssignError(BuildError):
    """Raised when a master notebook is missing or ``otter assign`` fails on it."""


class AutograderBuildError(BuildError):
    """Raised when the source tree, a master, ``otter assign`` or the wheel build does not give what the zip needs."""


class LockError(BuildError):
    """Raised when a package the autograder needs is missing here, installed from a local path, or too old."""


class KitError(BuildError):
    """Raised when the kit cannot be made (a wheel that does not build, a dependency not installed here)."""


class KitRootError(KitError):
    """Raised when the kit command does not run from the repository root."""


class WheelBuildError(BuildError):
    """Raised when ``pip wheel`` fails on the source tree or does not leave exactly one wheel."""

    def __init__(self, message: str, *, returncode: int | None = None, stderr: str = "", found: tuple[str, ...] = ()):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.found = found


class LabDistributionError(BuildError):
    """Raised when the distribution a lab comes from (a course's own lab package) cannot be shipped as a wheel:
    it was installed from a folder or a wheel file (``url``) that is no longer there."""

    def __init__(self, message: str, *, distribution: str, labs: tuple[str, ...], url: str):
        super().__init__(message)
        self.distribution = distribution
        self.labs = labs
        self.url = url


class PinError(BuildError):
    """Raised when a requirement cannot be pinned to this environment; ``requirement`` is the one at fault."""

    def __init__(self, message: str, *, requirement: str, needed_by: str):
        super().__init__(message)
        self.requirement = requirement
        self.needed_by = needed_by


class NotInstalledError(PinError):
    """Raised when a needed distribution is not installed here (``name`` is the requirement's name)."""

    def __init__(self, requirement: str, *, name: str, needed_by: str):
        super().__init__(f"{requirement} (needed by {needed_by}) is not installed here", requirement=requirement,
                         needed_by=needed_by)
        self.name = name


class VersionConflictError(PinError):
    """Raised when the installed version of a distribution does not satisfy the requirement on it."""

    def __init__(self, requirement: str, *, name: str, installed: str, installed_as: str, needed_by: str):
        super().__init__(f"{needed_by} needs {requirement}, but {name} {installed} is installed here",
                         requirement=requirement, needed_by=needed_by)
        self.name = name
        self.installed = installed
        self.installed_as = installed_as
        """The installed distribution's own name (``PyYAML`` for a requirement on ``pyyaml``)."""


class ErrorKind(StrEnum):
    """Why an input could not be graded: the gradebook's ``error_kind`` column.  The error classes keep their names
    (``BundleFormatError`` …); the other kinds say what the reader or the worker found."""

    MISSING_BUNDLE = "MissingBundle"
    """A notebook or upload folder that holds no saved bundle."""
    UNSUPPORTED = "Unsupported"
    """A file in no accepted form (a PDF, a text file)."""
    FORMAT_REFUSED = "FormatRefused"
    """A form the course does not accept (its course file's ``formats``)."""
    REFUSED = "Refused"
    """An input the discovery refused before reading (an export holding nothing to read, a link out of the folder)."""
    OS_ERROR = "OSError"
    """The file could not be read from disk."""
    TIMEOUT = "Timeout"
    """Grading it did not finish in time."""
    GRADER_ERROR = "GraderError"
    BUNDLE_FORMAT = "BundleFormatError"
    BUNDLE_TOO_LARGE = "BundleTooLargeError"
    SCHEMA_VERSION = "SchemaVersionError"
    DOMAIN = "DomainError"
    UNKNOWN_LAB = "UnknownLabError"
    RUBRIC = "RubricError"
    REPLAY_TABLE = "ReplayTableError"

    @classmethod
    def of(cls, exc: BaseException) -> ErrorKind:
        """The kind of an error raised while reading or grading: its own class's, else its nearest listed base's."""
        if isinstance(exc, OSError) and not isinstance(exc, GraderError):
            return cls.OS_ERROR
        known = {kind.value: kind for kind in cls}
        return next((known[klass.__name__] for klass in type(exc).__mro__ if klass.__name__ in known), cls.GRADER_ERROR)
