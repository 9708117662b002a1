"""Collusion flags: copied capture times, or near-identical rationales, across submissions.

Two submissions of the same lab are paired when either

* **timestamps** — they share at least :data:`MIN_SHARED_TIMES` identical instants in
  the same parts.  An instant is any time a part's evidence record keeps (captured,
  prediction locked, result shown) or its run-log entry keeps (prediction locked, first
  shown, first run), compared to the microsecond; the pair lists the parts that share
  them.  The notebook stamps these times with the student's own clock, so two people
  working independently never produce the same one — while a copied bundle keeps them,
  even after the copier redoes a part, rewrites the rationale, or reopens the file in the
  notebook and recaptures (a part's first-shown time survives recapture).  Only times
  with a sub-second component count: a writer that keeps whole seconds (or a generator
  that uses round times) makes coincidences likely across a large course, and a
  deliberate edit can remove the microseconds as easily as it can shift a time, so
  such times prove nothing either way.  Two instants, not one, because some clocks tick
  coarsely (about 16 ms on older Windows Python), which makes a single match across
  thousands of students possible; copying even one part's record shares two or three.
* **clock** — the same path of work in time, whatever the clock says: the same labelled
  events (every capture, prediction lock, result shown and run of every part), and every
  event at the same place relative to the others within :data:`PATH_TOLERANCE_S` once the
  clocks' constant offset is removed (:func:`work_path`).  A copy whose times were shifted
  by any offset, truncated to whole seconds, moved by a microsecond or jittered by up to a
  millisecond per field keeps its path; a student who redoes the runs by hand makes a new
  one (that still evades, as does any copy made by doing the work again).
* **rationale** — the Jaccard similarity of their sets of word
  :data:`SHINGLE_WORDS`-grams is at least :data:`RATIONALE_THRESHOLD`, both having at
  least :data:`MIN_RATIONALE_WORDS` words.

Identical evidence on its own (same inputs, results and predictions, different times) is
*not* a pair: students who keep the notebook's default settings produce exactly the same
records, and the evaluators are deterministic, so equal numbers show only equal choices.

Why 5-word shingles and 0.8: independently written rationales about the same lab share
few 5-word sequences (even the package's own templated reference rationales of Lab 07
stay at or below 0.55 across different settings), while a copy with one word changed in a
60-word rationale still scores about 0.83.  The generated reference rationales of Lab 11
are one template with a few numbers changed and can reach 0.84; real students do not
write from one template.

Pairs are joined into groups (connected components).  Candidates for the rationale test
come from MinHash banding over 64 hashes (bands of 4 rows at the default threshold; fewer
rows for a lower one, so a pair at the threshold is a candidate with probability above
0.999), so a course of 10,000 is not compared pair by pair; every reported pair is
verified with the exact Jaccard.  Every hash is derived from :mod:`hashlib`, so groups are
the same in every run and under every ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..core.models import PARTS
from ..core.text import readable

SHINGLE_WORDS = 5
RATIONALE_THRESHOLD = 0.8
MIN_RATIONALE_WORDS = 20
MIN_SHARED_TIMES = 2
MIN_PATH_EVENTS = 8
"""Labelled events a submission's path needs before it is compared (two parts' worth: fewer match too easily)."""
PATH_TOLERANCE_S = 2.0
"""How far two paths' events may differ, in seconds, after the clocks' offset is removed: truncating a copy's times to
whole seconds moves each by under 1 s, jitter by microseconds; an independent student's intervals (tens of seconds to
hours, each drawn anew) agree with another's within 2 s on every one of 8 or more events by chance almost never."""
_RECORD_TIMES = ("captured_at", "prediction_locked_at", "result_shown_at")
_RUN_TIMES = ("prediction_locked_at", "first_shown_at", "first_run_at")
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_HASHES = 64
_MIN_RECALL = 0.999
_BIG_BUCKET = 64


# -- what a submission contributes ----------------------------------------------------

def part_times(bundle: Any) -> dict[str, list[str]]:
    """Per part, every time its evidence record and run-log entry keep (ISO 8601, sorted, no duplicates)."""
    times: dict[str, set[str]] = {}
    for source, names in ((getattr(bundle, "evidence", {}) or {}, _RECORD_TIMES), (getattr(bundle, "runs", {}) or {}, _RUN_TIMES)):
        for part, entry in source.items():
            for name in names:
                value = getattr(entry, name, None)
                if isinstance(value, datetime):
                    times.setdefault(part, set()).add(value.isoformat())
    return {part: sorted(values) for part, values in sorted(times.items())}


