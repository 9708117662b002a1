"""Shared fixtures: real bundles made by ``solve`` with the pinned mlsysim.

Nothing here imports mlsysim at collection: ``solve`` loads the evaluators on first use,
so ``pytest --collect-only`` and a ``-k`` selection stay quick.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mlsys_grader import solve
from mlsys_grader.core.jsonio import sha256_of

FIXTURES = Path(__file__).parent / "fixtures"
LABS = ("lab07", "lab11")
TRACKS = ("tinyml", "mobile", "edge", "cloud")
LAB_TRACKS = tuple(itertools.product(LABS, TRACKS))


@cache
def _solved_json(lab: str, track: str, seed: int | None) -> str:
    return solve(lab, track, seed).to_json()


def solved(lab: str, track: str, seed: int | None = None) -> dict:
    """A fresh, mutable JSON copy of a full-marks bundle."""
    return json.loads(_solved_json(lab, track, seed))


def reseal(data: dict) -> dict:
    """Recompute the content hash, as a tamperer who knows the format would."""
    data = copy.deepcopy(data)
    data.pop("content_hash", None)
    data["content_hash"] = sha256_of(data)
    return data


def to_bytes(data: dict) -> bytes:
    return json.dumps(data).encode()


@pytest.fixture
def solved_bundle():
    return solved


def sweep(cases: Iterable[Any], fast: Sequence[Any]) -> list[Any]:
    """``cases`` as parameters, every one not in ``fast`` marked ``slow``.

    An exhaustive sweep still runs in full under ``pytest`` (and CI), while
    ``pytest -m "not slow"`` keeps the representatives in ``fast``.  A tuple case
    becomes that many arguments.
    """
    def param(case: Any, *marks: pytest.MarkDecorator) -> Any:
        return pytest.param(*case, marks=marks) if isinstance(case, tuple) else pytest.param(case, marks=marks)

    cases = list(cases)
    missing = [case for case in fast if case not in cases]
    if missing:
        raise ValueError(f"representatives {missing} are not among the cases {cases}")
    return [param(case) if case in fast else param(case, pytest.mark.slow) for case in cases]
