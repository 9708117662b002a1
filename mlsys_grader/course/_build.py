"""Which grading code a stored result was graded by: the package version and a digest of the code that decides a grade.

The gradebook reuses a stored result only under the same rubrics and the same grading code.  The version alone does
not say that: between two releases, and in a checkout that tracks the project, the code that reads a rationale or
checks a part changes while the version stays, and a rerun would keep the grades the earlier code gave.  So the key
is the version joined with a digest of every source file a grade goes through (the core's checks and reader, the
lab declarations, the intake that reads a submission, the replay), ``0.1.0+3f2a9c1d07be``: any edit there makes a
rerun grade every input again, and the change log says ``grader`` for each score that moved.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from .._version import __version__

GRADING_SOURCES = ("core", "labs", "intake", "replay", "api.py", "_mlsysim.py")
"""What a grade goes through, under the package folder: folders are read whole (Python, TOML and JSON files)."""
_SUFFIXES = frozenset({".py", ".toml", ".json"})


@cache
def grading_build() -> str:
    """``<version>+<12 hex digits>``: the package version and the digest of :data:`GRADING_SOURCES`."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in GRADING_SOURCES:
        where = package / name
        files = [where] if where.is_file() else sorted(p for p in where.rglob("*") if p.suffix in _SUFFIXES and p.is_file())
        for path in files:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{__version__}+{digest.hexdigest()[:12]}"