def work_path(bundle: Any) -> list[tuple[str, str]]:
    """Every event of the work, labelled: ``(part.record.captured_at | part.run.first_run_at | …, ISO time)``, sorted by
    label — what :func:`_clock_pairs` compares up to a constant offset of the clock."""
    events: list[tuple[str, str]] = []
    for source, kind, names in ((getattr(bundle, "evidence", {}) or {}, "record", _RECORD_TIMES),
                                (getattr(bundle, "runs", {}) or {}, "run", _RUN_TIMES)):
        for part, entry in source.items():
            for name in names:
                value = getattr(entry, name, None)
                if isinstance(value, datetime):
                    events.append((f"{part}.{kind}.{name}", value.isoformat()))
    return sorted(events)


def instant(value: Any) -> str | None:
    """The canonical UTC form of a time that can show a copy, or None.

    None for anything that is not a time, and for times without a sub-second component
    (see the module docstring).  A time without a zone is taken as written.
    """
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime) or value.microsecond == 0:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.isoformat()


def words(text: str) -> list[str]:
    """Lower-case words and numbers (``0.42``, ``don't`` stay whole), read as every reader reads
    the text (:func:`~mlsys_grader.core.text.visible`: invisible characters cannot split a word)."""
    return _WORD.findall(readable(text).lower())


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    """The set of ``size``-word sequences of ``text``."""
    return _shingle_set(words(text), size)


def _shingle_set(tokens: Sequence[str], size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1))


def jaccard(left: frozenset, right: frozenset) -> float:
    """|A ∩ B| / |A ∪ B| (0 for two empty sets); |A ∪ B| is counted as |A| + |B| - |A ∩ B|, without building it."""
    shared = len(left & right)
    union = len(left) + len(right) - shared
    return shared / union if union else 0.0


def stable_hash64(text: str) -> int:
    """A 64-bit hash of ``text`` that is the same in every process (BLAKE2b)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Work:
    """What collusion needs of one graded submission; ``key`` is the caller's row index."""

    key: int
    lab: str
    times: Mapping[str, Sequence[Any]]
    """Part → the times :func:`part_times` lists (ISO strings or datetimes)."""
    rationale: str
    who: str = ""
    """Identity; two inputs of the same person are never paired with each other."""
    path: Sequence[Sequence[str]] = ()
    """The work's labelled events, :func:`work_path` (empty for a result stored before it was kept)."""


@dataclass(frozen=True)
class Pair:
    """Two submissions (``left`` < ``right``, caller's keys) and why they are paired."""

    left: int
    right: int
    basis: str
    """``timestamps``, ``clock`` or ``rationale``."""
    similarity: float
    """Rationale: the shingle Jaccard.  Timestamps: 1.0 (the times are identical).  Clock: 1 − the largest difference of
    the two paths over :data:`PATH_TOLERANCE_S`."""
    parts: tuple[str, ...] = ()
    """Timestamps: the parts whose times are shared."""
    shared: int = 0
    """Timestamps: how many distinct instants are shared; clock: how many labelled events the paths share."""


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

    @property
    def parts(self) -> list[str]:
        """Every part whose times some pair of the group shares."""
        return sorted({part for pair in self.pairs for part in pair.parts})


# -- pairs ----------------------------------------------------------------------------

def _same_person(a: Work, b: Work) -> bool:
    return bool(a.who) and a.who == b.who


