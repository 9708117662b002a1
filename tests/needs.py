"""What a test needs from outside the repository, and whether this run must have it.

A newcomer's clone has nothing beside it: no ``../shared`` (the Gradescope emulator, the
book's marimo exports), maybe no Chromium, maybe no root.  Tests that need one of those
skip there with a one-line reason.  CI always has them, so ``.ci/run`` sets
``MLSYS_GRADER_REQUIRE`` (a comma-separated list of the names below, or ``all``) and a
missing resource then fails the test instead of skipping it.

Names: ``shared`` (the folder ``shared/`` beside the repository), ``chromium`` (a headless
Chromium on PATH), ``root`` (the process runs as root).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
RESOURCES = ("shared", "chromium", "root")
ENVIRONMENT = "MLSYS_GRADER_REQUIRE"


def required() -> frozenset[str]:
    """The resources this run says it must have (``MLSYS_GRADER_REQUIRE``)."""
    names = {name.strip() for name in os.environ.get(ENVIRONMENT, "").split(",") if name.strip()}
    unknown = names - {*RESOURCES, "all"}
    if unknown:
        raise ValueError(f"{ENVIRONMENT} names {sorted(unknown)}; expected a comma-separated list of {list(RESOURCES)} or 'all'")
    return frozenset(RESOURCES) if "all" in names else frozenset(names)


def need(resource: str, reason: str | None) -> None:
    """Skip (or, when this run requires ``resource``, fail) the calling test if ``reason`` says it is missing.

    ``reason`` is None when the resource is there, else one line saying what is missing.
    """
    if resource not in RESOURCES:
        raise ValueError(f"unknown resource {resource!r}; expected one of {list(RESOURCES)}")
    if reason is None:
        return
    if resource in required():
        pytest.fail(f"{reason} — and {ENVIRONMENT} says this run must have {resource!r}", pytrace=False)
    pytest.skip(reason)


def shared_path(*parts: str) -> Path:
    """A path under ``../shared``; the calling test skips (or fails, when required) if it does not exist."""
    path = SHARED.joinpath(*parts)
    need("shared", None if path.exists() else f"needs {path} (a copy of shared/ beside the repository)")
    return path


def chromium() -> str:
    """The Chromium executable; the calling test skips (or fails, when required) without one."""
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    need("chromium", None if found else "needs a headless Chromium on PATH (Debian: apt-get install chromium)")
    return found or ""


def root(why: str) -> None:
    """The calling test skips (or fails, when required) unless it runs as root; ``why`` says what needs it."""
    need("root", None if os.geteuid() == 0 else f"needs root: {why}")
