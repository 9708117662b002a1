"""Shared fixtures: real bundles made by ``solve`` with the pinned mlsysim."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path

import pytest

from mlsys_grader import solve
from mlsys_grader.core.jsonio import sha256_of

FIXTURES = Path(__file__).parent / "fixtures"
LABS = ("lab07", "lab11")
TRACKS = ("tinyml", "mobile", "edge", "cloud")


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
