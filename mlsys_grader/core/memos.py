"""The bounded memos the checks read through, owned by whoever grades.

Every memo here is an optimisation of a pure computation: what it returns is what the computation
returns.  The core keeps none of them itself: a :class:`Memos` belongs to the replay service that
grades (:class:`mlsys_grader.replay.Replay` holds one), and reaches the checks through the grading
context, so what a grade depends on is in its arguments.  Each memo is a bounded cache
(:mod:`cachetools`), least recently used first out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cachetools import LRUCache

from .jsonio import canonical_dumps, exact_key

PER_OBJECT_SIZE = 8192
"""Values (a plan's arms, its upstream, its inputs) whose keys, texts and fingerprints are kept."""
RECORDED_SIZE = 1024
"""Distinct arms whose usable quantities are kept (:func:`.rationale.recorded_quantities`)."""
EVIDENCE_SIZE = 4096
"""Replayed parts whose indexed evidence is kept (:func:`.rationale.part_evidence`)."""
READERS_SIZE = 64
"""Compiled rationale readers kept (one per lab and set of choice terms: :func:`.rationale.reader_for`)."""


class PerObject:
    """What ``compute(value, *args)`` gives, kept per object.

    The values it is asked about are a replay's own (its plans and the arms they hold are shared, read-only
    and long-lived), so each is serialised or hashed once, not once per bundle that records it.  A value is
    kept with its result, so its ``id`` cannot be reused while it is remembered."""

    def __init__(self, compute: Callable[..., Any], size: int = PER_OBJECT_SIZE) -> None:
        self._compute = compute
        self._kept: LRUCache[tuple[Any, ...], tuple[Any, Any]] = LRUCache(size)

    def __call__(self, value: Any, *args: Any) -> Any:
        key = (id(value), *args)
        found = self._kept.get(key)
        if found is not None and found[0] is value:
            return found[1]
        result = self._compute(value, *args)
        self._kept[key] = (value, result)
        return result


def _fingerprint(upstream: Any, lab: Any, track: str, part: str) -> str:
    fingerprint: str = lab.fingerprint(track, part, upstream)
    return fingerprint


class Memos:
    """The memos one grading service keeps for the core's checks (see the module docstring)."""

    def __init__(self) -> None:
        self.exact_keys = PerObject(exact_key)
        """:func:`~.jsonio.exact_key` of a plan's value."""
        self.canonical_texts = PerObject(canonical_dumps)
        """:func:`~.jsonio.canonical_dumps` of a plan's value (a record's inputs hold the same values in another key order)."""
        self.fingerprints = PerObject(_fingerprint)
        """The lab's fingerprint of a plan's ``upstream`` (``(upstream, lab, track, part)``)."""
        self.recorded_quantities: LRUCache[tuple[Any, bytes], Any] = LRUCache(RECORDED_SIZE)
        """(lab, the arms' exact key) → their usable quantities."""
        self.part_evidence: LRUCache[tuple[Any, ...], Any] = LRUCache(EVIDENCE_SIZE)
        """(lab, part, the arms' ids) → (the arms, their indexed evidence)."""
        self.readers: LRUCache[tuple[Any, Any], Any] = LRUCache(READERS_SIZE)
        """(lab, choice terms key) → the compiled reader."""
