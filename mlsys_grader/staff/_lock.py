"""Pin the autograder image to the packages of the environment the build runs in (the one the tests ran in).

``mlsys-grader autograder`` walks the requirements of what the image needs — this package's
own dependencies and the roots in ``autograder/requirements.txt`` — through the installed
distributions' metadata (markers and extras evaluated here; the walk is
:func:`mlsys_grader.staff._packaging.installed_closure`, shared with the student kit), and pins every
distribution reached to the version installed here: ``name==version``.  Two image builds from the same
zip then install the same packages, and they are the packages the tests ran with.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata

from packaging.requirements import InvalidRequirement
from packaging.utils import canonicalize_name

from ..errors import LockError, NotInstalledError, VersionConflictError
from ._packaging import installed_closure


@dataclass(frozen=True)
class Lock:
    pins: tuple[str, ...]
    python: str
    pip: str | None = None

    def text(self, header: str) -> str:
        tools = f"# python=={self.python}" + (f", pip=={self.pip}" if self.pip else "") + " (conda packages in environment.yml)"
        return "\n".join([f"# {line}" for line in header.splitlines()] + [tools] + list(self.pins)) + "\n"


def python_version() -> str:
    """This interpreter's version as a conda pin (``3.11.7``; ``3.11`` for a pre-release)."""
    info = sys.version_info
    return f"{info.major}.{info.minor}.{info.micro}" if info.releaselevel == "final" else f"{info.major}.{info.minor}"


def _local_path(dist: metadata.Distribution) -> str | None:
    raw = dist.read_text("direct_url.json")
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data.get("url") if isinstance(data, dict) and ("dir_info" in data or str(data.get("url", "")).startswith("file:")) else None


def lock(roots: Iterable[str], *, exclude: Iterable[str] = ("mlsys-grader",)) -> Lock:
    """``name==version`` for every distribution ``roots`` need, as installed in this environment.

    The closure is :func:`mlsys_grader.staff._packaging.installed_closure`'s; ``exclude`` names
    distributions that are walked through but not pinned (this package: its wheel ships in the zip).
    """
    try:
        closure = installed_closure(roots)
    except InvalidRequirement as exc:
        raise LockError(f"autograder requirement is not valid: {exc}") from exc
    except NotInstalledError as exc:
        raise LockError(f"the autograder needs {exc.requirement} but it is not installed here; install the project "
                        "(pip install '.[test]') and build the autograder from that environment") from exc
    except VersionConflictError as exc:
        raise LockError(f"the autograder needs {exc.requirement} but {exc.installed_as} {exc.installed} is installed here") from exc
    excluded = {canonicalize_name(name) for name in exclude}
    pins = []
    for key, pinned in closure.items():
        if key in excluded:
            continue
        local = _local_path(pinned.distribution)
        if local:
            raise LockError(f"{pinned.name} {pinned.version} is installed from {local}, which the image cannot "
                            "install; install it from PyPI")
        pins.append(pinned.pin)
    return Lock(tuple(sorted(pins, key=str.lower)), python_version(), _installed_version("pip"))


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
