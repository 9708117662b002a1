"""Collusion flags: identical evidence, or near-identical rationales, across submissions.

Two submissions are paired when either

* **identical evidence** — their evidence records are the same in every part (inputs,
  arms, predictions and decisions; capture times and version stamps ignored), and at
  least :data:`MIN_PARTS` parts are captured (two empty submissions are not evidence of
  anything); or
* **near-identical rationales** — the Jaccard similarity of their sets of word
  :data:`SHINGLE_WORDS`-grams is at least :data:`RATIONALE_THRESHOLD`, both having at
  least :data:`MIN_RATIONALE_WORDS` words.

Why 5-word shingles and 0.8: independently written rationales about the same lab share
few 5-word sequences (even the package's own templated reference rationales of Lab 07
stay at or below 0.55 across different settings), while a copy with one word changed in a
60-word rationale still scores about 0.83.  The generated reference rationales of Lab 11
are one template with a few numbers changed and can reach 0.84; real students do not
write from one template.

Pairs are joined into groups (connected components).  Candidates for the rationale test
come from MinHash banding (64 hashes, 16 bands of 4), so a course of 10,000 is not
compared pair by pair; every reported pair is verified with the exact Jaccard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .core.jsonio import sha256_of

SHINGLE_WORDS = 5
RATIONALE_THRESHOLD = 0.8
MIN_RATIONALE_WORDS = 20
MIN_PARTS = 3
_IGNORED_RECORD_FIELDS = frozenset({"captured_at", "prediction_locked_at", "result_shown_at", "mlsysim_version",
                                    "grader_version", "upstream_fingerprint", "origin"})
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_BANDS, _ROWS = 16, 4
_BIG_BUCKET = 64


def evidence_digest(bundle: Any) -> str | None:
    """SHA-256 of a bundle's evidence records without times and stamps; None under :data:`MIN_PARTS` parts."""
    evidence = getattr(bundle, "evidence", {}) or {}
    if len(evidence) < MIN_PARTS:
        return None
    kept = {part: {k: v for k, v in record.model_dump(mode="json").items() if k not in _IGNORED_RECORD_FIELDS}
            for part, record in evidence.items()}
    return sha256_of({"lab": bundle.lab, "track": bundle.track, "evidence": kept})


def words(text: str) -> list[str]:
    """Lower-case words and numbers (``0.42``, ``don't`` stay whole)."""
    return _WORD.findall(text.lower())


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    """The set of ``size``-word sequences of ``text``."""
    tokens = words(text)
    return frozenset(tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1))


def jaccard(left: frozenset, right: frozenset) -> float:
    """|A ∩ B| / |A ∪ B| (0 for two empty sets)."""
    union = len(left | right)
    return len(left & right) / union if union else 0.0


@dataclass(frozen=True)
class Submission:
    """What collusion needs of one graded submission; ``key`` is the caller's row index."""

    key: int
    lab: str
    evidence: str | None
    rationale: str
    who: str = ""
    """Identity; two inputs of the same person are never paired with each other."""


@dataclass(frozen=True)
class Pair:
    left: int
    right: int
    basis: str
    """``evidence`` or ``rationale``."""
    similarity: float


@dataclass
class Group:
    """Submissions joined by pairs; ``group_id`` is ``G1``, ``G2``… in order of first member."""

    group_id: str
    lab: str
    members: list[int]
    pairs: list[Pair] = field(default_factory=list)

    @property
    def bases(self) -> list[str]:
        return sorted({pair.basis for pair in self.pairs})


def _minhash_bands(sets: Sequence[frozenset]) -> list[list[int]]:
    import numpy as np

    rng = np.random.default_rng(20260101)
    masks = rng.integers(0, 2**63, size=_BANDS * _ROWS, dtype=np.uint64)
    odd = rng.integers(0, 2**63, size=_BANDS * _ROWS, dtype=np.uint64) | np.uint64(1)
    bands: list[list[int]] = []
    with np.errstate(over="ignore"):
        for items in sets:
            values = np.fromiter((hash(item) & 0x7FFFFFFFFFFFFFFF for item in items), dtype=np.uint64, count=len(items))
            mins = ((values[:, None] ^ masks[None, :]) * odd[None, :]).min(axis=0)
            bands.append([hash(mins[b * _ROWS:(b + 1) * _ROWS].tobytes()) for b in range(_BANDS)])
    return bands


def _rationale_pairs(subs: Sequence[Submission], threshold: float) -> list[Pair]:
    eligible = [s for s in subs if len(words(s.rationale)) >= MIN_RATIONALE_WORDS]
    if len(eligible) < 2:
        return []
    sets = [shingles(s.rationale) for s in eligible]
    pairs: list[Pair] = []
    seen: set[tuple[int, int]] = set()

    def verify(i: int, j: int) -> None:
        a, b = eligible[i], eligible[j]
        key = (min(a.key, b.key), max(a.key, b.key))
        if key in seen or a.lab != b.lab or (a.who and a.who == b.who):
            return
        seen.add(key)
        similarity = jaccard(sets[i], sets[j])
        if similarity >= threshold:
            pairs.append(Pair(key[0], key[1], "rationale", round(similarity, 4)))

    buckets: dict[tuple[str, int, int], list[int]] = {}
    for index, bands in enumerate(_minhash_bands(sets)):
        for band, value in enumerate(bands):
            buckets.setdefault((eligible[index].lab, band, value), []).append(index)
    for members in buckets.values():
        if len(members) > _BIG_BUCKET:  # many near-copies: compare to the first, the groups still join
            for other in members[1:]:
                verify(members[0], other)
            continue
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                verify(i, j)
    return pairs


def _evidence_pairs(subs: Sequence[Submission]) -> list[Pair]:
    by_digest: dict[tuple[str, str], list[Submission]] = {}
    for sub in subs:
        if sub.evidence:
            by_digest.setdefault((sub.lab, sub.evidence), []).append(sub)
    pairs = []
    for members in by_digest.values():
        first = members[0]
        pairs.extend(Pair(first.key, other.key, "evidence", 1.0) for other in members[1:]
                     if not (first.who and first.who == other.who))
    return pairs


def find_groups(subs: Iterable[Submission], *, threshold: float = RATIONALE_THRESHOLD) -> list[Group]:
    """Groups of submissions paired by identical evidence or near-identical rationales."""
    subs = list(subs)
    pairs = _evidence_pairs(subs) + _rationale_pairs(subs, threshold)
    parent: dict[int, int] = {}

    def root(node: int) -> int:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for pair in pairs:
        parent[root(pair.left)] = root(pair.right)
    lab_of = {s.key: s.lab for s in subs}
    grouped: dict[int, list[int]] = {}
    for node in sorted(parent):
        grouped.setdefault(root(node), []).append(node)
    groups = sorted(grouped.values(), key=lambda members: members[0])
    result = [Group(f"G{n}", lab_of[members[0]], members) for n, members in enumerate(groups, 1)]
    where = {member: group for group in result for member in group.members}
    for pair in sorted(pairs, key=lambda p: (p.left, p.right, p.basis)):
        where[pair.left].pairs.append(pair)
    return result