def _timestamp_pairs(subs: Sequence[Work]) -> list[Pair]:
    by_instant: dict[tuple[str, str, str], list[Work]] = {}
    for sub in subs:
        for part, values in sub.times.items():
            for moment in {m for m in map(instant, values) if m is not None}:
                by_instant.setdefault((sub.lab, part, moment), []).append(sub)
    shared: dict[tuple[int, int], list[str]] = {}
    for (_lab, part, _moment), members in by_instant.items():
        if len(members) < 2:
            continue
        members = sorted({s.key: s for s in members}.values(), key=lambda s: s.key)
        # Many submissions with one time: all copies of one bundle; linking each to the first still joins them.
        links = ([(members[0], other) for other in members[1:]] if len(members) > _BIG_BUCKET else
                 [(a, b) for x, a in enumerate(members) for b in members[x + 1:]])
        for a, b in links:
            if not _same_person(a, b):
                shared.setdefault((a.key, b.key), []).append(part)
    return [Pair(left, right, "timestamps", 1.0, tuple(sorted(set(parts), key=PARTS.index)), len(parts))
            for (left, right), parts in sorted(shared.items()) if len(parts) >= MIN_SHARED_TIMES]


def _relative(path: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], tuple[float, ...]] | None:
    """(labels, each event's seconds from the mean of all of them): the path's shape, whatever its clock's offset."""
    stamps = []
    for label, text in path:
        try:
            moment = datetime.fromisoformat(str(text))
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        stamps.append((str(label), moment.timestamp()))
    if len(stamps) < MIN_PATH_EVENTS:
        return None
    centre = sum(t for _, t in stamps) / len(stamps)
    return tuple(label for label, _ in stamps), tuple(t - centre for _, t in stamps)


def _clock_pairs(subs: Sequence[Work]) -> list[Pair]:
    """Pairs whose work followed the same path in time: the same labelled events, every interval between them equal
    within :data:`PATH_TOLERANCE_S` once the clocks' offset is removed (a copy whose times were all shifted, truncated to
    whole seconds or jittered by microseconds keeps its path; independent work does not share one)."""
    buckets: dict[tuple[str, tuple[str, ...]], list[tuple[float, Work, tuple[float, ...]]]] = {}
    for sub in subs:
        shape = _relative(sub.path)
        if shape is not None:
            labels, offsets = shape
            buckets.setdefault((sub.lab, labels), []).append((max(offsets) - min(offsets), sub, offsets))
    pairs = []
    for (_, labels), members in buckets.items():
        members.sort(key=lambda m: (m[0], m[1].key))
        for x, (span, a, left) in enumerate(members):
            for other_span, b, right in members[x + 1:]:
                if other_span - span > 2 * PATH_TOLERANCE_S:
                    break  # sorted by span: no later member can match
                worst = max(abs(p - q) for p, q in zip(left, right, strict=True))
                if worst <= PATH_TOLERANCE_S and not _same_person(a, b):
                    first, second = sorted((a.key, b.key))
                    parts = tuple(sorted({label.split(".", 1)[0] for label in labels}, key=_part_order))
                    pairs.append(Pair(first, second, "clock", round(1 - worst / PATH_TOLERANCE_S, 6), parts, len(labels)))
    return sorted(pairs, key=lambda p: (p.left, p.right))


def _part_order(part: str) -> int:
    return PARTS.index(part) if part in PARTS else len(PARTS)


