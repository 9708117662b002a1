"""Pin the autograder image to the packages of the environment the build runs in (the one the tests ran in).

``mlsys-grader autograder`` walks the requirements of what the image needs — this package's
own dependencies and the roots in ``autograder/requirements.txt`` — through the installed
distributions' metadata (markers and extras evaluated here), and pins every distribution
reached to the version installed here: ``name==version``.  Two image builds from the same
zip then install the same packages, and they are the packages the tests ran with.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata

from ..errors import GraderError


class LockError(GraderError, RuntimeError):
    """Raised when a package the autograder needs is missing here, installed from a local path, or too old."""


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
    """``name==version`` for every distribution ``roots`` need, as installed in this environment."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    installed: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        installed.setdefault(canonicalize_name(dist.metadata["Name"] or ""), dist)
    excluded = {canonicalize_name(name) for name in exclude}
    try:
        queue = [r for r in map(Requirement, roots) if r.marker is None or r.marker.evaluate({"extra": ""})]
    except InvalidRequirement as exc:
        raise LockError(f"autograder requirement is not valid: {exc}") from exc
    pins: dict[str, str] = {}
    expanded: dict[str, set[str]] = {}
    while queue:
        requirement = queue.pop(0)
        name = canonicalize_name(requirement.name)
        dist = installed.get(name)
        if dist is None:
            raise LockError(f"the autograder needs {requirement} but it is not installed here; install the project "
                            "(pip install '.[test]') and build the autograder from that environment")
        version = dist.version
        if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
            raise LockError(f"the autograder needs {requirement} but {dist.metadata['Name']} {version} is installed here")
        if name not in excluded:
            local = _local_path(dist)
            if local:
                raise LockError(f"{dist.metadata['Name']} {version} is installed from {local}, which the image cannot "
                                "install; install it from PyPI")
            pins[name] = f"{dist.metadata['Name']}=={version}"
        extras = set(requirement.extras)
        if name in expanded and extras <= expanded[name]:
            continue
        new_extras = extras - expanded.get(name, set())
        first = name not in expanded
        expanded.setdefault(name, set()).update(extras)
        for raw in dist.requires or []:
            dependency = Requirement(raw)
            marker = dependency.marker
            if marker is None:
                if first:
                    queue.append(dependency)
                continue
            if (first and marker.evaluate({"extra": ""})) or any(marker.evaluate({"extra": e}) for e in new_extras):
                queue.append(dependency)
    pip = installed.get("pip")
    return Lock(tuple(sorted(pins.values(), key=str.lower)), python_version(), pip.version if pip else None)