def _rows_per_band(threshold: float) -> int:
    """The most rows per band (of 8, 4, 2, 1) that still make a pair at ``threshold`` a candidate almost surely."""
    for rows in (8, 4, 2, 1):
        if 1 - (1 - threshold ** rows) ** (_HASHES // rows) >= _MIN_RECALL:
            return rows
    return 1


class _MinHasher:
    """64 MinHash values (numpy ``uint64``) per tokenised text, over its word shingles.

    Each word is hashed once with BLAKE2b; a shingle's hash combines its words' hashes
    (multiply-add, wrapping at 64 bits), so nothing depends on ``PYTHONHASHSEED``.
    """

    def __init__(self) -> None:
        import numpy as np  # numpy loads only when rationales are compared: keeps `import mlsys_grader` fast

        self.np = np
        self.masks = np.array([stable_hash64(f"minhash mask {i}") for i in range(_HASHES)], dtype=np.uint64)
        self.odd = np.array([stable_hash64(f"minhash multiplier {i}") | 1 for i in range(_HASHES)], dtype=np.uint64)
        self.step = np.uint64(stable_hash64("shingle step") | 1)
        self.cache: dict[str, int] = {}

    def signature(self, tokens: Sequence[str]) -> Any:
        np, cache = self.np, self.cache
        with np.errstate(over="ignore"):
            hashed = np.fromiter((cache[w] if w in cache else cache.setdefault(w, stable_hash64(w)) for w in tokens),
                                 dtype=np.uint64, count=len(tokens))
            count = len(tokens) - SHINGLE_WORDS + 1
            values = hashed[:count].copy()
            for offset in range(1, SHINGLE_WORDS):
                values = values * self.step + hashed[offset:offset + count]
            values = np.unique(values)
            return ((values[:, None] ^ self.masks[None, :]) * self.odd[None, :]).min(axis=0)


class RationaleIndex:
    """What the rationale test needs of each distinct rationale — its words, its shingles (as numbers) and its
    MinHash signature — computed once per text, as soon as the text is known.

    The gradebook adds each rationale as its grade comes back from a worker, while the others are still being
    graded, so :func:`find_groups` then only bands and verifies.  A shingle is numbered by the order it was
    first seen (exact: two shingles share a number only when they are the same words), so a Jaccard similarity
    of two numbered sets is the one of their word shingles, computed on small integers.
    """

    def __init__(self) -> None:
        self._read: dict[str, tuple[int, frozenset[int], Any]] = {}
        self._shingle_ids: dict[tuple[str, ...], int] = {}
        self._hasher: _MinHasher | None = None

    def add(self, text: str) -> tuple[int, frozenset[int], Any]:
        """(word count, numbered shingles, signature or None when the text is too short to be compared)."""
        found = self._read.get(text)
        if found is None:
            tokens = words(text)
            if len(tokens) < MIN_RATIONALE_WORDS:
                found = (len(tokens), frozenset(), None)
            else:
                if self._hasher is None:
                    self._hasher = _MinHasher()
                ids = self._shingle_ids
                numbered = frozenset(ids.setdefault(shingle, len(ids)) for shingle in _shingle_set(tokens))
                found = (len(tokens), numbered, self._hasher.signature(tokens))
            self._read[text] = found
        return found


def _rationale_pairs(subs: Sequence[Work], threshold: float, index: RationaleIndex | None = None) -> list[Pair]:
    index = index or RationaleIndex()
    read = [(s, index.add(s.rationale)) for s in subs]
    eligible = [s for s, (count, _, _) in read if count >= MIN_RATIONALE_WORDS]
    if len(eligible) < 2:
        return []
    sets = [numbered for _, (count, numbered, _) in read if count >= MIN_RATIONALE_WORDS]
    signatures = [signature for _, (count, _, signature) in read if count >= MIN_RATIONALE_WORDS]
    pairs: list[Pair] = []
    seen: set[int] = set()
    count, labs, keys, people = len(eligible), [s.lab for s in eligible], [s.key for s in eligible], [s.who for s in eligible]

    def verify(i: int, j: int) -> None:  # positions in ``eligible``, i < j
        code = i * count + j
        if code in seen or labs[i] != labs[j] or (people[i] and people[i] == people[j]):
            return
        seen.add(code)
        similarity = jaccard(sets[i], sets[j])
        if similarity >= threshold:
            pairs.append(Pair(min(keys[i], keys[j]), max(keys[i], keys[j]), "rationale", round(similarity, 4)))

    rows = _rows_per_band(threshold)
    width = rows * 8  # bytes of one band: ``rows`` uint64 values
    buckets: dict[tuple[str, int, bytes], list[int]] = {}
    for position, signature in enumerate(signatures):
        raw, lab = signature.tobytes(), labs[position]
        for band in range(_HASHES // rows):
            buckets.setdefault((lab, band, raw[band * width:(band + 1) * width]), []).append(position)
    for members in buckets.values():
        if len(members) < 2:
            continue
        if len(members) > _BIG_BUCKET:  # many near-copies: compare to the first, the groups still join
            for other in members[1:]:
                verify(members[0], other)
            continue
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                verify(i, j)
    return pairs


def find_groups(subs: Iterable[Work], *, threshold: float = RATIONALE_THRESHOLD,
                index: RationaleIndex | None = None) -> list[Group]:
    """Groups of submissions paired by shared capture times or near-identical rationales (``index``: the
    rationales already read, :class:`RationaleIndex`; any other is read here)."""
    subs = list(subs)
    pairs = _timestamp_pairs(subs) + _clock_pairs(subs) + _rationale_pairs(subs, threshold, index)
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
